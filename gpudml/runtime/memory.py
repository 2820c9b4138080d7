"""GPU memory of one context: a buffer pool, host<->device transfers, and batching.

- Pool: buffers are kept by size; a Tensor that dies gives its buffer back, so
  repeated executes of the same shapes allocate nothing.
- Transfers: where the adapter offers `mappable-primary-buffers` (software
  adapters share host memory) storage buffers are mapped directly (reads always,
  writes from MAP_THRESHOLD_BYTES on; `queue.write_buffer` is cheaper below);
  elsewhere `queue.write_buffer` and reused MAP_READ staging buffers.
- Batching: while a batch is open, dispatches of every thread go into one
  command encoder and one compute pass, submitted once when the last batch
  closes or before the host touches GPU memory (upload, readback).
"""

from __future__ import annotations

import itertools
import threading
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from ..errors import GpuError, UnsupportedError

#: Bytes the pool may keep idle before it frees buffers.
POOL_LIMIT_BYTES = 512 << 20
#: Device polls a buffer mapping may take before it is an error (one is enough).
MAP_POLLS = 100
#: Transfers at least this large map the buffer instead of using the queue (measured in bench/).
MAP_THRESHOLD_BYTES = 256 << 10

_serials = itertools.count(1)


@dataclass
class _Batch:
    encoder: object
    cpass: object | None = None
    pipeline: object | None = None  # the pipeline last set in cpass
    dispatches: int = 0


@dataclass
class Memory:
    ctx: object
    lock: threading.RLock
    _free: dict = field(default_factory=lambda: defaultdict(list))
    _free_bytes: int = 0
    _open_batches: int = 0
    _batch: _Batch | None = None
    allocations: int = 0
    _staging_free: list = field(default_factory=list)
    _shrinking: bool = False  # a Tensor finalizer run by GC inside _shrink must not shrink again
    timer: GpuTimer | None = None  # set by GpuTimer.__enter__: time each unbatched pass
    #: What finalizers gave back while another thread held the lock (see release):
    #: buffers for the pool, and wgpu objects to drop; taken in under the lock.
    _returned: list = field(default_factory=list)
    _graveyard: list = field(default_factory=list)

    # -- buffers -----------------------------------------------------------------------
    @property
    def mappable(self) -> bool:
        return self.ctx.caps.has("mappable-primary-buffers")

    def usage(self):
        import wgpu

        u = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
        if self.mappable:
            u |= wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.MAP_WRITE
        return u

    def acquire(self, nbytes: int):
        """A storage buffer of nbytes rounded up to 16 (contents unspecified): kernels may
        bind any buffer as array<vec4<u32>>."""
        size = max(16, (nbytes + 15) & ~15)
        if size > self.ctx.caps.max_buffer_size:
            raise UnsupportedError(
                f"gpudml: a buffer of {size} bytes exceeds the adapter's max-buffer-size "
                f"{self.ctx.caps.max_buffer_size} ({self.ctx.caps.name})")
        with self.lock:
            self._take_in()
            free = self._free.get(size)
            if free:
                buf = free.pop()  # first: GC may run a finalizer (release, shrink) in between
                self._free_bytes -= size
                return buf
            self.allocations += 1
            buf = self.ctx.device.create_buffer(size=size, usage=self.usage())
            buf._gpudml_serial = next(_serials)
            return buf

    def release(self, buffer) -> None:
        """Give a buffer back to the pool. Reuse is safe at once: recorded dispatches run in
        order, and every upload submits recorded work first. Destroying is not (a recorded
        command may still name the buffer), so the pool shrinks only when no batch is open.

        Never waits for the lock: finalizers call this in whatever thread the garbage
        collector runs, and that may be a thread another one waits for while holding the
        lock (wgpu-py starting a device's poll thread inside request_device: a deadlock,
        seen in CI). Then the buffer is handed over and taken in by the next holder."""
        self._returned.append(buffer)  # (atomic)
        if self.lock.acquire(blocking=False):
            try:
                self._take_in()
            finally:
                self.lock.release()

    def drop_later(self, objects) -> None:
        """Hand over wgpu objects to drop (a dying CompiledOperator's): the next holder of
        the lock drops them (on OpenGL a release may not wait for the GL context while
        another thread holds it: see context._poll_under_lock). Not now: the caller's own
        references would be the last ones, dropped after the lock is let go."""
        self._graveyard.append(objects)  # (atomic)

    def _take_in(self) -> None:
        """Under the lock: pool the buffers handed over, drop the objects (drop_later)."""
        while self._graveyard:
            self._graveyard.pop()
        returned = False
        while self._returned:
            buffer = self._returned.pop()
            self._free[buffer.size].append(buffer)
            self._free_bytes += buffer.size
            returned = True
        if returned and not self._open_batches:
            self._shrink(POOL_LIMIT_BYTES)

    def _shrink(self, limit: int) -> None:
        if self._shrinking:
            return
        self._shrinking = True
        try:
            for size in sorted(self._free, reverse=True):
                bufs = self._free.get(size, ())
                while bufs and self._free_bytes > limit:
                    buf = bufs.pop(0)
                    self._free_bytes -= size
                    buf.destroy()
                if not bufs:
                    self._free.pop(size, None)
        finally:
            self._shrinking = False

    def trim(self) -> None:
        """Free every idle pooled buffer."""
        with self.lock:
            self._take_in()
            if not self._open_batches:
                self._shrink(0)

    @property
    def pooled_bytes(self) -> int:
        """Bytes of idle buffers in the pool, those handed over by finalizers included."""
        with self.lock:
            self._take_in()
            return self._free_bytes

    # -- transfers ---------------------------------------------------------------------
    def _map(self, buffer, mode, size: int) -> None:
        # map_sync waits for wgpu-py's poll thread with a sleeping back-off (~0.3 ms even
        # for 4 bytes); a blocking device poll right after the request completes it at once.
        promise = buffer.map_async(mode, 0, size)
        # Never wait for wgpu-py's poll thread here: it needs the context lock this thread
        # holds (context._poll_under_lock). A wait-poll completes the mapping at once.
        for _ in range(MAP_POLLS):
            self.ctx.device._poll_wait()
            if promise._thread_event.is_set():
                break
        else:
            raise GpuError(f"gpudml: mapping a buffer on {self.ctx.caps.name} did not complete "
                           f"after {MAP_POLLS} device polls")
        try:
            promise.sync_wait()
        except RuntimeError as exc:  # wgpu-py reports a failed mapping as a plain RuntimeError
            from .guard import translate

            raise translate(self.ctx, exc) from exc

    def upload(self, buffer, data: np.ndarray) -> None:
        """Write `data`'s bytes at the start of `buffer` (the rest keeps its contents)."""
        import wgpu

        payload = np.ascontiguousarray(data).view(np.uint8).reshape(-1)[: buffer.size]
        if payload.size % 4:
            payload = np.concatenate([payload, np.zeros(4 - payload.size % 4, np.uint8)])
        with self.lock:
            self.flush()
            if self.mappable and payload.size >= MAP_THRESHOLD_BYTES:
                self._map(buffer, wgpu.MapMode.WRITE, payload.size)
                buffer.write_mapped(payload, 0)
                buffer.unmap()
            else:
                self.ctx.device.queue.write_buffer(buffer, 0, payload)

    def download(self, buffer, nbytes: int | None = None) -> np.ndarray:
        """The first nbytes (default all) of `buffer` as a new uint8 array; waits for the GPU."""
        import wgpu

        size = buffer.size if nbytes is None else min(buffer.size, (nbytes + 3) & ~3)
        with self.lock:
            self.flush()
            source = buffer
            if not self.mappable:  # copy into a staging buffer the host may map
                source = self._staging(size)
                encoder = self.ctx.device.create_command_encoder()
                encoder.copy_buffer_to_buffer(buffer, 0, source, 0, size)
                self.ctx.device.queue.submit([encoder.finish()])
            self._map(source, wgpu.MapMode.READ, size)
            try:
                return np.frombuffer(source.read_mapped(0, size, copy=False), dtype=np.uint8).copy()
            finally:
                source.unmap()
                if source is not buffer:
                    self._staging_free.append(source)

    def _staging(self, size: int):
        import wgpu

        for i, buf in enumerate(self._staging_free):
            if buf.size >= size:
                return self._staging_free.pop(i)
        if len(self._staging_free) >= 4:  # keep a few; drop the smallest
            self._staging_free.sort(key=lambda b: b.size)
            self._staging_free.pop(0).destroy()
        return self.ctx.device.create_buffer(
            size=max(16, (size + 15) & ~15), usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)

    # -- recording and batching --------------------------------------------------------
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
                timer = self.timer if batch is None else None
                cpass = encoder.begin_compute_pass(timestamp_writes=timer.next_pass() if timer else None)
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
            self._open_batches += 1

    def end_batch(self) -> None:
        with self.lock:
            self._open_batches -= 1
            if self._open_batches:
                return
            self.flush()
            self._batch = None
            self._shrink(POOL_LIMIT_BYTES)

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


class GpuTimer:
    """GPU timestamps around every unbatched compute pass recorded while active
    (adapters with `timestamp-query`); `with GpuTimer(device) as t: ...; t.milliseconds()`."""

    def __init__(self, device, capacity: int = 256):
        import wgpu

        self.memory = device._ctx.memory
        self.device = device._ctx.device
        self.capacity = capacity
        with self.memory.lock:
            self.query_set = self.device.create_query_set(type=wgpu.QueryType.timestamp, count=2 * capacity)
        self.count = 0

    def next_pass(self) -> dict:
        if self.count >= self.capacity:
            raise RuntimeError("GpuTimer: more passes than its capacity")
        i = self.count
        self.count += 1
        return {"query_set": self.query_set, "beginning_of_pass_write_index": 2 * i,
                "end_of_pass_write_index": 2 * i + 1}

    def __enter__(self):
        self.memory.timer = self
        return self

    def __exit__(self, *exc):
        self.memory.timer = None

    def milliseconds(self) -> list[float]:
        """Duration of each timed pass, in ms (wgpu reports timestamps in nanoseconds)."""
        import wgpu

        n = 2 * self.count
        if not n:
            return []
        with self.memory.lock:  # read back through Memory._map: never wait for the poll thread here
            usage = wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC
            resolve = self.device.create_buffer(size=8 * n, usage=usage)
            readback = self.device.create_buffer(
                size=8 * n, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
            encoder = self.device.create_command_encoder()
            encoder.resolve_query_set(self.query_set, 0, n, resolve, 0)
            encoder.copy_buffer_to_buffer(resolve, 0, readback, 0, 8 * n)
            self.device.queue.submit([encoder.finish()])
            self.memory._map(readback, wgpu.MapMode.READ, 8 * n)
            ticks = np.frombuffer(readback.read_mapped(0, 8 * n), dtype=np.uint64).copy()
            readback.unmap()
            del resolve, readback, encoder
        return [float(ticks[2 * i + 1] - ticks[2 * i]) / 1e6 for i in range(self.count)]
