// placer-calibrate: CUDA/cuBLAS/cuDNN/NCCL microbenchmarks -> measurement CSV for
// `placer calibrate fit`. See docs/calibrate_cuda.md.
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <utility>

#include "args.h"
#include "bench.h"
#include "bench_nccl.h"
#include "bootstrap.h"
#include "csv.h"
#include "cuda_util.h"

namespace placer::calibrate {
namespace {

#ifdef PLACER_CALIBRATE_MPI
constexpr bool kHaveMpi = true;
#else
constexpr bool kHaveMpi = false;
#endif

std::string hostname() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

void write_csv(const Options& o, const CsvSink& sink, const RunInfo& info, const std::string& path) {
  if (path == "-") {
    sink.write(std::cout, info);
    std::cout.flush();
    return;
  }
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot open '" + path + "' for writing");
  sink.write(out, info);
  out.close();
  if (!out) throw std::runtime_error("error writing '" + path + "'");
  std::cerr << "wrote " << sink.rows().size() << " measurements to " << path << std::endl;
  (void)o;
}

// Runs `benches`; if one fails after some rows were measured, writes those rows to
// OUT.partial (never to OUT itself) before the error propagates.
template <typename Fn>
void keep_partial(const Options& o, const CsvSink& sink, const RunInfo& info, Fn&& benches) {
  try {
    benches();
  } catch (...) {
    if (!sink.rows().empty() && o.out != "-") {
      try {
        write_csv(o, sink, info, o.out + ".partial");
      } catch (const std::exception& e) {
        std::cerr << "placer-calibrate: could not save partial results: " << e.what() << std::endl;
      }
    }
    throw;
  }
}

RunInfo run_info(const Options& o, const std::vector<int>& devices, int hosts, int world) {
  RunInfo info;
  info.host = hostname();
  const DeviceInfo d = device_info(devices.front());
  info.device = d.name;
  for (int dev : devices) {
    const DeviceInfo other = device_info(dev);
    if (other.name != d.name) info.device += " / " + other.name;  // mixed GPUs: all named
  }
  info.device_count = world > 1 ? world : static_cast<int>(devices.size());
  info.compute_capability = std::to_string(d.major) + "." + std::to_string(d.minor);
  info.driver = driver_version();
  info.cuda_runtime = runtime_version();
  info.cublas = cublas_version();
  info.cudnn = cudnn_version();
  info.nccl = nccl_version();
  info.date = utc_now();
  info.command = o.command;
  info.hosts = hosts;
  info.world_size = world;
  return info;
}

// Compute and copy benchmarks on this process's first GPU (memcpy: all of `devices`).
void run_single_gpu_benches(const BenchContext& ctx, const std::vector<int>& devices) {
  const Options& o = ctx.opts;
  const int d = devices.front();
  if (o.runs("gemm")) bench_gemm(ctx, d);
  if (o.runs("conv")) bench_conv(ctx, d);
  if (o.runs("elementwise")) bench_elementwise(ctx, d);
  if (o.runs("reduction")) bench_reduction(ctx, d);
  if (o.runs("softmax")) bench_softmax(ctx, d);
  if (o.runs("memcpy")) bench_memcpy(ctx, devices);
}

// One process driving `devices` (all visible GPUs unless --devices names some).
int run_one_process(const Options& o, int visible) {
  std::vector<int> devices = o.devices;
  if (devices.empty())
    for (int d = 0; d < visible; ++d) devices.push_back(d);
  if (!o.ranks.empty() && o.ranks.back() > static_cast<int>(devices.size()))
    throw UsageError("--ranks: " + std::to_string(o.ranks.back()) + " is more than the " +
                     std::to_string(devices.size()) + " GPUs in use");
  CsvSink sink;
  const RunInfo info = run_info(o, devices, 1, 1);
  std::cerr << "placer-calibrate: " << devices.size() << " x " << info.device << " (cc "
            << info.compute_capability << "), driver " << info.driver << ", CUDA runtime "
            << info.cuda_runtime << ", cuBLAS " << info.cublas << ", cuDNN " << info.cudnn
            << ", NCCL " << info.nccl << std::endl;
  const BenchContext ctx{o, sink, 1};
  keep_partial(o, sink, info, [&] {
    run_single_gpu_benches(ctx, devices);
    if (o.runs("collective")) bench_collectives_local(ctx, devices);
  });
  write_csv(o, sink, info, o.out);
  return 0;
}

// This process's GPU: the local rank's entry of --devices, else the local rank's own.
int local_device(const Options& o, int local, int visible) {
  if (!o.devices.empty()) {
    if (local >= static_cast<int>(o.devices.size()))
      throw UsageError("--devices lists " + std::to_string(o.devices.size()) +
                       " devices but this process has local rank " + std::to_string(local));
    return o.devices[local];
  }
  if (local >= visible) {
    throw LibraryError("local rank " + std::to_string(local) + " has no GPU of its own (" +
                       std::to_string(visible) + " visible): start at most one process per GPU");
  }
  return local;
}

// One process per GPU (a launcher's WORLD_SIZE ranks): collectives over all of them, the
// rest on rank 0's GPU; rank 0 writes the CSV.
int run_process_per_gpu(const Options& o, const LaunchEnv& env, std::unique_ptr<Bootstrap> boot,
                        int visible) {
  if (!o.ranks.empty())
    throw UsageError(
        "--ranks applies to one process driving several GPUs; with one process "
        "per GPU the collectives run over all WORLD_SIZE ranks");
  if (!boot) boot = make_tcp_bootstrap(env);
  const int local = boot->local_rank() >= 0 ? boot->local_rank() : env.local_rank;
  const int device = local_device(o, local, visible);
  PC_CUDA(cudaSetDevice(device));
  const auto hosts_list = boot->all_gather(hostname());
  const int hosts = static_cast<int>(std::set<std::string>(hosts_list.begin(), hosts_list.end()).size());
  const bool root = boot->rank() == 0;
  CsvSink sink;
  const BenchContext ctx{o, sink, hosts};
  RunInfo info;
  if (root) {
    info = run_info(o, {device}, hosts, boot->size());
    std::cerr << "placer-calibrate: " << boot->size() << " ranks (" << boot->name()
              << " bootstrap) on " << hosts << " host(s), rank 0 on " << info.device << " (cc "
              << info.compute_capability << "), driver " << info.driver << ", NCCL " << info.nccl
              << std::endl;
  }
  // Collectives first (every rank), then compute and copies on rank 0's GPU alone, so no
  // rank waits in the bootstrap (which has a timeout) while rank 0 computes.
  if (root) {
    keep_partial(o, sink, info, [&] {
      if (o.runs("collective")) bench_collectives_ranks(ctx, *boot, device);
      run_single_gpu_benches(ctx, {device});
    });
  } else if (o.runs("collective")) {
    bench_collectives_ranks(ctx, *boot, device);
  }
  if (root) write_csv(o, sink, info, o.out);
  return 0;
}

int run(int argc, char** argv) {
  const Options o = parse_args(argc, argv);
  if (o.help) {
    std::cout << usage();
    return 0;
  }
  const LaunchEnv env = detect_launch([](const char* n) { return std::getenv(n); }, kHaveMpi);
  std::unique_ptr<Bootstrap> boot;
  if (env.kind == LaunchEnv::Kind::Mpi) boot = make_mpi_bootstrap(&argc, &argv);
  const int visible = device_count_or_throw();
  for (int d : o.devices)
    if (d >= visible)
      throw UsageError("--devices: device " + std::to_string(d) + " does not exist (" +
                       std::to_string(visible) + " visible)");
  if (env.kind == LaunchEnv::Kind::Single) return run_one_process(o, visible);
  return run_process_per_gpu(o, env, std::move(boot), visible);
}

}  // namespace
}  // namespace placer::calibrate

int main(int argc, char** argv) {
  using namespace placer::calibrate;
  try {
    return run(argc, argv);
  } catch (const UsageError& e) {
    std::cerr << "placer-calibrate: error: " << e.what() << "\n"
              << "Run 'placer-calibrate --help' for usage." << std::endl;
    return 2;
  } catch (const BootstrapError& e) {
    std::cerr << "placer-calibrate: error: " << e.what() << std::endl;
    return 1;
  } catch (const LibraryError& e) {
    std::cerr << "placer-calibrate: error: " << e.what() << std::endl;
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "placer-calibrate: error: " << e.what() << std::endl;
    return 1;
  }
}
