// Simulator scale on Megatron-LM GPT configurations: GPT-3 175B on 512 A100s (64 DGX A100
// hosts on InfiniBand; tp 8, pp 16, dp 4, global batch 1536) and smaller GPT configurations
// for throughput. Per row: ops of the training-step graph, simulated op executions
// (SimResult::simulated_ops), the time of each phase (make_gpt, expand_training_step,
// megatron_plan, CostModel + Simulator construction, run: best of --reps), simulated ops per
// second, the process's peak RSS (VmHWM, reset per row where the kernel allows), the
// predicted step time and device 0's peak memory; PASS/MISS against the targets (175B:
// <= 2 s per simulation and <= 2 GB; all rows: >= 2M simulated ops/s). Results and
// commands: docs/results.md.
//
// `--only large` prints the large jobs instead, each plan read from Megatron-LM arguments
// as `placer plan from-megatron` reads them: a 1T GPT on 3072 A100s (Narayanan et al. 2021:
// 128 layers, hidden 25600, 160 heads; tp 8, pp 64, dp 6, 512 micro-batches of 1) and a
// Llama-3-405B shape on 16,384 H100s (126 layers, hidden 16384, 128 heads, 8 KV heads, FFN
// 53248, vocabulary 128256, sequence 8192, global batch 2048; tp 8, pp 16 with 7 layers on
// the first and last stage, dp 128, bf16, distributed optimizer), the same job on 1,024
// GPUs (dp 8) and on 100,352 GPUs (dp 784, global batch 12544). Each is timed with the
// default (symmetric when it can be) simulation and run once more in full (--exact), and
// the row says whether both give the same step time and per-device peak memory.
// `--only 1t|405b|405b-1k|405b-100k` runs one of them, so that the peak RSS (getrusage: the
// process's maximum) is that row's alone; `--only 405b-ratio` runs the 1,024 and 16,384
// GPU jobs and prints their run-time ratio. Large plans with expert, context parallelism
// and FSDP: `dsv3-tp1|dsv3-tp2` (DeepSeek-V3 on 2,048 H100: pp 16, ep 64, tp 1 or 2),
// `405b-cp2|405b-cp8` (the 405B job with context parallelism 2 or 8), `70b-hsdp` and
// `70b-hsdp-pp4` (Llama-3-70B as a torchtitan HSDP job on 4,096 H100, tp 8, without
// pipeline or with pp 4). The `simulation` column says which simulation ran, and why in
// full when it did.
//
//   ./build/bench/megatron_scale [--cluster datasets/clusters/dgx_a100.cluster.yaml]
//       [--profile datasets/clusters/dgx_a100.profile.yaml] [--reps 3]
//       [--only 175b|small|large|1t|405b|405b-1k|405b-100k|405b-ratio]
//
// The cluster file supplies the device type and the intra-host link of one host; the
// program repeats that host as often as a row needs (64 for 512 GPUs) and adds an
// InfiniBand inter-host link (HDR 200 Gbit/s per GPU, one NIC per GPU: per_device, 5 us,
// as datasets/clusters/measurements/coreweave_hgx_a100_4node.cluster.yaml).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <time.h>

#include "datasets/gpt.h"
#include "datasets/hf_config.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/simulator.h"
#include "src/graph/training_step.h"
#include "src/io/cluster_yaml.h"
#include "src/io/plan_import.h"
#include "src/plan/megatron_plan.h"
#include "src/util/error.h"

using namespace placer;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// CPU seconds this thread has run (the wall time of a loaded machine overstates a run).
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

/// A /proc/self/status field in kB (VmHWM, VmRSS); -1 when unreadable.
long status_kb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string key = std::string(field) + ":";
  while (std::getline(in, line)) {
    if (line.compare(0, key.size(), key) == 0) return std::atol(line.c_str() + key.size());
  }
  return -1;
}

/// Resets VmHWM to the current RSS (Linux >= 4.0: "5" > /proc/self/clear_refs).
bool reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  if (!out) return false;
  out << "5";
  out.flush();
  return bool(out);
}

/// `hosts` copies of the base cluster's first host, with the base's inter-host link when it
/// has one, else an InfiniBand one (HDR 200 Gbit/s per GPU).
Cluster make_hosts(const Cluster& base, int hosts) {
  const DeviceSpec spec = base.device(base.host(0).devices[0]).spec;
  const int per_host = static_cast<int>(base.host(0).devices.size());
  Cluster c;
  c.name = base.name + "-x" + std::to_string(hosts);
  for (int h = 0; h < hosts; ++h) c.add_host("node" + std::to_string(h), spec, per_host);
  c.set_link(LinkLevel::kIntraHost, base.link(LinkLevel::kIntraHost));
  const LinkSpec& inter = base.link(LinkLevel::kInterHost);
  c.set_link(LinkLevel::kInterHost, inter.bandwidth > 0 ? inter
                                                        : LinkSpec{"infiniband", 5e-6, 200e9 / 8,
                                                                   LinkSharing::kPerDevice});
  c.validate();
  return c;
}

struct Config {
  std::string label;
  int layers;
  int64_t hidden, heads, seq_len;
  int tp, pp, dp, micro_batch, micro_batches;
  bool big;  ///< the 175B row: targets <= 2 s and <= 2 GB
};

struct Row {
  const Config* cfg = nullptr;
  size_t ops = 0;
  uint64_t simulated = 0;
  double t_gpt = 0, t_expand = 0, t_plan = 0, t_sim_ctor = 0, t_run = 0;
  double cpu_run = 0;  ///< CPU seconds of the best run
  long rss_kb = -1;
  double step = 0;
  uint64_t peak0 = 0;
  bool oom = false;
  bool symmetric = false;   ///< the timed runs were symmetric simulations
  std::string full_reason;  ///< why they were not (SimResult::full_reason)
  // With `full`: one run of the full simulation (SimOptions::exact), and whether its step
  // time (to 1e-9) and every device's peak memory equal the timed run's.
  double t_full = 0, cpu_full = 0;
  bool same_as_full = false;
};

/// One full simulation of `plan` into `row`, compared with `timed`, the timed run's result.
void compare_full(Simulator& sim, const Plan& plan, const SimResult& timed, Row* row) {
  SimOptions exact;
  exact.critical_path = false;
  exact.exact = true;
  const auto t0 = Clock::now();
  const double c0 = thread_cpu_seconds();
  const SimResult full = sim.run(plan, exact);
  row->t_full = seconds_since(t0);
  row->cpu_full = thread_cpu_seconds() - c0;
  row->same_as_full = std::abs(full.step_time - timed.step_time) <= 1e-9 * full.step_time &&
                      full.peak_memory == timed.peak_memory;
}

/// Builds the Simulator and runs `plan` `reps` times (without the critical path): the
/// construction time, the best run time and the run's results into `row`.
void time_runs(const Graph& g, const Plan& plan, const Cluster& cluster, const CostProfile& profile,
               int reps, Row* row, bool full = false) {
  auto t0 = Clock::now();
  const CostModel cost(cluster, profile);
  Simulator sim(g, cluster, cost);
  row->t_sim_ctor = seconds_since(t0);
  SimOptions so;
  so.critical_path = false;
  row->t_run = 1e30;
  SimResult res;
  for (int r = 0; r < reps; ++r) {
    t0 = Clock::now();
    const double c0 = thread_cpu_seconds();
    res = sim.run(plan, so);
    const double wall = seconds_since(t0);
    if (wall < row->t_run) row->t_run = wall, row->cpu_run = thread_cpu_seconds() - c0;
    row->simulated = res.simulated_ops;
    row->step = res.step_time;
    row->peak0 = res.peak_memory.empty() ? 0 : res.peak_memory[0];
    row->oom = res.oom;
    row->symmetric = res.symmetric;
    row->full_reason = res.full_reason;
  }
  if (full) compare_full(sim, plan, res, row);
}

Row run_config(const Config& c, const Cluster& base, const CostProfile& profile, int reps) {
  Row row;
  row.cfg = &c;
  reset_peak_rss();
  const int gpus = c.tp * c.pp * c.dp;
  const int per_host = static_cast<int>(base.host(0).devices.size());
  const Cluster cluster = make_hosts(base, (gpus + per_host - 1) / per_host);
  MegatronConfig m;
  m.tp = c.tp;
  m.pp = c.pp;
  m.dp = c.dp;
  m.micro_batch = c.micro_batch;
  m.global_batch = c.micro_batch * c.dp * c.micro_batches;
  m.recompute = Recompute::kFull;
  m.zero_stage = 1;

  auto t0 = Clock::now();
  GptOptions o;
  o.name = c.label;
  o.layers = c.layers;
  o.hidden = c.hidden;
  o.heads = c.heads;
  o.seq_len = c.seq_len;
  o.batch = m.global_batch;
  o.vocab = 50257;
  o.tp = c.tp;
  Graph forward = make_gpt(o);
  row.t_gpt = seconds_since(t0);

  t0 = Clock::now();
  TrainingOptions t;
  t.optimizer = Optimizer::kAdam;
  t.master_weights = true;
  const Graph g = expand_training_step(forward, t);
  row.t_expand = seconds_since(t0);
  forward = Graph();
  row.ops = g.num_ops();

  t0 = Clock::now();
  const Plan plan = megatron_plan(g, m);
  row.t_plan = seconds_since(t0);

  time_runs(g, plan, cluster, profile, reps, &row);
  row.rss_kb = status_kb("VmHWM");
  return row;
}

const char* pass(bool ok) { return ok ? "PASS" : "MISS"; }

/// Peak resident set of the process so far in MB (getrusage; Linux reports kB).
double max_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) / 1024;
}

/// A large job: its forward graph (for a global batch), the cluster whose first host is
/// repeated, and the Megatron-LM arguments its plan is read from (the global batch added).
struct LargeJob {
  std::string key, label;
  int gpus;
  int64_t global_batch;
  std::string cluster_path, profile_path, args;
  Graph (*forward)(int64_t batch);
  double target_s;          ///< the run-time target (seconds)
  bool torchtitan = false;  ///< args is a torchtitan job file (TOML), not Megatron-LM arguments
};

Graph gpt_1t(int64_t batch) {
  GptOptions o;
  o.name = "gpt-1t";
  o.layers = 128, o.hidden = 25600, o.heads = 160, o.seq_len = 2048, o.batch = batch;
  o.vocab = 50257, o.tp = 8;
  return make_gpt(o);
}

/// A Llama-3 shape: 8 KV heads, vocabulary 128256, sequence 8192, as trained with tp 8.
Graph llama3(const char* name, int layers, int64_t hidden, int64_t heads, int64_t ffn,
             int64_t batch) {
  LlamaOptions o;
  o.name = name;
  o.layers = layers, o.hidden = hidden, o.heads = heads, o.kv_heads = 8, o.ffn = ffn;
  o.vocab = 128256, o.seq_len = 8192, o.batch = batch, o.tp = 8;
  return make_llama(o);
}

Graph llama3_405b(int64_t batch) { return llama3("llama3-405b", 126, 16384, 128, 53248, batch); }

// DeepSeek-V3 (datasets/models/hf/deepseek_v3.config.json: 61 layers, the first 3 dense, 256
// routed experts of which 8 per token, 1 shared expert, MLA), sequence 4096.
Graph deepseek_v3(int64_t batch) {
  HfGraphOptions o;
  o.name = "deepseek-v3", o.seq_len = 4096, o.batch = batch;
  return make_hf_graph(load_hf_config("datasets/models/hf/deepseek_v3.config.json"), o);
}

Graph llama3_70b(int64_t batch) { return llama3("llama3-70b", 80, 8192, 64, 28672, batch); }

const char* const kGpt1tArgs =
    "--tensor-model-parallel-size 8 --pipeline-model-parallel-size 64 --num-layers 128 "
    "--micro-batch-size 1 --fp16 --recompute-granularity full --recompute-method uniform "
    "--recompute-num-layers 1 --use-distributed-optimizer";
const char* const kLlama405bArgs =
    "--tensor-model-parallel-size 8 --pipeline-model-parallel-size 16 --num-layers 126 "
    "--decoder-first-pipeline-num-layers 7 --decoder-last-pipeline-num-layers 7 "
    "--micro-batch-size 1 --bf16 --sequence-parallel --use-distributed-optimizer";

// DeepSeek-V3 on 2,048 H100: pp 16 (3 layers on the first stage, 2 on the last, 4 on the
// others), ep 64, tp 1 or 2 (dp 128 or 64), global batch 4096.
const char* const kDeepSeekArgs =
    "--pipeline-model-parallel-size 16 --num-layers 61 --decoder-first-pipeline-num-layers 3 "
    "--decoder-last-pipeline-num-layers 2 --num-experts 256 --moe-router-topk 8 "
    "--expert-model-parallel-size 64 --expert-tensor-parallel-size 1 --micro-batch-size 1 "
    "--bf16 --use-distributed-optimizer ";
const std::string kDeepSeekTp1Args = std::string(kDeepSeekArgs) + "--tensor-model-parallel-size 1";
const std::string kDeepSeekTp2Args =
    std::string(kDeepSeekArgs) + "--tensor-model-parallel-size 2 --sequence-parallel";
// The 405B job with context parallelism `cp` (ring attention) on 16,384 GPUs: cp 2 (dp 64)
// or cp 8 (dp 16), full recomputation so that it fits.
std::string llama405b_cp_args(int cp) {
  return std::string(kLlama405bArgs) + " --context-parallel-size " + std::to_string(cp) +
         " --recompute-granularity full --recompute-method uniform --recompute-num-layers 1";
}

// Llama-3-70B as torchtitan trains it on 4,096 GPUs: tp 8, HSDP of 8 replicas of shard
// groups of `shard` data-parallel ranks, `local` sequences per rank and step, bf16
// all-gathers, fp32 reductions, full activation checkpointing; `pipeline` adds its keys.
std::string llama70b_hsdp_job(int local, int shard, const std::string& pipeline) {
  const int dp = 8 * shard;
  return "[training]\nlocal_batch_size = " + std::to_string(local) +
         "\nglobal_batch_size = " + std::to_string(local * dp) +
         "\nseq_len = 8192\nmixed_precision_param = \"bfloat16\"\n"
         "mixed_precision_reduce = \"float32\"\n[parallelism]\n"
         "data_parallel_replicate_degree = 8\ndata_parallel_shard_degree = " +
         std::to_string(shard) + "\ntensor_parallel_degree = 8\n" + pipeline +
         "[activation_checkpoint]\nmode = \"full\"\n";
}
// Without pipeline: shard groups of 64, local batch 1 (global batch 512). With pp 4 (1F1B,
// 8 micro-batches of 1): shard groups of 16, global batch 1024.
const std::string kLlama70bHsdp = llama70b_hsdp_job(1, 64, "");
const std::string kLlama70bHsdpPp4 = llama70b_hsdp_job(
    8, 16,
    "pipeline_parallel_degree = 4\npipeline_parallel_schedule = \"1F1B\"\n"
    "pipeline_parallel_microbatch_size = 1\nfsdp_reshard_after_forward = \"always\"\n");

const char* const kH100Cluster = "datasets/clusters/h100_ib_64node.cluster.yaml";
const char* const kH100Profile = "datasets/clusters/h100.profile.yaml";

// 405b-1k: the 405B job on 1,024 GPUs (dp 8, the same global batch: 256 micro-batches per
// replica instead of 16); 405b-100k: on 100,352 GPUs (dp 784, 16 micro-batches per replica).
const LargeJob kLargeJobs[] = {
    {"1t", "gpt-1t", 3072, 3072, "datasets/clusters/dgx_a100.cluster.yaml",
     "datasets/clusters/dgx_a100.profile.yaml", kGpt1tArgs, gpt_1t, 1.0},
    {"405b", "llama3-405b", 16384, 2048, kH100Cluster, kH100Profile, kLlama405bArgs, llama3_405b,
     2.0},
    {"405b-1k", "llama3-405b", 1024, 2048, kH100Cluster, kH100Profile, kLlama405bArgs, llama3_405b,
     2.0},
    {"405b-100k", "llama3-405b", 100352, 12544, kH100Cluster, kH100Profile, kLlama405bArgs,
     llama3_405b, 10.0},
    {"dsv3-tp1", "deepseek-v3", 2048, 4096, kH100Cluster, kH100Profile, kDeepSeekTp1Args,
     deepseek_v3, 10.0},
    {"dsv3-tp2", "deepseek-v3", 2048, 4096, kH100Cluster, kH100Profile, kDeepSeekTp2Args,
     deepseek_v3, 10.0},
    {"405b-cp2", "llama3-405b cp2", 16384, 2048, kH100Cluster, kH100Profile, llama405b_cp_args(2),
     llama3_405b, 2.0},
    {"405b-cp8", "llama3-405b cp8", 16384, 2048, kH100Cluster, kH100Profile, llama405b_cp_args(8),
     llama3_405b, 2.0},
    {"70b-hsdp", "llama3-70b hsdp", 4096, 512, kH100Cluster, kH100Profile, kLlama70bHsdp,
     llama3_70b, 2.0, true},
    {"70b-hsdp-pp4", "llama3-70b hsdp pp4", 4096, 1024, kH100Cluster, kH100Profile,
     kLlama70bHsdpPp4, llama3_70b, 2.0, true},
};

/// One large job, timed as run_config times a row, then simulated once in full; `error` is
/// what stopped it, if anything.
Row run_large(const LargeJob& job, int reps, std::string* error) {
  Row row;
  try {
    auto t0 = Clock::now();
    TrainingOptions t;
    t.optimizer = Optimizer::kAdam;
    t.master_weights = true;
    const Graph g = expand_training_step(job.forward(job.global_batch), t);
    row.t_expand = seconds_since(t0);
    row.ops = g.num_ops();
    const Cluster base = load_cluster_yaml(job.cluster_path);
    const int per_host = static_cast<int>(base.host(0).devices.size());
    const Cluster cluster = make_hosts(base, job.gpus / per_host);
    t0 = Clock::now();
    const FrameworkConfig f =
        job.torchtitan
            ? parse_torchtitan_config(job.args, job.gpus)
            : parse_megatron_arguments(
                  job.args + " --global-batch-size " + std::to_string(job.global_batch), job.gpus);
    const Plan plan = plan_of_framework_config(f, g);
    row.t_plan = seconds_since(t0);
    time_runs(g, plan, cluster, load_cost_profile(job.profile_path), reps, &row, true);
  } catch (const Error& e) {
    *error = e.what();
  }
  return row;
}

bool selected(const std::string& only, const LargeJob& job) {
  return only == "large" || only == job.key ||
         (only == "405b-ratio" && (job.key == "405b" || job.key == "405b-1k"));
}

/// The large jobs `only` selects ("large": all; "405b-ratio": 405b-1k and 405b), one table
/// row each, then the 16,384 / 1,024 GPU run-time ratio when both ran.
void print_large(const std::string& only, int reps) {
  std::printf(
      "# megatron_scale large jobs: plans from Megatron-LM arguments; run = best of %d "
      "(symmetric simulation when the plan allows it), full = one run with --exact; peak RSS = "
      "getrusage ru_maxrss of the whole process so far\n",
      reps);
  std::printf(
      "| job | GPUs | ops | simulated ops | graph s | plan s | Simulator() s | run s | run CPU s | "
      "sim ops/s | peak RSS MB | step s | dev0 peak GiB | simulation | full run s | full CPU s | "
      "full = run | targets |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  double t_1k = 0, t_16k = 0;
  for (const LargeJob& job : kLargeJobs) {
    if (!selected(only, job)) continue;
    std::string error;
    const Row r = run_large(job, reps, &error);
    const double rss = max_rss_mb();
    if (!error.empty()) {
      std::printf("| %s | %d | %s | | | | | | | | %.0f | | | | | | | |\n", job.label.c_str(),
                  job.gpus, error.c_str(), rss);
      continue;
    }
    if (job.key == "405b") t_16k = r.t_run;
    if (job.key == "405b-1k") t_1k = r.t_run;
    std::string targets = std::string(pass(r.t_run <= job.target_s)) +
                          " <=" + std::to_string(static_cast<int>(job.target_s)) + " s";
    if (job.key == "405b") targets += std::string(", ") + pass(rss <= 2000) + " <=2 GB";
    std::printf(
        "| %s | %d | %zu | %llu | %.3f | %.3f | %.3f | %.3f | %.3f | %.2fM | %.0f | %.3f | "
        "%.2f%s | %s | %.3f | %.3f | %s | %s |\n",
        job.label.c_str(), job.gpus, r.ops, static_cast<unsigned long long>(r.simulated),
        r.t_expand, r.t_plan, r.t_sim_ctor, r.t_run, r.cpu_run, double(r.simulated) / r.t_run / 1e6,
        rss, r.step, double(r.peak0) / double(1ull << 30), r.oom ? " (OOM)" : "",
        r.symmetric ? "symmetric" : ("full: " + r.full_reason).c_str(), r.t_full, r.cpu_full,
        r.same_as_full ? "yes" : "NO", targets.c_str());
    std::fflush(stdout);
  }
  if (t_1k > 0 && t_16k > 0) {
    std::printf("\nllama3-405b run time 16384 / 1024 GPUs: %.3f / %.3f = %.2f (%s <= 1.5)\n", t_16k,
                t_1k, t_16k / t_1k, pass(t_16k / t_1k <= 1.5));
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string cluster_path = "datasets/clusters/dgx_a100.cluster.yaml";
  std::string profile_path = "datasets/clusters/dgx_a100.profile.yaml";
  std::string only;
  int reps = 3;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "megatron_scale: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--cluster")
      cluster_path = next();
    else if (a == "--profile")
      profile_path = next();
    else if (a == "--reps")
      reps = std::max(1, std::atoi(next().c_str()));
    else if (a == "--only")
      only = next();
    else {
      std::fprintf(stderr,
                   "usage: megatron_scale [--cluster C] [--profile P] [--reps N] "
                   "[--only 175b|small|large|1t|405b|405b-1k|405b-100k|405b-ratio|dsv3-tp1|"
                   "dsv3-tp2|405b-cp2|405b-cp8|70b-hsdp|70b-hsdp-pp4]\n");
      return 2;
    }
  }
  const bool large = only == "large" || only == "405b-ratio" ||
                     std::any_of(std::begin(kLargeJobs), std::end(kLargeJobs),
                                 [&](const LargeJob& j) { return j.key == only; });
  if (!only.empty() && only != "175b" && only != "small" && !large) {
    std::fprintf(stderr,
                 "megatron_scale: --only takes 175b, small, large, 1t, 405b, 405b-1k, 405b-100k, "
                 "405b-ratio, dsv3-tp1, dsv3-tp2, 405b-cp2, 405b-cp8, 70b-hsdp or 70b-hsdp-pp4, "
                 "not '%s'\n",
                 only.c_str());
    return 2;
  }
  if (large) {
    print_large(only, reps);
    return 0;
  }
  // GPT-3 sizes (Brown et al. 2020, Table 2.1); 175B as Narayanan et al. 2021 ran it.
  const std::vector<Config> configs = {
      {"gpt3-175b mb1", 96, 12288, 96, 2048, 8, 16, 4, 1, 384, true},
      {"gpt3-175b mb6", 96, 12288, 96, 2048, 8, 16, 4, 6, 64, true},
      {"gpt3-350m", 24, 1024, 16, 2048, 1, 2, 4, 1, 32, false},
      {"gpt3-1.3b", 24, 2048, 16, 2048, 2, 2, 2, 1, 32, false},
      {"gpt3-6.7b", 32, 4096, 32, 2048, 8, 4, 2, 1, 64, false},
      {"gpt3-13b", 40, 5120, 40, 2048, 8, 8, 2, 1, 128, false},
  };
  try {
    const Cluster base = load_cluster_yaml(cluster_path);
    const CostProfile profile = load_cost_profile(profile_path);
    std::printf(
        "# megatron_scale: cluster %s repeated per row (+ IB 200 Gbit/s per GPU), "
        "profile %s; fp16, Adam + fp32 master weights, recompute full, ZeRO-1, 1F1B; "
        "run = best of %d\n",
        cluster_path.c_str(), profile_path.c_str(), reps);
    std::printf(
        "| config | GPUs tp/pp/dp | m x mb | ops | simulated ops | make_gpt s | "
        "expand s | plan s | Simulator() s | run s | sim ops/s | peak RSS MB | "
        "step s | dev0 peak GiB | targets |\n");
    std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (const Config& c : configs) {
      if (only == "175b" && !c.big) continue;
      if (only == "small" && c.big) continue;
      const Row r = run_config(c, base, profile, reps);
      const double rate = r.t_run > 0 ? double(r.simulated) / r.t_run : 0;
      const double rss_mb = r.rss_kb >= 0 ? double(r.rss_kb) / 1024 : -1;
      std::string targets = std::string(pass(rate >= 2e6)) + " >=2M ops/s";
      if (c.big) {
        targets = std::string(pass(r.t_run <= 2.0)) + " <=2 s, " +
                  pass(rss_mb >= 0 && rss_mb <= 2000) + " <=2 GB, " + targets;
      }
      std::printf(
          "| %s | %d %d/%d/%d | %d x %d | %zu | %llu | %.3f | %.3f | %.3f | %.3f | "
          "%.3f | %.2fM | %.0f | %.3f | %.2f%s | %s |\n",
          c.label.c_str(), c.tp * c.pp * c.dp, c.tp, c.pp, c.dp, c.micro_batches, c.micro_batch,
          r.ops, static_cast<unsigned long long>(r.simulated), r.t_gpt, r.t_expand, r.t_plan,
          r.t_sim_ctor, r.t_run, rate / 1e6, rss_mb, r.step, double(r.peak0) / double(1ull << 30),
          r.oom ? " (OOM)" : "", targets.c_str());
      std::fflush(stdout);
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "megatron_scale: %s\n", e.what());
    return 1;
  }
  return 0;
}
