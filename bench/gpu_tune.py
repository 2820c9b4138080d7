"""Plan options of the GPU-class strategies (Reduce, data movement, scans) timed side by side on one
adapter (the shader lab, gpudml/lab.py: GPU timestamps, medians, each variant checked
against the reference): the experiment behind the constants in gpudml/ops/reduction.py
and gpudml/ops/movement.py.

    python3 bench/gpu_tune.py            # on the adapter gpudml picks (GPUDML_ADAPTER)
    python3 bench/gpu_tune.py --reps 30
"""
from __future__ import annotations

import argparse

import gpudml as dml
from gpudml import lab

F32 = dml.DataType.FLOAT32
SUBGROUPS = [{}, {"subgroups": False}]
CHUNK_FORMS = [{}, {"chunk": "segments"}]


def _reduce(shape, function, axes):
    out_type = "UINT32" if function.startswith("ARG") else None
    return dml.ops.reduce.infer_output(dml.TensorDesc(F32, shape), function, axes, out_type)


IMAGE = dml.TensorDesc(F32, [1, 3, 1024, 1024])
SCAN_COLUMNS = dml.ops.cumulative_summation.SPEC.infer_output(dml.TensorDesc(F32, [4096, 4096]), 0)
CASES = [  # (title, desc, strategy, option sets: the operator's own plan first)
    ("W1 sum rows", _reduce([4096, 4096], "SUM", [1]), "workgroup",
     [{}] + [{"lanes": n, **s} for n in (32, 64, 128, 256) for s in SUBGROUPS]
     + [{"unroll": n} for n in (1, 2, 8)]),
    ("W3 argmax rows", _reduce([4096, 4096], "ARGMAX", [1]), "workgroup",
     [{}] + [{"lanes": n, **s} for n in (64, 128, 256) for s in SUBGROUPS] + [{"unroll": n} for n in (1, 2, 8)]),
    ("W2 sum columns", _reduce([4096, 4096], "SUM", [0]), "columns",
     [{}] + [{"chunks": n} for n in (16, 32, 64, 128, 256, 512)]
     + [{"chunks": n, "unroll": u} for n in (64, 256) for u in (1, 8)]),
    ("whole 16M", _reduce([1 << 24], "SUM", [0]), "workgroup",
     [{}] + [{"chunks": n, **s} for n in (256, 1024, 4096) for s in SUBGROUPS] + [{"unroll": 1}]),
    ("short rows", _reduce([262144, 64], "MAX", [1]), "workgroup",
     [{}] + [{"lanes": n, **s} for n in (2, 4, 8, 16) for s in SUBGROUPS]),
    # Data movement: coalesced's chunks element by element (default) or through the segment walk.
    ("W4 pad reflection", dml.ops.padding.infer_output(IMAGE, [0, 0, 16, 16], [0, 0, 16, 16], "reflection"),
     "coalesced", CHUNK_FORMS),
    ("W5 pad constant", dml.ops.padding.infer_output(IMAGE, [0, 0, 16, 16], [0, 0, 16, 16]), "coalesced",
     CHUNK_FORMS),
    ("W6 slice", dml.ops.slice1.infer_output(dml.TensorDesc(F32, [1, 3, 2048, 2048]), [0] * 4, [1, 3, 2048, 2048],
                                             [1, 1, -2, 2]), "coalesced", CHUNK_FORMS),
    ("W7 reverse", dml.ops.reverse_subsequences.infer_output(
        dml.TensorDesc(F32, [64, 4096, 64]), dml.TensorDesc(dml.DataType.UINT32, [64, 1, 64]), 1),
     "coalesced", CHUNK_FORMS),
    # Scans along the first axis: 0.71 ms on the H100 against 0.10 ms along the last (lab.log,
    # 2026-11-23). The segments per line (option chunks) decide the passes and the walk; the
    # lines side by side (option lines, 32: 128 contiguous bytes per row) how much of a
    # row one tile reads. And `runs` (5.19 ms there: 1,024 invocations, each a whole column
    # of 4 lines) cut into GPU-sized chunks: neighbouring invocations on neighbouring 16-byte
    # pieces of a row, as Reduce's `columns`.
    ("scan columns", SCAN_COLUMNS, "tiles",
     [{}] + [{"chunks": n} for n in (2, 4, 16, 32, 64)]
     + [{"lines": g, **c} for g in (64, 128, 256) for c in ({}, {"chunks": 64})]),
    ("scan columns, runs", SCAN_COLUMNS, "runs", [{"chunks": n} for n in (16, 64, 256)]),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=20, help="timed repetitions per variant (default 20)")
    args = parser.parse_args()
    dev = dml.Device()
    print(dev.adapter_name, "class", dev.adapter_class)
    for title, desc, strategy, options in CASES:
        rows = lab.run(dev, desc, strategies=[strategy], options=options, reps=args.reps)
        print(lab.table(rows, title))
        print(fastest(rows), flush=True)


def fastest(rows) -> str:
    """The line naming the fastest correct variant against the first one (the operator's
    own plan, where the case lists it first)."""
    timed = [r for r in rows if r.correct and r.gpu_ms]
    if not timed:
        return "  fastest: none correct"
    best, first = min(timed, key=lambda r: r.gpu_ms), rows[0]
    against = f", {first.gpu_ms / best.gpu_ms:.2f}x as fast as {lab.variant_name(first)}" if first in timed else ""
    return f"  fastest: {lab.variant_name(best)} {best.gpu_ms:.4f} ms{against}"


if __name__ == "__main__":
    main()
