#pragma once
// One policy file format for every learned method: a LibTorch archive `P` (the networks'
// tensors, as torch::nn::Module::save nests them) and a JSON sidecar `P.meta.json` (the
// sizes the networks are built from, the format version and how the policy was made).
//
// Writing: the pair is written together and atomically (save_policy_pair: the archive is
// staged, the sidecar written through a temp file and renamed, then the archive renamed),
// so a failure leaves the old pair or none, never half of one.
// Reading: every mismatch is named: the file, the field (a sidecar key such as "net.hidden",
// or a tensor such as "net.sage.0.weight") and what was expected and found. Errors are
// FileError (a file missing or unreadable) or FormatError (anything wrong in one).
//
// Used by gdp (agents/gdp/gdp_policy.cpp), placeto (agents/placeto/placeto.cpp, placeto_train.cpp),
// colocrl / hdp (agents/seq2seq/reinforce.cpp) and rainbow-pp (agents/rainbow/rainbow_pp_policy.cpp).

#include <torch/nn/module.h>
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <nlohmann/json.hpp>
#include <string>

#include "src/util/error.h"

namespace placer::policy_file {

using Json = nlohmann::ordered_json;

/// The sidecar of policy `policy_path`: policy_path + ".meta.json".
std::string meta_path(const std::string& policy_path);

/// Writes `archive` to `path` and `meta` (dumped with `indent`) to meta_path(path), both or
/// neither (models/archive_file.h save_archive_with_meta). `what` names the pair in errors
/// ("policy", "checkpoint"); the sidecar is "<what> metadata".
void save_policy_pair(torch::serialize::OutputArchive& archive, const std::string& path,
                      const Json& meta, const std::string& what = "policy", int indent = 2);

/// The JSON object in file `path`: FileError "<path>: cannot open the <what> (missing?)",
/// FormatError "<path>: not valid JSON: ..." or "<path>: expected a JSON object".
Json read_json_object(const std::string& path, const std::string& what);

/// The sidecar of `policy_path` after checking that the policy file itself exists
/// (FileError "<policy_path>: cannot open the <what> file (missing?)").
Json read_policy_meta(const std::string& policy_path, const std::string& what = "policy");

/// The value at `key` of `obj`, or FormatError "<path>: <prefix><key>: missing field".
const Json& field(const Json& obj, const std::string& key, const std::string& path,
                  const std::string& prefix = "");

/// field() as a T, or FormatError "<path>: <prefix><key>: wrong type (<value>)".
template <typename T>
T get_field(const Json& obj, const std::string& key, const std::string& path,
            const std::string& prefix = "") {
  const Json& v = field(obj, key, path, prefix);
  try {
    return v.get<T>();
  } catch (const nlohmann::json::exception&) {
    throw FormatError(format_context(path, prefix + key, "wrong type (" + v.dump() + ")"));
  }
}

/// FormatError "<path>: <key>: the policy has <found>, <needs> <expected>" unless the sidecar
/// holds `expected` at `key` ("<path>: <key>: missing" when absent). `needs` says who
/// expects it ("this search needs", "this build expects").
void expect_field(const Json& meta, const std::string& key, const Json& expected,
                  const std::string& path, const std::string& needs = "this search needs");

/// The archive in file `path` (FileError when missing; FormatError "<path>: not a readable
/// <what> archive: <first line of LibTorch's error>").
torch::serialize::InputArchive load_archive(const std::string& path,
                                            const std::string& what = "policy");

/// The tensor at the dotted module path `name` of `archive` ("a.b.weight": sub-archives "a",
/// "b", then tensor "weight", as Module::save nests them). False when anything is missing.
bool read_dotted(torch::serialize::InputArchive& archive, const std::string& name,
                 torch::Tensor& out);

/// Copies every parameter (and buffer) of `module` from `archive`, by name. FormatError
/// "<path>: <prefix><name>: parameter missing from the archive" or "... has shape [a] in the
/// archive but [b] in the network built from the sidecar's sizes".
void read_module(torch::serialize::InputArchive& archive, torch::nn::Module& module,
                 const std::string& path, const std::string& prefix = "net.");

}  // namespace placer::policy_file
