"""MAX_UNPOOLING (max_unpooling; ONNX MaxUnpool): what the conformance kit does not cover:
the reference against ONNX's reference MaxUnpool, MAX_POOLING's indices round trip,
duplicate indices decided the same way (the first input position) on every strategy and
adapter class whatever the order of the invocations, out-of-range indices (UINT64 past
2^32 too) writing nothing, every type bit for bit, validation messages, the plan (three
dispatches, the claim words), and MaxUnpool through a session (output_shape padding)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import gpudml as dml
import gpudml.onnx as gonnx
from gpudml import reference
from gpudml.kernels import max_unpooling as family
from gpudml.ops import max_unpooling as mu
from gpudml.testing import assert_bit_equal

DT = dml.DataType
RNG = np.random.default_rng(46)


def test_reference_is_onnx_maxunpool():
    """ONNX's reference (unique indices from a max pooling): the same values."""
    x = RNG.standard_normal((2, 3, 8, 6)).astype(np.float32)
    pooled, indices = _pool(x)
    node = helper.make_node("MaxUnpool", ["x", "i"], ["y"], kernel_shape=[2, 2], strides=[2, 2])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None),
                                            helper.make_tensor_value_info("i", TensorProto.INT64, None)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    want = ReferenceEvaluator(model).run(None, {"x": pooled, "i": indices.astype(np.int64)})[0]
    np.testing.assert_array_equal(reference.max_unpooling(pooled, indices, x.shape), want)


def _pool(x):
    """2 x 2 max pooling of x and its flat (whole-tensor) indices, by numpy."""
    n, c, h, w = x.shape
    win = x.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(n, c, h // 2, w // 2, 4)
    k = win.argmax(-1)
    rows = np.arange(h // 2)[None, None, :, None] * 2 + k // 2
    cols = np.arange(w // 2)[None, None, None, :] * 2 + k % 2
    flat = ((np.arange(n)[:, None, None, None] * c + np.arange(c)[None, :, None, None]) * h + rows) * w + cols
    return win.max(-1), flat.astype(np.uint32)


def test_max_pooling_round_trip(device):
    """dml.max_pooling's indices (UINT64) unpool to the input's maxima in place, zeros elsewhere."""
    x = RNG.standard_normal((1, 2, 6, 8)).astype(np.float32)
    pooled, indices = dml.max_pooling(x, [2, 2], strides=[2, 2], output_indices=np.uint64, device=device)
    got = np.asarray(dml.max_unpooling(pooled, indices, x.shape, device=device))
    want_pooled, want_indices = _pool(x)
    np.testing.assert_array_equal(np.asarray(indices), want_indices)
    np.testing.assert_array_equal(got, reference.max_unpooling(want_pooled, want_indices, x.shape))
    assert (got[got != 0] == x[got != 0]).all() and np.count_nonzero(got) == pooled.size


@pytest.mark.any_class  # both classes' Devices made here: the GPU-class run would repeat them
@pytest.mark.parametrize("adapter_class", ["cpu", "gpu"])
@pytest.mark.parametrize("strategy", ["runs", "elements"])
def test_duplicates_and_out_of_range_are_deterministic(adapter, adapter_class, strategy):
    """Many input elements on few outputs: the lowest flat input position wins, on each
    strategy and class (the claim's atomicMin; an order of stores would race); indices past
    the output, UINT64 ones past 2^32 among them, write nothing."""
    device = dml.Device(adapter=adapter, adapter_class=adapter_class)
    x = np.arange(1, 2 * 3 * 16 * 16 + 1, dtype=np.float32).reshape(2, 3, 16, 16)
    indices = RNG.integers(0, 40, x.shape).astype(np.uint64)
    indices[0, 0, 0, :4] = [2**32, 2**32 + 5, 100, 2**63]
    out = (2, 3, 2, 4)  # 48 elements: indices 48-99 and the huge ones are outside
    desc = mu.infer_output(dml.TensorDesc(DT.FLOAT32, x.shape), dml.TensorDesc(DT.UINT64, x.shape), out)
    compiled = device.compile_operator(device.create_operator(desc), strategy)
    got = np.asarray(compiled.execute([x, indices])[0])
    want = reference.max_unpooling(x, indices, out)
    np.testing.assert_array_equal(got, want)
    flat = indices.reshape(-1)
    firsts = [np.flatnonzero(flat == k)[0] + 1 for k in range(40) if (flat == k).any()]
    assert sorted(got.reshape(-1)[got.reshape(-1) != 0]) == sorted(float(v) for v in firsts)


@pytest.mark.parametrize("data_type", sorted(mu.TYPES_10), ids=lambda t: t.name)
def test_every_type_bit_for_bit(device, data_type):
    """Each type of the table: the input's bits (NaN payloads, -0.0) move unchanged."""
    x = RNG.integers(0, 256, 2 * 2 * 3 * 3 * data_type.size, dtype=np.uint8).view(data_type.numpy)
    x = x.reshape(2, 2, 3, 3)
    indices = RNG.integers(0, 2 * 2 * 5 * 4 + 3, x.shape).astype(np.uint32)
    assert_bit_equal(dml.max_unpooling(x, indices, (2, 2, 5, 4), device=device),
                     reference.max_unpooling(x, indices, (2, 2, 5, 4)))


def test_the_plan():
    """Three dispatches (clear, claim, gather) and one claim word per output element."""
    desc = mu.infer_output(dml.TensorDesc(DT.FLOAT16, [1, 2, 3, 3]), dml.TensorDesc(DT.UINT32, [1, 2, 3, 3]),
                           (1, 2, 6, 6))
    plan = family.FAMILY.plan(mu.problem(desc), None, "runs")
    assert [d.params["step"] for d in plan.dispatches] == ["clear", "claim", "gather"]
    assert plan.scratch_bytes == (4 * 72,)


@pytest.mark.parametrize("change, message", [
    ({"indices_tensor": dml.TensorDesc(DT.UINT32, [1, 2, 3, 4])}, r"indices_tensor.sizes \[1, 2, 3, 4\] must equal"),
    ({"indices_tensor": dml.TensorDesc(DT.INT64, [1, 2, 3, 3])}, "indices_tensor.data_type INT64 is not supported"),
    ({"output_tensor": dml.TensorDesc(DT.FLOAT16, [1, 2, 6, 6])}, "output_tensor.data_type FLOAT16 must equal"),
    ({"output_tensor": dml.TensorDesc(DT.FLOAT32, [2, 6, 6])}, "output_tensor DimensionCount 3 is not supported"),
])
def test_validation_messages(vulkan_device, change, message):
    desc = mu.infer_output(dml.TensorDesc(DT.FLOAT32, [1, 2, 3, 3]), dml.TensorDesc(DT.UINT32, [1, 2, 3, 3]),
                           (1, 2, 6, 6))
    fields = {**{f: getattr(desc, f) for f in desc.__dataclass_fields__}, **change}
    with pytest.raises(dml.InvalidArgumentError, match=f"MaxUnpooling: .*{message}"):
        vulkan_device.create_operator(mu.MaxUnpoolingOperatorDesc(**fields))


def test_feature_levels(at_level):
    """FL 3.0: FLOAT32 and FLOAT16 with UINT32 indices; FL 5.0: the integer types and UINT64."""
    x, i32, i64 = (dml.TensorDesc(t, [1, 1, 2, 2]) for t in (DT.INT8, DT.UINT32, DT.UINT64))
    with pytest.raises(dml.InvalidArgumentError, match="INT8 is not supported at FL_4_1.*it needs FL_5_0"):
        at_level(dml.FeatureLevel.FL_4_1).create_operator(mu.infer_output(x, i32, (1, 1, 4, 4)))
    at_level(dml.FeatureLevel.FL_5_0).create_operator(mu.infer_output(x, i64, (1, 1, 4, 4)))
    with pytest.raises(dml.InvalidArgumentError, match="introduced at FL_3_0"):
        at_level(dml.FeatureLevel.FL_2_1).create_operator(
            mu.infer_output(dml.TensorDesc(DT.FLOAT32, [1, 1, 2, 2]), i32, (1, 1, 4, 4)))


def test_onnx_maxunpool_1d_and_output_shape_through_a_session(device):
    """MaxUnpool of one spatial axis (run as 4-D) with a larger output_shape (a graph input:
    a value input; zeros padded at the end, as ONNX's reference): ONNX's reference's values."""
    node = helper.make_node("MaxUnpool", ["x", "i", "s"], ["y"], kernel_shape=[2], strides=[2])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None),
                                            helper.make_tensor_value_info("i", TensorProto.INT64, None),
                                            helper.make_tensor_value_info("s", TensorProto.INT64, None)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    feeds = {"x": np.array([[[3.0, 5.0, 7.0]]], np.float32), "i": np.array([[[1, 2, 4]]], np.int64),
             "s": np.array([1, 1, 8], np.int64)}
    (got,) = gonnx.InferenceSession(model, device=device).run(None, feeds)
    np.testing.assert_array_equal(got, ReferenceEvaluator(model).run(None, feeds)[0])
