"""GPU timestamps around compute passes, for the benchmarks (adapters with `timestamp-query`).

    with GpuTimer(device) as timer:
        ...                      # every unbatched compute pass recorded here is timed
    timer.milliseconds()         # one duration per pass
"""

from __future__ import annotations

from ..runtime.timestamps import TimestampQueries


class GpuTimer:
    def __init__(self, device, capacity: int = 256):
        self.ctx = device._ctx  # gpudml internals: the bench measures the adapter itself
        self.queries = TimestampQueries(self.ctx, capacity)
        self.count = 0

    def next_pass(self) -> dict:
        if self.count >= self.queries.capacity:
            raise RuntimeError("GpuTimer: more passes than its capacity")
        self.count += 1
        return self.queries.writes(self.count - 1)

    def __enter__(self):
        self.ctx.recorder.pass_timestamps = self.next_pass
        return self

    def __exit__(self, *exc):
        self.ctx.recorder.pass_timestamps = None

    def milliseconds(self) -> list[float]:
        """Duration of each timed pass, in ms."""
        return self.queries.read(self.count)
