"""Model cold start: an ONNX model's construction and first run in a fresh process, cold
and warm, beside onnxruntime's.

    python -m gpudml.bench.model_start [--rounds 3] [--adapter vulkan] [--model resnet50] [--json out.json]

Each round starts, in turn, fresh processes that load the same model file
(gpudml/onnx/models.py: `resnet50` by default, ResNet-50's layers at a fraction of its
arithmetic; or any of `models.MODELS`):

- **gpudml, cold**: gpudml's disk cache (rendered WGSL, gpudml/cache.py) and Mesa's shader
  cache (compiled pipelines, `MESA_SHADER_CACHE_DIR`) both empty, fresh folders each
  round: what a first run after installing costs;
- **gpudml, caches warm**: both caches filled by an earlier process: every later process;
- **onnxruntime**: its CPU provider, the same model and feed.

In each gpudml process a second session of the same model then runs on the same device
(pipelines in the process's memory): the **warm first run**, against which the cold
one is compared. Phases: `import` (numpy, gpudml, onnx), `construct` (the
InferenceSession: load, check, analysis), `first run` (recording, planning, rendering and
compiling every kernel, uploads, dispatches, readback) and `second run` (the same feed
again: a run as any later one), and the warm second session's `warm construct` and `warm
first run`. The first run's output is checked against onnxruntime's in the bench's own
process (within gpudml.onnx.session.TOLERANCE of the largest magnitude).

What wgpu-py 0.32 gives for pipelines (read in its source, wgpu/backends/wgpu_native):
`create_compute_pipeline_async` is implemented synchronously
(`_CREATE_PIPELINE_ASYNC_IS_IMPLEMENTED = False`), so pipelines compile one at a time on
the calling thread, and there is no pipeline-cache object (wgpu's `PipelineCache` is not
exposed); a pipeline is reused across processes only by the driver's own disk cache, which
Mesa's lavapipe and llvmpipe have (the `caches warm` rows). gpudml's own disk cache keeps
the rendered WGSL, so a warm process renders no template either.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

import numpy as np
import onnx

from ..onnx import models
from ..onnx.session import TOLERANCE
from .cold_start import run

GPUDML = """
import json, sys, time
T = time.perf_counter
t0 = T()
import numpy as np
import gpudml as dml
import gpudml.onnx as gonnx
t1 = T()
adapter, path = sys.argv[1], sys.argv[2]
feed = {"x": np.load(path + ".x.npy")}
device = dml.Device(adapter=adapter)
t2 = T()
session = gonnx.InferenceSession(path, device=device)
t3 = T()
first = session.run(None, feed)[0]
t4 = T()
session.run(None, feed)
t5 = T()
again = gonnx.InferenceSession(path, device=device)
t6 = T()
second = again.run(None, feed)[0]
t7 = T()
assert np.array_equal(first, second)
np.save(path + ".gpudml.npy", first)
print(json.dumps({"import": t1 - t0, "device": t2 - t1, "construct": t3 - t2, "first run": t4 - t3,
                  "second run": t5 - t4, "warm construct": t6 - t5, "warm first run": t7 - t6,
                  "construct + first run": t4 - t2, "warm construct + first run": t7 - t5,
                  "dispatches": session.dispatch_count}))
"""

ORT = """
import json, sys, time
T = time.perf_counter
t0 = T()
import numpy as np
import onnxruntime
t1 = T()
path = sys.argv[2]  # (argv[1]: the adapter, unused)
feed = {"x": np.load(path + ".x.npy")}
t2 = T()
session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
t3 = T()
first = session.run(None, feed)[0]
t4 = T()
session.run(None, feed)
t5 = T()
np.save(path + ".ort.npy", first)
print(json.dumps({"import": t1 - t0, "construct": t3 - t2, "first run": t4 - t3, "second run": t5 - t4,
                  "construct + first run": t4 - t2}))
"""


def measure(model: str, adapter: str, rounds: int, onnxruntime: bool = True) -> dict:
    """{variant: [samples]} over `rounds` rounds, and the largest difference between
    gpudml's and onnxruntime's output relative to onnxruntime's largest magnitude."""
    build = models.MODELS.get(model) or {"resnet50": models.resnet50}[model]
    proto, feeds = build()
    samples: dict[str, list] = {"gpudml, cold": [], "gpudml, caches warm": []}
    if onnxruntime:
        samples["onnxruntime"] = []
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / f"{model}.onnx")
        onnx.save(proto, path)
        np.save(path + ".x.npy", feeds["x"])
        warm = {"GPUDML_CACHE_DIR": str(Path(folder) / "gpudml-warm"),
                "MESA_SHADER_CACHE_DIR": str(Path(folder) / "mesa-warm")}
        run(GPUDML, adapter, warm, args=(path,), timeout=900)  # fills the warm caches
        for k in range(rounds):
            cold = {"GPUDML_CACHE_DIR": str(Path(folder) / f"gpudml-cold{k}"),
                    "MESA_SHADER_CACHE_DIR": str(Path(folder) / f"mesa-cold{k}")}
            samples["gpudml, cold"].append(run(GPUDML, adapter, cold, args=(path,), timeout=900))
            samples["gpudml, caches warm"].append(run(GPUDML, adapter, warm, args=(path,), timeout=900))
            if onnxruntime:
                samples["onnxruntime"].append(run(ORT, adapter, {}, args=(path,), timeout=900))
        difference = None
        if onnxruntime:
            got, want = np.load(path + ".gpudml.npy"), np.load(path + ".ort.npy")
            difference = float(np.abs(got - want).max() / np.abs(want).max())
            if difference > TOLERANCE:
                raise SystemExit(f"gpudml's output differs from onnxruntime's by {difference:.2e} of its largest "
                                 f"magnitude (tolerance {TOLERANCE})")
    return {"samples": samples, "difference": difference}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--adapter", default="vulkan", choices=["vulkan", "gl"])
    parser.add_argument("--model", default="resnet50")
    parser.add_argument("--no-onnxruntime", action="store_true", help="gpudml only")
    parser.add_argument("--json", default=None, help="write the samples and medians here")
    args = parser.parse_args(argv)
    result = measure(args.model, args.adapter, args.rounds, not args.no_onnxruntime)
    medians = {name: {k: statistics.median(s[k] for s in rows) for k in rows[0]}
               for name, rows in result["samples"].items()}
    print(f"model cold start: {args.model} on {args.adapter}, medians of {args.rounds} rounds (ms; one process a "
          f"row and round):")
    for name, phases in medians.items():
        parts = ", ".join(f"{k} {v * 1e3:.0f}" if k != "dispatches" else f"{v:.0f} dispatches"
                          for k, v in phases.items())
        print(f"  {name:20s} {parts}")
    warm_first = medians["gpudml, cold"]["warm construct + first run"]
    for name in ("gpudml, cold", "gpudml, caches warm"):
        ratio = medians[name]["construct + first run"] / warm_first
        print(f"  {name}: construct + first run {ratio:.2f}x the warm first run (a second session in the process)")
    if "onnxruntime" in medians:
        ort = medians["onnxruntime"]["construct + first run"]
        for name in ("gpudml, cold", "gpudml, caches warm"):
            print(f"  {name}: construct + first run {medians[name]['construct + first run'] / ort:.2f}x "
                  f"onnxruntime's")
        print(f"  output: within {result['difference']:.1e} of onnxruntime's largest magnitude")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"model": args.model, "adapter": args.adapter, "rounds": args.rounds, "medians": medians,
                       **result}, f, indent=1)


if __name__ == "__main__":
    main()
