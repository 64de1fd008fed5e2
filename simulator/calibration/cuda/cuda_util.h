// placer-calibrate: RAII wrappers (device/pinned buffers, streams) and CUDA-event timing.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "check.h"

namespace placer::calibrate {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(int device, std::size_t bytes);  // cudaMalloc on `device`
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }
  std::size_t bytes() const { return bytes_; }

 private:
  void release() noexcept;
  int device_ = 0;
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

class PinnedBuffer {
 public:
  explicit PinnedBuffer(std::size_t bytes);  // cudaMallocHost
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void* get() const { return ptr_; }

 private:
  void* ptr_ = nullptr;
};

class Stream {
 public:
  explicit Stream(int device);  // non-blocking stream on `device`
  ~Stream();
  Stream(Stream&& o) noexcept : device_(o.device_), stream_(o.stream_) { o.stream_ = nullptr; }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  Stream& operator=(Stream&&) = delete;
  cudaStream_t get() const { return stream_; }
  int device() const { return device_; }

 private:
  int device_;
  cudaStream_t stream_ = nullptr;
};

struct StreamRef {
  int device;
  cudaStream_t stream;
};

// Times `launch` (which enqueues one operation on every stream of `streams`): `warmup`
// untimed runs, a synchronize, then a spin kernel on every stream and `iters` runs queued
// behind it with a CUDA event between consecutive runs. Returns, per run, the largest event
// interval over the streams, in seconds.
std::vector<double> time_on_streams(const std::vector<StreamRef>& streams, int warmup, int iters,
                                    const std::function<void()>& launch);

// cudaGetDeviceCount; throws LibraryError("no CUDA device ...") when there is none usable.
int device_count_or_throw();

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int major = 0, minor = 0;
  std::size_t total_memory = 0;
  bool tf32() const { return major >= 8; }
  bool bf16() const { return major >= 8; }
};
DeviceInfo device_info(int device);

// Free memory on `device` (cudaMemGetInfo).
std::size_t free_memory(int device);

// "550.54.15 (CUDA 12.4)" from /proc/driver/nvidia/version and cudaDriverGetVersion.
std::string driver_version();
std::string runtime_version();
std::string cublas_version();
std::string cudnn_version();  // "not built" without cuDNN
std::string nccl_version();   // "not built" without NCCL

}  // namespace placer::calibrate
