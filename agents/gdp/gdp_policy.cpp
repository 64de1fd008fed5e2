// GdpPolicy: construction, checkpoint files (archive + JSON sidecar), cloning.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <mutex>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "agents/common/policy_file.h"
#include "agents/gdp/gdp_net.h"
#include "src/util/error.h"
#include "src/util/files.h"

namespace placer {
namespace {

using policy_file::field;
using policy_file::get_field;
using Json = policy_file::Json;

void check_build_field(const std::string& path, const std::string& name, int64_t file_value,
                       int64_t expected) {
  if (file_value != expected) {
    throw FormatError(format_context(path, name,
                                     "the checkpoint has " + std::to_string(file_value) +
                                         " but this build expects " + std::to_string(expected) +
                                         " (retrain the policy with this build)"));
  }
}

}  // namespace

bool gdp_available() { return true; }

bool GdpNetConfig::operator==(const GdpNetConfig& o) const {
  return hidden == o.hidden && sage_layers == o.sage_layers && op_embedding == o.op_embedding &&
         txl_layers == o.txl_layers && heads == o.heads && ffn == o.ffn && segment == o.segment &&
         mem_len == o.mem_len && max_devices == o.max_devices && superposition == o.superposition;
}

std::string validate_net_config(const GdpNetConfig& c) {
  const std::pair<const char*, int> positive[] = {{"hidden", c.hidden},
                                                  {"sage_layers", c.sage_layers},
                                                  {"txl_layers", c.txl_layers},
                                                  {"heads", c.heads},
                                                  {"ffn", c.ffn},
                                                  {"segment", c.segment},
                                                  {"mem_len", c.mem_len},
                                                  {"max_devices", c.max_devices}};
  for (const auto& [name, value] : positive) {
    if (value <= 0) return std::string(name) + " must be > 0, got " + std::to_string(value);
  }
  if (c.op_embedding < 0) {
    return "op_embedding must be >= 0 (0 = none), got " + std::to_string(c.op_embedding);
  }
  if (c.hidden % c.heads != 0) {
    return "hidden (" + std::to_string(c.hidden) + ") is not divisible by heads (" +
           std::to_string(c.heads) + ")";
  }
  if (c.max_devices > 64) {
    return "max_devices must be in [1, 64], got " + std::to_string(c.max_devices);
  }
  return "";
}

// ------------------------------------------------------------------------ files ----

void write_net(torch::serialize::OutputArchive& archive, const GdpNet& net) {
  torch::serialize::OutputArchive sub(archive.compilation_unit());
  bool on_cpu = true;
  for (const torch::Tensor& p : net->parameters()) on_cpu = on_cpu && p.device().is_cpu();
  if (on_cpu) {
    net->save(sub);
  } else {
    // A network trained on a GPU is written from a CPU copy, so the file loads anywhere
    // (a CPU-only build included).
    GdpNet copy(net->config, feat::kDim, int64_t(op_type_vocabulary().size()));
    torch::NoGradGuard no_grad;
    auto dst = copy->named_parameters(/*recurse=*/true);
    for (const auto& p : net->named_parameters(/*recurse=*/true)) dst[p.key()].copy_(p.value());
    auto dst_buffers = copy->named_buffers(/*recurse=*/true);
    for (const auto& b : net->named_buffers(/*recurse=*/true)) {
      dst_buffers[b.key()].copy_(b.value());
    }
    copy->save(sub);
  }
  archive.write("net", sub);
}

void read_net(torch::serialize::InputArchive& archive, GdpNet& net,
              const std::string& path_for_errors) {
  torch::serialize::InputArchive sub;
  if (!archive.try_read("net", sub)) {
    throw FormatError(format_context(path_for_errors, "net", "the archive has no network"));
  }
  policy_file::read_module(sub, *net, path_for_errors, "net.");
}

Json policy_meta_json(const PolicyMeta& meta) {
  const GdpNetConfig& n = meta.net;
  Json net = {{"hidden", n.hidden},
              {"sage_layers", n.sage_layers},
              {"op_embedding", n.op_embedding},
              {"txl_layers", n.txl_layers},
              {"heads", n.heads},
              {"ffn", n.ffn},
              {"segment", n.segment},
              {"mem_len", n.mem_len},
              {"max_devices", n.max_devices},
              {"superposition", n.superposition}};
  Json j = {{"format_version", meta.format_version},
            {"feature_version", meta.feature_version},
            {"feature_dim", meta.feature_dim},
            {"op_vocab", meta.op_vocab},
            {"net", net},
            {"updates", meta.updates},
            {"seed", meta.seed},
            {"corpus", meta.corpus},
            {"corpus_hash", meta.corpus_hash},
            {"clusters", meta.clusters},
            {"train_seconds", meta.train_seconds},
            {"evaluations", meta.evaluations},
            {"created", meta.created},
            {"command", meta.command}};
  return j;
}

namespace {

/// The sidecar `j` (read from `path`) as a PolicyMeta, every field checked.
PolicyMeta parse_meta(const Json& j, const std::string& path) {
  PolicyMeta m;
  m.format_version = get_field<int>(j, "format_version", path);
  if (m.format_version != kGdpCheckpointFormat) {
    throw FormatError(format_context(path, "format_version",
                                     "unsupported checkpoint format " +
                                         std::to_string(m.format_version) + " (this build reads " +
                                         std::to_string(kGdpCheckpointFormat) +
                                         "; retrain the policy with this build)"));
  }
  m.feature_version = get_field<int>(j, "feature_version", path);
  m.feature_dim = get_field<int>(j, "feature_dim", path);
  m.op_vocab = get_field<int>(j, "op_vocab", path);
  // A copy, not a reference: g++ >= 13 warns (-Wdangling-reference, an error under -Werror)
  // on a reference returned from a call with temporary std::string arguments.
  const Json net = field(j, "net", path);
  if (!net.is_object()) throw FormatError(format_context(path, "net", "expected an object"));
  m.net.hidden = get_field<int>(net, "hidden", path, "net.");
  m.net.sage_layers = get_field<int>(net, "sage_layers", path, "net.");
  m.net.op_embedding = get_field<int>(net, "op_embedding", path, "net.");
  m.net.txl_layers = get_field<int>(net, "txl_layers", path, "net.");
  m.net.heads = get_field<int>(net, "heads", path, "net.");
  m.net.ffn = get_field<int>(net, "ffn", path, "net.");
  m.net.segment = get_field<int>(net, "segment", path, "net.");
  m.net.mem_len = get_field<int>(net, "mem_len", path, "net.");
  m.net.max_devices = get_field<int>(net, "max_devices", path, "net.");
  m.net.superposition = get_field<bool>(net, "superposition", path, "net.");
  m.updates = get_field<int64_t>(j, "updates", path);
  m.seed = get_field<uint64_t>(j, "seed", path);
  m.corpus = get_field<std::string>(j, "corpus", path);
  m.corpus_hash = get_field<std::string>(j, "corpus_hash", path);
  m.clusters = get_field<std::vector<std::string>>(j, "clusters", path);
  m.train_seconds = get_field<double>(j, "train_seconds", path);
  m.evaluations = get_field<int64_t>(j, "evaluations", path);
  m.created = get_field<std::string>(j, "created", path);
  m.command = get_field<std::string>(j, "command", path);

  check_build_field(path, "feature_version", m.feature_version, kFeatureVersion);
  check_build_field(path, "feature_dim", m.feature_dim, feat::kDim);
  check_build_field(path, "op_vocab", m.op_vocab, int64_t(op_type_vocabulary().size()));
  const std::string why = validate_net_config(m.net);
  if (!why.empty()) throw FormatError(format_context(path, "net", why));
  return m;
}

}  // namespace

PolicyMeta read_meta_json(const std::string& path) {
  return parse_meta(policy_file::read_json_object(path, "policy sidecar"), path);
}

// -------------------------------------------------------------------- GdpPolicy ----

GdpPolicy::GdpPolicy() : impl_(std::make_unique<Impl>()) {}

GdpPolicy::GdpPolicy(const GdpNetConfig& net, uint64_t seed) : GdpPolicy() {
  const std::string why = validate_net_config(net);
  if (!why.empty()) throw ValidationError("GDP network: " + why);
  {
    // The initial weights come from torch's process-wide generator: seed and draw them
    // under one lock, so concurrent constructions (ranks run as threads, thread pools) do
    // not interleave their draws.
    static std::mutex init_mutex;
    std::lock_guard<std::mutex> lock(init_mutex);
    torch::manual_seed(seed);
    impl_->net = GdpNet(net, feat::kDim, int64_t(op_type_vocabulary().size()));
  }
  impl_->meta.feature_version = kFeatureVersion;
  impl_->meta.feature_dim = feat::kDim;
  impl_->meta.op_vocab = int(op_type_vocabulary().size());
  impl_->meta.net = net;
  impl_->meta.seed = seed;
}

GdpPolicy::~GdpPolicy() = default;
GdpPolicy::GdpPolicy(GdpPolicy&&) noexcept = default;
GdpPolicy& GdpPolicy::operator=(GdpPolicy&&) noexcept = default;

GdpPolicy GdpPolicy::load(const std::string& path) {
  PolicyMeta meta = parse_meta(policy_file::read_policy_meta(path), policy_file::meta_path(path));
  GdpPolicy policy;
  policy.impl_->net = GdpNet(meta.net, feat::kDim, int64_t(op_type_vocabulary().size()));
  policy.impl_->meta = std::move(meta);
  torch::serialize::InputArchive archive = policy_file::load_archive(path);
  try {
    read_net(archive, policy.impl_->net, path);
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));
    throw FormatError(format_context(path, "net", "cannot read the network: " + what));
  }
  return policy;
}

void GdpPolicy::save(const std::string& path, PolicyMeta meta) const {
  meta.format_version = kGdpCheckpointFormat;
  meta.feature_version = kFeatureVersion;
  meta.feature_dim = feat::kDim;
  meta.op_vocab = int(op_type_vocabulary().size());
  meta.net = config();
  if (meta.created.empty()) meta.created = utc_now();

  torch::serialize::OutputArchive archive;
  write_net(archive, impl_->net);
  policy_file::save_policy_pair(archive, path, policy_meta_json(meta));
}

const GdpNetConfig& GdpPolicy::config() const { return impl_->net->config; }

const PolicyMeta& GdpPolicy::meta() const { return impl_->meta; }

int64_t GdpPolicy::num_parameters() const {
  int64_t n = 0;
  for (const auto& p : impl_->net->parameters()) n += p.numel();
  return n;
}

GdpPolicy GdpPolicy::clone() const {
  torch::serialize::OutputArchive out;
  write_net(out, impl_->net);
  std::stringstream buffer;
  out.save_to(buffer);
  torch::serialize::InputArchive in;
  in.load_from(buffer);
  GdpPolicy copy;
  copy.impl_->net = GdpNet(config(), feat::kDim, int64_t(op_type_vocabulary().size()));
  read_net(in, copy.impl_->net, "<clone>");
  copy.impl_->net->train(impl_->net->is_training());
  copy.impl_->meta = impl_->meta;
  return copy;
}

}  // namespace placer
