"""Gather: what the conformance kit (tests/test_conformance.py) does not cover: the page's
Axis and IndexDimensions (example 3's contradiction), each validation rule's message, the
output sizes rule, index values (negative indices, out-of-range and extreme indices clamp,
a roomy buffer), the functional form (default index dimensions, index types, numpy.take),
the pipeline cache across shapes, the command line, the kernel's segment kinds under every
strategy, named fused chains and the stage's forms under every strategy."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest
from conformance import HIGHEST, Case, index_values, run_every_variant
from conftest import assert_bits_equal, random_bits
from isolated import limited_device

import gpudml as dml
from gpudml import cli, examples, reference
from gpudml.ops import gather

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


def _page_examples() -> list[dict]:
    """Each example of the page: its Axis and IndexDimensions."""
    text = PAGE.read_text(encoding="utf-8")
    return [{field: int(re.search(rf"{field}: (\d+)", section).group(1)) for field in ("Axis", "IndexDimensions")}
            for section in text.split("### Example ")[1:]]


# ------------------------------------------------------------------ the page's examples
def test_examples_axis_and_index_dimensions_are_the_pages():
    """Axis and IndexDimensions of the transcribed examples are the page's (their tensors:
    the conformance kit), except example 3's IndexDimensions (the page's 2 contradicts its
    own output rule; its output is IndexDimensions 1's); the page's clamping promise."""
    page = _page_examples()
    assert len(page) == len(GATHER_EXAMPLES)
    for ours, theirs in zip(GATHER_EXAMPLES, page, strict=True):
        assert ours.args["axis"] == theirs["Axis"]
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
    roomy_input_reads(device, _desc((4,), (3,), axis=0, k=1, dtype=DT.UINT8, index_dtype=DT.INT64))


def roomy_input_reads(device, desc) -> None:
    """A gather of a [4] UINT8 input in a 64-byte buffer whose bytes past the tensor are a
    marker, with the INT64 indices [4, 2**40, -9]: it reads [4, 4, 1]."""
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


def test_new_shape_of_a_known_kind_compiles_nothing(adapter):
    """On a pipeline cache of the test's own (nothing compiled before, whatever ran earlier):
    once two kinds are compiled, new shapes of them compile nothing."""
    dev = limited_device(adapter)
    dml.gather(np.zeros((4, 6, 8), np.float32), np.zeros((1, 1, 3), np.uint32), 1, device=dev)
    dml.gather(np.zeros((4, 6, 8), np.float32), np.zeros((1, 1, 3), np.uint32), 2, device=dev)
    misses = dev.pipeline_cache_stats.misses
    assert misses >= 1
    dml.gather(np.zeros((5, 7, 9), np.float32), np.zeros((1, 1, 11), np.uint32), 1, device=dev)
    dml.gather(np.zeros((3, 2, 5), np.float32), np.zeros((1, 1, 2), np.uint32), 2, device=dev)
    assert dev.pipeline_cache_stats.misses == misses


def test_cli_shader_gather(capsys):
    assert cli.main(["shader", "gather", "--dtype", "FLOAT16", "--shape", "3,5", "--axis", "1",
                     "--indices-shape", "1,7", "--indices-dtype", "INT64", "--caps", "gl-cpu"]) == 0
    out = capsys.readouterr().out
    assert "var<storage, read> s0_lengths: array<u32>;" in out and "s0_lengths_at2(i)" in out
    assert "i64" not in out  # 64-bit indices as word pairs: the GL adapter has no int64


# ------------------------------------------------------------------ strategies
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
    """Each kind under every strategy and plan variant, hostile indices among in-range ones."""
    in_sizes, index_sizes, axis, k, index_strides = case
    desc = _desc(in_sizes, index_sizes, axis=axis, k=k, dtype=DT.UINT16, index_dtype=DT.INT32,
                 index_strides=index_strides)
    run_every_variant(device, Case(gather.SPEC, HIGHEST, desc), len(in_sizes) + axis + k)


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
    from gpudml.device import CompiledOperator, Operator

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
