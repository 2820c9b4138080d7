"""What `gpudml bench` measures and writes: a workload's Case (what it times) and Row (what
was measured), the result check, and the Markdown table and chart of a run."""

from __future__ import annotations

import statistics
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ..runtime.progress import is_terminal
from ..version import __version__
from .anchors import median_ms

MIB = 1 << 20


@dataclass
class Row:
    id: str
    title: str
    logical_bytes: int
    device_ms: float | None = None       # submit-and-wait wall time, device-resident
    kernel_ms: float | None = None       # GPU time of its dispatches, from timestamps (None: no timestamps)
    numpy_io_ms: float | None = None     # numpy in, numpy out
    numpy_ms: float | None = None        # numpy's own implementation
    ort_ms: float | None = None          # onnxruntime CPU, default threads
    strategy: str = ""                   # the kernel strategies its dispatches ran ("+"-joined)
    note: str = ""
    extra: dict = field(default_factory=dict)


@dataclass
class Case:
    """What a workload prepares: callables to time and the reference result."""

    device_fn: Callable[[], object]        # returns a Tensor (device-resident)
    numpy_io_fn: Callable[[], np.ndarray] | None
    numpy_fn: Callable[[], np.ndarray] | None
    expected: np.ndarray
    logical_bytes: int
    ort: tuple | None = None               # (onnx model bytes, feeds) for onnxruntime
    ort_expected: np.ndarray | None = None
    passes: int = 1                        # compute passes per device_fn call
    compare: Callable[[np.ndarray, np.ndarray], bool] | None = None
    peers: dict = field(default_factory=dict)  # name -> device-resident callable timed beside device_fn
    dispatches: int | None = None          # compute dispatches per device_fn call, where it says
    calls: int = 1                         # operator calls per device_fn call (timed per call where > 1)
    batched: Callable[[], object] | None = None  # the same calls inside a device.batch()
    flops: int = 0                         # floating-point operations per call (compute-bound rows: GFLOP/s)


class Progress:
    """A one-line progress bar, redrawn with carriage returns on `stream` (stderr) only
    where that is a terminal: a file or a pipe gets nothing (no overwritten bars in a log)."""

    def __init__(self, total: int, stream=None):
        self.total, self.done = total, 0
        self.stream = sys.stderr if stream is None else stream
        self.shown = is_terminal(self.stream)

    def step(self, label: str) -> None:
        self.done += 1
        if not self.shown:
            return
        width = 30
        filled = int(width * self.done / self.total)
        self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {label:<40}")
        if self.done == self.total:
            self.stream.write("\n")
        self.stream.flush()


def _gb_per_s(nbytes: int, ms: float | None) -> float | None:
    return None if not ms else nbytes / ms / 1e6


#: How to install the bench extra (gpudml is not on PyPI: from a checkout, or from the wheel
#: `pip wheel . --no-deps -w dist` builds there); the docs' Install page says the same.
EXTRA_INSTALL = (f"in a checkout of gpudml, pip install '.[bench]'; with a wheel, pip install "
                 f"'dist/gpudml-{__version__}-py3-none-any.whl[bench]'")
#: What the onnxruntime column says where the bench extra is missing, and the hint under the table.
NOT_INSTALLED = "not installed (the bench extra)"
EXTRA_HINT = (f"onnxruntime is not installed, so its column is empty: the bench extra (onnx, onnxruntime, "
              f"matplotlib) adds it: {EXTRA_INSTALL}")


def extra_installed() -> bool:
    """Whether the bench extra's onnx and onnxruntime can be imported."""
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


#: The table's columns and what each says (`gpudml bench --help` and docs/performance.md
#: print these). The clock of GB/s and x copy is named in the table's header line.
COLUMNS = {
    "workload": "the workload's id and what it computes (float32)",
    "strategy": "the kernel strategies its dispatches ran",
    "wall ms": "device-resident call, wall clock: recording, submit and wait for the GPU (median)",
    "GPU ms": "the GPU time of the call's dispatches, from GPU timestamps (— where the adapter has none)",
    "GB/s": "the bytes the workload must read and write over GPU ms (over wall ms where the adapter has no "
            "timestamps)",
    "x copy": "GB/s over the adapter's own vec4 copy kernel's, one copy baseline per run (the median of the "
              "copies timed between the workloads), on the same clock as GB/s: 1.0 is copy speed",
    "x copy paired": "the same ratio per repetition, each sample over the copy timed right after it (the "
                     "median): steady where the adapter's speed drifts within the run, as a shared host's "
                     "software adapter does 2x within minutes",
    "x empty": "wall ms over an empty dispatch's submit and wait (wall clock, timed between the workloads): "
               "how many round trips of the bare minimum a call costs",
    "numpy in/out ms": "the same call given numpy arrays: upload, run, read back (wall clock)",
    "numpy ms": "numpy computing the same result on the CPU (wall clock)",
    "ort ms": "onnxruntime's CPU provider computing it (wall clock; the bench extra)",
    "wall / numpy": "wall ms over numpy ms: below 1, the device-resident call beats numpy",
    "note": "what the row needs said: per-op and per-call times, fused graphs against their parts, errors",
}


def columns_help(columns: dict[str, str] = COLUMNS) -> str:
    """The columns explained, one per line (for --help): `gpudml bench`'s, or those of another
    table (gpudml lab's: lab.COLUMNS)."""
    width = max(map(len, columns))
    return "\n".join(textwrap.fill(text, 100, initial_indent=f"  {name:{width}s}  ",
                                   subsequent_indent=" " * (width + 4)) for name, text in columns.items())


def paired_ratio(samples_ms, copies_ms, logical_bytes: int, copy_bytes: int) -> float | None:
    """`x copy paired`: the median over repetitions of (the workload's GB/s in sample i) over
    (the copy's GB/s in the copy timed right after it). None unless every sample and copy
    has a time."""
    if not samples_ms or len(samples_ms) != len(copies_ms) or not all(samples_ms) or not all(copies_ms):
        return None
    return float(statistics.median(copy / ms * logical_bytes / copy_bytes
                                   for ms, copy in zip(samples_ms, copies_ms)))


def copy_baseline(samples_ms, copy_bytes: int | None) -> tuple[float | None, float | None]:
    """A run's one copy baseline (`gpudml bench`'s run_baselines, `gpudml lab`'s
    apply_baselines): the median of every copy kernel timed between the workloads or the
    variants (Yardsticks.copy_ms), in ms, and the GB/s of a copy moving `copy_bytes` over it
    (None where there are no samples, no bytes or a median of 0), so that every row is
    divided by the same figure and the ratios rank as the times do."""
    if not samples_ms:
        return None, None
    ms = float(statistics.median(samples_ms))
    return ms, (copy_bytes / ms / 1e6 if ms and copy_bytes else None)


def render_markdown(rows: list[Row], anchors: dict, device_name: str, extra: bool = True) -> str:
    """The run's Markdown: the anchors, then one row per workload. Ratios divide by the run's
    baselines (anchors `copy_kernel_run_ms`, `empty_dispatch_run_ms`: medians of the copies
    and empty dispatches timed between the workloads), so that they rank as times do."""
    gpu = anchors.get("copy_kernel_run_clock") == "gpu"
    copy_ms = anchors.get("copy_kernel_run_ms")
    copy_gbps = anchors.get("copy_kernel_run_gbps")
    empty_ms = anchors.get("empty_dispatch_run_ms", anchors.get("empty_dispatch_ms"))
    lines = [f"adapter: {device_name}", "",
             "| anchor | value |", "|---|---|"]
    for key, value in anchors.items():
        lines.append(f"| {key} | {value:.4g} |" if isinstance(value, float) else f"| {key} | {value} |")
    clock = ("GPU timestamps: GB/s and x copy from GPU ms, the copy kernel timed by timestamps too" if gpu else
             "no GPU timestamps on this adapter: GB/s and x copy from wall ms, the copy kernel's wall time "
             "(submit to completion) too")
    baseline = "" if not copy_ms else f"; copy baseline {copy_ms:.4g} ms, {copy_gbps:.4g} GB/s"
    lines += ["", f"Clock: {clock}{baseline}. Columns: `gpudml bench --help` and docs/performance.md.", "",
              "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]

    def fmt(v, spec=".3f"):
        return "—" if v is None else format(v, spec)

    for r in rows:
        ms = r.kernel_ms if gpu else r.device_ms
        gbps = _gb_per_s(r.logical_bytes, ms)
        ratio_copy = None if not (gbps and copy_gbps) else gbps / copy_gbps
        ratio_empty = None if not (r.device_ms and empty_ms) else r.device_ms / empty_ms
        vs_numpy = None if not (r.device_ms and r.numpy_ms) else r.device_ms / r.numpy_ms
        lines.append(f"| {r.id} {r.title} | {r.strategy or '—'} | {fmt(r.device_ms)} | {fmt(r.kernel_ms)} | "
                     f"{fmt(gbps, '.2f')} | {fmt(ratio_copy, '.2f')} | {fmt(r.extra.get('x_copy_paired'), '.2f')} | "
                     f"{fmt(ratio_empty, '.2f')} | "
                     f"{fmt(r.numpy_io_ms)} | {fmt(r.numpy_ms)} | {fmt(r.ort_ms) if extra else NOT_INSTALLED} | "
                     f"{fmt(vs_numpy, '.2f')} | {r.note} |")
    return "\n".join(lines)


def write_chart(rows: list[Row], path: str) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    names = [r.id for r in rows]
    series = {"gpudml wall": [r.device_ms for r in rows], "gpudml numpy in/out": [r.numpy_io_ms for r in rows],
              "numpy": [r.numpy_ms for r in rows], "onnxruntime": [r.ort_ms for r in rows]}
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.2
    for i, (label, values) in enumerate(series.items()):
        xs = [j + (i - 1.5) * width for j in range(len(names))]
        ax.bar(xs, [v if v else 0 for v in values], width, label=label)
    ax.set_yscale("log")
    ax.set_xticks(range(len(names)), names)
    ax.set_ylabel("median wall-clock ms (log)")
    ax.set_title("gpudml benchmark (lower is better)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def check_result(got: np.ndarray, want: np.ndarray, compare=None) -> bool:
    if compare is not None:
        return compare(got, want)
    if got.shape != want.shape or got.dtype != want.dtype:
        return False
    return bool(np.array_equal(got, want, equal_nan=True))


__all__ = ["COLUMNS", "Case", "Row", "check_result", "columns_help", "copy_baseline", "median_ms", "render_markdown",
           "write_chart"]
