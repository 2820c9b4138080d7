"""Reduce benchmark: the perf-anchor workloads W1-W3 on float32 [4096, 4096].

    W1  SUM over the last axis   -> [4096, 1]
    W2  SUM over axis 0          -> [1, 4096]
    W3  ARGMAX over the last axis -> [4096, 1] (UINT32)

Each workload is timed device-resident (Tensors in and out, compiled once: execute +
device.synchronize()) and numpy in / numpy out (dml.reduce: upload, kernels, readback),
against numpy's own np.sum / np.argmax. Every result is checked against reference.py first.
Timings are medians (and minima) of --reps interleaved rounds after warm-up: on a shared
machine, interleaving keeps the ratios within one run comparable. GB/s counts the 64 MiB
input read once.

    python -m gpudml.bench.reduce_strategies [--adapter vulkan|gl] [--reps 9] [--strategies]

--strategies also times the plan's alternatives (kernels/reduction.py strategies and options) for the same
workloads and for few long rows: the measurements behind the strategy constants.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

import gpudml as dml
from gpudml import reference
from gpudml.ops.reduce import infer_output as reduce_desc


class Case:
    """One timed variant: a zero-argument callable and the bytes it reads."""

    def __init__(self, name: str, run, nbytes: int):
        self.name, self.run, self.nbytes, self.times = name, run, nbytes, []

    def line(self, baseline: float | None) -> str:
        med, best = statistics.median(self.times) * 1e3, min(self.times) * 1e3
        ratio = f"{med / baseline:6.2f}x numpy" if baseline else ""
        return (f"  {self.name:46s} median {med:8.2f} ms ({self.nbytes / med / 1e6:5.2f} GB/s)"
                f"  min {best:8.2f} ms  {ratio}")


def compiled_for(device, x, function, axes, strategy=None, **options):
    desc = reduce_desc(dml.TensorDesc(dml.DataType.FLOAT32, x.shape), function, axes)
    return device.compile_operator(device.create_operator(desc), strategy, options=options)


def device_case(device, name, x, function, axes, **options) -> Case:
    """Device-resident: input and output Tensors made once; execute + synchronize timed."""
    compiled = compiled_for(device, x, function, axes, **options)
    t_in = device.tensor(x)
    t_out = device.empty(compiled.outputs[0][1])
    (result,) = compiled.execute([t_in], outputs=[t_out])
    check(result.numpy(), x, function, axes, name)

    def run():
        compiled.execute([t_in], outputs=[t_out])
        device.synchronize()

    return Case(name, run, x.nbytes)


def check(got, x, function, axes, name):
    want = reference.reduce(x, function, axes)
    if function == "argmax":
        ok = np.array_equal(got, want)
    else:
        ok = np.allclose(got, want, rtol=1e-5)
    if not ok:
        raise SystemExit(f"{name}: result differs from reference.py")


def measure(cases: list[Case], reps: int) -> None:
    for case in cases:  # warm-up: pipelines, buffers, caches
        case.run()
        case.run()
    for _ in range(reps):
        for case in cases:
            start = time.perf_counter()
            case.run()
            case.times.append(time.perf_counter() - start)


WORKLOADS = [("W1", "sum", [1], lambda x: x.sum(axis=1, keepdims=True)),
             ("W2", "sum", [0], lambda x: x.sum(axis=0, keepdims=True)),
             ("W3", "argmax", [1], lambda x: np.argmax(x, axis=1)[:, None].astype(np.uint32))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--adapter", default=None, help='"vulkan", "gl" or an adapter-name substring')
    parser.add_argument("--reps", type=int, default=9, help="timed rounds (at least 7)")
    parser.add_argument("--strategies", action="store_true", help="also time the plan's alternatives")
    args = parser.parse_args(argv)
    reps = max(7, args.reps)
    device = dml.Device(adapter=args.adapter)
    x = np.random.default_rng(0).random((4096, 4096), dtype=np.float32)
    print(f"adapter: {device.adapter_name}; input float32 {list(x.shape)} ({x.nbytes >> 20} MiB); "
          f"{reps} rounds, median and min")
    groups = []
    for wid, function, axes, numpy_fn in WORKLOADS:
        numpy_case = Case(f"{wid} numpy", lambda f=numpy_fn: f(x), x.nbytes)
        dev_case = device_case(device, f"{wid} gpudml device-resident", x, function, axes)
        check(dml.reduce(x, function, axes, device=device), x, function, axes, wid)
        host_case = Case(f"{wid} gpudml numpy in/out",
                         lambda f=function, a=axes: dml.reduce(x, f, a, device=device), x.nbytes)
        groups.append((f"{wid}: {function.upper()} over axes {axes}", [numpy_case, dev_case, host_case]))
    if args.strategies:
        groups += strategy_groups(device, x)
    measure([case for _, cases in groups for case in cases], reps)
    for title, cases in groups:
        print(title)
        baseline = statistics.median(cases[0].times) * 1e3 if cases[0].name.endswith("numpy") else None
        for case in cases:
            print(case.line(None if case is cases[0] and baseline else baseline))
    return 0


def strategy_groups(device, x):
    """The alternatives of kernels/reduction.py's plan for the same workloads (device-resident)."""
    few = x.reshape(16, -1)
    variants = {
        "W1 strategies": [("auto", x, "sum", [1], {}),
                          ("rows, scalar loads", x, "sum", [1], {"strategy": "rows", "vectorize": False}),
                          ("partials 4, 16-byte blocks", x, "sum", [1], {"strategy": "partials", "chunks": 4})],
        "W2 strategies": [("auto", x, "sum", [0], {}),
                          ("rows (1 pass), scalar", x, "sum", [0], {"strategy": "rows", "vectorize": False})]
        + [(f"partials {c}, groups of 4 outputs", x, "sum", [0], {"strategy": "partials", "chunks": c})
           for c in (1, 4, 16, 32, 64, 128)]
        + [("partials 32, scalar", x, "sum", [0], {"strategy": "partials", "chunks": 32, "vectorize": False})],
        "W3 strategies": [("auto", x, "argmax", [1], {}),
                          ("rows, scalar loads", x, "argmax", [1], {"strategy": "rows", "vectorize": False})],
        "[16, 1M] SUM over axis 1 (few long rows)": [
            (f"partials {c}", few, "sum", [1], {"strategy": "partials", "chunks": c})
            for c in (16, 64, 256, 1024, 4096)]
        + [("auto", few, "sum", [1], {})],
    }
    return [(title, [device_case(device, f"{name}", data, fn, axes, **opts) for name, data, fn, axes, opts in rows])
            for title, rows in variants.items()]


if __name__ == "__main__":
    sys.exit(main())
