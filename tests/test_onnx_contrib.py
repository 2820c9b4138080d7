"""onnxruntime's contrib ops (domain com.microsoft) and the ONNX ops of opset 23 that follow them
(RMSNormalization, RotaryEmbedding) through gpudml's sessions (gpudml/onnx/contrib.py), each in a
hand-built model against onnxruntime's CPU provider (which implements the contrib ops): every
attribute, the optional inputs and outputs; wrong shapes refused at construction with the node
and the rule named. The fixture `device` runs each test on both software adapters and both
adapter classes."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import gpudml.onnx as gonnx
from gpudml.errors import UnsupportedError
from gpudml.onnx import mapping

onnxruntime = pytest.importorskip("onnxruntime")

MS = "com.microsoft"
F = TensorProto.FLOAT


def _model(op, inputs, outputs, attrs=None, domain=MS, initializers=(), opset=23):
    """One node `op` reading `inputs` ({name: array} fed, or None for an omitted optional input)
    and writing `outputs` (names, "" for an omitted one)."""
    names = [name if value is not None else "" for name, value in inputs.items()]
    while names and not names[-1]:  # (trailing omitted inputs are left off)
        names.pop()
    node = helper.make_node(op, names, outputs, domain=domain, name=f"the_{op}", **(attrs or {}))
    ins = [helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape))
           for name, v in inputs.items() if v is not None and name not in initializers]
    inits = [onnx.numpy_helper.from_array(inputs[name], name) for name in initializers]
    outs = [helper.make_tensor_value_info(name, F, None) for name in outputs if name]
    graph = helper.make_graph([node], op, ins, outs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)],
                             ir_version=10)


def _feeds(inputs, initializers=()):
    return {k: v for k, v in inputs.items() if v is not None and k not in initializers}


def _check(device, model, feeds, atol=2e-5, rtol=2e-5):
    want = onnxruntime.InferenceSession(model.SerializeToString(),
                                        providers=["CPUExecutionProvider"]).run(None, feeds)
    got = gonnx.InferenceSession(model, device=device).run(None, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype, (g.dtype, w.dtype)
        assert list(g.shape) == list(w.shape), (g.shape, w.shape)
        if g.dtype.kind == "f":
            np.testing.assert_allclose(g, w, atol=atol, rtol=rtol)
        else:
            np.testing.assert_array_equal(g, w)
    return got


def _rng(seed=0):
    return np.random.default_rng(seed)


def _f(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


# ------------------------------------------------------------------------------ layer normalizations
@pytest.mark.parametrize("bias, beta, outputs", [
    (True, True, ["y", "mean", "inv", "sum"]),
    (False, True, ["y", "", "", "sum"]),
    (True, False, ["y"]),
    (False, False, ["y", "mean", "inv"]),
])
def test_skip_layer_normalization(device, bias, beta, outputs):
    """input + skip (+ bias) normalized with gamma (and beta), epsilon given; the optional mean,
    inv_std_var and input_skip_bias_sum; a rank-2 input."""
    r = _rng(1)
    shape = [2, 3, 8] if bias else [3, 8]
    ins = {"x": _f(r, *shape), "skip": _f(r, *shape), "gamma": _f(r, 8), "beta": _f(r, 8) if beta else None,
           "bias": _f(r, 8) if bias else None}
    _check(device, _model("SkipLayerNormalization", ins, outputs, {"epsilon": 1e-3}), _feeds(ins))


@pytest.mark.parametrize("bias", [True, False])
def test_skip_simplified_layer_normalization(device, bias):
    r = _rng(2)
    ins = {"x": _f(r, 2, 3, 16), "skip": _f(r, 2, 3, 16), "gamma": _f(r, 16), "bias": _f(r, 16) if bias else None}
    _check(device, _model("SkipSimplifiedLayerNormalization", ins, ["y", "", "inv", "sum"], {"epsilon": 1e-4}),
           _feeds(ins))


@pytest.mark.parametrize("axis", [-1, 1])
def test_simplified_layer_normalization(device, axis):
    """SimplifiedLayerNormalization in the ONNX domain, as onnxruntime's optimizer writes it (onnx has
    no schema for it): RMS over the axes from `axis` on, inv_std_var."""
    r = _rng(3)
    ins = {"x": _f(r, 2, 3, 8), "scale": _f(r, *([8] if axis == -1 else [3, 8]))}
    _check(device, _model("SimplifiedLayerNormalization", ins, ["y", "inv"], {"axis": axis, "epsilon": 1e-3},
                          domain="", opset=17), _feeds(ins))


def test_rms_normalization(device):
    r = _rng(4)
    ins = {"x": _f(r, 2, 4, 6), "scale": _f(r, 6)}
    _check(device, _model("RMSNormalization", ins, ["y"], {"epsilon": 1e-2}, domain=""), _feeds(ins))


@pytest.mark.parametrize("shape", [(2, 6, 3, 5), (1, 4, 7), (2, 6, 3, 2, 2)])
def test_group_normalization(device, shape):
    """ONNX GroupNormalization (opset 21: scale and bias per channel) against onnxruntime's CPU
    provider; ranks 3-5."""
    r = _rng(5)
    ins = {"x": _f(r, *shape), "scale": _f(r, shape[1]), "bias": _f(r, shape[1])}
    _check(device, _model("GroupNormalization", ins, ["y"], {"num_groups": 2, "epsilon": 1e-3}, domain=""),
           _feeds(ins), atol=1e-4, rtol=1e-4)


def _group_norm_numpy(x, gamma, beta, groups, eps, channels_last, activation):
    if channels_last:
        x = np.moveaxis(x, -1, 1)
    n, c = x.shape[:2]
    g = x.reshape(n, groups, -1).astype(np.float64)
    g = (g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps)
    y = g.reshape(x.shape) * gamma.reshape(c, *[1] * (x.ndim - 2)) + beta.reshape(c, *[1] * (x.ndim - 2))
    if activation:
        y = y / (1 + np.exp(-y))
    return (np.moveaxis(y, 1, -1) if channels_last else y).astype(np.float32)


@pytest.mark.parametrize("channels_last, activation", [(1, 1), (1, 0), (0, 1)])
def test_ms_group_norm(device, channels_last, activation):
    """com.microsoft GroupNorm (onnxruntime's CPU provider has no kernel for it: numpy is the
    reference): channels-last and channels-first, SiLU or none."""
    r = _rng(6)
    x = _f(r, 2, 3, 4, 8) if channels_last else _f(r, 2, 8, 3, 4)
    gamma, beta = _f(r, 8), _f(r, 8)
    ins = {"x": x, "gamma": gamma, "beta": beta}
    model = _model("GroupNorm", ins, ["y"], {"groups": 4, "epsilon": 1e-4, "channels_last": channels_last,
                                             "activation": activation})
    (got,) = gonnx.InferenceSession(model, device=device).run(None, _feeds(ins))
    want = _group_norm_numpy(x, gamma, beta, 4, 1e-4, channels_last, activation)
    np.testing.assert_allclose(got, want, atol=1e-4, rtol=1e-4)


def test_ms_group_norm_float16(device):
    """A float16 input with float32 gamma and beta (cast to the input's type, as the provider
    does); numpy in float64 is the reference, within float16's rounding of the result."""
    r = _rng(8)
    x, gamma, beta = _f(r, 1, 2, 3, 8).astype(np.float16), _f(r, 8), _f(r, 8)
    ins = {"x": x, "gamma": gamma, "beta": beta}
    (got,) = gonnx.InferenceSession(_model("GroupNorm", ins, ["y"], {"groups": 2, "activation": 1}),
                                    device=device).run(None, _feeds(ins))
    want = _group_norm_numpy(x.astype(np.float32), gamma, beta, 2, 1e-5, 1, 1)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float32), want, atol=1e-2, rtol=1e-2)


def test_group_norm_refused(device):
    """Channels that do not split into the groups: refused at construction, naming the node's op."""
    r = _rng(7)
    ins = {"x": _f(r, 1, 2, 2, 6), "gamma": _f(r, 6), "beta": _f(r, 6)}
    with pytest.raises(Exception, match="GroupNorm: 6 channels do not split into 4 groups"):
        gonnx.InferenceSession(_model("GroupNorm", ins, ["y"], {"groups": 4}), device=device)


@pytest.mark.parametrize("segments, mask, positions", [(True, True, False), (False, False, True)])
def test_embed_layer_normalization(device, segments, mask, positions):
    """Word + position + segment embeddings normalized; mask_index (the mask's sum per batch, zeros
    without one) and embedding_sum; position ids given or 0..S-1."""
    r = _rng(5)
    ins = {"ids": r.integers(0, 10, [2, 5]).astype(np.int32),
           "seg": r.integers(0, 2, [2, 5]).astype(np.int32) if segments else None,
           "word": _f(r, 10, 8), "pos": _f(r, 6, 8), "segemb": _f(r, 2, 8) if segments else None,
           "gamma": _f(r, 8), "beta": _f(r, 8),
           "mask": (r.random([2, 5]) < 0.7).astype(np.int32) if mask else None,
           "pids": r.integers(0, 6, [2, 5]).astype(np.int32) if positions else None}
    model = _model("EmbedLayerNormalization", ins, ["y", "mask_index", "sum"], {"epsilon": 1e-5})
    model.graph.output[1].type.tensor_type.elem_type = TensorProto.INT32
    _check(device, model, _feeds(ins))


# ------------------------------------------------------------------------------ rotary embedding
@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("layout", ["3d", "4d", "offset", "partial"])
def test_rotary_embedding(device, interleaved, layout):
    """com.microsoft's RotaryEmbedding: [B, S, hidden] with num_heads or [B, N, S, H]; position ids
    [B, S] or one offset; the whole head or its first rotary_embedding_dim dims; interleaved or halves."""
    r = _rng(6)
    attrs = {"interleaved": interleaved}
    half = 4
    if layout == "4d":
        x = _f(r, 2, 3, 4, 8)
    else:
        x = _f(r, 2, 4, 3 * (8 if layout != "partial" else 12))
        attrs["num_heads"] = 3
    if layout == "partial":
        attrs["rotary_embedding_dim"] = 8
    pos = (np.array([3], np.int64) if layout == "offset"
           else r.integers(0, 10, [2, 4]).astype(np.int64))
    ins = {"x": x, "pos": pos, "cos": _f(r, 10, half), "sin": _f(r, 10, half)}
    _check(device, _model("RotaryEmbedding", ins, ["y"], attrs), _feeds(ins))


@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("layout", ["3d", "4d", "offset"])
def test_rotary_embedding_constant_caches(device, interleaved, layout):
    """Caches that are initializers (as exported models have them), the whole head rotated:
    contrib.rotary_tables, one kernel where the position ids are fed (an offset: its CAST and
    ADD first), the results onnxruntime's."""
    r = _rng(8)
    attrs = {"interleaved": interleaved}
    x = _f(r, 2, 3, 4, 8) if layout == "4d" else _f(r, 2, 4, 3 * 8)
    if layout != "4d":
        attrs["num_heads"] = 3
    pos = np.array([3], np.int64) if layout == "offset" else r.integers(0, 10, [2, 4]).astype(np.int64)
    ins = {"x": x, "pos": pos, "cos": _f(r, 10, 4), "sin": _f(r, 10, 4)}
    model = _model("RotaryEmbedding", ins, ["y"], attrs, initializers=("cos", "sin"))
    _check(device, model, _feeds(ins, ("cos", "sin")))
    session = gonnx.InferenceSession(model, device=device)
    assert session.dispatch_count == (3 if layout == "offset" else 1)  # (offset: its CAST, ADD)


@pytest.mark.parametrize("interleaved", [0, 1])
def test_rotary_embedding_onnx(device, interleaved):
    """ONNX's RotaryEmbedding (opset 23): [B, S, hidden] with num_heads, partial rotation."""
    r = _rng(7)
    ins = {"x": _f(r, 1, 3, 2 * 8), "cos": _f(r, 6, 2), "sin": _f(r, 6, 2),
           "pos": r.integers(0, 6, [1, 3]).astype(np.int64)}
    _check(device, _model("RotaryEmbedding", ins, ["y"], {"interleaved": interleaved, "num_heads": 2,
                                                          "rotary_embedding_dim": 4}, domain=""), _feeds(ins))


# ------------------------------------------------------------------------------ activations and GEMM
@pytest.mark.parametrize("op, bias, attrs", [
    ("FastGelu", True, {}), ("FastGelu", False, {}), ("BiasGelu", True, {}), ("Gelu", False, {}),
    ("QuickGelu", False, {}), ("QuickGelu", False, {"alpha": -0.75}),
])
def test_gelus(device, op, bias, attrs):
    r = _rng(8)
    ins = {"x": _f(r, 2, 3, 8) * 3, "bias": _f(r, 8) if bias else None}
    _check(device, _model(op, ins, ["y"], attrs), _feeds(ins))


def _gelu(x):
    from math import erf, sqrt
    return x * 0.5 * (1 + np.vectorize(lambda v: erf(v / sqrt(2)))(x.astype(np.float64)))


def test_bias_add_and_bias_split_gelu(device):
    """BiasAdd and BiasSplitGelu (no kernel in onnxruntime's CPU provider): against float64 numpy."""
    r = _rng(9)
    x, bias, skip = _f(r, 2, 3, 8), _f(r, 8), _f(r, 2, 3, 8)
    ins = {"x": x, "bias": bias, "skip": skip}
    (y,) = gonnx.InferenceSession(_model("BiasAdd", ins, ["y"]), device=device).run(None, ins)
    np.testing.assert_allclose(y, x.astype(np.float64) + bias + skip, atol=1e-6)
    ins = {"x": x, "bias": bias}
    (y,) = gonnx.InferenceSession(_model("BiasSplitGelu", ins, ["y"]), device=device).run(None, ins)
    s = x.astype(np.float64) + bias
    np.testing.assert_allclose(y, s[..., :4] * _gelu(s[..., 4:]), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("attrs, a_shape, b_shape", [
    ({"alpha": 0.5, "transB": 1}, [2, 3, 4], [2, 5, 4]),
    ({"transA": 1}, [4, 3], [4, 5]),
    ({"transBatchB": 1, "alpha": 2.0}, [3, 2, 4], [4, 3, 5]),
    ({"transBatchA": 1, "transA": 1}, [4, 2, 3], [2, 4, 5]),
    ({"transBatchA": 1, "transBatchB": 1}, [3, 2, 2, 4], [4, 2, 2, 5]),
])
def test_fused_matmul(device, attrs, a_shape, b_shape):
    r = _rng(10)
    ins = {"a": _f(r, *a_shape), "b": _f(r, *b_shape)}
    _check(device, _model("FusedMatMul", ins, ["y"], attrs), _feeds(ins), atol=1e-4, rtol=1e-4)


# ------------------------------------------------------------------------------ graphs and refusals
def test_contrib_in_a_graph_fuses_with_its_neighbours(device):
    """A contrib op beside ONNX ops in one model: FastGelu's element-wise chain fuses with the Add
    before it (fewer dispatches than nodes' operators unfused), the same result as onnxruntime."""
    r = _rng(11)
    x, w = _f(r, 2, 8), _f(r, 8, 8)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]),
             helper.make_node("FastGelu", ["h"], ["g"], domain=MS),
             helper.make_node("Add", ["g", "x"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [2, 8])],
                              [helper.make_tensor_value_info("y", F, [2, 8])],
                              [onnx.numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    _check(device, model, {"x": x}, atol=1e-4, rtol=1e-4)
    fused = gonnx.InferenceSession(model, device=device)
    unfused = gonnx.InferenceSession(model, device=device, fuse=False)
    fused.run(None, {"x": x})
    unfused.run(None, {"x": x})
    assert fused.dispatch_count < unfused.dispatch_count, (fused.dispatch_count, unfused.dispatch_count)


@pytest.mark.any_class
@pytest.mark.parametrize("op, ins, attrs, rule", [
    ("SkipLayerNormalization", {"x": [2, 3, 8], "skip": [2, 3, 6], "gamma": [8]}, {}, "skip [2, 3, 6]"),
    ("SkipLayerNormalization", {"x": [2, 3, 8], "skip": [2, 3, 8], "gamma": [4]}, {}, "gamma [4]"),
    ("RotaryEmbedding", {"x": [1, 2, 12], "pos": [1, 2], "cos": [4, 2], "sin": [4, 2]}, {"num_heads": 5},
     "hidden size 12 is no multiple"),
    ("RotaryEmbedding", {"x": [1, 2, 8], "pos": [1, 3], "cos": [4, 2], "sin": [4, 2]}, {"num_heads": 2},
     "position_ids [1, 3]"),
    ("BiasSplitGelu", {"x": [1, 2, 7], "bias": [7]}, {}, "that width even"),
    ("QAttention", {"x": [1, 2, 8]}, {}, "weight, input_scale, weight_scale missing"),
])
def test_bad_input_is_refused_at_construction(device, op, ins, attrs, rule):
    """Wrong shapes: refused when the session is built, the node and the rule named."""
    arrays = {k: (np.zeros(v, np.int64) if k == "pos" else np.zeros(v, np.float32)) for k, v in ins.items()}
    with pytest.raises(UnsupportedError) as info:
        gonnx.InferenceSession(_model(op, arrays, ["y"], attrs), device=device)
    assert f"the_{op}" in str(info.value) and rule in str(info.value), str(info.value)


@pytest.mark.any_class
def test_rows_and_refusals():
    assert {"SkipLayerNormalization", "RotaryEmbedding", "FusedMatMul"} <= set(mapping.CONTRIB)
    assert mapping.row("RotaryEmbedding", MS) is not mapping.row("RotaryEmbedding", "")
    assert mapping.refusal("SkipLayerNormalization", MS, 17) is None
    assert "domain 'com.example'" in mapping.refusal("Foo", "com.example", 17)
    assert "SimplifiedLayerNormalization" in mapping.BY_TYPE and mapping.row("Gelu", MS).domain == MS


def test_rms_forms_run_mean_variance_normalization2_and_below_fl_6_3(adapter, monkeypatch):
    """The RMS forms record MEAN_VARIANCE_NORMALIZATION2 (UseMean FALSE) as the provider does; on a
    device below FL 6_3 (no version 2) the same results from REDUCE and element-wise operators."""
    import gpudml as dml
    from gpudml import functional

    calls = []
    form = functional.FUNCTIONS["mean_variance_normalization2"]

    def counted(*args, **kwargs):
        calls.append(kwargs.get("use_mean"))
        return form(*args, **kwargs)

    monkeypatch.setitem(functional.FUNCTIONS, "mean_variance_normalization2", counted)
    r = _rng(12)
    ins = {"x": _f(r, 2, 3, 8), "skip": _f(r, 2, 3, 8), "gamma": _f(r, 8)}
    model = _model("SkipSimplifiedLayerNormalization", ins, ["y"], {"epsilon": 1e-4})
    _check(dml.Device(adapter=adapter, feature_level="FL_6_4"), model, _feeds(ins))
    assert calls == [False]
    _check(dml.Device(adapter=adapter, feature_level="FL_6_2"), model, _feeds(ins))
    assert calls == [False]  # (below FL 6_3: not called)


@pytest.mark.parametrize("op", ["SkipSimplifiedLayerNormalization", "SkipLayerNormalization", "RotaryEmbedding"])
def test_float16(device, op):
    """float16 models (onnxruntime's CPU provider computes these in float32 and rounds): within
    float16's rounding of the result and of the sums, a few ULP."""
    r = _rng(13)
    h = np.float16
    if op == "RotaryEmbedding":
        ins = {"x": _f(r, 1, 3, 16).astype(h), "pos": np.array([[0, 2, 4]], np.int64), "cos": _f(r, 6, 4).astype(h),
               "sin": _f(r, 6, 4).astype(h)}
        attrs = {"num_heads": 2}
    else:
        ins = {"x": _f(r, 2, 3, 16).astype(h), "skip": _f(r, 2, 3, 16).astype(h), "gamma": _f(r, 16).astype(h)}
        attrs = {"epsilon": 1e-4}
    model = _model(op, ins, ["y"], attrs)
    model.graph.output[0].type.tensor_type.elem_type = TensorProto.FLOAT16
    _check(device, model, _feeds(ins), atol=1e-2, rtol=1e-2)


@pytest.mark.parametrize("cond", [True, False])
def test_contrib_ops_in_if_branches(device, cond):
    """Contrib nodes inside an If's branches (a graph input as condition: the taken branch recorded)."""
    then_g = helper.make_graph([helper.make_node("QuickGelu", ["x"], ["t"], domain=MS)], "then", [],
                               [helper.make_tensor_value_info("t", F, [2, 4])])
    else_g = helper.make_graph([helper.make_node("FastGelu", ["x"], ["e"], domain=MS)], "else", [],
                               [helper.make_tensor_value_info("e", F, [2, 4])])
    node = helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                                            helper.make_tensor_value_info("x", F, [2, 4])],
                              [helper.make_tensor_value_info("y", F, [2, 4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)])
    _check(device, model, {"c": np.array(cond), "x": _f(_rng(14), 2, 4)})


# ------------------------------------------------------------------------------ folding
def test_contrib_node_of_constants_folds_when_the_graph_is_built(device):
    """A contrib node whose inputs are all constants (a SkipLayerNormalization of initializers
    and of a Constant-fed Add: DETR's first decoder layer after the transformer optimizer) runs
    once when the graph is built, as onnxruntime's constant folding runs it with its CPU kernel:
    each run dispatches only the Add that reads the graph input; onnxruntime's values. A
    DequantizeLinear of constants stays on the graph, as onnxruntime leaves it to its QDQ
    handling."""
    r = _rng(5)
    consts = {"x": _f(r, 2, 8), "skip": _f(r, 2, 8), "gamma": _f(r, 8), "beta": _f(r, 8)}
    nodes = [helper.make_node("Add", ["x", "skip"], ["xs"]),
             helper.make_node("SkipLayerNormalization", ["xs", "skip", "gamma", "beta"], ["norm"], domain=MS,
                              epsilon=1e-5),
             helper.make_node("DequantizeLinear", ["q", "scale"], ["dq"], domain=MS),
             helper.make_node("Add", ["norm", "a"], ["sum"]), helper.make_node("Add", ["dq", "a"], ["dq_sum"])]
    inits = [onnx.numpy_helper.from_array(v, k) for k, v in consts.items()]
    inits += [onnx.numpy_helper.from_array(r.integers(0, 255, (2, 8), dtype=np.uint8), "q"),
              onnx.numpy_helper.from_array(np.float32(0.5), "scale")]
    graph = helper.make_graph(nodes, "fold", [helper.make_tensor_value_info("a", F, [2, 8])],
                              [helper.make_tensor_value_info(n, F, None) for n in ("sum", "dq_sum")], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)],
                              ir_version=10)
    _check(device, model, {"a": _f(r, 2, 8)})
    session = gonnx.InferenceSession(model, device=device, fuse=False)
    assert session.dispatch_count == 3  # the two Adds and the DequantizeLinear; the SkipLayerNormalization folded


def test_rotary_tables_once_per_graph(device):
    """Two RotaryEmbedding nodes on the same constant caches (a layer's query and key, every
    layer's): one pair of host tables on the graph (contrib.rotary_tables), onnxruntime's results."""
    r = _rng(10)
    ins = {"x": _f(r, 2, 4, 3 * 8), "pos": r.integers(0, 10, [2, 4]).astype(np.int64), "cos": _f(r, 10, 4),
           "sin": _f(r, 10, 4), "k": _f(r, 2, 4, 3 * 8)}
    node = onnx.helper.make_node
    nodes = [node("RotaryEmbedding", ["x", "pos", "cos", "sin"], ["y"], domain="com.microsoft", num_heads=3),
             node("RotaryEmbedding", ["k", "pos", "cos", "sin"], ["z"], domain="com.microsoft", num_heads=3)]
    graph = onnx.helper.make_graph(
        nodes, "g", [onnx.helper.make_tensor_value_info(n, onnx.helper.np_dtype_to_tensor_dtype(ins[n].dtype),
                                                        ins[n].shape) for n in ("x", "pos", "k")],
        [onnx.helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, None) for n in ("y", "z")],
        [onnx.numpy_helper.from_array(ins[n], n) for n in ("cos", "sin")])
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17),
                                                         onnx.helper.make_opsetid("com.microsoft", 1)])
    feeds = {n: ins[n] for n in ("x", "pos", "k")}
    _check(device, model, feeds)
    session = gonnx.InferenceSession(model, device=device)
    session.run(None, feeds)
    table_bytes = 10 * 8 * 4
    assert sum(a.nbytes == table_bytes for a in session._last.graph.constants.values()) == 2
