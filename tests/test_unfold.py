"""Unfold (DML_UNFOLD, im2col): what the conformance kit (tests/test_conformance.py) does not
cover: the reference against explicit loops, every data type bit-exact on one geometry
(strides, dilations, asymmetric padding), blocks entirely in the padding, its kernel's
stretches against the element-by-element strategy, a graph that reads and writes it (it is
no chain stage: its rank changes), each validation rule's message and the command line."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
from conftest import assert_bits_equal, random_bits

import gpudml as dml
from gpudml import reference
from gpudml.ops import unfold

DT = dml.DataType
IMAGE = (2, 3, 6, 5)
G = {"window_sizes": [3, 2], "strides": [1, 2], "dilations": [2, 1], "start_padding": [1, 0], "end_padding": [2, 1]}
BLOCKS = (2, 18, 15)


def _loops(x, window, strides, dilations, start, end) -> np.ndarray:
    """im2col by its definition: every (n, c, window position, block) in turn, zero outside x."""
    spatial = x.shape[2:]
    per_axis = [(s + a + b - d * (w - 1) - 1) // t + 1 for s, w, t, d, a, b in
                zip(spatial, window, strides, dilations, start, end, strict=True)]
    out = np.zeros((x.shape[0], x.shape[1] * int(np.prod(window)), int(np.prod(per_axis))), x.dtype)
    for n, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for k, w in enumerate(itertools.product(*map(range, window))):
            for j, b in enumerate(itertools.product(*map(range, per_axis))):
                s = [bd * t + wd * d - a for bd, wd, t, d, a in zip(b, w, strides, dilations, start, strict=True)]
                if all(0 <= sd < n_ for sd, n_ in zip(s, spatial, strict=True)):
                    out[n, c * len(list(itertools.product(*map(range, window)))) + k, j] = x[(n, c, *s)]
    return out


@pytest.mark.parametrize("shape, window, strides, dilations, start, end", [
    ((1, 2, 7), (3,), (2,), (1,), (1,), (2,)),
    (IMAGE, (3, 2), (1, 2), (2, 1), (1, 0), (2, 1)),
    ((1, 1, 4, 3, 5), (2, 2, 3), (1, 2, 1), (1, 1, 2), (0, 1, 2), (1, 0, 2)),
])
def test_reference_is_the_definition(shape, window, strides, dilations, start, end):
    """An independent formulation: explicit loops over the window positions and blocks."""
    x = random_bits(np.random.default_rng(1), np.int16, shape)
    got = reference.unfold(x, window, strides=strides, dilations=dilations, start_padding=start, end_padding=end)
    assert_bits_equal(got, _loops(x, window, strides, dilations, start, end))


@pytest.mark.parametrize("data_type", sorted(unfold.TYPES), ids=lambda t: t.name)
def test_every_type_bit_exact(device, data_type):
    """Each type the table takes on G (random bits: NaN payloads, -0.0), bit for bit."""
    x = random_bits(np.random.default_rng(int(data_type)), data_type.numpy, IMAGE)
    got = np.asarray(dml.unfold(x, device=device, **G))
    assert got.shape == BLOCKS
    assert_bits_equal(got, reference.unfold(x, **G))


def test_blocks_in_the_padding_are_zero(device):
    """Padding wider than the window: the first blocks of axis 0 read padding only (zeros),
    and so do the last of axis 1."""
    x = np.arange(1, 13, dtype=np.float32).reshape(1, 1, 3, 4)
    args = {"window_sizes": [1, 2], "start_padding": [3, 0], "end_padding": [0, 4], "strides": [1, 2]}
    got = np.asarray(dml.unfold(x, device=device, **args)).reshape(1, 2, 6, 4)  # 6 x 4 blocks
    assert not got[:, :, :3].any() and not got[:, :, :, 2:].any()
    assert_bits_equal(got.reshape(1, 2, 24), reference.unfold(x, **args))


@pytest.mark.parametrize("end, stages", [([1, 0], 0), ([2, 0], 1)])
def test_reads_inside_the_input_are_a_strided_copy(device, end, stages):
    """No start padding and no block reaching the end padding (an end padding the blocks do
    not reach): an affine map, planned with no stage; a block that reads padding: the
    stage. Both bit-exact (int8, strides and dilations)."""
    args = {"window_sizes": [2, 2], "strides": [2, 1], "dilations": [1, 2], "end_padding": end}
    desc = unfold.infer_output(dml.TensorDesc(DT.INT8, IMAGE), **args)
    plan = unfold.SPEC.planner.plan(desc, None, "stretches")
    assert len(plan.dispatches[0].params["stages"]) == stages
    x = random_bits(np.random.default_rng(6), np.int8, IMAGE)
    assert_bits_equal(np.asarray(dml.unfold(x, device=device, **args)), reference.unfold(x, **args))


def test_every_strategy_is_the_same(vulkan_device):
    """The movement strategies (stretches that step by the stride between fills, element by
    element, strided, coalesced) give the same bits on G, float16."""
    x = random_bits(np.random.default_rng(5), np.float16, IMAGE)
    desc = unfold.infer_output(dml.TensorDesc(DT.FLOAT16, IMAGE), **G)
    op = vulkan_device.create_operator(desc)
    want = reference.unfold(x, **G)
    for strategy in unfold.SPEC.planner.strategies_for(desc, None):
        (got,) = vulkan_device.compile_operator(op, strategy).execute([x])
        assert_bits_equal(np.asarray(got), want)


def test_a_graph_reads_and_writes_it(vulkan_device):
    """Not a stage of a chain (its rank changes): in a graph it runs as its own kernel, here
    between a pad and a fold (UNFOLD then FOLD with windows of stride 1 multiplies each
    element by the windows covering it)."""
    assert unfold.SPEC.planner.stage(unfold.infer_output(dml.TensorDesc(DT.FLOAT32, IMAGE), **G)) is None
    g = dml.Graph(vulkan_device)
    x = g.input([1, 2, 4, 4], name="x")
    padded = dml.pad(x, [0, 0, 1, 1], [0, 0, 1, 1])
    out = dml.fold(dml.unfold(padded, [3, 3]), [6, 6], [3, 3])
    feed = np.arange(32, dtype=np.float32).reshape(1, 2, 4, 4)
    (got,) = g.compile([out])({"x": feed})
    p = reference.pad(feed, [0, 0, 1, 1], [0, 0, 1, 1])
    assert_bits_equal(np.asarray(got), reference.fold(reference.unfold(p, [3, 3]), [6, 6], [3, 3]))


def _desc(image=IMAGE, blocks=BLOCKS, **changes):
    fields = {**{k: tuple(v) for k, v in G.items()}, **changes}
    return dml.UnfoldOperatorDesc(dml.TensorDesc(DT.FLOAT32, image), dml.TensorDesc(DT.FLOAT32, blocks), **fields)


@pytest.mark.parametrize("desc, message", [
    (_desc(blocks=(2, 18, 16)), "Unfold: output_tensor.sizes [2, 18, 16] must be [N, C * prod(window_sizes), L] = "
                                "[2, 3 * 6, 15] = [2, 18, 15] (L = the blocks per spatial axis [5, 3] multiplied)"),
    (_desc(window_sizes=(3, 7)), "Unfold: window_sizes[1] = 7 dilated by dilations[1] = 1 spans (window - 1) * "
                                 "dilation + 1 = 7, more than the padded axis input_tensor.sizes[3] + start_padding "
                                 "+ end_padding = 5 + 0 + 1 = 6: no block fits"),
    (_desc(end_padding=(2, 1, 0)), "Unfold: end_padding has 3 entries [2, 1, 0]; DimensionCount (the spatial axes of "
                                   "input_tensor) is 2"),
    (_desc(image=(6, 5)), "Unfold: input_tensor.sizes: DimensionCount 2 is not supported at FL_6_4 (supported: "
                          "3-8)"),
    (_desc(start_padding=(1, 2**32 - 3)), "Unfold: the padded axis input_tensor.sizes[3] + start_padding[1] + "
                                          "end_padding[1] = 5 + 4294967293 + 1 = 4294967299 exceeds 4294967295"),
])
def test_bad_descriptions_name_the_field_and_the_rule(vulkan_device, desc, message):
    with pytest.raises(dml.InvalidArgumentError, match=re.escape(message)):
        vulkan_device.create_operator(desc)


def test_command_line(capsys):
    from gpudml import cli

    assert cli.main(["shader", "unfold", "--shape", "2,3,6,5", "--window-sizes", "3,2", "--strides", "1,2",
                     "--dilations", "2,1", "--start-padding", "1,0", "--end-padding", "2,1", "--caps", "gl-cpu"]) == 0
    out = capsys.readouterr().out
    assert "// Unfold at FL_6_4" in out and "unf_strides" in out
