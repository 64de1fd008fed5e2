// Time of one GDP PPO update on the CPU and on a GPU: the GDP policy
// (GraphSAGE + superposition + Transformer-XL + device head, agents/gdp/gdp_net.h) at the sizes of
// examples/train_policy.yaml, one fresh network per device from the same seed, trained for
// --warmup + --updates updates on the same instances. Every update does what one update of
// `placer train-policy` does on one process (GdpTrainer::Impl::run_update,
// agents/gdp/gdp_train_loop.cpp), with the same functions:
//
//   sample     per instance one forward pass without gradients, --samples placements drawn
//              from the softmax (sample_action: a CPU copy of the probabilities) and their
//              log-probabilities (action_log_probs)
//   simulate   every placement simulated (PlacementEnv::step, CPU; here on one thread, the
//              trainer spreads it over its rollout threads)
//   ppo        compute_advantages + ppo_update (agents/gdp/gdp_ppo.cpp): --epochs passes of
//              forward + backward over every instance, gradient clipping, one Adam step each
//
// On cuda the network, Adam's state and the graph tensors live on the GPU (tensors_to, as the
// trainer's --device cuda); the clock stops after a value is read back from the GPU, so the
// queued kernels are included. Not timed: the first --warmup updates (CUDA context, cuBLAS
// handles, allocator growth). Instances: each --graphs model expanded to a training step (Adam)
// on the first --devices GPUs of --cluster, reference = the best single-device time (the
// trainer also takes m-etf's time as a reference; that only rescales the rewards).
//
// Prints a table (per device: timed updates, median / min / max seconds of the ppo phase and
// the median of sample and of the whole update), the loss of the first update on each device
// (same seed and batch: the cpu and cuda values should agree to ~1e-5) and writes one CSV line
// per device x timed update with --csv. Exit status 3 when --device cuda finds no GPU.
//
//   ./build/bench/gdp_ppo_update                         # cpu, and cuda when available
//   ./build/bench/gdp_ppo_update --device cuda --updates 50 --csv ppo.csv
//   ./build/bench/gdp_ppo_update --graphs transformer_enc12_d768 --devices 4 --samples 16
//
// scripts/gpu_ppo_bench.sh builds and runs it on a GPU machine (docs/distributed.md,
// "Measuring the PPO update on a GPU").
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "agents/gdp/gdp.h"
#include "agents/gdp/gdp_net.h"
#include "agents/gdp/gdp_train_impl.h"  // tensors_to: the trainer's move of the graph tensors
#include "env/placement_env.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "src/graph/training_step.h"
#include "src/io/cluster_yaml.h"
#include "src/io/graph_json.h"
#include "src/util/error.h"

// The LibTorch version, from CMake (Torch_VERSION); bench/ includes no LibTorch header itself.
#ifndef PLACER_TORCH_VERSION
#define PLACER_TORCH_VERSION "?"
#endif

namespace placer {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string repo_path(const std::string& rel) {
  const std::filesystem::path here = std::filesystem::path(__FILE__).parent_path().parent_path();
  const std::filesystem::path p = here / rel;
  return std::filesystem::exists(p) ? p.string() : rel;
}

std::string model_path(const std::string& name) {
  if (std::filesystem::exists(name)) return name;
  return repo_path("datasets/models/" + name + ".graph.json");
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

struct Args {
  std::vector<std::string> graphs = {"transformer_enc6_d512", "resnet50", "googlenet",
                                     "mobilenet_v2"};
  std::string cluster = "datasets/clusters/dgx1_p100.cluster.yaml";
  int devices = 8;
  std::string device = "all";  // cpu, cuda or all (cpu, then cuda when available)
  int updates = 20;
  int warmup = 3;
  uint64_t seed = 1;
  int threads = 0;  // torch intra-op threads on the CPU (0 = LibTorch's default)
  std::string csv;
  GdpNetConfig net;
  PpoConfig ppo;
};

/// One simulated instance: the training-step graph, its cluster slice and env (CPU).
struct BenchInstance {
  std::string name;
  Graph graph;
  std::unique_ptr<CostModel> cost;
  std::unique_ptr<PlacementEnv> env;
  GraphTensors tensors;  // CPU, as built by to_tensors
};

struct UpdateRow {
  int update = 0;
  double sample = 0, simulate = 0, ppo = 0, total = 0;
  PpoStats stats;
};

struct DeviceRun {
  std::string device;
  double setup = 0;             // network + Adam + graph tensors on the device
  std::vector<UpdateRow> rows;  // timed updates
  double first_loss = std::numeric_limits<double>::quiet_NaN();  // update 1 (warm-up or not)
};

/// Waits for the queued kernels of `net`'s device: a value read back from the device
/// synchronises its (default) stream, on which the whole update ran. A no-op cost on the CPU.
void wait_for(GdpNet& net) { (void)net->parameters().back().sum().item<float>(); }

bool cuda_usable() {
  // at::hasCUDA / at::getNumGPUs (ATen/Context.h, reached through the torch headers of
  // agents/gdp/gdp_net.h): a CUDA LibTorch with at least one visible GPU.
  return at::hasCUDA() && at::getNumGPUs() > 0;
}

DeviceRun run_device(const std::string& device_name, std::vector<BenchInstance>& instances,
                     const Args& a) {
  DeviceRun run;
  run.device = device_name;
  const torch::Device device =
      device_name == "cuda" ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
  const auto t_setup = Clock::now();
  GdpPolicy policy(a.net, a.seed);  // built on the CPU from the seed, as in the trainer
  GdpNet net = policy.impl().net;
  net->train();
  if (device.is_cuda()) net->to(device);
  torch::optim::Adam adam(net->parameters(), torch::optim::AdamOptions(a.ppo.lr));
  std::vector<GraphTensors> tensors;
  for (const BenchInstance& inst : instances) {
    tensors.push_back(device.is_cuda() ? gdp_train::tensors_to(inst.tensors, device)
                                       : inst.tensors);
  }
  wait_for(net);
  run.setup = since(t_setup);

  std::mt19937_64 rng(a.seed);
  std::vector<double> ema(instances.size(), std::numeric_limits<double>::quiet_NaN());
  const int total = a.warmup + a.updates;
  for (int u = 1; u <= total; ++u) {
    UpdateRow row;
    row.update = u;
    const auto t0 = Clock::now();
    std::vector<PpoEpisode> batch;
    for (size_t b = 0; b < instances.size(); ++b) {
      PpoEpisode ep;
      ep.tensors = &tensors[b];
      torch::NoGradGuard no_grad;
      const torch::Tensor logits = net->forward(tensors[b]);
      const torch::Tensor probs = torch::softmax(logits, -1);
      std::vector<torch::Tensor> old;
      for (int k = 0; k < a.ppo.samples; ++k) {
        ep.actions.push_back(sample_action(probs, rng));
        old.push_back(action_log_probs(logits, ep.actions.back()));
      }
      ep.old_log_probs = torch::stack(old);
      batch.push_back(std::move(ep));
    }
    wait_for(net);
    const auto t1 = Clock::now();
    for (size_t b = 0; b < instances.size(); ++b) {
      for (const std::vector<int>& action : batch[b].actions) {
        batch[b].rewards.push_back(instances[b].env->step(action).reward);
      }
    }
    const auto t2 = Clock::now();
    std::vector<double*> baselines;
    for (double& e : ema) baselines.push_back(&e);
    compute_advantages(batch, a.ppo, baselines);
    row.stats = ppo_update(net, adam, batch, a.ppo);
    wait_for(net);
    const auto t3 = Clock::now();
    row.sample = std::chrono::duration<double>(t1 - t0).count();
    row.simulate = std::chrono::duration<double>(t2 - t1).count();
    row.ppo = std::chrono::duration<double>(t3 - t2).count();
    row.total = std::chrono::duration<double>(t3 - t0).count();
    if (u == 1) run.first_loss = row.stats.loss;
    std::fprintf(stderr,
                 "[%s] update %d/%d%s: sample %.3f s, simulate %.3f s, ppo %.3f s, loss %.6f\n",
                 device_name.c_str(), u, total, u <= a.warmup ? " (warm-up)" : "", row.sample,
                 row.simulate, row.ppo, row.stats.loss);
    if (u > a.warmup) run.rows.push_back(row);
  }
  return run;
}

double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void usage() {
  std::cerr << "usage: gdp_ppo_update [--device cpu|cuda|all] [--updates N] [--warmup W]\n"
               "  [--graphs NAME|PATH,...] [--cluster C] [--devices K] [--seed S] [--threads T]\n"
               "  [--samples K] [--epochs E] [--hidden H] [--txl-layers L] [--segment T]\n"
               "  [--csv FILE]\n";
}

int run(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "-h" || k == "--help") {
      usage();
      return 0;
    }
    if (i + 1 >= argc) {
      usage();
      return 2;
    }
    const std::string v = argv[++i];
    if (k == "--device")
      a.device = v;
    else if (k == "--updates")
      a.updates = std::stoi(v);
    else if (k == "--warmup")
      a.warmup = std::stoi(v);
    else if (k == "--graphs")
      a.graphs = split(v);
    else if (k == "--cluster")
      a.cluster = v;
    else if (k == "--devices")
      a.devices = std::stoi(v);
    else if (k == "--seed")
      a.seed = std::stoull(v);
    else if (k == "--threads")
      a.threads = std::stoi(v);
    else if (k == "--samples")
      a.ppo.samples = std::stoi(v);
    else if (k == "--epochs")
      a.ppo.epochs = std::stoi(v);
    else if (k == "--hidden")
      a.net.hidden = std::stoi(v);
    else if (k == "--txl-layers")
      a.net.txl_layers = std::stoi(v);
    else if (k == "--segment")
      a.net.segment = a.net.mem_len = std::stoi(v);
    else if (k == "--csv")
      a.csv = v;
    else {
      usage();
      return 2;
    }
  }
  if (a.device != "cpu" && a.device != "cuda" && a.device != "all") {
    usage();
    return 2;
  }
  if (a.updates < 1 || a.warmup < 0 || a.graphs.empty() || a.ppo.samples < 1) {
    std::cerr << "gdp_ppo_update: need --updates >= 1, --warmup >= 0, --samples >= 1 and a graph\n";
    return 2;
  }
  if (a.threads > 0) torch::set_num_threads(a.threads);

  const Cluster cluster = load_cluster_yaml(repo_path(a.cluster));
  if (a.devices < 1 || a.devices > cluster.num_devices() || a.devices > a.net.max_devices) {
    throw ValidationError("--devices " + std::to_string(a.devices) + " outside [1, " +
                          std::to_string(std::min(cluster.num_devices(), a.net.max_devices)) + "]");
  }
  std::vector<int> devs(size_t(a.devices));
  for (int d = 0; d < a.devices; ++d) devs[size_t(d)] = d;

  const auto t_build = Clock::now();
  std::vector<BenchInstance> instances(a.graphs.size());
  int64_t ops = 0, units = 0;
  for (size_t i = 0; i < a.graphs.size(); ++i) {
    BenchInstance& inst = instances[i];
    inst.name = std::filesystem::path(a.graphs[i]).stem().string();
    Graph forward = load_graph_json(model_path(a.graphs[i]));
    inst.graph = forward.is_training_step() ? std::move(forward) : expand_training_step(forward);
    inst.cost = std::make_unique<CostModel>(cluster, default_profile());
    PlacementEnvOptions eo;
    eo.devices = devs;
    eo.max_devices = a.net.max_devices;
    eo.oom_penalty = a.ppo.oom_penalty;
    inst.env = std::make_unique<PlacementEnv>(inst.graph, cluster, *inst.cost, eo);
    inst.tensors = to_tensors(*inst.env);
    ops += inst.graph.num_ops();
    units += inst.env->num_units();
    std::fprintf(stderr, "instance %s: %d ops (training step), %d units, %d devices\n",
                 inst.name.c_str(), int(inst.graph.num_ops()), inst.env->num_units(), a.devices);
  }
  const double build_seconds = since(t_build);

  const bool have_cuda = cuda_usable();
  std::vector<std::string> to_run;
  if (a.device == "cpu" || a.device == "all") to_run.push_back("cpu");
  std::string cuda_note;
  if (a.device == "cuda" || a.device == "all") {
    if (have_cuda) {
      to_run.push_back("cuda");
    } else {
      cuda_note = std::string("cuda: not available (") +
                  (at::hasCUDA() ? "no GPU visible" : "this LibTorch has no CUDA") +
                  "); no cuda row";
      std::fprintf(stderr, "%s\n", cuda_note.c_str());
    }
  }

  std::vector<DeviceRun> runs;
  for (const std::string& d : to_run) runs.push_back(run_device(d, instances, a));

  std::ostringstream title;
  title << "GDP PPO update: " << instances.size() << " instances (";
  for (size_t i = 0; i < instances.size(); ++i) title << (i ? ", " : "") << instances[i].name;
  title << "; " << ops << " ops, " << units << " units in all) on " << a.devices << " of "
        << cluster.name << ", " << a.ppo.samples << " samples, " << a.ppo.epochs
        << " epochs; net hidden " << a.net.hidden << ", " << a.net.txl_layers
        << " Transformer-XL layers, segment " << a.net.segment << "; seed " << a.seed
        << "; LibTorch " << PLACER_TORCH_VERSION << ", " << torch::get_num_threads()
        << " CPU threads; warm-up " << a.warmup << " updates";
  std::printf("%s\n", title.str().c_str());
  std::printf(
      "(instances built in %.2f s; ppo = compute_advantages + ppo_update, the part "
      "that runs on the device)\n\n",
      build_seconds);
  std::printf("%-6s %8s %13s %10s %10s %14s %15s %9s\n", "device", "updates", "ppo median s",
              "ppo min s", "ppo max s", "sample median", "update median", "setup s");
  for (const DeviceRun& r : runs) {
    std::vector<double> ppo, sample, total;
    for (const UpdateRow& row : r.rows) {
      ppo.push_back(row.ppo);
      sample.push_back(row.sample);
      total.push_back(row.total);
    }
    std::printf("%-6s %8zu %13.4f %10.4f %10.4f %14.4f %15.4f %9.2f\n", r.device.c_str(),
                r.rows.size(), median(ppo), *std::min_element(ppo.begin(), ppo.end()),
                *std::max_element(ppo.begin(), ppo.end()), median(sample), median(total), r.setup);
  }
  if (!cuda_note.empty()) std::printf("%s\n", cuda_note.c_str());
  for (const DeviceRun& r : runs) {
    std::printf("loss of update 1 on %s: %.8f\n", r.device.c_str(), r.first_loss);
  }
  if (runs.size() == 2) {
    std::printf("|cpu - cuda| loss of update 1: %.3g (same seed and batch; ~1e-5 expected)\n",
                std::fabs(runs[0].first_loss - runs[1].first_loss));
    std::vector<double> c, g;
    for (const UpdateRow& row : runs[0].rows) c.push_back(row.ppo);
    for (const UpdateRow& row : runs[1].rows) g.push_back(row.ppo);
    std::printf("ppo median cpu / cuda: %.2fx\n", median(c) / median(g));
  }

  if (runs.empty()) return 3;  // --device cuda without CUDA: nothing measured
  if (!a.csv.empty()) {
    std::ofstream out(a.csv);
    if (!out) throw FileError("cannot write " + a.csv);
    out << "device,update,instances,units,samples,epochs,sample_s,simulate_s,ppo_s,update_s,"
           "loss,entropy,approx_kl,clip_fraction\n";
    char buf[512];
    for (const DeviceRun& r : runs) {
      for (const UpdateRow& row : r.rows) {
        std::snprintf(
            buf, sizeof(buf), "%s,%d,%zu,%lld,%d,%d,%.6f,%.6f,%.6f,%.6f,%.8g,%.8g,%.8g,%.8g\n",
            r.device.c_str(), row.update, instances.size(), (long long)units, a.ppo.samples,
            a.ppo.epochs, row.sample, row.simulate, row.ppo, row.total, row.stats.loss,
            row.stats.entropy, row.stats.approx_kl, row.stats.clip_fraction);
        out << buf;
      }
    }
    std::printf("wrote %s\n", a.csv.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace placer

int main(int argc, char** argv) {
  try {
    return placer::run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "gdp_ppo_update: error: " << e.what() << "\n";
    return 1;
  }
}
