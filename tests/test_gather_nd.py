"""GatherNd and GatherNd1: what the conformance kit (tests/test_conformance.py) does not cover:
the output sizes rule (the pages' worked example against their formula), each validation
rule's message (FL 2.1's table too), index values (negative, out-of-range and extreme
coordinates clamp per dimension), the functional form against ONNX's GatherND, the stage's
forms (the last axis indexed or not, batches) under every strategy, and fused chains."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conformance import HIGHEST, Case, run_every_variant
from conftest import assert_bits_equal, random_bits
from test_gather import HOSTILE, INDEX_TYPES, _clamp

import gpudml as dml
from gpudml import reference
from gpudml.ops import gather_nd

DT = dml.DataType
FL = dml.FeatureLevel


def _desc(in_sizes, index_sizes, m, k, b=0, dtype=DT.FLOAT32, index_dtype=DT.UINT32, out_sizes=None,
          index_strides=None):
    out_sizes = out_sizes or gather_nd.output_sizes(in_sizes, index_sizes, m, k, b or 0)
    tensors = (dml.TensorDesc(dtype, in_sizes), dml.TensorDesc(index_dtype, index_sizes, index_strides),
               dml.TensorDesc(dtype, out_sizes))
    if b is None:
        return dml.GatherNdOperatorDesc(*tensors, m, k)
    return dml.GatherNd1OperatorDesc(*tensors, m, k, b)


def _raises(device, desc, message: str):
    with pytest.raises(dml.InvalidArgumentError, match=re.escape(message)):
        device.create_operator(desc)


def _onnx_gather_nd(data, indices, b=0):
    """ONNX's GatherND (its reference's loop, written again), in-range indices."""
    batch = int(np.prod(data.shape[:b], dtype=np.int64))
    t = indices.shape[-1]
    out = []
    d = data.reshape(batch, *data.shape[b:])
    i = indices.reshape(batch, -1, t)
    for n in range(batch):
        for row in i[n]:
            out.append(d[n][tuple(int(v) for v in row)])
    return np.array(out).reshape(*indices.shape[:-1], *data.shape[b + t:])


# ------------------------------------------------------------------ shapes
def test_output_sizes_the_pages_example():
    """{3,4,5,6,7} by 3-tuples {1,1,1,2,3}: {1,1,2,6,7}, as the pages' example says (their
    formula would take the input's last 3 sizes)."""
    assert gather_nd.output_sizes((3, 4, 5, 6, 7), (1, 1, 1, 2, 3), 5, 3, 0) == (1, 1, 2, 6, 7)


# ------------------------------------------------------------------ rules
@pytest.mark.parametrize("desc, message", [
    (_desc((2, 2), (2, 1), 0, 2, out_sizes=(2, 2)), "GatherNd1: input_dimension_count = 0 must be in [1, "
                                                      "DimensionCount 2]"),
    (_desc((2, 2), (2, 1), 2, 3, out_sizes=(2, 2)), "GatherNd1: indices_dimension_count = 3 must be in [1, "
                                                      "DimensionCount 2]"),
    (_desc((2, 2), (2, 1), 2, 2, 2, out_sizes=(2, 2)), "GatherNd1: batch_dimension_count = 2 must be in [0, "
                                                         "DimensionCount 2)"),
    (_desc((2, 2), (2, 1), 1, 2, out_sizes=(2, 2)), "GatherNd1: input_tensor.sizes[0] = 2 must be 1: only the last 1"),
    (_desc((2, 2), (2, 1), 2, 1, out_sizes=(2, 2)), "GatherNd1: indices_tensor.sizes[0] = 2 must be 1"),
    (_desc((2, 2), (1, 3), 2, 2, out_sizes=(1, 1)), "GatherNd1: the index tuple size indices_tensor.sizes[1] = 3 "
                                                      "must be in [1, input_dimension_count - batch_dimension_count"),
    (_desc((3, 2), (2, 1), 2, 2, 1, out_sizes=(2, 1)), "GatherNd1: batch dimension 0: indices_tensor.sizes[0] = 2 "
                                                         "must equal input_tensor.sizes[0] = 3"),
    (_desc((3, 2), (1, 3), 2, 1, 1, out_sizes=(2, 1)), "GatherNd1: batch_dimension_count = 1 must be <= "
                                                         "indices_dimension_count - 1 = 0"),
    (_desc((4, 5), (3, 1), 2, 2, out_sizes=(3, 4)), "GatherNd1: output_tensor.sizes [3, 4] must be [3, 5]"),
    (_desc((2, 5, 6), (4, 3, 1), 3, 3, out_sizes=(4, 3, 6)),
     "GatherNd1: the output's dimensions (indices_dimension_count - 1) + (input_dimension_count"),
    (_desc((4, 5), (3, 1), 2, 2, None, dtype=DT.FLOAT64), "GatherNd: input_tensor.data_type FLOAT64 is not supported"),
], ids=["m0", "k_above", "b_above", "input_leading", "indices_leading", "tuple", "batch_sizes", "batch_in_tuple",
        "output_sizes", "output_room", "float64"])
def test_rules(vulkan_device, desc, message):
    _raises(vulkan_device, desc, message)


def test_feature_levels(at_level):
    """GATHER_ND: FL 2.1 with DimensionCount 4 and UINT32 indices; GATHER_ND1: FL 3.0."""
    nd0 = _desc((1, 2, 2, 2), (1, 1, 2, 2), 3, 2, None)
    at_level(FL.FL_2_1).create_operator(nd0)
    _raises(at_level(FL.FL_2_1), _desc((2, 2), (2, 1), 2, 2, None),
            "GatherNd: DimensionCount 2 is not supported at FL_2_1 (supported: 4); it needs FL_3_0 or later")
    _raises(at_level(FL.FL_2_1), _desc((1, 2, 2, 2), (1, 1, 2, 2), 3, 2, None, index_dtype=DT.INT32),
            "GatherNd: indices_tensor.data_type INT32 is not supported at FL_2_1 (supported: UINT32)")
    _raises(at_level(FL.FL_2_1), _desc((1, 2, 2, 2), (1, 1, 2, 2), 3, 2, 0),
            "GatherNd1: not available at feature level FL_2_1 (introduced at FL_3_0)")
    at_level(FL.FL_3_0).create_operator(_desc((2, 2), (2, 1), 2, 2, 0, index_dtype=DT.INT64))


# ------------------------------------------------------------------ indices
@pytest.mark.parametrize("index_dtype", INDEX_TYPES, ids=lambda t: t.name)
def test_out_of_range_and_negative_coordinates_clamp(device, index_dtype):
    """Tuples into a [5, 3] input: each coordinate clamps into its own dimension (negative ones
    of signed types from the end), the 64-bit extremes included."""
    values = HOSTILE[index_dtype]
    x = (np.arange(15, dtype=np.int32) * 7 - 40).reshape(5, 3)
    pairs = [(v, w) for v in values for w in values[:3]]
    indices = np.array(pairs, index_dtype.numpy)
    got = dml.gather_nd(x, indices, device=device)
    want = np.array([x[_clamp(v, 5, index_dtype.is_signed), _clamp(w, 3, index_dtype.is_signed)] for v, w in pairs])
    assert_bits_equal(got, want.reshape(1, -1))  # the output right-aligned: [1, 18]
    assert_bits_equal(reference.gather_nd(x, indices), want.reshape(1, -1))


@pytest.mark.parametrize("data_shape, index_shape, b", [
    ((5, 4), (3, 1), 0), ((5, 4), (3, 2), 0), ((2, 3, 4), (2, 2, 1), 1), ((2, 3, 4, 5), (2, 3, 2, 1), 2),
    ((2, 3, 4, 5), (2, 6, 2), 1), ((3, 4), (2, 3, 1, 2), 0),
])
def test_functional_is_onnx_gather_nd(vulkan_device, data_shape, index_shape, b):
    """ONNX's GatherND with batch_dims, the tensors right-aligned to one rank by the caller
    (the counts: their ONNX ranks)."""
    rng = np.random.default_rng(len(data_shape) + b)
    data = random_bits(rng, np.float32, data_shape)
    t = index_shape[-1]
    columns = [rng.integers(0, data_shape[b + c], index_shape[:-1]) for c in range(t)]
    indices = np.stack(columns, axis=-1).astype(np.int64)
    for c in range(b):  # the batch coordinates are the data's (their sizes too)
        assert index_shape[c] == data_shape[c]
    want = _onnx_gather_nd(data, indices, b)
    full = max(len(data_shape), len(index_shape), want.ndim)
    got = dml.gather_nd(data.reshape((1,) * (full - data.ndim) + data.shape),
                        indices.reshape((1,) * (full - indices.ndim) + indices.shape), b,
                        input_dimension_count=data.ndim, indices_dimension_count=indices.ndim, device=vulkan_device)
    assert_bits_equal(got.reshape(want.shape), want)


def test_functional_default_counts(vulkan_device):
    """The pages' example 2 without the counts: each tensor's dimensions after its leading 1s."""
    x = np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2)
    got = dml.gather_nd0(x, np.array([[[[0, 1], [1, 0]]]], np.uint32), device=vulkan_device)
    np.testing.assert_array_equal(got, [[[[2, 3], [4, 5]]]])


# ------------------------------------------------------------------ strategies
STAGE_FORMS = [
    # (input sizes, indices sizes, m, k, b): the stage's forms
    ((6, 40), (5, 1), 2, 2, 0),  # rows of the input: the innermost axis is the input's
    ((6, 40), (5, 2), 2, 2, 0),  # every axis indexed: an element per stretch
    ((1, 3, 4, 9), (1, 3, 5, 1), 3, 3, 1),  # a batch, rows
    ((3, 4, 9), (3, 4, 2), 3, 3, 1),  # a batch, elements (the output's innermost axis is an index axis)
    ((2, 3, 4, 5), (2, 3, 2, 1), 4, 4, 2),  # two batches
]


@pytest.mark.parametrize("form", STAGE_FORMS, ids=lambda f: f"{f[0]}-{f[1]}-m{f[2]}-k{f[3]}-b{f[4]}")
def test_stage_forms_under_every_strategy(device, form):
    in_sizes, index_sizes, m, k, b = form
    for index_dtype in (DT.INT64, DT.UINT32):
        desc = _desc(in_sizes, index_sizes, m, k, b, DT.INT8, index_dtype)
        ran = run_every_variant(device, Case(gather_nd.SPEC_1, HIGHEST, desc), len(in_sizes) + k)
        assert "coalesced" in ran and "stretches" in ran


def test_broadcast_indices(device):
    """Indices with stride 0 on an index axis: every row reads the same tuple."""
    desc = _desc((6, 7), (4, 2), 2, 2, 0, DT.FLOAT32, DT.INT32, index_strides=(0, 1))
    run_every_variant(device, Case(gather_nd.SPEC_1, HIGHEST, desc), 9)


# ------------------------------------------------------------------ graphs
def test_graph_fuses_with_movement_and_a_reduce(device):
    """slice > gather_nd > pad is one kernel (an embedding lookup of reversed rows, padded),
    bit-exact; a Reduce reads through it."""
    rng = np.random.default_rng(6)
    table = random_bits(rng, np.int32, (9, 5))
    ids = np.array([[8], [0], [-1], [4], [20]], np.int64)
    g = dml.Graph(device)
    x = g.input([9, 5], dtype=np.int32, name="x")
    rows = dml.gather_nd(dml.slice(x, [0, 0], [9, 5], [-1, 1]), ids)
    y = dml.pad(rows, [1, 0], [0, 2], mode="edge")
    fused = g.compile([y])
    assert [s.compiled.name for s in fused.steps] == ["Fused(Slice1>GatherNd1>Padding)"]
    want = reference.pad(reference.gather_nd(table[::-1], ids), [1, 0], [0, 2], "edge")
    assert_bits_equal(fused({"x": table})[0], want)
    reduced = g.compile([dml.reduce(y, "max", [1])])
    assert reduced.steps[0].compiled.name == "Fused(Slice1>GatherNd1>Padding>Reduce)"
    assert_bits_equal(reduced({"x": table})[0], want.max(axis=1, keepdims=True))
