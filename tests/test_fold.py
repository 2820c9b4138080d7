"""Fold (DML_FOLD, col2im): what the conformance kit (tests/test_conformance.py) does not
cover: the reference against ONNX's own reference Col2Im and as UNFOLD's adjoint, every
data type on one geometry (strides, dilations, asymmetric padding, overlapping windows),
integer wrap, float precision at its documented bound, non-overlapping windows as UNFOLD's
inverse, each validation rule's message, the loop budget, ONNX Col2Im's constant inputs and
the command line. One image geometry (G) serves the device cases: one pipeline per type."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from conftest import assert_bits_equal
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import gpudml as dml
import gpudml.onnx as gonnx
from gpudml import reference
from gpudml.errors import UnsupportedError
from gpudml.kernels import fold as fold_family
from gpudml.kernels.base import LOOP_BUDGET
from gpudml.ops import fold
from gpudml.testing import assert_within

DT = dml.DataType
#: The device cases' geometry: image [2, 3, 6, 5], a 3 x 2 window, strides (1, 2), dilations
#: (2, 1), padding (1, 0) before and (2, 1) after: 5 x 3 blocks, overlapping on axis 0.
IMAGE = (2, 3, 6, 5)
G = {"window_sizes": [3, 2], "strides": [1, 2], "dilations": [2, 1], "start_padding": [1, 0], "end_padding": [2, 1]}
BLOCKS = (2, 18, 15)


def _col2im_onnx(x, image, block, strides, dilations, pads) -> np.ndarray:
    node = helper.make_node("Col2Im", ["x", "image", "block"], ["y"], strides=strides, dilations=dilations, pads=pads)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, t, None) for n, t in (
        ("x", TensorProto.DOUBLE), ("image", TensorProto.INT64), ("block", TensorProto.INT64))],
        [helper.make_tensor_value_info("y", TensorProto.DOUBLE, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    return ReferenceEvaluator(model).run(None, {"x": x, "image": np.array(image, np.int64),
                                                "block": np.array(block, np.int64)})[0]


@pytest.mark.parametrize("image, block, strides, dilations, start, end", [
    ((7,), (3,), (2,), (1,), (1,), (1,)),
    ((6, 5), (3, 2), (1, 2), (2, 1), (1, 0), (2, 1)),
    ((4, 3, 5), (2, 2, 3), (1, 2, 1), (1, 1, 2), (0, 1, 2), (1, 0, 2)),
])
def test_reference_is_onnx_col2im(image, block, strides, dilations, start, end):
    """An independent formulation: ONNX's reference Col2Im (onnx.reference), pads as
    [begins..., ends...], on float64 blocks; the sums only differ in their order."""
    blocks = fold.Blocks(image, block, strides, dilations, start, end)
    x = np.random.default_rng(1).standard_normal((2, 3 * blocks.window_count, blocks.count))
    want = _col2im_onnx(x, image, block, list(strides), list(dilations), list(start) + list(end))
    got = reference.fold(x, image, block, strides=strides, dilations=dilations, start_padding=start,
                         end_padding=end)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_fold_is_unfolds_adjoint():
    """<unfold(x), y> = <x, fold(y)> for any x and y (float64): FOLD sums exactly what
    UNFOLD copies, zero padding included."""
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal(IMAGE), rng.standard_normal(BLOCKS)
    left = np.vdot(reference.unfold(x, **G), y)
    right = np.vdot(x, reference.fold(y, IMAGE[2:], **G))
    assert abs(left - right) <= 1e-9 * (abs(left) + 1)


@pytest.mark.parametrize("data_type", sorted(fold.SUPPORT.rows[0].types["input_tensor"]), ids=lambda t: t.name)
def test_every_type(device, data_type):
    """Each of the table's types on G: integers bit-exact (wrapping sums of random bits),
    floats within the documented precision of the float64 reference."""
    desc = fold.infer_output(dml.TensorDesc(data_type, BLOCKS), IMAGE[2:], **{
        k: v for k, v in G.items() if k != "window_sizes"}, window_sizes=G["window_sizes"])
    (x,) = fold.sample(desc, np.random.default_rng(int(data_type)))
    x = x.reshape(BLOCKS)
    got = np.asarray(dml.fold(x, IMAGE[2:], device=device, **G))
    want = reference.fold(x, IMAGE[2:], **G)
    assert_within(got, want, fold.tolerance(want, [x], {"output_size": IMAGE[2:], **G}), data_type.name)


def test_integer_sums_wrap(device):
    """INT8 100s where up to 3 windows overlap: 300 wraps to 44, 200 to -56, as DirectML's
    integer arithmetic wraps; UINT16 65535s to 65533 (3 of them)."""
    count = reference.fold(np.ones(BLOCKS, np.int64), IMAGE[2:], **G)
    assert set(np.unique(count)) >= {1, 2, 3}
    got = np.asarray(dml.fold(np.full(BLOCKS, 100, np.int8), IMAGE[2:], device=device, **G))
    assert_bits_equal(got, (count * 100).astype(np.int8))
    assert got[count == 3].min() == 44 and got[count == 2].min() == -56
    got = np.asarray(dml.fold(np.full(BLOCKS, 65535, np.uint16), IMAGE[2:], device=device, **G))
    assert_bits_equal(got, (count * 65535).astype(np.uint16))


def test_float_sums_within_the_bound(device):
    """Float16 and float32 blocks of mixed magnitudes (a window of 9 overlapping positions):
    every element within (k - 1) 2^-24 sum|x| plus half an ULP of the result's type of the
    float64 reference, and that bound is tight (a few ULP of the type, not a blanket one)."""
    rng = np.random.default_rng(3)
    args = {"window_sizes": [3, 3], "strides": 1, "start_padding": 1, "end_padding": 1}
    for dtype in (np.float16, np.float32):
        x = (rng.standard_normal((1, 18, 30)) * 10.0 ** rng.integers(-2, 3, (1, 18, 30))).astype(dtype)
        got = np.asarray(dml.fold(x, [5, 6], device=device, **args))
        want64 = reference.fold(x.astype(np.float64), [5, 6], **args)
        want = want64.astype(dtype)
        bound = fold.tolerance(want, [x], {"output_size": [5, 6], "dilations": None, **args})
        assert_within(got, want, bound, np.dtype(dtype).name)
        ulp = np.spacing(np.abs(want).astype(dtype)).astype(np.float64)
        assert np.all(bound <= 4 * ulp + 9 * 2.0**-24 * np.abs(reference.fold(np.abs(x.astype(np.float64)),
                                                                              [5, 6], **args)) + 2.0**-24)


def test_non_overlapping_windows_invert_unfold(device):
    """Strides equal to the window: each image element is in one block, so fold(unfold(x))
    is x, bit for bit (float32 -0.0 and NaN payloads aside: random finite values)."""
    x = np.random.default_rng(4).standard_normal(IMAGE).astype(np.float32)
    args = {"window_sizes": [2, 5], "strides": [2, 5]}
    blocks = dml.unfold(x, device=device, **args)
    assert_bits_equal(np.asarray(dml.fold(np.asarray(blocks), IMAGE[2:], device=device, **args)), x)


def _desc(blocks=BLOCKS, image=IMAGE, dtype=DT.FLOAT32, out_dtype=None, **changes):
    fields = {**{k: tuple(v) for k, v in G.items()}, **changes}
    return dml.FoldOperatorDesc(dml.TensorDesc(dtype, blocks), dml.TensorDesc(out_dtype or dtype, image), **fields)


@pytest.mark.parametrize("desc, message", [
    (_desc(blocks=(2, 18, 14)), "Fold: input_tensor.sizes [2, 18, 14] must be [N, C * prod(window_sizes), L] = "
                                "[2, 3 * 6, 15] = [2, 18, 15]"),
    (_desc(image=(2, 2, 6, 5)), "input_tensor.sizes [2, 18, 15] must be [N, C * prod(window_sizes), L] = "
                                "[2, 2 * 6, 15]"),
    (_desc(strides=(1, 0)), "Fold: strides[1] = 0 must be in [1, 4294967295] (a UINT of at least 1)"),
    (_desc(dilations=(0, 1)), "Fold: dilations[0] = 0 must be in [1,"),
    (_desc(window_sizes=(0, 2)), "Fold: window_sizes[0] = 0 must be in [1,"),
    (_desc(start_padding=(-1, 0)), "Fold: start_padding[0] = -1 must be in [0,"),
    (_desc(strides=(1, 2, 1)), "Fold: strides has 3 entries [1, 2, 1]; DimensionCount (the spatial axes of "
                               "output_tensor) is 2"),
    (_desc(window_sizes=(9, 2)), "Fold: window_sizes[0] = 9 dilated by dilations[0] = 2 spans (window - 1) * "
                                 "dilation + 1 = 17, more than the padded axis output_tensor.sizes[2] + "
                                 "start_padding + end_padding = 6 + 1 + 2 = 9: no block fits"),
    (_desc(out_dtype=DT.FLOAT16), "Fold: output_tensor.data_type FLOAT16 must equal input_tensor.data_type FLOAT32"),
    (_desc(dtype=DT.FLOAT64), "Fold: input_tensor.data_type FLOAT64 is not supported at FL_6_4"),
    (_desc(image=(2, 3, 30)), "Fold: window_sizes has 2 entries [3, 2]; DimensionCount (the spatial axes of "
                                "output_tensor) is 1"),
    (_desc(image=(2, 3)), "Fold: output_tensor.sizes: DimensionCount 2 is not supported at FL_6_4 (supported: 3-8)"),
])
def test_bad_descriptions_name_the_field_and_the_rule(vulkan_device, desc, message):
    """Each rule's message (the field, the rule, the values), before any GPU work."""
    with pytest.raises(dml.InvalidArgumentError, match=re.escape(message)):
        vulkan_device.create_operator(desc)


def test_introduced_at_fl_6_4(at_level):
    with pytest.raises(dml.InvalidArgumentError, match=r"Fold: not available at feature level FL_6_3 \(introduced "
                                                       r"at FL_6_4\)"):
        at_level(dml.FeatureLevel.FL_6_3).create_operator(_desc())


def test_bad_functional_calls(vulkan_device):
    with pytest.raises(dml.InvalidArgumentError, match=r"fold: window_sizes"):
        dml.fold(np.zeros(BLOCKS, np.float32), IMAGE[2:], "3,2", device=vulkan_device)
    with pytest.raises(dml.InvalidArgumentError, match=r"Fold: input_tensor.sizes \[2, 18, 15\] must be .* "
                                                       r"= \[2, 18, 20\]"):
        dml.fold(np.zeros(BLOCKS, np.float32), [6, 8], device=vulkan_device, **G)  # 5 x 4 blocks


def test_the_loop_budget():
    """A window of more positions than one invocation's loop budget is unsupported (named);
    a large one runs fewer outputs per `runs` invocation."""
    big = fold_family.Fold("Fold", dml.TensorDesc(DT.FLOAT32, [1, 40000, 1]), dml.TensorDesc(DT.FLOAT32, [1, 1, 40000]),
                           (40000,), (1,), (1,), (0,), (1,))
    with pytest.raises(UnsupportedError, match=rf"a window of 40000 positions .* loop budget \({LOOP_BUDGET - 64}"):
        fold_family.FAMILY.strategies_for(big, None)
    large = big._replace(input=dml.TensorDesc(DT.FLOAT32, [1, 3000, 1]),
                         output=dml.TensorDesc(DT.FLOAT32, [1, 1, 3000]), window=(3000,))
    (dispatch,) = fold_family.FAMILY.plan(large, None, "runs").dispatches
    assert dispatch.uniforms["run"] == (LOOP_BUDGET - 64) // 3000
    with pytest.raises(UnsupportedError, match="option run = 64"):
        fold_family.FAMILY.plan(large, None, "runs", run=64)


def test_onnx_col2im_shapes_given_at_run_time_build_per_value(device):
    """image_shape given as a graph input: a value input (docs/onnx.md), one build per
    distinct value, each as ONNX's reference Col2Im."""
    from onnx.reference import ReferenceEvaluator

    node = helper.make_node("Col2Im", ["x", "image", "block"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 9, 4]),
                                            helper.make_tensor_value_info("image", TensorProto.INT64, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [onnx.numpy_helper.from_array(np.array([3, 3], np.int64), "block")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    session = gonnx.InferenceSession(model, device=device)
    assert session.value_inputs == ["image"]
    x = np.arange(36, dtype=np.float32).reshape(1, 9, 4)
    for image in ([4, 4], [3, 6]):
        feeds = {"x": x, "image": np.array(image, np.int64)}
        (got,), (want,) = session.run(None, feeds), ReferenceEvaluator(model).run(None, feeds)
        np.testing.assert_array_equal(got, want)


def test_command_line(capsys):
    """`gpudml shader fold` takes the block tensor, or the image as --shape."""
    from gpudml import cli

    for argv in (["--shape", "2,18,15", "--output-size", "6,5"], ["--shape", "2,3,6,5"]):
        assert cli.main(["shader", "fold", *argv, "--window-sizes", "3,2", "--strides", "1,2", "--dilations", "2,1",
                         "--start-padding", "1,0", "--end-padding", "2,1", "--caps", "gl-cpu"]) == 0
        out = capsys.readouterr().out
        assert "// Fold at FL_6_4" in out and "fn fold_at" in out
