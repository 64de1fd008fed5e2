// placer-calibrate: return-code checks for CUDA, cuBLAS, cuDNN and NCCL. Every library call
// goes through one of the PC_* macros; a failure throws LibraryError naming the call, the
// file:line and the library's own error string (main prints it and exits 1).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

#ifdef PLACER_CALIBRATE_CUDNN
#include <cudnn.h>
#endif
#ifdef PLACER_CALIBRATE_NCCL
#include <nccl.h>
#endif

namespace placer::calibrate {

class LibraryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] inline void throw_library_error(const char* library, const std::string& what,
                                             const char* call, const char* file, int line) {
  std::string f = file;
  const auto cut = f.find("simulator/calibration/cuda/");
  if (cut != std::string::npos) f = f.substr(cut);
  throw LibraryError(std::string(library) + " error: " + call + " failed at " + f + ":" +
                     std::to_string(line) + ": " + what);
}

inline void check_cuda(cudaError_t e, const char* call, const char* file, int line) {
  if (e != cudaSuccess)
    throw_library_error("CUDA",
                        std::string(cudaGetErrorString(e)) + " (" + cudaGetErrorName(e) + ")",
                        call, file, line);
}

inline void check_cublas(cublasStatus_t s, const char* call, const char* file, int line) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw_library_error("cuBLAS", std::string(cublasGetStatusName(s)) + ": " + cublasGetStatusString(s),
                        call, file, line);
}

#ifdef PLACER_CALIBRATE_CUDNN
inline void check_cudnn(cudnnStatus_t s, const char* call, const char* file, int line) {
  if (s != CUDNN_STATUS_SUCCESS) {
    std::string what = cudnnGetErrorString(s);
#if CUDNN_MAJOR >= 9
    char detail[512] = {0};
    cudnnGetLastErrorString(detail, sizeof detail);
    if (detail[0]) what += std::string(" (") + detail + ")";
#endif
    throw_library_error("cuDNN", what, call, file, line);
  }
}
#endif

#ifdef PLACER_CALIBRATE_NCCL
inline void check_nccl(ncclResult_t r, const char* call, const char* file, int line) {
  if (r != ncclSuccess) {
    std::string what = ncclGetErrorString(r);
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= NCCL_VERSION(2, 13, 0)
    const char* last = ncclGetLastError(nullptr);
    if (last && *last) what += std::string(" (") + last + ")";
#endif
    throw_library_error("NCCL", what, call, file, line);
  }
}
#endif

}  // namespace placer::calibrate

#define PC_CUDA(call) ::placer::calibrate::check_cuda((call), #call, __FILE__, __LINE__)
#define PC_CUBLAS(call) ::placer::calibrate::check_cublas((call), #call, __FILE__, __LINE__)
#define PC_CUDNN(call) ::placer::calibrate::check_cudnn((call), #call, __FILE__, __LINE__)
#define PC_NCCL(call) ::placer::calibrate::check_nccl((call), #call, __FILE__, __LINE__)
// A kernel launch: checks the launch itself (the kernel's own faults surface at the next sync).
#define PC_LAUNCH(call)                                                                      \
  do {                                                                                       \
    call;                                                                                    \
    ::placer::calibrate::check_cuda(cudaGetLastError(), #call, __FILE__, __LINE__);          \
  } while (0)
