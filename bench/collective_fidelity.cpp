// Collective fidelity: predicted vs published nccl-tests bus bandwidth, per source and size,
// with the shipped profile of each source's hardware (the hierarchical NCCL model where the
// profile has one). Sources: datasets/clusters/measurements/ and
// datasets/measurements/nccl_published_h100.csv (citations in their headers and READMEs).
//
//   ./build/bench/collective_fidelity [--profiles DIR] [--all-sizes]
//
// --profiles reads the *.profile.yaml files from DIR instead of datasets/clusters (to compare
// with other versions of the profiles). MAPE is over every published size of the source;
// the table prints every 4th power of two from 1 MiB (--all-sizes: every row).
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "simulator/calibration/measurements.h"
#include "simulator/cost_model.h"
#include "simulator/cost_profile.h"
#include "simulator/nccl_collectives.h"
#include "src/io/cluster_yaml.h"
#include "src/util/error.h"

using namespace placer;

namespace {

struct Source {
  const char* label;
  const char* measurements;  // relative to the source tree
  const char* cluster;       // datasets/clusters/...
  const char* profile;       // file name in the profiles folder
  int ranks_per_host;        // how the published run spread its ranks
};

const Source kSources[] = {
    {"A100 HDR, CoreWeave 4x8 (fitted)",
     "datasets/clusters/measurements/a100_coreweave_32.all_reduce_perf.log",
     "measurements/coreweave_hgx_a100_4node.cluster.yaml", "dgx_a100.profile.yaml", 8},
    {"H100 A3 Mega 2x8, a3mega profile (fitted)",
     "datasets/clusters/measurements/h100_a3mega_2x8.all_reduce_perf.log",
     "h100_ib_4node.cluster.yaml", "h100_a3mega.profile.yaml", 8},
    {"H100 A3 Mega 2x8, h100_sxm_ib400 (NDR, not A3 Mega's NICs)",
     "datasets/clusters/measurements/h100_a3mega_2x8.all_reduce_perf.log",
     "h100_ib_4node.cluster.yaml", "h100_sxm_ib400.profile.yaml", 8},
    {"H100 NVSwitch 2-8 GPUs, NVIDIA figures", "datasets/measurements/nccl_published_h100.csv",
     "h100_sxm_1node.cluster.yaml", "h100_sxm_ib400.profile.yaml", 8},
    {"B200 A4 1x8", "datasets/clusters/measurements/b200_gke_a4_8.all_reduce_perf.log",
     "b200_4node_ib400.cluster.yaml", "b200_ib400.profile.yaml", 8},
    {"B200 A4 2x8 (fitted)", "datasets/clusters/measurements/b200_gke_a4_2x8.all_reduce_perf.log",
     "b200_4node_ib400.cluster.yaml", "b200_ib400.profile.yaml", 8},
};

// A single published figure (datasets/clusters/measurements/nccl_published_figures.csv):
// all-reduce busbw of a group of hosts x local GPUs at one size.
struct Figure {
  const char* label;
  const char* profile;
  int hosts, local;
  double bytes;
  double busbw;  // GB/s, as published
};

const Figure kFigures[] = {
    // github.com/NVIDIA/nccl-tests/issues/283: 248 x 8 H200, 8 NDR NICs each, 512 MiB,
    // "typically around 350" GB/s busbw (default algorithm).
    {"H200 248x8 NDR, 512 MiB (nccl-tests #283)", "h100_sxm_ib400.profile.yaml", 248, 8,
     536870912.0, 350},
    // github.com/NVIDIA/nccl/issues/1649 (GTC 2024): multi-node NVLS tree on NDR, 370-380 GB/s
    // busbw at large sizes; taken here as 32 nodes, 8 GiB, 375.
    {"H100 NDR multi-node NVLS tree (nccl #1649), 32x8, 8 GiB", "h100_sxm_ib400.profile.yaml", 32,
     8, 8589934592.0, 375},
};

// The model's all-reduce busbw for a figure's group (whole hosts, one GPU per NIC); 0 when the
// profile has no NCCL model.
double figure_busbw(const Figure& f, const CostProfile& p, std::string* algorithm) {
  if (!p.nccl.enabled()) return 0;
  const int ranks = f.hosts * f.local;
  double t = 0;
  *algorithm = to_string(nccl_fastest(p.nccl, CollectiveKind::kAllReduce,
                                      {ranks, f.hosts, f.local, f.local}, f.bytes, &t));
  return f.bytes * bus_factor(CollectiveKind::kAllReduce, ranks) / t / 1e9;
}

void print_figures(const std::string& profiles) {
  std::printf("\n| published figure | profile | busbw GB/s | predicted | error | algorithm |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (const Figure& f : kFigures) {
    const CostProfile p = load_cost_profile(profiles + "/" + f.profile);
    std::string algorithm = "-";
    const double bw = figure_busbw(f, p, &algorithm);
    if (bw == 0) {
      std::printf("| %s | %s | %.0f | - | - | no NCCL model |\n", f.label, f.profile, f.busbw);
      continue;
    }
    std::printf("| %s | %s | %.0f | %.1f | %+.1f%% | %s |\n", f.label, f.profile, f.busbw, bw,
                100 * (bw - f.busbw) / f.busbw, algorithm.c_str());
  }
}

// The devices of a published run of `ranks` ranks, `per_host` per host, on the cluster.
std::vector<int> group_of(const Cluster& c, int ranks, int per_host) {
  std::vector<int> devices;
  for (int d = 0; d < c.num_devices() && static_cast<int>(devices.size()) < ranks; ++d) {
    if (c.device(d).local_index < per_host) devices.push_back(d);
  }
  PLACER_CHECK(static_cast<int>(devices.size()) == ranks,
               "cluster " << c.name << " has too few devices for " << ranks << " ranks");
  return devices;
}

// Which algorithm the model runs (or "curve" / "formula" where it does not apply).
std::string algorithm_name(const CostProfile& p, const CollectiveGroup& g, CollectiveKind k,
                           double bytes) {
  const LinkLevel level = g.hosts > 1 ? LinkLevel::kInterHost : LinkLevel::kIntraHost;
  if (p.curve(k, level)) return "curve";
  if (!p.nccl.enabled()) return "formula";
  double t = 0;
  return to_string(nccl_fastest(p.nccl, k, {g.size, g.hosts, g.local_max, g.rails}, bytes, &t));
}

bool shown(double bytes, bool all) {
  if (all) return true;
  const double l = std::log2(bytes);
  return bytes >= (1 << 20) && std::fabs(l - std::round(l)) < 1e-9 &&
         static_cast<int>(std::round(l)) % 2 == 0;
}

double run_source(const Source& s, const std::string& root, const std::string& profiles, bool all) {
  const Cluster cluster = load_cluster_yaml(root + "/datasets/clusters/" + s.cluster);
  const CostProfile profile = load_cost_profile(profiles + "/" + s.profile);
  const CostModel cost(cluster, profile);
  const MeasurementSet m = load_measurements(root + "/" + s.measurements);
  double sum = 0;
  int n = 0;
  for (const Measurement& r : m.rows) {
    CollectiveKind kind;
    if (r.kind != MeasureKind::kCollective || !parse_collective_kind(r.op, &kind)) continue;
    const std::vector<int> devices = group_of(cluster, r.devices, s.ranks_per_host);
    const CollectiveGroup g = cost.make_group(devices);
    const double t =
        cost.group_collective_time(kind, g, static_cast<uint64_t>(r.bytes), SyncScheme::kAuto);
    const double moved = r.bytes * bus_factor(kind, r.devices);
    const double meas_bw = moved / r.time_s / 1e9, pred_bw = moved / t / 1e9;
    const double err = std::fabs(pred_bw - meas_bw) / meas_bw;
    sum += err;
    ++n;
    if (!shown(r.bytes, all)) continue;
    std::printf("| %s | %s | %d | %.0f | %.1f | %.1f | %+.1f%% | %s |\n", s.label, s.profile,
                r.devices, r.bytes, meas_bw, pred_bw, 100 * (pred_bw - meas_bw) / meas_bw,
                algorithm_name(profile, g, kind, r.bytes).c_str());
  }
  return n > 0 ? sum / n : 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string root = PLACER_SOURCE_DIR;
  std::string profiles = root + "/datasets/clusters";
  bool all = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--profiles" && i + 1 < argc) {
      profiles = argv[++i];
    } else if (a == "--all-sizes") {
      all = true;
    } else {
      std::fprintf(stderr,
                   "collective_fidelity: unknown argument '%s' (--profiles DIR, --all-sizes)\n",
                   a.c_str());
      return 2;
    }
  }
  try {
    std::printf(
        "| source | profile | ranks | size B | published busbw GB/s | predicted | error | "
        "algorithm |\n");
    std::printf("|---|---|---|---|---|---|---|---|\n");
    std::vector<double> mape;
    for (const Source& s : kSources) mape.push_back(run_source(s, root, profiles, all));
    std::printf("\n| source | profile | busbw MAPE (all sizes) |\n|---|---|---|\n");
    for (size_t i = 0; i < mape.size(); ++i) {
      std::printf("| %s | %s | %.1f%% |\n", kSources[i].label, kSources[i].profile, 100 * mape[i]);
    }
    print_figures(profiles);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "collective_fidelity: %s\n", e.what());
    return 1;
  }
  return 0;
}
