"""TensorDesc: DMLCalcBufferTensorSize and every rule of DirectML's DML_BUFFER_TENSOR_DESC page."""

from __future__ import annotations

import pytest

import gpudml as dml
from gpudml.tensor_desc import check_tensor_desc

pytestmark = pytest.mark.any_class  # tensor descriptions: the same under either adapter class

F32, U8, F16, I64 = dml.DataType.FLOAT32, dml.DataType.UINT8, dml.DataType.FLOAT16, dml.DataType.INT64


@pytest.mark.parametrize("data_type, sizes, strides, expected", [
    (F32, [1, 1, 4, 4], None, 64),
    (U8, [3], None, 4),          # 3 bytes round up to a multiple of 4
    (U8, [5], None, 8),
    (F16, [3, 1], None, 8),
    (I64, [2, 3], None, 48),
    (F32, [2, 3], [0, 1], 12),   # broadcast rows: last index 2
    (F32, [2, 3], [4, 1], 28),   # padded rows: last index 6
    (U8, [2, 2], [10, 3], 16),   # last index 13 -> 14 bytes -> 16
])
def test_calc_buffer_tensor_size(data_type, sizes, strides, expected):
    assert dml.calc_buffer_tensor_size(data_type, sizes, strides) == expected
    assert dml.TensorDesc(data_type, sizes, strides).total_tensor_size_in_bytes == expected


def test_numeric_values_match_directml():
    assert [int(t) for t in dml.DataType] == list(range(1, 12))
    assert dml.DataType.INT64 == 11 and dml.DataType.FLOAT64 == 9
    assert dml.FeatureLevel.FL_3_1 == 0x3100 and dml.FeatureLevel.FL_5_0 == 0x5000
    assert dml.ReduceFunction.ARGMAX == 0 and dml.ReduceFunction.SUM_SQUARE == 11
    assert dml.PaddingMode.SYMMETRIC == 3


@pytest.mark.parametrize("desc, message", [
    (dml.TensorDesc(F32, []), "Op: t.sizes: DimensionCount 0 must be in 1..8 (sizes [])"),
    (dml.TensorDesc(F32, [1] * 9), "Op: t.sizes: DimensionCount 9 must be in 1..8"),
    (dml.TensorDesc(F32, [2, 3], [1]), "Op: t.strides: 1 strides [1] for DimensionCount 2"),
    (dml.TensorDesc(F32, [2, 3], [-1, 1]), "Op: t.strides[0] = -1 must be >= 0"),
    (dml.TensorDesc(F32, [65536, 65536]), "Op: t.sizes: element count 4294967296 of [65536, 65536] exceeds 4294967295"),
    (dml.TensorDesc(F32, [2, 3], total_tensor_size_in_bytes=20),
     "Op: t.total_tensor_size_in_bytes = 20 is smaller than DMLCalcBufferTensorSize = 24"),
    (dml.TensorDesc(F32, [2], flags=2), "Op: t.flags = 0x2: only DML_TENSOR_FLAG_OWNED_BY_DML (0x1) is defined"),
    (dml.TensorDesc(F32, [2], guaranteed_base_offset_alignment=8),
     "Op: t.guaranteed_base_offset_alignment = 8 must be 0 or a power of two >= 16"),
    (dml.TensorDesc(F32, [2], guaranteed_base_offset_alignment=48),
     "Op: t.guaranteed_base_offset_alignment = 48 must be 0 or a power of two >= 16"),
])
def test_rules(desc, message):
    with pytest.raises(dml.InvalidArgumentError) as err:
        check_tensor_desc("Op", "t", desc)
    assert str(err.value).startswith(message)


def test_valid_descs_pass():
    check_tensor_desc("Op", "t", dml.TensorDesc(F32, [2, 3], [0, 0]))  # broadcast input is fine
    check_tensor_desc("Op", "t", dml.TensorDesc(F32, [2], flags=1, guaranteed_base_offset_alignment=256))
    check_tensor_desc("Op", "t", dml.TensorDesc(F32, [3, 2], [2, 3]), is_output=True)  # interleaved, no alias


@pytest.mark.parametrize("sizes, strides", [([2, 3], [0, 1]), ([2, 2], [1, 1]), ([3, 2], [1, 2])])
def test_aliasing_output_rejected(sizes, strides):
    with pytest.raises(dml.InvalidArgumentError, match="share one address"):
        check_tensor_desc("Op", "out", dml.TensorDesc(F32, sizes, strides), is_output=True)


@pytest.mark.parametrize("bad, message", [
    (dict(sizes="abc"), "TensorDesc.sizes: expected a sequence of integers, got 'abc'"),
    (dict(sizes=[1.5]), "TensorDesc.sizes[0]: expected an integer, got 1.5"),
    (dict(sizes=[2], strides=[True]), "TensorDesc.strides[0]: expected an integer, got True"),
    (dict(data_type=99), "TensorDesc.data_type: 99 is not a DataType"),
    (dict(data_type="float128"), "TensorDesc.data_type: 'float128' is not a DataType"),
])
def test_constructor_rejects_garbage(bad, message):
    kwargs = dict(data_type=F32, sizes=[2]) | bad
    with pytest.raises(dml.InvalidArgumentError) as err:
        dml.TensorDesc(**kwargs)
    assert str(err.value).startswith(message)


@pytest.mark.parametrize("sizes, index, value", [([2, 3, -1], 2, -1), ([0], 0, 0), ([4, 0, 0], 1, 0)])
def test_a_size_below_one_is_refused_where_the_desc_is_built(sizes, index, value):
    """Not later, at create_operator: no operator's description can hold it."""
    with pytest.raises(dml.InvalidArgumentError) as err:
        dml.TensorDesc(F32, sizes)
    assert str(err.value).startswith(f"TensorDesc.sizes[{index}] = {value} must be >= 1 ")
    assert f"sizes {sizes}" in str(err.value)


def test_names_and_numbers_coerce():
    assert dml.TensorDesc("float16", [2]).data_type is F16
    assert dml.TensorDesc(11, (2,)).data_type is I64
