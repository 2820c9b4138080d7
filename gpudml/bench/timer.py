"""GPU timestamps around compute passes, for the benchmarks (adapters with `timestamp-query`).

    with GpuTimer(device) as timer:
        ...                      # every unbatched compute pass recorded here is timed
    timer.milliseconds()         # one duration per pass
"""

from __future__ import annotations

import numpy as np


class GpuTimer:
    def __init__(self, device, capacity: int = 256):
        import wgpu

        self.ctx = device._ctx  # gpudml internals: the bench measures the adapter itself
        self.capacity = capacity
        with self.ctx.lock:
            self.query_set = self.ctx.device.create_query_set(type=wgpu.QueryType.timestamp, count=2 * capacity)
        self.count = 0

    def next_pass(self) -> dict:
        if self.count >= self.capacity:
            raise RuntimeError("GpuTimer: more passes than its capacity")
        i = self.count
        self.count += 1
        return {"query_set": self.query_set, "beginning_of_pass_write_index": 2 * i,
                "end_of_pass_write_index": 2 * i + 1}

    def __enter__(self):
        self.ctx.recorder.pass_timestamps = self.next_pass
        return self

    def __exit__(self, *exc):
        self.ctx.recorder.pass_timestamps = None

    def milliseconds(self) -> list[float]:
        """Duration of each timed pass, in ms (wgpu reports timestamps in nanoseconds)."""
        import wgpu

        n = 2 * self.count
        if not n:
            return []
        dev = self.ctx.device
        with self.ctx.lock:  # read back through Transfers.map: never wait for the poll thread here
            usage = wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC
            resolve = dev.create_buffer(size=8 * n, usage=usage)
            readback = dev.create_buffer(size=8 * n, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
            encoder = dev.create_command_encoder()
            encoder.resolve_query_set(self.query_set, 0, n, resolve, 0)
            encoder.copy_buffer_to_buffer(resolve, 0, readback, 0, 8 * n)
            dev.queue.submit([encoder.finish()])
            self.ctx.transfers.map(readback, wgpu.MapMode.READ, 8 * n)
            ticks = np.frombuffer(readback.read_mapped(0, 8 * n), dtype=np.uint64).copy()
            readback.unmap()
            del resolve, readback, encoder
        return [float(ticks[2 * i + 1] - ticks[2 * i]) / 1e6 for i in range(self.count)]
