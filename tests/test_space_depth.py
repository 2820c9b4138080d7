"""DepthToSpace(1) and SpaceToDepth(1): what the conformance kit (tests/test_conformance.py)
does not cover: the reference against a formulation by indices, each validation rule's
message, the interleave strategy's boundaries (block sizes, widths, element widths, both
orders) against every other strategy, the first versions as the DEPTH_COLUMN_ROW order,
fusion in graphs, the command line."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conformance import HIGHEST, Case, run_every_variant
from conftest import assert_bits_equal, random_bits

import gpudml as dml
from gpudml import reference
from gpudml.ops import space_depth, spec_named

DT = dml.DataType
D2S, D2S0, S2D, S2D0 = (spec_named(k) for k in ("depth_to_space", "depth_to_space0", "space_to_depth",
                                                   "space_to_depth0"))


def test_reference_by_indices():
    """An independent formulation: output[n, c, h b + i, w b + j] = input[n, deep, h, w] with
    deep = (i b + j) C + c (DCR) or (c b + i) b + j (CRD); SpaceToDepth is its inverse."""
    x = random_bits(np.random.default_rng(1), np.float16, (2, 18, 2, 3))
    for order, deep in (("dcr", lambda i, j, c: (i * 3 + j) * 2 + c), ("crd", lambda i, j, c: (c * 3 + i) * 3 + j)):
        want = np.empty((2, 2, 6, 9), np.float16)
        for n, c, h, w, i, j in np.ndindex(2, 2, 2, 3, 3, 3):
            want[n, c, h * 3 + i, w * 3 + j] = x[n, deep(i, j, c), h, w]
        assert_bits_equal(reference.depth_to_space(x, 3, order), want)
        assert_bits_equal(reference.space_to_depth(want, 3, order), x)
    with pytest.raises(ValueError, match="channels 18 are not a multiple of block_size"):
        reference.depth_to_space(x, 4)


# ------------------------------------------------------------------ validation: one rule each
def _d2s(in_sizes=(1, 8, 2, 3), out_sizes=(1, 2, 4, 6), block_size=2, dtype=DT.FLOAT32, order=0):
    return dml.DepthToSpace1OperatorDesc(dml.TensorDesc(dtype, in_sizes), dml.TensorDesc(dtype, out_sizes),
                                         block_size, order)


def _s2d(in_sizes=(1, 2, 4, 6), out_sizes=(1, 8, 2, 3), block_size=2, dtype=DT.FLOAT32):
    return dml.SpaceToDepthOperatorDesc(dml.TensorDesc(dtype, in_sizes), dml.TensorDesc(dtype, out_sizes), block_size)


@pytest.mark.parametrize("desc, message", [
    (lambda: _d2s(in_sizes=(1, 6, 2, 3), out_sizes=(1, 1, 4, 6)),
     "DepthToSpace1: input_tensor.sizes[1] (channels) = 6 must be a multiple of block_size * block_size = 2 * 2 = 4"),
    (lambda: _d2s(block_size=0), "DepthToSpace1: block_size = 0 must be in 1..4294967295 (a UINT larger than 0)"),
    (lambda: _d2s(out_sizes=(1, 2, 4, 5)), "DepthToSpace1: output_tensor.sizes [1, 2, 4, 5] must be [1, 2, 4, 6] "
                                           "([N, C / (b * b), H * b, W * b] of input_tensor.sizes [1, 8, 2, 3], "
                                           "block_size b = 2)"),
    (lambda: _d2s(in_sizes=(8, 2, 3), out_sizes=(2, 4, 6)),
     "DepthToSpace1: DimensionCount 3 is not supported at FL_6_4 (supported: 4)"),
    (lambda: _d2s(dtype=DT.INT64), "DepthToSpace1: input_tensor.data_type INT64 is not supported at FL_6_4"),
    (lambda: _s2d(in_sizes=(1, 2, 5, 6), out_sizes=(1, 8, 2, 3)),
     "SpaceToDepth: input_tensor.sizes[2] (height) = 5 must be a multiple of block_size = 2"),
    (lambda: _s2d(in_sizes=(1, 2, 4, 7), out_sizes=(1, 8, 2, 3)),
     "SpaceToDepth: input_tensor.sizes[3] (width) = 7 must be a multiple of block_size = 2"),
    (lambda: _s2d(out_sizes=(1, 8, 3, 2)), "SpaceToDepth: output_tensor.sizes [1, 8, 3, 2] must be [1, 8, 2, 3]"),
])
def test_validation_rule(vulkan_device, desc, message):
    with pytest.raises(dml.InvalidArgumentError, match=re.escape(message)):
        vulkan_device.create_operator(desc())


def test_fields_and_levels(vulkan_device):
    """block_size an integer, order a DepthSpaceOrder (ONNX's names too); the versions 1 from
    FL 2.1, the first versions' 64-bit types from FL 5.0."""
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("DepthToSpace1: block_size: expected an integer")):
        _d2s(block_size=2.0)
    with pytest.raises(dml.InvalidArgumentError, match="DepthToSpace1: order"):
        _d2s(order="sideways")
    assert _d2s(order="CRD").order == dml.DepthSpaceOrder.COLUMN_ROW_DEPTH
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("at feature level FL_2_0 (introduced at FL_2_1)")):
        dml.Device(adapter="vulkan", feature_level="FL_2_0").create_operator(_d2s())
    int64 = dml.SpaceToDepthOperatorDesc(dml.TensorDesc(DT.INT64, [1, 2, 4, 6]), dml.TensorDesc(DT.INT64, [1, 8, 2, 3]),
                                         2)
    with pytest.raises(dml.InvalidArgumentError, match="needs FL_5_0 or later"):
        dml.Device(adapter="vulkan", feature_level="FL_4_1").create_operator(int64)
    vulkan_device.create_operator(int64)
    with pytest.raises(dml.InvalidArgumentError, match=re.escape("depth_to_space: block_size: expected an integer")):
        dml.depth_to_space(np.zeros((1, 4, 1, 1), np.float32), "2", device=vulkan_device)


# ------------------------------------------------------------------ strategies
@pytest.mark.parametrize("spec, data_type, sizes, block_size, order", [
    (D2S, DT.FLOAT32, (2, 8, 3, 8), 2, "depth_column_row"),
    (D2S, DT.FLOAT32, (2, 8, 3, 8), 2, "column_row_depth"),
    (D2S, DT.UINT8, (1, 18, 2, 16), 3, "column_row_depth"),
    (D2S, DT.FLOAT16, (1, 32, 2, 8), 4, "depth_column_row"),
    (D2S0, DT.INT64, (1, 8, 2, 6), 2, None),
    (D2S, DT.INT16, (1, 8, 2, 6), 2, "depth_column_row"),  # width 6: not whole blocks, no interleave
    (S2D, DT.INT8, (1, 3, 6, 18), 3, "column_row_depth"),  # output width 6: no interleave
    (S2D, DT.FLOAT32, (1, 2, 4, 16), 2, "depth_column_row"),
    (S2D0, DT.UINT64, (1, 2, 6, 12), 3, None),
])
def test_every_strategy(device, spec, data_type, sizes, block_size, order):
    """Every eligible strategy, interleave where it applies (packed, b 2-4, rows of the deep
    tensor whole 16-byte blocks: 8-, 16-, 32- and 64-bit elements), bit-exact."""
    extra = () if order is None else (order,)
    desc = spec.infer_output(dml.TensorDesc(data_type, sizes), block_size, *extra)
    ran = run_every_variant(device, Case(spec, HIGHEST, desc), sum(sizes))
    deep_width = sizes[3] if spec in (D2S, D2S0) else sizes[3] // block_size
    interleaves = deep_width % (16 // data_type.size) == 0
    assert ("interleave" in ran) == interleaves and "coalesced" in ran


def test_interleave_is_the_cpu_choice_where_it_applies(device):
    """Chosen on CPU adapters for a packed DepthToSpace (SpaceToDepth alike); a strided input
    takes the copy of the 6-D view (no interleave). A CPU-class Device of the adapter: the
    choice is that class's (the suite also runs with GPUDML_ADAPTER_CLASS=gpu)."""
    device = dml.Device(adapter=device.adapter_name, adapter_class="cpu")
    x = dml.TensorDesc(DT.FLOAT32, [1, 8, 2, 4])
    compiled = device.compile_operator(device.create_operator(D2S.infer_output(x, 2)))
    assert compiled.strategies[0] == "interleave" and compiled.strategy == "interleave"
    strided = dml.TensorDesc(DT.FLOAT32, [1, 8, 2, 4], [128, 16, 8, 1])
    compiled = device.compile_operator(device.create_operator(D2S.infer_output(strided, 2)))
    assert "interleave" not in compiled.strategies
    data = random_bits(np.random.default_rng(3), np.float32, 128)
    (got,) = compiled.execute([data])
    assert_bits_equal(got, reference.depth_to_space(np.lib.stride_tricks.as_strided(
        data, (1, 8, 2, 4), (512, 64, 32, 4)), 2))


def test_first_versions_are_depth_column_row(device):
    x = random_bits(np.random.default_rng(4), np.uint16, (2, 12, 2, 4))
    y = dml.depth_to_space0(x, 2, device=device)
    assert_bits_equal(y, dml.depth_to_space(x, 2, "dcr", device=device))
    assert_bits_equal(dml.space_to_depth0(y, 2, device=device), x)
    assert_bits_equal(dml.space_to_depth(dml.depth_to_space(x, 2, "crd", device=device), 2, "crd", device=device), x)


# ------------------------------------------------------------------ graphs
def test_fused_into_element_wise_and_reduce(device):
    """DepthToSpace -> Add -> Relu is one dispatch; a Reduce reads through a SpaceToDepth;
    fused equals unfused bit for bit."""
    g = dml.Graph(device)
    x = g.input([2, 8, 3, 4], dtype=np.float32, name="x")
    b = g.input([2, 2, 6, 8], dtype=np.float32, name="b")
    y = dml.relu(dml.add(dml.depth_to_space(x, 2, "crd"), b))
    r = dml.reduce(dml.space_to_depth(y, 2), "max", [1])
    fused = g.compile([y])
    assert fused.dispatch_count == 1
    assert [s.compiled.name for s in g.compile([r]).steps] == [
        "Fused(DepthToSpace1>ElementWiseAdd1>ActivationRelu>SpaceToDepth1>Reduce)"]
    rng = np.random.default_rng(5)
    feed = {"x": rng.standard_normal((2, 8, 3, 4)).astype(np.float32),
            "b": rng.standard_normal((2, 2, 6, 8)).astype(np.float32)}
    got, want = g.compile([y, r])(feed), g.compile([y, r], fuse=False)(feed)
    for a, w in zip(got, want, strict=True):
        assert_bits_equal(a, w)
    assert_bits_equal(got[0], np.maximum(reference.depth_to_space(feed["x"], 2, "crd") + feed["b"], 0))


# ------------------------------------------------------------------ command line
def test_cli_shader(capsys):
    from gpudml import cli

    args = ["shader", "depth_to_space", "--shape", "1,8,2,4", "--block-size", "2", "--order", "crd"]
    assert cli.main(args + ["--caps", "vulkan-cpu"]) == 0
    out = capsys.readouterr().out
    assert "// DepthToSpace1 at FL_6_4" in out and "// strategy interleave" in out
    assert cli.main(["shader", "space_to_depth0", "--shape", "1,2,4,6", "--caps", "gpu"]) == 0
    assert "// strategy coalesced" in capsys.readouterr().out
    assert space_depth.TABLE[0].key == "depth_to_space0"
