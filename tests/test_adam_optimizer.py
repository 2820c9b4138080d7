"""ADAM_OPTIMIZER: what the conformance kit (tests/test_conformance.py) does not cover: the
documented precision at its bound (the bias correction near T = 1 with beta2 near 1, large
T, FLOAT16) under both adapter classes, the reference against the page's formula step by
step, each validation rule's message before any GPU work, gpudml's "in place" (outputs fed
back; an output never aliases an input), several steps on the device against PyTorch's
update rule written out."""

from __future__ import annotations

import numpy as np
import pytest

import gpudml as dml
from gpudml import reference
from gpudml.ops.adam_optimizer import bounds

DT = dml.DataType
SHAPE = (2, 3, 8, 16)
_DEVICES: dict = {}


def _device(adapter: str, adapter_class: str) -> dml.Device:
    key = (adapter, adapter_class)
    if key not in _DEVICES:
        _DEVICES[key] = dml.Device(adapter=adapter, adapter_class=adapter_class)
    return _DEVICES[key]


def _inputs(rng, dtype, shape=SHAPE, step=1.0, scale=1.0):
    x = rng.uniform(-2, 2, shape).astype(dtype)
    m = (rng.uniform(-1, 1, shape) * scale).astype(dtype)
    v = (rng.uniform(0, 1, shape) * scale * scale).astype(dtype)
    g = (rng.uniform(-1, 1, shape) * scale).astype(dtype)
    return x, m, v, g, np.full((1, 1, 1, 1), step, dtype)


def _exact(x, m, v, g, t, lr, b1, b2, eps):
    """The page's formula in float64, written out (the reference's second formulation)."""
    x, m, v, g = (a.astype(np.float64) for a in (x, m, v, g))
    t = float(t.reshape(-1)[0])
    lr, b1, b2, eps = (float(np.float32(a)) for a in (lr, b1, b2, eps))
    m1 = b1 * m + (1 - b1) * g
    v1 = b2 * v + (1 - b2) * g * g
    return x - lr * (np.sqrt(1 - b2**t) / (1 - b1**t)) * m1 / (np.sqrt(v1) + eps), m1, v1


@pytest.mark.any_class  # both classes' Devices made here: the GPU-class run would repeat them
@pytest.mark.parametrize("adapter", ["vulkan", "gl"])
@pytest.mark.parametrize("adapter_class", ["cpu", "gpu"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_precision_at_the_bound(adapter, adapter_class, dtype):
    """Every output within the documented bound of the float64 formula, and the bound not
    loose: the worst element uses more than a tenth of it (FLOAT32: the parameters' error is
    dominated by the bias correction and the subtraction, which the bound counts). Cases: T
    = 1 and beta2 = 0.999 (1 - beta2^T = 0.001: the series), T = 1000 (exp2), tiny second
    moments (sqrt's spread), beta = 0."""
    device = _device(adapter, adapter_class)
    rng = np.random.default_rng(7)
    worst = 0.0
    for step, b1, b2, eps, scale in ((1, 0.9, 0.999, 1e-8, 1.0), (1000, 0.9, 0.999, 1e-8, 1.0),
                                     (3, 0.5, 0.99999, 1e-3, 1e-3), (2, 0.0, 0.0, 1e-8, 1.0)):
        x, m, v, g, t = _inputs(rng, dtype, step=step, scale=scale)
        args = {"learning_rate": 0.01, "beta1": b1, "beta2": b2, "epsilon": eps}
        got = dml.adam_optimizer(x, m, v, g, t, device=device, **args)
        assert isinstance(got, tuple) and len(got) == 3
        for out, want, bound in zip(got, _exact(x, m, v, g, t, 0.01, b1, b2, eps), bounds(x, m, v, g, t, **args)):
            assert out.dtype == dtype and out.shape == SHAPE
            ratio = np.abs(out.astype(np.float64) - want) / bound
            assert ratio.max() <= 1.0, (step, b1, b2, float(ratio.max()))
            worst = max(worst, float(ratio.max()))
    assert worst > 0.1


def test_reference_is_the_page_formula():
    """The reference: the formula in float64, each output rounded once to the parameters'
    type; T = 0 is 0 / 0 (NaN), as the page's formula."""
    rng = np.random.default_rng(3)
    x, m, v, g, t = _inputs(rng, np.float32, step=5)
    got = reference.adam_optimizer(x, m, v, g, t, learning_rate=0.1, beta1=0.8, beta2=0.99, epsilon=1e-6)
    for a, b in zip(got, _exact(x, m, v, g, t, 0.1, 0.8, 0.99, 1e-6)):
        assert a.dtype == np.float32 and np.array_equal(a, b.astype(np.float32))
    x0 = reference.adam_optimizer(x, m, v, g, np.zeros((1, 1, 1, 1), np.float32))[0]
    assert np.isnan(x0).all()
    device = _device("vulkan", "cpu")
    assert np.isnan(dml.adam_optimizer(x, m, v, g, np.zeros((1, 1, 1, 1), np.float32), device=device)[0]).all()


def _desc(dtype=DT.FLOAT32, sizes=(1, 2, 3, 4), step=(1, 1, 1, 1), **changes):
    td = dml.TensorDesc(dtype, sizes)
    fields = dict(input_parameters_tensor=td, input_first_moment_tensor=td, input_second_moment_tensor=td,
                  gradient_tensor=td, training_step_tensor=dml.TensorDesc(dtype, step), output_parameters_tensor=td,
                  output_first_moment_tensor=td, output_second_moment_tensor=td,
                  learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8)
    fields.update(changes)
    return fields


@pytest.mark.parametrize("changes, message", [
    ({"learning_rate": -0.001}, "AdamOptimizer: learning_rate = -0.0010000000474974513 must be finite and >= 0"),
    ({"learning_rate": float("nan")}, "AdamOptimizer: learning_rate = nan must be finite and >= 0"),
    ({"beta1": 1.0}, "AdamOptimizer: beta1 = 1.0 must be in [0, 1) (1 - beta1^T is the bias correction's divisor)"),
    ({"beta2": -0.5}, "AdamOptimizer: beta2 = -0.5 must be in [0, 1)"),
    ({"epsilon": 0.0}, "AdamOptimizer: epsilon = 0.0 must be finite and > 0"),
    ({"epsilon": -1e-8}, "AdamOptimizer: epsilon = -9.99999993922529e-09 must be finite and > 0"),
    ({"gradient_tensor": dml.TensorDesc(DT.FLOAT32, (1, 2, 3, 5))},
     "AdamOptimizer: gradient_tensor.sizes [1, 2, 3, 5] must equal input_parameters_tensor.sizes [1, 2, 3, 4]"),
    ({"output_second_moment_tensor": dml.TensorDesc(DT.FLOAT32, (2, 2, 3, 4))},
     "AdamOptimizer: output_second_moment_tensor.sizes [2, 2, 3, 4] must equal input_parameters_tensor.sizes"),
    ({"training_step_tensor": dml.TensorDesc(DT.FLOAT32, (1, 1, 1, 2))},
     "AdamOptimizer: training_step_tensor.sizes [1, 1, 1, 2] must be [1, 1, 1, 1] (a scalar)"),
    ({"training_step_tensor": dml.TensorDesc(DT.UINT32, (1, 1, 1, 1))},
     "AdamOptimizer: training_step_tensor.data_type UINT32 must equal input_parameters_tensor.data_type FLOAT32"),
    ({"learning_rate": "0.1"}, "AdamOptimizer: learning_rate: expected a number"),
])
def test_validation_messages(changes, message):
    """Each rule: InvalidArgumentError naming the operator, the field, the rule and the
    values, before any GPU work (no buffer taken)."""
    device = _device("vulkan", "cpu")
    before = device._ctx.pool.allocations
    with pytest.raises(dml.InvalidArgumentError) as info:
        device.create_operator(dml.AdamOptimizerOperatorDesc(**_desc(**changes)))
    assert str(info.value).startswith(message), str(info.value)
    assert device._ctx.pool.allocations == before


def test_support_table():
    """4-D only; FLOAT32 and FLOAT16; FL 3.0 on."""
    with pytest.raises(dml.InvalidArgumentError, match="DimensionCount 3 is not supported at FL_6_4 .supported: 4."):
        dml.Device(adapter="vulkan").create_operator(
            dml.AdamOptimizerOperatorDesc(**_desc(sizes=(2, 3, 4), step=(1, 1, 1))))
    with pytest.raises(dml.InvalidArgumentError, match="data_type FLOAT64 is not supported"):
        dml.Device(adapter="vulkan").create_operator(dml.AdamOptimizerOperatorDesc(**_desc(dtype=DT.FLOAT64)))
    with pytest.raises(dml.InvalidArgumentError, match="not available at feature level FL_2_1 .introduced at FL_3_0."):
        dml.Device(adapter="vulkan", feature_level=dml.FeatureLevel.FL_2_1).create_operator(
            dml.AdamOptimizerOperatorDesc(**_desc()))


def test_functional_checks_before_gpu_work():
    """The functional form rejects bad hyperparameters and shapes with the same messages."""
    rng = np.random.default_rng(0)
    x, m, v, g, t = _inputs(rng, np.float32, shape=(1, 1, 2, 3))
    with pytest.raises(dml.InvalidArgumentError, match=r"beta1 = 1.5 must be in \[0, 1\)"):
        dml.adam_optimizer(x, m, v, g, t, beta1=1.5)
    with pytest.raises(dml.InvalidArgumentError, match="input_first_moment_tensor.sizes"):
        dml.adam_optimizer(x, m[:, :, :1], v, g, t)


@pytest.mark.parametrize("adapter", ["vulkan", "gl"])
def test_steps_on_the_device_in_place(adapter):
    """gpudml's "in place": each step's outputs are the next step's inputs, Tensors that stay
    on the device (the step counter too, incremented with dml.add); after 5 steps, within 5
    times the one-step bound of the float64 steps (each step's error carried, not grown:
    the update's size is at most learning_rate). execute() refuses an output that is an
    input; ping-pong between two sets of Tensors (execute(outputs=...)) gives the same bits."""
    device = _device(adapter, "cpu")
    rng = np.random.default_rng(11)
    x, m, v, g0, t = _inputs(rng, np.float32, shape=(1, 4, 8, 8))
    m[:], v[:] = 0, 0
    tx, tm, tv, tt = (device.tensor(a) for a in (x, m, v, t))
    one = device.tensor(np.ones((1, 1, 1, 1), np.float32))
    want = [a.astype(np.float64) for a in (x, m, v)]
    grads = [(g0 * (k + 1) / 3).astype(np.float32) for k in range(5)]
    bound = np.zeros(x.shape)
    for k, g in enumerate(grads):
        ref_in = [w.astype(np.float32) for w in want]
        bound += bounds(*ref_in, g, np.full((1, 1, 1, 1), k + 1, np.float32), learning_rate=0.05)[0]
        want = list(_exact(*want, g, np.full((1, 1, 1, 1), k + 1.0), 0.05, 0.9, 0.999, 1e-8))
        tx, tm, tv = dml.adam_optimizer(tx, tm, tv, device.tensor(g), tt, learning_rate=0.05)
        tt = dml.add(tt, one)
    assert all(isinstance(a, dml.Tensor) for a in (tx, tm, tv, tt))
    assert tt.numpy().item() == 6.0
    assert (np.abs(tx.numpy() - want[0]) <= 5 * bound).all()

    compiled = device.compile_operator(device.create_operator(dml.AdamOptimizerOperatorDesc(
        **_desc(sizes=x.shape, learning_rate=0.05))))
    ins = [tx, tm, tv, device.tensor(grads[0]), tt]
    with pytest.raises(dml.InvalidArgumentError, match="never writes into its inputs"):
        compiled.execute(ins, outputs=[tx, device.tensor(m), device.tensor(v)])
    a = [device.tensor(np.zeros(x.shape, np.float32)) for _ in range(3)]
    b = [device.tensor(np.zeros(x.shape, np.float32)) for _ in range(3)]
    compiled.execute(ins, outputs=a)
    compiled.execute([*a, ins[3], tt], outputs=b)
    again = dml.adam_optimizer(*dml.adam_optimizer(*ins, learning_rate=0.05), ins[3], tt, learning_rate=0.05)
    for p, q in zip(b, again):
        assert np.array_equal(p.numpy(), q.numpy())


def test_training_step_forms():
    """The step as a one-element array of any rank, or a Python number (FLOAT32)."""
    rng = np.random.default_rng(5)
    x, m, v, g, t = _inputs(rng, np.float32, shape=(1, 1, 4, 4), step=3)
    device = _device("vulkan", "cpu")
    want = dml.adam_optimizer(x, m, v, g, t, device=device)
    for step in (3, np.array([3.0], np.float32), np.float32(3.0).reshape(())):
        got = dml.adam_optimizer(x, m, v, g, step, device=device)
        assert all(np.array_equal(a, b) for a, b in zip(got, want))
    tensors = [device.tensor(a) for a in (x, m, v, g)]
    got = dml.adam_optimizer(*tensors, device.tensor(np.array([3.0], np.float32)))  # a [1] Tensor read as {1, 1, 1, 1}
    assert all(isinstance(a, dml.Tensor) and np.array_equal(a.numpy(), b) for a, b in zip(got, want))
