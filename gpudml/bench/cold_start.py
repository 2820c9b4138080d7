"""Cold start: how long a fresh process takes from `import gpudml` to its first small result,
against bare wgpu-py doing the least it can for the same result (one adapter request, one
device, one dispatch with readback).

    python -m gpudml.bench.cold_start [--rounds 15] [--adapter vulkan] [--json out.json]

Each round starts, in turn, a gpudml process with the disk cache warm (the usual case: the
kernels it needs were rendered by an earlier process), one with the cache off
(GPUDML_CACHE_DIR=off: every template rendered, Jinja2 imported), and a bare wgpu-py
process; medians per phase over the rounds. Mesa's own shader cache is warm for all three
after the first round (it caches the compiled pipelines).

Phases of the gpudml process: import (numpy, `import gpudml` and the load of its public names
at their first use; `numpy` and `import gpudml` its first parts), Device(),
the first operator (a 4x4 float32 SUM, numpy in and out: WGSL, pipeline, upload, dispatch,
readback) and a second, new operator (a slice). Bare wgpu-py: import (numpy and wgpu;
`numpy`), request_adapter_sync, request_device_sync, and the dispatch with readback
(shader, pipeline, buffers, bind group, submit, queue.read_buffer). The last lines compare
the imports beyond numpy's (gpudml's with the cache warm against wgpu's). The gpudml
processes import the gpudml that runs the bench (a checkout's, run from it).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

GPUDML = """
import json, sys, time
T = time.perf_counter
t0 = T()
import numpy as np
tn = T()
import gpudml as dml
ti = T()
dml.Device  # the first public name used loads the rest (gpudml/__init__.py)
t1 = T()
dev = dml.Device(adapter=sys.argv[1])
t2 = T()
x = np.arange(16, dtype=np.float32).reshape(4, 4)
first = dml.reduce(x, "sum", [1], device=dev)
t3 = T()
second = dml.slice(x, [0, 0], [4, 4], [1, -1], device=dev)
t4 = T()
assert first.ravel().tolist() == [6, 22, 38, 54] and second[0].tolist() == [3, 2, 1, 0]
print(json.dumps({"import": t1 - t0, "numpy": tn - t0, "import gpudml": ti - tn, "device": t2 - t1,
                  "first op": t3 - t2, "second op": t4 - t3,
                  "to first result": t3 - t0, "jinja2 imported": "jinja2" in sys.modules}))
"""

BARE = """
import json, sys, time
T = time.perf_counter
t0 = T()
import numpy as np
tn = T()
import wgpu
t1 = T()
backend = {"vulkan": "Vulkan", "gl": "OpenGL"}[sys.argv[1]]
adapter = [a for a in wgpu.gpu.enumerate_adapters_sync() if a.info["backend_type"] == backend][0] \\
    if backend != "Vulkan" else wgpu.gpu.request_adapter_sync(power_preference="high-performance")
t2 = T()
device = adapter.request_device_sync()
t3 = T()
src = '''
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read_write> b: array<f32>;
@compute @workgroup_size(4) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    var s = 0.0;
    for (var j = 0u; j < 4u; j++) { s += a[g.x * 4u + j]; }
    b[g.x] = s;
}
'''
x = np.arange(16, dtype=np.float32)
a = device.create_buffer_with_data(data=x, usage=wgpu.BufferUsage.STORAGE)
b = device.create_buffer(size=16, usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)
pipe = device.create_compute_pipeline(layout="auto", compute={"module": device.create_shader_module(code=src),
                                                              "entry_point": "main"})
bg = device.create_bind_group(layout=pipe.get_bind_group_layout(0), entries=[
    {"binding": 0, "resource": {"buffer": a}}, {"binding": 1, "resource": {"buffer": b}}])
enc = device.create_command_encoder()
p = enc.begin_compute_pass()
p.set_pipeline(pipe)
p.set_bind_group(0, bg)
p.dispatch_workgroups(1)
p.end()
device.queue.submit([enc.finish()])
out = np.frombuffer(device.queue.read_buffer(b), np.float32)
t4 = T()
assert out.tolist() == [6, 22, 38, 54]
print(json.dumps({"import": t1 - t0, "numpy": tn - t0, "adapter": t2 - t1, "device": t3 - t2, "dispatch": t4 - t3,
                  "to first result": t4 - t0}))
"""


#: The folder holding the gpudml package that runs the bench: the probes import this one (a
#: checkout's, not whichever gpudml the interpreter has installed).
HOME = str(Path(__file__).resolve().parents[2])


def run(code: str, adapter: str, env: dict, *, args: tuple[str, ...] = (), timeout: int = 300) -> dict:
    """The JSON line a fresh Python process running `code` prints last (its argv: `adapter`,
    then `args`), gpudml imported from HOME, `env` over the environment."""
    path = os.pathsep.join(p for p in (HOME, os.environ.get("PYTHONPATH")) if p)
    res = subprocess.run([sys.executable, "-c", code, adapter, *args], capture_output=True, text=True, timeout=timeout,
                         cwd=tempfile.gettempdir(),
                         env={**os.environ, "PYTHONPATH": path, **env})
    if res.returncode:
        raise SystemExit(f"probe failed:\n{res.stderr}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--adapter", default="vulkan", choices=["vulkan", "gl"])
    parser.add_argument("--json", default=None, help="write the samples and medians here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as cache:
        variants = {
            "gpudml (cache warm)": (GPUDML, {"GPUDML_CACHE_DIR": cache}),
            "gpudml (cache off)": (GPUDML, {"GPUDML_CACHE_DIR": "off"}),
            "bare wgpu-py": (BARE, {}),
        }
        run(GPUDML, args.adapter, {"GPUDML_CACHE_DIR": cache})  # fills the cache (and Mesa's)
        samples = {name: [] for name in variants}
        for _ in range(args.rounds):
            for name, (code, env) in variants.items():
                samples[name].append(run(code, args.adapter, env))
    medians = {name: {k: statistics.median(s[k] for s in rows) for k in rows[0] if k != "jinja2 imported"}
               for name, rows in samples.items()}
    bare = medians["bare wgpu-py"]["to first result"]
    print(f"cold start on {args.adapter}, medians of {args.rounds} rounds (ms):")
    for name, phases in medians.items():
        parts = ", ".join(f"{k} {v * 1e3:.0f}" for k, v in phases.items())
        ratio = phases["to first result"] / bare
        print(f"  {name:20s} {parts}  ({ratio:.2f}x bare wgpu-py)")
    own = {name: statistics.median(s["import"] - s["numpy"] for s in rows) for name, rows in samples.items()}
    print("  import beyond numpy's: " + ", ".join(f"{name} {v * 1e3:.0f}" for name, v in own.items())
          + f" ms (gpudml {own['gpudml (cache warm)'] / own['bare wgpu-py']:.2f}x wgpu's)")
    alone = statistics.median(s["import gpudml"] for s in samples["gpudml (cache warm)"])
    print(f"  import gpudml alone (its names not used yet): {alone * 1e3:.1f} ms"
          f" ({alone / own['bare wgpu-py']:.2f}x wgpu's import beyond numpy's)")
    jinja = {name: any(s.get("jinja2 imported") for s in rows) for name, rows in samples.items() if "gpudml" in name}
    print(f"  Jinja2 imported: {jinja}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"adapter": args.adapter, "rounds": args.rounds, "medians": medians, "samples": samples}, f,
                      indent=1)


if __name__ == "__main__":
    main()
