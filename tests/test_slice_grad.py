"""SliceGrad: what the conformance kit (tests/test_conformance.py) does not cover: the page's
worked example, the reference against the adjoint identity, each validation rule's message,
the GPU-class strategies on the software adapters, fusion in graphs, the command line."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_bits_equal, random_bits

import gpudml as dml
from gpudml import reference

F32, I8 = dml.DataType.FLOAT32, dml.DataType.INT8


def test_page_example(device):
    """The page's letters a..p as 1..16: the gradient [[a, c], [i, k]] of the slice with
    strides 2 lands where the slice read, 0 elsewhere."""
    dy = np.array([[1, 3], [9, 11]], np.float32)
    want = np.array([[1, 0, 3, 0], [0, 0, 0, 0], [9, 0, 11, 0], [0, 0, 0, 0]], np.float32)
    x = np.arange(1, 17, dtype=np.float32).reshape(4, 4)
    assert_bits_equal(reference.slice(x, [0, 0], [4, 4], [2, 2]), dy)  # the forward of the page
    assert_bits_equal(dml.slice_grad(dy, [4, 4], [0, 0], [4, 4], [2, 2], device=device), want)


def test_reference_is_the_adjoint_of_slice():
    """sum(slice(x) * dy) == sum(x * slice_grad(dy)) in integers for random windows (strides
    of either sign), and slice(slice_grad(dy)) == dy: an independent formulation."""
    rng = np.random.default_rng(3)
    for _ in range(40):
        rank = int(rng.integers(1, 5))
        shape = rng.integers(1, 7, rank)
        offsets = [int(rng.integers(0, n)) for n in shape]
        sizes = [int(rng.integers(1, n - o + 1)) for n, o in zip(shape, offsets)]
        strides = [int(rng.choice([1, 2, 3, -1, -2])) for _ in shape]
        x = rng.integers(-50, 50, shape)
        y = reference.slice(x, offsets, sizes, strides)
        dy = rng.integers(-50, 50, y.shape)
        dx = reference.slice_grad(dy, shape, offsets, sizes, strides)
        assert dx.shape == tuple(shape)
        assert int((y * dy).sum()) == int((x * dx).sum())
        assert np.array_equal(reference.slice(dx, offsets, sizes, strides), dy)


def test_bits_kept(device):
    """-0.0, NaN payloads and infinities of float16 pass bit for bit; the rest is +0.0."""
    dy = np.array([0x8000, 0x7E01, 0xFC00, 0x3C00], np.uint16).view(np.float16)
    got = dml.slice_grad(dy, [9], [1], [7], [-2], device=device)
    want = np.zeros(9, np.uint16)
    want[[7, 5, 3, 1]] = dy.view(np.uint16)
    assert_bits_equal(got, want.view(np.float16))


@pytest.mark.any_class  # both classes' Devices made here: the GPU-class run would repeat them
@pytest.mark.parametrize("strategy_class", ["cpu", "gpu"])
def test_both_adapter_classes(adapter, strategy_class):
    """The documented strategy of each adapter class, on the software adapters, and every
    other strategy, agree with the reference bit for bit (strided, broadcast input)."""
    dev = dml.Device(adapter=adapter, adapter_class=strategy_class)
    rng = np.random.default_rng(7)
    base = random_bits(rng, np.int8, (3, 1, 5))
    dy_desc = dml.TensorDesc(I8, [3, 4, 5], [5, 0, 1])  # broadcast along axis 1
    desc = dml.SliceGradOperatorDesc(dy_desc, dml.TensorDesc(I8, [7, 9, 11]), [1, 0, 0], [5, 9, 11], [-2, 2, 2])
    op = dev.create_operator(desc)
    logical = np.broadcast_to(base, (3, 4, 5))
    want = reference.slice_grad(logical, [7, 9, 11], [1, 0, 0], [5, 9, 11], [-2, 2, 2])
    chosen = dev.compile_operator(op)
    assert chosen.strategy == chosen.strategies[0]
    for strategy in chosen.strategies:
        compiled = dev.compile_operator(op, strategy)
        assert_bits_equal(compiled.execute([base.reshape(-1)])[0], want)


@pytest.mark.parametrize("kwargs, message", [
    (dict(strides=[1, 0]), "SliceGrad: input_window_strides[1] must not be 0 (the page: a zero stride maps several "
                           "outputs to one element, which has no gradient)"),
    (dict(offsets=[0, 1]), "SliceGrad: input_window_offsets[1] + input_window_sizes[1] = 5 exceeds "
                           "output_gradient_tensor.sizes[1] = 4 (the forward's input)"),
    (dict(dy=(3, 2)), "SliceGrad: input_gradient_tensor.sizes[0] = 3 must be in 1..2 (the forward Slice1's output: "
                      "1 + (input_window_sizes[0] - 1) // |input_window_strides[0]| = 1 + (4 - 1) // 2)"),
    (dict(sizes=[0, 4]), "SliceGrad: input_window_sizes[0] = 0 must be >= 1 (empty window)"),
    (dict(offsets=[0]), "SliceGrad: input_window_offsets has 1 entries [0]; DimensionCount is 2"),
    (dict(out_type=I8), "SliceGrad: output_gradient_tensor.data_type INT8 must equal "
                        "input_gradient_tensor.data_type FLOAT32"),
])
def test_validation_rule(vulkan_device, kwargs, message):
    dy = dml.TensorDesc(F32, kwargs.get("dy", (2, 2)))
    dx = dml.TensorDesc(kwargs.get("out_type", F32), (4, 4))
    desc = dml.SliceGradOperatorDesc(dy, dx, kwargs.get("offsets", [0, 0]), kwargs.get("sizes", [4, 4]),
                                     kwargs.get("strides", [2, 2]))
    with pytest.raises(dml.InvalidArgumentError) as err:
        vulkan_device.create_operator(desc)
    assert str(err.value) == message


def test_levels(at_level):
    desc = dml.SliceGradOperatorDesc(dml.TensorDesc(F32, [2]), dml.TensorDesc(F32, [4]), [0], [4], [2])
    with pytest.raises(dml.InvalidArgumentError, match=r"SliceGrad: not available at feature level FL_2_1 "
                                                       r"\(introduced at FL_3_0\)"):
        at_level(dml.FeatureLevel.FL_2_1).create_operator(desc)
    at_level(dml.FeatureLevel.FL_3_0).create_operator(desc)
    wide = dml.SliceGradOperatorDesc(dml.TensorDesc(dml.DataType.INT64, [2]), dml.TensorDesc(dml.DataType.INT64, [4]),
                                     [0], [4], [2])
    with pytest.raises(dml.InvalidArgumentError, match="SliceGrad: input_gradient_tensor.data_type INT64 is not "
                                                       "supported"):
        at_level(None).create_operator(wide)


def test_fused_with_slice_and_element_wise(device):
    """Slice -> Relu -> SliceGrad -> Add is one dispatch, equal to the unfused graph."""
    g = dml.Graph(device)
    x = g.input([6, 8], dtype=np.float32, name="x")
    b = g.input([6, 8], dtype=np.float32, name="b")
    y = dml.add(dml.slice_grad(dml.relu(dml.slice(x, [1, 0], [5, 8], [2, -3])), [6, 8], [1, 0], [5, 8], [2, -3]), b)
    fused = g.compile([y])
    assert fused.dispatch_count == 1
    rng = np.random.default_rng(5)
    feed = {"x": rng.standard_normal((6, 8)).astype(np.float32), "b": rng.standard_normal((6, 8)).astype(np.float32)}
    got, want = fused(feed)[0], g.compile([y], fuse=False)(feed)[0]
    assert_bits_equal(got, want)
    inner = np.maximum(reference.slice(feed["x"], [1, 0], [5, 8], [2, -3]), 0)
    assert_bits_equal(got, reference.slice_grad(inner, [6, 8], [1, 0], [5, 8], [2, -3]) + feed["b"])


def test_cli_shader(capsys):
    from gpudml import cli

    assert cli.main(["shader", "slice_grad", "--shape", "1,1,2,2", "--output-sizes", "1,1,4,4", "--strides",
                     "1,1,2,-2", "--caps", "vulkan-cpu"]) == 0
    out = capsys.readouterr().out
    assert "// SliceGrad at FL_6_4" in out and "sg_lo" in out
