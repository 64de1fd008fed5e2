#include "env/pipeline_arrays.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "src/util/error.h"

namespace placer {

namespace {

const char* const kCtx = "pipeline arrays";

[[noreturn]] void fail(const std::string& field, const std::string& msg) {
  throw ValidationError(format_context(kCtx, field, msg));
}

// Platform-independent draws (the std distributions are implementation-defined).
double uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * (1.0 / 9007199254740992.0);
}
double uniform(std::mt19937_64& rng, double lo, double hi) {
  return lo + (hi - lo) * uniform01(rng);
}
int uniform_int(std::mt19937_64& rng, int lo, int hi) {  // inclusive
  return lo + static_cast<int>(rng() % static_cast<uint64_t>(hi - lo + 1));
}
double log_uniform(std::mt19937_64& rng, double lo, double hi) {
  return std::exp(uniform(rng, std::log(lo), std::log(hi)));
}
double standard_normal(std::mt19937_64& rng) {  // Box-Muller
  const double u1 = std::max(uniform01(rng), 1e-300), u2 = uniform01(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

/// One raw array of `n` values in [0, 1] from a random distribution of `dists`.
std::vector<double> random_array(std::mt19937_64& rng, int n,
                                  const std::vector<std::string>& dists) {
  const std::string& d = dists[static_cast<size_t>(uniform_int(rng, 0, static_cast<int>(dists.size()) - 1))];
  std::vector<double> v(static_cast<size_t>(n));
  if (d == "uniform") {
    for (double& x : v) x = uniform01(rng);
  } else if (d == "normal") {
    const double mu = uniform(rng, 0.2, 0.8), sigma = uniform(rng, 0.05, 0.3);
    for (double& x : v) x = std::clamp(mu + sigma * standard_normal(rng), 0.0, 1.0);
  } else {  // binomial
    const int trials = uniform_int(rng, 1, 20);
    const double p = uniform(rng, 0.05, 0.95);
    for (double& x : v) {
      int k = 0;
      for (int t = 0; t < trials; ++t) k += uniform01(rng) < p ? 1 : 0;
      x = static_cast<double>(k) / trials;
    }
  }
  // Real models are sparse in A and W (few ops hold parameters or cross-stage tensors).
  if (uniform01(rng) < 0.5) {
    const double keep = uniform(rng, 0.05, 1.0);
    for (double& x : v) {
      if (uniform01(rng) >= keep) x = 0;
    }
  }
  return v;
}

}  // namespace

PositionArrays graph_position_arrays(const Graph& graph, const CostModel& cost,
                                     const std::vector<int>& position_of_op, int num_positions,
                                     int device) {
  const size_t n = graph.num_ops();
  if (position_of_op.size() != n) {
    fail("position_of_op", "has " + std::to_string(position_of_op.size()) + " entries for " +
                               std::to_string(n) + " ops");
  }
  if (num_positions < 1) fail("num_positions", "must be >= 1");
  for (int p : position_of_op) {
    if (p < 0 || p >= num_positions)
      fail("position_of_op", "position " + std::to_string(p) + " out of [0, " +
                                 std::to_string(num_positions) + ")");
  }
  const size_t F = static_cast<size_t>(num_positions);
  PositionArrays out;
  out.compute.assign(F, 0);
  out.params.assign(F, 0);
  std::vector<double> diff(F + 2, 0);
  bool any_grad = false;
  for (const Tensor& t : graph.tensors()) any_grad = any_grad || t.is_param_grad;
  for (OpId o = 0; o < n; ++o) {
    const Op& op = graph.op(o);
    const size_t p = static_cast<size_t>(position_of_op[o]);
    out.compute[p] += cost.op_time(op, graph.op_bytes(o), device);
    if (!any_grad) out.params[p] += static_cast<double>(op.param_bytes);
    for (TensorId t : op.outputs) {
      const Tensor& ten = graph.tensor(t);
      if (ten.is_param_grad) out.params[p] += static_cast<double>(ten.bytes);
      if (op.phase != Phase::kForward) continue;
      int cmax = -1;
      for (OpId c : graph.consumers(t)) {
        if (graph.op(c).phase == Phase::kForward) cmax = std::max(cmax, position_of_op[c]);
      }
      if (cmax > static_cast<int>(p)) {  // crosses the cuts p + 1 .. cmax
        diff[p + 1] += static_cast<double>(ten.bytes);
        diff[static_cast<size_t>(cmax) + 1] -= static_cast<double>(ten.bytes);
      }
    }
  }
  out.activation.assign(F, 0);
  double run = 0;
  for (size_t i = 0; i < F; ++i) {
    run += diff[i];
    out.activation[i] = std::max(0.0, run);
  }
  return out;
}

CoarseArrays coarsen_arrays(const PositionArrays& raw, const std::vector<int>& snap) {
  const size_t F = raw.compute.size();
  if (F == 0) fail("arrays", "empty");
  if (raw.activation.size() != F || raw.params.size() != F) {
    fail("arrays", "C, A and W differ in length (" + std::to_string(F) + ", " +
                       std::to_string(raw.activation.size()) + ", " +
                       std::to_string(raw.params.size()) + ")");
  }
  for (const auto* arr : {&raw.compute, &raw.activation, &raw.params}) {
    for (double x : *arr) {
      if (!std::isfinite(x) || x < 0) fail("arrays", "values must be finite and >= 0");
    }
  }
  for (size_t i = 0; i < snap.size(); ++i) {
    if (snap[i] <= 0 || snap[i] >= static_cast<int>(F) || (i > 0 && snap[i] <= snap[i - 1]))
      fail("snap", "boundaries must be increasing and inside (0, " + std::to_string(F) + ")");
  }
  std::vector<double> pc(F + 1, 0), pw(F + 1, 0);
  for (size_t i = 0; i < F; ++i) {
    pc[i + 1] = pc[i] + raw.compute[i];
    pw[i + 1] = pw[i] + raw.params[i];
  }
  CoarseArrays c;
  c.positions = static_cast<int>(F);
  c.boundary.assign(kCoarsePoints, 0);
  c.allowed.assign(kCoarsePoints, 0);
  const int64_t f = static_cast<int64_t>(F);
  for (int j = 0; j < kCoarsePoints; ++j) {
    int b = static_cast<int>(((j + 1) * f * 2 + kCoarsePoints) / (2 * kCoarsePoints));
    if (j + 1 == kCoarsePoints) b = static_cast<int>(F);
    if (j + 1 < kCoarsePoints && !snap.empty()) {
      auto it = std::lower_bound(snap.begin(), snap.end(), b);
      if (it == snap.end()) {
        b = snap.back();
      } else if (it != snap.begin() && b - *(it - 1) <= *it - b) {
        b = *(it - 1);
      } else {
        b = *it;
      }
    }
    c.boundary[static_cast<size_t>(j)] = b;
    c.allowed[static_cast<size_t>(j)] =
        j + 1 < kCoarsePoints && b > 0 && b < static_cast<int>(F) &&
        (j == 0 || b != c.boundary[static_cast<size_t>(j) - 1]);
  }
  std::vector<double> C(kCoarsePoints), A(kCoarsePoints), W(kCoarsePoints);
  double mx = 0;
  for (int j = 0; j < kCoarsePoints; ++j) {
    const size_t b = static_cast<size_t>(c.boundary[static_cast<size_t>(j)]);
    C[static_cast<size_t>(j)] = pc[b];
    W[static_cast<size_t>(j)] = pw[b];
    A[static_cast<size_t>(j)] = b < F ? raw.activation[b] : 0.0;
    mx = std::max({mx, C[static_cast<size_t>(j)], W[static_cast<size_t>(j)], A[static_cast<size_t>(j)]});
  }
  c.scale = mx > 0 ? mx : 1.0;
  c.C.resize(kCoarsePoints);
  c.A.resize(kCoarsePoints);
  c.W.resize(kCoarsePoints);
  for (size_t j = 0; j < static_cast<size_t>(kCoarsePoints); ++j) {
    c.C[j] = static_cast<float>(C[j] / c.scale);
    c.A[j] = static_cast<float>(A[j] / c.scale);
    c.W[j] = static_cast<float>(W[j] / c.scale);
  }
  return c;
}

ArrayTopology cost_topology(const Cluster& cluster, const CostModel& cost,
                            const std::vector<int>& devices, double* peak_bandwidth) {
  if (devices.empty()) fail("devices", "empty");
  const size_t n = devices.size();
  for (int d : devices) {
    if (d < 0 || d >= cluster.num_devices())
      fail("devices", "device " + std::to_string(d) + " is outside the cluster");
  }
  ArrayTopology t;
  t.bandwidth.assign(n * n, 1.0);
  double peak = 0;
  for (size_t a = 0; a < n; ++a) {
    t.host.push_back(cluster.device(devices[a]).host);
    for (size_t b = 0; b < n; ++b) {
      if (a != b) peak = std::max(peak, cost.bandwidth(devices[a], devices[b]));
    }
  }
  if (!(peak > 0)) peak = 1;
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = 0; b < n; ++b) {
      if (a != b) t.bandwidth[a * n + b] = cost.bandwidth(devices[a], devices[b]) / peak;
    }
  }
  if (peak_bandwidth) *peak_bandwidth = peak;
  return t;
}

std::vector<int> stage_device_counts(const std::vector<int>& host, int stages) {
  const int N = static_cast<int>(host.size());
  if (stages < 1) fail("stages", "must be >= 1");
  if (stages > N)
    fail("stages", std::to_string(stages) + " stages need at least as many devices, got " +
                       std::to_string(N));
  std::vector<int> runs;
  for (int i = 0; i < N; ++i) {
    if (i == 0 || host[static_cast<size_t>(i)] != host[static_cast<size_t>(i) - 1]) runs.push_back(0);
    ++runs.back();
  }
  const int H = static_cast<int>(runs.size());
  bool uniform_hosts = true;
  for (int r : runs) uniform_hosts = uniform_hosts && r == runs[0];
  std::vector<int> sizes(static_cast<size_t>(stages));
  for (int s = 0; s < stages; ++s) {
    sizes[static_cast<size_t>(s)] =
        uniform_hosts && H >= stages ? runs[0] * (H / stages + (s < H % stages ? 1 : 0))
                                     : N / stages + (s < N % stages ? 1 : 0);
  }
  return sizes;
}

namespace {

void check_problem(const ArrayProblem& p) {
  if (p.stages() < 2) fail("stages", "must be >= 2");
  if (p.arrays.C.size() != static_cast<size_t>(kCoarsePoints) ||
      p.arrays.A.size() != p.arrays.C.size() || p.arrays.W.size() != p.arrays.C.size() ||
      p.arrays.allowed.size() != p.arrays.C.size())
    fail("arrays", "must be coarse (" + std::to_string(kCoarsePoints) + " points)");
  int total = 0;
  for (int d : p.stage_devices) {
    if (d < 1) fail("stage_devices", "every stage needs >= 1 device");
    total += d;
  }
  if (total > p.topology.num_devices())
    fail("stage_devices", std::to_string(total) + " devices, the topology has " +
                              std::to_string(p.topology.num_devices()));
  if (p.topology.bandwidth.size() !=
      static_cast<size_t>(p.topology.num_devices()) * p.topology.num_devices())
    fail("topology", "bandwidth matrix size does not match the devices");
  if (p.micro_batches < 1) fail("micro_batches", "must be >= 1");
}

}  // namespace

double pipeline_length(const ArrayProblem& p, const std::vector<int>& cuts) {
  check_problem(p);
  const int S = p.stages();
  if (static_cast<int>(cuts.size()) != S - 1)
    fail("cuts", "need " + std::to_string(S - 1) + " cuts, got " + std::to_string(cuts.size()));
  for (size_t i = 0; i < cuts.size(); ++i) {
    if (cuts[i] < 0 || cuts[i] >= kCutActions || (i > 0 && cuts[i] <= cuts[i - 1]))
      fail("cuts", "must be strictly increasing coarse points in [0, " +
                       std::to_string(kCutActions) + ")");
  }
  const auto& A = p.arrays;
  const double m = p.micro_batches;
  std::vector<double> t(static_cast<size_t>(S), 0), x(static_cast<size_t>(S), 0);  // x[S-1] = 0
  double max_ar = 0;
  int off = 0, prev = -1;
  for (int s = 0; s < S; ++s) {
    const int end = s + 1 < S ? cuts[static_cast<size_t>(s)] : kCoarsePoints - 1;
    const double c = A.C[static_cast<size_t>(end)] - (prev >= 0 ? A.C[static_cast<size_t>(prev)] : 0.0f);
    const double w = A.W[static_cast<size_t>(end)] - (prev >= 0 ? A.W[static_cast<size_t>(prev)] : 0.0f);
    const int d = p.stage_devices[static_cast<size_t>(s)];
    t[static_cast<size_t>(s)] = std::max(0.0, c) / (d * m);
    if (d >= 2 && w > 0) {
      double ring = std::numeric_limits<double>::infinity();
      for (int i = 0; i < d; ++i) {
        const int a = off + i, b = off + (i + 1) % d;
        ring = std::min(ring, p.topology.bw(a, b));
      }
      max_ar = std::max(max_ar, 2.0 * (d - 1) / d * w / ring);
    }
    if (s + 1 < S) {
      const int nxt = off + d;
      const double bw = p.topology.bw(nxt - 1, nxt);
      x[static_cast<size_t>(s)] = 2.0 * A.A[static_cast<size_t>(end)] /
                                  (p.stage_devices[static_cast<size_t>(s) + 1] * m * bw);
    }
    off += d;
    prev = end;
  }
  double sum = 0, bottleneck = 0;
  for (int s = 0; s < S; ++s) {
    const size_t k = static_cast<size_t>(s);
    sum += t[k] + x[k];
    if (p.overlap) {
      bottleneck = std::max({bottleneck, t[k], x[k]});
    } else {  // the stage's devices also carry the cut in and the cut out
      bottleneck = std::max(bottleneck, t[k] + x[k] + (s > 0 ? x[k - 1] : 0.0));
    }
  }
  return sum + (m - 1) * bottleneck + max_ar;
}

std::vector<int> balanced_cuts(const ArrayProblem& p) {
  check_problem(p);
  const int S = p.stages();
  std::vector<int> pts;
  for (int j = 0; j < kCutActions; ++j) {
    if (p.arrays.allowed[static_cast<size_t>(j)]) pts.push_back(j);
  }
  const int P = static_cast<int>(pts.size());
  if (P < S - 1)
    fail("arrays", std::to_string(P) + " allowed cut points for " + std::to_string(S - 1) + " cuts");
  int total_dev = 0;
  for (int d : p.stage_devices) total_dev += d;
  const double total = p.arrays.C[kCoarsePoints - 1];
  std::vector<int> idx(static_cast<size_t>(S) - 1, 0);
  int prefix = 0;
  for (int k = 0; k + 1 < S; ++k) {
    prefix += p.stage_devices[static_cast<size_t>(k)];
    const double target = total * prefix / total_dev;
    int best = 0;
    double best_d = std::numeric_limits<double>::infinity();
    for (int i = 0; i < P; ++i) {
      const double d = std::fabs(p.arrays.C[static_cast<size_t>(pts[static_cast<size_t>(i)])] - target);
      if (d < best_d) best_d = d, best = i;
    }
    idx[static_cast<size_t>(k)] = k > 0 ? std::max(best, idx[static_cast<size_t>(k) - 1] + 1) : best;
  }
  for (int k = S - 2; k >= 0; --k) {
    int cap = P - 1 - (S - 2 - k);
    if (k + 2 < S) cap = std::min(cap, idx[static_cast<size_t>(k) + 1] - 1);
    idx[static_cast<size_t>(k)] = std::min(idx[static_cast<size_t>(k)], cap);
  }
  std::vector<int> cuts;
  for (int i : idx) cuts.push_back(pts[static_cast<size_t>(i)]);
  return cuts;
}

void validate_array_gen_options(const ArrayGenOptions& o) {
  if (o.stages < 2) fail("stages", "must be >= 2, got " + std::to_string(o.stages));
  if (o.max_devices < o.stages)
    fail("max_devices", "must be >= stages (" + std::to_string(o.stages) + "), got " +
                            std::to_string(o.max_devices));
  if (o.max_devices > 256) fail("max_devices", "must be <= 256");
  if (o.min_positions < o.stages || o.max_positions < o.min_positions)
    fail("positions", "need stages <= min_positions <= max_positions");
  if (o.distributions.empty()) fail("distributions", "empty");
  for (const std::string& d : o.distributions) {
    if (d != "uniform" && d != "normal" && d != "binomial")
      fail("distributions", "unknown distribution '" + d + "' (known: uniform, normal, binomial)");
  }
}

PositionArrays generate_position_arrays(std::mt19937_64& rng, const ArrayGenOptions& o) {
  const int F = uniform_int(rng, o.min_positions, o.max_positions);
  PositionArrays r;
  r.compute = random_array(rng, F, o.distributions);
  r.activation = random_array(rng, F, o.distributions);
  r.params = random_array(rng, F, o.distributions);
  double total = 0;
  for (double x : r.compute) total += x;
  if (!(total > 0)) std::fill(r.compute.begin(), r.compute.end(), 1.0);
  // Communication relative to compute: the mean A (one cut's transfer) from 1/1000 to 1 x
  // the total compute, the total W from 1/100 to 10 x (communication- to compute-bound).
  total = 0;
  for (double x : r.compute) total += x;
  const double sa = log_uniform(rng, 1e-3, 1.0), sw = log_uniform(rng, 1e-2, 10.0);
  double ta = 0, tw = 0;
  for (double x : r.activation) ta += x;
  for (double x : r.params) tw += x;
  for (double& x : r.activation) x = ta > 0 ? x * sa * total * F / ta : 0.0;
  for (double& x : r.params) x = tw > 0 ? x * sw * total / tw : 0.0;
  r.activation[0] = 0;
  return r;
}

ArrayTopology generate_topology(std::mt19937_64& rng, const ArrayGenOptions& o) {
  std::vector<std::pair<int, int>> shapes;  // (hosts, GPUs per host)
  for (int g : {1, 2, 4, 8}) {
    for (int h = 1; h * g <= o.max_devices; h *= 2) {
      if (h * g >= o.stages) shapes.emplace_back(h, g);
    }
  }
  if (shapes.empty()) shapes.emplace_back(1, o.max_devices);
  const auto [H, G] = shapes[static_cast<size_t>(uniform_int(rng, 0, static_cast<int>(shapes.size()) - 1))];
  const double inter = log_uniform(rng, 1.0 / 64, 0.5);
  const double peak = G > 1 ? 1.0 : inter;
  ArrayTopology t;
  const int n = H * G;
  for (int h = 0; h < H; ++h) {
    for (int g = 0; g < G; ++g) t.host.push_back(h);
  }
  t.bandwidth.assign(static_cast<size_t>(n) * n, 1.0);
  for (int a = 0; a < n; ++a) {
    for (int b = 0; b < n; ++b) {
      if (a != b)
        t.bandwidth[static_cast<size_t>(a) * n + b] =
            (t.host[static_cast<size_t>(a)] == t.host[static_cast<size_t>(b)] ? 1.0 : inter) / peak;
    }
  }
  return t;
}

ArrayProblem generate_array_problem(uint64_t seed, const ArrayGenOptions& o) {
  validate_array_gen_options(o);
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL);
  ArrayProblem p;
  p.arrays = coarsen_arrays(generate_position_arrays(rng, o));
  p.topology = generate_topology(rng, o);
  p.stage_devices = stage_device_counts(p.topology.host, o.stages);
  p.micro_batches = uniform_int(rng, o.stages, 4 * o.stages);
  return p;
}

// ------------------------------------------------------------------------ the MDP ----

ArrayPipelineEnv::ArrayPipelineEnv(ArrayProblem problem, int max_devices)
    : problem_(std::move(problem)), max_devices_(max_devices) {
  check_problem(problem_);
  if (max_devices_ < problem_.stages()) fail("max_devices", "must be >= stages");
  allowed_after_.assign(kCoarsePoints + 1, 0);
  for (int j = kCoarsePoints - 1; j >= 0; --j) {
    allowed_after_[static_cast<size_t>(j)] =
        allowed_after_[static_cast<size_t>(j) + 1] + (j < kCutActions && problem_.arrays.allowed[static_cast<size_t>(j)] ? 1 : 0);
  }
  reference_ = pipeline_length(problem_, balanced_cuts(problem_));
  if (!(reference_ > 0)) reference_ = 1e-12;
  reset();
}

void ArrayPipelineEnv::reset() {
  cuts_.clear();
  update();
}

void ArrayPipelineEnv::update() {
  const int S = problem_.stages(), N = max_devices_;
  const size_t K = kCoarsePoints;
  obs_.assign(static_cast<size_t>(state_dim(S, N)), 0.0f);
  const auto& a = problem_.arrays;
  std::copy(a.C.begin(), a.C.end(), obs_.begin());
  std::copy(a.A.begin(), a.A.end(), obs_.begin() + static_cast<long>(K));
  std::copy(a.W.begin(), a.W.end(), obs_.begin() + static_cast<long>(2 * K));
  for (int c : cuts_) obs_[3 * K + static_cast<size_t>(c)] = 1.0f;
  const int n = std::min(N, problem_.topology.num_devices());
  float* bw = obs_.data() + 4 * K;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j)
      bw[static_cast<size_t>(i) * N + j] = static_cast<float>(problem_.topology.bw(i, j));
  }
  float* tail = bw + static_cast<size_t>(N) * N;
  for (int s = 0; s < S; ++s)
    tail[s] = static_cast<float>(problem_.stage_devices[static_cast<size_t>(s)]) / N;
  tail[S] = static_cast<float>(problem_.micro_batches) / (4.0f * S);
  tail[S + 1] = static_cast<float>(cuts_.size()) / (S - 1);

  mask_.assign(kCutActions, 0);
  if (done()) return;
  const int remaining = S - 1 - static_cast<int>(cuts_.size());
  const int first = cuts_.empty() ? 0 : cuts_.back() + 1;
  for (int j = first; j < kCutActions; ++j) {
    mask_[static_cast<size_t>(j)] = a.allowed[static_cast<size_t>(j)] &&
                                    allowed_after_[static_cast<size_t>(j) + 1] >= remaining - 1;
  }
}

double ArrayPipelineEnv::step(int action) {
  if (done()) throw Error(format_context(kCtx, "step", "the episode is done; call reset()"));
  if (action < 0 || action >= kCutActions || !mask_[static_cast<size_t>(action)]) {
    throw ValidationError(format_context(kCtx, "action",
                                         "coarse point " + std::to_string(action) +
                                             " is not allowed now (" +
                                             std::to_string(cuts_.size()) + " cuts taken)"));
  }
  cuts_.push_back(action);
  update();
  return done() ? reward_of(cuts_) : 0.0;
}

}  // namespace placer
