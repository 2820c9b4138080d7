"""ONNX Resize and Upsample through a session: what ONNX's node tests leave out (they run in
tests/test_onnx_nodes.py and tests/test_onnx_session.py), against onnxruntime's CPU provider.

- Upsample-7 (scales attribute) and -9, Resize-10: ONNX's asymmetric mapping; nearest rounds
  down on an axis that grows and up on one that shrinks (one resample per kind of axis);
- a rank-5 Resize (its kept axes merged: DirectML resamples at most 4 dimensions);
- nearest_mode ceil with tf_half_pixel_for_nn (an axis of scale 1 stays the identity);
- cubic with pytorch_half_pixel to a length of 1, cubic antialias over `axes`, linear
  antialias (scale below 1/2) with exclude_outside, and tf_crop_and_resize with nearest and
  an extrapolation_value;
- antialias through gpudml's antialias_scales: linear and cubic with align_corners, linear
  with tf_crop_and_resize (coordinate scales that are not ONNX's filter scales), linear at
  0.75 and 0.6 (half_pixel, pytorch_half_pixel), a rank-5 linear (its kept axes merged);
- what gpudml refuses, at construction, naming the node, the field and the values.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import gpudml.onnx as gonnx
from gpudml.errors import UnsupportedError

ort = pytest.importorskip("onnxruntime")


def resize_model(op: str, opset: int, in_shape, *, scales=None, sizes=None, roi=None, runtime=(), **attrs):
    """A one-node Resize or Upsample model: its roi, scales and sizes initializers (those named
    in `runtime`: graph inputs); Upsample-7's scales an attribute."""
    inits, inputs, graph_inputs = [], ["x"], [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)]

    def add(name, value, dtype):
        if value is None:
            inputs.append("")
            return
        inputs.append(name)
        if name in runtime:
            graph_inputs.append(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)),
                                                              [len(value)]))
        else:
            inits.append(numpy_helper.from_array(np.array(value, dtype), name))

    if op == "Upsample" and opset < 9:
        attrs["scales"] = scales
    elif op == "Upsample" or opset < 11:
        add("scales", scales, np.float32)
    else:
        add("roi", roi, np.float32)
        add("scales", scales, np.float32)
        if sizes is not None:
            add("sizes", sizes, np.int64)
    while inputs[-1] == "":
        inputs.pop()
    node = helper.make_node(op, inputs, ["y"], name="resize", **attrs)
    graph = helper.make_graph([node], op.lower(), graph_inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                                                                None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


X = [1, 2, 3, 10]
CASES = {
    "upsample7_nearest": resize_model("Upsample", 7, X, scales=[1.0, 1.0, 2.0, 1.7]),
    "upsample9_linear": resize_model("Upsample", 9, X, scales=[1, 1, 1.5, 1.7], mode="linear"),
    "resize10_nearest_up_and_down": resize_model("Resize", 10, X, scales=[1, 1, 1.5, 0.45]),
    "resize13_rank5_linear": resize_model("Resize", 13, [2, 3, 2, 3, 10], scales=[], sizes=[2, 3, 3, 5, 4],
                                          mode="linear"),
    "resize11_nearest_ceil_tf_half_pixel_for_nn": resize_model(
        "Resize", 11, X, roi=[], scales=[1, 1, 2, 0.5], nearest_mode="ceil",
        coordinate_transformation_mode="tf_half_pixel_for_nn"),
    "resize19_cubic_pytorch_half_pixel_to_1": resize_model(
        "Resize", 19, X, sizes=[1, 2, 1, 7], mode="cubic", coordinate_transformation_mode="pytorch_half_pixel"),
    "resize19_cubic_antialias_axes": resize_model("Resize", 19, X, scales=[0.45, 1.5], mode="cubic", antialias=1,
                                                  axes=[3, 2]),
    "resize19_linear_antialias_exclude_outside": resize_model("Resize", 19, X, scales=[1, 1, 1.5, 0.3],
                                                              mode="linear", antialias=1, exclude_outside=1),
    # antialias: gpudml's antialias_scales (ONNX's filter scale, min(scale, 1)): align_corners,
    # whose coordinate scale (here 2/9) is not ONNX's filter scale (0.3), and linear at scales
    # in [1/2, 1), where DirectML's Antialiased leaves the linear filter as it is. (Where
    # align_corners' length, scale * size, is fractional, onnxruntime's CPU provider and ONNX's
    # reference disagree, antialias or not; gpudml follows the reference: sizes here.)
    "resize18_linear_antialias_align_corners": resize_model(
        "Resize", 18, X, scales=[1, 1, 1, 0.3], mode="linear", antialias=1,
        coordinate_transformation_mode="align_corners"),
    "resize18_cubic_antialias_align_corners": resize_model(
        "Resize", 18, X, sizes=[1, 2, 2, 6], mode="cubic", antialias=1,
        coordinate_transformation_mode="align_corners"),
    **{f"resize19_linear_antialias_{s}_{c}": resize_model(
        "Resize", 19, X, scales=[1, 1, s, s], mode="linear", antialias=1, coordinate_transformation_mode=c)
       for s in (0.75, 0.6) for c in ("half_pixel", "pytorch_half_pixel")},
    "resize19_rank5_linear_antialias": resize_model("Resize", 19, [2, 3, 2, 3, 10], scales=[1, 1, 1, 0.7, 0.6],
                                                    mode="linear", antialias=1),
    "resize19_linear_antialias_crop": resize_model(
        "Resize", 19, X, roi=[0.1, 0.2, 0.9, 0.8], sizes=[2, 4], axes=[2, 3], mode="linear", antialias=1,
        coordinate_transformation_mode="tf_crop_and_resize"),
    "resize19_nearest_crop_extrapolate": resize_model(
        "Resize", 19, X, roi=[-0.2, 0.1, 1.3, 0.7], sizes=[4, 5], axes=[2, 3],
        coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-3.0),
}


@pytest.mark.parametrize("name", list(CASES))
def test_resize_matches_onnxruntime(name, device):
    model = CASES[name]
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    feeds = {"x": np.random.default_rng(0).standard_normal(shape).astype(np.float32)}
    (want,) = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    (got,) = gonnx.InferenceSession(model, device=device).run(None, feeds)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * np.abs(want).max())


def test_scales_given_at_run_time_build_per_value(device):
    """Scales as a graph input: a value input (docs/onnx.md), one build per distinct value,
    each as onnxruntime."""
    model = resize_model("Resize", 13, X, scales=[1, 1, 2, 2], runtime=("scales",), mode="linear")
    session = gonnx.InferenceSession(model, device=device)
    assert session.value_inputs == ["scales"]
    reference = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(1).standard_normal(X).astype(np.float32)
    for scales in ([1, 1, 2, 2], [1, 1, 1.5, 0.5]):
        feeds = {"x": x, "scales": np.array(scales, np.float32)}
        (got,), (want,) = session.run(None, feeds), reference.run(None, feeds)
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * np.abs(want).max())


REFUSED = {
    "Upsample shrinking": (resize_model("Upsample", 9, X, scales=[1, 1, 0.5, 1]),
                           "Upsample's scales must be at least 1, scales[2] is 0.5"),
    "an unknown policy": (resize_model("Resize", 18, X, sizes=[4, 4], axes=[2, 3], keep_aspect_ratio_policy="fit"),
                          "keep_aspect_ratio_policy 'fit' is not one of stretch, not_larger, not_smaller"),
    "scales and sizes": (resize_model("Resize", 13, X, scales=[1, 1, 2, 2], sizes=[1, 2, 6, 20]),
                         "exactly one of scales and sizes must be given"),
    "five axes resampled": (resize_model("Resize", 13, [2, 2, 2, 2, 2], scales=[2, 2, 2, 2, 2]),
                            "5 axes to resample after merging those kept as they are (sizes [2, 2, 2, 2, 2] to "
                            "[4, 4, 4, 4, 4]): DirectML resamples at most 4"),
    "a flipped crop": (resize_model("Resize", 19, X, roi=[0.8, 0.2], sizes=[4], axes=[3], mode="linear",
                                    coordinate_transformation_mode="tf_crop_and_resize"),
                       "a roi whose end 0.2 is below its start 0.8"),
}


@pytest.mark.any_class  # refused before any kernel is chosen
@pytest.mark.parametrize("case", list(REFUSED))
def test_refused_at_construction(case, device):
    model, reason = REFUSED[case]
    with pytest.raises(UnsupportedError, match="resize") as info:
        gonnx.InferenceSession(model, device=device)
    assert reason in str(info.value)
