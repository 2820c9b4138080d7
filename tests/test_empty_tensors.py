"""Empty tensors (a size of 0) in the functional forms, as DirectML's execution provider
handles them (gpudml/functional.py `_with_empty`; the session's: tests/test_onnx_session.py):
DirectML's descriptions stay strict (sizes >= 1), the layer above runs no operator: the
call is validated as any call, its result is the operator's reference on the host, with no
GPU work; a reduction over an empty set gives its identity; what has no result is an
InvalidArgumentError naming the function and the empty argument."""

from __future__ import annotations

import numpy as np
import pytest
from isolated import limited_device

import gpudml as dml
from gpudml.functional import FUNCTIONS
from gpudml.ops import SPECS

E = np.zeros((0, 3), np.float32)

#: ONNX's identities of a reduction over an empty set (its *_empty_set node tests), float32.
IDENTITIES = {"sum": 0.0, "multiply": 1.0, "l1": 0.0, "l2": 0.0, "sum_square": 0.0, "log_sum": -np.inf,
              "log_sum_exp": -np.inf, "max": -np.inf, "min": np.inf}


@pytest.fixture
def fresh(adapter):
    """A device of a context of the test's own: its pool counts only what the test does."""
    return limited_device(adapter, shared_pipelines=True)


def _no_gpu_work(device):
    assert device._ctx.pool.allocations == 0


@pytest.mark.parametrize("function", sorted(IDENTITIES))
def test_reduction_over_an_empty_set_is_its_identity(fresh, function):
    got = dml.reduce(E, function, axes=[0], device=fresh)
    assert got.shape == (1, 3) and got.dtype == np.float32
    np.testing.assert_array_equal(got, np.full((1, 3), IDENTITIES[function], np.float32))
    assert np.isnan(dml.reduce(E, "average", axes=[0], device=fresh)).all()  # 0 / 0
    _no_gpu_work(fresh)


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
def test_integer_max_and_min_over_an_empty_set_are_the_type_extremes(fresh, dtype):
    x = np.zeros((2, 0), dtype)
    got_max = dml.reduce(x, "max", axes=[1], keepdims=False, device=fresh)
    got_min = dml.reduce(x, "min", axes=[1], device=fresh)
    assert got_max.dtype == dtype and got_max.tolist() == [np.iinfo(dtype).min] * 2
    assert got_min.shape == (2, 1) and got_min.reshape(-1).tolist() == [np.iinfo(dtype).max] * 2
    assert dml.reduce(x, "sum", axes=[1], device=fresh).reshape(-1).tolist() == [0, 0]
    assert dml.reduce(x, "multiply", axes=[0, 1], device=fresh).reshape(-1).tolist() == [1]
    _no_gpu_work(fresh)


def test_empty_results_and_parts(fresh):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert dml.join([E, a, E], axis=0, device=fresh).tolist() == a.tolist()  # empty parts left out
    got = dml.add(E, np.ones((1, 3), np.float32), device=fresh)  # broadcast against an empty tensor
    assert got.shape == (0, 3) and got.dtype == np.float32
    assert dml.tile(E, [2, 2], device=fresh).shape == (0, 6)
    assert dml.reduce(E, "sum", axes=[1], device=fresh).shape == (0, 1)  # nothing left to reduce into
    np.testing.assert_array_equal(dml.gemm(np.zeros((2, 0), np.float32), np.zeros((0, 4), np.float32),
                                           device=fresh), np.zeros((2, 4), np.float32))  # an empty inner dimension
    _no_gpu_work(fresh)


def test_what_has_no_result_or_breaks_a_rule_is_refused(fresh):
    with pytest.raises(dml.InvalidArgumentError, match=r"argmax: x has shape \[0, 3\]: .*empty"):
        dml.argmax(E, axes=[0], device=fresh)
    with pytest.raises(dml.InvalidArgumentError, match=r"Tile: repeats\[1\] = -2"):  # validated as any call
        dml.tile(E, [1, -2], device=fresh)
    with pytest.raises(dml.InvalidArgumentError, match=r"reduce: axes\[0\] = 5 is outside"):
        dml.reduce(E, "sum", axes=[5], device=fresh)
    t = fresh.tensor(np.ones((1, 3), np.float32))  # a Tensor in gives a Tensor out, which cannot be empty
    with pytest.raises(dml.InvalidArgumentError, match=r"add: b has shape \[0, 3\], and the result is empty"):
        dml.add(t, E)
    assert dml.join([t, E], axis=0).numpy().tolist() == [[1, 1, 1]]  # a non-empty result can
    with pytest.raises(dml.InvalidArgumentError, match=r"add: b has shape \[0, 3\]: .*broadcast"):
        dml.add(np.ones((2, 3), np.float32), E)


@pytest.mark.parametrize("spec", [s for s in SPECS if s.examples and s.examples[0].input is not None],
                         ids=lambda s: s.key)
def test_every_operator_takes_an_empty_first_input(spec, fresh):
    """Every operator's first page example with its first tensor argument emptied (axis 0
    cut to 0): the reference's result with no GPU work, or an InvalidArgumentError naming
    the function or the operator; nothing else (no crash of the host path)."""
    example = spec.examples[0]
    x = [a[:0] for a in example.input] if isinstance(example.input, list) else example.input[:0]
    try:
        got = FUNCTIONS[spec.functional_name](x, device=fresh, **example.args)
    except dml.InvalidArgumentError as exc:
        assert str(exc).startswith((spec.functional_name, spec.name)), exc
    else:
        for r in got if isinstance(got, (list, tuple)) else [got]:
            assert isinstance(r, np.ndarray)
    _no_gpu_work(fresh)
