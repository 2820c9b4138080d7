"""com.microsoft Attention and GroupQueryAttention (gpudml/onnx/attention.py) node by node,
against onnxruntime's CPU provider: Attention's mask_index of every form, unequal value
hidden size, attention bias, scale; GroupQueryAttention's prompt and token steps with a past
that grows or is the shared buffer, a batch of two lengths, packed query-key-value, rotary
(halves and interleaved), grouped heads; what the mapping refuses, named at construction."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import gpudml.onnx as gonnx
from gpudml.errors import UnsupportedError
from gpudml.onnx.session import TOLERANCE

ort = pytest.importorskip("onnxruntime")

_TYPES = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int32): TensorProto.INT32,
          np.dtype(np.int64): TensorProto.INT64}


def _model(op: str, inputs: dict, outputs: list[str], attrs: dict, constants: dict | None = None):
    """One com.microsoft node; `inputs` name -> array ('' keys: omitted optional inputs), the
    `constants` as initializers."""
    constants = constants or {}
    names = [n if not n.startswith("_") else "" for n in inputs]
    node = helper.make_node(op, names, outputs, domain="com.microsoft", **attrs)
    graph = helper.make_graph(
        [node], op, [helper.make_tensor_value_info(n, _TYPES[a.dtype], list(a.shape)) for n, a in inputs.items()
                     if not n.startswith("_") and n not in constants],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
        [numpy_helper.from_array(constants[n], n) for n in constants])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    feeds = {n: a for n, a in inputs.items() if not n.startswith("_") and n not in constants}
    return model, feeds


def _compare(model, feeds, device, reference=None, valid=None, tolerance=TOLERANCE):
    """gpudml's outputs against onnxruntime's on `reference` (default: the same model); `valid`:
    per batch, the rows of the present key/value (outputs 1, 2) compared; within `tolerance`
    of the largest reference magnitude."""
    reference = reference or (model, feeds)
    want = ort.InferenceSession(reference[0].SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, reference[1])
    got = gonnx.InferenceSession(model, device=device).run(None, feeds)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g.shape == w.shape
        if k and valid is not None:  # the shared buffer's rows past each batch's length: see _gqa_valid
            g, w = ([x[b, :, :n] for b, n in enumerate(valid)] for x in (g, w))
            g, w = np.concatenate(g, axis=1), np.concatenate(w, axis=1)
        w = w.astype(np.float64)
        np.testing.assert_allclose(g.astype(np.float64), w, rtol=0, atol=tolerance * max(np.abs(w).max(), 1e-30))


RNG = np.random.default_rng(7)
B, S, W, N = 2, 5, 12, 3  # batch, sequence, input width, heads (hidden 12: head size 4)


def _attention_inputs(vhidden: int = 12):
    return {"input": RNG.standard_normal((B, S, W)).astype(np.float32),
            "weights": RNG.standard_normal((W, 24 + vhidden)).astype(np.float32) * 0.5,
            "bias": RNG.standard_normal(24 + vhidden).astype(np.float32) * 0.1}


MASKS = {
    "none": None,
    "key lengths [B]": np.array([5, 3], np.int32),
    "ends and starts [2B]": np.array([5, 4, 0, 1], np.int32),
    "raw [B, T]": np.array([[1, 1, 1, 1, 1], [1, 1, 0, 1, 0]], np.int32),
    "raw [B, S, T]": (RNG.random((B, S, S)) > 0.3).astype(np.int32),
    "max [B, 1, M, M]": (RNG.random((B, 1, 8, 8)) > 0.3).astype(np.int32),
}


@pytest.mark.parametrize("mask", MASKS)
def test_attention_masks(mask, device):
    """Each form against onnxruntime; the 4-D [B, 1, M, M] mask, which onnxruntime's CPU kernel
    does not run, against its [B, S, S] corner there (what the provider's SLICE1 reads)."""
    inputs = _attention_inputs()
    if MASKS[mask] is not None:
        inputs["mask_index"] = MASKS[mask]
    model, feeds = _model("Attention", inputs, ["out"], {"num_heads": N})
    reference = None
    if mask.startswith("max"):
        reference = _model("Attention", {**inputs, "mask_index": MASKS[mask][:, 0, :S, :S]}, ["out"], {"num_heads": N})
    _compare(model, feeds, device, reference)


def test_attention_value_size_bias_and_scale(device):
    """qkv_hidden_sizes with a value hidden size apart (SPLIT, the stacked query-key), an
    attention bias [B, N, S, T], a scale and a mask filter value."""
    inputs = _attention_inputs(vhidden=6)
    inputs["mask_index"] = np.array([4, 5], np.int32)
    inputs["_past"] = None
    inputs["attention_bias"] = RNG.standard_normal((B, N, S, S)).astype(np.float32)
    model, feeds = _model("Attention", inputs, ["out"], {"num_heads": N, "qkv_hidden_sizes": [12, 12, 6],
                                                          "scale": 0.3, "mask_filter_value": -500.0})
    _compare(model, feeds, device)


@pytest.mark.any_class
@pytest.mark.parametrize("attrs, extra, rule", [
    ({"unidirectional": 1}, {}, "unidirectional=1"),
    ({}, {"past": np.zeros((2, B, N, 1, 4), np.float32)}, "input past"),
    ({"num_heads": 5}, {}, "num_heads 5 does not divide"),
])
def test_attention_refusals(attrs, extra, rule, device):
    inputs = {**_attention_inputs(), **({"_mask": None} if extra else {}), **extra}
    model, _ = _model("Attention", inputs, ["out"], {"num_heads": N, **attrs})
    with pytest.raises(UnsupportedError, match=rule):
        gonnx.InferenceSession(model, device=device)


# -- GroupQueryAttention ------------------------------------------------------------------
HQ, HKV, D = 4, 2, 16


def _gqa(seq: int, past, seqlens, total: int, *, packed=False, rotary=None, batch=1, positions=64, cached=False,
         **attrs):
    """A GroupQueryAttention node: query/key/value [batch, seq, H D] (or packed), past
    [batch, HKV, P, D] (None: absent), seqlens_k, total_sequence_length (an initializer; with
    `cached` the rotary's caches too, as exported models have them: contrib.rotary_tables)."""
    q = RNG.standard_normal((batch, seq, HQ * D)).astype(np.float32)
    k = RNG.standard_normal((batch, seq, HKV * D)).astype(np.float32)
    v = RNG.standard_normal((batch, seq, HKV * D)).astype(np.float32)
    inputs = {"query": np.concatenate([q, k, v], axis=2)} if packed else {"query": q, "key": k, "value": v}
    if packed:
        inputs.update({"_k": None, "_v": None})
    if past is not None:
        inputs["past_key"] = RNG.standard_normal((batch, HKV, past, D)).astype(np.float32)
        inputs["past_value"] = RNG.standard_normal((batch, HKV, past, D)).astype(np.float32)
    else:
        inputs.update({"_pk": None, "_pv": None})
    inputs["seqlens_k"] = np.asarray(seqlens, np.int32)
    inputs["total_sequence_length"] = np.array(total, np.int32)
    attrs = {"num_heads": HQ, "kv_num_heads": HKV, **attrs}
    if rotary is not None:
        angles = np.arange(positions)[:, None] * (0.5 ** np.arange(D // 2))[None]
        inputs["cos_cache"] = np.cos(angles).astype(np.float32)
        inputs["sin_cache"] = np.sin(angles).astype(np.float32)
        attrs.update(do_rotary=1, rotary_interleaved=int(rotary == "interleaved"))
    constants = {k: inputs[k] for k in ("total_sequence_length", "cos_cache", "sin_cache")[:3 if cached else 1]}
    return _model("GroupQueryAttention", inputs, ["out", "present_key", "present_value"], attrs, constants)


#: The present key/value rows compared: each batch's valid ones (the prompt's, or seqlens_k + 1).
#: With the shared buffer, the rows past them are the past's in gpudml (DirectML's present
#: aliases the past: they stay as they were); onnxruntime's CPU kernel, given a present apart
#: from the past, leaves them zero. No step reads them (causal: docs/transformers.md).
@pytest.mark.parametrize("case", ["prompt", "prompt, shared buffer", "token, growing past", "token, shared buffer",
                                  "token, shared buffer, batch of two lengths", "packed", "rotary halves",
                                  "rotary interleaved, shared buffer", "packed, rotary halves, cached, batch of two",
                                  "prompt, rotary interleaved, cached"])
def test_group_query_attention(case, device):
    build = {
        "prompt": lambda: _gqa(5, None, [4], 5),
        "prompt, shared buffer": lambda: _gqa(5, 12, [4], 5),
        "token, growing past": lambda: _gqa(1, 6, [6], 7),
        "token, shared buffer": lambda: _gqa(1, 12, [6], 7),
        "token, shared buffer, batch of two lengths": lambda: _gqa(1, 12, [6, 9], 10, batch=2),
        "packed": lambda: _gqa(1, 12, [3], 4, packed=True),
        "rotary halves": lambda: _gqa(4, None, [3], 4, rotary="halves"),
        "rotary interleaved, shared buffer": lambda: _gqa(1, 12, [7], 8, rotary="interleaved"),
        "packed, rotary halves, cached, batch of two": lambda: _gqa(1, 12, [6, 9], 10, batch=2, packed=True,
                                                                     rotary="halves", cached=True),
        "prompt, rotary interleaved, cached": lambda: _gqa(4, None, [3], 4, rotary="interleaved", cached=True),
    }[case]
    model, feeds = build()
    seq = feeds["query"].shape[1]
    valid = [seq] * len(feeds["seqlens_k"]) if seq > 1 else [int(n) + 1 for n in feeds["seqlens_k"]]
    _compare(model, feeds, device, valid=valid)


@pytest.mark.any_class
@pytest.mark.parametrize("build, rule", [
    (lambda: _gqa(3, 4, [6], 7), "a prompt of 3 tokens after a past of 4 < total_sequence_length 7"),
    (lambda: _gqa(1, 12, [6], 7, kv_num_heads=3), "kv_num_heads 3 must divide num_heads 4"),
    (lambda: _gqa(5, None, [4], 5, rotary="halves", positions=4), "sequence length 5 exceeds cos_cache's 4"),
    (lambda: _gqa(1, 12, [6], 7, local_window_size=4), "local_window_size=4"),
    (lambda: _gqa(1, 4, [6], 7), "past of 4 and total_sequence_length 7: the past is the shared buffer"),
])
def test_group_query_attention_refusals(build, rule, device):
    """Named at construction, before any GPU work."""
    model, _ = build()
    with pytest.raises(UnsupportedError, match=rule):
        gonnx.InferenceSession(model, device=device)


# -- MultiHeadAttention -------------------------------------------------------------------
def _mha(case: str):
    """(A MultiHeadAttention node, the node onnxruntime computes its reference on: the same but
    for the packed key-value, which its CPU kernel does not run: then the separate key and
    value). N = 3 heads of 4, S = 5 queries, L = 5 keys, P = 4 past."""
    q = RNG.standard_normal((B, S, 12)).astype(np.float32)
    k = RNG.standard_normal((B, S, 12)).astype(np.float32)
    v = RNG.standard_normal((B, S, 12)).astype(np.float32)
    inputs = {"query": q, "key": k, "value": v}
    outputs = ["out"]
    if case == "packed key-value":
        inputs = {"query": q, "key": np.stack([k.reshape(B, S, N, 4), v.reshape(B, S, N, 4)], axis=3), "_v": None}
    if case in ("bias and key lengths", "raw mask, past and present"):
        inputs["bias"] = RNG.standard_normal(36).astype(np.float32) * 0.1
    if case == "bias and key lengths":
        inputs["key_padding_mask"] = np.array([5, 2], np.int32)
    if case == "raw mask, past and present":
        inputs["key_padding_mask"] = np.array([[1] * 9, [1, 1, 0, 1, 1, 1, 1, 0, 1]], np.int32)
        inputs["attention_bias"] = RNG.standard_normal((B, N, S, 9)).astype(np.float32)
        inputs["past_key"] = RNG.standard_normal((B, N, 4, 4)).astype(np.float32)
        inputs["past_value"] = RNG.standard_normal((B, N, 4, 4)).astype(np.float32)
        outputs = ["out", "present_key", "present_value"]
    attrs = {"num_heads": N, "scale": 0.4}
    model = _model("MultiHeadAttention", inputs, outputs, attrs)
    if case == "packed key-value":
        return model, _model("MultiHeadAttention", {"query": q, "key": k, "value": v}, outputs, attrs)
    return model, model


@pytest.mark.parametrize("case", ["separate", "packed key-value", "bias and key lengths", "raw mask, past and present"])
def test_multi_head_attention(case, device):
    (model, feeds), reference = _mha(case)
    _compare(model, feeds, device, reference)


@pytest.mark.any_class
def test_multi_head_attention_refuses_a_projected_cross_attention_key(device):
    q = np.zeros((B, S, 12), np.float32)
    model, _ = _model("MultiHeadAttention", {"query": q, "key": np.zeros((B, N, 7, 4), np.float32),
                                             "value": np.zeros((B, N, 7, 4), np.float32)}, ["out"], {"num_heads": N})
    with pytest.raises(UnsupportedError, match=r"key \[2, 3, 7, 4\]: \[B, L, N H\] with a value"):
        gonnx.InferenceSession(model, device=device)


def test_group_query_attention_float16(device):
    """FLOAT16 query, key, value, past and caches (the provider casts them to FLOAT32 around
    MULTIHEAD_ATTENTION1; gpudml's operator computes in float32 and rounds once): within 2^-10 of
    the largest output, onnxruntime's own float16 rounding and gpudml's together."""
    model, feeds = _gqa(1, 12, [6], 7, rotary="halves")
    for value in (*model.graph.input, *model.graph.output):
        if value.type.tensor_type.elem_type == TensorProto.FLOAT:
            value.type.tensor_type.elem_type = TensorProto.FLOAT16
    feeds = {k: v.astype(np.float16) if v.dtype == np.float32 else v for k, v in feeds.items()}
    _compare(model, feeds, device, valid=[7], tolerance=2.0**-10)


# ------------------------------------------------------------------ ONNX Attention (ai.onnx, opset 23)
def _onnx_attention_model(inputs: dict, outputs: list[str], attrs: dict):
    """One ai.onnx Attention node (opset 23); `inputs` name -> array ('' prefix: omitted)."""
    names = [n if not n.startswith("_") else "" for n in inputs]
    types = {np.dtype(np.bool_): TensorProto.BOOL, **_TYPES}
    node = helper.make_node("Attention", names, outputs, **attrs)
    graph = helper.make_graph(
        [node], "attention", [helper.make_tensor_value_info(n, types[a.dtype], list(a.shape))
                              for n, a in inputs.items() if not n.startswith("_")],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs if o])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)], ir_version=10)
    return model, {n: a for n, a in inputs.items() if not n.startswith("_")}


def test_onnx_attention_3d_gqa_past_causal_bool_mask(device):
    """What the node tests do not combine: 3-D inputs with grouped heads (4 query heads on 2),
    a past, is_causal (the upper-left triangle over past and new keys) and a 2-D bool mask
    broadcast over batch and heads, all the outputs but the scores; onnxruntime's CPU provider
    is the reference."""
    b, s, past, hq, hkv, d = 2, 3, 2, 4, 2, 4
    mask = RNG.random((s, past + s)) > 0.3
    mask[:, 0] = True  # (no row fully masked: DirectML's finite MaskFilterValue and ONNX's -inf differ there)
    inputs = {"q": RNG.standard_normal((b, s, hq * d)).astype(np.float32),
              "k": RNG.standard_normal((b, s, hkv * d)).astype(np.float32),
              "v": RNG.standard_normal((b, s, hkv * d)).astype(np.float32), "mask": mask,
              "past_k": RNG.standard_normal((b, hkv, past, d)).astype(np.float32),
              "past_v": RNG.standard_normal((b, hkv, past, d)).astype(np.float32)}
    model, feeds = _onnx_attention_model(inputs, ["y", "present_k", "present_v"],
                                         {"q_num_heads": hq, "kv_num_heads": hkv, "is_causal": 1, "scale": 0.3})
    _compare(model, feeds, device)


def test_onnx_attention_refusals_name_the_rule(device):
    """softcap and the qk_matmul_output output: refused when the session is built."""
    x = RNG.standard_normal((1, 2, 3, 4)).astype(np.float32)
    for outputs, attrs, rule in ((["y"], {"softcap": 2.0}, "no soft cap"),
                                 (["y", "", "", "qk"], {}, "does not output its scores")):
        model, _ = _onnx_attention_model({"q": x, "k": x, "v": x}, outputs, attrs)
        with pytest.raises(UnsupportedError, match=rule):
            gonnx.InferenceSession(model, device=device)


@pytest.mark.parametrize("packed, dispatches", [(False, 4), (True, 5)])
def test_group_query_attention_rotary_dispatches(packed, dispatches, vulkan_device):
    """One token with the rotary's caches as initializers: the query and the key each rotated
    in one kernel (contrib.rotary_tables: the packed input's SLICEs of heads read inside it, the
    value's a kernel of its own), then MULTIHEAD_ATTENTION1's 2 dispatches here: 4 (packed 5),
    against 18 (21) with the caches fed (rotary's GATHERs, SPLITs, JOINs a dispatch each)."""
    model, _ = _gqa(1, 12, [6, 9], 10, batch=2, packed=packed, rotary="halves", cached=True)
    assert gonnx.InferenceSession(model, device=vulkan_device).dispatch_count == dispatches
