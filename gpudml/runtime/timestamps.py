"""GPU timestamps around compute passes (adapters with `timestamp-query`): a query set with
two slots per pass, read back in milliseconds. Used by profiling (profiler.py) and the
benchmarks."""

from __future__ import annotations

import numpy as np


class TimestampQueries:
    def __init__(self, ctx, capacity: int):
        import wgpu

        self.ctx = ctx
        self.capacity = capacity
        with ctx.lock:
            self.query_set = ctx.device.create_query_set(type=wgpu.QueryType.timestamp, count=2 * capacity)

    def writes(self, i: int) -> dict:
        """The timestamp_writes of pass i (0 <= i < capacity)."""
        return {"query_set": self.query_set, "beginning_of_pass_write_index": 2 * i,
                "end_of_pass_write_index": 2 * i + 1}

    def read(self, count: int) -> list[float]:
        """The durations of passes 0 .. count-1 in ms, once the work that wrote them is
        submitted (this waits for it). wgpu reports timestamps in nanoseconds."""
        import wgpu

        if not count:
            return []
        n = 2 * count
        ctx, dev = self.ctx, self.ctx.device
        with ctx.lock:  # read back through Transfers.map: never wait for the poll thread here
            resolve = dev.create_buffer(size=8 * n, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC)
            readback = dev.create_buffer(size=8 * n, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
            encoder = dev.create_command_encoder()
            encoder.resolve_query_set(self.query_set, 0, n, resolve, 0)
            encoder.copy_buffer_to_buffer(resolve, 0, readback, 0, 8 * n)
            dev.queue.submit([encoder.finish()])
            ctx.transfers.map(readback, wgpu.MapMode.READ, 8 * n)
            ticks = np.frombuffer(readback.read_mapped(0, 8 * n), dtype=np.uint64).copy()
            readback.unmap()
            resolve.destroy()
            readback.destroy()
        return [float(ticks[2 * i + 1] - ticks[2 * i]) / 1e6 for i in range(count)]
