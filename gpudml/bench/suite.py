"""`gpudml bench`: the benchmark suite, measured side by side in one run.

For each workload (workloads.py): device-resident time (GPU timestamps where the adapter
has them, and submit-and-wait wall time), numpy in/out wall time, numpy's own time for the
same result and onnxruntime CPU where it has the op; every result is checked against
gpudml.reference first. Anchors measured in the same run (anchors.py): an empty dispatch
round trip (the per-op floor), the best vec4 copy kernel (the bandwidth ceiling for data
movement), copy_buffer_to_buffer, and upload/download of 64 MiB. The ratios divide by one
baseline per run (run_baselines: the copy kernel and the empty dispatch timed between the
workloads), the copy on the GPU's clock where the adapter has timestamps; report.COLUMNS
says what each column is.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict

from ..device import Device
from . import workloads as wl
from .anchors import Yardsticks
from .report import EXTRA_HINT, EXTRA_INSTALL, Progress, copy_baseline, extra_installed, render_markdown, write_chart


def run_baselines(rows, yard: Yardsticks) -> dict:
    """The run's one copy baseline and one empty-dispatch baseline: the medians of the
    samples timed between the workloads (workloads.run_workload), so that every row is
    divided by the same figure and the ratios rank as the times do. The copy's clock is
    "gpu" (timestamps) where the adapter has them, else "wall"."""
    copy_ms, copy_gbps = copy_baseline([ms for r in rows for ms in r.extra.get("copy_samples_ms", ())],
                                       yard.copy_gbps_bytes)
    empties = [ms for r in rows for ms in r.extra.get("empty_samples_ms", ())]
    out: dict = {}
    if copy_ms is not None:
        out.update(copy_kernel_run_ms=copy_ms, copy_kernel_run_gbps=copy_gbps,
                   copy_kernel_run_clock=next(r.extra["copy_clock"] for r in rows if "copy_clock" in r.extra))
    if empties:
        out["empty_dispatch_run_ms"] = float(statistics.median(empties))
    return out


def run_suite(device: Device, *, quick: bool = False, only: list[str] | None = None,
              json_path: str | None = None, md_path: str | None = None, png_path: str | None = None) -> str:
    reps = 3 if quick else 9
    workloads = [w for w in wl.WORKLOADS if not only or w.id in only]
    progress = Progress(len(workloads) + 1)
    anchors = wl.measure_anchors(device, reps=reps, quick=quick)
    progress.step("anchors")
    best = anchors["copy_kernel_best"]  # e.g. "wg256_k16"
    wg, k = (int(v) for v in best[2:].split("_k"))
    yard = Yardsticks(device, wg, k)
    stats = device.pipeline_cache_stats
    misses0, seconds0 = stats.misses, stats.compile_seconds
    rows = []
    for w in workloads:
        rows.append(wl.run_workload(device, w, reps=reps, quick=quick, yard=yard))
        progress.step(w.id)
    yard.close()
    anchors.update(run_baselines(rows, yard))
    compiled = stats.misses - misses0
    anchors["pipelines_compiled_by_workloads"] = compiled
    anchors["pipeline_compile_ms_mean"] = (stats.compile_seconds - seconds0) * 1e3 / compiled if compiled else 0.0
    extra = extra_installed()
    text = render_markdown(rows, anchors, device.adapter_name, extra)
    if not extra:
        text += f"\n\n{EXTRA_HINT}"
    if md_path:
        with open(md_path, "w") as f:
            f.write(text + "\n")
    if json_path:
        with open(json_path, "w") as f:
            json.dump({"adapter": device.adapter_name, "anchors": anchors, "rows": [asdict(r) for r in rows]},
                      f, indent=2)
    if png_path and not write_chart(rows, png_path):
        text += f"\n\n(matplotlib is not installed: no chart; the bench extra adds it: {EXTRA_INSTALL})"
    return text
