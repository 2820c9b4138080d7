"""Plan options of the GPU-class strategies (Reduce, data movement, scans) timed side by side on one
adapter (the shader lab, gpudml/lab.py: GPU timestamps, medians, each variant checked
against the reference): the experiment behind the constants in gpudml/ops/reduction.py
and gpudml/ops/movement.py.

    python -m gpudml.bench.gpu_tune            # on the adapter gpudml picks (GPUDML_ADAPTER)
    python -m gpudml.bench.gpu_tune --reps 30

It ends with the kernel time of W1, W4 and W7 (the bench's own cases) taken three ways,
interleaved (`timing_methods`): the H100's bench.md gave W7 0.328 ms where the lab gave
0.138 ms for the same description and kernel (and W1 0.030 against 0.037), and lavapipe
shows no such gap (W7 under the GPU class: 462-468 ms every way), so the way of timing is
the suspect. Then W7's kernel with three layouts of the same lengths tensor (`w7_lengths`): each
column its own length (W7: neighbouring elements read different rows, a 32-byte sector
fetched for each 4-byte float), one length per batch, and every length 4096.
"""
from __future__ import annotations

import argparse
import statistics

import numpy as np

import gpudml as dml
from gpudml import lab
from gpudml.bench.anchors import Yardsticks
from gpudml.bench.timer import GpuTimer
from gpudml.bench.workloads import WORKLOADS

F32 = dml.DataType.FLOAT32
SUBGROUPS = [{}, {"subgroups": False}]
BLOCK_FORMS = [{}, {"block": "stretches"}]


def _reduce(shape, function, axes):
    out_type = "UINT32" if function.startswith("ARG") else None
    return dml.ops.reduce.infer_output(dml.TensorDesc(F32, shape), function, axes, out_type)


IMAGE = dml.TensorDesc(F32, [1, 3, 1024, 1024])
SCAN_COLUMNS = dml.ops.spec_named("cumulative_summation").infer_output(dml.TensorDesc(F32, [4096, 4096]), 0)
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
    # Data movement: coalesced's blocks element by element (default) or through the segment walk.
    ("W4 pad reflection", dml.ops.padding.infer_output(IMAGE, [0, 0, 16, 16], [0, 0, 16, 16], "reflection"),
     "coalesced", BLOCK_FORMS),
    ("W5 pad constant", dml.ops.padding.infer_output(IMAGE, [0, 0, 16, 16], [0, 0, 16, 16]), "coalesced",
     BLOCK_FORMS),
    ("W6 slice", dml.ops.slice1.infer_output(dml.TensorDesc(F32, [1, 3, 2048, 2048]), [0] * 4, [1, 3, 2048, 2048],
                                             [1, 1, -2, 2]), "coalesced", BLOCK_FORMS),
    ("W7 reverse", dml.ops.reverse_subsequences.infer_output(
        dml.TensorDesc(F32, [64, 4096, 64]), dml.TensorDesc(dml.DataType.UINT32, [64, 1, 64]), 1),
     "coalesced", BLOCK_FORMS),
    # Scans along the first axis: 0.71 ms on the H100 against 0.10 ms along the last (lab.log,
    # 2026-11-23). The chunks per line (option chunks) decide the passes and the walk; the
    # lines side by side (option lines, 32: 128 contiguous bytes per row) how much of a
    # row one tile reads. And `runs` (5.19 ms there: 1,024 invocations, each a whole column
    # of 4 lines) cut into GPU-sized chunks: neighbouring invocations on neighbouring 16-byte
    # blocks of a row, as Reduce's `columns`.
    ("scan columns", SCAN_COLUMNS, "tiles",
     [{}] + [{"chunks": n} for n in (2, 4, 16, 32, 64)]
     + [{"lines": g, **c} for g in (64, 128, 256) for c in ({}, {"chunks": 64})]),
    ("scan columns, runs", SCAN_COLUMNS, "runs", [{"chunks": n} for n in (16, 64, 256)]),
]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=20, help="timed repetitions per variant (default 20)")
    args = parser.parse_args(argv)
    dev = dml.Device()
    print(dev.adapter_name, "class", dev.adapter_class)
    for title, desc, strategy, options in CASES:
        rows = lab.run(dev, desc, strategies=[strategy], options=options, reps=args.reps)
        print(lab.table(rows, title))
        print(fastest(rows), flush=True)
    if dev.caps.has("timestamp-query"):
        print(timing_methods(dev, args.reps))
        print(w7_lengths(dev, args.reps))


def timing_methods(dev, reps: int, ids=("W1", "W4", "W7")) -> str:
    """The GPU time of one call of each workload (the bench's case, through the functional
    API), medians of `reps` rounds, the three ways interleaved in each round:
      back-to-back  the bench's "kernel ms": five calls queued without waiting, one
                    timestamped pass each (the calls' outputs come from the buffer pool)
      synced        one call, then wait for it (the lab's and the bench's peers' way)
      after copy    a 64 MiB copy kernel, then one synced call (the lab pairs each sample
                    with that copy, which leaves the workload's input out of the L2 cache)"""
    yard = Yardsticks(dev, 256, 16)
    lines = ["Kernel ms of the bench's cases, timed three ways (gpu_tune.timing_methods):",
             f"  {'case':<5} {'back-to-back':>13} {'synced':>9} {'after copy':>11}"]
    try:
        for w in (w for w in WORKLOADS if w.id in ids):
            case = w.setup(dev, np.random.default_rng(int(w.id[1:])), False)
            case.device_fn()
            dev.synchronize()
            samples = {"back-to-back": [], "synced": [], "after copy": []}
            for _ in range(reps):
                with GpuTimer(dev) as timer:
                    for _ in range(5):
                        case.device_fn()
                    dev.synchronize()
                samples["back-to-back"].append(statistics.median(timer.milliseconds()))
                samples["synced"].append(_synced_ms(dev, case.device_fn))
                yard.copy_ms()
                samples["after copy"].append(_synced_ms(dev, case.device_fn))
            ms = [statistics.median(v) for v in samples.values()]
            lines.append(f"  {w.id:<5} {ms[0]:>13.4f} {ms[1]:>9.4f} {ms[2]:>11.4f}")
    finally:
        yard.close()
    return "\n".join(lines)


def w7_lengths(dev, reps: int, shape=(64, 4096, 64)) -> str:
    """W7 (ReverseSubsequences along axis 1, float32) with its lengths laid out three ways in
    the same [b, 1, c] UINT32 tensor, so the kernel is the same and only the rows read
    differ: `per column` (W7's, uniform over 0..n), `per batch` (one length for all the
    columns of a batch: neighbouring floats come from one row), `all n` (each batch
    reversed whole). Synced calls, medians of `reps` rounds, interleaved; GB/s of the
    elements read and written."""
    b, n, cols = shape
    rng = np.random.default_rng(7)
    x = dev.tensor(rng.random(shape, dtype=np.float32))
    layouts = {"per column": rng.integers(0, n + 1, size=(b, 1, cols)),
               "per batch": np.repeat(rng.integers(0, n + 1, size=(b, 1, 1)), cols, axis=2),
               f"all {n}": np.full((b, 1, cols), n)}
    lengths = {name: dev.tensor(v.astype(np.uint32)) for name, v in layouts.items()}
    samples = {name: [] for name in layouts}
    for _ in range(reps):
        for name, lt in lengths.items():
            samples[name].append(_synced_ms(dev, lambda lt=lt: dml.reverse_subsequences(x, lt, 1)))
    lines = [f"W7's kernel by layout of its lengths, {list(shape)} float32 (gpu_tune.w7_lengths):"]
    for name, v in samples.items():
        ms = statistics.median(v)
        lines.append(f"  {name:<12} {ms:>9.4f} ms {2 * 4 * b * n * cols / ms / 1e6:>9.1f} GB/s")
    return "\n".join(lines)


def _synced_ms(dev, fn) -> float:
    """GPU ms of one call of `fn`, waited for (timestamps of its passes, summed)."""
    with dev.profile() as prof:
        fn()
        dev.synchronize()
    return prof.gpu_ms


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
