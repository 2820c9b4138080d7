"""The rules of DML_MULTIHEAD_ATTENTION (multihead_attention0) and MULTIHEAD_ATTENTION1: a
layout (separate query/key/value of the asked rank; at rank 5 one of the stacked ones too),
heads (version 1: grouped key/value heads), any mask type, a bias, a relative position bias,
past key/value with the present outputs, version 1's shared cache; head sizes of 4 or 8
(compile-time in the kernels: few shaders)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import gpudml as dml
from gpudml import reference
from gpudml.ops import multihead_attention as mha_op
from gpudml.testing import assert_within

from ..draws import Draw
from ..hostile import maybe_hostile, one_more, replace_fields
from ..registry import Ask, Drawn, rule
from ._common import broken_output

I32 = dml.DataType.INT32
FIELDS = ("query", "key", "value", "query_tensor", "key_tensor", "value_tensor", "stacked_query_key_tensor",
          "stacked_key_value_tensor", "stacked_query_key_value_tensor", "mask_tensor", "mask", "mask_type",
          "bias_tensor", "past_key_tensor", "past_value_tensor", "output_tensor", "head_count", "query_head_count",
          "key_value_head_count", "scale", "mask_filter_value", "relative_position_bias_tensor", "device",
          "DimensionCount", "exactly one query")


def _call(d: Draw, ask: Ask, version: int) -> Drawn:
    dt = ask.data_type
    lead = [1] * (ask.rank - 3) if 3 <= ask.rank <= 5 else []
    b, s = d.int(1, 2), d.int(1, 4)
    hkv = d.int(1, 2)
    hq = hkv * (d.int(1, 2) if version else 1)
    dq, dv = d.pick([4, 8]), d.pick([4, 8])
    layouts = ["separate"] + (["qkv", "qk", "kv"] if ask.rank == 5 and hq == hkv else [])
    layout = d.pick(layouts)
    if layout in ("qkv", "qk", "kv"):
        dv = dq
    shared = version == 1 and d.int(0, 3) == 0
    kv = s if layout in ("qkv", "qk") or shared else d.int(1, 5)
    names, descs = [], []

    def add(name, sizes, data_type=dt):
        names.append(name)
        descs.append(dml.TensorDesc(data_type, sizes))
    if not 3 <= ask.rank <= 5:  # a query of that rank, for validation to name
        add("query", ask.input_sizes(d, 4))
        add("key", [b, s, hq * dq])
        add("value", [b, s, hq * dv])
        return Drawn(descs, {"given": tuple(names), "head_count": hq})
    if layout == "qkv":
        add("stacked_query_key_value", [b, s, hq, 3, dq])
    elif layout == "qk":
        add("stacked_query_key", [b, s, hq, 2, dq])
        add("value", [b, kv, hkv * dv])
    else:
        add("query", lead + [b, s, hq * dq])
        if layout == "kv":
            add("stacked_key_value", [b, kv, hkv, 2, dq])
        else:
            add("key", [b, kv, hkv * dq])
            add("value", [b, kv, hkv * dv])
    past = d.int(0, 2) == 0 or shared
    cap = kv + d.int(0, 3) if shared else d.int(1, 3)
    keys = cap if shared else kv + (cap if past else 0)
    if d.bool():
        add("bias", [(hq + hkv) * dq + hkv * dv])
    mask_type = d.pick([None, None, "boolean", "key_sequence_length", "key_sequence_end_start",
                        "key_query_sequence_length_start_end"])
    if mask_type == "boolean":
        add("mask", [b if d.bool() else 1, hq if d.bool() else 1, s if d.bool() else 1, keys], I32)
    elif mask_type is not None:
        add("mask", list(mha_op.mask_sizes(mha_op.Geometry(b, s, kv, 0, hq, hkv, dq, dv, False), mask_type)), I32)
    if d.int(0, 3) == 0:
        add("relative_position_bias", [1, hq, s if d.bool() else 1, keys])
    if past:
        add("past_key", [b, hkv, cap, dq])
        add("past_value", [b, hkv, cap, dv])
    if shared:
        add("past_sequence_lengths", [b], I32)
    attributes = {"given": tuple(names), "head_count": hq, "mask_type": mask_type,
                  "scale": d.pick([None, 0.5, 1.25]), "mask_filter_value": d.pick([-10000.0, -30.0]),
                  "present": past and d.bool()}
    if version:
        attributes["key_value_head_count"] = hkv
    return Drawn(descs, attributes)


@st.composite
def _broken(draw, desc):
    kinds = ["output_sizes", "output_type", "heads", "mask_type"]
    kinds += ["mask_sizes"] if desc.mask_tensor is not None and desc.mask_type != "boolean" else []
    kinds += ["past"] if desc.past_key_tensor is not None else []
    kind = draw(st.sampled_from(kinds))
    if kind in ("output_sizes", "output_type"):
        return broken_output(draw, desc, kind)
    if kind == "heads":
        field = "head_count" if hasattr(desc, "head_count") else "query_head_count"
        hq = desc.heads[0]
        return replace_fields(desc, **{field: hq * 16 + 3}), field, kind
    if kind == "mask_type":
        return replace_fields(desc, mask_type="bogus"), "mask_type", kind
    if kind == "mask_sizes":
        m = desc.mask_tensor
        return replace_fields(desc, mask_tensor=one_more(m, m.rank - 1)), "mask_tensor.sizes", kind
    pk = desc.past_key_tensor
    return replace_fields(desc, past_key_tensor=one_more(pk, pk.rank - 1)), "past_key_tensor", kind


def _functional(version: int):
    @st.composite
    def functional(draw, x, shape):
        """x as the query [.., S, hidden] with key and value of its shape, now and then a
        head count that does not divide the hidden size, or hostile."""
        hidden = shape[-1] if len(shape) >= 1 else 1
        heads = maybe_hostile(draw, draw(st.sampled_from([h for h in (1, 2, 4) if hidden % h == 0] or [1])))
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        numeric = isinstance(x, np.ndarray) and x.dtype.kind == "f"
        dtype = x.dtype.newbyteorder("=") if numeric else np.dtype(np.float32)
        k = rng.uniform(-1, 1, shape if len(shape) >= 3 else [1, 1, hidden]).astype(dtype)
        args = {"key": k, "value": k.copy(), "head_count": heads}
        fn = reference.multihead_attention if version else reference.multihead_attention0
        return args, lambda a: fn(a, **args)
    return functional


def _compare(got, want, x, args):
    tensors = [x, args["key"], args["value"]]
    arguments = {n: None for n in mha_op.TENSORS1[3:]} | {k: v for k, v in args.items() if k not in ("key", "value")}
    assert_within(got, want, mha_op.tolerance(want, tensors, arguments), "MultiheadAttention")


_PARTS = {"broken": _broken, "compare": _compare, "fields": FIELDS,
          "free": ("mask_tensor", "past_sequence_lengths_tensor"), "light": True}


@rule("multihead_attention0", functional=_functional(0), **_PARTS)
def multihead_attention0_call(d: Draw, ask: Ask) -> Drawn:
    """Version 0: one head count."""
    return _call(d, ask, 0)


@rule("multihead_attention1", functional=_functional(1), **_PARTS)
def multihead_attention1_call(d: Draw, ask: Ask) -> Drawn:
    """Version 1: grouped heads and the shared cache too."""
    return _call(d, ask, 1)
