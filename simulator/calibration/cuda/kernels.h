// placer-calibrate: the CUDA kernels it measures (element-wise, reduction, softmax) and the
// helpers it needs (random fill, a spin kernel that holds a stream while work is queued).
// Launchers return cudaGetLastError() of the launch; callers check it with PC_CUDA.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace placer::calibrate {

enum class DType { F32, F16, BF16 };

std::size_t dtype_size(DType t);

// Spins the stream's GPU for about `ns` nanoseconds (globaltimer), so that the launches
// queued behind it run back to back and CUDA events time the GPU, not the host.
cudaError_t launch_spin(cudaStream_t stream, std::uint64_t ns);

// Uniform values in [-1, 1) from a counter hash (deterministic for a seed).
cudaError_t launch_fill_random(void* data, std::size_t n, DType t, std::uint32_t seed,
                               cudaStream_t stream);

// c = a + b; c = max(a, 0); c = gelu(a) (tanh form). All of n elements.
cudaError_t launch_add(const void* a, const void* b, void* c, std::size_t n, DType t,
                       cudaStream_t stream);
cudaError_t launch_relu(const void* a, void* c, std::size_t n, DType t, cudaStream_t stream);
cudaError_t launch_gelu(const void* a, void* c, std::size_t n, DType t, cudaStream_t stream);

// out[r] = sum_c in[r * cols + c] (float accumulation, output in t).
cudaError_t launch_reduce_rows(const void* in, void* out, std::size_t rows, std::size_t cols,
                               DType t, cudaStream_t stream);

// Row-wise softmax of a rows x cols matrix (float accumulation).
cudaError_t launch_softmax_rows(const void* in, void* out, std::size_t rows, std::size_t cols,
                                DType t, cudaStream_t stream);

}  // namespace placer::calibrate
