"""Small ONNX networks with random weights, built with onnx.helper: the models the tests
compare with onnxruntime and the bench times (W16). Each returns (ModelProto, feeds)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17

class _Builder:
    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits = [], []
        self.count = 0

    def weight(self, shape, scale=None) -> str:
        scale = scale if scale is not None else 1.0 / np.sqrt(max(1, int(np.prod(shape[1:])) or shape[0]))
        return self.const(self.rng.standard_normal(shape) * scale)

    def const(self, array, dtype=np.float32) -> str:
        name = f"c{len(self.inits)}"
        self.inits.append(numpy_helper.from_array(np.asarray(array, dtype=dtype), name))
        return name

    def node(self, op, inputs, outputs=1, **attrs):
        self.count += 1
        names = [f"{op.lower()}{self.count}_{k}" for k in range(outputs)]
        self.nodes.append(helper.make_node(op, inputs, names, name=f"{op}_{self.count}", **attrs))
        return names[0] if outputs == 1 else names

    def model(self, name, inputs, outputs) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = 8
        onnx.checker.check_model(model)
        return model


def _out(name: str, shape) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def mlp(batch="N", features=64, hidden=128, classes=10, seed=0, batch_size=8):
    """Flatten, Gemm + Relu, MatMul + Add + Relu, Gemm, Softmax; a dynamic batch."""
    b = _Builder(seed)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 4, features // 4])
    h = b.node("Flatten", ["x"], axis=1)
    h = b.node("Relu", [b.node("Gemm", [h, b.weight([hidden, features]), b.weight([hidden], 0.1)], transB=1)])
    h = b.node("Relu", [b.node("Add", [b.node("MatMul", [h, b.weight([hidden, hidden])]), b.weight([hidden], 0.1)])])
    b.node("Softmax", [b.node("Gemm", [h, b.weight([hidden, classes]), b.weight([classes], 0.1)])], axis=-1)
    b.nodes[-1].output[0] = "y"
    model = b.model("mlp", [x], [_out("y", [batch, classes])])
    return model, {"x": b.rng.standard_normal((batch_size, 4, features // 4)).astype(np.float32)}


def transformer(seq=16, dim=32, heads=2, seed=0, layer_norm=True):
    """One encoder block: LayerNormalization, Q/K/V MatMul, heads by Reshape + Transpose,
    scaled Softmax attention, output projection, residuals, a Gelu (erf form) MLP.
    `layer_norm=False`: the same block without its two LayerNormalizations (attention only)."""
    b = _Builder(seed)
    d = dim // heads
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, dim])
    ln = b.node("LayerNormalization", ["x", b.const(1 + 0.1 * b.rng.standard_normal(dim)),
                                       b.const(0.1 * b.rng.standard_normal(dim))], axis=-1, epsilon=1e-5) \
        if layer_norm else "x"
    split_heads = b.const([1, seq, heads, d], np.int64)

    def project(src, perm):
        p = b.node("Add", [b.node("MatMul", [src, b.weight([dim, dim])]), b.weight([dim], 0.1)])
        return b.node("Transpose", [b.node("Reshape", [p, split_heads])], perm=perm)
    q, k, v = project(ln, [0, 2, 1, 3]), project(ln, [0, 2, 3, 1]), project(ln, [0, 2, 1, 3])
    scores = b.node("Mul", [b.node("MatMul", [q, k]), b.const(1 / np.sqrt(d))])
    attn = b.node("MatMul", [b.node("Softmax", [scores], axis=-1), v])
    merged = b.node("Reshape", [b.node("Transpose", [attn], perm=[0, 2, 1, 3]), b.const([1, seq, dim], np.int64)])
    h = b.node("Add", ["x", b.node("Add", [b.node("MatMul", [merged, b.weight([dim, dim])]), b.weight([dim], 0.1)])])
    ln2 = b.node("LayerNormalization", [h, b.const(np.ones(dim)), b.const(np.zeros(dim))], axis=-1) \
        if layer_norm else h
    up = b.node("Add", [b.node("MatMul", [ln2, b.weight([dim, 4 * dim])]), b.weight([4 * dim], 0.1)])
    gelu = b.node("Mul", [b.node("Mul", [up, b.node("Add", [b.node("Erf", [b.node("Div", [up, b.const(np.sqrt(2))])]),
                                                           b.const(1.0)])]), b.const(0.5)])
    b.node("Add", [h, b.node("MatMul", [gelu, b.weight([4 * dim, dim])])])
    b.nodes[-1].output[0] = "y"
    model = b.model("transformer", [x], [_out("y", [1, seq, dim])])
    return model, {"x": b.rng.standard_normal((1, seq, dim)).astype(np.float32)}


def _conv_bn(b, x, cin, cout, k, stride, relu=True):
    y = b.node("Conv", [x, b.weight([cout, cin, k, k])], kernel_shape=[k, k], strides=[stride, stride],
               pads=[k // 2] * 4)
    y = b.node("BatchNormalization", [y, b.const(1 + 0.1 * b.rng.standard_normal(cout)),
                                      b.const(0.1 * b.rng.standard_normal(cout)),
                                      b.const(0.1 * b.rng.standard_normal(cout)),
                                      b.const(1 + 0.1 * b.rng.random(cout))], epsilon=1e-5)
    return b.node("Relu", [y]) if relu else y


def cnn(size=16, seed=0):
    """Conv + BatchNorm + Relu twice, MaxPool, GlobalAveragePool, Flatten, Gemm."""
    b = _Builder(seed)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])
    h = _conv_bn(b, "x", 3, 8, 3, 1)
    h = b.node("MaxPool", [h], kernel_shape=[2, 2], strides=[2, 2])
    h = _conv_bn(b, h, 8, 16, 3, 1)
    h = b.node("Flatten", [b.node("GlobalAveragePool", [h])])
    b.node("Gemm", [h, b.weight([10, 16]), b.weight([10], 0.1)], transB=1)
    b.nodes[-1].output[0] = "y"
    model = b.model("cnn", [x], [_out("y", [1, 10])])
    return model, {"x": b.rng.standard_normal((1, 3, size, size)).astype(np.float32)}


def resnet18(size=32, width=8, classes=10, seed=0):
    """ResNet-18's shape (a 7x7 stem, max pooling, 4 stages of 2 basic blocks, global
    average pooling, a classifier), `width` channels in the first stage."""
    b = _Builder(seed)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])
    h = _conv_bn(b, "x", 3, width, 7, 2)
    h = b.node("MaxPool", [h], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = width
    for stage in range(4):
        cout = width * 2 ** stage
        for block in range(2):
            stride = 2 if stage and not block else 1
            y = _conv_bn(b, h, cin, cout, 3, stride)
            y = _conv_bn(b, y, cout, cout, 3, 1, relu=False)
            skip = h if stride == 1 and cin == cout else _conv_bn(b, h, cin, cout, 1, stride, relu=False)
            h = b.node("Relu", [b.node("Add", [y, skip])])
            cin = cout
    h = b.node("Flatten", [b.node("GlobalAveragePool", [h])])
    b.node("Gemm", [h, b.weight([classes, cin]), b.weight([classes], 0.1)], transB=1)
    b.nodes[-1].output[0] = "y"
    model = b.model("resnet18", [x], [_out("y", [1, classes])])
    return model, {"x": b.rng.standard_normal((1, 3, size, size)).astype(np.float32)}


def resnet50(size=64, width=16, classes=10, seed=0):
    """ResNet-50's shape (a 7x7 stem, max pooling, 4 stages of 3, 4, 6, 3 bottleneck blocks
    of 1x1, 3x3, 1x1 convolutions expanding 4x, global average pooling, a classifier),
    `width` channels in the first stage's 3x3 convolutions (ResNet-50's is 64): the layers
    and kernels of the real network at a fraction of its arithmetic (the model cold start
    bench, gpudml/bench/model_start.py)."""
    b = _Builder(seed)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, size, size])
    h = _conv_bn(b, "x", 3, width, 7, 2)
    h = b.node("MaxPool", [h], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = width
    for stage, blocks in enumerate((3, 4, 6, 3)):
        mid = width * 2 ** stage
        for block in range(blocks):
            stride = 2 if stage and not block else 1
            y = _conv_bn(b, h, cin, mid, 1, 1)
            y = _conv_bn(b, y, mid, mid, 3, stride)
            y = _conv_bn(b, y, mid, 4 * mid, 1, 1, relu=False)
            skip = h if block else _conv_bn(b, h, cin, 4 * mid, 1, stride, relu=False)
            h = b.node("Relu", [b.node("Add", [y, skip])])
            cin = 4 * mid
    h = b.node("Flatten", [b.node("GlobalAveragePool", [h])])
    b.node("Gemm", [h, b.weight([classes, cin]), b.weight([classes], 0.1)], transB=1)
    b.nodes[-1].output[0] = "y"
    model = b.model("resnet50", [x], [_out("y", [1, classes])])
    return model, {"x": b.rng.standard_normal((1, 3, size, size)).astype(np.float32)}


def attention(seed=0):
    """The encoder block without its LayerNormalizations."""
    return transformer(seed=seed, layer_norm=False)


MODELS = {"mlp": mlp, "attention": attention, "transformer": transformer, "cnn": cnn, "resnet18": resnet18}

__all__ = ["MODELS", "attention", "cnn", "mlp", "resnet18", "resnet50", "transformer"]
