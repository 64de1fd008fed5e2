// cuBLAS GEMM and the element-wise, reduction and softmax kernels of kernels.cu.
#include <cublas_v2.h>

#include <cstdio>
#include <iostream>

#include "bench.h"
#include "cuda_util.h"
#include "grid.h"
#include "kernels.h"

namespace placer::calibrate {

void BenchContext::record(Measurement m) const {
  char rate[64] = "";
  if (m.flops > 0 && m.time.median > 0) {
    std::snprintf(rate, sizeof rate, ", %.2f TFLOP/s", m.flops / m.time.median / 1e12);
  } else if (m.bytes > 0 && m.time.median > 0) {
    std::snprintf(rate, sizeof rate, ", %.2f GB/s", m.bytes / m.time.median / 1e9);
  }
  char line[512];
  std::snprintf(line, sizeof line, "%-11s %-14s %-4s %-40s %10.3f us (min %.3f, max %.3f)%s",
                m.kind.c_str(), m.op.c_str(), m.dtype.c_str(), m.shape.c_str(),
                m.time.median * 1e6, m.time.min * 1e6, m.time.max * 1e6, rate);
  std::cerr << line << std::endl;
  sink.add(std::move(m));
}

namespace {

struct CublasHandle {
  cublasHandle_t h = nullptr;
  CublasHandle() { PC_CUBLAS(cublasCreate(&h)); }
  ~CublasHandle() {
    if (h) cublasDestroy(h);
  }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
};

bool supported(const DeviceInfo& dev, const std::string& dtype, const char* what) {
  if ((dtype == "tf32" && !dev.tf32()) || (dtype == "bf16" && !dev.bf16())) {
    std::cerr << "skip " << what << " " << dtype << ": " << dev.name << " (compute capability "
              << dev.major << "." << dev.minor << ") has no " << dtype << " support" << std::endl;
    return false;
  }
  return true;
}

DType storage_type(const std::string& dtype) {
  if (dtype == "fp16") return DType::F16;
  if (dtype == "bf16") return DType::BF16;
  return DType::F32;  // fp32 and tf32
}

// The dtypes of the memory-bound kernels (tf32 is a GEMM/conv compute mode only).
std::vector<std::string> kernel_dtypes(const Options& o, const DeviceInfo& dev) {
  std::vector<std::string> out;
  for (const auto& d : o.dtypes)
    if (d != "tf32" && supported(dev, d, "kernels")) out.push_back(d);
  return out;
}

Measurement row(const std::string& kind, const std::string& op, const std::string& dtype,
                const std::string& shape, std::uint64_t flops, std::uint64_t bytes,
                const std::vector<double>& seconds, int hosts) {
  Measurement m;
  m.kind = kind;
  m.op = op;
  m.dtype = dtype;
  m.shape = shape;
  m.flops = flops;
  m.bytes = bytes;
  m.devices = 1;
  m.hosts = hosts;
  m.time = summarize(seconds);
  return m;
}

}  // namespace

void bench_gemm(const BenchContext& ctx, int device) {
  const DeviceInfo dev = device_info(device);
  Stream stream(device);
  CublasHandle cublas;
  PC_CUBLAS(cublasSetStream(cublas.h, stream.get()));
  const std::vector<StreamRef> streams = {{device, stream.get()}};
  for (const auto& dtype : ctx.opts.dtypes) {
    if (!supported(dev, dtype, "gemm")) continue;
    const DType st = storage_type(dtype);
    const cudaDataType_t type =
        st == DType::F16 ? CUDA_R_16F : st == DType::BF16 ? CUDA_R_16BF : CUDA_R_32F;
    const cublasComputeType_t compute =
        dtype == "tf32" ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    const std::size_t elem = dtype_size(st);
    for (const auto& s : gemm_shapes(ctx.opts.quick)) {
      const std::size_t a = s.m * s.k * elem, b = s.k * s.n * elem, c = s.m * s.n * elem;
      if (a + b + c > free_memory(device) / 10 * 9) {
        std::cerr << "skip gemm " << dtype << " " << s.shape() << ": needs more memory than is free"
                  << std::endl;
        continue;
      }
      DeviceBuffer A(device, a), B(device, b), C(device, c);
      PC_CUDA(launch_fill_random(A.get(), s.m * s.k, st, 1, stream.get()));
      PC_CUDA(launch_fill_random(B.get(), s.k * s.n, st, 2, stream.get()));
      const float alpha = 1.0f, beta = 0.0f;
      const int m = static_cast<int>(s.m), n = static_cast<int>(s.n), k = static_cast<int>(s.k);
      const auto seconds = time_on_streams(streams, ctx.opts.warmup, ctx.opts.iters, [&] {
        PC_CUBLAS(cublasGemmEx(cublas.h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, A.get(), type,
                               m, B.get(), type, k, &beta, C.get(), type, m, compute,
                               CUBLAS_GEMM_DEFAULT));
      });
      ctx.record(row("gemm", "gemm", dtype, s.shape(), s.flops(), s.bytes(elem), seconds, ctx.hosts));
    }
  }
}

void bench_elementwise(const BenchContext& ctx, int device) {
  const DeviceInfo dev = device_info(device);
  Stream stream(device);
  const std::vector<StreamRef> streams = {{device, stream.get()}};
  for (const auto& dtype : kernel_dtypes(ctx.opts, dev)) {
    const DType st = storage_type(dtype);
    const std::size_t elem = dtype_size(st);
    const auto counts = element_counts(elem, ctx.opts.max_bytes, ctx.opts.quick);
    if (counts.empty()) continue;
    const std::size_t max_n = counts.back();
    DeviceBuffer a(device, max_n * elem), b(device, max_n * elem), c(device, max_n * elem);
    PC_CUDA(launch_fill_random(a.get(), max_n, st, 3, stream.get()));
    PC_CUDA(launch_fill_random(b.get(), max_n, st, 4, stream.get()));
    for (const std::string op : {"add", "relu", "gelu"}) {
      for (const std::size_t n : counts) {
        const auto seconds = time_on_streams(streams, ctx.opts.warmup, ctx.opts.iters, [&] {
          if (op == "add")
            PC_CUDA(launch_add(a.get(), b.get(), c.get(), n, st, stream.get()));
          else if (op == "relu")
            PC_CUDA(launch_relu(a.get(), c.get(), n, st, stream.get()));
          else
            PC_CUDA(launch_gelu(a.get(), c.get(), n, st, stream.get()));
        });
        const std::uint64_t bytes = (op == "add" ? 3 : 2) * n * elem;
        ctx.record(row("elementwise", op, dtype, "n=" + std::to_string(n), n, bytes, seconds,
                       ctx.hosts));
      }
    }
  }
}

void bench_reduction(const BenchContext& ctx, int device) {
  const DeviceInfo dev = device_info(device);
  Stream stream(device);
  const std::vector<StreamRef> streams = {{device, stream.get()}};
  for (const auto& dtype : kernel_dtypes(ctx.opts, dev)) {
    const DType st = storage_type(dtype);
    const std::size_t elem = dtype_size(st);
    const auto counts = element_counts(elem, ctx.opts.max_bytes, ctx.opts.quick);
    if (counts.empty()) continue;
    const std::size_t max_n = counts.back();
    DeviceBuffer in(device, max_n * elem), out(device, max_n * elem);
    PC_CUDA(launch_fill_random(in.get(), max_n, st, 5, stream.get()));
    for (const std::size_t n : counts) {
      const std::size_t cols = n < 4096 ? n : 4096, rows = n / cols;
      const auto seconds = time_on_streams(streams, ctx.opts.warmup, ctx.opts.iters, [&] {
        PC_CUDA(launch_reduce_rows(in.get(), out.get(), rows, cols, st, stream.get()));
      });
      const std::string shape = "n=" + std::to_string(n) + ";rows=" + std::to_string(rows) +
                                ";cols=" + std::to_string(cols);
      ctx.record(row("reduction", "reduce_sum", dtype, shape, n, (n + rows) * elem, seconds,
                     ctx.hosts));
    }
  }
}

void bench_softmax(const BenchContext& ctx, int device) {
  const DeviceInfo dev = device_info(device);
  Stream stream(device);
  const std::vector<StreamRef> streams = {{device, stream.get()}};
  const std::vector<std::size_t> widths =
      ctx.opts.quick ? std::vector<std::size_t>{1024} : std::vector<std::size_t>{1024, 32768};
  for (const auto& dtype : kernel_dtypes(ctx.opts, dev)) {
    const DType st = storage_type(dtype);
    const std::size_t elem = dtype_size(st);
    const auto counts = element_counts(elem, ctx.opts.max_bytes, ctx.opts.quick);
    if (counts.empty()) continue;
    const std::size_t max_n = counts.back();
    DeviceBuffer in(device, max_n * elem), out(device, max_n * elem);
    PC_CUDA(launch_fill_random(in.get(), max_n, st, 6, stream.get()));
    for (const std::size_t cols : widths) {
      for (const std::size_t n : counts) {
        if (n < cols) continue;
        const std::size_t rows = n / cols;
        const auto seconds = time_on_streams(streams, ctx.opts.warmup, ctx.opts.iters, [&] {
          PC_CUDA(launch_softmax_rows(in.get(), out.get(), rows, cols, st, stream.get()));
        });
        const std::string shape = "rows=" + std::to_string(rows) + ";cols=" + std::to_string(cols);
        // FLOPs: max, subtract, exp, sum, scale per element; bytes: read once, write once.
        ctx.record(row("softmax", "softmax", dtype, shape, 5 * n, 2 * n * elem, seconds,
                       ctx.hosts));
      }
    }
  }
}

}  // namespace placer::calibrate
