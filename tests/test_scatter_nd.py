"""ScatterNd: what the conformance kit does not cover: the page's example in the form its
constraints allow (the stored excerpt says why), the sizes rule of the module docstring and
the default dimension counts, duplicate and dropped tuples under every strategy (slices,
lines, elements) and position chunking, each validation rule's message, the levels, and the
command line."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conformance import HIGHEST, Case, run_every_variant
from conftest import assert_bits_equal

import gpudml as dml
from gpudml import cli, reference
from gpudml.ops import scatter_nd as snd

DT = dml.DataType
SPEC = snd.SPEC


def _desc(x=(4, 5, 6), indices=(1, 3, 2), updates=(1, 3, 6), dtype=DT.FLOAT32, index_dtype=DT.INT64, q=None, p=None,
          reduction=None):
    return snd.infer_output(dml.TensorDesc(dtype, x), dml.TensorDesc(index_dtype, indices),
                            dml.TensorDesc(dtype, updates), q, p, reduction)


def test_page_example_in_one_dimension_count(device):
    """The page prints {8}, {4,1} (as FLOAT32) and {4}: the same numbers at DimensionCount 2
    with UINT32 indices."""
    got = dml.scatter_nd(np.arange(1, 9, dtype=np.float32).reshape(1, 8), np.array([[4], [3], [1], [7]], np.uint32),
                         np.array([[9, 10, 11, 12]], np.float32), device=device)
    assert_bits_equal(got, np.array([[1, 11, 3, 10, 9, 6, 7, 12]], np.float32))


def test_sizes_rule_and_default_counts():
    """The page's own example of UpdatesTensor.Sizes ([6, 7] from the input, not the
    formula's [5, 6, 7]); the counts after the leading 1s, the input's grown to fit."""
    assert snd.updates_sizes((3, 4, 5, 6, 7), (1, 1, 1, 2, 3), 5, 3) == (1, 1, 2, 6, 7)
    assert snd.dimension_counts((1, 8), (4, 1), (1, 4)) == (1, 2)
    assert snd.dimension_counts((1, 5), (1, 1), (1, 5)) == (2, 1)  # the leading 1 is indexed
    assert snd.dimension_counts((1, 5), (1, 2), (1, 1)) == (2, 1)
    desc = _desc()
    assert (desc.input_dimension_count, desc.indices_dimension_count) == (3, 2)


@pytest.mark.parametrize("dtype, index_dtype, reduction", [
    (DT.FLOAT32, DT.INT64, None), (DT.UINT32, DT.UINT32, None), (DT.UINT8, DT.INT32, None),
    (DT.FLOAT16, DT.INT64, "add"), (DT.INT32, DT.UINT64, "mul"), (DT.INT8, DT.INT32, "max"),
])
def test_duplicates_and_dropped_tuples_under_every_strategy(device, dtype, index_dtype, reduction):
    """Tuples of 2 coordinates over [4, 5, 6] (rows of 6), repeated and out of range (the
    extremes of the index type among them): every strategy, chunks of 2 tuples too, is the
    reference's result (the last of duplicates, or the reduction in tuple order)."""
    info = np.iinfo(index_dtype.numpy)
    signed = info.min < 0
    tuples = [(1, 2), (3, 4), (1, 2), (4, 0), (0, 5), (-1, -5) if signed else (2, 2), (1, 2),
              (info.max, 0), (0, info.min), (3, 4)]
    indices = np.array(tuples, index_dtype.numpy).reshape(1, len(tuples), 2)
    rng = np.random.default_rng(5)
    x = rng.integers(0, 9, (4, 5, 6)).astype(dtype.numpy)
    updates = rng.integers(1, 9, (1, len(tuples), 6)).astype(dtype.numpy)
    desc = _desc(indices=indices.shape, updates=updates.shape, dtype=dtype, index_dtype=index_dtype,
                 reduction=reduction)
    want = reference.scatter_nd(x, indices, updates, reduction=reduction)
    op = device.create_operator(desc)
    strategies = SPEC.planner.strategies_for(desc, device.caps)
    assert ("slices" in strategies) == (reduction is None and dtype.size >= 4)
    for strategy in strategies:
        for options in (None, {"chunk": 2}):
            (got,) = device.compile_operator(op, strategy, options=options).execute([x, indices, updates])
            assert_bits_equal(got, want)


def test_layouts_every_variant(device):
    """Strided indices (every other tuple), a strided output and broadcast updates."""
    x = dml.TensorDesc(DT.FLOAT32, [6, 8], [16, 2])
    indices = dml.TensorDesc(DT.INT32, [5, 1], [2, 1])
    updates = dml.TensorDesc(DT.FLOAT32, [5, 8], [0, 1])
    desc = snd.infer_output(x, indices, updates)
    desc = dml.ScatterNdOperatorDesc(desc.input_tensor, indices, updates, dml.TensorDesc(DT.FLOAT32, [6, 8], [9, 1]),
                                     desc.input_dimension_count, desc.indices_dimension_count)
    assert run_every_variant(device, Case(SPEC, HIGHEST, desc), 3) == {"slices", "lines", "elements"}


@pytest.mark.parametrize("desc, message", [
    (lambda: _desc(updates=(1, 3, 5)),
     "ScatterNd: updates_tensor.sizes [1, 3, 5] must be [1, 3, 6]: indices_tensor.sizes[1..2) [3], then "
     "input_tensor.sizes[2..3) [6]"),
    (lambda: _desc(indices=(1, 3, 4), updates=(1, 1, 3)),
     "ScatterNd: indices_tensor.sizes[2] = 4 (the coordinates per index tuple) must be in [1, "
     "input_dimension_count 3]"),
    (lambda: _desc(q=2), "ScatterNd: input_tensor.sizes [4, 5, 6] must be 1 before its last 2 dimensions"),
    (lambda: _desc(q=4), "ScatterNd: input_dimension_count = 4 must be in [1, DimensionCount 3]"),
    (lambda: _desc(p=1), "ScatterNd: indices_tensor.sizes [1, 3, 2] must be 1 before its last 1 dimensions"),
    (lambda: _desc(x=(2, 3, 4), indices=(2, 3, 1), updates=(2, 3, 3), p=3, q=3),
     "ScatterNd: the index tuples' 2 batch dimensions and the slice's 2 dimensions pass DimensionCount 3"),
])
def test_validation_rule(vulkan_device, desc, message):
    with pytest.raises(dml.InvalidArgumentError, match=re.escape(message)):
        vulkan_device.create_operator(desc())


def test_levels(vulkan_device):
    with pytest.raises(dml.InvalidArgumentError, match="introduced at FL_2_1"):
        dml.Device(adapter="vulkan", feature_level="FL_2_0").create_operator(
            _desc((1, 4, 5, 6), (1, 1, 3, 2), (1, 1, 3, 6), index_dtype=DT.UINT32))
    level = dml.Device(adapter="vulkan", feature_level="FL_2_1")
    level.create_operator(_desc((1, 4, 5, 6), (1, 1, 3, 2), (1, 1, 3, 6), index_dtype=DT.UINT32))
    with pytest.raises(dml.InvalidArgumentError, match="indices_tensor.data_type INT64 is not supported at FL_2_1"):
        level.create_operator(_desc((1, 4, 5, 6), (1, 1, 3, 2), (1, 1, 3, 6)))
    with pytest.raises(dml.InvalidArgumentError, match="input_tensor.data_type INT64 is not supported"):
        vulkan_device.create_operator(_desc(dtype=DT.INT64))  # not in SCATTER_ND's table (SCATTER's FL_4_1 has it)


def test_cli_shader(capsys):
    assert cli.main(["shader", "scatter_nd", "--shape", "64,16", "--caps", "vulkan-cpu"]) == 0
    out = capsys.readouterr().out
    assert "// ScatterNd at FL_6_4" in out and "// strategy slices" in out
    assert cli.main(["shader", "scatter_nd", "--shape", "64,16", "--indices-shape", "8,2", "--reduction", "add",
                     "--caps", "vulkan-cpu"]) == 0
    assert "// strategy lines" in capsys.readouterr().out


def test_slices_of_whole_blocks(device):
    """Rows of 8 float32 (two 16-byte blocks each), packed: `slices` writes whole blocks;
    duplicate rows (the last wins), a dropped tuple, a negative one."""
    rng = np.random.default_rng(8)
    x = rng.random((6, 8), dtype=np.float32)
    indices = np.array([[2], [5], [2], [9], [-1], [0]], np.int64)
    updates = rng.random((6, 8), dtype=np.float32)
    desc = _desc((6, 8), (6, 1), (6, 8))
    plan = SPEC.planner.plan(desc, device.caps, "slices")
    assert plan.dispatches[-1].params["blocks"]
    (got,) = device.compile_operator(device.create_operator(desc), "slices").execute([x, indices, updates])
    want = x.copy()
    want[0], want[2], want[5] = updates[5], updates[2], updates[4]
    assert_bits_equal(got, want)
    assert_bits_equal(reference.scatter_nd(x, indices, updates), want)
