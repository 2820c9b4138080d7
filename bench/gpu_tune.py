"""Plan options of the GPU-class Reduce strategies timed side by side on one adapter (GPU
timestamps, medians): the experiment behind the constants in gpudml/ops/reduction.py.

    python3 bench/gpu_tune.py            # on the adapter gpudml picks (GPUDML_ADAPTER)
"""
from __future__ import annotations

import statistics

import numpy as np

import gpudml as dml

CASES = [  # (title, shape, function, axes, strategy, options to try)
    ("W1 sum rows", [4096, 4096], "SUM", [1], "workgroup", [{"lanes": n} for n in (32, 64, 128, 256)]),
    ("W3 argmax rows", [4096, 4096], "ARGMAX", [1], "workgroup", [{"lanes": n} for n in (64, 128, 256)]),
    ("W2 sum columns", [4096, 4096], "SUM", [0], "columns", [{"chunks": n} for n in (8, 16, 32, 64, 128, 256)]),
    ("whole 16M", [1 << 24], "SUM", [0], "workgroup", [{"chunks": n} for n in (64, 128, 256, 512, 1024, 4096)]),
    ("short rows", [262144, 64], "MAX", [1], "workgroup", [{"lanes": n} for n in (2, 4, 8, 16)]),
]


def gpu_ms(dev, compiled, x, reps=30) -> float:
    compiled.execute([x])
    samples = []
    for _ in range(reps):
        with dev.profile() as prof:
            compiled.execute([x])
        samples.append(sum(r["gpu_ms"] for r in prof.rows))
    return statistics.median(samples)


def main() -> None:
    dev = dml.Device()
    print(dev.adapter_name, "class", dev.adapter_class)
    rng = np.random.default_rng(0)
    for title, shape, function, axes, strategy, variants in CASES:
        x = dev.tensor(rng.random(shape, dtype=np.float32))
        out_type = "UINT32" if function.startswith("ARG") else "FLOAT32"
        desc = dml.ops.reduce.infer_output(x.desc, function, axes, out_type)
        op = dev.create_operator(desc)
        default = dev.compile_operator(op)
        line = [f"{title}: default {default.strategy} {gpu_ms(dev, default, x):.4f}"]
        for options in variants:
            try:
                c = dev.compile_operator(op, strategy, options=options)
                line.append(f"{options} {gpu_ms(dev, c, x):.4f}")
            except dml.DMLError as exc:
                line.append(f"{options} error {exc}")
        print(" | ".join(line), flush=True)


if __name__ == "__main__":
    main()
