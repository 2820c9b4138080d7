"""TopK (DML_TOP_K, DML_TOP_K1): what the conformance kit (tests/test_conformance.py) does not
cover: the reference against a plain sort and ONNX's reference TopK, NaN and signed zeros
(gpudml's documented order), both strategies under both adapter classes on long axes whose
merges take several rounds (bit-exact, the same answer), k up to the axis' size, the loop
budget on GL (an axis of 10^5 elements), UINT64 indices and their level, each validation
rule's message, ONNX's TopK edge cases (k = 0, sorted=0) and the command line."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_bits_equal, random_bits
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import gpudml as dml
import gpudml.onnx as gonnx
from gpudml import reference
from gpudml.kernels import top_k as family
from gpudml.kernels.base import LOOP_BUDGET
from gpudml.ops import top_k

DT = dml.DataType
TD = dml.TensorDesc


def _sorted_rows(x: np.ndarray, k: int, largest: bool):
    """The best k of each row (last axis) by Python's sorted over (value, index): NaN the
    largest value, -0.0 == 0.0."""
    def key(v: float):
        if np.isnan(v):
            return (0, 0.0) if largest else (1, 0.0)
        return (1, -v) if largest else (0, v)

    values, indices = [], []
    for row in x.reshape(-1, x.shape[-1]):
        order = sorted(range(len(row)), key=lambda i, row=row: (key(float(row[i])), i))[:k]
        indices.append(order)
        values.append(row[order])
    shape = x.shape[:-1] + (k,)
    return np.array(values).reshape(shape), np.array(indices, np.uint32).reshape(shape)


@pytest.mark.parametrize("largest", [True, False])
def test_reference_is_a_plain_sort(largest):
    """An independent formulation: Python's sorted over (value, index), NaN the largest."""
    rng = np.random.default_rng(1)
    x = rng.integers(-3, 4, (5, 17)).astype(np.float32)
    x[x == 3] = np.nan
    x[x == -3] = -0.0
    values, indices = reference.top_k(x, 6, axis=-1, axis_direction="decreasing" if largest else "increasing")
    want_v, want_i = _sorted_rows(x, 6, largest)
    np.testing.assert_array_equal(indices, want_i)
    assert_bits_equal(values, x[np.arange(5)[:, None], want_i.astype(np.int64)])
    np.testing.assert_array_equal(values, want_v)


def test_reference_is_onnx_topk_without_nan():
    """ONNX's reference TopK (onnx.reference) on distinct values, both directions, an inner axis."""
    x = np.random.default_rng(2).permutation(60).astype(np.float32).reshape(3, 4, 5)
    for largest in (1, 0):
        node = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1, largest=largest)
        graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None),
                                                helper.make_tensor_value_info("k", TensorProto.INT64, None)],
                                  [helper.make_tensor_value_info(n, t, None) for n, t in
                                   (("v", TensorProto.FLOAT), ("i", TensorProto.INT64))])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
        v, i = ReferenceEvaluator(model).run(None, {"x": x, "k": np.array([3], np.int64)})
        got_v, got_i = reference.top_k(x, 3, 1, "decreasing" if largest else "increasing")
        np.testing.assert_array_equal(got_v, v)
        np.testing.assert_array_equal(got_i, i)


# ------------------------------------------------------------------ special values
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("strategy", family.STRATEGIES)
def test_nan_is_the_largest_and_signed_zeros_tie(device, dtype, strategy):
    """NaN (either sign, any payload) above +inf: first among the largest, last among the
    smallest; -0.0 and +0.0 tie (by index) and keep their bits."""
    bits = {np.float32: (0x7FC00001, 0xFF800123, 0x80000000), np.float16: (0x7E01, 0xFC05, 0x8000)}[dtype]
    u = np.dtype(dtype).str.replace("f", "u")
    nan_a, nan_b, neg_zero = (np.array(b, u).view(dtype) for b in bits)
    x = np.array([1, nan_a, -np.inf, neg_zero, 0, np.inf, nan_b, -0.0, 0, -1], dtype)
    op = dml.Device(adapter=device.adapter_name)
    for direction, order in (("decreasing", [1, 6, 5, 0, 3, 4, 7, 8, 9, 2]),
                             ("increasing", [2, 9, 3, 4, 7, 8, 0, 5, 1, 6])):
        desc = top_k.infer_output1(TD(DT.from_numpy(np.dtype(dtype)), [10]), 10, 0, direction)
        compiled = op.compile_operator(op.create_operator(desc), strategy)
        values, indices = compiled.execute([x])
        np.testing.assert_array_equal(indices, np.array(order, np.uint32))
        assert_bits_equal(values, x[order])
        want_v, want_i = reference.top_k(x, 10, 0, direction)
        assert_bits_equal(values, want_v)
        np.testing.assert_array_equal(indices, want_i)


# ------------------------------------------------------------------ strategies
_LONG = [
    # (type, sizes, k, axis, direction, options): merges of several rounds, k past a chunk
    (DT.FLOAT32, (3, 2500), 7, 1, "decreasing", {"chunk": 64, "group": 2}),
    (DT.INT16, (2, 1000, 2), 40, 1, "increasing", {"group": 4}),
    (DT.UINT8, (2, 700), 700, 1, "decreasing", {"group": 2}),
    (DT.INT64, (2, 600), 130, -1, "decreasing", {"group": 8}),
    (DT.FLOAT16, (4, 700), 33, -1, "increasing", {"chunk": 100}),
]


@pytest.mark.any_class  # both classes' Devices made here: the GPU-class run would repeat them
@pytest.mark.parametrize("adapter_class", ["cpu", "gpu"])
@pytest.mark.parametrize("data_type, sizes, k, axis, direction, options", _LONG)
def test_strategies_agree_on_long_axes(device, adapter_class, data_type, sizes, k, axis, direction, options):
    """Both strategies under both adapter classes, with the options that make the merges
    take several rounds: bit-exact with the reference, so the same answer; inputs of few
    distinct values (ties) on a strided input (every other element)."""
    dev = dml.Device(adapter=device.adapter_name, adapter_class=adapter_class)
    rng = np.random.default_rng(k)
    pool = random_bits(rng, data_type.numpy, [9])
    full = pool[rng.integers(0, 9, int(np.prod(sizes)) * 2)].reshape(*sizes[:-1], sizes[-1] * 2)
    strides = [int(s) // full.itemsize for s in full.strides]
    strides[-1] *= 2
    x_desc = TD(data_type, sizes, strides)
    desc = top_k.infer_output1(x_desc, k, axis, direction, "UINT64" if data_type.size == 8 else "UINT32")
    op = dev.create_operator(desc)
    x = full[..., ::2]
    want = reference.top_k(x, k, axis, direction, index_data_type=desc.output_index_tensor.data_type)
    assert dev.compile_operator(op).strategy == ("rows" if adapter_class == "cpu" else "workgroups")
    for strategy in family.STRATEGIES:
        compiled = dev.compile_operator(op, strategy, options=options if strategy == "rows" else
                                        {"group": options.get("group", 2)})
        got = compiled.execute([full.reshape(-1)])
        for g, w in zip(got, want, strict=True):
            assert_bits_equal(np.asarray(g), w)


@pytest.mark.parametrize("data_type", [DT.FLOAT32, DT.INT32, DT.UINT32])
@pytest.mark.parametrize("direction", ["decreasing", "increasing"])
def test_rows_16_byte_loads(device, data_type, direction):
    """`rows` reads whole blocks of 32 elements as 16-byte blocks where the axis is
    contiguous and aligned (rows of 100: 64-element chunks, the second ending in a tail of 4
    read element by element), with ties, NaN and signed zeros: as the reference and as
    `workgroups`."""
    desc = top_k.infer_output1(TD(data_type, [3, 100]), 9, 1, direction)
    plan = family.plan(top_k.problem(desc), None, "rows", chunk=64)
    assert plan.dispatches[0].params["vec"] and [b.name for b in plan.dispatches[0].buffers][:2] == [
        "input", "input_vec"]
    rng = np.random.default_rng(7)
    pool = random_bits(rng, data_type.numpy, [6])
    if data_type == DT.FLOAT32:
        pool[:3] = np.array([np.nan, -0.0, 0.0], np.float32)
    x = pool[rng.integers(0, 6, 300)].reshape(3, 100)
    op = device.create_operator(desc)
    want = reference.top_k(x, 9, 1, direction)
    for strategy, options in (("rows", {"chunk": 64}), ("workgroups", None)):
        got = device.compile_operator(op, strategy, options=options).execute([x])
        for g, w in zip(got, want, strict=True):
            assert_bits_equal(np.asarray(g), w)


def test_plans_stay_in_the_loop_budget():
    """`rows` chunks stay under the budget (an element costs two loop passes at most), a
    chunk option past it is refused, and an axis of a million elements plans merges only."""
    assert 2 * family.MAX_CHUNK + family.MAX_CHUNK // 32 + 64 <= LOOP_BUDGET
    p = family.TopK("TopK1", TD(DT.FLOAT32, [1, 10**6]), TD(DT.FLOAT32, [1, 10**6]), TD(DT.UINT32, [1, 10**6]),
                    1, 10**6, True)
    with pytest.raises(dml.UnsupportedError, match="loop budget"):
        family.plan(p._replace(k=10), None, "rows", chunk=family.MAX_CHUNK + 1)
    plan = family.plan(p, None, "rows")
    assert plan.dispatches[0].params["kb"] == family.KMAX and len(plan.dispatches) > 2
    assert all(d.uniforms["group"] * 21 < LOOP_BUDGET for d in plan.dispatches[1:])


def test_gl_long_axis(device):
    """An axis of 10^5 elements on either adapter (GL ends loops at 65,535 iterations):
    the maximum, the five largest and the five smallest, both classes."""
    x = np.random.default_rng(3).standard_normal((1, 100_000)).astype(np.float32)
    for adapter_class in ("cpu", "gpu"):
        dev = dml.Device(adapter=device.adapter_name, adapter_class=adapter_class)
        for k, direction in ((1, "decreasing"), (5, "decreasing"), (5, "increasing")):
            got = dml.top_k(x, k, -1, direction, device=dev)
            want = reference.top_k(x, k, -1, direction)
            for g, w in zip(got, want, strict=True):
                assert_bits_equal(np.asarray(g), w)


# ------------------------------------------------------------------ indices, levels, bad input
def test_uint64_indices_and_their_level(device, at_level):
    x = np.arange(24, dtype=np.int64).reshape(2, 3, 4)
    values, indices = dml.top_k(x, 2, axis=1, index_data_type=np.uint64, device=device)
    assert indices.dtype == np.uint64
    np.testing.assert_array_equal(indices, np.broadcast_to(np.array([[2], [1]], np.uint64), (2, 2, 4)))
    np.testing.assert_array_equal(values, x[:, [2, 1]])
    with pytest.raises(dml.InvalidArgumentError, match="FL_5_0"):
        dml.top_k(x.astype(np.float32), 2, axis=1, index_data_type="UINT64", device=at_level(dml.FeatureLevel.FL_4_1))
    with pytest.raises(dml.InvalidArgumentError, match="DimensionCount 3"):
        dml.top_k0(x.astype(np.float32), 2, device=at_level(dml.FeatureLevel.FL_2_0))


X = TD(DT.FLOAT32, [2, 5])


@pytest.mark.parametrize("change, message", [
    ({"k": 0}, r"TopK1: k = 0 must be in \[1, 5\]"),
    ({"k": 6}, r"TopK1: k = 6 must be in \[1, 5\] \(input_tensor.sizes\[1\] = 5"),
    ({"axis": 2}, "TopK1: axis = 2 must be below the DimensionCount 2"),
    ({"output_value_tensor": TD(DT.FLOAT16, [2, 3])}, "output_value_tensor.data_type FLOAT16 must be"),
    ({"output_index_tensor": TD(DT.INT32, [2, 3])}, "output_index_tensor"),
    ({"output_index_tensor": TD(DT.UINT32, [2, 4])}, r"output_index_tensor.sizes \[2, 4\] must be .* \[2, 3\]"),
    ({"output_value_tensor": TD(DT.FLOAT32, [3, 3])}, r"output_value_tensor.sizes \[3, 3\]"),
    ({"axis_direction": 7}, "axis_direction"),
])
def test_validation_messages(vulkan_device, change, message):
    import dataclasses

    desc = top_k.infer_output1(X, 3)
    with pytest.raises(dml.InvalidArgumentError, match=message):
        vulkan_device.create_operator(dataclasses.replace(desc, **change))


def test_functional_bad_arguments(vulkan_device):
    x = np.zeros((2, 5), np.float32)
    for kwargs, message in (({"k": 0}, "k = 0"), ({"k": 9}, "k = 9"), ({"k": 2, "axis": 3}, "top_k: axis = 3"),
                            ({"k": 2, "index_data_type": "INT8"}, "output_index_tensor"),
                            ({"k": 1.5}, "top_k: k")):
        with pytest.raises(dml.InvalidArgumentError, match=message):
            dml.top_k(x, device=vulkan_device, **kwargs)


# ------------------------------------------------------------------ ONNX
def _topk_model(k_values, largest=1, sorted_=0, axis=-1):
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=axis, largest=largest, sorted=sorted_)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 6])],
                              [helper.make_tensor_value_info("v", TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("i", TensorProto.INT64, None)],
                              initializer=[helper.make_tensor("k", TensorProto.INT64, [1], k_values)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])


def test_onnx_sorted_0_and_k_0(vulkan_device):
    """sorted=0 is answered sorted (as the provider does: a sorted answer is one sorted=0
    allows); k = 0 gives the two empty outputs."""
    x = np.random.default_rng(4).standard_normal((3, 6)).astype(np.float32)
    sess = gonnx.InferenceSession(_topk_model([4], largest=0).SerializeToString(), device=vulkan_device)
    v, i = sess.run(None, {"x": x})
    assert i.dtype == np.int64
    np.testing.assert_array_equal(i, np.argsort(x, axis=-1, kind="stable")[:, :4])
    np.testing.assert_array_equal(v, np.sort(x, axis=-1)[:, :4])
    sess = gonnx.InferenceSession(_topk_model([0]).SerializeToString(), device=vulkan_device)
    v, i = sess.run(None, {"x": x})
    assert v.shape == (3, 0) and i.shape == (3, 0) and i.dtype == np.int64


@pytest.mark.parametrize("argv, wanted", [
    (["top_k1", "--shape", "64,32000", "--k", "5", "--caps", "vulkan-cpu"], ("// TopK1 at FL_6_4", "// strategy rows")),
    (["top_k0", "--shape", "2,4096", "--k", "100", "--caps", "gpu"], ("// TopK at FL_6_4", "// strategy workgroups")),
    (["top_k1", "--shape", "3,9", "--axis", "0", "--axis-direction", "increasing", "--index-data-type", "UINT64",
      "--caps", "gl-cpu"], ("vec2<u32>(r.i, 0u)",)),
])
def test_cli_shader(capsys, argv, wanted):
    from gpudml import cli

    assert cli.main(["shader", *argv]) == 0
    out = capsys.readouterr().out
    assert all(w in out for w in wanted), out[:400]


def test_several_outputs_are_a_tuple_on_every_path(vulkan_device):
    """API.md section 15: an operator with several outputs returns a tuple in DirectML's
    field order: numpy in, Tensors in, a graph's Expressions in, and an empty input's host
    path alike."""
    x = np.array([[3, 1, 2], [0, 5, 4]], np.float32)
    values, indices = got = dml.top_k(x, 2, device=vulkan_device)
    assert type(got) is tuple and values.tolist() == [[3, 2], [5, 4]] and indices.tolist() == [[0, 2], [1, 2]]
    got = dml.top_k(vulkan_device.tensor(x), 2)
    assert type(got) is tuple and [t.numpy().tolist() for t in got] == [[[3, 2], [5, 4]], [[0, 2], [1, 2]]]
    graph = dml.Graph(vulkan_device)
    recorded = dml.top_k(graph.input([2, 3], np.float32), 2)
    assert type(recorded) is tuple and len(recorded) == 2
    got = dml.top_k(np.zeros((0, 3), np.float32), 2, device=vulkan_device)
    assert type(got) is tuple and [a.shape for a in got] == [(0, 2), (0, 2)]
