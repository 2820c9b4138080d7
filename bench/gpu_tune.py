"""Plan options of the GPU-class Reduce strategies timed side by side on one adapter (the
shader lab, gpudml/lab.py: GPU timestamps, medians, each variant checked against the
reference): the experiment behind the constants in gpudml/ops/reduction.py.

    python3 bench/gpu_tune.py            # on the adapter gpudml picks (GPUDML_ADAPTER)
    python3 bench/gpu_tune.py --reps 30
"""
from __future__ import annotations

import argparse

import gpudml as dml
from gpudml import lab

SUBGROUPS = [{}, {"subgroups": False}]
CASES = [  # (title, shape, function, axes, strategy, option sets: the operator's own plan first)
    ("W1 sum rows", [4096, 4096], "SUM", [1], "workgroup",
     [{}] + [{"lanes": n, **s} for n in (32, 64, 128, 256) for s in SUBGROUPS]
     + [{"unroll": n} for n in (1, 2, 8)]),
    ("W3 argmax rows", [4096, 4096], "ARGMAX", [1], "workgroup",
     [{}] + [{"lanes": n, **s} for n in (64, 128, 256) for s in SUBGROUPS] + [{"unroll": n} for n in (1, 2, 8)]),
    ("W2 sum columns", [4096, 4096], "SUM", [0], "columns",
     [{}] + [{"chunks": n} for n in (16, 32, 64, 128, 256, 512)]
     + [{"chunks": n, "unroll": u} for n in (64, 256) for u in (1, 8)]),
    ("whole 16M", [1 << 24], "SUM", [0], "workgroup",
     [{}] + [{"chunks": n, **s} for n in (256, 1024, 4096) for s in SUBGROUPS] + [{"unroll": 1}]),
    ("short rows", [262144, 64], "MAX", [1], "workgroup",
     [{}] + [{"lanes": n, **s} for n in (2, 4, 8, 16) for s in SUBGROUPS]),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=20, help="timed repetitions per variant (default 20)")
    args = parser.parse_args()
    dev = dml.Device()
    print(dev.adapter_name, "class", dev.adapter_class)
    for title, shape, function, axes, strategy, options in CASES:
        out_type = "UINT32" if function.startswith("ARG") else None
        desc = dml.ops.reduce.infer_output(dml.TensorDesc(dml.DataType.FLOAT32, shape), function, axes, out_type)
        rows = lab.run(dev, desc, strategies=[strategy], options=options, reps=args.reps)
        print(lab.table(rows, f"{title}: {function} over axes {axes} of {shape}"), flush=True)


if __name__ == "__main__":
    main()
