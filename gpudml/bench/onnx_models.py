"""ONNX networks through gpudml.onnx beside onnxruntime's CPU provider:
`python -m gpudml.bench.onnx_models [--adapter vulkan] [--reps 20]`.

For each network of gpudml/onnx/models.py (an MLP, the transformer encoder block and the
block without its LayerNormalizations, a small CNN, a ResNet-18-shaped network): the wall
time per `run` (numpy in, numpy out: upload, the recorded dispatches, readback; median of
--reps after one warm-up), the dispatches per run after fusion and without (fuse=False),
and onnxruntime's CPU provider on the same model and feeds where it is installed, with the
largest difference of the outputs."""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from ..device import Device
from ..onnx import InferenceSession, models


def _median_ms(fn, reps: int) -> float:
    fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def measure(device, reps: int = 20) -> list[dict]:
    try:
        import onnxruntime
    except ImportError:
        onnxruntime = None
    rows = []
    for name, build in models.MODELS.items():
        model, feeds = build()
        session = InferenceSession(model, device=device)
        unfused = InferenceSession(model, device=device, fuse=False)
        unfused.run(None, feeds)
        row = {"model": name, "gpudml_ms": _median_ms(lambda s=session, f=feeds: s.run(None, f), reps),
               "dispatches": session.dispatch_count, "unfused_dispatches": unfused.dispatch_count,
               "unfused_ms": _median_ms(lambda s=unfused, f=feeds: s.run(None, f), reps)}
        if onnxruntime is not None:
            ort = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
            row["ort_ms"] = _median_ms(lambda s=ort, f=feeds: s.run(None, f), reps)
            got, want = session.run(None, feeds)[0], ort.run(None, feeds)[0]
            row["max_diff"] = float(np.max(np.abs(got - want)))
        rows.append(row)
    return rows


def table(rows: list[dict], adapter: str) -> str:
    lines = [f"ONNX networks on {adapter} (wall ms per run, numpy in and out; medians)", "",
             "| model | gpudml ms | dispatches | unfused ms | unfused dispatches | onnxruntime CPU ms | max diff |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        ort = f"{r['ort_ms']:.3f}" if "ort_ms" in r else "not installed"
        diff = f"{r['max_diff']:.2g}" if "max_diff" in r else ""
        lines.append(f"| {r['model']} | {r['gpudml_ms']:.3f} | {r['dispatches']} | {r['unfused_ms']:.3f} | "
                     f"{r['unfused_dispatches']} | {ort} | {diff} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpudml.bench.onnx_models", description=__doc__.split("\n")[0])
    parser.add_argument("--adapter", default=None)
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args(argv)
    device = Device(adapter=args.adapter)
    print(table(measure(device, args.reps), device.adapter_name))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
