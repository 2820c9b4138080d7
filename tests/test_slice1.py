"""Slice1: seed examples, validation rules, and the dtype x rank x layout sweep vs reference.py."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import ALL_TYPES, assert_bits_equal, random_bits
from fuzzkit import (
    Case,
    OpFuzz,
    maybe_hostile,
    pick_axis,
    random_fill,
    replace_fields,
    sizes_of,
    support_row,
    tensor,
    type_of,
    with_entry,
)
from hypothesis import strategies as st

import gpudml as dml
from gpudml import reference
from gpudml.ops import slice1
from gpudml.ops.slice1 import max_output_size
from gpudml.runtime.tensor import logical_from_raw
from gpudml.tensor_desc import packed_strides

F32 = dml.DataType.FLOAT32
U32 = dml.DataType.UINT32
SEED_INPUT = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)


# ------------------------------------------------------------------ seed examples
@pytest.mark.parametrize("strides, expected", [
    ([1, 1, 2, 2], [[2, 4], [10, 12]]),
    ([1, 1, -2, 2], [[14, 16], [6, 8]]),
])
def test_seed_examples(device, strides, expected):
    got = dml.slice(SEED_INPUT, [0, 0, 0, 1], [1, 1, 4, 3], strides, device=device)
    np.testing.assert_array_equal(got, np.array(expected, dtype=np.float32).reshape(1, 1, 2, 2))


def test_seed_example_through_desc_api(device):
    desc = dml.Slice1OperatorDesc(
        input_tensor=dml.TensorDesc(F32, [1, 1, 4, 4]),
        output_tensor=dml.TensorDesc(F32, [1, 1, 2, 2]),
        input_window_offsets=[0, 0, 0, 1], input_window_sizes=[1, 1, 4, 3], input_window_strides=[1, 1, -2, 2])
    compiled = device.compile_operator(device.create_operator(desc))
    assert len(compiled.wgsl) == 1 and "fn main" in compiled.wgsl[0]
    (out,) = compiled.execute([SEED_INPUT])
    np.testing.assert_array_equal(out.reshape(2, 2), [[14, 16], [6, 8]])


# ------------------------------------------------------------------ sweep
RANKS = [1, 2, 4, 5, 8]
PATTERNS = ["positive", "negative", "mixed", "broadcast_input", "strided_output"]


def _case(rng, rank: int, pattern: str):
    """A random Slice1 problem: (input desc, output desc, offsets, sizes, strides)."""
    top = 6 if rank <= 2 else (4 if rank <= 5 else 3)
    in_sizes = [int(rng.integers(1, top + 1)) for _ in range(rank)]
    offsets, sizes, strides, out_sizes = [], [], [], []
    for n in in_sizes:
        off = int(rng.integers(0, n))
        size = int(rng.integers(1, n - off + 1))
        step = int(rng.integers(1, 4))
        sign = {"positive": 1, "negative": -1}.get(pattern, int(rng.choice([-1, 1])))
        most = 1 + (size - 1) // step
        offsets.append(off)
        sizes.append(size)
        strides.append(sign * step)
        out_sizes.append(most if pattern == "positive" else int(rng.integers(1, most + 1)))
    dt = None  # filled by the caller
    in_strides = None
    if pattern in ("mixed", "broadcast_input"):
        in_strides = list(packed_strides([n + 1 for n in in_sizes]))  # padded rows
        if pattern == "broadcast_input":
            for axis in rng.choice(rank, size=max(1, rank // 2), replace=False):
                in_strides[int(axis)] = 0
    out_strides = None
    if pattern == "strided_output":
        out_strides = list(packed_strides([n + 1 for n in out_sizes]))
    return dt, in_sizes, in_strides, out_sizes, out_strides, offsets, sizes, strides


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("rank", RANKS)
@pytest.mark.parametrize("data_type", ALL_TYPES, ids=lambda t: t.name)
def test_sweep_against_reference(device, data_type, rank, pattern):
    rng = np.random.default_rng([int(data_type), rank, PATTERNS.index(pattern)])
    _, in_sizes, in_strides, out_sizes, out_strides, offsets, sizes, strides = _case(rng, rank, pattern)
    in_desc = dml.TensorDesc(data_type, in_sizes, in_strides)
    out_desc = dml.TensorDesc(data_type, out_sizes, out_strides)
    desc = dml.Slice1OperatorDesc(in_desc, out_desc, offsets, sizes, strides)
    compiled = device.compile_operator(device.create_operator(desc))

    raw_in = random_bits(rng, data_type.numpy, [in_desc.required_elements])
    want = reference.slice(logical_from_raw(raw_in, in_desc), offsets, sizes, strides, out_sizes)
    # The output buffer starts as random bits: elements outside the tensor must keep them.
    out_words = out_desc.buffer_bytes // data_type.size
    raw_out = random_bits(rng, data_type.numpy, [out_words])
    out_tensor = device.tensor(raw_out, desc=out_desc)
    (result,) = compiled.execute([device.tensor(raw_in, desc=in_desc)], outputs=[out_tensor])
    after = result.raw()
    assert_bits_equal(logical_from_raw(after, out_desc), want)
    untouched = np.ones(out_words, dtype=bool)
    idx = np.zeros(1, dtype=np.int64)
    for n, s in zip(out_desc.sizes, out_desc.effective_strides):
        idx = (idx[:, None] + np.arange(n)[None, :] * s).reshape(-1)
    untouched[idx] = False
    assert_bits_equal(after[untouched], raw_out[untouched])


@pytest.mark.parametrize("data_type", [dml.DataType.UINT8, dml.DataType.FLOAT16, dml.DataType.INT64])
def test_numpy_in_numpy_out_matches_reference(device, data_type):
    rng = np.random.default_rng(7)
    x = random_bits(rng, data_type.numpy, [3, 7, 9])
    got = dml.slice(x, [1, 0, 2], [2, 7, 7], [-1, 3, -2], device=device)
    assert_bits_equal(got, reference.slice(x, [1, 0, 2], [2, 7, 7], [-1, 3, -2]))
    got = dml.slice(x, [0, 1, 0], [3, 6, 9], [2, -2, 1], output_sizes=[1, 2, 4], device=device)
    assert_bits_equal(got, reference.slice(x, [0, 1, 0], [3, 6, 9], [2, -2, 1], [1, 2, 4]))


def test_tensor_in_tensor_out(device):
    x = np.arange(60, dtype=np.int16).reshape(3, 4, 5)
    t = device.tensor(x)
    out = dml.slice(t, [0, 0, 0], [3, 4, 5], [1, -1, 2])
    assert isinstance(out, dml.Tensor) and out.shape == (3, 4, 3)
    np.testing.assert_array_equal(out.numpy(), x[:, ::-1, ::2])
    again = dml.slice(out, [0, 0, 0], [3, 4, 3], [-1, 1, 1])  # chained on the GPU
    np.testing.assert_array_equal(again.numpy(), x[::-1, ::-1, ::2])


def test_noncontiguous_and_big_endian_inputs(device):
    base = np.arange(200, dtype=np.float32).reshape(10, 20)
    view = base[::2, ::-3]
    np.testing.assert_array_equal(dml.slice(view, [0, 0], list(view.shape), device=device), view)
    be = np.arange(12, dtype=">i4").reshape(3, 4)
    np.testing.assert_array_equal(dml.slice(be, [0, 1], [3, 3], device=device), be[:, 1:].astype(np.int32))


def test_special_float_values_survive(device):
    values = np.array([np.nan, -0.0, np.inf, -np.inf, 1e-45, -1e-40, 3.4e38], dtype=np.float32)
    payload = np.array([0x7FC12345, 0xFFA00001, 0x00000001, 0x80000000], dtype=np.uint32).view(np.float32)
    x = np.concatenate([values, payload])
    assert_bits_equal(dml.slice(x, [0], [x.size], [-1], device=device), x[::-1].copy())
    h = np.array([0x7E01, 0x8000, 0x0001, 0xFC00, 0x7C00, 0x03FF], dtype=np.uint16).view(np.float16)
    assert_bits_equal(dml.slice(h, [0], [6], [1], device=device), h)
    d = np.array([0x7FF8000000000123, 0x8000000000000000, 1], dtype=np.uint64).view(np.float64)
    assert_bits_equal(dml.slice(d, [0], [3], [-1], device=device), d[::-1].copy())


def test_more_than_65535_workgroups(device):
    # 4.5 M float32 elements at 64 per workgroup need 70,313 workgroups: the grid folds into y.
    x = np.arange(4_500_000, dtype=np.uint32)
    got = dml.slice(x, [0], [4_500_000], [-1], device=device)
    np.testing.assert_array_equal(got, x[::-1])
    # uint8 packs 4 per invocation: 17 M elements -> 4.25 M invocations -> 66,407 workgroups.
    y = (np.arange(17_000_000) % 251).astype(np.uint8)
    got = dml.slice(y, [3], [16_999_990], [1], device=device)
    np.testing.assert_array_equal(got, y[3:16_999_993])


def test_coalesced_past_65535_workgroups(device):
    """`coalesced` forced (the GPU-class strategy: one invocation per 16-byte chunk of a
    packed output, in both of its chunk forms, or per element of an output with gaps):
    4.3 M invocations are 67,188 workgroups of 64, so the grid folds into y."""
    n = 4_300_000
    x = np.arange(2 * n, dtype=np.uint64).view(np.float64)  # two float64 per chunk
    desc = dml.ops.slice1.infer_output(dml.TensorDesc(dml.DataType.FLOAT64, [2 * n]), [0], [2 * n], [-1])
    op = device.create_operator(desc)
    for options in ({}, {"chunk": "stretches"}):
        compiled = device.compile_operator(op, "coalesced", options=options)
        assert compiled.program.kernels[0].invocations == n > 65_535 * 64
        assert_bits_equal(compiled.execute([x])[0], x[::-1])
    y = np.arange(n, dtype=np.uint32)
    gaps = dml.Slice1OperatorDesc(dml.TensorDesc(U32, [n]), dml.TensorDesc(U32, [n], [2]), [0], [n], [-1])
    compiled = device.compile_operator(device.create_operator(gaps), "coalesced")
    assert compiled.program.kernels[0].invocations == n
    np.testing.assert_array_equal(compiled.execute([y])[0], y[::-1])


# ------------------------------------------------------------------ pipeline cache
def test_new_shape_of_known_kind_compiles_nothing(vulkan_device):
    dev = vulkan_device
    x = np.zeros((4, 6, 8), dtype=np.float32)
    dml.slice(x, [0, 0, 0], [4, 6, 8], [1, -1, 2], device=dev)
    misses = dev.pipeline_cache_stats.misses
    hits = dev.pipeline_cache_stats.hits
    y = np.zeros((7, 3, 5), dtype=np.float32)
    out = dml.slice(y, [1, 0, 1], [5, 3, 4], [2, 1, -3], device=dev)
    assert out.shape == (3, 3, 2)
    assert dev.pipeline_cache_stats.misses == misses
    assert dev.pipeline_cache_stats.hits == hits + 1


# ------------------------------------------------------------------ validation: one test per rule
def _desc(in_sizes=(1, 1, 4, 4), out_sizes=(1, 1, 2, 2), offsets=(0, 0, 0, 1), sizes=(1, 1, 4, 3),
          strides=(1, 1, 2, 2), dtype=F32, out_dtype=None, in_strides=None, out_strides=None):
    return dml.Slice1OperatorDesc(
        dml.TensorDesc(dtype, in_sizes, in_strides),
        dml.TensorDesc(out_dtype or dtype, out_sizes, out_strides),
        offsets, sizes, strides)


@pytest.mark.parametrize("kwargs, level, message", [
    (dict(out_dtype=dml.DataType.FLOAT16), None,
     "Slice1: output_tensor.data_type FLOAT16 must equal input_tensor.data_type FLOAT32"),
    (dict(out_sizes=(1, 2, 2)), None,
     "Slice1: all tensors must have the same DimensionCount (got input_tensor 4, output_tensor 3)"),
    (dict(offsets=(0, 0, 0)), None,
     "Slice1: input_window_offsets has 3 entries [0, 0, 0]; DimensionCount is 4"),
    (dict(sizes=(1, 1, 4)), None, "Slice1: input_window_sizes has 3 entries [1, 1, 4]; DimensionCount is 4"),
    (dict(strides=(1, 1, 2, 2, 1)), None,
     "Slice1: input_window_strides has 5 entries [1, 1, 2, 2, 1]; DimensionCount is 4"),
    (dict(offsets=(0, 0, 3, 1)), None,
     "Slice1: input_window_offsets[2] + input_window_sizes[2] = 7 exceeds input size 4 on axis 2"),
    (dict(offsets=(0, 0, -1, 1)), None, "Slice1: input_window_offsets[2] = -1 must be in 0..4294967295"),
    (dict(sizes=(1, 1, 0, 3)), None, "Slice1: input_window_sizes[2] = 0 must be >= 1 (empty window)"),
    (dict(strides=(1, 1, 0, 2)), None, "Slice1: input_window_strides[2] must not be 0"),
    (dict(strides=(1, 1, 2, 2**31)), None, "Slice1: input_window_strides[3] = 2147483648 does not fit INT32"),
    (dict(out_sizes=(1, 1, 3, 2)), None,
     "Slice1: output_tensor.sizes[2] = 3 must be in 1..2 (1 + (input_window_sizes[2] - 1) // "
     "|input_window_strides[2]| = 1 + (4 - 1) // 2)"),
    (dict(in_sizes=(4, 4), out_sizes=(2, 2), offsets=(0, 1), sizes=(4, 3), strides=(2, 2)), dml.FeatureLevel.FL_2_1,
     "Slice1: DimensionCount 2 is not supported at FL_2_1 (supported: 4, 5); it needs FL_3_0 or later"),
    (dict(dtype=dml.DataType.FLOAT64), dml.FeatureLevel.FL_3_0,
     "Slice1: input_tensor.data_type FLOAT64 is not supported at FL_3_0 (supported: FLOAT32, FLOAT16, UINT32, "
     "UINT16, UINT8, INT32, INT16, INT8); it needs FL_4_1 or later"),
    (dict(), dml.FeatureLevel.FL_2_0, "Slice1: not available at feature level FL_2_0 (introduced at FL_2_1)"),
    (dict(out_strides=(4, 4, 1, 0)), None,
     "Slice1: output_tensor.strides: [4, 4, 1, 0] with sizes [1, 1, 2, 2] make two output elements share one "
     "address (axis 3 stride 0); an output must not alias itself"),
])
def test_validation_rule(at_level, kwargs, level, message):
    device = at_level(level)
    with pytest.raises(dml.InvalidArgumentError) as err:
        device.create_operator(_desc(**kwargs))
    assert str(err.value) == message


@pytest.mark.parametrize("level, data_type, rank, ok", [
    (dml.FeatureLevel.FL_2_1, dml.DataType.INT8, 4, True),
    (dml.FeatureLevel.FL_2_1, dml.DataType.INT8, 5, True),
    (dml.FeatureLevel.FL_2_1, dml.DataType.INT64, 4, False),
    (dml.FeatureLevel.FL_3_0, dml.DataType.UINT16, 1, True),
    (dml.FeatureLevel.FL_3_0, dml.DataType.UINT16, 8, True),
    (dml.FeatureLevel.FL_3_1, dml.DataType.UINT64, 3, False),
    (dml.FeatureLevel.FL_4_1, dml.DataType.UINT64, 3, True),
    (dml.FeatureLevel.FL_4_1, dml.DataType.FLOAT64, 8, True),
])
def test_feature_level_table(at_level, level, data_type, rank, ok):
    device = at_level(level)
    desc = dml.Slice1OperatorDesc(dml.TensorDesc(data_type, [2] * rank), dml.TensorDesc(data_type, [1] * rank),
                                  [0] * rank, [2] * rank, [-1] * rank)
    if ok:
        x = np.arange(2**rank).astype(data_type.numpy).reshape([2] * rank)
        (out,) = device.compile_operator(device.create_operator(desc)).execute([x])
        assert out.reshape(-1)[0] == x.reshape(-1)[-1]
    else:
        with pytest.raises(dml.InvalidArgumentError, match="is not supported at"):
            device.create_operator(desc)


def test_functional_errors_name_the_argument(vulkan_device):
    x = np.zeros((4, 4), dtype=np.float32)
    with pytest.raises(dml.InvalidArgumentError, match=r"slice: x: expected a numpy array or gpudml.Tensor, got list"):
        dml.slice([[1.0]], [0], [1], device=vulkan_device)
    with pytest.raises(dml.InvalidArgumentError, match=r"slice: x has 0 dimensions"):
        dml.slice(np.float32(1.0), [0], [1], device=vulkan_device)
    with pytest.raises(dml.InvalidArgumentError, match=r"numpy dtype bool has no DirectML data type"):
        dml.slice(np.zeros(3, dtype=bool), [0], [1], device=vulkan_device)
    with pytest.raises(dml.InvalidArgumentError, match=r"slice: offsets\[1\]: expected an integer, got 0.5"):
        dml.slice(x, [0, 0.5], [1, 1], device=vulkan_device)
    with pytest.raises(dml.InvalidArgumentError, match=r"slice: x has shape \[0, 4\]"):
        dml.slice(np.zeros((0, 4), np.float32), [0, 0], [1, 1], device=vulkan_device)


def test_execute_checks_its_inputs(vulkan_device):
    dev = vulkan_device
    compiled = dev.compile_operator(dev.create_operator(_desc()))
    with pytest.raises(dml.InvalidArgumentError, match=r"expected 1 inputs \(input_tensor\), got 2"):
        compiled.execute([SEED_INPUT, SEED_INPUT])
    with pytest.raises(dml.InvalidArgumentError, match=r"numpy dtype float64 is FLOAT64, the desc says FLOAT32"):
        compiled.execute([SEED_INPUT.astype(np.float64)])
    with pytest.raises(dml.InvalidArgumentError, match=r"15 elements \(shape \[15\]\) do not cover the tensor's 16"):
        compiled.execute([np.zeros(15, np.float32)])
    small = dev.tensor(np.zeros(8, np.float32))
    with pytest.raises(dml.InvalidArgumentError, match=r"Tensor buffer of 32 bytes is smaller than "
                                                       r"input_tensor.total_tensor_size_in_bytes 64"):
        compiled.execute([small])
    with pytest.raises(dml.InvalidArgumentError, match=r"inputs must be a list"):
        compiled.execute(SEED_INPUT)


# ------------------------------------------------------------------ fuzz (run by tests/test_fuzz.py)
@st.composite
def valid_cases(draw) -> Case:
    level, row, rank = support_row(draw, slice1.SUPPORT)
    data_type = type_of(draw, row, "input_tensor")
    in_sizes = sizes_of(draw, rank)
    offsets, sizes, strides, out_sizes = [], [], [], []
    for n in in_sizes:
        offset = draw(st.integers(0, n - 1))
        size = draw(st.integers(1, n - offset))
        step = draw(st.one_of(st.integers(1, 3), st.integers(1, size + 1))) * draw(st.sampled_from([1, -1]))
        offsets.append(offset)
        sizes.append(size)
        strides.append(step)
        out_sizes.append(draw(st.integers(1, max_output_size(size, step))))
    desc = dml.Slice1OperatorDesc(tensor(draw, data_type, in_sizes), tensor(draw, data_type, out_sizes, output=True),
                                  offsets, sizes, strides)
    return Case(level, desc, lambda xs: reference.slice(xs[0], offsets, sizes, strides, out_sizes),
                [random_fill])


@st.composite
def broken_fields(draw, desc):
    """(builder, fragment, kind) with one of the operator's own fields broken."""
    rank, i, not_int = pick_axis(draw, desc)
    n = desc.input_tensor.sizes[i]
    off, size = desc.input_window_offsets[i], desc.input_window_sizes[i]
    choices = {
        "offset_past_end": ("input_window_offsets", with_entry(desc.input_window_offsets, i, n)),
        "offset_negative": ("input_window_offsets", with_entry(desc.input_window_offsets, i, -1)),
        "offset_huge": ("input_window_offsets", with_entry(desc.input_window_offsets, i, 2**40)),
        "window_empty": ("input_window_sizes", with_entry(desc.input_window_sizes, i, 0)),
        "window_too_long": ("input_window_sizes", with_entry(desc.input_window_sizes, i, n - off + 1)),
        "stride_zero": ("input_window_strides", with_entry(desc.input_window_strides, i, 0)),
        "stride_int32": ("input_window_strides",
                         with_entry(desc.input_window_strides, i, draw(st.sampled_from([2**31, -2**31 - 1])))),
        "length": ("input_window_offsets", list(desc.input_window_offsets) + [0]),
        "not_int": ("input_window_sizes", with_entry(desc.input_window_sizes, i, not_int)),
        "not_a_list": ("input_window_strides", draw(st.sampled_from([None, 3, "1,1"]))),
    }
    kind = draw(st.sampled_from(sorted(choices) + ["output_too_big"]))
    if kind == "output_too_big":
        stride = desc.input_window_strides[i]
        out = with_entry(desc.output_tensor.sizes, i, max_output_size(size, stride) + 1)
        return replace_fields(desc, output_tensor=dml.TensorDesc(desc.output_tensor.data_type, out)), \
            "output_tensor.sizes", kind
    name, value = choices[kind]
    return replace_fields(desc, **{name: value}), name, kind


@st.composite
def functional_calls(draw, x, shape):
    """(keyword arguments, expected(x)) for one functional call, some arguments hostile."""
    offsets = [draw(st.integers(0, n - 1)) for n in shape]
    sizes = [draw(st.integers(1, n - o)) for n, o in zip(shape, offsets)]
    strides = [draw(st.sampled_from([1, 2, -1, -3])) for _ in shape]
    args = {"offsets": maybe_hostile(draw, offsets), "sizes": maybe_hostile(draw, sizes),
            "strides": maybe_hostile(draw, strides)}
    return args, lambda a: reference.slice(a, args["offsets"], args["sizes"], args["strides"])


FUZZ = OpFuzz(valid_cases(), broken_fields, functional_calls,
              fields=("x", "input_tensor", "offsets", "sizes", "strides", "output_sizes", "input_window",
                      "output_tensor", "device"))
