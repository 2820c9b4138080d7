"""What `gpudml bench` measures and writes: a workload's Case (what it times) and Row (what
was measured), the result check, and the Markdown table and chart of a run."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .anchors import median_ms

MIB = 1 << 20


@dataclass
class Row:
    id: str
    title: str
    logical_bytes: int
    device_ms: float | None = None       # submit-and-wait wall time, device-resident
    kernel_ms: float | None = None       # GPU timestamps of the passes (None: no timestamps)
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


class Progress:
    """A one-line progress bar on stderr."""

    def __init__(self, total: int):
        self.total, self.done = total, 0

    def step(self, label: str) -> None:
        self.done += 1
        width = 30
        filled = int(width * self.done / self.total)
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {label:<40}")
        sys.stderr.flush()
        if self.done == self.total:
            sys.stderr.write("\n")


def _gb_per_s(nbytes: int, ms: float | None) -> float | None:
    return None if not ms else nbytes / ms / 1e6


#: What the onnxruntime column says where the bench extra is missing, and the hint under the table.
NOT_INSTALLED = "not installed (pip install 'gpudml[bench]')"
EXTRA_HINT = ("onnxruntime is not installed, so its column is empty: pip install 'gpudml[bench]' "
              "(onnx, onnxruntime and matplotlib; from a checkout: pip install '.[bench]')")


def extra_installed() -> bool:
    """Whether the bench extra's onnx and onnxruntime can be imported."""
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def render_markdown(rows: list[Row], anchors: dict, device_name: str, extra: bool = True) -> str:
    ceiling = anchors.get("copy_kernel_gbps")
    floor = anchors.get("empty_dispatch_ms")
    lines = [f"adapter: {device_name}", "",
             "| anchor | value |", "|---|---|"]
    for key, value in anchors.items():
        lines.append(f"| {key} | {value:.4g} |" if isinstance(value, float) else f"| {key} | {value} |")
    lines += ["", "Ratios use the copy kernel and the empty dispatch timed beside each workload "
                  "(interleaved), so host drift hits both alike.", "",
              "| workload | strategy | device ms (kernel ms) | GB/s | x copy ceiling | x floor | numpy in/out ms | "
                  "numpy ms | ort ms | device / numpy | note |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]

    def fmt(v, spec=".3f"):
        return "—" if v is None else format(v, spec)

    for r in rows:
        # wall time against wall time, both timed side by side (submit + wait included)
        gbps = _gb_per_s(r.logical_bytes, r.device_ms)
        ceil_here = r.extra.get("copy_kernel_gbps", ceiling)
        floor_here = r.extra.get("empty_dispatch_ms", floor)
        ratio_ceiling = None if not (gbps and ceil_here) else gbps / ceil_here
        ratio_floor = None if not (r.device_ms and floor_here) else r.device_ms / floor_here
        vs_numpy = None if not (r.device_ms and r.numpy_ms) else r.device_ms / r.numpy_ms
        dev = fmt(r.device_ms) + ("" if r.kernel_ms is None else f" ({r.kernel_ms:.3f})")
        lines.append(f"| {r.id} {r.title} | {r.strategy or '—'} | {dev} | {fmt(gbps, '.2f')} | "
                     f"{fmt(ratio_ceiling, '.2f')} | {fmt(ratio_floor, '.2f')} | {fmt(r.numpy_io_ms)} | "
                     f"{fmt(r.numpy_ms)} | {fmt(r.ort_ms) if extra else NOT_INSTALLED} | "
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
    series = {"gpudml device": [r.device_ms for r in rows], "gpudml numpy in/out": [r.numpy_io_ms for r in rows],
              "numpy": [r.numpy_ms for r in rows], "onnxruntime": [r.ort_ms for r in rows]}
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.2
    for i, (label, values) in enumerate(series.items()):
        xs = [j + (i - 1.5) * width for j in range(len(names))]
        ax.bar(xs, [v if v else 0 for v in values], width, label=label)
    ax.set_yscale("log")
    ax.set_xticks(range(len(names)), names)
    ax.set_ylabel("median ms (log)")
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


__all__ = ["Case", "Row", "check_result", "median_ms", "render_markdown", "write_chart"]
