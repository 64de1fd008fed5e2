#include "kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace placer::calibrate {
namespace {

template <typename T> __device__ __forceinline__ float to_f(T v);
template <> __device__ __forceinline__ float to_f<float>(float v) { return v; }
template <> __device__ __forceinline__ float to_f<__half>(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float to_f<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
template <typename T> __device__ __forceinline__ T from_f(float v);
template <> __device__ __forceinline__ float from_f<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_f<__half>(float v) { return __float2half(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) {
  return __float2bfloat16(v);
}

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin_kernel(unsigned long long ns) {
  const unsigned long long start = global_ns();
  while (global_ns() - start < ns) {
  }
}

__device__ __forceinline__ std::uint32_t hash32(std::uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

template <typename T>
__global__ void fill_kernel(T* data, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const std::uint32_t h = hash32(static_cast<std::uint32_t>(i) ^ hash32(seed + static_cast<std::uint32_t>(i >> 32)));
    data[i] = from_f<T>(static_cast<float>(h >> 8) * (2.0f / 16777216.0f) - 1.0f);
  }
}

struct AddOp {
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};
struct ReluOp {
  __device__ __forceinline__ float operator()(float a, float) const { return a > 0.f ? a : 0.f; }
};
struct GeluOp {
  __device__ __forceinline__ float operator()(float a, float) const {
    const float k = 0.7978845608f;  // sqrt(2 / pi)
    return 0.5f * a * (1.f + tanhf(k * (a + 0.044715f * a * a * a)));
  }
};

template <typename T, typename Op>
__global__ void elementwise_kernel(const T* a, const T* b, T* c, std::size_t n, Op op) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    c[i] = from_f<T>(op(to_f(a[i]), b ? to_f(b[i]) : 0.f));
  }
}

constexpr int kBlock = 256;

__device__ __forceinline__ float block_reduce_sum(float v, float* smem) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  v = threadIdx.x < kBlock / 32 ? smem[threadIdx.x] : 0.f;
  if (warp == 0)
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x == 0) smem[0] = v;
  __syncthreads();
  return smem[0];
}

__device__ __forceinline__ float block_reduce_max(float v, float* smem) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  v = threadIdx.x < kBlock / 32 ? smem[threadIdx.x] : -INFINITY;
  if (warp == 0)
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  if (threadIdx.x == 0) smem[0] = v;
  __syncthreads();
  return smem[0];
}

template <typename T>
__global__ void reduce_rows_kernel(const T* in, T* out, std::size_t rows, std::size_t cols) {
  __shared__ float smem[kBlock / 32];
  for (std::size_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row = in + r * cols;
    float s = 0.f;
    for (std::size_t c = threadIdx.x; c < cols; c += kBlock) s += to_f(row[c]);
    s = block_reduce_sum(s, smem);
    if (threadIdx.x == 0) out[r] = from_f<T>(s);
  }
}

template <typename T>
__global__ void softmax_rows_kernel(const T* in, T* out, std::size_t rows, std::size_t cols) {
  __shared__ float smem[kBlock / 32];
  for (std::size_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row = in + r * cols;
    T* orow = out + r * cols;
    float m = -INFINITY;
    for (std::size_t c = threadIdx.x; c < cols; c += kBlock) m = fmaxf(m, to_f(row[c]));
    m = block_reduce_max(m, smem);
    float s = 0.f;
    for (std::size_t c = threadIdx.x; c < cols; c += kBlock) s += __expf(to_f(row[c]) - m);
    s = block_reduce_sum(s, smem);
    const float inv = 1.f / s;
    for (std::size_t c = threadIdx.x; c < cols; c += kBlock)
      orow[c] = from_f<T>(__expf(to_f(row[c]) - m) * inv);
  }
}

unsigned grid_for(std::size_t n) {
  const std::size_t blocks = (n + kBlock - 1) / kBlock;
  return static_cast<unsigned>(blocks < 65535 * 8 ? (blocks ? blocks : 1) : 65535 * 8);
}
unsigned grid_rows(std::size_t rows) {
  return static_cast<unsigned>(rows < 65535 * 8 ? (rows ? rows : 1) : 65535 * 8);
}

template <typename Fn>
cudaError_t dispatch(DType t, Fn&& fn) {
  switch (t) {
    case DType::F32: fn(float{}); break;
    case DType::F16: fn(__half{}); break;
    case DType::BF16: fn(__nv_bfloat16{}); break;
  }
  return cudaGetLastError();
}

template <typename Op>
cudaError_t launch_elementwise(const void* a, const void* b, void* c, std::size_t n, DType t,
                               cudaStream_t stream, Op op) {
  return dispatch(t, [&](auto zero) {
    using T = decltype(zero);
    elementwise_kernel<T, Op><<<grid_for(n), kBlock, 0, stream>>>(
        static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(c), n, op);
  });
}

}  // namespace

std::size_t dtype_size(DType t) { return t == DType::F32 ? 4 : 2; }

cudaError_t launch_spin(cudaStream_t stream, std::uint64_t ns) {
  spin_kernel<<<1, 1, 0, stream>>>(ns);
  return cudaGetLastError();
}

cudaError_t launch_fill_random(void* data, std::size_t n, DType t, std::uint32_t seed,
                               cudaStream_t stream) {
  return dispatch(t, [&](auto zero) {
    using T = decltype(zero);
    fill_kernel<T><<<grid_for(n), kBlock, 0, stream>>>(static_cast<T*>(data), n, seed);
  });
}

cudaError_t launch_add(const void* a, const void* b, void* c, std::size_t n, DType t,
                       cudaStream_t stream) {
  return launch_elementwise(a, b, c, n, t, stream, AddOp{});
}
cudaError_t launch_relu(const void* a, void* c, std::size_t n, DType t, cudaStream_t stream) {
  return launch_elementwise(a, nullptr, c, n, t, stream, ReluOp{});
}
cudaError_t launch_gelu(const void* a, void* c, std::size_t n, DType t, cudaStream_t stream) {
  return launch_elementwise(a, nullptr, c, n, t, stream, GeluOp{});
}

cudaError_t launch_reduce_rows(const void* in, void* out, std::size_t rows, std::size_t cols,
                               DType t, cudaStream_t stream) {
  return dispatch(t, [&](auto zero) {
    using T = decltype(zero);
    reduce_rows_kernel<T><<<grid_rows(rows), kBlock, 0, stream>>>(static_cast<const T*>(in),
                                                                   static_cast<T*>(out), rows, cols);
  });
}

cudaError_t launch_softmax_rows(const void* in, void* out, std::size_t rows, std::size_t cols,
                                DType t, cudaStream_t stream) {
  return dispatch(t, [&](auto zero) {
    using T = decltype(zero);
    softmax_rows_kernel<T><<<grid_rows(rows), kBlock, 0, stream>>>(
        static_cast<const T*>(in), static_cast<T*>(out), rows, cols);
  });
}

}  // namespace placer::calibrate
