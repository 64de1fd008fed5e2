// Opset upgrade of old ONNX models (below kMinOpset) with libonnx's version converter, and
// the refusal of training-domain models (docs/import.md, "Opset").
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

#include "datasets/onnx_model.h"
#include "src/util/error.h"

namespace placer::onnx_import {

namespace {

namespace vc = onnx::version_conversion;

// Broadcasting ops 6 -> 7: the old `broadcast=1 axis=k` aligns B's dims with A's from dim k;
// numpy aligns trailing dims, so B gets rank(A) - rank(B) - k trailing unit dims (an
// Unsqueeze). ONNX 1.12's BroadcastForwardCompatibility adds rank(A) - rank(B) whatever k
// is, which breaks the commonest old pattern, the conv bias Add(x [N,C,H,W], b [C], axis=1).
class BroadcastAxisToNumpy final : public vc::Adapter {
 public:
  explicit BroadcastAxisToNumpy(const std::string& op)
      : Adapter(op, onnx::OpSetID(6), onnx::OpSetID(7)) {}

  onnx::Node* adapt(std::shared_ptr<onnx::Graph> graph, onnx::Node* node) const override {
    if (node->hasAttribute(onnx::kbroadcast) && node->i(onnx::kbroadcast) != 0 &&
        node->hasAttribute(onnx::kaxis)) {
      const auto inputs = node->inputs();
      vc::assertInputsAvailable(inputs, name().c_str(), 2);
      const auto& b_sizes = inputs[1]->sizes();
      const int64_t a_rank = static_cast<int64_t>(inputs[0]->sizes().size());
      const int64_t b_rank = static_cast<int64_t>(b_sizes.size());
      const int64_t axis = node->i(onnx::kaxis);
      const int64_t trailing = a_rank - b_rank - axis;
      if (axis < 0 || trailing < 0) {
        throw std::runtime_error(name() + " '" + node->name() + "': axis " +
                                 std::to_string(axis) + " does not fit inputs of rank " +
                                 std::to_string(a_rank) + " and " + std::to_string(b_rank));
      }
      if (trailing > 0) {
        std::vector<int64_t> axes;
        std::vector<onnx::Dimension> sizes = b_sizes;
        for (int64_t k = 0; k < trailing; ++k) {
          axes.push_back(b_rank + k);
          sizes.emplace_back(1);
        }
        onnx::Node* unsqueeze = graph->create(onnx::kUnsqueeze);
        unsqueeze->addInput(inputs[1]);
        unsqueeze->is_(onnx::kaxes, std::move(axes));
        unsqueeze->insertBefore(node);
        unsqueeze->output()->setSizes(sizes);
        unsqueeze->output()->setElemType(inputs[1]->elemType());
        node->replaceInput(1, unsqueeze->output());
      }
    }
    if (node->hasAttribute(onnx::kbroadcast)) node->removeAttribute(onnx::kbroadcast);
    if (node->hasAttribute(onnx::kaxis)) node->removeAttribute(onnx::kaxis);
    return node;
  }
};

// The converter of ONNX 1.12 with the 6 -> 7 broadcasting adapters replaced (above) and
// extended to the comparison / logic ops it lists as missing, plus adapters for the other
// missing ops whose new version keeps the old meaning: LSTM / GRU / RNN 7 dropped
// `output_sequence` (the Y output is computed when it is listed, which is what the attribute
// said in 1..6); GRU 3 added `linear_before_reset`, whose default 0 is GRU-1's formula.
class Converter : public vc::DefaultVersionConverter {
 public:
  Converter() {
    for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal",
                           "Greater", "Less"}) {
      registerAdapter(std::make_unique<BroadcastAxisToNumpy>(op));  // replaces the library's
    }
    for (const char* op : {"LSTM", "GRU", "RNN"}) {
      registerAdapter(op, 6, 7, vc::RemoveAttribute(onnx::Symbol("output_sequence")));
    }
    registerAdapter(
        std::make_unique<vc::CompatibleAdapter>("GRU", onnx::OpSetID(2), onnx::OpSetID(3)));
  }
};

// "./onnx/version_converter/helper.cc:81: assertInputsAvailable: Assertion `...` failed:
// Shape of input 3 is not available." -> "Shape of input 3 is not available."
std::string converter_message(const std::string& what) {
  const std::string marker = "failed: ";
  const size_t at = what.find(marker);
  std::string msg = at == std::string::npos ? what : what.substr(at + marker.size());
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  if (msg.size() > 300) msg = msg.substr(0, 300) + "...";
  return msg;
}

bool training_domain(const std::string& domain) {
  return domain == "ai.onnx.training" || domain == "ai.onnx.preview.training";
}

}  // namespace

void check_inference_domains(const onnx::ModelProto& m, const std::string& file) {
  const std::string why =
      " holds training operators (optimizer updates, gradients); placer imports a model's "
      "forward graph and derives the training step itself: export the model for inference";
  for (int i = 0; i < m.graph().node_size(); ++i) {
    const onnx::NodeProto& n = m.graph().node(i);
    if (!training_domain(n.domain())) continue;
    const std::string label =
        "node '" + (n.name().empty() ? "#" + std::to_string(i) : n.name()) + "' (" +
        n.op_type() + ")";
    throw FormatError(format_context(file, label, "domain '" + n.domain() + "'" + why));
  }
  // No training node, but only a training domain imported (no default-domain opset).
  bool default_domain = false;
  std::string training;
  for (const auto& o : m.opset_import()) {
    default_domain = default_domain || o.domain().empty() || o.domain() == "ai.onnx";
    if (training_domain(o.domain())) training = o.domain();
  }
  if (!default_domain && !training.empty()) {
    throw FormatError(format_context(file, "opset_import", "domain '" + training + "'" + why));
  }
}

void upgrade_opset(onnx::ModelProto& m, int64_t from, const std::string& file) {
  // libonnx's IR import (inside the converter) dereferences the producer of every graph
  // output: an output nothing defines crashes it, so it is an error here.
  std::unordered_set<std::string> defined;
  for (const auto& in : m.graph().input()) defined.insert(in.name());
  for (const auto& t : m.graph().initializer()) defined.insert(t.name());
  for (const auto& n : m.graph().node()) defined.insert(n.output().begin(), n.output().end());
  for (const auto& out : m.graph().output()) {
    if (!defined.count(out.name())) {
      throw FormatError(format_context(
          file, "graph output '" + out.name() + "'",
          "is the output of no node and no graph input (truncated or corrupt file?)"));
    }
  }
  // The adapters read the shapes of the values they rewrite: infer them under the old opset
  // first (lenient), and put the model's own value_info back afterwards, since the importer
  // infers shapes again under the new opset.
  onnx::ModelProto with_shapes = m;
  try {
    onnx::ShapeInferenceOptions o(/*check_type=*/false, /*error_mode=*/0,
                                  /*enable_data_propagation=*/false);
    onnx::shape_inference::InferShapes(with_shapes, onnx::OpSchemaRegistry::Instance(), o);
  } catch (const std::exception&) {
    // Whatever could not be inferred shows up as the converter's own error below.
  }
  onnx::ModelProto upgraded;
  try {
    upgraded = Converter().convert_version(with_shapes, onnx::OpSetID(from),
                                           onnx::OpSetID(kMinOpset));
  } catch (const std::exception& e) {
    throw FormatError(format_context(
        file, "opset_import",
        "opset " + std::to_string(from) + " is older than " + std::to_string(kMinOpset) +
            " and ONNX's version converter cannot upgrade it: " + converter_message(e.what())));
  }
  *upgraded.mutable_graph()->mutable_value_info() = m.graph().value_info();
  m = std::move(upgraded);
}

}  // namespace placer::onnx_import
