"""OneHot: what the conformance kit does not cover: OnValue's place in ValuesTensor (its
fastest-changing dimension of size > 1, strided values too), indices at their types'
extremes under both strategies, each validation rule's message, the levels, and the
command line."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conformance import HIGHEST, Case, run_every_variant
from conftest import assert_bits_equal

import gpudml as dml
from gpudml import cli, reference
from gpudml.ops import one_hot as oh

DT = dml.DataType
SPEC = oh.SPEC


def _desc(indices=(3, 1), values=(1, 2), length=4, axis=1, index_dtype=DT.UINT32, dtype=DT.FLOAT32):
    return oh.infer_output(dml.TensorDesc(index_dtype, indices), dml.TensorDesc(dtype, values), length, axis)


@pytest.mark.parametrize("value_sizes, strides, on", [
    ((1, 3, 1), None, 1), ((2, 1, 1), None, 1), ((1, 1, 4), None, 1), ((1, 2, 3), None, 1),
    ((1, 3, 1), (0, 5, 1), 5),   # strided values: OnValue is 5 elements on
])
def test_on_value_is_element_1_of_the_last_axis_longer_than_1(device, value_sizes, strides, on):
    values = dml.TensorDesc(DT.INT16, value_sizes, strides)
    desc = oh.infer_output(dml.TensorDesc(DT.INT32, [2, 1, 3]), values, 4, 1)
    assert oh.problem(desc).on_offset == on
    buffer = np.arange(10, 10 + values.required_elements, dtype=np.int16)
    indices = np.array([[[0, 3, -1]], [[9, -4, -5]]], np.int32)
    compiled = device.compile_operator(device.create_operator(desc))
    (got,) = compiled.execute([indices, buffer])
    want = np.where(np.array([[0, 3, 3], [9, 0, 9]])[:, None, :] == np.arange(4)[None, :, None],
                    buffer[on], buffer[0]).astype(np.int16)
    assert_bits_equal(got, want)


@pytest.mark.parametrize("index_dtype", [DT.INT64, DT.UINT64, DT.INT32, DT.UINT32])
def test_index_extremes_every_strategy(device, index_dtype):
    """Indices past either end, at the type's extremes and around 2^32 select nothing;
    signed ones in [-n, 0) count from the end; both strategies, a strided output."""
    info = np.iinfo(index_dtype.numpy)
    values = [v for v in (0, 4, 5, -1, -5, -6, info.min, info.max, 2**32, 2**32 + 3, -(2**32) + 2, 3) if
              info.min <= v <= info.max]
    indices = np.array(values, index_dtype.numpy).reshape(-1, 1)
    want = reference.one_hot(indices, np.array([[7, 9]], np.uint8), 5, 1)
    for i, v in enumerate(values):
        hot = v + 5 if info.min < 0 and -5 <= v < 0 else v
        assert list(want[i]) == [9 if j == hot else 7 for j in range(5)]
    desc = oh.infer_output(dml.TensorDesc(index_dtype, indices.shape), dml.TensorDesc(DT.UINT8, [1, 2]), 5, 1)
    op = device.create_operator(desc)
    for strategy in ("runs", "elements"):
        (got,) = device.compile_operator(op, strategy).execute([indices, np.array([7, 9], np.uint8)])
        assert_bits_equal(got, want)
    strided = dml.OneHotOperatorDesc(desc.indices_tensor, desc.values_tensor,
                                     dml.TensorDesc(DT.UINT8, desc.output_tensor.sizes, [7, 1]), 1)
    assert run_every_variant(device, Case(SPEC, HIGHEST, strided), 2) == {"runs", "elements"}


@pytest.mark.parametrize("desc, message", [
    (lambda: dml.OneHotOperatorDesc(dml.TensorDesc(DT.UINT32, [3, 2]), dml.TensorDesc(DT.FLOAT32, [1, 2]),
                                    dml.TensorDesc(DT.FLOAT32, [3, 4]), 1),
     "OneHot: indices_tensor.sizes[1] = 2 must be 1 (the axis 1)"),
    (lambda: dml.OneHotOperatorDesc(dml.TensorDesc(DT.UINT32, [2, 1]), dml.TensorDesc(DT.FLOAT32, [1, 2]),
                                    dml.TensorDesc(DT.FLOAT32, [3, 4]), 1),
     "OneHot: indices_tensor.sizes[0] = 2 must be output_tensor.sizes[0] = 3"),
    (lambda: _desc(values=(1, 1)), "OneHot: values_tensor.sizes [1, 1] must hold at least two elements"),
    (lambda: dml.OneHotOperatorDesc(*(_desc().__dict__[f] for f in ("indices_tensor", "values_tensor")),
                                    dml.TensorDesc(DT.FLOAT16, [3, 4]), 1),
     "OneHot: output_tensor.data_type FLOAT16 must equal values_tensor.data_type FLOAT32"),
    (lambda: dml.OneHotOperatorDesc(*(_desc().__dict__[f] for f in ("indices_tensor", "values_tensor",
                                                                     "output_tensor")), 2),
     "OneHot: axis = 2 must be less than IndicesTensor.DimensionCount 2"),
    (lambda: _desc(index_dtype=DT.INT8), "OneHot: indices_tensor.data_type INT8 is not supported"),
])
def test_validation_rule(vulkan_device, desc, message):
    with pytest.raises(dml.InvalidArgumentError, match=re.escape(message)):
        vulkan_device.create_operator(desc())


def test_functional_and_levels(vulkan_device):
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("one_hot: output_length = 0 must be at least 1")):
        dml.one_hot(np.zeros((2, 1), np.int64), np.array([[0, 1]], np.float32), 0, device=vulkan_device)
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("one_hot: indices: indices must be integers")):
        dml.one_hot(np.zeros((2, 1), np.float32), np.array([[0, 1]], np.float32), 3, device=vulkan_device)
    level = dml.Device(adapter="vulkan", feature_level="FL_2_0")
    level.create_operator(_desc((1, 1, 3, 1), (1, 1, 1, 2), 4, 3))
    with pytest.raises(dml.InvalidArgumentError, match="values_tensor.data_type INT32 is not supported at FL_2_0"):
        level.create_operator(_desc((1, 1, 3, 1), (1, 1, 1, 2), 4, 3, dtype=DT.INT32))
    with pytest.raises(dml.InvalidArgumentError, match="DimensionCount 2 is not supported at FL_2_0"):
        level.create_operator(_desc())


def test_cli_shader(capsys):
    assert cli.main(["shader", "one_hot", "--shape", "64,1000", "--axis", "1", "--indices-dtype", "INT64",
                     "--caps", "vulkan-cpu"]) == 0
    out = capsys.readouterr().out
    assert "// OneHot at FL_6_4" in out and "// strategy runs" in out
    assert cli.main(["shader", "one_hot", "--shape", "64,1000", "--caps", "gpu"]) == 0
    assert "// strategy elements" in capsys.readouterr().out
