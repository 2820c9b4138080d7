"""Recording dispatches and batching them: outside a batch every execute is one command
buffer, submitted at once; while a batch is open, dispatches of every thread go into one
command encoder and one compute pass, submitted once when the last batch closes or
before the host touches GPU memory (transfers flush first)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from .profiler import Profiler
from .storage import parts_of, pieces


@dataclass
class _Batch:
    encoder: object
    cpass: object | None = None
    pipeline: object | None = None  # the pipeline last set in cpass
    dispatches: int = 0
    copies: int = 0  # buffer-to-buffer copies recorded between its compute passes


class Recorder:
    def __init__(self, ctx, lock: threading.RLock, pool):
        self.ctx = ctx
        self.lock = lock
        self.pool = pool
        self._open_batches = 0
        self._batch: _Batch | None = None
        #: Set by the bench's GpuTimer: called for each unbatched compute pass, returns its
        #: timestamp_writes (or None).
        self.pass_timestamps: Callable[[], dict | None] | None = None
        self.profiler = Profiler(ctx)

    def record(self, dispatches, clears=(), labels=None) -> None:
        """Encode (pipeline, bind group, grid) dispatches after clearing `clears`; submit
        now, or later with the open batch. `labels` (profiler.DispatchLabel per dispatch)
        let active profiles time them."""
        dev = self.ctx.device
        with self.lock:
            if self.profiler.active and labels is not None:
                takers = [self.profiler.takers(label) for label in labels]
                if any(takers):
                    self._record_profiled(dispatches, clears, labels, takers)
                    return
            batch = self._batch
            encoder = batch.encoder if batch else dev.create_command_encoder()
            cpass = batch.cpass if batch else None
            if clears:
                if cpass is not None:
                    cpass.end()
                    cpass = None
                for buf in clears:
                    for part in parts_of(buf):
                        encoder.clear_buffer(part)
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

    def copy(self, source, destination, nbytes: int) -> None:
        """Encode a copy of the first `nbytes` (a multiple of 4) of `source` into `destination`,
        in order with the recorded dispatches: submitted now, or with the open batch."""
        with self.lock:
            batch = self._batch
            encoder = batch.encoder if batch else self.ctx.device.create_command_encoder()
            if batch and batch.cpass is not None:  # a copy goes between compute passes
                batch.cpass.end()
                batch.cpass, batch.pipeline = None, None
            done = 0
            for part, offset, n in pieces(source, 0, nbytes):  # each piece, to wherever it lands
                for target, at, m in pieces(destination, done, n):
                    encoder.copy_buffer_to_buffer(part, offset, target, at, m)
                    offset += m
                done += n
            if batch:
                batch.copies += 1
            else:
                self.ctx.device.queue.submit([encoder.finish()])

    def _record_profiled(self, dispatches, clears, labels, takers) -> None:
        """Each dispatch in a compute pass of its own: with timestamps (batches stay one
        submission), or submitted alone and timed by the wall clock."""
        dev = self.ctx.device
        profiler = self.profiler
        for n, ((pipeline, group, grid), label, wanted) in enumerate(zip(dispatches, labels, takers)):
            if profiler.timestamps:
                writes = profiler.slot(label, wanted) if wanted else None  # (may submit earlier work)
            else:
                self.flush()
                self.ctx.wait_idle()
                writes, t0 = None, time.perf_counter()
            batch = self._batch if profiler.timestamps else None
            encoder = batch.encoder if batch else dev.create_command_encoder()
            if batch is not None and batch.cpass is not None:
                batch.cpass.end()
                batch.cpass, batch.pipeline = None, None
            if n == 0:
                for buf in clears:
                    for part in parts_of(buf):
                        encoder.clear_buffer(part)
            cpass = encoder.begin_compute_pass(timestamp_writes=writes)
            cpass.set_pipeline(pipeline)
            cpass.set_bind_group(0, group)
            cpass.dispatch_workgroups(grid[0], grid[1], 1)
            cpass.end()
            if batch is not None:
                batch.dispatches += 1
                continue
            dev.queue.submit([encoder.finish()])
            if not profiler.timestamps:
                self.ctx.wait_idle()
                for profile in wanted:
                    profile.add(label, (time.perf_counter() - t0) * 1e3, "wall")

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
            if batch is None or (batch.cpass is None and batch.dispatches == 0 and batch.copies == 0):
                return
            self._batch = None  # a failed submit must not leave its encoder in place
            try:
                if batch.cpass is not None:
                    batch.cpass.end()
                self.ctx.device.queue.submit([batch.encoder.finish()])
            finally:
                if self._open_batches:
                    self._batch = _Batch(self.ctx.device.create_command_encoder())
