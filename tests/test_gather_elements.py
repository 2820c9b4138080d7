"""GatherElements: what the conformance kit (tests/test_conformance.py) does not cover: each
validation rule's message (FL 2.1's table too), index values (negative, out-of-range and
extreme indices clamp, a roomy buffer), the functional form against numpy.take_along_axis,
the kernel's stretch kinds under every strategy (broadcast indices), the GPU-class choice on a
software adapter, and the stage in fused chains."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conformance import HIGHEST, Case, index_values, run_every_variant
from conftest import assert_bits_equal, random_bits
from test_gather import HOSTILE, INDEX_TYPES, _clamp, roomy_input_reads

import gpudml as dml
from gpudml import reference
from gpudml.ops import gather_elements

DT = dml.DataType
FL = dml.FeatureLevel


def _desc(in_sizes=(3, 3), index_sizes=(2, 3), axis=0, dtype=DT.FLOAT32, index_dtype=DT.UINT32, out_sizes=None,
          out_dtype=None, index_strides=None):
    return dml.GatherElementsOperatorDesc(
        dml.TensorDesc(dtype, in_sizes), dml.TensorDesc(index_dtype, index_sizes, index_strides),
        dml.TensorDesc(out_dtype or dtype, out_sizes or index_sizes), axis)


def _raises(device, desc, message: str, level=None):
    with pytest.raises(dml.InvalidArgumentError, match=re.escape(message)):
        (device if level is None else level).create_operator(desc)


# ------------------------------------------------------------------ rules
@pytest.mark.parametrize("desc, message", [
    (_desc(axis=2), "GatherElements: axis = 2 must be in [0, DimensionCount 2)"),
    (_desc((3, 3), (2, 4), axis=0),
     "GatherElements: indices_tensor.sizes[1] = 4 must equal input_tensor.sizes[1] = 3 (every dimension but axis 0"),
    (_desc(out_sizes=(2, 2)), "GatherElements: output_tensor.sizes [2, 2] must equal indices_tensor.sizes [2, 3]"),
    (_desc(out_dtype=DT.FLOAT16), "GatherElements: output_tensor.data_type FLOAT16 must equal input_tensor.data_type"),
    (_desc(index_dtype=DT.INT16), "GatherElements: indices_tensor.data_type INT16 is not supported at"),
    (_desc(dtype=DT.FLOAT64), "GatherElements: input_tensor.data_type FLOAT64 is not supported"),
    (_desc((3, 3), (1, 2, 3)), "GatherElements: "),
], ids=["axis", "indices_sizes", "output_sizes", "output_type", "indices_type", "float64", "ranks"])
def test_rules(vulkan_device, desc, message):
    _raises(vulkan_device, desc, message)


def test_feature_level_2_1_table(at_level):
    """FL 2.1: DimensionCount 4 and UINT32 indices only; FL 3.0 adds the rest."""
    device = at_level(FL.FL_2_1)
    device.create_operator(_desc((1, 1, 3, 3), (1, 1, 2, 3), axis=2))
    _raises(device, _desc((3, 3), (2, 3)), "GatherElements: DimensionCount 2 is not supported at FL_2_1 "
                                            "(supported: 4); it needs FL_3_0 or later")
    _raises(device, _desc((1, 1, 3, 3), (1, 1, 2, 3), axis=2, index_dtype=DT.INT64),
            "GatherElements: indices_tensor.data_type INT64 is not supported at FL_2_1 (supported: UINT32); "
            "it needs FL_3_0 or later")
    with pytest.raises(dml.InvalidArgumentError, match="not available at feature level FL_2_0"):
        at_level(FL.FL_2_0).create_operator(_desc((1, 1, 3, 3), (1, 1, 2, 3), axis=2))


# ------------------------------------------------------------------ indices
@pytest.mark.parametrize("index_dtype", INDEX_TYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("axis", [0, 1])
def test_out_of_range_and_negative_indices_clamp(device, index_dtype, axis):
    """Axis of 5: negative indices count from the end (signed types), everything else clamps
    into [0, 4], the 64-bit extremes included."""
    values = HOSTILE[index_dtype]
    x = (np.arange(5 * len(values), dtype=np.int16) * 3 + 1).reshape((5, -1) if axis == 0 else (-1, 5))
    shape = (1, len(values)) if axis == 0 else (len(values), 1)
    indices = np.array(values, index_dtype.numpy).reshape(shape)
    got = dml.gather_elements(x, indices, axis, device=device)
    picks = [_clamp(v, 5, index_dtype.is_signed) for v in values]
    want = (x[picks, np.arange(len(values))].reshape(shape) if axis == 0
            else x[np.arange(len(values)), picks].reshape(shape))
    assert_bits_equal(got, want)
    assert_bits_equal(reference.gather_elements(x, indices, axis), want)


def test_roomy_input_buffer_is_never_read_past_the_tensor(device):
    roomy_input_reads(device, _desc((4,), (3,), axis=0, dtype=DT.UINT8, index_dtype=DT.INT64))


@pytest.mark.parametrize("shape, axis, size", [((5,), 0, 7), ((3, 4), 1, 6), ((2, 3, 4), 0, 1), ((2, 3, 4, 5), -2, 2)])
def test_functional_is_take_along_axis(vulkan_device, shape, axis, size):
    rng = np.random.default_rng(len(shape))
    x = random_bits(rng, np.float32, shape)
    index_shape = list(shape)
    index_shape[axis] = size
    indices = rng.integers(0, shape[axis], index_shape)  # int64
    got = dml.gather_elements(x, indices, axis=axis, device=vulkan_device)
    assert_bits_equal(got, np.take_along_axis(x, indices, axis=axis))


def test_functional_indices_errors(vulkan_device):
    with pytest.raises(dml.InvalidArgumentError, match="gather_elements: indices: indices must be integers"):
        dml.gather_elements(np.zeros((2, 2), np.float32), np.zeros((2, 2), np.float32), device=vulkan_device)
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("gather_elements: axis = 2 is outside [-2, 1]")):
        dml.gather_elements(np.zeros((2, 2), np.float32), np.zeros((2, 2), np.int32), 2, device=vulkan_device)


# ------------------------------------------------------------------ strategies
@pytest.mark.parametrize("case", [
    # (input sizes, indices sizes, axis, index strides): the kernel's stretch kinds
    ((6, 40), (6, 33), 1, None),  # the axis innermost: an element per stretch
    ((6, 40), (6, 33), 1, (1, 0)),  # one index per row (broadcast): one element repeated
    ((40, 6), (33, 6), 0, None),  # the axis outer, indices moving along the row: an element per stretch
    ((40, 6), (33, 6), 0, (1, 0)),  # one index per row: the row copied whole
    ((3, 5, 4, 7), (3, 2, 4, 7), 1, None),  # the outer and inner axes merge around the axis
], ids=lambda c: f"{c[0]}-{c[1]}-axis{c[2]}-{'broadcast' if c[3] else 'packed'}")
def test_stretch_kinds_under_every_strategy(device, case):
    in_sizes, index_sizes, axis, index_strides = case
    for index_dtype in (DT.INT32, DT.UINT64):
        desc = _desc(in_sizes, index_sizes, axis, DT.UINT16, index_dtype, index_strides=index_strides)
        ran = run_every_variant(device, Case(gather_elements.SPEC, HIGHEST, desc), len(in_sizes) + axis)
        assert "coalesced" in ran and "stretches" in ran


@pytest.mark.parametrize("case", [
    # (input sizes, input strides, indices sizes, axis, index strides, element type): `rows`
    ((6, 40), None, (6, 32), 1, None, DT.FLOAT32),  # the axis innermost, a row of 8 blocks
    ((3, 9), None, (3, 4), 1, None, DT.FLOAT32),  # rows of one block: a run crosses rows
    ((40, 8), None, (33, 8), 0, None, DT.FLOAT16),  # the axis outer, the indices moving along the row
    ((40, 16), None, (33, 16), 0, (1, 0), DT.UINT8),  # one index per row (broadcast)
    ((3, 5, 4, 8), None, (3, 2, 4, 8), 1, None, DT.INT32),  # outer and inner axes around the axis
    ((4, 12), (1, 4), (4, 8), 1, None, DT.INT16),  # a transposed input (strided reads)
    ((3, 9), None, (3, 8), 1, (10, 1), DT.FLOAT16),  # rows of indices 10 apart: blocks of 64-bit ones only
    # (vec2<u64> blocks with shader-int64, not 32-byte units)
    ((2, 1, 2, 1, 3, 1, 2, 17), None, (2, 1, 2, 1, 3, 1, 2, 16), 7, None, DT.INT8),  # rank 8
], ids=lambda c: f"{c[0]}-axis{c[3]}-{c[5].name}{'-broadcast' if c[4] else ''}{'-strided' if c[1] else ''}")
def test_rows_strategy(device, case):
    """`rows` (packed outputs whose rows are whole 16-byte blocks; a block's indices loaded
    as 16-byte blocks where they are whole ones): bit-exact against the reference under every
    strategy, with every index type (hostile values included)."""
    in_sizes, in_strides, index_sizes, axis, index_strides, dtype = case
    for seed, index_dtype in enumerate(INDEX_TYPES):
        desc = dml.GatherElementsOperatorDesc(
            dml.TensorDesc(dtype, in_sizes, in_strides), dml.TensorDesc(index_dtype, index_sizes, index_strides),
            dml.TensorDesc(dtype, index_sizes), axis)
        assert "rows" in run_every_variant(device, Case(gather_elements.SPEC, HIGHEST, desc), seed)


def test_rows_is_the_cpu_class_choice_where_it_fits(adapter):
    """CPU class: `rows` first where the kernel's rows are whole 16-byte blocks, absent where
    not (a row of 7 float32, a strided output); GPU class: `coalesced` first, `rows` last."""
    cpu = dml.Device(adapter=adapter, adapter_class="cpu")
    gpu = dml.Device(adapter=adapter, adapter_class="gpu")
    planner = gather_elements.SPEC.planner
    fits = _desc((8, 300), (8, 256), 1, DT.FLOAT32, DT.INT64)
    assert planner.strategies_for(fits, cpu.caps)[0] == "rows"
    assert planner.strategies_for(fits, gpu.caps)[0] == "coalesced"
    assert planner.strategies_for(fits, gpu.caps)[-1] == "rows"
    assert cpu.compile_operator(cpu.create_operator(fits)).strategy == "rows"
    odd = _desc((8, 300), (8, 7), 1, DT.FLOAT32, DT.INT64)
    gaps = dml.GatherElementsOperatorDesc(
        dml.TensorDesc(DT.FLOAT32, (8, 300)), dml.TensorDesc(DT.INT64, (8, 256)),
        dml.TensorDesc(DT.FLOAT32, (8, 256), (512, 1)), 1)
    for desc in (odd, gaps):
        assert "rows" not in planner.strategies_for(desc, cpu.caps)
    # The indices as 16-byte blocks: packed along the row, rows on whole blocks.
    rows_apart = [_desc((8, 300), (8, 256), 1, DT.FLOAT32, t, index_strides=(258, 1)) for t in (DT.INT64, DT.INT32)]
    params = [dict(dict(planner.plan(d, cpu.caps, "rows").dispatches[0].params)["stages"][0].params)
              for d in (fits, *rows_apart)]
    assert [p["index_blocks"] for p in params] == [True, True, False]
    # With shader-int64 (lavapipe; not GL) 64-bit indices load as 32-byte units where a
    # block's are whole ones (rows 4 indices apart), else as vec2<u64> blocks; outputs as u64.
    wide = cpu.caps.has("shader-int64")
    assert [p["index_access"] for p in params] == (["wide", "blocks64", "blocks"] if wide else ["blocks"] * 3)
    assert [p["out_wide"] for p in params] == [wide] * 3


def test_rows_wide_units_bound_in_segments(adapter):
    """`rows` with its 32-byte index units and u64 output blocks (shader-int64) on tensors
    bound in 256-byte segments: every unit read from its segment, the same bits."""
    device = dml.Device(adapter=adapter, adapter_class="cpu", max_binding_bytes=256, max_buffer_bytes=1 << 20)
    rng = np.random.default_rng(3)
    x = random_bits(rng, np.float32, (8, 64))
    idx = index_values(rng, DT.INT64, 64, 8 * 64).reshape(8, 64)
    compiled = device.compile_operator(device.create_operator(_desc((8, 64), (8, 64), 1, DT.FLOAT32, DT.INT64)))
    assert compiled.strategy == "rows"
    (out,) = compiled.execute([x, idx])
    assert_bits_equal(out, reference.gather_elements(x, idx, 1))


def test_gpu_class_strategy_on_a_software_adapter(adapter):
    """A GPU-class Device of the software adapter plans the coalesced strategy first."""
    device = dml.Device(adapter=adapter, adapter_class="gpu")
    desc = _desc((8, 300), (8, 257), 1, DT.FLOAT32, DT.INT64)
    compiled = device.compile_operator(device.create_operator(desc))
    assert compiled.strategy == "coalesced"
    rng = np.random.default_rng(1)
    x = random_bits(rng, np.float32, (8, 300))
    idx = index_values(rng, DT.INT64, 300, 8 * 257).reshape(8, 257)
    (out,) = compiled.execute([x, idx])
    assert_bits_equal(out, reference.gather_elements(x, idx, 1))


# ------------------------------------------------------------------ graphs
def test_graph_fuses_with_movement_and_elementwise(device):
    """pad > gather_elements > slice is one kernel, bit-exact against the references; a
    Reduce reads through it."""
    rng = np.random.default_rng(5)
    array = random_bits(rng, np.float16, (4, 6))
    indices = index_values(rng, DT.INT64, 7, 5 * 7).reshape(5, 7)
    g = dml.Graph(device)
    x = g.input([4, 6], dtype=np.float16, name="x")
    padded = dml.pad(x, [1, 0], [0, 1], mode="reflection")
    y = dml.slice(dml.gather_elements(padded, indices, 1), [0, 1], [5, 6], [-1, 1])
    fused = g.compile([y])
    assert [s.compiled.name for s in fused.steps] == ["Fused(Padding>GatherElements>Slice1)"]
    want = reference.slice(reference.gather_elements(reference.pad(array, [1, 0], [0, 1], "reflection"), indices, 1),
                           [0, 1], [5, 6], [-1, 1])
    assert_bits_equal(fused({"x": array})[0], want)
    assert_bits_equal(g.compile([y], fuse=False)({"x": array})[0], want)
    reduced = g.compile([dml.reduce(y, "max", [1])])
    assert reduced.steps[0].compiled.name == "Fused(Padding>GatherElements>Slice1>Reduce)"
    assert_bits_equal(reduced({"x": array})[0], want.max(axis=1, keepdims=True))
