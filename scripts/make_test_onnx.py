#!/usr/bin/python3
"""Write the small hand-made ONNX fixtures of the importer tests (tests/data/onnx/).

Uses Debian's python3-onnx (run with /usr/bin/python3):

  /usr/bin/python3 scripts/make_test_onnx.py [--out tests/data/onnx]

Every model is a few nodes whose FLOPs, shapes, parameters and scopes are computed by hand in
tests/datasets/onnx_import_test.cpp and tests/datasets/onnx_ops_test.cpp; the comments below
give the same numbers. Weights are graph inputs (as torch.onnx.export(export_params=False)
writes them) or small seeded initializers; files are a few KB. Real exported models (ResNet-50
and others) come from scripts/export_models.py instead.
"""

import argparse
import os
import sys

try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:  # pragma: no cover - environment problem, say how to fix it
    sys.exit(f"make_test_onnx.py: {e}; install Debian's python3-onnx and run with /usr/bin/python3")

F = TensorProto.FLOAT
I64 = TensorProto.INT64
RNG = np.random.default_rng(0)


def init(name, shape, dtype=np.float32, rng=None):
    """A seeded initializer (float weights or int64 constants); `rng` defaults to RNG."""
    if dtype == np.int64:
        return numpy_helper.from_array(np.asarray(shape, dtype=np.int64), name)
    return numpy_helper.from_array((rng or RNG).standard_normal(shape).astype(dtype), name)


def const(name, value, dtype=np.int64):
    """A Constant node, as torch writes small literals."""
    arr = np.asarray(value, dtype=dtype)
    return helper.make_node("Constant", [], [name], name=name, value=numpy_helper.from_array(arr))


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def model(graph, opset=14, extra_opsets=()):
    imports = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    m = helper.make_model(graph, opset_imports=imports, producer_name="make_test_onnx.py")
    m.ir_version = 7
    return m


def conv_net():
    """Conv+BN+Relu+MaxPool+Flatten+Gemm, batch 2, 3x8x8 input.

    FLOPs (2 per multiply-add): Conv 2*(2*4*8*8)*(3*3*3) + 512 bias = 28160; BN 8*512 = 4096;
    Relu 512; MaxPool 128 outputs * 4 = 512; Flatten 0; Gemm 2*2*64*10 + 20 = 2580.
    Total 35860. Parameters: conv 108+4, BN 4+4, fc 640+10 = 770 floats = 3080 B; buffers
    (BN running mean/var) 8 floats = 32 B. Parameter rules: conv weight and fc bias are
    initializers, 'conv_b' is found by its slot (Conv input 2), the others by their names.
    """
    nodes = [
        helper.make_node("Conv", ["x", "features.conv.weight", "conv_b"], ["c"], name="/features/conv/Conv",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("BatchNormalization",
                         ["c", "features.bn.weight", "features.bn.bias", "features.bn.running_mean",
                          "features.bn.running_var"], ["bn"], name="/features/bn/BatchNormalization"),
        helper.make_node("Relu", ["bn"], ["r"], name="/features/relu/Relu"),
        helper.make_node("MaxPool", ["r"], ["p"], name="/features/pool/MaxPool", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"], name="/Flatten", axis=1),
        helper.make_node("Gemm", ["f", "classifier.fc.weight", "classifier.fc.bias"], ["y"],
                         name="/classifier/fc/Gemm", transB=1),
    ]
    inputs = [vi("x", F, [2, 3, 8, 8]), vi("conv_b", F, [4]), vi("features.bn.weight", F, [4]),
              vi("features.bn.bias", F, [4]), vi("features.bn.running_mean", F, [4]),
              vi("features.bn.running_var", F, [4]), vi("classifier.fc.weight", F, [10, 64])]
    inits = [init("features.conv.weight", [4, 3, 3, 3]), init("classifier.fc.bias", [10])]
    g = helper.make_graph(nodes, "conv_net", inputs, [vi("y", F, [2, 10])], inits)
    return model(g)


def matmul_symbolic():
    """Symbolic batch and sequence: x [batch, seq, 16]; with batch 4, seq 8:

    proj MatMul 2*(4*8*32)*16 = 32768 (W^T of input 'w_raw' [32,16] folded; 'w_raw' is a
    parameter by its slot through the Transpose); Add 1024; Relu 1024; Transpose 0; scores
    MatMul 2*(4*8*8)*32 = 16384; Div by sqrt(32) (from Shape->Gather->Cast->Sqrt, folded)
    256; Softmax 5*256 = 1280; context MatMul 2*(4*8*32)*8 = 16384; Reshape (target from
    Shape->Gather->Mul->Unsqueeze->Concat, folded) 0; ReduceMean 1024 + 32 = 1056.
    Total 70176; 10 ops. Parameters: 512 + 32 floats = 2176 B.
    """
    s = "/encoder/layer.0"
    nodes = [
        helper.make_node("Transpose", ["w_raw"], ["wt"], name=f"{s}/proj/Transpose", perm=[1, 0]),
        helper.make_node("MatMul", ["x", "wt"], ["h"], name=f"{s}/proj/MatMul"),
        helper.make_node("Add", ["h", "proj_bias"], ["h2"], name=f"{s}/proj/Add"),
        helper.make_node("Relu", ["h2"], ["h3"], name=f"{s}/act/Relu"),
        helper.make_node("Transpose", ["h3"], ["ht"], name=f"{s}/attn/Transpose", perm=[0, 2, 1]),
        helper.make_node("MatMul", ["h3", "ht"], ["sc"], name=f"{s}/attn/MatMul"),
        helper.make_node("Shape", ["h3"], ["shp"], name=f"{s}/attn/Shape"),
        const(f"{s}/attn/Constant", 2),
        helper.make_node("Gather", ["shp", f"{s}/attn/Constant"], ["dk"], name=f"{s}/attn/Gather", axis=0),
        helper.make_node("Cast", ["dk"], ["dkf"], name=f"{s}/attn/Cast", to=F),
        helper.make_node("Sqrt", ["dkf"], ["scale"], name=f"{s}/attn/Sqrt"),
        helper.make_node("Div", ["sc", "scale"], ["sc2"], name=f"{s}/attn/Div"),
        helper.make_node("Softmax", ["sc2"], ["pr"], name=f"{s}/attn/Softmax", axis=-1),
        helper.make_node("MatMul", ["pr", "h3"], ["ctx"], name=f"{s}/attn/MatMul_1"),
        helper.make_node("Shape", ["ctx"], ["cs"], name=f"{s}/out/Shape"),
        const(f"{s}/out/Constant", 0),
        const(f"{s}/out/Constant_1", 1),
        const(f"{s}/out/Constant_2", [-1]),
        const(f"{s}/out/Constant_3", [0]),
        helper.make_node("Gather", ["cs", f"{s}/out/Constant"], ["b0"], name=f"{s}/out/Gather", axis=0),
        helper.make_node("Gather", ["cs", f"{s}/out/Constant_1"], ["s0"], name=f"{s}/out/Gather_1", axis=0),
        helper.make_node("Mul", ["b0", "s0"], ["bs"], name=f"{s}/out/Mul"),
        helper.make_node("Unsqueeze", ["bs", f"{s}/out/Constant_3"], ["bsu"], name=f"{s}/out/Unsqueeze"),
        helper.make_node("Concat", ["bsu", f"{s}/out/Constant_2"], ["tgt"], name=f"{s}/out/Concat", axis=0),
        helper.make_node("Reshape", ["ctx", "tgt"], ["flat"], name=f"{s}/out/Reshape"),
        helper.make_node("ReduceMean", ["flat"], ["y"], name="/head/ReduceMean", axes=[1], keepdims=0),
    ]
    inputs = [vi("x", F, ["batch", "seq", 16]), vi("w_raw", F, [32, 16])]
    inits = [init("proj_bias", [32])]
    g = helper.make_graph(nodes, "matmul_symbolic", inputs, [vi("y", F, ["batch_x_seq"])], inits)
    return model(g)


def recurrent():
    """Batch-first x [3, 5, 4] -> Transpose (as torch writes batch_first=True) -> LSTM ->
    Squeeze -> bidirectional GRU -> Transpose -> Reshape -> RNN; T=5, B=3.

    Per time step and direction: 2*G*H*(I+H) gate GEMMs + G*H sum + (bias) 2*G*H + E*H
    (E = 24 LSTM, 17 GRU, 4 RNN). LSTM (I=4, H=6): 696 per step, x 15 = 10440. GRU (I=6,
    H=6, 2 directions): 588, x 2 x 15 = 17640. RNN (I=12, H=5, no bias): 195, x 15 = 2925.
    Total 31005. Parameters: LSTM 96+144+48, GRU 216+216+72, RNN 60+25 = 877 floats = 3508 B.
    """
    nodes = [
        helper.make_node("Transpose", ["x"], ["xt"], name="/encoder/Transpose", perm=[1, 0, 2]),
        helper.make_node("LSTM", ["xt", "encoder.lstm.W", "encoder.lstm.R", "encoder.lstm.B"],
                         ["ly", "lh", "lc"], name="/encoder/lstm/LSTM", hidden_size=6),
        const("/encoder/Constant", [1]),
        helper.make_node("Squeeze", ["ly", "/encoder/Constant"], ["ls"], name="/encoder/Squeeze"),
        helper.make_node("GRU", ["ls", "decoder.gru.W", "decoder.gru.R", "decoder.gru.B"], ["gy", "gh"],
                         name="/decoder/gru/GRU", hidden_size=6, direction="bidirectional"),
        helper.make_node("Transpose", ["gy"], ["gt"], name="/decoder/Transpose", perm=[0, 2, 1, 3]),
        const("/decoder/Constant", [5, 3, 12]),
        helper.make_node("Reshape", ["gt", "/decoder/Constant"], ["gr"], name="/decoder/Reshape"),
        helper.make_node("RNN", ["gr", "decoder.rnn.W", "decoder.rnn.R"], ["ry"], name="/decoder/rnn/RNN",
                         hidden_size=5),
    ]
    inputs = [vi("x", F, [3, 5, 4]),
              vi("encoder.lstm.W", F, [1, 24, 4]), vi("encoder.lstm.R", F, [1, 24, 6]),
              vi("encoder.lstm.B", F, [1, 48]),
              vi("decoder.gru.W", F, [2, 18, 6]), vi("decoder.gru.R", F, [2, 18, 6]),
              vi("decoder.gru.B", F, [2, 36]),
              vi("decoder.rnn.W", F, [1, 5, 12]), vi("decoder.rnn.R", F, [1, 5, 5])]
    g = helper.make_graph(nodes, "recurrent", inputs, [vi("ry", F, [5, 1, 3, 5])])
    return model(g)


def unknown_op():
    """Ops without a cost rule: two Hardmax nodes (one warning for the type) and a custom
    com.example.Swish (no schema: its output shape is taken from its input, with a warning).
    x [2, 8]: every op 16 FLOPs (Relu by rule, the others by the fallback); total 80."""
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="/a/Relu"),
        helper.make_node("Hardmax", ["a"], ["b"], name="/a/Hardmax", axis=1),
        helper.make_node("Hardmax", ["b"], ["c"], name="/b/Hardmax", axis=1),
        helper.make_node("Swish", ["c"], ["d"], name="/b/Swish", domain="com.example"),
        helper.make_node("Relu", ["d"], ["y"], name="/c/Relu"),
    ]
    g = helper.make_graph(nodes, "unknown_op", [vi("x", F, [2, 8])], [vi("y", F, [2, 8])])
    return model(g, extra_opsets=[("com.example", 1)])


def missing_shape():
    """A Reshape to a run-time shape (graph input 'target_shape'): inference cannot size its
    output, which the Conv needs."""
    nodes = [
        helper.make_node("Reshape", ["x", "target_shape"], ["r"], name="/layer1/Reshape"),
        helper.make_node("Conv", ["r", "layer1.conv.weight"], ["y"], name="/layer1/Conv",
                         kernel_shape=[3, 3]),
    ]
    inputs = [vi("x", F, [2, 3, 8, 8]), vi("target_shape", I64, [4]),
              vi("layer1.conv.weight", F, [4, 3, 3, 3])]
    g = helper.make_graph(nodes, "missing_shape", inputs, [vi("y", F, ["n", "c", "h", "w"])])
    return model(g)


def relu_opset(opset):
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="/Relu")], "relu",
                          [vi("x", F, [1, 4])], [vi("y", F, [1, 4])])
    return model(g, opset=opset)


def opset6_conv_net():
    """conv_net as the pytorch-converted models of ONNX's test data are written: IR 3, opset 6,
    initializers also listed as inputs, the conv bias as a separate Add with the old
    broadcast=1 axis=1 attributes, BatchNormalization and Dropout with is_test=1, Gemm with
    broadcast=1. The importer upgrades it to opset 7 (the Add's bias gets an Unsqueeze to
    [4,1,1], a weight re-layout that is folded).

    FLOPs: Conv 2*(2*4*8*8)*27 = 27648; bias Add 512; BN 8*512 = 4096; Relu 512;
    AveragePool 128 outputs * 4 = 512; Flatten 0; Gemm 2*2*64*10 + 20 = 2580; Dropout 20.
    Total 35880. Parameters 770 floats (3080 B), buffers 8 floats (32 B), as conv_net.
    """
    rng = np.random.default_rng(6)  # its own generator: the other fixtures stay unchanged
    inits = [init(name, shape, rng=rng) for name, shape in [
        ("conv.weight", [4, 3, 3, 3]), ("conv.bias", [4]), ("bn.weight", [4]), ("bn.bias", [4]),
        ("bn.running_mean", [4]), ("bn.running_var", [4]), ("fc.weight", [10, 64]),
        ("fc.bias", [10])]]
    nodes = [
        helper.make_node("Conv", ["x", "conv.weight"], ["c"], name="conv", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c", "conv.bias"], ["cb"], name="conv_bias", broadcast=1, axis=1),
        helper.make_node("BatchNormalization",
                         ["cb", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"],
                         ["b"], name="bn", is_test=1, epsilon=1e-5),
        helper.make_node("Relu", ["b"], ["r"], name="relu"),
        helper.make_node("AveragePool", ["r"], ["p"], name="pool", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["h"], name="fc", broadcast=1,
                         transB=1),
        helper.make_node("Dropout", ["h"], ["y"], name="dropout", is_test=1, ratio=0.5),
    ]
    inputs = [vi("x", F, [2, 3, 8, 8])] + [vi(t.name, F, list(t.dims)) for t in inits]
    g = helper.make_graph(nodes, "opset6_conv_net", inputs, [vi("y", F, [2, 10])],
                          initializer=inits)
    m = model(g, opset=6)
    m.ir_version = 3
    return m


def pass_through():
    """ONNX's test_identity: x [2, 3] -> Identity -> y. x is data passed through (a view op),
    not a weight folded away."""
    g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "pass_through",
                          [vi("x", F, [2, 3])], [vi("y", F, [2, 3])])
    return model(g)


def training_adagrad():
    """ONNX's test_adagrad: one Adagrad node of the ai.onnx.preview.training domain, the only
    opset imported (an optimizer update, not a forward graph: refused with the domain named)."""
    node = helper.make_node("Adagrad", ["R", "T", "X", "G", "H"], ["X_new", "H_new"],
                            domain="ai.onnx.preview.training", norm_coefficient=0.001,
                            epsilon=1e-5, decay_factor=0.1)
    inputs = [vi("R", F, []), vi("T", I64, []), vi("X", F, [1]), vi("G", F, [1]), vi("H", F, [1])]
    g = helper.make_graph([node], "training_adagrad", inputs,
                          [vi("X_new", F, [1]), vi("H_new", F, [1])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("ai.onnx.preview.training", 1)],
                          producer_name="make_test_onnx.py")
    m.ir_version = 7
    return m


def ops_zoo():
    """Transformer-style ops on x [2, 4, 8] (64 elements), opset 17. Hand counts:
    Gather embedding (table 'embed.weight' [10,8]) 0; position Gather ('pos.weight' [4,8],
    constant ids; no data input, not batch-scaled) 0; Add 64; LayerNormalization 8*64 = 512;
    decomposed layer norm: ReduceMean 64+8, Sub 64, Pow 64, ReduceMean 64+8, Add 8, Sqrt 8,
    Div 64, Mul 64, Add 64 = 480; Erf GELU: Div 64, Erf 4*64, Add 64, Mul 64, Mul 64 = 512;
    Tanh 256; Sigmoid 256; Greater 64; Where 64; ReduceMean(keepdims) 72 -> Expand 0; Add 64;
    Cast 64; Split 0; Concat 0; Slice 0; Dropout 64; LogSoftmax 320; Softmax 320; Unsqueeze 0;
    Squeeze 0; ReduceSum 64; ReduceMax 64 (axis 1: [2,8]); Reshape 0; Gemm with the tied
    embedding table 2*8*8*10 = 1280 (the table's bytes belong to the Gather).
    """
    n = []
    add = n.append
    add(helper.make_node("Gather", ["embed.weight", "tokens"], ["e"], name="/embed/Gather"))
    add(helper.make_node("Gather", ["pos.weight", "positions"], ["pe"], name="/embed/pos/Gather"))
    add(helper.make_node("Add", ["e", "pe"], ["x0"], name="/embed/Add"))
    add(helper.make_node("LayerNormalization", ["x0", "ln.weight", "ln.bias"], ["x1"],
                         name="/ln/LayerNormalization", axis=-1))
    # Decomposed layer norm (torch < 1.12 / opset < 17 style).
    add(helper.make_node("ReduceMean", ["x1"], ["m"], name="/ln2/ReduceMean", axes=[-1]))
    add(helper.make_node("Sub", ["x1", "m"], ["d"], name="/ln2/Sub"))
    add(const("/ln2/Constant", 2.0, np.float32))
    add(helper.make_node("Pow", ["d", "/ln2/Constant"], ["d2"], name="/ln2/Pow"))
    add(helper.make_node("ReduceMean", ["d2"], ["v"], name="/ln2/ReduceMean_1", axes=[-1]))
    add(const("/ln2/Constant_1", 1e-5, np.float32))
    add(helper.make_node("Add", ["v", "/ln2/Constant_1"], ["ve"], name="/ln2/Add"))
    add(helper.make_node("Sqrt", ["ve"], ["sd"], name="/ln2/Sqrt"))
    add(helper.make_node("Div", ["d", "sd"], ["xn"], name="/ln2/Div"))
    add(helper.make_node("Mul", ["xn", "ln2.weight"], ["xs"], name="/ln2/Mul"))
    add(helper.make_node("Add", ["xs", "ln2.bias"], ["x2"], name="/ln2/Add_1"))
    # GELU through Erf.
    add(const("/mlp/act/Constant", 1.4142135, np.float32))
    add(helper.make_node("Div", ["x2", "/mlp/act/Constant"], ["g1"], name="/mlp/act/Div"))
    add(helper.make_node("Erf", ["g1"], ["g2"], name="/mlp/act/Erf"))
    add(const("/mlp/act/Constant_1", 1.0, np.float32))
    add(helper.make_node("Add", ["g2", "/mlp/act/Constant_1"], ["g3"], name="/mlp/act/Add"))
    add(helper.make_node("Mul", ["x2", "g3"], ["g4"], name="/mlp/act/Mul"))
    add(const("/mlp/act/Constant_2", 0.5, np.float32))
    add(helper.make_node("Mul", ["g4", "/mlp/act/Constant_2"], ["x3"], name="/mlp/act/Mul_1"))
    add(helper.make_node("Tanh", ["x3"], ["x4"], name="/mlp/Tanh"))
    add(helper.make_node("Sigmoid", ["x4"], ["x5"], name="/mlp/Sigmoid"))
    # Masking and broadcasting.
    add(const("/mask/Constant", 0.0, np.float32))
    add(helper.make_node("Greater", ["x5", "/mask/Constant"], ["cond"], name="/mask/Greater"))
    add(helper.make_node("Where", ["cond", "x5", "/mask/Constant"], ["x6"], name="/mask/Where"))
    add(helper.make_node("ReduceMean", ["x6"], ["mm"], name="/mask/ReduceMean", axes=[-1], keepdims=1))
    add(const("/mask/Constant_1", [2, 4, 8]))
    add(helper.make_node("Expand", ["mm", "/mask/Constant_1"], ["mx"], name="/mask/Expand"))
    add(helper.make_node("Add", ["x6", "mx"], ["x7"], name="/mask/Add"))
    add(helper.make_node("Cast", ["x7"], ["x8"], name="/mask/Cast", to=F))
    # Data movement.
    add(const("/split/Constant", [4, 4]))
    add(helper.make_node("Split", ["x8", "/split/Constant"], ["s1", "s2"], name="/split/Split", axis=-1))
    add(helper.make_node("Concat", ["s2", "s1"], ["x9"], name="/split/Concat", axis=-1))
    add(const("/split/Constant_1", [0]))
    add(const("/split/Constant_2", [2]))
    add(const("/split/Constant_3", [2]))
    add(helper.make_node("Slice", ["x9", "/split/Constant_1", "/split/Constant_2", "/split/Constant_3"],
                         ["sl"], name="/split/Slice"))
    add(helper.make_node("Dropout", ["x9"], ["x10"], name="/head/Dropout"))
    add(helper.make_node("LogSoftmax", ["x10"], ["ls"], name="/head/LogSoftmax", axis=-1))
    add(helper.make_node("Softmax", ["ls"], ["x11"], name="/head/Softmax", axis=-1))
    add(const("/head/Constant", [0]))
    add(helper.make_node("Unsqueeze", ["x11", "/head/Constant"], ["u"], name="/head/Unsqueeze"))
    add(helper.make_node("Squeeze", ["u", "/head/Constant"], ["x12"], name="/head/Squeeze"))
    add(const("/head/Constant_1", [1]))
    add(helper.make_node("ReduceSum", ["x12", "/head/Constant_1"], ["rs"], name="/head/ReduceSum",
                         keepdims=0))
    add(helper.make_node("ReduceMax", ["x12"], ["rm"], name="/head/ReduceMax", axes=[1], keepdims=0))
    add(const("/lm/Constant", [8, 8]))
    add(helper.make_node("Reshape", ["x12", "/lm/Constant"], ["x13"], name="/lm/Reshape"))
    add(helper.make_node("Gemm", ["x13", "embed.weight"], ["logits"], name="/lm/Gemm", transB=1))
    inputs = [vi("tokens", I64, [2, 4]), vi("embed.weight", F, [10, 8]), vi("pos.weight", F, [4, 8]),
              vi("ln.weight", F, [8]), vi("ln.bias", F, [8]), vi("ln2.weight", F, [8]),
              vi("ln2.bias", F, [8])]
    inits = [init("positions", [0, 1, 2, 3], np.int64)]
    outputs = [vi("logits", F, [8, 10]), vi("sl", F, [2, 4, 2]), vi("rs", F, [2, 8]),
               vi("rm", F, [2, 8])]
    g = helper.make_graph(n, "ops_zoo", inputs, outputs, inits)
    return model(g, opset=17)


def conv_zoo():
    """Conv variants on x [1, 4, 8, 8]. Hand counts: depthwise Conv (group 4, dilation 2,
    pads 2, bias) 2*256*9 + 256 = 4864; ConvTranspose (W [4,2,2,2], group 2, stride 2, bias;
    out [1,4,16,16]) 2*256*8 + 1024 = 5120; InstanceNormalization 8*1024 = 8192; AveragePool
    2x2/2 256*4 = 1024; GlobalAveragePool 256 + 4 = 260; Sigmoid 4*4 = 16; Mul (broadcast
    [1,4,8,8] x [1,4,1,1]) 256; MaxPool 3x3/1 pad 1 256*9 = 2304; Tanh 4*256 = 1024;
    Flatten 0; MatMul [1,256] x [256,3] 1536. Total 24596.
    """
    n = [
        helper.make_node("Conv", ["x", "dw.weight", "dw.bias"], ["a"], name="/dw/Conv", group=4,
                         dilations=[2, 2], pads=[2, 2, 2, 2], kernel_shape=[3, 3]),
        helper.make_node("ConvTranspose", ["a", "up.weight", "up.bias"], ["b"], name="/up/ConvTranspose",
                         group=2, strides=[2, 2], kernel_shape=[2, 2]),
        helper.make_node("InstanceNormalization", ["b", "norm.weight", "norm.bias"], ["c"],
                         name="/norm/InstanceNormalization"),
        helper.make_node("AveragePool", ["c"], ["d"], name="/pool/AveragePool", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["d"], ["e"], name="/gap/GlobalAveragePool"),
        helper.make_node("Sigmoid", ["e"], ["f"], name="/act/Sigmoid"),
        helper.make_node("Mul", ["d", "f"], ["g"], name="/scale/Mul"),
        helper.make_node("MaxPool", ["g"], ["h"], name="/pool2/MaxPool", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("Tanh", ["h"], ["i"], name="/act2/Tanh"),
        helper.make_node("Flatten", ["i"], ["j"], name="/head/Flatten", axis=1),
        helper.make_node("MatMul", ["j", "head.weight"], ["y"], name="/head/MatMul"),
    ]
    inputs = [vi("x", F, [1, 4, 8, 8]), vi("dw.weight", F, [4, 1, 3, 3]), vi("dw.bias", F, [4]),
              vi("up.weight", F, [4, 2, 2, 2]), vi("up.bias", F, [4]), vi("norm.weight", F, [4]),
              vi("norm.bias", F, [4]), vi("head.weight", F, [256, 3])]
    g = helper.make_graph(n, "conv_zoo", inputs, [vi("y", F, [1, 3])])
    return model(g)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="tests/data/onnx", help="output directory")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)

    checked = {
        "conv_net": conv_net(), "matmul_symbolic": matmul_symbolic(), "recurrent": recurrent(),
        "ops_zoo": ops_zoo(), "conv_zoo": conv_zoo(), "missing_shape": missing_shape(),
    }
    for name, m in checked.items():
        onnx.checker.check_model(m)
        onnx.save(m, os.path.join(args.out, name + ".onnx"))
    # Not checked: a custom domain op, and opsets the checker of ONNX 1.12 rejects.
    onnx.save(unknown_op(), os.path.join(args.out, "unknown_op.onnx"))
    onnx.save(relu_opset(18), os.path.join(args.out, "opset_too_new.onnx"))
    onnx.save(opset6_conv_net(), os.path.join(args.out, "opset6_conv_net.onnx"))
    onnx.save(pass_through(), os.path.join(args.out, "pass_through.onnx"))
    onnx.save(training_adagrad(), os.path.join(args.out, "training_adagrad.onnx"))

    # Broken files: a truncated model and a text file.
    data = conv_net().SerializeToString()
    with open(os.path.join(args.out, "truncated.onnx"), "wb") as f:
        f.write(data[: len(data) // 2])
    with open(os.path.join(args.out, "not_onnx.onnx"), "w") as f:
        f.write("This is not an ONNX model, just text.\n")

    for name in sorted(os.listdir(args.out)):
        path = os.path.join(args.out, name)
        print(f"{os.path.getsize(path):8d}  {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
