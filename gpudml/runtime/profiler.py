"""Profiling: the GPU time of every dispatch (`Device.profile()`, GPUDML_PROFILE=1).

While a profile is active, the recorder gives each dispatch a compute pass of its own with
GPU timestamps at its beginning and end (adapters with `timestamp-query`); on an adapter
without them, each dispatch is submitted alone and timed by the wall clock, submit to
completion (and the rows say so). Batches stay one submission where timestamps exist.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from dataclasses import dataclass

from .timestamps import TimestampQueries

#: Dispatches one query set holds before the profile reads it back (mid-profile if need be).
SLOTS = 256


@dataclass(frozen=True)
class DispatchLabel:
    """What a dispatch is: the compiled operator's, set once at compile time."""

    device: object
    operator: str
    strategy: str
    dispatch: int  # index among the operator's dispatches
    bytes: int  # bytes of the tensors and scratch buffers it binds (what it may move)


@dataclass(frozen=True)
class Work:
    """What one execute of a compiled operator records, set once at compile time: its
    dispatches' labels (for profiles) and what the recorder counts of it (its operator,
    the bytes its dispatches bind)."""

    labels: tuple[DispatchLabel, ...]
    operator: str
    bytes: int


class Profile:
    """The dispatches recorded while it is active (`with device.profile() as prof:`), on
    `device` (None: every Device of the adapter).

    `rows`: one dict per dispatch, in recording order: operator, strategy, dispatch,
    gpu_ms, bytes, clock ("gpu": timestamps, or "wall": submit to completion). `gpu_ms`: their
    times in all. `summary()`: a table per (operator, strategy, dispatch). `keep_rows=False`
    keeps only the summary's totals (the process-wide profile of GPUDML_PROFILE)."""

    def __init__(self, device=None, keep_rows: bool = True):
        self.device = device
        self.keep_rows = keep_rows
        self.rows: list[dict] = []
        self.totals: dict[tuple, list] = {}  # (operator, strategy, dispatch) -> [count, ms, bytes]
        self.adapter = device.adapter_name if device is not None else ""

    def wants(self, label: DispatchLabel) -> bool:
        return self.device is None or label.device is self.device

    def add(self, label: DispatchLabel, ms: float, clock: str) -> None:
        if self.keep_rows:
            self.rows.append({"operator": label.operator, "strategy": label.strategy, "dispatch": label.dispatch,
                              "gpu_ms": ms, "bytes": label.bytes, "clock": clock})
        total = self.totals.setdefault((label.operator, label.strategy, label.dispatch), [0, 0.0, 0])
        total[0] += 1
        total[1] += ms
        total[2] += label.bytes

    @property
    def gpu_ms(self) -> float:
        """The GPU time of every dispatch timed so far, in all (ms; rows kept or not)."""
        return sum(total[1] for total in self.totals.values())

    def summary(self) -> str:
        """Each kind of dispatch: how many, GPU time in all and per dispatch, GB/s; one line
        each, slowest first, the columns as wide as their widest cell (an operator's name, a
        fused kernel's `Fused(A>B>...)` included), names left-aligned and figures right-aligned."""
        header = ("operator", "strategy", "#", "count", "total ms", "mean ms", "GB/s")
        cells = [header]
        for (operator, strategy, dispatch), (count, ms, nbytes) in sorted(self.totals.items(),
                                                                          key=lambda kv: -kv[1][1]):
            gbps = nbytes / ms / 1e6 if ms else 0.0
            cells.append((operator, strategy, str(dispatch), str(count), f"{ms:.3f}", f"{ms / count:.4f}",
                          f"{gbps:.2f}"))
        widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
        lines = [f"gpudml profile{' on ' + self.adapter if self.adapter else ''}: "
                 f"{sum(t[0] for t in self.totals.values())} dispatches"]
        for row in cells:
            lines.append("  " + "  ".join(cell.ljust(w) if i < 2 else cell.rjust(w)
                                          for i, (cell, w) in enumerate(zip(row, widths))))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()


class Profiler:
    """The recorder's side of profiling: one per context, with the active profiles."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.profiles: list[Profile] = []
        self.timestamps = ctx.caps.has("timestamp-query")
        self._queries: TimestampQueries | None = None
        self._pending: list[tuple[DispatchLabel, list[Profile]]] = []  # slot i: label, profiles

    @property
    def active(self) -> bool:
        return bool(self.profiles)

    def takers(self, label) -> list[Profile]:
        return [p for p in self.profiles if label is not None and p.wants(label)]

    def slot(self, label: DispatchLabel, takers: list[Profile]) -> dict:
        """The timestamp_writes of the next pass, for `label`'s dispatch (under the lock).
        A full query set is read back first (which submits what is recorded)."""
        if self._queries is None:
            self._queries = TimestampQueries(self.ctx, SLOTS)
        if len(self._pending) == SLOTS:
            self.collect()
        self._pending.append((label, takers))
        return self._queries.writes(len(self._pending) - 1)

    def collect(self) -> None:
        """Read the timestamps of the dispatches recorded so far into their profiles."""
        if not self._pending:
            return
        self.ctx.recorder.flush()
        pending, self._pending = self._pending, []
        for (label, takers), ms in zip(pending, self._queries.read(len(pending))):
            for profile in takers:
                profile.add(label, ms, "gpu")

    def attach(self, profile: Profile) -> None:
        with self.ctx.lock:
            self.profiles.append(profile)

    def detach(self, profile: Profile) -> None:
        with self.ctx.lock:
            self.collect()
            self.profiles.remove(profile)


# ---------------------------------------------------------------------------- GPUDML_PROFILE
_PROCESS: list[Profile] = []
_PROCESS_LOCK = threading.Lock()


def profile_process(ctx) -> None:
    """With GPUDML_PROFILE=1, profile every dispatch of this context for the whole process and
    print the summary to stderr at exit."""
    if os.environ.get("GPUDML_PROFILE", "").strip().lower() in ("", "0", "off", "false", "no"):
        return
    with _PROCESS_LOCK:
        if any(p.ctx is ctx for p in _PROCESS):
            return
        profile = Profile(keep_rows=False)
        profile.adapter = ctx.caps.name
        profile.ctx = ctx
        ctx.recorder.profiler.attach(profile)
        if not _PROCESS:
            atexit.register(_print_process_profiles)
        _PROCESS.append(profile)


def _print_process_profiles() -> None:
    for profile in _PROCESS:
        try:
            with profile.ctx.lock:
                profile.ctx.recorder.profiler.collect()
        except Exception as exc:  # the device may be gone at exit: say so, print what there is
            print(f"gpudml profile: {exc}", file=sys.stderr)
        print(profile.summary(), file=sys.stderr)
