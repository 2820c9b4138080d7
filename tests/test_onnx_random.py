"""ONNX's random ops (RandomUniform, RandomUniformLike, RandomNormal, RandomNormalLike,
Bernoulli) through InferenceSession and eagerly: ONNX's node tests compare shapes and
types only (their expected values are one draw of numpy's generator), so here: each op's
values against the same composition in numpy over the Philox reference's bits (the
provider's mantissa conversion and Box-Muller; Bernoulli's u < p exactly), determinism per
seed (one seed, one draw; another seed, another), the statistics of the draws, and dtypes."""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import gpudml as dml
from gpudml import reference
from gpudml.onnx import InferenceSession, mapping
from gpudml.ops.random_generator import philox_state


def _model(op: str, inputs=(), out_type=TensorProto.FLOAT, out_shape=None, **attrs) -> onnx.ModelProto:
    names = [name for name, _, _ in inputs]
    node = helper.make_node(op, names, ["y"], **attrs)
    graph = helper.make_graph([node], op, [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                              [helper.make_tensor_value_info("y", out_type, out_shape)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)])


def _run(device, model, feeds=None) -> np.ndarray:
    return InferenceSession(model, device=device).run(None, feeds or {})[0]


def _unit(seed: int, sizes) -> np.ndarray:
    """u in [0, 1): the low 23 bits of Philox's words times 2^-23 (float64, exact)."""
    bits = reference.random_generator(philox_state(seed), sizes, output_state=False)
    return (bits & 0x7FFFFF).astype(np.float64) * 2.0**-23


def test_uniform_is_the_providers_conversion_of_the_bits(device):
    """RandomUniform(low=-2, high=3, seed=5) is low + (high - low) u, u from the bits' low 23
    (float32: within an ULP of the float64 value); in [low, high]; mean and variance of
    U(-2, 3) within 6 standard errors; the same seed gives the same draw, another another."""
    model = _model("RandomUniform", shape=[64, 64], low=-2.0, high=3.0, seed=5.0)
    y = _run(device, model)
    assert y.dtype == np.float32 and y.shape == (64, 64)
    want = (_unit(5, [1, 1, 1, 4096]) * 5.0 - 2.0).reshape(64, 64)
    np.testing.assert_allclose(y, want, rtol=0, atol=2.0**-21)
    assert y.min() >= -2.0 and y.max() <= 3.0
    n = y.size
    assert abs(y.mean() - 0.5) < 6 * 5 / math.sqrt(12 * n)
    assert abs(y.var() - 25 / 12) < 6 * 25 / 12 * math.sqrt(0.8 / n)
    np.testing.assert_array_equal(_run(device, model), y)
    other = _run(device, _model("RandomUniform", shape=[64, 64], low=-2.0, high=3.0, seed=6.0))
    assert (other != y).mean() > 0.99


def test_runs_draw_on_and_a_seed_repeats_its_sequence(device):
    """A session's runs continue the node's stream (the state advanced by the blocks each run
    draws, as the provider writes the output state back): the second run of 60 elements is
    elements 60-119 of one stream; through IO binding too; a new session starts it again."""
    model = _model("RandomUniform", shape=[6, 10], seed=5.0)
    session = InferenceSession(model, device=device)
    first, second = session.run(None, {})[0], session.run(None, {})[0]
    stream = _unit(5, [1, 1, 1, 180]).astype(np.float32).reshape(-1)
    np.testing.assert_array_equal(first.reshape(-1), stream[:60])
    np.testing.assert_array_equal(second.reshape(-1), stream[60:120])
    binding = session.io_binding()
    binding.bind_output("y")
    session.run_with_iobinding(binding)
    np.testing.assert_array_equal(np.asarray(binding.get_outputs()[0]).reshape(-1), stream[120:180])
    np.testing.assert_array_equal(InferenceSession(model, device=device).run(None, {})[0], first)


def test_runs_from_threads_draw_disjoint_blocks(device):
    """Four threads running one session: each run takes its own part of the stream (the state
    is taken and advanced under a lock), together the first four runs' draws."""
    model = _model("RandomUniform", shape=[4, 8], seed=9.0)
    session = InferenceSession(model, device=device)
    with ThreadPoolExecutor(4) as pool:
        runs = list(pool.map(lambda _: session.run(None, {})[0].reshape(-1), range(4)))
    stream = _unit(9, [1, 1, 1, 128]).astype(np.float32).reshape(4, 32)
    assert sorted(r.tobytes() for r in runs) == sorted(r.tobytes() for r in stream)


def test_without_a_seed_each_session_draws_its_own_key(device):
    model = _model("RandomUniform", shape=[8, 8])
    assert (_run(device, model) != _run(device, model)).mean() > 0.9


def test_normal_is_the_providers_box_muller(device):
    """RandomNormal(mean=1, scale=2, seed=11) of an odd count: elements 2i, 2i + 1 are
    r sin(2 pi u2), r cos(2 pi u2) with r = sqrt(-2 log max(u1, 1e-7)) (u1, u2 the pair's
    words), scaled and shifted (within the sine's and logarithm's float32 error); mean,
    standard deviation and the share within one sigma as N(1, 2^2)'s."""
    model = _model("RandomNormal", shape=[3, 1001], mean=1.0, scale=2.0, seed=11.0)
    y = _run(device, model)
    assert y.dtype == np.float32 and y.shape == (3, 1001)
    u = _unit(11, [1, 1, 1502, 2]).reshape(-1, 2)
    r = np.sqrt(-2 * np.log(np.maximum(u[:, 0], 1e-7)))
    z = np.stack([r * np.sin(2 * np.pi * u[:, 1]), r * np.cos(2 * np.pi * u[:, 1])], axis=1).reshape(-1)
    np.testing.assert_allclose(y.reshape(-1), (2 * z + 1)[:3003], rtol=0, atol=2e-3)
    n = y.size
    assert abs(y.mean() - 1.0) < 6 * 2 / math.sqrt(n)
    assert abs(y.std() - 2.0) < 6 * 2 / math.sqrt(2 * n)
    assert abs(np.mean(np.abs(y - 1.0) < 2.0) - 0.6827) < 6 * math.sqrt(0.6827 * 0.3173 / n)
    np.testing.assert_array_equal(_run(device, model), y)


@pytest.mark.parametrize("op", ["RandomUniformLike", "RandomNormalLike"])
def test_like_ops_take_the_inputs_shape_and_dtype(device, op):
    """The *Like ops: the input's shape, its type (FLOAT16 here) unless `dtype` says another;
    the draw is the FLOAT32 one cast."""
    x = np.zeros((5, 7), np.float16)
    model = _model(op, [("x", TensorProto.FLOAT16, [5, 7])], TensorProto.FLOAT16, seed=3.0)
    y = _run(device, model, {"x": x})
    assert y.dtype == np.float16 and y.shape == (5, 7)
    as32 = _run(device, _model(op, [("x", TensorProto.FLOAT16, [5, 7])], TensorProto.FLOAT, seed=3.0,
                               dtype=TensorProto.FLOAT), {"x": x})
    assert as32.dtype == np.float32
    np.testing.assert_array_equal(y, as32.astype(np.float16))


def test_bernoulli_is_u_below_p(device):
    """Bernoulli(p): 1 exactly where u < p (u the bits' low 23 times 2^-23), so p = 0 never and
    p = 1 always; the rate of each row within 6 standard errors of its p; `dtype` INT32 gives
    INT32, the default p's type."""
    p = np.repeat(np.array([[0.0], [0.25], [0.5], [1.0]], np.float32), 4096, axis=1)
    model = _model("Bernoulli", [("p", TensorProto.FLOAT, [4, 4096])], TensorProto.FLOAT, seed=21.0)
    y = _run(device, model, {"p": p})
    assert y.dtype == np.float32 and y.shape == (4, 4096)
    want = (_unit(21, [1, 1, 1, p.size]).reshape(p.shape) < p).astype(np.float32)
    np.testing.assert_array_equal(y, want)
    rates = y.mean(axis=1)
    assert rates[0] == 0 and rates[3] == 1
    for rate, q in zip(rates[1:3], (0.25, 0.5)):
        assert abs(rate - q) < 6 * math.sqrt(q * (1 - q) / 4096)
    ints = _run(device, _model("Bernoulli", [("p", TensorProto.FLOAT, [4, 4096])], TensorProto.INT32, seed=21.0,
                               dtype=TensorProto.INT32), {"p": p})
    assert ints.dtype == np.int32
    np.testing.assert_array_equal(ints, want.astype(np.int32))


def test_eager_and_session_draw_alike(device):
    """The mapping's eager path (ONNX's node tests) and a session draw the same values for a seed."""
    model = _model("RandomNormal", shape=[4, 6], seed=8.0)
    node = mapping.Node(model.graph.node[0], 22, [], [True])
    (eager,) = mapping.BY_TYPE["RandomNormal"].build(mapping.Context(device), node)
    np.testing.assert_array_equal(np.asarray(eager), _run(device, model))


def test_random_nodes_are_not_folded(device):
    """A random node of constant inputs runs on the device (the session's folding would draw
    with onnx's reference evaluator, numpy's generator): its values are Philox's."""
    p = helper.make_tensor("p", TensorProto.FLOAT, [2, 8], [0.5] * 16)
    node = helper.make_node("Bernoulli", ["p"], ["y"], seed=4.0)
    graph = helper.make_graph([node], "b", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])], [p])
    y = _run(device, helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)]))
    np.testing.assert_array_equal(y, (_unit(4, [1, 1, 1, 16]).reshape(2, 8) < 0.5).astype(np.float32))


def test_bad_attributes(device):
    """An integer RandomUniform is no ONNX random op's type; an empty shape has no DirectML tensor."""
    with pytest.raises(dml.UnsupportedError, match="a random int32 tensor"):
        _run(device, _model("RandomUniform", out_type=TensorProto.INT32, shape=[2, 2], dtype=TensorProto.INT32))
    with pytest.raises(dml.UnsupportedError, match="an empty tensor"):
        _run(device, _model("RandomUniform", shape=[2, 0]))


def test_multinomial_samples_the_softmax(device):
    """Multinomial(logits, sample_size=20000, seed): each class's share within 6 standard
    errors of softmax(logits); a class of -inf logit never drawn; indices in [0, C); INT64
    with dtype=INT64; each sample the first class whose cumulative probability passes u * total
    (checked against numpy's over the same u, where no cdf lies within 1e-5 of the target)."""
    with np.errstate(divide="ignore"):
        logits = np.log(np.array([[0.1, 0.2, 0.3, 0.4, 0.0], [0.5, 0.0, 0.0, 0.0, 0.5]], np.float32))
    model = _model("Multinomial", [("x", TensorProto.FLOAT, [2, 5])], TensorProto.INT32, sample_size=20000,
                   seed=13.0)
    y = _run(device, model, {"x": logits})
    assert y.dtype == np.int32 and y.shape == (2, 20000) and y.min() >= 0 and y.max() <= 4
    for row, probs in zip(y, np.exp(logits.astype(np.float64))):
        shares = np.bincount(row, minlength=5) / row.size
        assert np.all(np.abs(shares - probs) <= 6 * np.sqrt(probs * (1 - probs) / row.size)), (shares, probs)
    u = _unit(13, [1, 1, 1, 40000]).reshape(2, 20000)
    cdf = np.cumsum(np.exp(logits.astype(np.float64)), axis=1)
    target = u * cdf[:, -1:]
    want = (cdf[:, None, :] < target[:, :, None]).sum(axis=2)
    clear = np.abs(cdf[:, None, :] - target[:, :, None]).min(axis=2) > 1e-5
    np.testing.assert_array_equal(y[clear], want[clear])
    as64 = _run(device, _model("Multinomial", [("x", TensorProto.FLOAT, [2, 5])], TensorProto.INT64,
                               sample_size=20000, seed=13.0, dtype=TensorProto.INT64), {"x": logits})
    assert as64.dtype == np.int64
    np.testing.assert_array_equal(as64, y)
