// Policy files: LibTorch archive + JSON sidecar, written together, read with named errors.
#include "agents/common/policy_file.h"

#include <fstream>
#include <sstream>

#include "models/archive_file.h"
#include "src/util/files.h"

namespace placer::policy_file {
namespace {

std::string shape_str(const torch::Tensor& t) {
  std::ostringstream os;
  os << "[";
  for (int64_t i = 0; i < t.dim(); ++i) os << (i ? ", " : "") << t.size(i);
  os << "]";
  return os.str();
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

bool readable(const std::string& path) { return bool(std::ifstream(path, std::ios::binary)); }

}  // namespace

std::string meta_path(const std::string& policy_path) { return policy_path + ".meta.json"; }

void save_policy_pair(torch::serialize::OutputArchive& archive, const std::string& path,
                      const Json& meta, const std::string& what, int indent) {
  save_archive_with_meta(archive, path, what, [&] {
    write_text_atomic(meta_path(path), meta.dump(indent) + "\n", what + " metadata");
  });
}

Json read_json_object(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FileError(format_context(path, "", "cannot open the " + what + " (missing?)"));
  std::stringstream ss;
  ss << in.rdbuf();
  Json j;
  try {
    j = Json::parse(ss.str());
  } catch (const nlohmann::json::exception& e) {
    throw FormatError(format_context(path, "", std::string("not valid JSON: ") + e.what()));
  }
  if (!j.is_object()) throw FormatError(format_context(path, "", "expected a JSON object"));
  return j;
}

Json read_policy_meta(const std::string& policy_path, const std::string& what) {
  if (!readable(policy_path)) {
    throw FileError(
        format_context(policy_path, "", "cannot open the " + what + " file (missing?)"));
  }
  return read_json_object(meta_path(policy_path), what + " sidecar");
}

const Json& field(const Json& obj, const std::string& key, const std::string& path,
                  const std::string& prefix) {
  auto it = obj.find(key);
  if (it == obj.end()) throw FormatError(format_context(path, prefix + key, "missing field"));
  return *it;
}

void expect_field(const Json& meta, const std::string& key, const Json& expected,
                  const std::string& path, const std::string& needs) {
  const auto found = meta.find(key);
  if (found == meta.end()) throw FormatError(format_context(path, key, "missing"));
  if (*found != expected) {
    throw FormatError(format_context(
        path, key, "the policy has " + found->dump() + ", " + needs + " " + expected.dump()));
  }
}

torch::serialize::InputArchive load_archive(const std::string& path, const std::string& what) {
  if (!readable(path)) {
    throw FileError(format_context(path, "", "cannot open the " + what + " file (missing?)"));
  }
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(path);
  } catch (const std::exception& e) {
    throw FormatError(
        format_context(path, "", "not a readable " + what + " archive: " + first_line(e.what())));
  }
  return archive;
}

bool read_dotted(torch::serialize::InputArchive& archive, const std::string& name,
                 torch::Tensor& out) {
  const size_t dot = name.find('.');
  if (dot == std::string::npos) return archive.try_read(name, out);
  torch::serialize::InputArchive sub;
  if (!archive.try_read(name.substr(0, dot), sub)) return false;
  return read_dotted(sub, name.substr(dot + 1), out);
}

void read_module(torch::serialize::InputArchive& archive, torch::nn::Module& module,
                 const std::string& path, const std::string& prefix) {
  torch::NoGradGuard no_grad;
  auto load_one = [&](const std::string& name, torch::Tensor& target, const char* what) {
    torch::Tensor stored;
    if (!read_dotted(archive, name, stored) || !stored.defined()) {
      throw FormatError(format_context(path, prefix + name,
                                       std::string(what) + " missing from the archive"));
    }
    if (!stored.sizes().equals(target.sizes())) {
      throw FormatError(format_context(path, prefix + name,
                                       std::string(what) + " has shape " + shape_str(stored) +
                                           " in the archive but " + shape_str(target) +
                                           " in the network built from the sidecar's sizes"));
    }
    target.copy_(stored);
  };
  for (auto& p : module.named_parameters(/*recurse=*/true)) {
    load_one(p.key(), p.value(), "parameter");
  }
  for (auto& b : module.named_buffers(/*recurse=*/true)) load_one(b.key(), b.value(), "buffer");
}

}  // namespace placer::policy_file
