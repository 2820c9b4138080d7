"""Slice1 benchmark: a 64 MiB float32 input [1,1,4096,4096], window strides [1,1,-2,2].

Device-resident (Tensor in, Tensor out; execute + synchronize) and numpy in/out
(upload, kernel, readback), against numpy's own time for the same result
(np.ascontiguousarray(x[:, :, ::-2, ::2])). Effective GB/s counts the logical
bytes: each selected input element read once plus each output element written once.

    python -m gpudml.bench.slice_strategies [--adapter vulkan] [--reps 9]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import gpudml as dml
from gpudml import reference


def median_ms(fn, reps: int, warmup: int = 2) -> float:
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples) * 1e3


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adapter", default=None)
    parser.add_argument("--reps", type=int, default=9)
    args = parser.parse_args(argv)

    device = dml.Device(adapter=args.adapter)
    shape, offsets, sizes, strides = [1, 1, 4096, 4096], [0, 0, 0, 0], [1, 1, 4096, 4096], [1, 1, -2, 2]
    x = np.random.default_rng(0).random(shape, dtype=np.float32)
    want = reference.slice(x, offsets, sizes, strides)
    logical_bytes = 2 * want.nbytes

    t = device.tensor(x)
    out = dml.slice(t, offsets, sizes, strides)
    assert np.array_equal(out.numpy(), want), "device-resident result differs from reference.py"
    assert np.array_equal(dml.slice(x, offsets, sizes, strides, device=device), want)

    def resident():
        dml.slice(t, offsets, sizes, strides)
        device.synchronize()

    rows = [
        ("gpudml device-resident", median_ms(resident, args.reps)),
        ("gpudml numpy in/out", median_ms(lambda: dml.slice(x, offsets, sizes, strides, device=device), args.reps)),
        ("numpy", median_ms(lambda: np.ascontiguousarray(x[:, :, ::-2, ::2]), args.reps)),
    ]
    numpy_ms = rows[-1][1]
    print(f"adapter: {device.adapter_name}")
    print(f"Slice1 float32 {shape} strides {strides}: {want.nbytes >> 20} MiB out, "
          f"{logical_bytes >> 20} MiB logical traffic\n")
    print("| path | median ms | effective GB/s | time / numpy |")
    print("|---|---|---|---|")
    for name, ms in rows:
        print(f"| {name} | {ms:.2f} | {logical_bytes / ms / 1e6:.2f} | {ms / numpy_ms:.2f}x |")


if __name__ == "__main__":
    main()
