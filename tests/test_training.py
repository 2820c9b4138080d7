"""Training end to end, the DirectML way (issue 48, docs/training.md): a small CNN
(convolution, batch-normalization training, ReLU, max pooling, GEMM, softmax cross-entropy)
trained for 50 steps on a fixed synthetic data set with the gradient operators and
ADAM_OPTIMIZER, every tensor on the device between steps (nothing read back until the
end), against the same steps in float64 numpy within the derived tolerance of
gpudml/bench/training.py (loss curve and final weights), on both software adapters."""

from __future__ import annotations

import numpy as np
import pytest

import gpudml as dml
from gpudml.bench import training

STEPS = 50


@pytest.fixture(scope="module")
def reference_run():
    return training.reference_train(STEPS)


@pytest.mark.any_class  # both classes' Devices made here: the GPU-class run would repeat them
@pytest.mark.parametrize("adapter", ["vulkan", "gl"])
@pytest.mark.parametrize("adapter_class", ["cpu", "gpu"])
def test_cnn_trains_on_the_device_as_the_float64_reference(adapter, adapter_class, reference_run, monkeypatch):
    """50 steps on the device under both adapter classes' strategies: no Tensor read back
    while training (Tensor.numpy and .raw raise), then the loss curve and every final weight
    within the derived tolerance of the float64 steps; and it did train (the loss falls below
    a tenth of its first value)."""
    device = dml.Device(adapter=adapter, adapter_class=adapter_class)
    x, labels = training.data()
    trainer = training.DeviceTrainer(device, training.initial_weights())
    tx, ty = device.tensor(x), device.tensor(training.one_hot(labels))

    def no_read_back(*_args, **_kwargs):
        raise AssertionError("a Tensor was read back during training")

    with monkeypatch.context() as patch:
        patch.setattr(dml.Tensor, "numpy", no_read_back)
        patch.setattr(dml.Tensor, "raw", property(no_read_back))
        losses = [trainer.step(tx, ty) for _ in range(STEPS)]
    got_losses = np.array([float(loss.numpy().reshape(-1)[0]) for loss in losses])
    want_losses, want_weights, norms = reference_run
    loss_tolerance, weight_tolerance = training.tolerances(want_losses, norms)
    assert (np.abs(got_losses - want_losses) <= loss_tolerance).all(), (got_losses - want_losses) / loss_tolerance
    assert want_losses[-1] < 0.1 * want_losses[0]
    assert trainer.t.numpy().item() == STEPS + 1
    for name, want in want_weights.items():
        got = trainer.w[name].numpy()
        assert got.shape == want.shape and got.dtype == np.float32
        assert np.abs(got - want).max() <= weight_tolerance, (name, np.abs(got - want).max())


def test_reference_gradients_are_the_loss_derivative():
    """The float64 reference's backward pass is the derivative of its forward: central
    differences of the loss along a few random directions of every parameter."""
    x, labels = training.data()
    x, y = x.astype(np.float64), training.one_hot(labels).astype(np.float64)
    w = {k: v.astype(np.float64) for k, v in training.initial_weights().items()}
    _, grads = training.reference_step(w, x, y)
    rng = np.random.default_rng(2)
    for name in w:
        for _ in range(2):
            d = rng.normal(size=w[name].shape)
            h = 1e-6
            up = training.reference_step({**w, name: w[name] + h * d}, x, y)[0]
            down = training.reference_step({**w, name: w[name] - h * d}, x, y)[0]
            numeric = (up - down) / (2 * h)
            assert abs(numeric - float((grads[name] * d).sum())) <= 1e-6 * max(1.0, abs(numeric)), name


def test_docs_example_runs():
    """docs/training.md's first example runs as written (its 50 steps) and trains."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "training.md").read_text()
    block = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    namespace: dict = {}
    exec(compile(block, "docs/training.md", "exec"), namespace)
    curve = namespace["curve"]
    assert curve.shape == (50,) and curve[-1] < 0.1 * curve[0]
