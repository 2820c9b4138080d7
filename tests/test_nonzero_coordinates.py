"""NonzeroCoordinates (DML_NONZERO_COORDINATES): what the conformance kit does not cover:
-0.0 and NaN, all-zero and all-non-zero inputs, fewer columns than the rank, inputs long
enough that the scan runs in chunks (both strategies, both adapter classes), the rows past
the count (zeros, gpudml's choice), each validation rule's message and the command line."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_bits_equal

import gpudml as dml
from gpudml import reference
from gpudml.kernels import nonzero as family
from gpudml.kernels import scan
from gpudml.ops import nonzero_coordinates as nz

DT = dml.DataType


def _check(x, device, **kwargs):
    count, coords = dml.nonzero_coordinates(x, device=device, **kwargs)
    want_count, want = reference.nonzero_coordinates(x, **kwargs)
    assert_bits_equal(np.asarray(count), want_count)
    assert_bits_equal(np.asarray(coords), want)
    return int(np.asarray(count).ravel()[0]), np.asarray(coords)


def test_reference_is_numpys_nonzero():
    """Independently: numpy's argwhere, row-major; the rows past the count zeros."""
    x = np.array([[[[0, 5], [0, 0]], [[7, 0], [0, 1]]]], np.int16)
    count, coords = reference.nonzero_coordinates(x, columns=3)
    assert count.shape == (1, 1, 1, 1) and count.ravel()[0] == 3
    assert coords.shape == (1, 1, 8, 3)
    assert coords[0, 0, :3].tolist() == [[0, 0, 1], [1, 0, 0], [1, 1, 1]]
    assert not coords[0, 0, 3:].any()


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_signed_zero_is_zero_and_nan_is_not(device, dtype):
    """The page: -0.0 and 0.0 are zero; NaN (any payload) and the infinities and subnormals
    are not (they compare unequal to zero)."""
    bits = np.array([0x8000, 0x0000, 0x7E01, 0xFC00, 0x0001, 0x8001], np.uint16) if dtype == np.float16 else \
        np.array([0x80000000, 0, 0x7FC00123, 0xFF800000, 1, 0x80000001], np.uint32)
    x = bits.view(dtype).reshape(1, 1, 2, 3)
    count, coords = _check(x, device)
    assert count == 4
    assert coords[0, 0, :4, 2:].tolist() == [[0, 2], [1, 0], [1, 1], [1, 2]]


@pytest.mark.parametrize("fill", [0, 1])
def test_all_zero_and_all_non_zero(device, fill):
    """No non-zero element: count 0 and every row zeros; every element: the count is M and
    the coordinates every position in order."""
    x = np.full((1, 3, 4, 5), fill, np.uint8)
    count, coords = _check(x, device)
    assert count == fill * 60
    if fill:
        assert coords.reshape(60, 4).tolist() == [list(i) for i in np.ndindex(1, 3, 4, 5)]


@pytest.mark.parametrize("columns", [2, 3, 5])
def test_columns_from_the_effective_rank(device, columns):
    """Input [1, 1, 1, 6, 7] (effective rank 2): 2-5 columns, the last coordinates of each."""
    x = (np.arange(42).reshape(1, 1, 1, 6, 7) % 3 == 1).astype(np.int32)
    count, coords = _check(x, device, columns=columns)
    assert count == 14 and coords.shape == (1, 1, 1, 42, columns)


@pytest.mark.parametrize("strategy", family.FAMILY.strategies)
def test_long_inputs_scan_in_chunks(adapter, strategy):
    """300,000 elements (the scan cuts them in chunks under either strategy), forced on each
    strategy on a Device of each adapter class: the same bits as the reference, twice."""
    rng = np.random.default_rng(5)
    x = (rng.random((1, 3, 400, 250)) < 0.3).astype(np.float32) * rng.standard_normal((1, 3, 400, 250)).astype(
        np.float32)
    desc = nz.infer_output(dml.TensorDesc(DT.FLOAT32, x.shape))
    assert len(family.FAMILY.plan(nz.problem(desc), None, strategy).dispatches) >= 4  # chunked scan: 2 passes
    want = reference.nonzero_coordinates(x)
    for cls in ("cpu", "gpu"):
        device = dml.Device(adapter=adapter, adapter_class=cls)
        op = device.compile_operator(device.create_operator(desc), strategy=strategy)
        for _ in range(2):
            got = op.execute([x])
            assert_bits_equal(np.asarray(got[0]), want[0])
            assert_bits_equal(np.asarray(got[1]), want[1])


def test_the_scan_is_the_scan_familys():
    """The positions are CUMULATIVE_SUMMATION's kernels (the scan family's template), between
    the two passes of the compaction's own."""
    desc = nz.infer_output(dml.TensorDesc(DT.INT8, (1, 2, 3, 4)))
    plan = family.FAMILY.plan(nz.problem(desc), None, "runs")
    templates = [d.template for d in plan.dispatches]
    assert templates[0] == templates[-1] == "nonzero_coordinates.wgsl.j2"
    assert set(templates[1:-1]) == {"cumulative_summation.wgsl.j2"}
    assert family.FAMILY.strategies == scan.STRATEGIES


def _desc(sizes=(1, 2, 3, 4), dtype=DT.FLOAT32, count=None, coords=None, count_type=DT.UINT32,
          coords_type=DT.UINT32):
    m = int(np.prod(sizes))
    rank = len(sizes)
    return dml.NonzeroCoordinatesOperatorDesc(
        dml.TensorDesc(dtype, sizes), dml.TensorDesc(count_type, count or (1,) * rank),
        dml.TensorDesc(coords_type, coords or (1,) * (rank - 2) + (m, rank)))


@pytest.mark.any_class
@pytest.mark.parametrize("desc, message", [
    (_desc(count=(1, 1, 1, 2)), "NonzeroCoordinates: output_count_tensor.sizes [1, 1, 1, 2] must all be 1"),
    (_desc(coords=(1, 1, 25, 4)), "NonzeroCoordinates: output_coordinates_tensor.sizes [1, 1, 25, 4] must be "
                                  "[1, 1, M = 24, N] with 3 <= N <= 4"),
    (_desc(coords=(1, 1, 24, 2)), "with 3 <= N <= 4"),
    (_desc(coords=(1, 1, 24, 5)), "with 3 <= N <= 4"),
    (_desc(coords=(2, 1, 12, 4)), "must be [1, 1, M = 24, N]"),
    (_desc(count_type=DT.INT32), "output_count_tensor.data_type INT32 is not supported at FL_6_4 (supported: UINT32)"),
    (_desc(coords_type=DT.UINT64), "output_coordinates_tensor.data_type UINT64 is not supported"),
    (_desc(dtype=DT.INT64), "input_tensor.data_type INT64 is not supported"),
    (_desc(sizes=(1, 1, 1, 2, 3, 4)), "DimensionCount 6 is not supported at FL_6_4 (supported: 4, 5)"),
    (dml.NonzeroCoordinatesOperatorDesc(dml.TensorDesc(DT.FLOAT32, (1, 2, 3, 4)),
                                        dml.TensorDesc(DT.UINT32, (1, 1, 1)), dml.TensorDesc(DT.UINT32, (1, 1, 24, 4))),
     "all tensors must have the same DimensionCount (got input_tensor 4, output_count_tensor 3"),
])
def test_bad_descriptions(vulkan_device, desc, message):
    with pytest.raises(dml.InvalidArgumentError) as info:
        vulkan_device.create_operator(desc)
    assert message in str(info.value)


@pytest.mark.any_class
def test_before_fl_3_0_and_bad_columns(at_level, vulkan_device):
    with pytest.raises(dml.InvalidArgumentError, match=r"not available at feature level FL_2_1 \(introduced at FL_3_0"):
        at_level(dml.FeatureLevel.FL_2_1).create_operator(_desc())
    x = np.ones((1, 1, 2, 3), np.float32)
    for columns, text in ((0, "columns = 0 must be at least 1"), (1.5, "columns: expected an integer"),
                          (1, "with 2 <= N <= 4")):
        with pytest.raises(dml.InvalidArgumentError, match=text.replace("[", r"\[")):
            dml.nonzero_coordinates(x, columns=columns, device=vulkan_device)


@pytest.mark.any_class
def test_command_line(capsys):
    from gpudml import cli

    assert cli.main(["shader", "nonzero_coordinates", "--caps", "gl-cpu", "--shape", "1,1,12,5", "--columns",
                     "2"]) in (0, None)
    out = capsys.readouterr().out
    assert "cumulative_summation" in out or "fn combine" in out
    assert "coordinates_set" in out
