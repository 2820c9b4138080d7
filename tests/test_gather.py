"""Gather: the page's examples (and that their numbers are the page's), validation rules,
feature levels, index types (negative indices, out-of-range and extreme indices clamp),
the functional form, every strategy forced, graphs (fused and not), and the sweep of every
data type x ranks 1-8 x index type x layout against reference.py."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import ALL_TYPES, assert_bits_equal, random_bits
from dml_pages import page_blocks as _page_blocks
from fuzzkit import MAX_SIZE, Case, OpFuzz, maybe_hostile, random_fill, replace_fields, support_row, tensor, type_of
from hypothesis import strategies as st
from movement_check import every_variant, padded_strides, run_and_check

import gpudml as dml
from gpudml import cli, examples, reference
from gpudml.ops import gather
from gpudml.runtime.tensor import logical_from_raw

DT = dml.DataType
FL = dml.FeatureLevel
INDEX_TYPES = [DT.UINT32, DT.INT32, DT.UINT64, DT.INT64]
PAGE = Path(__file__).resolve().parent / "data" / "pages" / "ns-directml-dml_gather_operator_desc.md"
GATHER_EXAMPLES = [e for e in examples.EXAMPLES if e.operator == "gather"]


def _desc(in_sizes=(3, 2), index_sizes=(1, 4), out_sizes=None, axis=0, k=1, dtype=DT.FLOAT32,
          index_dtype=DT.UINT32, out_dtype=None, out_strides=None, index_strides=None):
    out_sizes = out_sizes or gather.output_sizes(in_sizes, index_sizes, axis, k)
    return dml.GatherOperatorDesc(
        dml.TensorDesc(dtype, in_sizes), dml.TensorDesc(index_dtype, index_sizes, index_strides),
        dml.TensorDesc(out_dtype or dtype, out_sizes, out_strides), axis, k)


def _raises(device, desc, message: str):
    with pytest.raises(dml.InvalidArgumentError, match=re.escape(message)):
        device.create_operator(desc)


def _run(device, desc, x, indices):
    compiled = device.compile_operator(device.create_operator(desc))
    (out,) = compiled.execute([x, indices])
    return out


# ------------------------------------------------------------------ the page's examples
@pytest.mark.parametrize("example", GATHER_EXAMPLES, ids=lambda e: e.name)
def test_page_examples(device, example):
    assert_bits_equal(dml.gather(example.input, device=device, **example.args), example.expected)
    assert_bits_equal(examples.run_reference(example), example.expected)


def _page_examples() -> list[dict]:
    """Each example of the page: its Axis, IndexDimensions, and per tensor its Sizes and numbers."""
    text = PAGE.read_text(encoding="utf-8")
    found = []
    for section in text.split("### Example ")[1:]:
        entry = {field: int(re.search(rf"{field}: (\d+)", section).group(1)) for field in ("Axis", "IndexDimensions")}
        for tensor_name in ("InputTensor", "IndicesTensor", "OutputTensor"):
            sizes = re.search(rf"{tensor_name}: \(Sizes:\{{([^}}]*)\}}", section).group(1)
            entry[tensor_name] = ([int(v) for v in sizes.split(",")],
                                  _page_blocks(section, f"{tensor_name}: (Sizes:")[0])
        found.append(entry)
    return found


def test_examples_are_the_pages():
    """Every number of the transcribed examples is the page's: sizes, values, Axis and
    IndexDimensions, except example 3's IndexDimensions (the page's 2 contradicts its own
    output rule; its output is IndexDimensions 1's)."""
    page = _page_examples()
    assert len(page) == len(GATHER_EXAMPLES)
    for ours, theirs in zip(GATHER_EXAMPLES, page, strict=True):
        indices = ours.args["indices"]
        assert (ours.args["axis"], list(ours.input.shape), ours.input.reshape(-1).tolist()) == (
            theirs["Axis"], *theirs["InputTensor"])
        assert (list(indices.shape), indices.reshape(-1).tolist()) == tuple(theirs["IndicesTensor"])
        assert (list(ours.expected.shape), ours.expected.reshape(-1).tolist()) == tuple(theirs["OutputTensor"])
        k = 2 if ours.name == "gather-3" else ours.args["index_dimensions"]
        assert k == theirs["IndexDimensions"], ours.name
    assert "all reads will be clamped safely within the input tensor's memory" in PAGE.read_text(encoding="utf-8")


def test_page_example_3_as_printed_breaks_the_pages_rule(vulkan_device):
    _raises(vulkan_device, _desc((3, 2), (1, 2), (3, 2), axis=1, k=2),
            "Gather: index_dimensions = 2 needs original rank + IndexDimensions - 1 = 2 + 2 - 1 = 3 <= "
            "DimensionCount 2 (input_tensor.sizes [3, 2] has 0 leading 1s before axis 1")


def test_example_through_desc_api(device):
    desc = _desc((1, 3, 2), (1, 2, 2), axis=1, k=2)
    assert desc.output_tensor.sizes == (2, 2, 2)
    x = np.arange(1, 7, dtype=np.float32).reshape(1, 3, 2)
    out = _run(device, desc, x, np.array([[[0, 1], [1, 2]]], np.uint32))
    np.testing.assert_array_equal(out, [[[1, 2], [3, 4]], [[3, 4], [5, 6]]])


# ------------------------------------------------------------------ validation: one rule each
@pytest.mark.parametrize("axis", [2, -1])
def test_rule_axis_in_range(vulkan_device, axis):
    _raises(vulkan_device, _desc(axis=axis, out_sizes=(4, 2)),
            f"Gather: axis = {axis} must be in [0, DimensionCount 2)")


@pytest.mark.parametrize("field", ["axis", "index_dimensions"])
def test_rule_integers(field):
    with pytest.raises(dml.InvalidArgumentError, match=re.escape(f"Gather: {field}: expected an integer, got 1.5")):
        dataclasses.replace(_desc(), **{field: 1.5})


@pytest.mark.parametrize("k", [3, -1])
def test_rule_index_dimensions_in_range(vulkan_device, k):
    _raises(vulkan_device, _desc(k=k, out_sizes=(4, 2)),
            f"Gather: index_dimensions = {k} must be in [0, DimensionCount 2] (the page says [0, DimensionCount); "
            "its examples 1 and 3 use DimensionCount itself)")


def test_rule_same_rank(vulkan_device):
    _raises(vulkan_device, _desc(index_sizes=(4,), out_sizes=(4, 2)),
            "Gather: all tensors must have the same DimensionCount (got input_tensor 2, indices_tensor 1, "
            "output_tensor 2)")


def test_rule_output_data_type(vulkan_device):
    _raises(vulkan_device, _desc(out_dtype=DT.FLOAT16),
            "Gather: output_tensor.data_type FLOAT16 must equal input_tensor.data_type FLOAT32")


@pytest.mark.parametrize("index_dtype", [DT.INT16, DT.UINT8, DT.FLOAT32])
def test_rule_indices_data_type(vulkan_device, index_dtype):
    _raises(vulkan_device, _desc(index_dtype=index_dtype),
            f"Gather: indices_tensor.data_type {index_dtype.name} is not supported at FL_6_4 "
            "(supported: UINT32, INT32, UINT64, INT64)")


def test_rule_indices_leading_sizes_are_one(vulkan_device):
    _raises(vulkan_device, _desc(index_sizes=(2, 4), out_sizes=(4, 2)),
            "Gather: indices_tensor.sizes[0] = 2 must be 1: with index_dimensions = 1 only the last 1 of "
            "indices_tensor.sizes [2, 4] hold indices")


def test_rule_output_room_for_the_index_dimensions(vulkan_device):
    # k = 3 needs two leading 1s before the axis: [1, 5, 4, 3] has one.
    _raises(vulkan_device, _desc((1, 5, 4, 3), (1, 2, 2, 2), (5, 2, 2, 2), axis=2, k=3),
            "Gather: index_dimensions = 3 needs original rank + IndexDimensions - 1 = 3 + 3 - 1 = 5 <= "
            "DimensionCount 4 (input_tensor.sizes [1, 5, 4, 3] has 1 leading 1s before axis 2; the output crops "
            "only those)")


def test_rule_output_sizes(vulkan_device):
    _raises(vulkan_device, _desc(out_sizes=(2, 4)),
            "Gather: output_tensor.sizes [2, 4] must be [4, 2]: input_tensor.sizes[0..0) [], the last 1 of "
            "indices_tensor.sizes [1, 4], input_tensor.sizes(0..2) [2], right-aligned to DimensionCount 2")


def test_rule_output_must_not_alias(vulkan_device):
    _raises(vulkan_device, _desc(out_strides=(0, 1)),
            "Gather: output_tensor.strides: [0, 1] with sizes [4, 2] make two output elements share one address")


def test_rule_indices_tensor_desc_checked(vulkan_device):
    _raises(vulkan_device, _desc(index_strides=(0, -1)), "Gather: indices_tensor.strides[1] = -1 must be >= 0")


@pytest.mark.parametrize("in_sizes, index_sizes, axis, k, want", [
    ((4,), (5,), 0, 1, (5,)),
    ((3, 2), (1, 4), 0, 1, (4, 2)),
    ((1, 3, 3), (1, 1, 2), 2, 2, (3, 1, 2)),
    ((1, 3, 2), (1, 2, 2), 1, 2, (2, 2, 2)),
    ((2, 3, 4), (1, 1, 1), 1, 0, (1, 2, 4)),  # a single index: the axis goes, a leading 1 comes
    ((2, 3, 4), (1, 1, 1), 2, 0, (1, 2, 3)),
    ((1, 1, 5, 6), (2, 3, 4, 5), 2, 4, (3, 4, 5, 6)),  # never valid: the crop drops a 2 (validate says so)
    ((1, 1, 5, 6), (1, 3, 4, 5), 2, 3, (3, 4, 5, 6)),
])
def test_output_sizes_rule(in_sizes, index_sizes, axis, k, want):
    """The page's (and DirectMLX's) rule, right-aligned to the DimensionCount."""
    assert gather.output_sizes(in_sizes, index_sizes, axis, k) == want


# ------------------------------------------------------------------ feature levels
LEVEL_CASES = [
    # (level, rank, dtype, index dtype, None if valid else the message's tail)
    (FL.FL_1_0, 4, DT.FLOAT16, DT.UINT32, None),
    (FL.FL_1_0, 4, DT.INT32, DT.UINT32, "input_tensor.data_type INT32 is not supported at FL_1_0 (supported: "
                                        "FLOAT32, FLOAT16); it needs FL_2_1 or later"),
    (FL.FL_1_0, 3, DT.FLOAT32, DT.UINT32, "DimensionCount 3 is not supported at FL_1_0 (supported: 4); it needs "
                                          "FL_3_0 or later"),
    (FL.FL_2_1, 4, DT.INT8, DT.UINT32, None),
    (FL.FL_2_1, 4, DT.FLOAT32, DT.INT32, "indices_tensor.data_type INT32 is not supported at FL_2_1 (supported: "
                                         "UINT32); it needs FL_3_0 or later"),
    (FL.FL_2_1, 5, DT.FLOAT32, DT.UINT32, "DimensionCount 5 is not supported at FL_2_1 (supported: 4); it needs "
                                          "FL_3_0 or later"),
    (FL.FL_3_0, 1, DT.UINT16, DT.INT64, None),
    (FL.FL_3_0, 8, DT.INT16, DT.UINT64, None),
    (FL.FL_3_1, 4, DT.FLOAT64, DT.INT32, "input_tensor.data_type FLOAT64 is not supported at FL_3_1"),
    (FL.FL_4_0, 4, DT.FLOAT32, DT.UINT16, "indices_tensor.data_type UINT16 is not supported at FL_4_0"),
    (FL.FL_4_1, 2, DT.FLOAT64, DT.INT64, None),
    (FL.FL_4_1, 6, DT.UINT64, DT.INT32, None),
    (FL.FL_6_4, 3, DT.INT64, DT.UINT64, None),
]


def _level_id(case) -> str:
    level, rank, dtype, index_dtype, _ = case
    return f"{level.name}-r{rank}-{dtype.name}-{index_dtype.name}"


@pytest.mark.parametrize("case", LEVEL_CASES, ids=_level_id)
def test_feature_level_table(at_level, case):
    """Each row of the page's tables (and the level that would take what a row refuses):
    rows of 4 gathered from an input of 3 along axis 0, at the case's level."""
    level, rank, dtype, index_dtype, error = case
    index_sizes = [1] * (rank - 1) + [4]
    desc = _desc([3] + [2] * (rank - 1), index_sizes, axis=0, k=1, dtype=dtype, index_dtype=index_dtype)
    if error is not None:
        _raises(at_level(level), desc, f"Gather: {error}")
        return
    x = np.arange(3 * 2 ** (rank - 1)).astype(dtype.numpy).reshape(desc.input_tensor.sizes)
    indices = np.array([2, 0, 1, 2], index_dtype.numpy).reshape(index_sizes)
    assert_bits_equal(_run(at_level(level), desc, x, indices), x[[2, 0, 1, 2]])


# ------------------------------------------------------------------ index values
def _clamp(v: int, n: int, signed: bool) -> int:
    """The documented rule with Python ints: a negative index (signed types) from the end,
    then clamped into [0, n - 1]."""
    if signed and v < 0:
        v += n
    return min(max(v, 0), n - 1)


HOSTILE = {
    DT.UINT32: [0, 4, 5, 6, 2**31, 2**32 - 1],
    DT.INT32: [0, 4, 5, -1, -5, -6, -(2**31), 2**31 - 1],
    DT.UINT64: [0, 4, 5, 2**32 - 1, 2**32, 2**32 + 1, 2**63, 2**64 - 1],
    DT.INT64: [0, 4, -1, -5, -6, 2**32, 2**32 + 2, -(2**32), -(2**32) + 1, -(2**32) - 1, 2**63 - 1, -(2**63)],
}


@pytest.mark.parametrize("index_dtype", INDEX_TYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("axis", [0, 1])
def test_out_of_range_and_negative_indices_clamp(device, index_dtype, axis):
    """Axis of 5: negative indices count from the end (signed types), everything else clamps
    into [0, 4], the 64-bit extremes included: no read ever leaves the input."""
    values = HOSTILE[index_dtype]
    x = (np.arange(10, dtype=np.int16) * 10 + 1).reshape((5, 2) if axis == 0 else (2, 5))
    indices = np.array(values, index_dtype.numpy).reshape(1, -1)
    got = dml.gather(x, indices, axis, index_dimensions=1, device=device)
    picks = [_clamp(v, 5, index_dtype.is_signed) for v in values]
    want = x[picks] if axis == 0 else x[:, picks]
    assert_bits_equal(got, want)
    assert_bits_equal(reference.gather(x, indices, axis, 1), want)


def test_negative_indices_count_from_the_end(device):
    x = np.array([[10, 20, 30, 40]], np.float32)
    got = dml.gather(x, np.array([[-1, -4, 2, -2]], np.int32), 1, device=device)
    np.testing.assert_array_equal(got, [[40, 10, 30, 30]])


def test_index_in_a_large_input_stays_inside_a_roomy_buffer(device):
    """The input's buffer is larger than its desc and filled with a marker past the tensor:
    clamped indices read the last element, never the marker."""
    desc = _desc((4,), (3,), axis=0, k=1, dtype=DT.UINT8, index_dtype=DT.INT64)
    roomy = dml.TensorDesc(DT.UINT8, [4], total_tensor_size_in_bytes=64)
    raw = np.full(64, 0xEE, np.uint8)
    raw[:4] = [1, 2, 3, 4]
    out = device.compile_operator(device.create_operator(desc)).execute(
        [device.tensor(raw, desc=roomy), device.tensor(np.array([4, 2**40, -9], np.int64))])[0]
    np.testing.assert_array_equal(out.numpy(), [4, 4, 1])


# ------------------------------------------------------------------ the functional form
def test_functional_default_index_dimensions(vulkan_device):
    """The indices' dimensions after their leading 1s (at least 1): the page's examples 2 and 5."""
    x = np.arange(6, dtype=np.float32).reshape(1, 3, 2)
    got = dml.gather(x, np.array([[[0, 1], [1, 2]]], np.uint32), 1, device=vulkan_device)
    assert got.shape == (2, 2, 2)
    got = dml.gather(x, np.array([[[2]]], np.uint32), 1, device=vulkan_device)
    assert_bits_equal(got, x[:, 2:3, :])


def test_functional_negative_axis_and_index_dimensions_zero(vulkan_device):
    x = np.arange(24, dtype=np.int64).reshape(2, 3, 4)
    indices = np.array([[[-1]]], np.int64)
    got = dml.gather(x, indices, -2, index_dimensions=0, device=vulkan_device)
    assert_bits_equal(got, x[:, 2, :].reshape(1, 2, 4))
    with pytest.raises(dml.InvalidArgumentError,
                       match=re.escape("gather: axis = 3 is outside [-3, 2] (x has 3 dimensions)")):
        dml.gather(x, indices, 3, device=vulkan_device)


@pytest.mark.parametrize("dtype, data_type", [
    (np.int8, DT.INT32), (np.int16, DT.INT32), (np.uint8, DT.UINT32), (np.uint16, DT.UINT32),
    (np.int32, DT.INT32), (np.uint32, DT.UINT32), (np.int64, DT.INT64), (np.uint64, DT.UINT64),
])
def test_functional_index_types(vulkan_device, dtype, data_type):
    assert DT.from_numpy(gather.indices_array(np.zeros(2, dtype)).dtype) == data_type
    x = np.arange(8, dtype=np.float16).reshape(2, 4)
    indices = np.array([[3, 0, 1]], dtype)
    assert_bits_equal(dml.gather(x, indices, 1, device=vulkan_device), x[:, [3, 0, 1]])


def test_functional_python_lists_are_int64(vulkan_device):
    x = np.arange(5, dtype=np.uint32)
    assert_bits_equal(dml.gather(x, [-1, 0, 9], 0, device=vulkan_device), np.array([4, 0, 4], np.uint32))


@pytest.mark.parametrize("indices, message", [
    (np.array([[1.0]]), "gather: indices: indices must be integers, got dtype float64"),
    (np.array([[True]]), "gather: indices: indices must be integers, got dtype bool"),
    (np.array([1, 2], np.uint32), "Gather: all tensors must have the same DimensionCount"),
    (3, "gather: indices has 0 dimensions"),
])
def test_functional_indices_errors(vulkan_device, indices, message):
    with pytest.raises(dml.InvalidArgumentError, match=re.escape(message)):
        dml.gather(np.zeros((2, 3), np.float32), indices, 1, device=vulkan_device)


@pytest.mark.parametrize("x_shape, idx_shape, axis", [((3, 4), (2, 5), 1), ((3, 4), (2, 5), 0), ((6,), (4,), 0),
                                                       ((2, 3, 4), (2, 1, 3), 1)])
def test_numpy_take_recipe(vulkan_device, x_shape, idx_shape, axis):
    """docs/operators/gather.md's recipe for numpy.take (ONNX Gather) with q-dimensional
    indices gives numpy's result and shape."""
    rng = np.random.default_rng(len(x_shape) + axis)
    x = random_bits(rng, np.int8, x_shape)
    idx = rng.integers(-x_shape[axis], x_shape[axis], size=idx_shape)
    q = idx.ndim
    xr = x.reshape((1,) * (q - 1) + x.shape)
    ir = idx.reshape((1,) * (xr.ndim - q) + idx.shape)
    assert_bits_equal(dml.gather(xr, ir, axis + q - 1, index_dimensions=q, device=vulkan_device),
                      np.take(x, idx, axis))


def test_tensor_in_tensor_out(device):
    x = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    indices = device.tensor(np.array([[[2, 0]]], np.uint64))
    out = dml.gather(device.tensor(x), indices, 1)
    assert isinstance(out, dml.Tensor) and out.shape == (2, 2, 4)
    np.testing.assert_array_equal(out.numpy(), x[:, [2, 0], :])


def test_new_shape_of_a_known_kind_compiles_nothing(vulkan_device):
    dev = vulkan_device
    dml.gather(np.zeros((4, 6, 8), np.float32), np.zeros((1, 1, 3), np.uint32), 1, device=dev)
    dml.gather(np.zeros((4, 6, 8), np.float32), np.zeros((1, 1, 3), np.uint32), 2, device=dev)
    misses = dev.pipeline_cache_stats.misses
    dml.gather(np.zeros((5, 7, 9), np.float32), np.zeros((1, 1, 11), np.uint32), 1, device=dev)
    dml.gather(np.zeros((3, 2, 5), np.float32), np.zeros((1, 1, 2), np.uint32), 2, device=dev)
    assert dev.pipeline_cache_stats.misses == misses


def test_cli_shader_gather(capsys):
    assert cli.main(["shader", "gather", "--dtype", "FLOAT16", "--shape", "3,5", "--axis", "1",
                     "--indices-shape", "1,7", "--indices-dtype", "INT64", "--caps", "gl-cpu"]) == 0
    out = capsys.readouterr().out
    assert "var<storage, read> s0_lengths: array<u32>;" in out and "s0_lengths_at2(i)" in out
    assert "i64" not in out  # 64-bit indices as word pairs: the GL adapter has no int64


# ------------------------------------------------------------------ random gathers
def index_values(rng, data_type: DT, n: int, count: int) -> np.ndarray:
    """Indices for an axis of n: mostly inside it (from its end too, for signed types), some
    just past either end, some at the type's extremes and around 2^32."""
    info = np.iinfo(data_type.numpy)
    values = rng.integers(-n if info.min < 0 else 0, n, size=count).astype(object)
    odd = rng.random(count) < 0.2
    hostile = [v for v in (n, n + 1, -n - 1, info.min, info.max, 2**32 - 1, 2**32, -(2**32), 2**31)
               if info.min <= v <= info.max]
    values[odd] = [hostile[i] for i in rng.integers(0, len(hostile), size=int(odd.sum()))]
    return values.astype(data_type.numpy)


def random_shapes(rng, rank: int, top: int | None = None):
    """(input sizes, indices sizes, axis, index dimensions) of a random valid gather."""
    top = top or {1: 40, 2: 9, 3: 6, 4: 4, 5: 3, 6: 3, 7: 2, 8: 2}[rank]
    axis = int(rng.integers(0, rank))
    k = int(rng.integers(0, min(rank, axis + 1) + 1))
    sizes = [int(v) for v in rng.integers(1, top + 1, size=rank)]
    sizes[:max(k - 1, 0)] = [1] * max(k - 1, 0)  # the leading 1s the output crops
    index_sizes = [1] * (rank - k) + [int(v) for v in rng.integers(1, top + 1, size=k)]
    return sizes, index_sizes, axis, k


LAYOUTS = [(x, i, o) for x in ("packed", "strided", "broadcast") for i in ("packed", "strided", "broadcast")
           for o in ("packed", "strided")]


def _strides(rng, sizes, layout):
    return None if layout == "packed" else padded_strides(sizes, rng, broadcast=layout == "broadcast")


def _random_case(rng, data_type, index_type, rank, layout):
    """A random valid gather of `rank` under `layout` (input, indices, output), its raw
    input buffers (hostile indices included) and the reference's output."""
    sizes, index_sizes, axis, k = random_shapes(rng, rank)
    x_layout, index_layout, out_layout = layout
    in_desc = dml.TensorDesc(data_type, sizes, _strides(rng, sizes, x_layout))
    index_desc = dml.TensorDesc(index_type, index_sizes, _strides(rng, index_sizes, index_layout))
    out_sizes = gather.output_sizes(sizes, index_sizes, axis, k)
    out_desc = dml.TensorDesc(data_type, out_sizes, padded_strides(out_sizes) if out_layout == "strided" else None)
    desc = dml.GatherOperatorDesc(in_desc, index_desc, out_desc, axis, k)
    raws = [random_bits(rng, data_type.numpy, [in_desc.required_elements]),
            index_values(rng, index_type, sizes[axis], index_desc.required_elements)]
    want = reference.gather(logical_from_raw(raws[0], in_desc), logical_from_raw(raws[1], index_desc), axis, k)
    return desc, raws, want


def _check(device, rng, case, compiled=None):
    """The case under `compiled` (default: the operator's own choice)."""
    desc, raws, want = case
    compiled = compiled or device.compile_operator(device.create_operator(desc))
    run_and_check(device, rng, compiled, raws, [desc.input_tensor, desc.indices_tensor], desc.output_tensor, want)


@pytest.mark.parametrize("rank", range(1, 9))
@pytest.mark.parametrize("data_type", ALL_TYPES, ids=lambda t: t.name)
def test_sweep_against_reference(device, data_type, rank):
    """Each index type under a layout of input, indices (strided, broadcast) and output
    (packed, strided) that turns with the rank, so every type meets every layout."""
    rng = np.random.default_rng([int(data_type), rank])
    for i, index_type in enumerate(INDEX_TYPES):
        layout = LAYOUTS[(rank * len(INDEX_TYPES) + i + int(data_type)) % len(LAYOUTS)]
        _check(device, rng, _random_case(rng, data_type, index_type, rank, layout))


@pytest.mark.parametrize("rank", [1, 2, 3, 5, 8])
def test_every_strategy_forced(device, rank):
    """Every eligible strategy of random gathers (every axis position and index dimension
    count, hostile indices, every layout) is bit-exact."""
    rng = np.random.default_rng(rank)
    for trial in range(12):
        data_type = ALL_TYPES[(trial + rank) % len(ALL_TYPES)]
        layout = LAYOUTS[(trial * 5 + rank) % len(LAYOUTS)]
        case = _random_case(rng, data_type, INDEX_TYPES[trial % len(INDEX_TYPES)], rank, layout)
        for compiled in every_variant(device, device.create_operator(case[0])):
            _check(device, rng, case, compiled)


@pytest.mark.parametrize("case", [
    # (input sizes, indices sizes, axis, k, index strides): the kernel's segments
    ((6, 40), (1, 33), 1, 1, None),  # gathered axis innermost: an element per segment
    ((6, 40), (1, 33), 1, 1, (0, 0)),  # the same index along the row: one element repeated
    ((40, 6), (1, 33), 0, 1, None),  # rows copied whole
    ((1, 8, 12), (1, 3, 4), 2, 2, None),  # two index axes on the innermost axis
    ((1, 8, 12), (1, 3, 4), 1, 2, (0, 0, 1)),  # two index axes that do not merge
    ((4, 9, 7), (1, 1, 1), 2, 0, None),  # a single index on the innermost axis
    ((4, 9, 7), (1, 1, 1), 0, 0, None),
], ids=lambda c: f"{c[0]}-{c[1]}-axis{c[2]}-k{c[3]}")
def test_segment_kinds_under_every_strategy(device, case):
    in_sizes, index_sizes, axis, k, index_strides = case
    rng = np.random.default_rng(len(in_sizes) + axis + k)
    desc = _desc(in_sizes, index_sizes, axis=axis, k=k, dtype=DT.UINT16, index_dtype=DT.INT32,
                 index_strides=index_strides)
    x = random_bits(rng, np.uint16, in_sizes)
    raw = index_values(rng, DT.INT32, in_sizes[axis], desc.indices_tensor.required_elements)
    want = reference.gather(x, logical_from_raw(raw, desc.indices_tensor), axis, k)
    for compiled in every_variant(device, device.create_operator(desc)):
        assert_bits_equal(compiled.execute([x, raw])[0], want)


# ------------------------------------------------------------------ graphs
def _graph_pair(device, build, feed):
    """(fused results, unfused results, fused compiled graph) of the graph `build` records."""
    g = dml.Graph(device)
    outputs = build(g)
    fused = g.compile(outputs)
    return fused(feed), g.compile(outputs, fuse=False)(feed), fused


def test_graph_gather_between_pad_and_slice(device):
    rng = np.random.default_rng(3)
    array = random_bits(rng, np.float16, (3, 5, 6))
    indices = np.array([[[4, -1, 0, 9, -9, 2, 2]]], np.int64)

    def build(g):
        x = g.input([3, 5, 6], dtype=np.float16, name="x")
        padded = dml.pad(x, [0, 1, 2], [1, 0, 1], mode="reflection")
        gathered = dml.gather(padded, indices, 2)
        return [dml.slice(gathered, [0, 1, 0], [4, 5, 7], [-1, 2, 1])]

    got, want, fused = _graph_pair(device, build, {"x": array})
    assert_bits_equal(got[0], want[0])
    assert [s.compiled.name for s in fused.steps] == ["Fused(Padding>Gather>Slice1)"] and fused.dispatch_count == 1
    padded = reference.pad(array, [0, 1, 2], [1, 0, 1], "reflection")
    assert_bits_equal(got[0], reference.slice(reference.gather(padded, indices, 2), [0, 1, 0], [4, 5, 7],
                                               [-1, 2, 1]))


def test_graph_indices_from_an_input_and_a_node(device):
    """Indices fed per call, and indices made by a data-movement node (materialized: a
    stage reads its indices from a tensor)."""
    rng = np.random.default_rng(4)
    array = random_bits(rng, np.int32, (4, 6))
    idx = np.array([[5, 0, 3], [1, 1, 2]], np.uint32)

    def build(g):
        x = g.input([4, 6], dtype=np.int32, name="x")
        i = g.input([2, 3], dtype=np.uint32, name="i")
        row = dml.slice(i, [1, 0], [1, 3], [1, 1])  # the second row of i as the indices
        a = dml.gather(dml.slice(x, [0, 0], [4, 6], [1, -1]), row, 1)
        return [dml.pad(a, [1, 0], [0, 2], mode="edge")]

    got, want, fused = _graph_pair(device, build, {"x": array, "i": idx})
    assert_bits_equal(got[0], want[0])
    assert [s.compiled.name for s in fused.steps] == ["Slice1", "Fused(Slice1>Gather>Padding)"]
    expected = reference.pad(reference.gather(array[:, ::-1], idx[1:], 1), [1, 0], [0, 2], "edge")
    assert_bits_equal(got[0], expected)


@pytest.mark.parametrize("seed", range(6))
def test_graph_random_chains_fused_match_unfused(device, seed):
    """Random pad > gather > slice chains (every data type, ranks 1-8, every index type and
    index dimension count, indices fed as a broadcast input), fused against node by node."""
    rng = np.random.default_rng([seed, 77])
    for _ in range(4):
        rank = int(rng.integers(1, 9))
        data_type = ALL_TYPES[int(rng.integers(0, len(ALL_TYPES)))]
        index_type = INDEX_TYPES[int(rng.integers(0, 4))]
        sizes, index_sizes, axis, k = random_shapes(rng, rank, top=3)
        start = [0] * max(k - 1, 0) + [int(v) for v in rng.integers(0, 2, size=rank - max(k - 1, 0))]
        index_strides = _strides(rng, index_sizes, "broadcast")
        index_desc = dml.TensorDesc(index_type, index_sizes, index_strides)
        raw = index_values(rng, index_type, sizes[axis] + start[axis], index_desc.required_elements)
        feed = {"x": random_bits(rng, data_type.numpy, sizes), "i": logical_from_raw(raw, index_desc)}

        def build(g, sizes=sizes, start=start, axis=axis, k=k, data_type=data_type, index_desc=index_desc):
            x = g.input(sizes, dtype=data_type, name="x")
            i = g.input(index_desc.sizes, dtype=index_desc.data_type, name="i", strides=index_desc.strides)
            y = dml.gather(dml.pad(x, start, [0] * len(sizes), mode="symmetric"), i, axis, index_dimensions=k)
            flip = [-1 if d % 2 else 1 for d in range(len(sizes))]
            return [dml.slice(y, [0] * len(sizes), list(y.shape), flip), y]

        got, want, fused = _graph_pair(device, build, feed)
        for a, b in zip(got, want, strict=True):
            assert_bits_equal(a, b)
        assert fused.dispatch_count == 2  # y is an output: the chain pad > gather, then the slice of y
        padded = reference.pad(feed["x"], start, [0] * rank, "symmetric")
        assert_bits_equal(got[1], reference.gather(padded, feed["i"], axis, k))


STAGE_FORMS = [
    # (input sizes, indices sizes, axis, k, index type): the stage over a fused chain's own axes
    ((3, 4, 9), (1, 1, 1), 2, 0, DT.INT32),  # a single index on the innermost axis (not rowwise)
    ((3, 4, 9), (1, 1, 1), 1, 0, DT.UINT64),  # the axes before it shift down
    ((3, 4, 9), (1, 1, 11), 2, 1, DT.INT64),  # an index per element of a row
    ((1, 4, 9), (1, 5, 11), 2, 2, DT.UINT32),  # two index axes, the input's leading 1 cropped
    ((1, 1, 5, 6), (1, 2, 3, 4), 2, 3, DT.INT64),  # three: the axes before it shift up by 2
    ((7,), (1,), 0, 0, DT.INT32),
    ((5, 6), (1, 8), 0, 1, DT.UINT32),  # whole rows
]


@pytest.mark.parametrize("form", STAGE_FORMS, ids=lambda f: f"{f[0]}-{f[1]}-axis{f[2]}-k{f[3]}")
def test_graph_stage_forms_under_every_strategy(device, form):
    """pad > gather > slice as one kernel under each strategy, and a Reduce reading through
    it, against the references (every index dimension count and axis position)."""
    from gpudml import fusion
    from gpudml.runtime import CompiledOperator, Operator

    sizes, index_sizes, axis, k, index_type = form
    rank = len(sizes)
    start = [0 if d < k - 1 else 1 for d in range(rank)]  # the leading 1s the output crops stay 1
    rng = np.random.default_rng(len(sizes) * 10 + k)
    array = random_bits(rng, np.uint32, sizes)
    indices = index_values(rng, index_type, sizes[axis] + start[axis], int(np.prod(index_sizes))).reshape(index_sizes)
    g = dml.Graph(device)
    x = g.input(sizes, dtype=np.uint32, name="x")
    gathered = dml.gather(dml.pad(x, start, [0] * rank, mode="edge"), indices, axis, index_dimensions=k)
    flip = [-1] * rank
    y = dml.slice(gathered, [0] * rank, list(gathered.shape), flip)
    padded = reference.pad(array, start, [0] * rank, "edge")
    want = reference.gather(padded, indices, axis, k)[(slice(None, None, -1),) * rank]
    (step,) = g.compile([y]).steps
    assert step.compiled.name == "Fused(Padding>Gather>Slice1)"
    inputs = [device.tensor(array), device.tensor(indices)]
    spec = fusion.movement_spec(step.compiled.desc)
    for strategy in step.compiled.strategies:
        compiled = CompiledOperator(device, Operator(device, step.compiled.desc, spec), strategy)
        assert_bits_equal(compiled.execute(inputs)[0].numpy(), want)
    reduced = g.compile([dml.reduce(y, "max", [0])])
    assert reduced.steps[0].compiled.name == "Fused(Padding>Gather>Slice1>Reduce)"
    assert_bits_equal(reduced({"x": array})[0], want.max(axis=0, keepdims=True))


# ------------------------------------------------------------------ fuzz (run by tests/test_fuzz.py)
@st.composite
def valid_cases(draw) -> Case:
    level, row, rank = support_row(draw, gather.SUPPORT)
    data_type = type_of(draw, row, "input_tensor")
    index_type = type_of(draw, row, "indices_tensor")
    axis = draw(st.integers(0, rank - 1))
    k = draw(st.integers(0, min(rank, axis + 1)))
    sizes = [1] * max(k - 1, 0) + [draw(st.integers(1, MAX_SIZE[rank])) for _ in range(rank - max(k - 1, 0))]
    top = MAX_SIZE[min(rank + k, 8)]  # the output has rank + k - 1 dimensions' worth of elements
    index_sizes = [1] * (rank - k) + [draw(st.integers(1, top)) for _ in range(k)]
    n = sizes[axis]
    desc = dml.GatherOperatorDesc(
        tensor(draw, data_type, sizes), tensor(draw, index_type, index_sizes),
        tensor(draw, data_type, gather.output_sizes(sizes, index_sizes, axis, k), output=True), axis, k)
    return Case(level, desc, lambda xs: reference.gather(xs[0], xs[1], axis, k),
                [random_fill, lambda rng, dt, count: index_values(rng, dt, n, count)])


def _broken_integer(draw, desc, field: str, top: int):
    """(builder, fragment, kind): `field`, an integer in [0, top], made larger, negative or
    not an integer."""
    how = draw(st.sampled_from(["above", "negative", "not_an_integer"]))
    if how == "above":
        value = top + 1 + draw(st.integers(0, 5))
    elif how == "negative":
        value = -draw(st.integers(1, 9))
    else:
        value = draw(st.sampled_from([1.0, "1", None, [1]]))
    return replace_fields(desc, **{field: value}), field, f"{field}_{how}"


@st.composite
def broken_fields(draw, desc):
    """(builder, fragment, kind) with one of the operator's own fields broken."""
    rank = desc.input_tensor.rank
    kind = draw(st.sampled_from(["axis", "index_dimensions", "indices_type", "output_size", "output_type"]))
    if kind == "axis":
        return _broken_integer(draw, desc, "axis", rank - 1)
    if kind == "index_dimensions":
        return _broken_integer(draw, desc, "index_dimensions", rank)
    if kind == "indices_type":
        dt = draw(st.sampled_from([DT.FLOAT32, DT.FLOAT16, DT.INT16, DT.UINT16, DT.INT8, DT.UINT8, DT.FLOAT64]))
        return replace_fields(desc, indices_tensor=dml.TensorDesc(dt, desc.indices_tensor.sizes)), \
            "indices_tensor.data_type", kind
    out = desc.output_tensor
    if kind == "output_type":
        dt = draw(st.sampled_from([t for t in ALL_TYPES if t != out.data_type]))
        return replace_fields(desc, output_tensor=dml.TensorDesc(dt, out.sizes)), "output_tensor.data_type", kind
    bad = list(out.sizes)
    bad[draw(st.integers(0, rank - 1))] += draw(st.integers(1, 3))
    return replace_fields(desc, output_tensor=dml.TensorDesc(out.data_type, bad)), "output_tensor.sizes", kind


@st.composite
def functional_calls(draw, x, shape):
    """(keyword arguments, expected(x)) for one functional call, some arguments hostile."""
    rank = len(shape)
    axis = draw(st.integers(0, rank - 1))
    k = draw(st.integers(0, min(rank, gather.leading_ones(shape, axis) + 1)))
    index_sizes = [1] * (rank - k) + [draw(st.integers(1, 5)) for _ in range(k)]
    dtype = draw(st.sampled_from([np.uint32, np.int64, np.int8, np.uint16, np.int32, np.uint64]))
    rng = np.random.default_rng(draw(st.integers(0, 999)))
    # Hostile values too; cast (wrapping) to the array's own dtype, which the call keeps or widens.
    indices = index_values(rng, DT.INT64, shape[axis], int(np.prod(index_sizes))).astype(dtype).reshape(index_sizes)
    hostile = st.sampled_from([indices.astype(np.float32), indices.tolist(), None, 3, indices.astype(bool),
                               np.zeros([n + 1 for n in index_sizes], np.uint32), "1", indices.reshape(-1)])
    index_arg = draw(st.one_of(st.just(indices), hostile)) if draw(st.integers(0, 3)) == 0 else indices
    args = {"indices": index_arg, "axis": maybe_hostile(draw, axis),
            "index_dimensions": draw(st.sampled_from([k, k, None]))}
    return args, lambda a: reference.gather(a, gather.indices_array(args["indices"]), args["axis"],
                                            args["index_dimensions"])


FUZZ = OpFuzz(valid_cases(), broken_fields, functional_calls,
              fields=("x", "input_tensor", "indices", "axis", "index_dimensions", "device"))
