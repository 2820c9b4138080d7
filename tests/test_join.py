"""Join: the page's examples, the page's support table, validation rules, feature levels, the
dtype x rank x layout sweep vs reference.py, every strategy, more inputs than a kernel can
bind, the functional form's list argument, graphs, the command line, and the fuzz
strategies."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import ALL_TYPES, assert_bits_equal, random_bits
from fuzzkit import Case, OpFuzz, broken_parts, maybe_hostile, random_fill, sizes_of, support_row, tensor, type_of
from hypothesis import strategies as st
from isolated import limited_device
from movement_check import every_variant, padded_strides, run_and_check
from pagecheck import assert_examples_printed, assert_support_table

import gpudml as dml
from gpudml import caps, compiler, reference
from gpudml.ops import join
from gpudml.runtime.tensor import logical_from_raw

DT = dml.DataType
FL = dml.FeatureLevel
PAGE = "ns-directml-dml_join_operator_desc.md"


def _desc(in_sizes=((1, 1, 2, 3), (1, 1, 2, 4)), out_sizes=(1, 1, 2, 7), axis=3, dtype=DT.FLOAT32, in_dtypes=None,
          out_strides=None):
    in_dtypes = in_dtypes or [dtype] * len(in_sizes)
    return dml.JoinOperatorDesc([dml.TensorDesc(t, s) for t, s in zip(in_dtypes, in_sizes, strict=True)],
                                dml.TensorDesc(dtype, out_sizes, out_strides), axis)


def _raises(device, desc, message: str):
    with pytest.raises(dml.InvalidArgumentError, match=re.escape(message)):
        device.create_operator(desc)


def _concatenated(arrays, axis: int) -> np.ndarray:
    """A second formulation of JOIN: each array written into its window of the output."""
    shape = list(arrays[0].shape)
    shape[axis] = sum(a.shape[axis] for a in arrays)
    out, start = np.empty(shape, arrays[0].dtype), 0
    for a in arrays:
        window = [slice(None)] * a.ndim
        window[axis] = slice(start, start + a.shape[axis])
        out[tuple(window)] = a
        start += a.shape[axis]
    return out


# ------------------------------------------------------------------ the page
@pytest.mark.parametrize("example", join.SPEC.examples, ids=lambda e: e.name)
def test_page_examples(device, example):
    assert_bits_equal(dml.join(example.input, device=device, **example.args), example.expected)
    assert_bits_equal(reference.join(example.input, **example.args), example.expected)


def test_page_example_through_desc_api(device):
    compiled = device.compile_operator(device.create_operator(_desc()))
    xs = join.SPEC.examples[0].input
    assert len(compiled.inputs) == 2 and [name for name, _ in compiled.inputs] == ["input_tensors[0]",
                                                                                   "input_tensors[1]"]
    (out,) = compiled.execute(xs)
    assert_bits_equal(out, join.SPEC.examples[0].expected)


def test_examples_and_support_table_are_the_pages():
    assert_examples_printed(join.SPEC)
    assert_support_table(join.SUPPORT, PAGE, {"InputTensors": "input_tensors", "OutputTensor": "output_tensor"})


def test_reference_is_a_second_formulation():
    rng = np.random.default_rng(4)
    for shapes, axis in ((((2, 3), (2, 1), (2, 5)), 1), (((1, 4, 2), (3, 4, 2)), 0), (((7,),), 0)):
        arrays = [random_bits(rng, np.float64, s) for s in shapes]
        assert_bits_equal(reference.join(arrays, axis), _concatenated(arrays, axis))
        assert_bits_equal(reference.join(arrays, axis - len(shapes[0])), _concatenated(arrays, axis))


# ------------------------------------------------------------------ validation: one rule each
@pytest.mark.parametrize("desc, message", [
    (_desc(in_sizes=(), in_dtypes=[]), "Join: InputCount is 0 (input_tensors is empty); it must be greater than 0"),
    (_desc(axis=4), "Join: axis = 4 must be in [0, DimensionCount - 1] = [0, 3]"),
    (_desc(axis=-1), "Join: axis = -1 must be in [0, DimensionCount - 1] = [0, 3]"),
    (_desc(in_sizes=((1, 1, 2, 3), (1, 1, 3, 4)), out_sizes=(1, 1, 2, 7)),
     "Join: input_tensors[1].sizes[2] = 3 must equal output_tensor.sizes[2] = 2 (the sizes may differ on axis 3 "
     "only)"),
    (_desc(out_sizes=(1, 1, 2, 8)),
     "Join: output_tensor.sizes[3] = 8 must equal the sum of input_tensors[i].sizes[3] = 3 + 4 = 7"),
    (_desc(in_dtypes=[DT.FLOAT32, DT.INT32]),
     "Join: input_tensors[1].data_type INT32 must equal output_tensor.data_type FLOAT32"),
    (_desc(in_sizes=((1, 1, 2, 3), (1, 2, 4)), out_sizes=(1, 1, 2, 7)),
     "Join: all tensors must have the same DimensionCount (got input_tensors[0] 4, input_tensors[1] 3, "
     "output_tensor 4)"),
    (_desc(in_sizes=((1, 1, 2, 3), (1, 1, 0, 4))), "Join: input_tensors[1].sizes[2] = 0 must be >= 1"),
    (_desc(out_strides=(14, 14, 7, 0)), "Join: output_tensor.strides: [14, 14, 7, 0] with sizes [1, 1, 2, 7] make two "
                                        "output elements share one address"),
    (dml.JoinOperatorDesc(dml.TensorDesc(DT.FLOAT32, [1, 1, 2, 3]), dml.TensorDesc(DT.FLOAT32, [1, 1, 2, 3]), 3),
     "Join: input_tensors must be a list of TensorDescs, got TensorDesc"),
    (dml.JoinOperatorDesc([dml.TensorDesc(DT.FLOAT32, [1, 1, 2, 3]), None], dml.TensorDesc(DT.FLOAT32, [1, 1, 2, 7]),
                          3), "Join: input_tensors[1]: expected a TensorDesc, got NoneType"),
])
def test_validation_rule(vulkan_device, desc, message):
    _raises(vulkan_device, desc, message)


def test_axis_is_an_integer():
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("Join: axis: expected an integer, got 1.5")):
        _desc(axis=1.5)


LEVEL_CASES = [
    # (level, rank, dtype, None if valid else the message's tail)
    (FL.FL_1_0, 4, DT.UINT16, None),
    (FL.FL_1_0, 4, DT.INT8, "input_tensors.data_type INT8 is not supported at FL_1_0 (supported: FLOAT32, FLOAT16, "
                            "UINT32, UINT16, INT32, INT16); it needs FL_2_1 or later"),
    (FL.FL_2_1, 4, DT.UINT8, None),
    (FL.FL_2_1, 5, DT.FLOAT32, "DimensionCount 5 is not supported at FL_2_1 (supported: 4); it needs FL_3_0 or later"),
    (FL.FL_3_0, 5, DT.INT8, None),
    (FL.FL_4_0, 3, DT.INT16, "DimensionCount 3 is not supported at FL_4_0 (supported: 4, 5); it needs FL_4_1 or "
                             "later"),
    (FL.FL_4_0, 4, DT.FLOAT64, "input_tensors.data_type FLOAT64 is not supported at FL_4_0 (supported: FLOAT32, "
                               "FLOAT16, UINT32, UINT16, UINT8, INT32, INT16, INT8); it needs FL_4_1 or later"),
    (FL.FL_4_1, 1, DT.FLOAT64, None),
    (FL.FL_4_1, 8, DT.INT64, None),
]


@pytest.mark.parametrize("level, rank, dtype, error", LEVEL_CASES,
                         ids=[f"{c[0].name}-r{c[1]}-{c[2].name}" for c in LEVEL_CASES])
def test_feature_level_table(at_level, level, rank, dtype, error):
    device = at_level(level)
    desc = _desc([[2] * rank, [2] * (rank - 1) + [1]], [2] * (rank - 1) + [3], rank - 1, dtype)
    if error is not None:
        _raises(device, desc, f"Join: {error}")
        return
    xs = [np.arange(2**rank).astype(dtype.numpy).reshape([2] * rank),
          np.full([2] * (rank - 1) + [1], 7, dtype.numpy)]
    (out,) = device.compile_operator(device.create_operator(desc)).execute(xs)
    assert_bits_equal(out, _concatenated(xs, rank - 1))


# ------------------------------------------------------------------ sweep
LAYOUTS = ["packed", "strided_inputs", "broadcast_inputs", "strided_output"]


def _case(rng, rank: int, data_type, layout: str):
    """A random JOIN: (input descs, output desc, axis)."""
    top = 6 if rank <= 2 else (4 if rank <= 5 else 3)
    sizes = [int(rng.integers(1, top + 1)) for _ in range(rank)]
    axis = int(rng.integers(rank))
    in_descs = []
    for _ in range(int(rng.integers(1, 5))):
        part = sizes[:axis] + [int(rng.integers(1, top + 1))] + sizes[axis + 1:]
        strides = padded_strides(part, rng, broadcast=layout == "broadcast_inputs") \
            if layout in ("strided_inputs", "broadcast_inputs") and rng.random() < 0.7 else None
        in_descs.append(dml.TensorDesc(data_type, part, strides))
    out_sizes = sizes[:axis] + [sum(d.sizes[axis] for d in in_descs)] + sizes[axis + 1:]
    out_strides = padded_strides(out_sizes) if layout == "strided_output" else None
    return in_descs, dml.TensorDesc(data_type, out_sizes, out_strides), axis


@pytest.mark.parametrize("rank", range(1, 9))
@pytest.mark.parametrize("data_type", ALL_TYPES, ids=lambda t: t.name)
def test_sweep_against_reference(device, data_type, rank):
    """Every type x rank 1-8 x layout (packed, padded rows, stride-0 broadcast inputs, an
    output with gaps that must stay untouched), 1-4 inputs, bit-exact."""
    rng = np.random.default_rng([int(data_type), rank, 7])
    for layout in LAYOUTS:
        in_descs, out_desc, axis = _case(rng, rank, data_type, layout)
        desc = dml.JoinOperatorDesc(in_descs, out_desc, axis)
        compiled = device.compile_operator(device.create_operator(desc))
        raws = [random_bits(rng, data_type.numpy, [d.required_elements]) for d in in_descs]
        want = reference.join([logical_from_raw(r, d) for r, d in zip(raws, in_descs)], axis)
        run_and_check(device, rng, compiled, raws, in_descs, out_desc, want)


@pytest.mark.parametrize("shapes, axis", [
    (((32, 3), (16, 3), (48, 3)), 0),  # every region starts on a 16-byte chunk, whatever the type
    (((5, 3), (4, 3)), 0),  # the second region starts mid-chunk
    (((2, 3), (2, 5)), 1),  # regions with gaps
    (((6,), (2,), (9,)), 0),  # on chunks for 8-byte elements only
])
@pytest.mark.parametrize("dtype", [np.uint8, np.float16, np.int32, np.float64])
def test_every_strategy(device, shapes, axis, dtype):
    """Each eligible strategy forced, CPU-class and GPU-class: the chunk strategies where
    every region is packed and starts on a chunk, else strided; coalesced always."""
    rng = np.random.default_rng(len(shapes))
    xs = [random_bits(rng, dtype, s) for s in shapes]
    descs = [dml.TensorDesc(dml.DataType.from_numpy(dtype), s) for s in shapes]
    op = device.create_operator(join.infer_output(descs, axis))
    strategies = device.compile_operator(op).strategies
    row = int(np.prod(shapes[0][1:]))
    starts = np.cumsum([0] + [s[0] for s in shapes[:-1]]) * row
    chunks = axis == 0 and all(start % (16 // np.dtype(dtype).itemsize) == 0 for start in starts)
    assert ("stretches" in strategies) == chunks and ("strided" in strategies) != chunks
    assert "coalesced" in strategies
    for compiled in every_variant(device, op):
        assert compiled.strategy in strategies and len(compiled.program.kernels) == len(xs)
        run_and_check(device, rng, compiled, [x.reshape(-1) for x in xs], descs, op.desc.output_tensor,
                      _concatenated(xs, axis))


@pytest.mark.parametrize("count", [1, 40])
def test_more_inputs_than_a_kernel_can_bind(device, count):
    """40 inputs: more than a kernel may bind on either adapter (lavapipe 32 storage buffers,
    llvmpipe through GL 16; a GPU, which binds more, is held to 16). Each dispatch binds one
    input and the output, every strategy."""
    if device.caps.max_storage_buffers_per_shader_stage >= 40:
        device = limited_device(device.adapter_name, max_storage_buffers_per_shader_stage=16)
    limit = device.caps.max_storage_buffers_per_shader_stage
    assert count == 1 or count > limit
    rng = np.random.default_rng(count)
    xs = [random_bits(rng, np.uint16, (3, int(rng.integers(1, 4)), 2)) for _ in range(count)]
    descs = [dml.TensorDesc(DT.UINT16, x.shape) for x in xs]
    op = device.create_operator(join.infer_output(descs, 1))
    for strategy in device.compile_operator(op).strategies:
        compiled = device.compile_operator(op, strategy)
        assert len(compiled.program.kernels) == count
        assert all(len(k.buffers) <= 3 for k in compiled.program.kernels)
        run_and_check(device, rng, compiled, [x.reshape(-1) for x in xs], descs, op.desc.output_tensor,
                      _concatenated(xs, 1))
    assert_bits_equal(dml.join(xs, -2, device=device), _concatenated(xs, 1))


def test_plan_is_one_copy_per_input():
    """Pure: the regions' bases and the axes merged in each copy."""
    desc = join.infer_output([dml.TensorDesc(DT.FLOAT32, [2, 3, 4]), dml.TensorDesc(DT.FLOAT32, [2, 5, 4])], 1)
    program = compiler.compile(desc, caps.profile("vulkan-cpu"))
    assert program.strategy == "strided" and program.strategies == ("strided", "coalesced")
    first, second = program.kernels
    assert [b.key for b in first.buffers] == [("output", 0), ("input", 0)]
    assert [b.key for b in second.buffers] == [("output", 0), ("input", 1)]
    assert first.params["rank"] == 2 and first.params["out_base"]  # [2, 12]: the region's rows merged
    words = np.frombuffer(second.uniform_bytes, np.uint32)
    assert 12 in words  # the second region starts at element 3 * 4


# ------------------------------------------------------------------ functional API
def test_functional_forms(device):
    rng = np.random.default_rng(9)
    xs = [random_bits(rng, np.int8, (2, n, 3)) for n in (1, 4, 2)]
    assert_bits_equal(dml.join(xs, 1, device=device), _concatenated(xs, 1))
    assert_bits_equal(dml.join(tuple(xs), -2, device=device), _concatenated(xs, 1))
    assert_bits_equal(dml.join(xs[:1], 0, device=device), xs[0])  # one input: a copy
    odd = [xs[0][:, ::-1], np.asfortranarray(xs[1]), xs[2].astype(np.dtype(np.int8).newbyteorder(">"))]
    assert_bits_equal(dml.join(odd, 1, device=device), _concatenated([np.ascontiguousarray(a) for a in odd], 1))
    tensors = [device.tensor(x) for x in xs]
    out = dml.join(tensors, 1)
    assert isinstance(out, dml.Tensor) and out.shape == (2, 7, 3)
    assert_bits_equal(out.numpy(), _concatenated(xs, 1))
    mixed = dml.join([tensors[0], xs[1], tensors[2]], 1)  # the first decides: a Tensor
    assert isinstance(mixed, dml.Tensor) and np.array_equal(mixed.numpy(), _concatenated(xs, 1))
    assert isinstance(dml.join([xs[0], tensors[1]], 1, device=device), np.ndarray)


@pytest.mark.parametrize("xs, axis, message", [
    ([], 0, "join: xs is an empty list; it takes at least one tensor"),
    (np.zeros((2, 2), np.float32), 0, "join: xs must be a list of numpy arrays, Tensors or Expressions, got ndarray"),
    ([np.zeros(2, np.float32), [1.0]], 0, "join: xs[1]: expected a numpy array or gpudml.Tensor, got list"),
    ([np.zeros(2, np.float32)], 1, "join: axis = 1 is outside [-1, 0] (xs[0] has 1 dimensions)"),
    ([np.zeros(2, np.float32), np.zeros(2, np.int32)], 0,
     "Join: input_tensors[1].data_type INT32 must equal output_tensor.data_type FLOAT32"),
    ([np.zeros((2, 3), np.float32), np.zeros((3, 3), np.float32)], 1,
     "Join: input_tensors[1].sizes[0] = 3 must equal output_tensor.sizes[0] = 2 (the sizes may differ on axis 1"),
    ([np.zeros((2, 3), np.float32), np.zeros(3, np.float32)], 0,
     "Join: all tensors must have the same DimensionCount (got input_tensors[0] 2, input_tensors[1] 1"),
])
def test_functional_errors(vulkan_device, xs, axis, message):
    with pytest.raises(dml.InvalidArgumentError, match=re.escape(message)):
        dml.join(xs, axis, device=vulkan_device)


# ------------------------------------------------------------------ graphs
def test_join_in_graphs(device):
    """A join of data-movement chains, of an input and a constant, read by a Reduce and by a
    Tile: every chain before it is one kernel; fused and unfused are bit-exact."""
    g = dml.Graph(device)
    x = g.input([3, 4], dtype=np.int16, name="x")
    y = g.input([3, 2], dtype=np.int16, name="y")
    a = dml.slice(dml.pad(x, [0, 1], [0, 1], mode="wrap"), [0, 0], [3, 6], [1, -1])
    b = dml.tile(y, [1, 2])
    constant = np.arange(9, dtype=np.int16).reshape(3, 3)
    j = dml.join([a, b, y, constant], 1)
    assert isinstance(j, dml.Expression) and j.shape == [3, 15]
    r = dml.reduce(dml.tile(j, [2, 1]), "max", [0])
    op = g.compile([r, j])
    names = [s.compiled.name for s in op.steps]
    assert names == ["Fused(Padding>Slice1)", "Tile", "Join", "Fused(Tile>Reduce)"]
    rng = np.random.default_rng(5)
    feed = {"x": random_bits(rng, np.int16, (3, 4)), "y": random_bits(rng, np.int16, (3, 2))}
    got, want = op(feed), g.compile([r, j], fuse=False)(feed)
    for a_, b_ in zip(got, want, strict=True):
        assert_bits_equal(a_, b_)
    padded = reference.pad(feed["x"], [0, 1], [0, 1], "wrap")[:, ::-1]
    assert_bits_equal(got[1], _concatenated([padded, np.tile(feed["y"], [1, 2]), feed["y"], constant], 1))


def test_a_join_of_many_graph_values(device):
    """40 node outputs joined: one Join step, 40 dispatches."""
    g = dml.Graph(device)
    x = g.input([2, 3], dtype=np.float32, name="x")
    parts = [dml.slice(x, [0, i % 3], [2, 1]) for i in range(40)]
    j = dml.join(parts, 1)
    op = g.compile([j])
    assert op.steps[-1].compiled.name == "Join" and op.steps[-1].dispatches == 40
    array = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert_bits_equal(op({"x": array})[0], array[:, [i % 3 for i in range(40)]])


def test_graph_errors_name_the_node(vulkan_device):
    g, other = dml.Graph(vulkan_device), dml.Graph(vulkan_device)
    x, z = g.input([2, 2], name="x"), other.input([2, 2], name="z")
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("join: xs[0] is an Expression of")):
        dml.join([x, z], 0)
    with pytest.raises(dml.InvalidArgumentError, match=re.escape(
            "graph node 0 (Join): Join: input_tensors[1].sizes[1] = 3 must equal output_tensor.sizes[1] = 2")):
        dml.join([x, g.input([2, 3], name="w")], 0)


# ------------------------------------------------------------------ command line
def test_cli_shader_join(capsys):
    from gpudml import cli

    assert cli.main(["shader", "join", "--shape", "2,3", "--axis", "-1", "--axis-sizes", "4,1", "--caps", "gpu"]) == 0
    out = capsys.readouterr().out
    assert "// Join at FL_6_4" in out and "// strategy coalesced (eligible: coalesced, strided)" in out
    assert out.count("// dispatch ") == 3


# ------------------------------------------------------------------ fuzz (run by tests/test_fuzz.py)
@st.composite
def valid_cases(draw) -> Case:
    level, row, rank = support_row(draw, join.SUPPORT)
    data_type = type_of(draw, row, "input_tensors")
    sizes = sizes_of(draw, rank, {1: 60, 2: 12, 3: 6, 4: 4}.get(rank, 2))
    axis = draw(st.integers(0, rank - 1))
    parts = [sizes[:axis] + [draw(st.integers(1, max(1, sizes[axis])))] + sizes[axis + 1:]
             for _ in range(draw(st.integers(1, 4)))]
    out_sizes = sizes[:axis] + [sum(p[axis] for p in parts)] + sizes[axis + 1:]
    desc = dml.JoinOperatorDesc([tensor(draw, data_type, p) for p in parts],
                                tensor(draw, data_type, out_sizes, output=True), axis)
    return Case(level, desc, lambda xs: reference.join(xs, axis), [random_fill] * len(parts))


def broken_fields(desc):
    """(builder, fragment, kind) with one of the operator's own fields broken."""
    return broken_parts(desc, "output_tensor", "input_tensors", "InputCount")


@st.composite
def functional_calls(draw, x, shape):
    """(keyword arguments, expected(x), the list holding x) for one call, some hostile."""
    rank = len(shape)
    axis = draw(st.integers(-rank, rank - 1))
    dtype = x.dtype.newbyteorder("=") if isinstance(x, np.ndarray) and x.dtype.kind in "fiu" else np.dtype(np.float32)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    others = [random_bits(rng, dtype, [draw(st.integers(1, 4)) if d == axis % rank else n for d, n in enumerate(shape)])
              for _ in range(draw(st.integers(0, 2)))]
    args = {"axis": maybe_hostile(draw, axis)}
    return args, lambda a: reference.join([a, *others], args["axis"]), [x, *others]


FUZZ = OpFuzz(valid_cases(), broken_fields, functional_calls,
              fields=("xs", "input_tensors", "axis", "output_tensor", "device"))
