"""Recording dispatches and batching them: outside a batch every execute is one command
buffer, submitted at once; while a batch is open, dispatches of every thread go into one
command encoder and one compute pass, submitted once when the last batch closes or
before the host touches GPU memory (transfers flush first)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class _Batch:
    encoder: object
    cpass: object | None = None
    pipeline: object | None = None  # the pipeline last set in cpass
    dispatches: int = 0


class Recorder:
    def __init__(self, ctx, lock: threading.RLock, pool):
        self.ctx = ctx
        self.lock = lock
        self.pool = pool
        self._open_batches = 0
        self._batch: _Batch | None = None
        #: Set by a profiler (the bench's GpuTimer): called for each unbatched compute pass,
        #: returns its timestamp_writes (or None).
        self.pass_timestamps: Callable[[], dict | None] | None = None

    def record(self, dispatches, clears=()) -> None:
        """Encode (pipeline, bind group, grid) dispatches after clearing `clears`; submit
        now, or later with the open batch."""
        dev = self.ctx.device
        with self.lock:
            batch = self._batch
            encoder = batch.encoder if batch else dev.create_command_encoder()
            cpass = batch.cpass if batch else None
            if clears:
                if cpass is not None:
                    cpass.end()
                    cpass = None
                for buf in clears:
                    encoder.clear_buffer(buf)
            if cpass is None:
                timestamps = self.pass_timestamps() if self.pass_timestamps and batch is None else None
                cpass = encoder.begin_compute_pass(timestamp_writes=timestamps)
            last = batch.pipeline if batch and batch.cpass is cpass else None
            for pipeline, group, grid in dispatches:
                if pipeline is not last:  # a batch of one operator sets its pipeline once
                    cpass.set_pipeline(pipeline)
                    last = pipeline
                cpass.set_bind_group(0, group)
                cpass.dispatch_workgroups(grid[0], grid[1], 1)
            if batch:
                batch.cpass = cpass
                batch.pipeline = last
                batch.dispatches += len(dispatches)
            else:
                cpass.end()
                dev.queue.submit([encoder.finish()])

    def begin_batch(self) -> None:
        with self.lock:
            if self._open_batches == 0:
                self._batch = _Batch(self.ctx.device.create_command_encoder())
                self.pool.hold()
            self._open_batches += 1

    def end_batch(self) -> None:
        with self.lock:
            self._open_batches -= 1
            if self._open_batches:
                return
            try:
                self.flush()
            finally:
                self._batch = None
                self.pool.unhold()

    def flush(self) -> None:
        """Submit what the open batch has recorded (nothing if no batch is open)."""
        with self.lock:
            batch = self._batch
            if batch is None or (batch.cpass is None and batch.dispatches == 0):
                return
            self._batch = None  # a failed submit must not leave its encoder in place
            try:
                if batch.cpass is not None:
                    batch.cpass.end()
                self.ctx.device.queue.submit([batch.encoder.finish()])
            finally:
                if self._open_batches:
                    self._batch = _Batch(self.ctx.device.create_command_encoder())
