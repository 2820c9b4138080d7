"""Host <-> device transfers of one context.

Where the adapter offers `mappable-primary-buffers` (software adapters share host memory)
storage buffers are mapped directly (reads always, writes from MAP_THRESHOLD_BYTES on;
`queue.write_buffer` is cheaper below); elsewhere `queue.write_buffer` and reused
MAP_READ staging buffers. Every transfer submits recorded work first.
"""

from __future__ import annotations

import threading

import numpy as np

from ..errors import GpuError
from ..tensor_desc import bound_bytes
from .guard import is_out_of_memory, out_of_memory, translate
from .storage import Storage, pieces

#: Device polls a buffer mapping may take before it is an error (one is enough).
MAP_POLLS = 100
#: Transfers at least this large map the buffer instead of using the queue (measured in bench/).
MAP_THRESHOLD_BYTES = 256 << 10


class Transfers:
    def __init__(self, ctx, lock: threading.RLock, recorder):
        self.ctx = ctx
        self.lock = lock
        self.recorder = recorder
        self._staging_free: list = []

    @property
    def mappable(self) -> bool:
        return self.ctx.caps.has("mappable-primary-buffers")

    def map(self, buffer, mode, size: int, offset: int = 0) -> None:
        """Map bytes [offset, offset + size) of `buffer` for the host, waiting for the GPU
        (under the lock)."""
        # map_sync waits for wgpu-py's poll thread with a sleeping back-off (~0.3 ms even
        # for 4 bytes); a blocking device poll right after the request completes it at once.
        promise = buffer.map_async(mode, offset, size)
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
            raise translate(self.ctx, exc) from exc

    def upload(self, buffer, data: np.ndarray) -> None:
        """Write `data`'s bytes at the start of `buffer` (a wgpu buffer or a Storage; the
        rest keeps its contents)."""
        payload = np.ascontiguousarray(data).view(np.uint8).reshape(-1)[: buffer.size]
        if payload.size % 4:
            payload = np.concatenate([payload, np.zeros(4 - payload.size % 4, np.uint8)])
        with self.lock:
            self.recorder.flush()
            done = 0
            for part, offset, n in pieces(buffer, 0, payload.size):
                try:
                    self._write(part, offset, payload[done:done + n])
                except Exception as exc:  # wgpu stages a queue write in memory of its own
                    if is_out_of_memory(exc) and not self.ctx.lost:
                        raise out_of_memory(self.ctx, exc, n, f"uploading {payload.size} bytes to the device") \
                            from exc
                    raise
                done += n

    def _write(self, buffer, offset: int, payload: np.ndarray) -> None:
        import wgpu

        if self.mappable and payload.size >= MAP_THRESHOLD_BYTES:
            self.map(buffer, wgpu.MapMode.WRITE, payload.size, offset)
            buffer.write_mapped(payload, offset)
            buffer.unmap()
        else:
            self.ctx.device.queue.write_buffer(buffer, offset, payload)

    def download(self, buffer, nbytes: int | None = None) -> np.ndarray:
        """The first nbytes (default all) of `buffer` (a wgpu buffer or a Storage) as a new
        uint8 array; waits for the GPU."""
        size = buffer.size if nbytes is None else min(buffer.size, (nbytes + 3) & ~3)
        if not isinstance(buffer, Storage):
            return self._read(buffer, size)
        out = np.empty(size, np.uint8)
        done = 0
        for part, _, n in pieces(buffer, 0, size):  # each part read from its start
            out[done:done + n] = self._read(part, n)
            done += n
        return out

    def _read(self, buffer, size: int) -> np.ndarray:
        import wgpu

        with self.lock:
            self.recorder.flush()
            source = buffer
            if not self.mappable:  # copy into a staging buffer the host may map
                source = self._staging(size)
                encoder = self.ctx.device.create_command_encoder()
                encoder.copy_buffer_to_buffer(buffer, 0, source, 0, size)
                self.ctx.device.queue.submit([encoder.finish()])
            self.map(source, wgpu.MapMode.READ, size)
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
        try:
            return self.ctx.device.create_buffer(
                size=bound_bytes(size), usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
        except Exception as exc:
            if is_out_of_memory(exc):
                raise out_of_memory(self.ctx, exc, bound_bytes(size), "a staging buffer to read a tensor back") \
                    from exc
            raise
