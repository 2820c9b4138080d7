"""MULTIHEAD_ATTENTION (FL 6.1) and MULTIHEAD_ATTENTION1 (FL 6.3): what the conformance kit
does not cover: the reference against a per-head loop formulation, every strategy (rows,
split, tiles) under both adapter classes on every layout (separate, stacked QK, KV, QKV),
every mask type, the bias, relative position bias, past key/value and the present
outputs, grouped heads, the shared cache (past lengths), a strided query and a broadcast
mask, FLOAT16; the precision bound at larger key counts and head sizes; the loop budget
(more keys than one invocation may walk); each validation rule's message."""

from __future__ import annotations

import math

import numpy as np
import pytest

import gpudml as dml
from gpudml import reference
from gpudml.kernels import attention as family
from gpudml.ops import multihead_attention as mha
from gpudml.testing import assert_within

TD = dml.TensorDesc
F32, F16, I32 = dml.DataType.FLOAT32, dml.DataType.FLOAT16, dml.DataType.INT32
V0, V1 = mha.SPECS


def _td(a: np.ndarray) -> TD:
    return TD(dml.DataType.from_numpy(a.dtype), list(a.shape))


def _case(version, arrays: dict, **attrs):
    """(desc, buffers, logical arrays by name) of a call with `arrays` (functional names)."""
    spec = V1 if version else V0
    names = [n for n in spec.tensors if n in arrays]
    descs = [arrays[n][1] if isinstance(arrays[n], tuple) else _td(arrays[n]) for n in names]
    desc = spec.infer_output(*descs, given=tuple(names), **attrs)
    buffers = [arrays[n][0].reshape(-1) if isinstance(arrays[n], tuple) else arrays[n].reshape(-1) for n in names]
    logical = {n: arrays[n][2] if isinstance(arrays[n], tuple) else arrays[n] for n in names}
    return spec, desc, buffers, logical


def _check(dev, spec, desc, buffers, logical, attrs, strategies=family.FAMILY.strategies, options=None):
    present = attrs.get("present", False)
    want = reference.multihead_attention(**logical, **attrs) if spec is V1 else \
        reference.multihead_attention0(**logical, **attrs)
    wants = list(want) if present else [want]
    args = {**{n: None for n in spec.tensors if n not in logical}, **{k: v for k, v in attrs.items()}}
    op = dev.create_operator(desc)
    ran = []
    for strategy in strategies:
        try:
            compiled = dev.compile_operator(op, strategy, options=options or {})
        except dml.UnsupportedError:
            continue
        got = compiled.execute(buffers)
        for g, w in zip(got, wants, strict=True):
            tol = mha.tolerance(w, [logical[n] for n in spec.tensors if n in logical], args)
            g = np.asarray(g).reshape(w.shape)
            if tol is None:
                np.testing.assert_array_equal(g.view(np.uint16 if w.dtype == np.float16 else np.uint32),
                                              w.view(np.uint16 if w.dtype == np.float16 else np.uint32))
            else:
                assert_within(g, w, tol, f"{spec.name} {strategy}")
        ran.append(strategy)
    return ran


def _loops(q, k, v, heads, kv_heads, scale, mask_add=None):
    """An independent formulation: per batch, head and query row, plain Python loops."""
    b, s, _ = q.shape
    d = q.shape[-1] // heads
    dv = v.shape[-1] // kv_heads
    out = np.zeros((b, s, heads * dv))
    for bi in range(b):
        for h in range(heads):
            g = h // (heads // kv_heads)
            for i in range(s):
                scores = []
                for j in range(k.shape[1]):
                    x = scale * sum(float(q[bi, i, h * d + e]) * float(k[bi, j, g * d + e]) for e in range(d))
                    scores.append(x + (0.0 if mask_add is None else mask_add[bi, j]))
                top = max(scores)
                w = [math.exp(x - top) for x in scores]
                total = sum(w)
                for e in range(dv):
                    out[bi, i, h * dv + e] = sum(w[j] * float(v[bi, j, g * dv + e]) for j in range(len(w))) / total
    return out


def test_reference_is_a_loop_formulation():
    """Grouped heads (4 query heads, 2 key/value heads), a key-length mask, a scale."""
    rng = np.random.default_rng(3)
    q = rng.uniform(-1, 1, (2, 3, 4 * 4))
    k = rng.uniform(-1, 1, (2, 5, 2 * 4))
    v = rng.uniform(-1, 1, (2, 5, 2 * 3))
    lengths = np.array([[3, 5]], np.int32)
    got = reference.multihead_attention(q, k, v, head_count=4, key_value_head_count=2, mask=lengths,
                                        mask_type="key_sequence_length", scale=0.7, mask_filter_value=-50.0)
    # the length mask sets masked scores to the filter value: as a huge negative addend here
    add = np.where(np.arange(5)[None, :] < lengths.reshape(-1)[:, None], 0.0, -np.inf)
    want = _loops(q, k, v, 4, 2, 0.7, add)
    np.testing.assert_allclose(got, want, atol=1e-6)  # exp(-50 - x) ~ 1e-22: the same


def _rand(rng, shape, dtype=np.float32):
    return rng.uniform(-1, 1, shape).astype(dtype)


def _configs():
    """(name, version, arrays-maker, attrs)."""
    def plain(rng):
        b, s, h, d = 2, 5, 2, 4
        full = _rand(rng, (b, s, 2 * h * d))
        strided = TD(F32, [b, s, h * d], [s * 2 * h * d, 2 * h * d, 2])
        mask = rng.integers(0, 2, (b, 1, 1, s)).astype(np.int32)
        mask[:, :, :, 0] = 1
        return {"query": (full, strided, full[:, :, ::2]), "key": _rand(rng, (b, s, h * d)),
                "value": _rand(rng, (b, s, h * 3)), "bias": _rand(rng, (h * d * 2 + h * 3,)),
                "mask": mask, "relative_position_bias": _rand(rng, (1, h, s, s))}

    def gqa_past(rng):
        b, s, hq, hkv, d, p = 2, 3, 4, 2, 4, 6
        return {"query": _rand(rng, (b, s, hq * d)), "key": _rand(rng, (b, s, hkv * d)),
                "value": _rand(rng, (b, s, hkv * d)), "past_key": _rand(rng, (b, hkv, p, d)),
                "past_value": _rand(rng, (b, hkv, p, d))}

    def stacked_qkv(rng):
        return {"stacked_query_key_value": _rand(rng, (2, 6, 2, 3, 4)),
                "mask": np.array([[4, 6]], np.int32)}

    def shared(rng):
        b, s, hq, hkv, d, cap = 2, 3, 4, 2, 8, 9
        return {"query": _rand(rng, (b, s, hq * d), np.float16), "key": _rand(rng, (b, s, hkv * d), np.float16),
                "value": _rand(rng, (b, s, hkv * d), np.float16),
                "past_key": _rand(rng, (b, hkv, cap, d), np.float16),
                "past_value": _rand(rng, (b, hkv, cap, d), np.float16),
                "past_sequence_lengths": np.array([2, 6], np.int32)}

    def stacked_kv(rng):
        return {"query": _rand(rng, (1, 4, 8)), "stacked_key_value": _rand(rng, (1, 7, 2, 2, 4)),
                "mask": np.array([[6], [1]], np.int32)}

    def stacked_qk(rng):
        return {"stacked_query_key": _rand(rng, (2, 5, 2, 2, 4), np.float16),
                "value": _rand(rng, (2, 5, 2 * 4), np.float16),
                "mask": np.array([4, 5, 0, 5, 10, 0, 3, 8], np.int32)}

    return [
        ("plain", 0, plain, {"head_count": 2}),
        ("gqa-past", 1, gqa_past, {"head_count": 4, "key_value_head_count": 2, "present": True, "scale": 0.3}),
        ("stacked-qkv", 0, stacked_qkv, {"head_count": 2, "mask_type": "key_sequence_length"}),
        ("shared", 1, shared, {"head_count": 4, "key_value_head_count": 2, "present": True}),
        ("stacked-kv", 1, stacked_kv, {"head_count": 2, "mask_type": "key_sequence_end_start",
                                       "mask_filter_value": -30.0}),
        ("stacked-qk", 0, stacked_qk, {"head_count": 2, "mask_type": "key_query_sequence_length_start_end"}),
    ]


@pytest.mark.any_class  # both classes' Devices made here: the GPU-class run would repeat them
@pytest.mark.parametrize("adapter_class", ["cpu", "gpu"])
@pytest.mark.parametrize("name, version, make, attrs", _configs(), ids=[c[0] for c in _configs()])
def test_every_strategy_on_both_classes(device, adapter_class, name, version, make, attrs):
    """Each strategy (and `split` cut into 3 chunks) within the documented precision; the
    present outputs bit-exact; the class's documented first choice."""
    dev = dml.Device(adapter=device.adapter_name, adapter_class=adapter_class)
    spec, desc, buffers, logical = _case(version, make(np.random.default_rng(len(name))), **attrs)
    ran = _check(dev, spec, desc, buffers, logical, attrs)
    assert set(ran) == {"rows", "split", "tiles"}
    assert _check(dev, spec, desc, buffers, logical, attrs, strategies=("split",), options={"splits": 3})
    first = dev.compile_operator(dev.create_operator(desc)).strategy
    assert first == ("tiles" if adapter_class == "gpu" else "rows")
    if name == "shared":  # FLOAT16 keys and values (and their past) read as blocks of 8
        plan = family.plan(mha.problem(desc), dev.caps, "rows")
        assert plan.dispatches[0].params["vec"] == ("k", "v", "pk", "pv")


def test_unseen_cache_rows_are_never_read(device):
    """A shared cache's rows past each batch's past length hold anything (NaN and infinities
    here): no strategy lets them reach the output (a key a row does not see weighs 0, and
    0 * NaN would be NaN), under both adapter classes."""
    rng = np.random.default_rng(5)
    b, s, hq, hkv, d, cap = 2, 3, 2, 1, 4, 8
    lengths = np.array([1, 4], np.int32)
    past_key, past_value = _rand(rng, (b, hkv, cap, d), np.float16), _rand(rng, (b, hkv, cap, d), np.float16)
    for k, n in enumerate(lengths):
        past_key[k, :, n + s:] = np.inf
        past_value[k, :, n + s:] = np.nan
    arrays = {"query": _rand(rng, (b, s, hq * d), np.float16), "key": _rand(rng, (b, s, hkv * d), np.float16),
              "value": _rand(rng, (b, s, hkv * d), np.float16), "past_key": past_key, "past_value": past_value,
              "past_sequence_lengths": lengths}
    attrs = {"head_count": hq, "key_value_head_count": hkv}
    for adapter_class in ("cpu", "gpu"):
        dev = dml.Device(adapter=device.adapter_name, adapter_class=adapter_class)
        spec, desc, buffers, logical = _case(1, arrays, **attrs)
        assert set(_check(dev, spec, desc, buffers, logical, attrs)) == {"rows", "split", "tiles"}


def test_decoding_split_over_a_long_cache(device):
    """One query row against 700 cached keys: `split` is the first choice (many chunks, then
    the merge), its keys and values read as 16-byte blocks, within the bound; the present
    outputs the cache and the new row."""
    rng = np.random.default_rng(7)
    arrays = {"query": _rand(rng, (1, 1, 4 * 16)), "key": _rand(rng, (1, 1, 4 * 16)),
              "value": _rand(rng, (1, 1, 4 * 16)), "past_key": _rand(rng, (1, 4, 700, 16)),
              "past_value": _rand(rng, (1, 4, 700, 16))}
    attrs = {"head_count": 4, "present": True}
    spec, desc, buffers, logical = _case(1, arrays, **attrs)
    op = device.create_operator(desc)
    assert device.compile_operator(op).strategy == "split"
    plan = family.plan(mha.problem(desc), device.caps, "split")
    assert len(plan.dispatches) == 3  # chunks, merge, present
    assert plan.dispatches[0].params["vec"] == ("k", "v", "pk", "pv")  # 16-byte key/value loads
    _check(device, spec, desc, buffers, logical, attrs, strategies=("split", "rows"))


def test_precision_bound_at_larger_keys_and_heads(device):
    """Head size 64 over 300 keys (scores of several units: a peaked softmax): the error
    within the bound, and the bound within 2^-14 of the output (it is a bound that says
    something), growing with the key count and head size."""
    rng = np.random.default_rng(11)
    d, t = 64, 300
    q = (rng.standard_normal((1, 2, 2 * d)) * 0.6).astype(np.float32)
    k = (rng.standard_normal((1, t, 2 * d)) * 0.6).astype(np.float32)
    v = _rand(rng, (1, t, 2 * d))
    attrs = {"head_count": 2}
    spec, desc, buffers, logical = _case(1, {"query": q, "key": k, "value": v}, **attrs)
    want = reference.multihead_attention(q, k, v, **attrs)
    args = {n: None for n in spec.tensors if n not in logical} | attrs
    tol = mha.tolerance(want, [q, k, v], args)
    assert tol.max() < 2.0**-14
    qs, ks, vs = q[..., :8], k[:, :30, :8], v[:, :30, :8]
    small_want = reference.multihead_attention(qs, ks, vs, head_count=1)
    small = mha.tolerance(small_want, [qs, ks, vs], {**args, "head_count": 1})
    assert small.max() < tol.max()
    _check(device, spec, desc, buffers, logical, attrs, strategies=("rows", "tiles"))


def test_more_keys_than_the_loop_budget(device):
    """40,000 keys (past 39,999 + 1) of head size 4: `rows` splits itself (two dispatches)
    rather than pass llvmpipe's loop budget; within the bound."""
    rng = np.random.default_rng(5)
    t = 39999
    arrays = {"query": _rand(rng, (1, 1, 4)), "key": _rand(rng, (1, 1, 4)), "value": _rand(rng, (1, 1, 4)),
              "past_key": _rand(rng, (1, 1, t, 4)), "past_value": _rand(rng, (1, 1, t, 4))}
    spec, desc, buffers, logical = _case(0, arrays, head_count=1)
    plan = family.plan(mha.problem(desc), None, "rows")
    assert len(plan.dispatches) == 2 and t + 1 > family.key_budget(mha.problem(desc))
    _check(device, spec, desc, buffers, logical, {"head_count": 1}, strategies=("rows",))


def test_functional_forms(device):
    """dml.multihead_attention returns the output, or with present=True the three outputs;
    multihead_attention0 the same without grouped heads."""
    rng = np.random.default_rng(2)
    q, k, v = (_rand(rng, (1, 3, 8)) for _ in range(3))
    out = dml.multihead_attention(q, k, v, head_count=2, device=device)
    assert_within(out, reference.multihead_attention(q, k, v, head_count=2), 1e-6, "mha")
    out, pk, pv = dml.multihead_attention0(q, k, v, head_count=2, present=True, device=device)
    assert pk.shape == (1, 2, 3, 4)
    np.testing.assert_array_equal(pk, k.reshape(1, 3, 2, 4).transpose(0, 2, 1, 3))


def _raises(spec, match, *descs, **attrs):
    with pytest.raises(dml.InvalidArgumentError, match=match):
        desc = spec.infer_output(*descs, **attrs)
        spec.validate(desc, dml.FeatureLevel.FL_6_4)


def test_bad_input_is_named():
    q, kv = TD(F32, [1, 3, 8]), TD(F32, [1, 4, 8])
    given = ("query", "key", "value")
    _raises(V1, r"query_tensor.sizes\[-1\] 8 must be a multiple of query_head_count = 3", q, kv, kv, given=given,
            head_count=3)
    _raises(V1, r"query_head_count = 4 must be a multiple of key_value_head_count = 3", q, kv, kv, given=given,
            head_count=4, key_value_head_count=3)
    _raises(V1, r"mask_tensor.sizes \[2, 2\] must be \[1, 1\] for mask_type KEY_SEQUENCE_LENGTH", q, kv, kv,
            TD(I32, [2, 2]), given=(*given, "mask"), head_count=2, mask_type="key_sequence_length")
    _raises(V1, r"mask_tensor.data_type FLOAT32 is not supported", q, kv, kv, TD(F32, [1, 2, 3, 4]),
            given=(*given, "mask"), head_count=2)
    _raises(V1, r"mask_tensor.sizes \[1, 2, 3, 5\] must broadcast to \[1, 2, 3, 4\]", q, kv, kv,
            TD(I32, [1, 2, 3, 5]), given=(*given, "mask"), head_count=2)
    cache = TD(F32, [1, 2, 3, 4])
    _raises(V1, r"past_key_tensor's 3 rows must hold the 4 new key rows", q, kv, kv, cache, cache, TD(I32, [1]),
            given=(*given, "past_key", "past_value", "past_sequence_lengths"), head_count=2)
    _raises(V0, r"exactly one query, one key and one value", q, kv, given=("query", "key"), head_count=2)
    _raises(V0, r"mask_filter_value = inf must be finite", q, kv, kv, given=given, head_count=2,
            mask_filter_value=float("inf"))
    with pytest.raises(dml.InvalidArgumentError, match="not available at feature level FL_6_1"):
        V1.validate(V1.infer_output(q, kv, kv, given=given, head_count=2), dml.FeatureLevel.FL_6_1)
