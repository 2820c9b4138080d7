"""The CNN of gpudml/bench/training.py trained three ways, the same 50 steps from the same data
and initial weights: gpudml on the device (the DirectML way: forward, gradient operators,
ADAM_OPTIMIZER), the float64 numpy reference, and PyTorch's CPU autograd with torch.optim.Adam
(float32). Prints each run's loss curve at a few steps, the largest differences of the loss
curve and of the final weights between them, and the ms per step (docs/training.md).

PyTorch is not a dependency of gpudml: where `import torch` fails, `--torch-python PATH` names
an interpreter that has it (numpy too, gpudml not needed there); this script runs its PyTorch
part there (`--child IN.npz OUT.npz`, data and weights in, losses and weights out).

    PYTHONPATH=. .venv/bin/python scripts/train_cnn_vs_torch.py --adapter vulkan \
        --torch-python /path/to/python-with-torch

PyTorch's Adam adds epsilon to sqrt(v / (1 - beta2^t)), DirectML's to sqrt(v) (the step is
the same but for epsilon scaled by sqrt(1 - beta2^t)): where a weight's gradients are tiny
(a unit that is rarely active) that moves the weight; the fourth run, float64 with PyTorch's
epsilon, shows that this is all that tells PyTorch's run from DirectML's.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

NAMES = ("w1", "gamma", "beta", "w2", "b2", "w3", "b3")


def torch_train(x, y_onehot, weights: dict, steps: int, lr: float, beta1: float, beta2: float, eps: float):
    """The steps with PyTorch's autograd (float32, CPU): (losses, final weights, ms per step)."""
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    p = {k: torch.tensor(v, requires_grad=True) for k, v in weights.items()}
    opt = torch.optim.Adam([p[k] for k in NAMES], lr=lr, betas=(beta1, beta2), eps=eps)
    tx, labels = torch.tensor(x), torch.tensor(y_onehot.argmax(axis=1))
    losses, times = [], []
    for _ in range(steps):
        t0 = time.perf_counter()
        opt.zero_grad()
        z1 = F.conv2d(tx, p["w1"], padding=1)
        y1 = F.batch_norm(z1, None, None, p["gamma"], p["beta"], training=True, eps=1e-5)
        p1 = F.max_pool2d(F.relu(y1), 2)
        h = F.relu(F.conv2d(p1, p["w2"], p["b2"], padding=1)).flatten(1)
        loss = F.cross_entropy(F.linear(h, p["w3"], p["b3"]), labels)
        loss.backward()
        opt.step()
        times.append((time.perf_counter() - t0) * 1e3)
        losses.append(float(loss.detach()))
    return np.array(losses), {k: v.detach().numpy().copy() for k, v in p.items()}, float(np.median(times))


def _child(inp: str, out: str) -> None:
    d = np.load(inp)
    losses, weights, ms = torch_train(d["x"], d["y"], {k: d[k] for k in NAMES}, int(d["steps"]),
                                      *(float(d[k]) for k in ("lr", "beta1", "beta2", "eps")))
    np.savez(out, losses=losses, ms=ms, **weights)


def _torch_run(args, x, y, weights, hyper):
    values = (hyper.learning_rate, hyper.beta1, hyper.beta2, hyper.epsilon)
    try:
        import torch  # noqa: F401
    except ImportError:
        if not args.torch_python:
            return None
        with tempfile.TemporaryDirectory() as tmp:
            inp, out = Path(tmp) / "in.npz", Path(tmp) / "out.npz"
            np.savez(inp, x=x, y=y, steps=args.steps, lr=values[0], beta1=values[1], beta2=values[2], eps=values[3],
                     **weights)
            subprocess.run([args.torch_python, __file__, "--child", str(inp), str(out)], check=True)
            d = np.load(out)
            return d["losses"], {k: d[k] for k in NAMES}, float(d["ms"])
    return torch_train(x, y, weights, args.steps, *values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--adapter", default=None, help="vulkan, gl or an adapter-name substring")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--torch-python", default=None, help="an interpreter with torch, where this one has none")
    parser.add_argument("--child", nargs=2, metavar=("IN", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return

    import gpudml as dml
    from gpudml.bench import training

    hyper = training.Hyper()
    x, labels = training.data(args.batch)
    y = training.one_hot(labels)
    weights = training.initial_weights()
    device = dml.Device(adapter=args.adapter)
    trainer = training.DeviceTrainer(device, weights, hyper)
    tx, ty = device.tensor(x), device.tensor(y)
    trainer.step(tx, ty)  # (compiles every kernel; the timed run starts again from the initial weights)
    device.synchronize()
    trainer = training.DeviceTrainer(device, weights, hyper)
    times, losses = [], []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        losses.append(trainer.step(tx, ty))
        device.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    runs = {"gpudml (" + device.adapter_name + ")": (np.array([float(a.numpy().reshape(-1)[0]) for a in losses]),
                                                     {k: v.numpy() for k, v in trainer.w.items()},
                                                     float(np.median(times)))}
    t0 = time.perf_counter()
    ref_losses, ref_weights, _ = training.reference_train(args.steps, args.batch, hyper)
    runs["numpy float64"] = (ref_losses, ref_weights, (time.perf_counter() - t0) * 1e3 / args.steps)
    torch_run = _torch_run(args, x, y, weights, hyper)
    if torch_run is not None:
        runs["PyTorch CPU autograd float32"] = torch_run
        runs["numpy float64, PyTorch's epsilon"] = (*training.reference_train(args.steps, args.batch, hyper,
                                                                             torch_epsilon=True)[:2], float("nan"))
    else:
        print("PyTorch: not installed here and no --torch-python given: its column is left out\n")
    shown = sorted({0, 1, args.steps // 5, args.steps // 2, args.steps - 1})
    print(f"{args.steps} steps, batch {args.batch}, learning rate {hyper.learning_rate}\n")
    print("| run | ms per step | " + " | ".join(f"loss {k + 1}" for k in shown) + " |")
    print("|---|---|" + "---|" * len(shown))
    for name, (curve, _, ms) in runs.items():
        print(f"| {name} | {ms:.2f} | " + " | ".join(f"{curve[k]:.6f}" for k in shown) + " |")
    print("\n| between | largest loss difference | largest final-weight difference |")
    print("|---|---|---|")
    names = list(runs)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            dl = float(np.max(np.abs(runs[a][0] - runs[b][0])))
            dw = max(float(np.max(np.abs(np.asarray(runs[a][1][k], np.float64) - runs[b][1][k]))) for k in NAMES)
            print(f"| {a} / {b} | {dl:.3g} | {dw:.3g} |")
    loss_tol, weight_tol = training.tolerances(ref_losses, training.reference_train(args.steps, args.batch, hyper)[2],
                                               hyper)
    print(f"\nThe test's derived tolerance (tests/test_training.py): final weights {weight_tol:.3g}, "
          f"loss {loss_tol.min():.3g} to {loss_tol.max():.3g} per step.")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
