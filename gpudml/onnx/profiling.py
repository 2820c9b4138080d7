"""A session's profile (SessionOptions.enable_profiling): every run inside gpudml's profiler
(`Device.profile()`, per-dispatch GPU timestamps, the wall clock where the adapter has none),
written by `end_profiling()` as onnxruntime writes its own: a JSON list of Chrome trace events
("ph": "X"), one "Session" event per run and one "Node" event per dispatch, in microseconds
from the profile's start."""

from __future__ import annotations

import json
import os
import threading
import time
from contextlib import contextmanager
from datetime import datetime

from ..errors import InvalidArgumentError


class SessionProfile:
    def __init__(self, device, prefix: str, provider: str):
        self.device = device
        self.prefix = prefix
        self.provider = provider
        #: Nanoseconds of time.monotonic_ns() at the start (get_profiling_start_time_ns()).
        self.start_ns = time.monotonic_ns()
        self.events: list[dict] = []

    @contextmanager
    def run(self, name: str):
        """Profile the block (one run) as a "Session" event `name` and its dispatches."""
        begin = time.monotonic_ns()
        with self.device.profile() as prof:
            yield
        end = time.monotonic_ns()
        common = {"pid": os.getpid(), "tid": threading.get_ident(), "ph": "X"}
        ts = (begin - self.start_ns) / 1000
        self.events.append({"cat": "Session", **common, "ts": round(ts), "dur": round((end - begin) / 1000),
                            "name": name, "args": {}})
        for row in prof.rows:  # each dispatch after the one before it (the GPU runs them in order)
            dur = row["gpu_ms"] * 1000
            self.events.append({"cat": "Node", **common, "ts": round(ts), "dur": round(dur), "name": row["operator"],
                                "args": {"op_name": row["operator"], "provider": self.provider,
                                         "strategy": row["strategy"], "dispatch": row["dispatch"],
                                         "bytes": row["bytes"], "clock": row["clock"]}})
            ts += dur

    def end(self) -> str:
        """Write the events to PREFIX_YYYY-MM-DD_HH-MM-SS.json (onnxruntime's name) and return its path."""
        path = f"{self.prefix}_{datetime.now():%Y-%m-%d_%H-%M-%S}.json"
        try:
            with open(path, "w") as f:
                json.dump(self.events, f, indent=0)
        except OSError as exc:
            raise InvalidArgumentError(f"InferenceSession.end_profiling: cannot write the profile {path!r}: "
                                       f"{exc.strerror or exc}") from None
        return path


__all__ = ["SessionProfile"]
