#include "cuda_util.h"

#include "driver_info.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <utility>

#include "kernels.h"

namespace placer::calibrate {

DeviceBuffer::DeviceBuffer(int device, std::size_t bytes) : device_(device), bytes_(bytes) {
  PC_CUDA(cudaSetDevice(device));
  PC_CUDA(cudaMalloc(&ptr_, bytes ? bytes : 1));
}
DeviceBuffer::~DeviceBuffer() { release(); }
DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : device_(o.device_), ptr_(std::exchange(o.ptr_, nullptr)), bytes_(o.bytes_) {}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    release();
    device_ = o.device_;
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = o.bytes_;
  }
  return *this;
}
void DeviceBuffer::release() noexcept {
  if (ptr_) {
    cudaSetDevice(device_);
    cudaFree(ptr_);  // errors here would only hide the one being reported
    ptr_ = nullptr;
  }
}

PinnedBuffer::PinnedBuffer(std::size_t bytes) { PC_CUDA(cudaMallocHost(&ptr_, bytes ? bytes : 1)); }
PinnedBuffer::~PinnedBuffer() {
  if (ptr_) cudaFreeHost(ptr_);
}

Stream::Stream(int device) : device_(device) {
  PC_CUDA(cudaSetDevice(device));
  PC_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}
Stream::~Stream() {
  if (stream_) {
    cudaSetDevice(device_);
    cudaStreamDestroy(stream_);
  }
}

namespace {
// Every event created for one timing run, destroyed on any exit.
struct EventPool {
  std::vector<std::pair<int, cudaEvent_t>> all;
  EventPool() = default;
  EventPool(const EventPool&) = delete;
  EventPool& operator=(const EventPool&) = delete;
  ~EventPool() {
    for (auto [device, e] : all) {
      cudaSetDevice(device);
      cudaEventDestroy(e);
    }
  }
  cudaEvent_t create(int device) {
    PC_CUDA(cudaSetDevice(device));
    cudaEvent_t e = nullptr;
    PC_CUDA(cudaEventCreate(&e));
    all.emplace_back(device, e);
    return e;
  }
};
}  // namespace

std::vector<double> time_on_streams(const std::vector<StreamRef>& streams, int warmup, int iters,
                                    const std::function<void()>& launch) {
  for (int i = 0; i < warmup; ++i) launch();
  for (const auto& s : streams) {
    PC_CUDA(cudaSetDevice(s.device));
    PC_CUDA(cudaStreamSynchronize(s.stream));
  }
  EventPool pool;
  std::vector<std::vector<cudaEvent_t>> events(streams.size());
  for (std::size_t d = 0; d < streams.size(); ++d)
    for (int i = 0; i <= iters; ++i) events[d].push_back(pool.create(streams[d].device));
  // Hold each stream for ~150 us per queued run (host enqueue cost of a multi-GPU group),
  // within [1 ms, 200 ms], so the timed runs execute back to back on the GPU.
  const std::uint64_t spin_ns =
      std::clamp<std::uint64_t>(static_cast<std::uint64_t>(iters) * 150000ull, 1000000ull,
                                200000000ull);
  for (std::size_t d = 0; d < streams.size(); ++d) {
    PC_CUDA(cudaSetDevice(streams[d].device));
    PC_CUDA(launch_spin(streams[d].stream, spin_ns));
    PC_CUDA(cudaEventRecord(events[d][0], streams[d].stream));
  }
  for (int i = 0; i < iters; ++i) {
    launch();
    for (std::size_t d = 0; d < streams.size(); ++d) {
      PC_CUDA(cudaSetDevice(streams[d].device));
      PC_CUDA(cudaEventRecord(events[d][i + 1], streams[d].stream));
    }
  }
  std::vector<double> seconds(iters, 0.0);
  for (std::size_t d = 0; d < streams.size(); ++d) {
    PC_CUDA(cudaSetDevice(streams[d].device));
    PC_CUDA(cudaEventSynchronize(events[d][iters]));
    for (int i = 0; i < iters; ++i) {
      float ms = 0;
      PC_CUDA(cudaEventElapsedTime(&ms, events[d][i], events[d][i + 1]));
      seconds[i] = std::max(seconds[i], static_cast<double>(ms) * 1e-3);
    }
  }
  return seconds;
}

int device_count_or_throw() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear the (non-sticky) error
    std::string hint = "placer-calibrate needs an NVIDIA GPU and its driver";
    if (!std::ifstream("/proc/driver/nvidia/version"))
      hint = "no NVIDIA kernel driver is loaded on this machine (/proc/driver/nvidia/version is "
             "missing)";
    else if (e == cudaErrorInsufficientDriver)
      hint = "the NVIDIA driver (" + driver_version() + ") is older than the CUDA runtime this "
             "program was built with (CUDA " + std::to_string(CUDART_VERSION / 1000) + "." +
             std::to_string(CUDART_VERSION % 1000 / 10) + "): rebuild it with the machine's "
             "CUDA toolkit (docs/calibrate_cuda.md)";
    throw LibraryError(std::string("no CUDA device: cudaGetDeviceCount failed: ") +
                       cudaGetErrorString(e) + " (" + cudaGetErrorName(e) + "); " + hint);
  }
  if (n == 0) throw LibraryError("no CUDA device: cudaGetDeviceCount found 0 devices");
  return n;
}

DeviceInfo device_info(int device) {
  cudaDeviceProp p{};
  PC_CUDA(cudaGetDeviceProperties(&p, device));
  DeviceInfo d;
  d.ordinal = device;
  d.name = p.name;
  d.major = p.major;
  d.minor = p.minor;
  d.total_memory = p.totalGlobalMem;
  return d;
}

std::size_t free_memory(int device) {
  PC_CUDA(cudaSetDevice(device));
  std::size_t free = 0, total = 0;
  PC_CUDA(cudaMemGetInfo(&free, &total));
  return free;
}

namespace {
std::string dotted(int v) {  // 12040 -> "12.4"
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}
}  // namespace

std::string driver_version() {
  int v = 0;
  std::string api = cudaDriverGetVersion(&v) == cudaSuccess ? "CUDA " + dotted(v) : "CUDA ?";
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (in && std::getline(in, line)) {
    const std::string v = nvrm_driver_version(line);
    if (!v.empty()) return v + " (" + api + ")";
  }
  return api;
}

std::string runtime_version() {
  int v = 0;
  PC_CUDA(cudaRuntimeGetVersion(&v));
  return dotted(v);
}

std::string cublas_version() {
  int major = 0, minor = 0, patch = 0;
  PC_CUBLAS(cublasGetProperty(MAJOR_VERSION, &major));
  PC_CUBLAS(cublasGetProperty(MINOR_VERSION, &minor));
  PC_CUBLAS(cublasGetProperty(PATCH_LEVEL, &patch));
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::string cudnn_version() {
#ifdef PLACER_CALIBRATE_CUDNN
  const std::size_t v = cudnnGetVersion();
  // cuDNN 9: major*10000 + minor*100 + patch; cuDNN 8: major*1000 + minor*100 + patch.
  const std::size_t m = v >= 90000 ? 10000 : 1000;
  return std::to_string(v / m) + "." + std::to_string((v % m) / 100) + "." +
         std::to_string(v % 100);
#else
  return "not built";
#endif
}

std::string nccl_version() {
#ifdef PLACER_CALIBRATE_NCCL
  int v = 0;
  PC_NCCL(ncclGetVersion(&v));  // major*10000 + minor*100 + patch (NCCL >= 2.9)
  return std::to_string(v / 10000) + "." + std::to_string((v % 10000) / 100) + "." +
         std::to_string(v % 100);
#else
  return "not built";
#endif
}

}  // namespace placer::calibrate

