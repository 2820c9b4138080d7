"""ScatterElements (== Scatter): what the conformance kit does not cover: the page's example
2 (its input printed as {2,3} with three rows), duplicates decided by index order under
every strategy and position chunking, each reduction's order (float16 sums where the order
changes the result), dropped and negative indices at the index types' extremes, every
validation rule's message, the feature levels, and the command line."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conformance import HIGHEST, Case, run_every_variant
from conftest import assert_bits_equal

import gpudml as dml
from gpudml import cli, reference
from gpudml.ops import scatter_elements as se

DT = dml.DataType
SPEC = se.SPEC


def _desc(in_sizes=(3, 3), index_sizes=(2, 3), axis=0, dtype=DT.FLOAT32, index_dtype=DT.UINT32, reduction=None,
          out=None, updates=None):
    x = dml.TensorDesc(dtype, in_sizes)
    desc = se.infer_output(x, dml.TensorDesc(index_dtype, index_sizes),
                           updates or dml.TensorDesc(dtype, index_sizes), axis, reduction)
    return desc if out is None else dml.ScatterElementsOperatorDesc(
        desc.input_tensor, desc.indices_tensor, desc.updates_tensor, out, desc.axis, desc.reduction)


def _every_strategy(device, desc, arrays, chunks=(None, 2)):
    """Each eligible strategy's result, with its own chunk of positions and with `chunks`."""
    op = device.create_operator(desc)
    results = {}
    for strategy in SPEC.planner.strategies_for(desc, device.caps):
        for chunk in chunks:
            compiled = device.compile_operator(op, strategy, options=None if chunk is None else {"chunk": chunk})
            results[strategy, chunk] = compiled.execute(arrays)[0]
    return results


def test_page_example_2_on_its_three_rows(device):
    """Example 2 prints InputTensor as Sizes {2,3} with three rows of zeros: its output and
    pseudocode need {3,3}."""
    got = dml.scatter_elements(np.zeros((3, 3), np.float32), np.array([[1, 0, 2], [0, 2, 1]], np.uint32),
                               np.array([[10, 11, 12], [20, 21, 22]], np.float32), 0, device=device)
    assert_bits_equal(got, np.array([[20, 11, 0], [10, 0, 22], [0, 21, 12]], np.float32))


@pytest.mark.parametrize("reduction, want", [
    (None, [7, 0, 0, 3, 0]),          # the highest position of duplicates wins
    ("add", [2048, 0, 0, 3, 0]),      # (2048 + 1) + 1 in float16: 2048 twice (ties to even)
    ("mul", [2048, 1, 1, 3, 1]),      # x of ones
    ("max", [2048, 0, 0, 3, 0]),
    ("min", [1, 4096, 4096, 3, 4096]),  # x of 4096s
])
def test_duplicates_in_index_order_under_every_strategy(device, reduction, want):
    """Three updates of element 0 (2048, 1, 1 in float16, index order), one of element 3:
    every strategy, with its own chunk of positions and with chunks of 2 (dispatches in
    order), gives the sequential result of numpy's float16 arithmetic."""
    x = np.full(5, {"mul": 1, "min": 4096}.get(reduction, 0), np.float16)
    indices = np.array([0, 3, 0, 0], np.int32)
    updates = np.array([2048, 3, 1, 1], np.float16)
    if reduction is None:
        updates[-1] = 7
    desc = _desc((5,), (4,), 0, DT.FLOAT16, DT.INT32, reduction)
    want = np.array(want, np.float16)
    assert_bits_equal(reference.scatter_elements(x, indices, updates, 0, reduction), want)
    results = _every_strategy(device, desc, [x, indices, updates])
    assert {s for s, _ in results} == {"lines", "elements"}
    for got in results.values():
        assert_bits_equal(got, want)


@pytest.mark.parametrize("index_dtype", [np.int64, np.uint64, np.int32, np.uint32])
def test_dropped_and_negative_indices_at_the_extremes(device, index_dtype):
    """Out-of-range indices (past either end, the type's extremes, around 2^32) write
    nothing; a signed one in [-n, 0) counts from the end; every strategy agrees."""
    info = np.iinfo(index_dtype)
    values = [v for v in (5, 6, -6, info.min, info.max, 2**32, 2**32 + 1, -(2**32), -1, -5, 2) if
              info.min <= v <= info.max]
    indices = np.array(values, index_dtype).reshape(1, -1)
    updates = np.arange(1, indices.size + 1, dtype=np.int32).reshape(1, -1)
    x = np.full((1, 5), -9, np.int32)
    want = reference.scatter_elements(x, indices, updates, 1)
    expect = np.full((1, 5), -9, np.int32)
    for i, v in enumerate(values):
        if info.min < 0 and -5 <= v < 0:
            expect[0, v + 5] = i + 1
        elif 0 <= v < 5:
            expect[0, v] = i + 1
    assert_bits_equal(want, expect)
    desc = _desc((1, 5), indices.shape, 1, DT.INT32, DT.from_numpy(indices.dtype))
    for got in _every_strategy(device, desc, [x, indices, updates], (None,)).values():
        assert_bits_equal(got, want)


@pytest.mark.parametrize("dtype, reduction", [(DT.INT8, "add"), (DT.UINT16, "max"), (DT.INT64, "mul"),
                                              (DT.UINT64, "min"), (DT.FLOAT64, None), (DT.INT16, None)])
def test_types_and_layouts(device, dtype, reduction):
    """8/16-bit (through the scratch words), 64-bit (W64) and FLOAT64 (bits), a strided
    output and broadcast (stride 0) updates, under every strategy (conformance's run_case:
    roomy buffers, only the output's elements written)."""
    x = dml.TensorDesc(dtype, [3, 4, 5])
    updates = dml.TensorDesc(dtype, [3, 6, 5], [0, 5, 1])  # one [6, 5] plane for every row
    desc = se.infer_output(x, dml.TensorDesc(DT.INT64, [3, 6, 5]), updates, 1, reduction)
    desc = dml.ScatterElementsOperatorDesc(desc.input_tensor, desc.indices_tensor, desc.updates_tensor,
                                           dml.TensorDesc(dtype, [3, 4, 5], [40, 10, 2]), 1, desc.reduction)
    assert run_every_variant(device, Case(SPEC, HIGHEST, desc), 7) == {"lines", "elements"}


def _lines_flags(device, desc) -> tuple[bool, bool]:
    """(quads, upd_blocks) of the `lines` plan's update dispatches."""
    plan = SPEC.planner.plan(desc, device.caps, "lines")
    steps = [d.params for d in plan.dispatches if d.params.get("step") == "lines"]
    return steps[0]["quads"], steps[0]["upd_blocks"]


@pytest.mark.parametrize("dtype, index_dtype, reduction, index_strides, flags", [
    (DT.FLOAT32, DT.INT64, None, None, (True, True)),  # W43's case
    (DT.FLOAT32, DT.UINT32, "add", None, (True, True)),
    (DT.INT64, DT.INT32, "max", None, (True, True)),  # 64-bit updates: two blocks per four
    (DT.UINT16, DT.UINT64, None, None, (True, False)),  # scratch words: the indices as blocks only
    (DT.INT32, DT.INT64, "mul", (8, 1), (True, False)),  # rows of 6 positions: a quad, then two alone
    (DT.FLOAT32, DT.INT64, None, (7, 1), (False, False)),  # a row starting off a block: element by element
])
def test_lines_reads_four_positions_as_blocks(device, dtype, index_dtype, reduction, index_strides, flags):
    """`lines` reads four positions' indices (and 32/64-bit updates) as 16-byte blocks where
    every line starts on a multiple of four elements: bit-exact under every strategy, the
    conformance kit's index values (duplicates, out-of-range and negative ones) included."""
    sizes = (3, 6) if index_strides else (3, 8)
    indices = dml.TensorDesc(index_dtype, sizes, index_strides)
    desc = se.infer_output(dml.TensorDesc(dtype, (3, 5)), indices, dml.TensorDesc(dtype, sizes), 1, reduction)
    assert _lines_flags(device, desc) == flags
    for seed in range(3):
        assert run_every_variant(device, Case(SPEC, HIGHEST, desc), seed) == {"lines", "elements"}


@pytest.mark.parametrize("dtype", [DT.FLOAT32, DT.INT64], ids=lambda t: t.name)
def test_wide_units_where_the_adapter_has_shader_int64(adapter, dtype):
    """With shader-int64 (lavapipe; not GL's llvmpipe) the input's copy into the output moves
    vec2<u64> blocks and `lines` loads four INT64 indices as one vec4<u64> unit; without it
    vec4<u32> blocks: bit-exact under every strategy, the kit's hostile indices included,
    on both adapter classes."""
    indices = dml.TensorDesc(DT.INT64, (4, 12))
    desc = se.infer_output(dml.TensorDesc(dtype, (4, 8)), indices, dml.TensorDesc(dtype, (4, 12)), 1, None)
    for adapter_class in ("cpu", "gpu"):
        device = dml.Device(adapter=adapter, adapter_class=adapter_class)
        wide = device.caps.has("shader-int64")
        plan = SPEC.planner.plan(desc, device.caps, "lines")
        copy = next(d for d in plan.dispatches if d.params.get("step") == "copy")
        lines = next(d for d in plan.dispatches if d.params.get("step") == "lines")
        assert [b.access for b in copy.buffers] == ["blocks64" if wide else "blocks"] * 2
        assert lines.params["index_units"] == wide
        for seed in range(2):
            assert run_every_variant(device, Case(SPEC, HIGHEST, desc), seed) == {"lines", "elements"}
        # Two INT64 indices (16 bytes): no vec4<u64> binding (its unit is 32 bytes).
        small = se.infer_output(dml.TensorDesc(DT.FLOAT32, (4,)), dml.TensorDesc(DT.INT64, (2,)),
                                dml.TensorDesc(DT.FLOAT32, (2,)), 0, None)
        steps = [d.params for d in SPEC.planner.plan(small, device.caps, "lines").dispatches]
        assert not any(d.get("index_units") for d in steps)
        x, idx, upd = np.zeros(4, np.float32), np.array([3, -1], np.int64), np.array([1.5, 2.5], np.float32)
        got = device.compile_operator(device.create_operator(small), "lines").execute([x, idx, upd])[0]
        assert_bits_equal(got, np.array([0, 0, 0, 2.5], np.float32))
        # Six (48 bytes: one 32-byte unit and a half): vec4<u32> blocks (builder.unit_access: a
        # binding of whole units only), the quad and the two positions after it bit-exact.
        six = se.infer_output(dml.TensorDesc(DT.FLOAT32, (8,)), dml.TensorDesc(DT.INT64, (6,)),
                              dml.TensorDesc(DT.FLOAT32, (6,)), 0, None)
        lines = next(d for d in SPEC.planner.plan(six, device.caps, "lines").dispatches if d.params["step"] == "lines")
        assert lines.params["quads"] and not lines.params["index_units"]
        x, idx = np.zeros(8, np.float32), np.array([7, -8, 2, 3, 5, -2], np.int64)
        upd = np.arange(1, 7, dtype=np.float32)
        got = device.compile_operator(device.create_operator(six), "lines").execute([x, idx, upd])[0]
        assert_bits_equal(got, reference.scatter_elements(x, idx, upd, 0))


def test_units_a_binding_cannot_hold_are_refused(adapter, monkeypatch):
    """A plan that asks for 32-byte index units without builder.unit_access (patched to take
    the widest access whatever the tensor) is refused before any GPU work: an InternalError
    from the builder's check, on lavapipe for the 48-byte binding (not whole units), on GL
    for want of shader-int64 (the copy's vec2<u64> blocks too: its plans take vec4<u32> ones)."""
    from gpudml.kernels import scatter
    device = dml.Device(adapter=adapter)
    six = se.infer_output(dml.TensorDesc(DT.FLOAT32, (8,)), dml.TensorDesc(DT.INT64, (6,)),
                          dml.TensorDesc(DT.FLOAT32, (6,)), 0, None)
    monkeypatch.setattr(scatter, "unit_access", lambda caps, accesses, *nbytes: accesses[0])
    why = (r"binds \w+ as (wide|blocks64) .* which has no shader-int64" if not device.caps.has("shader-int64")
           else r"binds indices_wide \(input 1, 48 bytes\) as wide.*\[48\] not a whole number of units")
    with pytest.raises(dml.InternalError, match=why):
        device.compile_operator(device.create_operator(six), "lines")


def test_wide_units_bound_in_segments(adapter):
    """`lines` with its vec4<u64> index units and vec2<u64> copy (shader-int64) on tensors
    bound in 256-byte segments: the same bits as the reference."""
    device = dml.Device(adapter=adapter, adapter_class="cpu", max_binding_bytes=256, max_buffer_bytes=1 << 20)
    rng = np.random.default_rng(4)
    x, upd = rng.random((8, 64), dtype=np.float32), rng.random((8, 64), dtype=np.float32)
    indices = np.argsort(rng.random((8, 64)), axis=1).astype(np.int64) - 32  # negatives count from the end
    desc = _desc((8, 64), (8, 64), 1, DT.FLOAT32, DT.INT64, None)
    got = device.compile_operator(device.create_operator(desc), "lines").execute([x, indices, upd])[0]
    assert_bits_equal(got, reference.scatter_elements(x, indices, upd, 1))


def test_lines_quads_keep_index_order(adapter):
    """Duplicates inside a quad and across quads and the tail: the last position wins (none),
    sums in position order (float32: 2^24 + 1 + 1 + 1 stays 2^24 one at a time, + 9 gives 2^24 + 8)."""
    device = dml.Device(adapter=adapter, adapter_class="cpu")
    x = np.zeros((2, 3), np.float32)
    indices = np.array([[0, 0, 2, 0, 1, 0, 2, 0], [2, 2, 2, 2, 1, 1, 1, 1]], np.int64)
    updates = np.array([[2**24, 1, 5, 1, 6, 1, 7, 9], [1, 2, 3, 4, 5, 6, 7, 8]], np.float32)
    for reduction in (None, "add"):
        desc = _desc((2, 3), (2, 8), 1, DT.FLOAT32, DT.INT64, reduction)
        assert _lines_flags(device, desc) == (True, True)
        want = reference.scatter_elements(x, indices, updates, 1, reduction)
        got = device.compile_operator(device.create_operator(desc), "lines").execute([x, indices, updates])[0]
        assert_bits_equal(got, want)
    assert_bits_equal(want, np.array([[2**24 + 8, 6, 12], [0, 26, 10]], np.float32))


@pytest.mark.parametrize("desc, message", [
    (lambda: _desc(axis=0, index_sizes=(2, 4)),
     "ScatterElements: indices_tensor.sizes[1] = 4 must equal input_tensor.sizes[1] = 3 (every dimension but axis 0)"),
    (lambda: _desc(updates=dml.TensorDesc(DT.FLOAT32, [2, 2])),
     "ScatterElements: updates_tensor.sizes [2, 2] must equal indices_tensor.sizes [2, 3]"),
    (lambda: _desc(updates=dml.TensorDesc(DT.INT32, [2, 3])),
     "ScatterElements: updates_tensor.data_type INT32 must equal input_tensor.data_type FLOAT32"),
    (lambda: _desc(out=dml.TensorDesc(DT.FLOAT32, [3, 4])),
     "ScatterElements: output_tensor.sizes [3, 4] must equal input_tensor.sizes [3, 3]"),
    (lambda: _desc(index_dtype=DT.INT16),
     "ScatterElements: indices_tensor.data_type INT16 is not supported"),
    (lambda: dml.ScatterElementsOperatorDesc(*(_desc().__dict__[f] for f in se.TENSORS), 2),
     "ScatterElements: axis = 2 must be in [0, OutputTensor.DimensionCount 2)"),
])
def test_validation_rule(vulkan_device, desc, message):
    with pytest.raises(dml.InvalidArgumentError, match=re.escape(message)):
        vulkan_device.create_operator(desc())


def test_fields_and_levels(vulkan_device):
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("scatter_elements: reduction = 'sum' must be one of")):
        _desc(reduction="sum")
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("ScatterElements: reduction = 'sum' must be one of")):
        dml.ScatterElementsOperatorDesc(*(_desc().__dict__[f] for f in se.TENSORS), 0, "sum")
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("scatter_elements: axis = 2 is outside [-2, 1]")):
        dml.scatter_elements(np.zeros((2, 2), np.float32), np.zeros((2, 2), np.uint32),
                             np.zeros((2, 2), np.float32), 2, device=vulkan_device)
    with pytest.raises(dml.InvalidArgumentError, match="scatter_elements: indices: indices must be integers"):
        dml.scatter_elements(np.zeros(2, np.float32), np.zeros(2, np.float32), np.zeros(2, np.float32),
                             device=vulkan_device)
    level = dml.Device(adapter="vulkan", feature_level="FL_1_0")
    with pytest.raises(dml.InvalidArgumentError, match="DimensionCount 2 is not supported at FL_1_0"):
        level.create_operator(_desc())
    level.create_operator(_desc((1, 1, 3, 3), (1, 1, 2, 3), 2))
    with pytest.raises(dml.InvalidArgumentError, match="input_tensor.data_type INT8 is not supported at FL_1_0"):
        level.create_operator(_desc((1, 1, 3, 3), (1, 1, 2, 3), 2, DT.INT8))
    with pytest.raises(dml.InvalidArgumentError, match="needs FL_4_1 or later"):
        dml.Device(adapter="vulkan", feature_level="FL_3_0").create_operator(_desc(dtype=DT.INT64))


@pytest.mark.parametrize("reduction", ["add", "mul", "max", "min"])
def test_float64_reductions_where_the_adapter_computes_f64(device, reduction):
    """FLOAT64 reductions in f64 (shader-f64 and shader-int64: lavapipe), NaN propagating;
    UnsupportedError naming the features elsewhere (llvmpipe through GL)."""
    rng = np.random.default_rng(6)
    x, indices, updates = rng.standard_normal((3, 7)), rng.integers(-7, 7, (3, 9)), rng.standard_normal((3, 9))
    updates[0, 0] = np.nan
    desc = _desc((3, 7), (3, 9), 1, DT.FLOAT64, DT.INT64, reduction)
    op = device.create_operator(desc)
    if not (device.caps.has("shader-f64") and device.caps.has("shader-int64")):
        with pytest.raises(dml.UnsupportedError, match="needs the shader features shader-f64 and shader-int64"):
            device.compile_operator(op)
        return
    want = reference.scatter_elements(x, indices, updates, 1, reduction)
    for strategy in ("lines", "elements"):
        (got,) = device.compile_operator(op, strategy).execute([x, indices, updates])
        assert np.array_equal(got, want, equal_nan=True)


def test_cli_shader(capsys):
    args = ["shader", "scatter_elements", "--shape", "8,16", "--axis", "1", "--indices-shape", "8,4",
            "--indices-dtype", "INT64", "--reduction", "max"]
    assert cli.main(args + ["--caps", "vulkan-cpu"]) == 0
    out = capsys.readouterr().out
    assert "// ScatterElements at FL_6_4" in out and "// strategy lines" in out
    assert cli.main(args + ["--caps", "gpu"]) == 0
    assert "// strategy elements" in capsys.readouterr().out
