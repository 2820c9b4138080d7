"""Training a small CNN the DirectML way (issue 48; docs/training.md walks through it):
DirectML has no autodiff, so a training step is the forward operators, then the gradient
operators in reverse, then one ADAM_OPTIMIZER per parameter tensor, every tensor on the
device from the first step to the last (only the losses are read back, once, at the end).

The network (`Net`, input [N, 1, 8, 8], 4 classes):

    z1 = convolution(x, W1, padding 1)                     [N, 4, 8, 8] (no bias: BN follows)
    y1 = batch_normalization_training(z1, gamma, beta)      gamma, beta [4] (batch statistics)
    a1 = relu(y1)
    p1 = max_pooling(a1, 2x2, stride 2)                     [N, 4, 4, 4]
    z2 = convolution(p1, W2, b2, padding 1)                 [N, 8, 4, 4]
    a2 = relu(z2)
    logits = gemm(a2 as [N, 128], W3, b3, trans_b)          [N, 4]
    loss = -sum(Y log_softmax(logits)) / N                  (softmax cross-entropy, Y one-hot)

and its gradients, each by a DirectML operator: dlogits = (softmax(logits) - Y) / N
(element-wise); dW3 = gemm(dlogits, h, trans_a), dh = gemm(dlogits, W3), db3 = reduce sum;
relu_grad; dW2 = a correlation of p1 and dz2 with batch and channels swapped (convolution
of the [C, N, H, W] views), dp1 = convolution(dz2, W2, direction backward) (the transposed
convolution); MAX_POOLING_GRAD; BATCH_NORMALIZATION_TRAINING_GRAD (with the batch
statistics BATCH_NORMALIZATION_TRAINING gave); dW1 the correlation of x and dz1. Then
ADAM_OPTIMIZER on W1, gamma, beta, W2, b2, W3, b3 (each as the 4-D view the page asks for),
and the step counter += 1 (dml.add), on the device.

`reference_train` is the same steps in float64 numpy (im2col convolutions, the same data
and initial weights): the test (tests/test_training.py) compares the loss curve and the
final weights; `train` is the device's; `data` and `initial_weights` are the fixed
synthetic data set and initialization.

The tolerance (`tolerances`), derived to first order. The float32 run's gradients are
within a relative GAMMA = 2^-14 of the float64 ones at the same weights: its longest float32
sum has 1,024 terms (N H W = 16 x 8 x 8: W1's gradient, the batch statistics) at 2^-24
each. Adam's update is scale-free: a gradient off by a relative GAMMA moves m / sqrt(v) by
at most 2 GAMMA of itself, and an update is at most B learning_rate, B = max(1, (1 - beta1)
/ sqrt(1 - beta2)) (Adam's paper, section 2.1: 3.16 for the usual betas), so each step's
update is within 2 B GAMMA learning_rate of the float64 one and k steps within 2 k B GAMMA
learning_rate; doubled for the first-order feedback (weights that differ give gradients
that differ, at most as much again over 50 steps at this learning rate): every weight
within 4 k B GAMMA learning_rate (50 steps: 7.7e-5). The loss at step k: GAMMA of itself
(its own float32 evaluation) plus the L1 norm
of its gradient times the weights' bound at k. What the derivation leaves out: an element
whose gradient is rounding (|g| below GAMMA times the sum of its terms' magnitudes), whose
Adam update has the rounding's sign; the fixed data set and learning rate have none (a
saturated run does: at learning rate 0.01 the loss reaches 1e-5 and W3's last updates
differ by 5e-4).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import gpudml as dml

from .. import tensor_methods  # noqa: F401 (Tensor.reshape and .transpose, whoever made the Device)

CLASSES, C1, C2, SIDE = 4, 4, 8, 8
BN_EPSILON = 1e-5
#: The parameters in Adam's order, and each one's shape.
SHAPES = {"w1": (C1, 1, 3, 3), "gamma": (C1,), "beta": (C1,), "w2": (C2, C1, 3, 3), "b2": (C2,),
          "w3": (CLASSES, C2 * (SIDE // 2) ** 2), "b3": (CLASSES,)}
PAD = {"start_padding": [1, 1], "end_padding": [1, 1]}


#: The float32 run's gradients' relative error (module docstring).
GAMMA = 2.0**-14


@dataclass(frozen=True)
class Hyper:
    learning_rate: float = 0.002
    beta1: float = 0.9
    beta2: float = 0.999
    epsilon: float = 1e-8


def data(n: int = 16, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A fixed synthetic data set: n images [1, 8, 8], class k a bright 4x4 quadrant k (with
    a random intensity) over uniform noise; (x float32 [n, 1, 8, 8], labels int [n])."""
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % CLASSES
    x = rng.uniform(-0.5, 0.5, (n, 1, SIDE, SIDE))
    for i, k in enumerate(labels):
        r, c = divmod(int(k), 2)
        x[i, 0, r * 4:(r + 1) * 4, c * 4:(c + 1) * 4] += rng.uniform(0.2, 0.8)
    return x.astype(np.float32), labels


def one_hot(labels: np.ndarray) -> np.ndarray:
    return np.eye(CLASSES, dtype=np.float32)[labels]


def initial_weights(seed: int = 1) -> dict[str, np.ndarray]:
    """He-initialized weights, gamma 1, biases and beta 0 (float32)."""
    rng = np.random.default_rng(seed)
    fan_in = {"w1": 9, "w2": C1 * 9, "w3": SHAPES["w3"][1]}
    out = {}
    for name, shape in SHAPES.items():
        if name in fan_in:
            out[name] = rng.normal(0, np.sqrt(2.0 / fan_in[name]), shape)
        else:
            out[name] = np.ones(shape) if name == "gamma" else np.zeros(shape)
    return {k: v.astype(np.float32) for k, v in out.items()}


def as4(shape) -> tuple[int, ...]:
    """A parameter's 4-D shape for ADAM_OPTIMIZER (its page's DimensionCount): leading 1s."""
    return (1,) * (4 - len(shape)) + tuple(shape)


# ============================================================================ on the device
def _channels(shape) -> list[int]:
    return [1, shape[0], 1, 1]


def _swap(t):
    """The [C, N, H, W] view of an [N, C, H, W] Tensor (batch and channels swapped, no copy)."""
    return t.transpose(1, 0, 2, 3)


def device_step(w: dict, x, y_onehot):
    """One forward and backward pass on the device: (loss as a [1, 1] Tensor, gradients by
    parameter name: W1's and W2's strided [O, I, 3, 3] views, the others packed, of their
    parameter's elements)."""
    n = x.shape[0]
    gamma = w["gamma"].reshape(_channels(SHAPES["gamma"]))
    z1 = dml.convolution(x, w["w1"], **PAD)
    y1, mean, variance = dml.batch_normalization_training(z1, gamma, w["beta"].reshape(_channels(SHAPES["beta"])),
                                                          epsilon=BN_EPSILON)
    a1 = dml.relu(y1)
    p1 = dml.max_pooling(a1, [2, 2], strides=[2, 2])
    z2 = dml.convolution(p1, w["w2"], w["b2"], **PAD)
    h = dml.relu(z2).reshape(n, -1)
    logits = dml.gemm(h, w["w3"], w["b3"].reshape(1, CLASSES), trans_b=True)
    log_p = dml.log_softmax(logits, axes=[1])
    loss = dml.reduce(dml.multiply(log_p, y_onehot), "sum", axes=[0, 1])
    loss = dml.linear(loss, alpha=-1.0 / n)
    # backward
    dlogits = dml.linear(dml.subtract(dml.softmax(logits, axes=[1]), y_onehot), alpha=1.0 / n)
    g = {"w3": dml.gemm(dlogits, h, trans_a=True), "b3": dml.reduce(dlogits, "sum", axes=[0])}
    dh = dml.gemm(dlogits, w["w3"]).reshape(z2.shape)
    dz2 = dml.relu_grad(z2, dh)
    g["w2"] = _swap(dml.convolution(_swap(p1), _swap(dz2), **PAD))
    g["b2"] = dml.reduce(dz2, "sum", axes=[0, 2, 3])
    dp1 = dml.convolution(dz2, w["w2"], direction="backward", **PAD)
    da1 = dml.max_pooling_grad(a1, dp1, [2, 2], strides=[2, 2])
    dy1 = dml.relu_grad(y1, da1)
    dz1, g["gamma"], g["beta"] = dml.batch_normalization_training_grad(z1, dy1, mean, variance, gamma,
                                                                       epsilon=BN_EPSILON)
    g["w1"] = _swap(dml.convolution(_swap(x), _swap(dz1), **PAD))
    return loss, g


class DeviceTrainer:
    """The weights, Adam's moments and the step counter as Tensors on `device`; `step(x, y)`
    trains one step and returns the loss as a Tensor (nothing read back)."""

    def __init__(self, device, weights: dict[str, np.ndarray], hyper: Hyper = Hyper()):
        self.device, self.hyper = device, hyper
        self.w = {k: device.tensor(v) for k, v in weights.items()}
        self.m = {k: device.tensor(np.zeros(as4(v.shape), np.float32)) for k, v in weights.items()}
        self.v = {k: device.tensor(np.zeros(as4(v.shape), np.float32)) for k, v in weights.items()}
        self.t = device.tensor(np.ones((1, 1, 1, 1), np.float32))
        self.one = device.tensor(np.ones((1, 1, 1, 1), np.float32))

    def step(self, x, y_onehot):
        loss, grads = device_step(self.w, x, y_onehot)
        h = self.hyper
        for name, g in grads.items():
            shape = as4(SHAPES[name])  # (W1's and W2's gradients: strided 4-D views, as they are)
            p, m, v = dml.adam_optimizer(self.w[name].reshape(shape), self.m[name], self.v[name],
                                         g if tuple(g.shape) == shape else g.reshape(shape), self.t,
                                         learning_rate=h.learning_rate, beta1=h.beta1, beta2=h.beta2,
                                         epsilon=h.epsilon)
            self.w[name], self.m[name], self.v[name] = p.reshape(SHAPES[name]), m, v
        self.t = dml.add(self.t, self.one)
        return loss


def train(device, steps: int = 50, n: int = 16, hyper: Hyper = Hyper()) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """`steps` steps on the device: (the losses, float64 [steps], the final weights)."""
    x, labels = data(n)
    trainer = DeviceTrainer(device, initial_weights(), hyper)
    tx, ty = device.tensor(x), device.tensor(one_hot(labels))
    losses = [trainer.step(tx, ty) for _ in range(steps)]
    return (np.array([float(loss.numpy().reshape(-1)[0]) for loss in losses]),
            {k: v.numpy() for k, v in trainer.w.items()})


# ============================================================================ the float64 reference
def _correlate(x, w, pad: int = 1):
    """Cross-correlation of x [N, C, H, W] with w [O, C, kh, kw] (stride 1, `pad` each side),
    float64, by im2col."""
    n, c, hgt, wid = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    ho, wo = hgt + 2 * pad - kh + 1, wid + 2 * pad - kw + 1
    cols = np.empty((n, c, kh, kw, ho, wo))
    for i in range(kh):
        for j in range(kw):
            cols[:, :, i, j] = xp[:, :, i:i + ho, j:j + wo]
    return np.einsum("nckluv,ockl->nouv", cols, w)


def reference_step(w: dict, x, y_onehot):
    """device_step in float64: (loss, gradients)."""
    n = x.shape[0]
    z1 = _correlate(x, w["w1"])
    mean = z1.mean(axis=(0, 2, 3), keepdims=True)
    var = ((z1 - mean) ** 2).mean(axis=(0, 2, 3), keepdims=True)
    inv = 1.0 / np.sqrt(var + np.float32(BN_EPSILON))
    xhat = (z1 - mean) * inv
    gamma, beta = w["gamma"].reshape(1, -1, 1, 1), w["beta"].reshape(1, -1, 1, 1)
    y1 = gamma * xhat + beta
    a1 = np.maximum(y1, 0)
    windows = a1.reshape(n, C1, SIDE // 2, 2, SIDE // 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(n, C1, 4, 4, 4)
    first = windows.argmax(axis=-1)  # the first maximum of each window
    p1 = np.take_along_axis(windows, first[..., None], -1)[..., 0]
    z2 = _correlate(p1, w["w2"]) + w["b2"].reshape(1, -1, 1, 1)
    h = np.maximum(z2, 0).reshape(n, -1)
    logits = h @ w["w3"].T + w["b3"]
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    loss = -(log_p * y_onehot).sum() / n
    dlogits = (np.exp(log_p) - y_onehot) / n
    g = {"w3": dlogits.T @ h, "b3": dlogits.sum(axis=0)}
    dz2 = (dlogits @ w["w3"]).reshape(z2.shape) * (z2 > 0)
    g["w2"] = _correlate(p1.transpose(1, 0, 2, 3), dz2.transpose(1, 0, 2, 3)).transpose(1, 0, 2, 3)
    g["b2"] = dz2.sum(axis=(0, 2, 3))
    dp1 = _correlate(dz2, np.flip(w["w2"], (2, 3)).transpose(1, 0, 2, 3))  # the transposed convolution
    dwin = np.zeros_like(windows)
    np.put_along_axis(dwin, first[..., None], dp1[..., None], -1)
    da1 = dwin.reshape(n, C1, 4, 4, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(a1.shape)
    dy1 = da1 * (y1 > 0)
    m = n * SIDE * SIDE
    g["beta"] = dy1.sum(axis=(0, 2, 3))
    g["gamma"] = (dy1 * xhat).sum(axis=(0, 2, 3))
    dz1 = gamma * inv * (dy1 - g["beta"].reshape(1, -1, 1, 1) / m - xhat * g["gamma"].reshape(1, -1, 1, 1) / m)
    g["w1"] = _correlate(x.transpose(1, 0, 2, 3), dz1.transpose(1, 0, 2, 3)).transpose(1, 0, 2, 3)
    return loss, g


def reference_train(steps: int = 50, n: int = 16, hyper: Hyper = Hyper(), torch_epsilon: bool = False):
    """`train` in float64 numpy (ADAM_OPTIMIZER's formula with the float32 hyperparameters):
    (the losses, the final weights, each step's gradients' L1 norm), float64. `torch_epsilon`:
    epsilon added to sqrt(v / (1 - beta2^t)), as torch.optim.Adam adds it, instead of to sqrt(v)
    (scripts/train_cnn_vs_torch.py: the only difference between DirectML's step and PyTorch's)."""
    x, labels = data(n)
    x, y = x.astype(np.float64), one_hot(labels).astype(np.float64)
    w = {k: v.astype(np.float64) for k, v in initial_weights().items()}
    m = {k: np.zeros_like(v) for k, v in w.items()}
    v = {k: np.zeros_like(p) for k, p in w.items()}
    lr, b1, b2, eps = (float(np.float32(a)) for a in (hyper.learning_rate, hyper.beta1, hyper.beta2, hyper.epsilon))
    losses, norms = [], []
    for t in range(1, steps + 1):
        loss, g = reference_step(w, x, y)
        losses.append(loss)
        norms.append(sum(float(np.abs(a).sum()) for a in g.values()))
        alpha = np.sqrt(1 - b2**t) / (1 - b1**t)
        for k in w:
            m[k] = b1 * m[k] + (1 - b1) * g[k]
            v[k] = b2 * v[k] + (1 - b2) * g[k] * g[k]
            if torch_epsilon:
                w[k] = w[k] - lr / (1 - b1**t) * m[k] / (np.sqrt(v[k] / (1 - b2**t)) + eps)
            else:
                w[k] = w[k] - lr * alpha * m[k] / (np.sqrt(v[k]) + eps)
    return np.array(losses), w, np.array(norms)


def tolerances(losses: np.ndarray, gradient_l1: np.ndarray, hyper: Hyper = Hyper()) -> tuple[np.ndarray, float]:
    """The derived tolerance (module docstring): (one per step of the loss curve, the final
    weights'), from the reference's losses and its gradients' L1 norms."""
    lr, b1, b2 = (float(np.float32(a)) for a in (hyper.learning_rate, hyper.beta1, hyper.beta2))
    most = max(1.0, (1 - b1) / np.sqrt(1 - b2))

    def weights(k: int) -> float:
        return 4 * k * most * GAMMA * lr
    loss = np.array([GAMMA * abs(a) + g * weights(k) for k, (a, g) in enumerate(zip(losses, gradient_l1))])
    return loss, weights(len(losses))
