"""Per kernel cold start: each distinct pipeline a model's first run makes, compiled and
dispatched once in a fresh process with every cache off (issue #41, item 7).

    python -m gpudml.bench.kernel_start [--adapter vulkan] [--model resnet50] [--json out.json]

A recording process runs the model once without dispatching anything (gpudml/onnx/models.py,
as model_start does: its pipelines created, its commands not recorded) and keeps, per
distinct pipeline, its WGSL, its bindings (each storage range's size, each uniform buffer's
bytes) and the grid of its first dispatch. Then one fresh process per pipeline, with
Mesa's shader cache off (MESA_SHADER_CACHE_DISABLE) and gpudml's off (GPUDML_CACHE_DIR=off),
creates that pipeline (`create`: wgpu's create_compute_pipeline, naga's WGSL front end and
Mesa's NIR) and dispatches it once on zero-filled buffers of the recorded sizes with the
recorded uniforms, submit to completion (`first dispatch`: on lavapipe and llvmpipe the
pipeline's LLVM compile happens here, at its first launch, then the dispatch itself), then
once more (`second dispatch`: the dispatch alone, one sample: noisy). The list is
sorted worst first; `lines` is the WGSL's line count.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np
import onnx

from ..onnx import models
from .cold_start import run

RECORD = """
import json, sys
import numpy as np
import gpudml as dml
import gpudml.onnx as gonnx
from gpudml.runtime import context, batching
adapter, path, out = sys.argv[1], sys.argv[2], sys.argv[3]
sources, uniforms, groups, kernels = {}, {}, {}, {}
pipeline, uniform_buffer, bind_group, record = (context.GpuContext.pipeline, context.GpuContext.uniform_buffer,
                                                context.GpuContext.bind_group, batching.Recorder.record)
def pipeline_(self, source):
    entry = pipeline(self, source)
    sources[id(entry.pipeline)] = source
    return entry
def uniform_buffer_(self, data):
    buffer = uniform_buffer(self, data)
    uniforms[id(buffer)] = bytes(data).hex()
    return buffer
def bind_group_(self, p, resources):
    group = bind_group(self, p, resources)
    groups[id(group)] = [[k, "storage", r["size"]] if isinstance(r, dict) else [k, "uniform", uniforms[id(r)]]
                         for k, r in resources.items()]
    return group
def record_(self, dispatches, clears=(), work=None):
    for p, g, grid in dispatches:
        source = sources.get(id(p))
        if source is not None and source not in kernels:
            kernels[source] = {"source": source, "bindings": groups[id(g)], "grid": list(grid),
                               "operator": work.operator if work is not None else ""}
    # (nothing dispatched: the kernels' compiles are the probes'; the outputs are not read)
context.GpuContext.pipeline, context.GpuContext.uniform_buffer = pipeline_, uniform_buffer_
context.GpuContext.bind_group, batching.Recorder.record = bind_group_, record_
device = dml.Device(adapter=adapter)
session = gonnx.InferenceSession(path, device=device)
session.run(None, {"x": np.load(path + ".x.npy")})
json.dump(list(kernels.values()), open(out, "w"))
print(json.dumps({"kernels": len(kernels)}))
"""

PROBE = """
import json, sys, time
T = time.perf_counter
import gpudml as dml
import wgpu
adapter, path, index = sys.argv[1], sys.argv[2], int(sys.argv[3])
kernel = json.load(open(path))[index]
device = dml.Device(adapter=adapter)
ctx = device._ctx
dev = ctx.device
t0 = T()
entry = ctx.create_pipeline(kernel["source"], "main", RuntimeError)
t1 = T()
entries = []
for k, kind, value in kernel["bindings"]:
    if kind == "uniform":
        buffer = dev.create_buffer_with_data(data=bytes.fromhex(value), usage=wgpu.BufferUsage.UNIFORM)
    else:
        buffer = dev.create_buffer(size=max(4, value), usage=wgpu.BufferUsage.STORAGE)
    entries.append({"binding": k, "resource": {"buffer": buffer}})
group = dev.create_bind_group(layout=entry.layout, entries=entries)
done = dev.create_buffer(size=4, usage=wgpu.BufferUsage.COPY_SRC)
def dispatch():
    encoder = dev.create_command_encoder()
    p = encoder.begin_compute_pass()
    p.set_pipeline(entry.pipeline)
    p.set_bind_group(0, group)
    p.dispatch_workgroups(*(kernel["grid"] + [1, 1])[:3])
    p.end()
    dev.queue.submit([encoder.finish()])
    dev.queue.read_buffer(done)  # (to completion)
t2 = T()
dispatch()
t3 = T()
dispatch()
t4 = T()
print(json.dumps({"create": t1 - t0, "first dispatch": t3 - t2, "second dispatch": t4 - t3}))
"""

#: A probe's environment: every cache off.
COLD = {"MESA_SHADER_CACHE_DISABLE": "true", "GPUDML_CACHE_DIR": "off"}


def record(model: str, adapter: str, folder: str) -> tuple[str, list[dict]]:
    """(the recorded kernels' file, the kernels) of `model`'s first run."""
    build = models.MODELS.get(model) or {"resnet50": models.resnet50}[model]
    proto, feeds = build()
    path = str(Path(folder) / f"{model}.onnx")
    onnx.save(proto, path)
    np.save(path + ".x.npy", feeds["x"])
    out = str(Path(folder) / "kernels.json")
    run(RECORD, adapter, {}, args=(path, out), timeout=1800)
    return out, json.loads(Path(out).read_text())


def probe(path: str, index: int, adapter: str) -> dict:
    """One kernel's cold create and first dispatch, in a fresh process with every cache off."""
    return run(PROBE, adapter, COLD, args=(path, str(index)), timeout=900)


def measure(model: str, adapter: str, only=None, echo: bool = False) -> list[dict]:
    """The rows of `model`'s kernels (`only`: those indices), worst first."""
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        path, kernels = record(model, adapter, folder)
        for i in (range(len(kernels)) if only is None else only):
            row = {"index": i, "operator": kernels[i]["operator"], "lines": kernels[i]["source"].count("\n"),
                   "grid": kernels[i]["grid"], **probe(path, i, adapter)}
            rows.append(row)
            if echo:
                print(f"  kernel {i:2d} {row['operator']:28s} {row['lines']:5d} lines, create {row['create']:6.2f} s, "
                      f"first dispatch {row['first dispatch']:7.2f} s, second {row['second dispatch'] * 1e3:7.1f} ms",
                      flush=True)
    return sorted(rows, key=lambda r: -(r["create"] + r["first dispatch"]))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--adapter", default="vulkan", choices=["vulkan", "gl"])
    parser.add_argument("--model", default="resnet50")
    parser.add_argument("--only", default=None, help="comma-separated kernel indices (default: all)")
    parser.add_argument("--json", default=None, help="write the rows here")
    args = parser.parse_args(argv)
    only = None if args.only is None else [int(i) for i in args.only.split(",")]
    rows = measure(args.model, args.adapter, only, echo=True)
    total = sum(r["create"] + r["first dispatch"] for r in rows)
    print(f"per kernel cold start: {args.model} on {args.adapter}, {len(rows)} kernels, worst first (s):")
    for r in rows:
        print(f"  {r['index']:2d} {r['operator']:28s} {r['lines']:5d} lines  create {r['create']:6.2f}  first dispatch "
              f"{r['first dispatch']:7.2f}  (the dispatch alone {r['second dispatch'] * 1e3:.1f} ms)")
    print(f"  all: {total:.1f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({"model": args.model, "adapter": args.adapter, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
