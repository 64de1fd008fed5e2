#include "src/io/graph_json.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "src/graph/algorithms.h"
#include "src/util/error.h"

namespace placer {
namespace {

const std::string kData = PLACER_TEST_DATA_DIR;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "placer_graph_json_" + std::to_string(::getpid()) + "_" + name;
}

// Every field of every op and tensor, compared one by one (Graph has no operator==).
void expect_same_graph(const Graph& a, const Graph& b) {
  EXPECT_EQ(a.name(), b.name());
  EXPECT_EQ(a.batch_size(), b.batch_size());
  EXPECT_EQ(a.is_training_step(), b.is_training_step());
  ASSERT_EQ(a.num_tensors(), b.num_tensors());
  ASSERT_EQ(a.num_ops(), b.num_ops());
  for (TensorId i = 0; i < a.num_tensors(); ++i) {
    SCOPED_TRACE("tensor " + std::to_string(i));
    const Tensor& x = a.tensor(i);
    const Tensor& y = b.tensor(i);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.dtype, y.dtype);
    EXPECT_EQ(x.shape, y.shape);
    EXPECT_EQ(x.bytes, y.bytes);
    EXPECT_EQ(x.batch_scaled, y.batch_scaled);
    EXPECT_EQ(x.is_param_grad, y.is_param_grad);
    EXPECT_EQ(x.producer, y.producer);
  }
  for (OpId i = 0; i < a.num_ops(); ++i) {
    SCOPED_TRACE("op " + std::to_string(i));
    const Op& x = a.op(i);
    const Op& y = b.op(i);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.type, y.type);
    EXPECT_EQ(x.category, y.category);
    EXPECT_EQ(x.phase, y.phase);
    EXPECT_EQ(x.dtype, y.dtype);
    EXPECT_EQ(x.scope, y.scope);
    EXPECT_EQ(x.layer, y.layer);
    EXPECT_EQ(x.group, y.group);
    EXPECT_EQ(x.flops, y.flops);  // exact, not approximately
    EXPECT_EQ(x.bytes_accessed, y.bytes_accessed);
    EXPECT_EQ(x.param_bytes, y.param_bytes);
    EXPECT_EQ(x.state_bytes, y.state_bytes);
    EXPECT_EQ(x.workspace_bytes, y.workspace_bytes);
    EXPECT_EQ(x.batch_scaled, y.batch_scaled);
    EXPECT_EQ(x.forward_op, y.forward_op);
    EXPECT_EQ(x.inputs, y.inputs);
    EXPECT_EQ(x.outputs, y.outputs);
    EXPECT_EQ(x.attrs, y.attrs);
  }
  EXPECT_EQ(a.topo_order(), b.topo_order());
}

// A graph where every field differs from its default somewhere.
Graph every_field_graph() {
  GraphBuilder b("every \"field\"/graph");
  b.set_batch_size(512);
  b.set_training_step(true);
  Tensor x;
  x.name = "input/x";
  x.dtype = DType::kBF16;
  x.shape = {-1, 3, 224, 224};
  x.bytes = 602112;
  b.add_tensor(x);
  Tensor w;
  w.name = "w\tspecial \\ \"é\"";
  w.dtype = DType::kI8;
  w.shape = {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()};
  w.bytes = uint64_t(1) << 60;  // the physical bound
  w.batch_scaled = false;
  b.add_tensor(w);
  Tensor g;
  g.name = "grad/w";
  g.dtype = DType::kF64;
  g.bytes = 0;
  g.batch_scaled = false;
  g.is_param_grad = true;
  b.add_tensor(g);
  Tensor y;
  y.name = "";
  y.dtype = DType::kBool;
  y.shape = {0};
  y.bytes = 1;
  b.add_tensor(y);

  Op fwd;
  fwd.name = "encoder/layer.12/attn/MatMul_3";
  fwd.type = "MatMul";
  fwd.category = OpCategory::kMatMul;  // the default for MatMul: left out of the file
  fwd.dtype = DType::kF16;
  fwd.scope = "encoder.layer.12.attn";
  fwd.layer = 12;
  fwd.group = "g7";
  fwd.flops = 1.2345678901234567e12;
  fwd.bytes_accessed = 9007199254740993ull;  // 2^53 + 1: not a double
  fwd.param_bytes = 4096;
  fwd.state_bytes = 8192;
  fwd.workspace_bytes = 1ull << 40;
  fwd.inputs = {0, 1, 0};
  fwd.outputs = {3};
  fwd.attrs = {{"transB", "1"}, {"alpha", "0.5"}, {"empty", ""}};  // not sorted: order kept
  b.add_op(fwd);

  Op bwd;
  bwd.name = "encoder/layer.12/attn/MatMul_3_grad";
  bwd.type = "MatMulGrad";
  bwd.category = OpCategory::kOther;  // not the default of MatMulGrad (matmul): written
  bwd.phase = Phase::kBackward;
  bwd.dtype = DType::kF64;
  bwd.layer = std::numeric_limits<int32_t>::min();
  bwd.flops = 0.1;
  bwd.batch_scaled = false;
  bwd.forward_op = 0;
  bwd.inputs = {3};
  bwd.outputs = {2};
  bwd.attrs = {{"k", "v1"}, {"k", "v2"}};  // repeated key: written as pairs
  b.add_op(bwd);

  Op opt;
  opt.name = "opt/w/AdamUpdate";
  opt.type = "AdamUpdate";
  opt.category = OpCategory::kOptimizer;
  opt.phase = Phase::kOptimizer;
  opt.flops = std::numeric_limits<double>::denorm_min();
  opt.state_bytes = 2;
  opt.forward_op = 0;
  opt.inputs = {2, 1};
  b.add_op(opt);

  Op comm;
  comm.name = "comm/allreduce";
  comm.type = "CustomThing";
  comm.category = OpCategory::kCommunication;
  comm.phase = Phase::kCommunication;
  comm.flops = 1e24;  // the physical bound
  comm.layer = std::numeric_limits<int32_t>::max();
  b.add_op(comm);
  return b.build();
}

TEST(GraphJson, EveryFieldRoundTripsExactly) {
  const Graph g = every_field_graph();
  const std::string path = temp_path("every.graph.json");
  save_graph_json(g, path);
  const Graph back = load_graph_json(path);
  expect_same_graph(g, back);
  EXPECT_EQ(back.op(0).flops, 1.2345678901234567e12);
  EXPECT_EQ(back.op(1).flops, 0.1);
  EXPECT_EQ(back.op(2).flops, std::numeric_limits<double>::denorm_min());
  EXPECT_EQ(back.op(3).flops, 1e24);
  EXPECT_EQ(back.op(0).bytes_accessed, 9007199254740993ull);
  EXPECT_EQ(back.tensor(1).bytes, uint64_t(1) << 60);
  // Saving again gives the same bytes.
  EXPECT_EQ(graph_to_json(back), read_text(path));
  std::remove(path.c_str());
}

TEST(GraphJson, DefaultsAreLeftOut) {
  const std::string text = graph_to_json(every_field_graph());
  // Op 3 ("comm/allreduce") sets no scope / group / bytes / forward_op / attrs.
  const size_t at = text.find("{\"name\":\"comm/allreduce\"");
  ASSERT_NE(at, std::string::npos);
  const std::string line = text.substr(at, text.find('\n', at) - at);
  EXPECT_EQ(line,
            "{\"name\":\"comm/allreduce\",\"type\":\"CustomThing\",\"category\":\"communication\","
            "\"phase\":\"communication\",\"layer\":2147483647,\"flops\":1e+24,"
            "\"inputs\":[],\"outputs\":[]}");
  // MatMul's category is its default: absent. Attrs keep their order.
  EXPECT_NE(text.find("{\"name\":\"encoder/layer.12/attn/MatMul_3\",\"type\":\"MatMul\",\"dtype\""),
            std::string::npos);
  EXPECT_NE(text.find("\"attrs\":{\"transB\":\"1\",\"alpha\":\"0.5\",\"empty\":\"\"}"),
            std::string::npos);
  EXPECT_NE(text.find("\"attrs\":[[\"k\",\"v1\"],[\"k\",\"v2\"]]"), std::string::npos);
  EXPECT_EQ(text.rfind("{\n  \"format_version\": \"1.0\",\n  \"name\": ", 0), 0u);
  // Shortest text that reads back to the same double.
  EXPECT_NE(text.find("\"flops\":1234567890123.4568,"), std::string::npos);
  EXPECT_NE(text.find("\"flops\":0.1,"), std::string::npos);
}

TEST(GraphJson, Mlp2FixtureHasHandCountedValues) {
  const Graph g = load_graph_json(kData + "/mlp2.graph.json");
  EXPECT_EQ(g.name(), "mlp2");
  EXPECT_EQ(g.batch_size(), 32);
  EXPECT_FALSE(g.is_training_step());
  ASSERT_EQ(g.num_ops(), 5u);
  ASSERT_EQ(g.num_tensors(), 10u);
  const OpId fc1 = g.find_op("fc1/MatMul");
  ASSERT_NE(fc1, kNoOp);
  EXPECT_EQ(g.op(fc1).category, OpCategory::kMatMul);  // from the type
  EXPECT_EQ(g.op(g.find_op("relu/Relu")).category, OpCategory::kElementwise);
  EXPECT_EQ(g.op(fc1).flops, 2.0 * 32 * 784 * 256);
  EXPECT_EQ(g.op(fc1).layer, 0);
  EXPECT_EQ(g.op(fc1).scope, "fc1");
  EXPECT_EQ(g.tensor(0).bytes, 32u * 784 * 4);
  EXPECT_EQ(g.tensor(0).shape, (std::vector<int64_t>{32, 784}));
  EXPECT_FALSE(g.tensor(1).batch_scaled);
  EXPECT_EQ(g.total_flops(), 12845056.0 + 8192 + 8192 + 163840 + 320);
  EXPECT_EQ(g.total_param_bytes(), 802816u + 1024 + 10240 + 40);
  EXPECT_EQ(g.op_bytes(fc1), 100352u + 802816 + 32768);
  EXPECT_EQ(topo_depth(g), (std::vector<int>{0, 1, 2, 3, 4}));
  // The fixture is in the writer's canonical form.
  EXPECT_EQ(graph_to_json(g), read_text(kData + "/mlp2.graph.json"));
}

TEST(GraphJson, MinimalHandWrittenFile) {
  // Only the required fields; bytes computed from a fully known shape.
  const Graph g = parse_graph_json(
      R"({"format_version": "1", "tensors": [{"name": "t", "dtype": "fp16", "shape": [2, 3]}],
          "ops": [{"name": "a", "type": "Relu", "outputs": [0]},
                  {"name": "b", "type": "Gemm", "inputs": [0], "flops": 12,
                   "attrs": {"alpha": "1.0"}}]})",
      "dir/tiny.graph.json");
  EXPECT_EQ(g.name(), "tiny");  // from the file name
  EXPECT_EQ(g.batch_size(), 0);
  EXPECT_EQ(g.tensor(0).bytes, 12u);
  EXPECT_EQ(g.tensor(0).dtype, DType::kF16);
  EXPECT_EQ(g.op(0).flops, 0.0);
  EXPECT_EQ(g.op(1).flops, 12.0);
  EXPECT_EQ(g.op(1).category, OpCategory::kMatMul);
  EXPECT_EQ(g.op(1).layer, -1);
  EXPECT_EQ(g.op(1).forward_op, kNoOp);
  EXPECT_EQ(g.succs(0).size(), 1u);
}

TEST(GraphJson, EmptyGraphRoundTrips) {
  GraphBuilder b("empty");
  const Graph g = b.build();
  const std::string text = graph_to_json(g);
  EXPECT_EQ(text,
            "{\n  \"format_version\": \"1.0\",\n  \"name\": \"empty\",\n  \"batch_size\": 0,\n"
            "  \"training_step\": false,\n  \"tensors\": [],\n  \"ops\": []\n}\n");
  expect_same_graph(g, parse_graph_json(text, "x"));
}

TEST(GraphJson, GeneratedGraphRoundTrips) {
  GraphBuilder b("gen");
  TensorId prev = b.add_tensor("in", 64);
  for (int i = 0; i < 2000; ++i) {
    const TensorId w = b.add_tensor("w" + std::to_string(i), 64 + i);
    b.tensor(w).batch_scaled = false;
    const TensorId out = b.add_tensor("h" + std::to_string(i), 128 + i);
    Op o;
    o.name = "layer." + std::to_string(i / 10) + "/MatMul_" + std::to_string(i % 10);
    o.type = i % 3 ? "MatMul" : "Add";
    o.flops = 1.0 / (i + 3) * 1e9;
    o.layer = i / 10;
    o.inputs = {prev, w};
    o.outputs = {out};
    b.add_op(o);
    prev = out;
  }
  const Graph g = b.build();
  const std::string text = graph_to_json(g);
  const Graph back = parse_graph_json(text, "gen.graph.json");
  expect_same_graph(g, back);
  EXPECT_EQ(graph_to_json(back), text);
}

// ---- errors ------------------------------------------------------------------------------

template <typename E, typename Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("wrong exception type: ") + e.what();
  }
  return "no exception";
}

std::string format_error(const std::string& text) {
  return error_of<FormatError>([&] { parse_graph_json(text, "g.graph.json"); });
}

// A valid file with `ops_json` as its ops and three tensors.
std::string with_ops(const std::string& ops_json, const std::string& version = "1.0") {
  return R"({"format_version": ")" + version + R"(", "name": "t", "tensors": [
    {"name":"x","dtype":"f32","shape":[4],"bytes":16},
    {"name":"y","dtype":"f32","shape":[4],"bytes":16},
    {"name":"z","dtype":"f32","shape":[4],"bytes":16}], "ops": )" +
         ops_json + "}";
}

TEST(GraphJsonErrors, NonPhysicalNumbers) {
  EXPECT_EQ(format_error(with_ops(R"([{"name":"a","type":"MatMul","flops":1e308,"outputs":[0]}])")),
            "g.graph.json: ops[0].flops: is 1e308, beyond the physical bound of 1e24 FLOPs per op "
            "(a training step of the largest models is ~1e21)");
  EXPECT_EQ(format_error(with_ops(R"([{"name":"a","type":"MatMul","flops":1e25,"outputs":[0]}])")),
            "g.graph.json: ops[0].flops: is 1e25, beyond the physical bound of 1e24 FLOPs per op "
            "(a training step of the largest models is ~1e21)");
  EXPECT_EQ(
      format_error(with_ops(R"([{"name":"a","type":"MatMul","param_bytes":2e18,"outputs":[0]}])")),
      "g.graph.json: ops[0].param_bytes: is 2e18 bytes, beyond the physical bound of 1 EiB");
  EXPECT_NO_THROW(
      parse_graph_json(with_ops(R"([{"name":"a","type":"MatMul","flops":1e24,"outputs":[0]}])"),
                       "g.graph.json"));
}

TEST(GraphJsonErrors, MissingFile) {
  const std::string path = kData + "/no_such_dir/missing.graph.json";
  EXPECT_EQ(error_of<FileError>([&] { load_graph_json(path); }),
            path + ": cannot open graph file: No such file or directory");
}

TEST(GraphJsonErrors, TruncatedFile) {
  const std::string path = kData + "/bad/truncated.graph.json";
  const std::string msg = error_of<FormatError>([&] { load_graph_json(path); });
  // The file ends inside a string on line 21 (byte 1177 is the end of input).
  EXPECT_EQ(read_text(path).size(), 1176u);
  EXPECT_EQ(msg, path +
                     ": line 21, column 33: malformed JSON: syntax error while parsing value - "
                     "invalid string: "
                     "missing closing quote");
}

TEST(GraphJsonErrors, MalformedText) {
  EXPECT_EQ(
      format_error("{\"format_version\": \"1.0\",, }"),
      "g.graph.json: line 1, column 26: malformed JSON: syntax error while parsing object key - "
      "unexpected ','; expected string literal");
  EXPECT_EQ(format_error("").rfind("g.graph.json: line 1, column 1: malformed JSON: ", 0), 0u);
  EXPECT_EQ(format_error("[1, 2]"),
            "g.graph.json: expected a JSON object at the top level, got an array");
}

TEST(GraphJsonErrors, Version) {
  const std::string path = kData + "/bad/wrong_version.graph.json";
  EXPECT_EQ(error_of<FormatError>([&] { load_graph_json(path); }),
            path +
                ": format_version: unsupported graph format version '2.0' (this build of "
                "placer reads version 1.x)");
  EXPECT_EQ(format_error(R"({"tensors": [], "ops": []})"),
            "g.graph.json: missing field 'format_version'");
  EXPECT_EQ(format_error(R"({"format_version": 1.0, "tensors": [], "ops": []})"),
            "g.graph.json: format_version: expected a string like \"1.0\", got 1.0");
  EXPECT_EQ(format_error(R"({"format_version": "one", "tensors": [], "ops": []})"),
            "g.graph.json: format_version: malformed version 'one' (expected \"MAJOR.MINOR\")");
  EXPECT_EQ(format_error(R"({"format_version": "0.9", "tensors": [], "ops": []})"),
            "g.graph.json: format_version: unsupported graph format version '0.9' (this build "
            "of placer reads version 1.x)");
}

TEST(GraphJsonErrors, TensorIndexOutOfRangeFixture) {
  const std::string path = kData + "/bad/tensor_index_out_of_range.graph.json";
  EXPECT_EQ(error_of<FormatError>([&] { load_graph_json(path); }),
            path + ": ops[1].inputs[0]: tensor index 99 out of range (graph has 3 tensors)");
}

TEST(GraphJsonErrors, CyclicFixture) {
  const std::string path = kData + "/bad/cyclic.graph.json";
  EXPECT_EQ(error_of<ValidationError>([&] { load_graph_json(path); }),
            path + ": graph 'cyclic' has a cycle of 3 ops: 'add' -> 'mul' -> 'relu' -> 'add'");
}

TEST(GraphJsonErrors, BadFields) {
  EXPECT_EQ(format_error(with_ops(R"([{"name":"a","type":"Relu","outputs":[3]}])")),
            "g.graph.json: ops[0].outputs[0]: tensor index 3 out of range (graph has 3 tensors)");
  EXPECT_EQ(format_error(with_ops(R"([{"name":"a","type":"Relu","inputs":[0, -1]}])")),
            "g.graph.json: ops[0].inputs[1]: expected a non-negative integer, got -1");
  EXPECT_EQ(format_error(with_ops(R"([{"name":"a","type":"Relu","inputs":0}])")),
            "g.graph.json: ops[0].inputs: expected an array, got 0");
  EXPECT_EQ(format_error(with_ops(R"([{"name":"a","type":"Relu","flops":"abc"}])")),
            "g.graph.json: ops[0].flops: expected a number, got 'abc'");
  EXPECT_EQ(format_error(with_ops(R"([{"name":"a","type":"Relu","flops":-1.5}])")),
            "g.graph.json: ops[0].flops: must be >= 0, got -1.5");
  EXPECT_EQ(format_error(with_ops(R"([{"name":"a","type":"Relu","dtype":"f33"}])")),
            "g.graph.json: ops[0].dtype: unknown dtype 'f33' (expected f32, f16, bf16, f64, i64, "
            "i32, i16, i8, u8 or bool)");
  EXPECT_EQ(format_error(with_ops(R"([{"name":"a","type":"Relu"},
                                      {"name":"b","type":"Relu","phase":"sideways"}])")),
            "g.graph.json: ops[1].phase: unknown phase 'sideways' (expected forward, backward, "
            "optimizer or communication)");
  EXPECT_EQ(format_error(with_ops(R"([{"name":"a","type":"Relu","category":"magic"}])")),
            "g.graph.json: ops[0].category: unknown category 'magic' (expected one of matmul, "
            "conv, elementwise, normalization, reduction, softmax, pooling, embedding, "
            "recurrent, data_movement, optimizer, communication, input, other)");
  EXPECT_EQ(format_error(with_ops(R"([{"name":"a","type":"Relu","forward_op":5}])")),
            "g.graph.json: ops[0].forward_op: op index 5 out of range (graph has 1 ops)");
  EXPECT_EQ(format_error(with_ops(R"([{"name":"a","type":"Relu","layer":3000000000}])")),
            "g.graph.json: ops[0].layer: layer 3000000000 is out of the 32-bit range");
  EXPECT_EQ(format_error(with_ops(R"([{"name":"a","type":"Relu","batch_scaled":1}])")),
            "g.graph.json: ops[0].batch_scaled: expected true or false, got 1");
  EXPECT_EQ(format_error(with_ops(R"([{"name":"a","type":"Relu","attrs":{"axis":1}}])")),
            "g.graph.json: ops[0].attrs.axis: expected a string, got 1 (attribute values are "
            "strings)");
  EXPECT_EQ(format_error(with_ops(R"([{"name":"a","type":"Relu","attrs":[["k"]]}])")),
            "g.graph.json: ops[0].attrs[0]: expected a [\"key\", \"value\"] pair of strings");
  EXPECT_EQ(format_error(with_ops(R"([{"name":"a","type":"Relu","attrs":[["k","v"],3]}])")),
            "g.graph.json: ops[0].attrs[1]: expected a [\"key\", \"value\"] pair of strings, got "
            "3");
  EXPECT_EQ(format_error(with_ops(R"([{"name":"a","type":"Relu","attrs":3}])")),
            "g.graph.json: ops[0].attrs: expected an object of strings, got 3");
  EXPECT_EQ(format_error(with_ops(R"([{"type":"Relu"}])")),
            "g.graph.json: ops[0]: missing field 'name'");
  EXPECT_EQ(format_error(with_ops(R"([{"name":"a"}])")),
            "g.graph.json: ops[0]: missing field 'type'");
  EXPECT_EQ(format_error(with_ops(R"([{"name":"","type":"Relu"}])")),
            "g.graph.json: ops[0].name: op name is empty");
  EXPECT_EQ(format_error(with_ops(R"([7])")), "g.graph.json: ops[0]: expected an object, got 7");
  EXPECT_EQ(format_error(with_ops(R"({})")), "g.graph.json: ops: expected an array, got an object");
}

TEST(GraphJsonErrors, BadTensorFields) {
  const auto file = [](const std::string& tensor) {
    return R"({"format_version": "1.0", "tensors": [)" + tensor + R"(], "ops": []})";
  };
  EXPECT_EQ(format_error(file(R"({"name":"t","dtype":"int3","bytes":4})")),
            "g.graph.json: tensors[0].dtype: unknown dtype 'int3' (expected f32, f16, bf16, f64, "
            "i64, i32, i16, i8, u8 or bool)");
  EXPECT_EQ(format_error(file(R"({"name":"t","bytes":-4})")),
            "g.graph.json: tensors[0].bytes: expected a non-negative integer, got -4");
  EXPECT_EQ(format_error(file(R"({"name":"t","bytes":4.5})")),
            "g.graph.json: tensors[0].bytes: expected a non-negative integer, got 4.5");
  EXPECT_EQ(format_error(file(R"({"name":"t","shape":[2,"x"],"bytes":4})")),
            "g.graph.json: tensors[0].shape[1]: expected an integer, got 'x'");
  EXPECT_EQ(format_error(file(R"({"name":"t","shape":[-1, 4]})")),
            "g.graph.json: tensors[0]: missing field 'bytes' (needed unless the shape is "
            "non-empty and fully known)");
  EXPECT_EQ(format_error(file(R"({"bytes":4})")), "g.graph.json: tensors[0]: missing field 'name'");
  EXPECT_EQ(format_error(file(R"({"name":"t","bytes":4,"param_grad":"yes"})")),
            "g.graph.json: tensors[0].param_grad: expected true or false, got 'yes'");
  // 1e3 is accepted for an integer field when exact.
  EXPECT_EQ(parse_graph_json(file(R"({"name":"t","bytes":1e3})"), "x").tensor(0).bytes, 1000u);
}

TEST(GraphJsonErrors, TopLevelFields) {
  EXPECT_EQ(format_error(R"({"format_version": "1.0", "ops": []})"),
            "g.graph.json: missing field 'tensors'");
  EXPECT_EQ(format_error(R"({"format_version": "1.0", "tensors": []})"),
            "g.graph.json: missing field 'ops'");
  EXPECT_EQ(
      format_error(R"({"format_version": "1.0", "tensors": [], "ops": [], "batch_size": -2})"),
      "g.graph.json: batch_size: must be >= 0, got -2");
  EXPECT_EQ(format_error(R"({"format_version": "1.0", "tensors": [], "ops": [], "name": 3})"),
            "g.graph.json: name: expected a string, got 3");
  EXPECT_EQ(
      format_error(R"({"format_version": "1.0", "tensors": [], "ops": [], "training_step": 0})"),
      "g.graph.json: training_step: expected true or false, got 0");
}

// Unknown fields are typos in a file of a version this reader knows, and newer additions in a
// file of a later minor version.
TEST(GraphJsonErrors, UnknownFieldsDependOnVersion) {
  const std::string ops = R"([{"name":"a","type":"Relu","param_byte":4}])";
  EXPECT_EQ(format_error(with_ops(ops)), "g.graph.json: ops[0]: unknown field 'param_byte'");
  EXPECT_EQ(format_error(R"({"format_version": "1.0", "tensors": [], "ops": [], "extra": 1})"),
            "g.graph.json: unknown field 'extra'");
  EXPECT_EQ(format_error(R"({"format_version": "1.0", "tensors": [{"name":"t","bytes":1,"x":2}],
                            "ops": []})"),
            "g.graph.json: tensors[0]: unknown field 'x'");
  const Graph g = parse_graph_json(with_ops(ops, "1.7"), "new.graph.json");
  EXPECT_EQ(g.op(0).param_bytes, 0u);
}

// Hand-written files may order keys freely: the version last, ops before tensors.
TEST(GraphJsonErrors, KeyOrderDoesNotMatter) {
  const std::string ops = R"([{"outputs":[1],"type":"Relu","inputs":[0],"name":"a"}])";
  const std::string tensors = R"([{"bytes":16,"name":"x"},{"name":"y","bytes":8}])";
  const Graph g = parse_graph_json(
      R"({"ops": )" + ops + R"(, "tensors": )" + tensors + R"(, "format_version": "1.0"})", "x");
  EXPECT_EQ(g.op(0).inputs, (std::vector<TensorId>{0}));
  EXPECT_EQ(g.tensor(1).producer, 0u);
  // Index checks still happen once the tensors are known.
  EXPECT_EQ(format_error(R"({"ops": [{"name":"a","type":"Relu","inputs":[2]}], "tensors": )" +
                         tensors + R"(, "format_version": "1.0"})"),
            "g.graph.json: ops[0].inputs[0]: tensor index 2 out of range (graph has 2 tensors)");
  // An unknown field before the version is an error only if the version says so.
  const std::string late = R"({"tensors": [], "ops": [], "extra": {"a": [1, {"b": 2}]}, )";
  EXPECT_EQ(format_error(late + R"("format_version": "1.0"})"),
            "g.graph.json: unknown field 'extra'");
  EXPECT_EQ(parse_graph_json(late + R"("format_version": "1.3"})", "x").num_ops(), 0u);
  // A bad field before an unsupported version: the version is reported.
  EXPECT_EQ(format_error(R"({"tensors": [{"name": 5}], "ops": [], "format_version": "3.1"})"),
            "g.graph.json: format_version: unsupported graph format version '3.1' (this build "
            "of placer reads version 1.x)");
}

// Skipped unknown values of any shape do not disturb the fields after them.
TEST(GraphJsonErrors, NewerMinorVersionSkipsUnknownValues) {
  const Graph g = parse_graph_json(
      R"({"format_version": "1.2", "future": [[1, 2], {"x": {"y": []}}], "name": "n",
          "tensors": [{"name": "t", "bytes": 4, "layout": {"kind": "nchw", "dims": [0, 1]}}],
          "ops": [{"name": "a", "hints": [{"h": 1}], "type": "Relu", "outputs": [0],
                   "phase": "backward"}]})",
      "x");
  EXPECT_EQ(g.name(), "n");
  EXPECT_EQ(g.tensor(0).bytes, 4u);
  EXPECT_EQ(g.op(0).type, "Relu");
  EXPECT_EQ(g.op(0).phase, Phase::kBackward);
  EXPECT_EQ(g.op(0).outputs, (std::vector<TensorId>{0}));
}

TEST(GraphJsonErrors, BuilderErrorsNameTheFile) {
  EXPECT_EQ(error_of<ValidationError>([&] {
              parse_graph_json(with_ops(R"([{"name":"a","type":"Relu","outputs":[1]},
                                           {"name":"b","type":"Relu","outputs":[1]}])"),
                               "two.graph.json");
            }),
            "two.graph.json: graph 't': tensor 'y' is written by two ops ('a' and 'b')");
  EXPECT_EQ(error_of<ValidationError>([&] {
              parse_graph_json(with_ops(R"([{"name":"a","type":"Relu"},
                                           {"name":"a","type":"Tanh"}])"),
                               "dup.graph.json");
            }),
            "dup.graph.json: graph 't': duplicate op name 'a'");
}

TEST(GraphJsonErrors, SaveErrors) {
  const Graph g = load_graph_json(kData + "/mlp2.graph.json");
  const std::string path = kData + "/no_such_dir/out.graph.json";
  EXPECT_EQ(error_of<FileError>([&] { save_graph_json(g, path); }),
            path + ": cannot write graph file: No such file or directory");

  GraphBuilder u("utf8");
  Op bad_name;
  bad_name.name = "op\xff";
  bad_name.type = "Relu";
  u.add_op(bad_name);
  const Graph not_utf8 = u.build();
  EXPECT_EQ(error_of<ValidationError>([&] { graph_to_json(not_utf8); }),
            "graph 'utf8': op #0 cannot be saved: a string in it is not valid UTF-8");

  GraphBuilder b("nan");
  Op o;
  o.name = "bad";
  o.type = "Relu";
  o.flops = std::numeric_limits<double>::infinity();
  b.add_op(o);
  const Graph inf = b.build();
  EXPECT_EQ(error_of<ValidationError>([&] { graph_to_json(inf); }),
            "graph 'nan': op 'bad': flops = inf cannot be saved (must be finite, >= 0)");
}

}  // namespace
}  // namespace placer
