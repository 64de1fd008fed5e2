// cuDNN forward convolutions over ResNet-50 / VGG-16 layer shapes (built with cuDNN only).
#include <algorithm>
#include <iostream>
#include <string>

#include "bench.h"
#include "cuda_util.h"
#include "grid.h"
#include "kernels.h"

namespace placer::calibrate {

#ifndef PLACER_CALIBRATE_CUDNN

void bench_conv(const BenchContext&, int) {
  std::cerr << "skip conv: placer-calibrate was built without cuDNN" << std::endl;
}

#else

namespace {

// Owns one cuDNN object; Destroy is its cudnnDestroy* function.
template <typename T, cudnnStatus_t (*Destroy)(T)>
struct Owned {
  T v = nullptr;
  Owned() = default;
  ~Owned() {
    if (v) Destroy(v);
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
};

struct ConvType {
  cudnnDataType_t data;
  cudnnTensorFormat_t format;
  cudnnMathType_t math;
  DType storage;
};

ConvType conv_type(const std::string& dtype) {
  // fp32: strict FMA math; tf32: tensor cores on fp32 data (PyTorch's default for cuDNN on
  // Ampere+); fp16/bf16: channels-last with tensor cores, as mixed-precision training runs.
  if (dtype == "tf32") return {CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, CUDNN_DEFAULT_MATH, DType::F32};
  if (dtype == "fp16") return {CUDNN_DATA_HALF, CUDNN_TENSOR_NHWC, CUDNN_TENSOR_OP_MATH, DType::F16};
  if (dtype == "bf16")
    return {CUDNN_DATA_BFLOAT16, CUDNN_TENSOR_NHWC, CUDNN_TENSOR_OP_MATH, DType::BF16};
  return {CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, CUDNN_FMA_MATH, DType::F32};
}

bool not_supported(cudnnStatus_t st) {
#ifdef CUDNN_STATUS_CATEGORY
  return CUDNN_STATUS_CATEGORY(st) == CUDNN_STATUS_NOT_SUPPORTED;  // cuDNN 9 sub-codes
#else
  return st == CUDNN_STATUS_NOT_SUPPORTED;
#endif
}

}  // namespace

void bench_conv(const BenchContext& ctx, int device) {
  const DeviceInfo dev = device_info(device);
  Stream stream(device);
  Owned<cudnnHandle_t, cudnnDestroy> handle;
  PC_CUDNN(cudnnCreate(&handle.v));
  PC_CUDNN(cudnnSetStream(handle.v, stream.get()));
  const std::vector<StreamRef> streams = {{device, stream.get()}};
  for (const auto& dtype : ctx.opts.dtypes) {
    if ((dtype == "tf32" || dtype == "bf16") && !dev.tf32()) {
      std::cerr << "skip conv " << dtype << ": " << dev.name << " has no " << dtype << " support"
                << std::endl;
      continue;
    }
    const ConvType t = conv_type(dtype);
    const std::size_t elem = dtype_size(t.storage);
    for (const auto& s : conv_shapes(ctx.opts.quick)) {
      Owned<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor> x, y;
      Owned<cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor> w;
      Owned<cudnnConvolutionDescriptor_t, cudnnDestroyConvolutionDescriptor> conv;
      PC_CUDNN(cudnnCreateTensorDescriptor(&x.v));
      PC_CUDNN(cudnnCreateTensorDescriptor(&y.v));
      PC_CUDNN(cudnnCreateFilterDescriptor(&w.v));
      PC_CUDNN(cudnnCreateConvolutionDescriptor(&conv.v));
      PC_CUDNN(cudnnSetTensor4dDescriptor(x.v, t.format, t.data, s.n, s.c, s.h, s.w));
      PC_CUDNN(cudnnSetFilter4dDescriptor(w.v, t.data, t.format, s.k, s.c, s.r, s.s));
      PC_CUDNN(cudnnSetConvolution2dDescriptor(conv.v, s.pad, s.pad, s.stride, s.stride, 1, 1,
                                               CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
      PC_CUDNN(cudnnSetConvolutionMathType(conv.v, t.math));
      int on = 0, oc = 0, oh = 0, ow = 0;
      PC_CUDNN(cudnnGetConvolution2dForwardOutputDim(conv.v, x.v, w.v, &on, &oc, &oh, &ow));
      PC_CUDNN(cudnnSetTensor4dDescriptor(y.v, t.format, t.data, on, oc, oh, ow));

      const std::size_t xb = std::size_t{1} * s.n * s.c * s.h * s.w * elem;
      const std::size_t wb = std::size_t{1} * s.k * s.c * s.r * s.s * elem;
      const std::size_t yb = std::size_t{1} * on * oc * oh * ow * elem;
      const std::size_t free = free_memory(device) / 10 * 9;
      if (xb + wb + yb > free) {
        std::cerr << "skip conv " << dtype << " " << s.shape() << ": not enough free memory"
                  << std::endl;
        continue;
      }
      // Heuristic choice (cudnnGetConvolutionForwardAlgorithm_v7, as frameworks do without
      // autotuning): the first algorithm that is supported and whose workspace fits.
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      int returned = 0;
      PC_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(handle.v, x.v, w.v, conv.v, y.v,
                                                      CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned,
                                                      perf));
      const std::size_t ws_limit = std::min<std::size_t>(free - (xb + wb + yb), std::size_t{4} << 30);
      DeviceBuffer xbuf(device, xb), wbuf(device, wb), ybuf(device, yb), ws;
      PC_CUDA(launch_fill_random(xbuf.get(), xb / elem, t.storage, 7, stream.get()));
      PC_CUDA(launch_fill_random(wbuf.get(), wb / elem, t.storage, 8, stream.get()));
      const float alpha = 1.0f, beta = 0.0f;
      // Try the candidates in cuDNN's order: the first that runs is timed. A candidate the
      // library then refuses (NOT_SUPPORTED) is passed over; any other failure is an error.
      int chosen = -1;
      std::string refusal = "no candidate fits in free memory";
      for (int i = 0; i < returned && chosen < 0; ++i) {
        if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > ws_limit) continue;
        ws = DeviceBuffer(device, perf[i].memory);
        const cudnnStatus_t st = cudnnConvolutionForward(
            handle.v, &alpha, x.v, xbuf.get(), w.v, wbuf.get(), conv.v, perf[i].algo, ws.get(),
            perf[i].memory, &beta, y.v, ybuf.get());
        if (not_supported(st)) {
          refusal = std::string(cudnnGetErrorString(st));
          continue;
        }
        PC_CUDNN(st);
        chosen = i;
      }
      if (chosen < 0) {
        std::cerr << "skip conv " << dtype << " " << s.shape()
                  << ": cuDNN offers no forward algorithm that runs it (" << refusal << ")"
                  << std::endl;
        continue;
      }
      const cudnnConvolutionFwdAlgo_t algo = perf[chosen].algo;
      const std::size_t ws_bytes = perf[chosen].memory;
      const auto seconds = time_on_streams(streams, ctx.opts.warmup, ctx.opts.iters, [&] {
        PC_CUDNN(cudnnConvolutionForward(handle.v, &alpha, x.v, xbuf.get(), w.v, wbuf.get(),
                                         conv.v, algo, ws.get(), ws_bytes, &beta, y.v,
                                         ybuf.get()));
      });
      Measurement m;
      m.kind = "conv";
      m.op = "conv2d";
      m.dtype = dtype;
      m.shape = s.shape();
      m.flops = s.flops();
      m.bytes = s.bytes(elem);
      m.devices = 1;
      m.hosts = ctx.hosts;
      m.time = summarize(seconds);
      ctx.record(std::move(m));
    }
  }
}

#endif

}  // namespace placer::calibrate
