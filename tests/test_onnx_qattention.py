"""com.microsoft QAttention (gpudml/onnx/attention.py) and QEmbedLayerNormalization
(gpudml/onnx/quantized.py) against onnxruntime's CPU provider: QAttention node
by node (uint8 input; int8 and uint8 weights with per-tensor and per-column scales and zero
points; mask_index of each form the provider takes; unidirectional; past and present), the
int8 input only DirectML's provider takes (against onnxruntime's float Attention of the
dequantized input and weights), what the mapping refuses, and a BERT fused by
onnxruntime.transformers.optimizer and quantized by quantize_dynamic
(tests/data/models/quantized/bert_qattention*.onnx.gz), under both adapter classes."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import gpudml as dml
import gpudml.onnx as gonnx
from gpudml.errors import UnsupportedError
from gpudml.onnx.session import TOLERANCE

ort = pytest.importorskip("onnxruntime")

_TYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float16): TensorProto.FLOAT16,
          np.dtype(np.int32): TensorProto.INT32,
          np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int8): TensorProto.INT8}
B, S, W, N = 2, 5, 12, 3  # batch, sequence, input width, heads (hidden 12: head size 4)
H = W // N
_DEVICES: dict = {}


@pytest.fixture(params=["cpu", "gpu"])
def classed(request, device):
    """The test's adapter under each adapter class (gpudml's two strategies)."""
    key = (device.adapter_name, request.param)
    if key not in _DEVICES:
        _DEVICES[key] = dml.Device(adapter=device.adapter_name, adapter_class=request.param)
    return _DEVICES[key]


def _model(op: str, inputs: dict, outputs: list[str], attrs: dict, constants=()):
    """One node (domain com.microsoft for QAttention and Attention); `inputs` name -> array
    (None: an omitted optional input), those named in `constants` as initializers."""
    names = [n if a is not None else "" for n, a in inputs.items()]
    node = helper.make_node(op, names, outputs, domain="com.microsoft", **attrs)
    given = {n: a for n, a in inputs.items() if a is not None}
    graph = helper.make_graph(
        [node], op, [helper.make_tensor_value_info(n, _TYPES[a.dtype], list(a.shape)) for n, a in given.items()
                     if n not in constants],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
        [numpy_helper.from_array(given[n], n) for n in constants if n in given])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    return model, {n: a for n, a in given.items() if n not in constants}


def _ort(model, feeds):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)


def _close(got, want, tolerance=TOLERANCE):
    """Within `tolerance` of the largest reference magnitude (the session's float32 bound: the
    integer sums are exact, the rescale and the attention float32, in another order than
    onnxruntime's)."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        w = w.astype(np.float64)
        np.testing.assert_allclose(g.astype(np.float64), w, rtol=0, atol=tolerance * max(np.abs(w).max(), 1e-30))


def _inputs(weight=np.int8, per_column=False, seed=0, input_type=np.uint8, seq=S):
    """QAttention's inputs: the 8-bit input and weights over their whole ranges, a bias, the
    scales and zero points (per column: [3 hidden] each)."""
    rng = np.random.default_rng(seed)
    info_x, info_w = np.iinfo(input_type), np.iinfo(weight)
    cols = 3 * W
    return {
        "input": rng.integers(info_x.min, info_x.max + 1, (B, seq, W)).astype(input_type),
        "weight": rng.integers(info_w.min, info_w.max + 1, (W, cols)).astype(weight),
        "bias": rng.standard_normal(cols).astype(np.float32) * 0.1,
        "input_scale": np.array(0.013, np.float32),
        "weight_scale": (rng.uniform(0.002, 0.006, cols) if per_column else np.array(0.004)).astype(np.float32),
        "mask_index": None,
        "input_zero_point": np.array(info_x.min + 120 if input_type == np.uint8 else 3, input_type),
        "weight_zero_point": (rng.integers(-9, 10, cols) + (128 if weight == np.uint8 else 0)).astype(weight)
        if per_column else np.array(131 if weight == np.uint8 else -2, weight),
    }


_CONSTANTS = ("weight", "bias", "weight_scale", "weight_zero_point")


def _run(inputs, device, attrs=None, outputs=("output",), reference=None):
    """gpudml's session against onnxruntime's on the same node (or on `reference`'s inputs)."""
    attrs = {"num_heads": N, **(attrs or {})}
    model, feeds = _model("QAttention", inputs, list(outputs), attrs, _CONSTANTS)
    want = _ort(*_model("QAttention", reference or inputs, list(outputs), attrs, _CONSTANTS))
    _close(gonnx.InferenceSession(model, device=device).run(None, feeds), want)


MASKS = {
    "none": None,
    "key lengths [B]": np.array([5, 3], np.int32),
    "ends and starts [2B]": np.array([5, 4, 0, 1], np.int32),
    "raw [B, T]": np.array([[1, 1, 1, 1, 1], [1, 1, 0, 1, 0]], np.int32),
    "raw [B, S, T]": (np.random.default_rng(3).random((B, S, S)) > 0.3).astype(np.int32),
    "max [B, 1, M, M]": (np.random.default_rng(4).random((B, 1, 8, 8)) > 0.3).astype(np.int32),
}


@pytest.mark.parametrize("weight", [np.int8, np.uint8])
@pytest.mark.parametrize("mask", MASKS)
def test_masks_and_weight_types(mask, weight, device):
    """Each mask_index form with int8 weights (quantize_dynamic's) and uint8 weights (one type
    with the input: MATRIX_MULTIPLY_INTEGER_TO_FLOAT itself); the 4-D [B, 1, M, M] mask, which
    onnxruntime's CPU kernel does not run, against its [B, S, S] corner there (what the
    provider's SLICE1 reads)."""
    inputs = _inputs(weight)
    inputs["mask_index"] = MASKS[mask]
    corner = {**inputs, "mask_index": MASKS[mask][:, 0, :S, :S]} if mask.startswith("max") else None
    _run(inputs, device, reference=corner)


@pytest.mark.parametrize("weight", [np.int8, np.uint8])
def test_per_column_weight_scales_and_zero_points(weight, classed):
    """weight_scale and weight_zero_point of [3 hidden]: one per column, under both adapter
    classes; the scale and mask_filter_value attributes."""
    inputs = _inputs(weight, per_column=True, seed=1)
    inputs["mask_index"] = MASKS["key lengths [B]"]
    _run(inputs, classed)
    _run(inputs, classed, {"scale": 0.3, "mask_filter_value": -500.0})


def test_input_scale_and_zero_point_as_graph_inputs(device):
    """input_scale and input_zero_point computed at run time (quantize_dynamic's
    DynamicQuantizeLinear feeds them), the weights' per column; no input zero point: 0."""
    inputs = _inputs(np.int8, per_column=True, seed=2)
    _run(inputs, device)
    inputs["input_zero_point"] = None
    _run(inputs, device)


@pytest.mark.parametrize("past", [0, 3])
def test_unidirectional(past, classed):
    """unidirectional=1 (no mask_index: the provider refuses both): key j seen by query i where
    j <= past + i, onnxruntime's causal mask; with a past [2, B, N, P, H], the present."""
    inputs = _inputs(np.int8, seed=3)
    outputs = ("output",)
    if past:
        inputs["past"] = np.random.default_rng(5).standard_normal((2, B, N, past, H)).astype(np.float32)
        outputs = ("output", "present")
    _run(inputs, classed, {"unidirectional": 1}, outputs)


@pytest.mark.parametrize("mask", ["none", "raw [B, T]", "key lengths [B]"])
def test_past_and_present(mask, device):
    """past [2, B, N, P, H] before the new keys and values; present [2, B, N, P + S, H]; a raw
    mask over the P + S keys, key lengths counted over them."""
    past = 2
    inputs = _inputs(np.uint8, seed=4, seq=3)
    inputs["mask_index"] = {"none": None, "raw [B, T]": np.array([[1, 0, 1, 1, 1], [1, 1, 1, 1, 0]], np.int32),
                            "key lengths [B]": np.array([5, 4], np.int32)}[mask]
    inputs["past"] = np.random.default_rng(6).standard_normal((2, B, N, past, H)).astype(np.float32)
    _run(inputs, device, outputs=("output", "present"))


def test_present_without_past(device):
    """present wanted without a past: the new keys and values, [2, B, N, S, H]."""
    _run(_inputs(np.int8, seed=5), device, outputs=("output", "present"))


def _dequantized_attention(inputs):
    """Attention (float, onnxruntime's CPU kernel) of the dequantized input and weights: the
    reference for an int8 input, which onnxruntime's CPU QAttention does not take."""
    x = (inputs["input"].astype(np.float32) - inputs["input_zero_point"].astype(np.float32)) * inputs["input_scale"]
    w = (inputs["weight"].astype(np.float32) - inputs["weight_zero_point"].astype(np.float32)) \
        * inputs["weight_scale"]
    return _model("Attention", {"input": x.astype(np.float32), "weights": w.astype(np.float32),
                                "bias": inputs["bias"], "mask_index": inputs["mask_index"]},
                  ["output"], {"num_heads": N}, ("weights", "bias"))


@pytest.mark.parametrize("weight", [np.int8, np.uint8])
def test_int8_input(weight, device):
    """An int8 input (DirectML's provider takes INT8 or UINT8; onnxruntime's CPU kernel UINT8
    only): against onnxruntime's float Attention of the dequantized input and weights."""
    inputs = _inputs(weight, per_column=weight == np.int8, seed=6, input_type=np.int8)
    inputs["mask_index"] = MASKS["raw [B, T]"]
    model, feeds = _model("QAttention", inputs, ["output"], {"num_heads": N}, ("weight", "bias"))
    _close(gonnx.InferenceSession(model, device=device).run(None, feeds), _ort(*_dequantized_attention(inputs)))


REFUSED = {
    "unidirectional with a mask": ({"unidirectional": 1}, {"mask_index": MASKS["key lengths [B]"]},
                                   "unidirectional=1 with a mask_index"),
    "do_rotary": ({"do_rotary": 1}, {}, "do_rotary=1"),
    "past_present_share_buffer": ({"past_present_share_buffer": 1}, {}, "past_present_share_buffer=1"),
    "mask of 3B + 2": ({}, {"mask_index": np.array([5, 5, 0, 0, 0, 5, 0, 0], np.int32)},
                       "a 1-D mask index has B or 2B elements (B = 2)"),
    "weights not 3 x hidden": ({}, {"weight": np.zeros((W, 35), np.int8), "bias": np.zeros(35, np.float32)},
                               "[W, 3 hidden] expected"),
    "heads not dividing": ({"num_heads": 5}, {}, "num_heads 5 must be at least 1 and divide the hidden size 12"),
    "raw mask of another key count": ({}, {"mask_index": np.ones((B, 4), np.int32)},
                                      "mask_tensor.sizes [2, 1, 1, 4] must broadcast to [2, 3, 5, 5]"),
    "float weights": ({}, {"weight": np.zeros((W, 3 * W), np.float32)}, "weight of float32: INT8 or UINT8"),
    "no weight_scale": ({}, {"weight_scale": None}, "weight_scale missing"),
    "per-row input scale": ({}, {"input_scale": np.full(2, 0.01, np.float32)}, "input_scale [2]: one of [] or [1]"),
    "past of another head size": ({}, {"past": np.zeros((2, B, N, 2, 5), np.float32)},
                                  "past [2, 2, 3, 2, 5]: [2, B, N, P, H] = [2, 2, 3, P, 4] expected"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_refused_at_construction(case, device):
    """What the provider's support query refuses (and shapes QAttention's schema rules out):
    an UnsupportedError naming the node and the rule, when the session is built."""
    attrs, changes, rule = REFUSED[case]
    inputs = {**_inputs(np.int8), **changes}
    model, _ = _model("QAttention", inputs, ["output"], {"num_heads": N, **attrs}, ("weight", "bias"))
    model.graph.node[0].name = "qkv0"
    with pytest.raises(UnsupportedError) as info:
        gonnx.InferenceSession(model, device=device)
    assert "qkv0" in str(info.value) and "QAttention" in str(info.value) and rule in str(info.value)


@pytest.mark.parametrize("name, scales, embedding", [
    ("bert_qattention", [], "QEmbedLayerNormalization"),
    ("bert_qattention_per_channel", [3 * 32], "EmbedLayerNormalization"),
])
def test_quantized_bert(name, scales, embedding, classed):
    """bert_opt.onnx (Attention fused by onnxruntime.transformers.optimizer) through
    quantize_dynamic (Attention -> QAttention, MatMul -> MatMulInteger; scripts/export_quantized.py):
    the tool's defaults (int8 weights per tensor, the embedding a QEmbedLayerNormalization), and
    uint8 weights per column with the embedding float; within the session's tolerance of
    onnxruntime's CPU provider, both adapter classes, a padded batch (the embedding's mask
    index: key lengths)."""
    path = Path(__file__).parent / "data" / "models" / "quantized" / f"{name}.onnx.gz"
    model = onnx.load_from_string(gzip.decompress(path.read_bytes()))
    nodes = [n for n in model.graph.node if n.op_type == "QAttention"]
    initializers = {i.name: list(i.dims) for i in model.graph.initializer}
    assert len(nodes) == 2 and all(initializers[n.input[4]] == scales for n in nodes)
    assert embedding in {n.op_type for n in model.graph.node}
    rng = np.random.default_rng(0)
    feeds = {"input_ids": rng.integers(0, 96, (2, 7)).astype(np.int64), "attention_mask": np.ones((2, 7), np.int64),
             "token_type_ids": np.zeros((2, 7), np.int64)}
    feeds["attention_mask"][1, 5:] = 0
    _close(gonnx.InferenceSession(model, device=classed).run(None, feeds), _ort(model, feeds))


@pytest.mark.parametrize("weight", [np.int8, np.uint8])
def test_float16(weight, device):
    """FLOAT16 scales, bias, past and output (DirectML's provider takes them; onnxruntime's CPU
    kernel FLOAT only: the reference is its float32 QAttention of the same float16 values): the
    integer sums, some past float16's 65504, rescaled in float32 and rounded to float16, the
    attention in float32 rounded once; within 2^-9 of the largest output (float16's rounding of
    the projection and of the output)."""
    inputs = _inputs(weight, per_column=True, seed=7)
    inputs["input_zero_point"] = np.array(0, np.uint8)  # (sums up to 12 x 255 x 137: past 65504)
    inputs["mask_index"] = MASKS["raw [B, T]"]
    inputs["past"] = np.random.default_rng(8).standard_normal((2, B, N, 2, H)).astype(np.float32)
    inputs["mask_index"] = np.ones((B, S + 2), np.int32)
    inputs["mask_index"][1, 3] = 0
    x, w = inputs["input"].astype(np.int64), inputs["weight"].astype(np.int64) - inputs["weight_zero_point"]
    assert np.abs(x.reshape(-1, W) @ w).max() > 65504
    halves = {k: v.astype(np.float16) if v is not None and v.dtype == np.float32 else v for k, v in inputs.items()}
    singles = {k: v.astype(np.float32) if v is not None and v.dtype == np.float16 else v for k, v in halves.items()}
    attrs = {"num_heads": N}
    model, feeds = _model("QAttention", halves, ["output", "present"], attrs, _CONSTANTS)
    for value in model.graph.output:
        value.type.tensor_type.elem_type = TensorProto.FLOAT16
    want = _ort(*_model("QAttention", singles, ["output", "present"], attrs, _CONSTANTS))
    got = gonnx.InferenceSession(model, device=device).run(None, feeds)
    _close([g.astype(np.float32) for g in got], want, tolerance=2.0**-9)
    assert all(g.dtype == np.float16 for g in got)


def _qembed(table_type, segments: bool, mask: bool, seed: int = 9):
    """QEmbedLayerNormalization's inputs: ids, 8-bit tables of vocabulary 20, 6 positions, 2
    segments, hidden 8, one scale and zero point each."""
    rng = np.random.default_rng(seed)
    info = np.iinfo(table_type)

    def table(*shape):
        return rng.integers(info.min, info.max + 1, shape).astype(table_type)

    def zero():
        return np.array(rng.integers(-20, 21) + (128 if table_type == np.uint8 else 0), table_type)

    def scale():
        return np.array(rng.uniform(0.005, 0.02), np.float32)

    ids = rng.integers(0, 20, (B, S)).astype(np.int32)
    padding = np.ones((B, S), np.int32)
    padding[1, 3:] = 0
    return {"input_ids": ids, "segment_ids": rng.integers(0, 2, (B, S)).astype(np.int32) if segments else None,
            "word_embedding": table(20, 8), "position_embedding": table(6, 8),
            "segment_embedding": table(2, 8) if segments else None, "gamma": table(8), "beta": table(8),
            "mask": padding if mask else None, "word_embedding_scale": scale(), "position_embedding_scale": scale(),
            "segment_embedding_scale": scale() if segments else None, "gamma_scale": scale(), "beta_scale": scale(),
            "word_embedding_zero_point": zero(), "position_embedding_zero_point": zero(),
            "segment_embedding_zero_point": zero() if segments else None, "gamma_zero_point": zero(),
            "beta_zero_point": zero()}


@pytest.mark.parametrize("table_type", [np.int8, np.uint8])
@pytest.mark.parametrize("segments, mask", [(True, True), (False, False)])
@pytest.mark.parametrize("constant", [True, False])
def test_qembed_layer_normalization(table_type, segments, mask, constant, device):
    """QEmbedLayerNormalization (quantize_dynamic's EmbedLayerNormalization; the provider has no
    kernel): the tables dequantized ((q - zero) scale) on the host where constant, on the device
    where fed, then EmbedLayerNormalization's mapping; the output within the session's tolerance
    and the mask index (the count of the mask's ones; zeros without a mask) exact."""
    inputs = _qembed(table_type, segments, mask)
    outputs = ["output", "mask_index"]
    fed = ("input_ids", "segment_ids", "mask")
    model, feeds = _model("QEmbedLayerNormalization", inputs, outputs, {"epsilon": 1e-5},
                          [n for n in inputs if n not in fed] if constant else [])
    model.graph.output[1].type.tensor_type.elem_type = TensorProto.INT32
    got = gonnx.InferenceSession(model, device=device).run(None, feeds)
    want = _ort(model, feeds)
    _close(got[:1], want[:1])
    assert got[1].dtype == np.int32 and np.array_equal(got[1], want[1])


def test_qembed_layer_normalization_refusals(device):
    """A per-element scale and a float table: refused with the rule, the node named."""
    for changes, rule in (({"gamma_scale": np.full(8, 0.01, np.float32)}, "gamma's scale [8] and zero point"),
                          ({"beta": np.zeros(8, np.float32)}, "beta of float32: INT8 or UINT8")):
        model, _ = _model("QEmbedLayerNormalization", {**_qembed(np.int8, True, True), **changes},
                          ["output", "mask_index"], {}, ["word_embedding"])
        model.graph.node[0].name = "emb0"
        with pytest.raises(UnsupportedError) as info:
            gonnx.InferenceSession(model, device=device)
        assert "emb0" in str(info.value) and rule in str(info.value), str(info.value)
