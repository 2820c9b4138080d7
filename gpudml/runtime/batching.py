"""Recording device work until the host needs it.

Every dispatch, clear and copy goes into the context's open command encoder (one compute
pass where dispatches follow each other) and is *submitted* only when:

- the host needs a result or touches GPU memory: a readback (Tensor.numpy, a numpy-returning
  call), an upload (transfers.py flushes first, so that the write lands after the work
  recorded before it), `device.synchronize()`, a profile's timestamps;
- an explicit `device.batch()` closes (the outermost one): inside a batch nothing else but
  the host's own reads and writes submits, so the block is one submission;
- outside a batch, the recorded work reaches FLUSH_DISPATCHES dispatches or FLUSH_BYTES
  bytes bound by them: the GPU starts on it while the host records more, and the encoder
  never grows without bound.

Buffers recorded work names stay valid until it is submitted: the pool keeps every buffer
alive while anything is recorded (BufferPool.hold), and a buffer given back before then is
reused only by work recorded after it (one encoder: in order). A submission that fails
names the operators whose work it held (recorded errors surface there, not at their call).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from .guard import translate
from .profiler import Profiler
from .storage import parts_of, pieces

#: Outside a batch, recorded work is submitted once it holds this many dispatches ...
#: Measured on lavapipe (2 cores), 1,000 unbatched [8,8] SUMs then one synchronize, per call:
#: a submission per call 106 us; after 16, 64, 256, 1,024 or 4,096 dispatches 26-35 us alike
#: (noise); [1024,1024] SUMs 940-1,160 us whatever the threshold. A submission costs ~50 us
#: of host time on an H100 (issue #29's probe): 64 makes that under 1 us per dispatch, while
#: the GPU starts on recorded work within 64 calls.
FLUSH_DISPATCHES = 64
#: ... or its dispatches bind this many bytes (tensors and scratch, as profiles count them):
#: large kernels start as soon as a few are recorded.
FLUSH_BYTES = 64 << 20


@dataclass
class _Pending:
    """The recorded, not yet submitted work: its encoder, the open compute pass and the
    pipeline last set in it, and what it holds."""

    encoder: object
    cpass: object | None = None
    pipeline: object | None = None
    dispatches: int = 0
    copies: int = 0
    bytes: int = 0
    operators: Counter = field(default_factory=Counter)  # operator name -> dispatches
    #: The bind groups set through wgpu-native directly (_set_bind_group): kept alive here
    #: until the work is submitted, as wgpu-py's set_bind_group keeps them in the pass.
    groups: list = field(default_factory=list)


class Recorder:
    def __init__(self, ctx, lock: threading.RLock, pool):
        self.ctx = ctx
        self.lock = lock
        self.pool = pool
        self._batches = 0  # open device.batch() blocks, every thread's
        self._pending: _Pending | None = None
        #: Set by the bench's GpuTimer: called for each record, returns the timestamp_writes
        #: of a compute pass of its own (or None).
        self.pass_timestamps: Callable[[], dict | None] | None = None
        self.profiler = Profiler(ctx)
        self.submissions = 0  # queue submissions made (tests and the bench count them)
        # wgpu-native's set-pipeline, set-bind-group and dispatch calls, made directly (the
        # path every recorded dispatch takes): wgpu-py wraps each in its error capture and
        # allocates an empty offsets array, 2.8 us per dispatch on lavapipe against 0.7 us.
        # (The pipelines live in the context's cache for good, the bind groups in the
        # pending work until it is submitted: nothing needs wgpu-py's keep-alive.) wgpu-native
        # keeps an encoding error in the encoder and reports it at finish(), which goes
        # through wgpu-py (flush: raised there, naming the work). gpudml pins wgpu-py below
        # 0.33 (pyproject.toml); wgpu is imported here, with the first device, as everywhere
        # in the runtime.
        from wgpu.backends.wgpu_native._api import ffi
        from wgpu.backends.wgpu_native._ffi import lib

        self._set_pipeline = lib.wgpuComputePassEncoderSetPipeline
        self._set_bind_group = lib.wgpuComputePassEncoderSetBindGroup
        self._dispatch = lib.wgpuComputePassEncoderDispatchWorkgroups
        self._null = ffi.NULL

    @property
    def pending_dispatches(self) -> int:
        """Dispatches recorded and not yet submitted."""
        return self._pending.dispatches if self._pending is not None else 0

    def _open(self) -> _Pending:
        """The pending work, opened (and the pool held) on first use. Under the lock."""
        pending = self._pending
        if pending is None:
            pending = self._pending = _Pending(self.ctx.device.create_command_encoder())
            self.pool.hold()
        return pending

    def record(self, dispatches, clears=(), work=None) -> None:
        """Encode (pipeline, bind group, grid) dispatches after clearing `clears`. `work`
        (profiler.Work: a compiled operator's) names them (errors, profiles, the bytes)."""
        with self.lock:
            if self.profiler.active and work is not None:
                takers = [self.profiler.takers(label) for label in work.labels]
                if any(takers):
                    self._record_profiled(dispatches, clears, work.labels, takers)
                    return
            pending = self._open()
            encoder, cpass = pending.encoder, pending.cpass
            if clears or self.pass_timestamps is not None:
                if cpass is not None:
                    cpass.end()
                    cpass = None
                for buf in clears:
                    for part in parts_of(buf):
                        encoder.clear_buffer(part)
            if cpass is None and dispatches:
                timestamps = self.pass_timestamps() if self.pass_timestamps is not None else None
                cpass = encoder.begin_compute_pass(timestamp_writes=timestamps)
                pending.pipeline = None
            last = pending.pipeline
            if dispatches:
                handle, null = cpass._internal, self._null
                set_pipeline, set_bind_group, dispatch = self._set_pipeline, self._set_bind_group, self._dispatch
                for pipeline, group, grid in dispatches:
                    if pipeline is not last:  # a run of one operator's calls sets its pipeline once
                        set_pipeline(handle, pipeline._internal)
                        last = pipeline
                    set_bind_group(handle, 0, group._internal, 0, null)
                    dispatch(handle, grid[0], grid[1], grid[2] if len(grid) > 2 else 1)  # (HLSL kernels: 3-D)
                    pending.groups.append(group)
            pending.cpass, pending.pipeline = cpass, last
            pending.dispatches += len(dispatches)
            if work is not None:
                pending.operators[work.operator] += len(dispatches)
                pending.bytes += work.bytes
            if not self._batches and (pending.dispatches >= FLUSH_DISPATCHES or pending.bytes >= FLUSH_BYTES):
                self.flush()

    def copy(self, source, destination, nbytes: int) -> None:
        """Encode a copy of the first `nbytes` (a multiple of 4) of `source` into
        `destination`, in order with the recorded dispatches."""
        with self.lock:
            pending = self._open()
            if pending.cpass is not None:  # a copy goes between compute passes
                pending.cpass.end()
                pending.cpass, pending.pipeline = None, None
            done = 0
            for part, offset, n in pieces(source, 0, nbytes):  # each piece, to wherever it lands
                for target, at, m in pieces(destination, done, n):
                    pending.encoder.copy_buffer_to_buffer(part, offset, target, at, m)
                    offset += m
                done += n
            pending.copies += 1

    def _record_profiled(self, dispatches, clears, labels, takers) -> None:
        """Each dispatch in a compute pass of its own: with timestamps (recorded like the
        rest), or submitted alone and timed by the wall clock, submit to completion."""
        profiler = self.profiler
        for n, ((pipeline, group, grid), label, wanted) in enumerate(zip(dispatches, labels, takers)):
            if profiler.timestamps:
                writes = profiler.slot(label, wanted) if wanted else None  # (may submit earlier work)
            else:
                self.flush()
                self.ctx.wait_idle()
                writes, t0 = None, time.perf_counter()
            pending = self._open()
            if pending.cpass is not None:
                pending.cpass.end()
                pending.cpass, pending.pipeline = None, None
            if n == 0:
                for buf in clears:
                    for part in parts_of(buf):
                        pending.encoder.clear_buffer(part)
            cpass = pending.encoder.begin_compute_pass(timestamp_writes=writes)
            cpass.set_pipeline(pipeline)
            cpass.set_bind_group(0, group)
            cpass.dispatch_workgroups(grid[0], grid[1], grid[2] if len(grid) > 2 else 1)
            cpass.end()
            pending.dispatches += 1
            pending.operators[label.operator] += 1
            pending.bytes += label.bytes
            if not profiler.timestamps:
                self.flush()
                self.ctx.wait_idle()
                for profile in wanted:
                    profile.add(label, (time.perf_counter() - t0) * 1e3, "wall")

    def begin_batch(self) -> None:
        with self.lock:
            self._batches += 1

    def end_batch(self) -> None:
        with self.lock:
            self._batches -= 1
            if not self._batches:
                self.flush()

    def flush(self) -> None:
        """Submit the recorded work (nothing if none is recorded)."""
        with self.lock:
            pending = self._pending
            if pending is None:
                return
            self._pending = None  # a failed submit must not leave its encoder in place
            try:
                if pending.cpass is not None:
                    pending.cpass.end()
                self.ctx.device.queue.submit([pending.encoder.finish()])
                self.submissions += 1
            except Exception as exc:
                raise translate(self.ctx, exc, during=_work_of(pending)) from exc
            finally:
                self.pool.unhold()


def _work_of(pending: _Pending) -> str:
    """What a submission held, for its error: "the work recorded by Slice1 (2 dispatches), ..."."""
    held = [f"{name} ({count} dispatch{'es' if count > 1 else ''})" for name, count in pending.operators.items()]
    if pending.copies:
        held.append(f"{pending.copies} buffer cop{'ies' if pending.copies > 1 else 'y'}")
    return "the work recorded by " + (", ".join(held) if held else "buffer clears")
