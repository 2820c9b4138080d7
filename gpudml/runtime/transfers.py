"""Host <-> device transfers of one context.

Where the adapter offers `mappable-primary-buffers` (software adapters share host memory)
storage buffers are mapped directly (reads always, writes from MAP_THRESHOLD_BYTES on;
`queue.write_buffer` is cheaper below); elsewhere `queue.write_buffer` and reused
MAP_READ staging buffers. Every transfer submits recorded work first. A large transfer goes
in chunks and shows its progress on a terminal (progress.py).
"""

from __future__ import annotations

import threading

import numpy as np

from ..errors import GpuError
from ..tensor_desc import bound_bytes
from . import progress
from .guard import is_out_of_memory, out_of_memory, translate
from .progress import TransferProgress, transfer_progress
from .storage import pieces

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
        with self.lock, transfer_progress("upload", payload.size) as shown:
            self.recorder.flush()
            done = 0
            for part, offset, n in pieces(buffer, 0, payload.size):
                try:
                    self._write(part, offset, payload[done:done + n], shown)
                except Exception as exc:  # wgpu stages a queue write in memory of its own
                    if is_out_of_memory(exc) and not self.ctx.lost:
                        raise out_of_memory(self.ctx, exc, n, f"uploading {payload.size} bytes to the device") \
                            from exc
                    raise
                done += n

    def _write(self, buffer, offset: int, payload: np.ndarray, shown: TransferProgress) -> None:
        import wgpu

        chunks = _chunks(payload.size)
        if self.mappable and payload.size >= MAP_THRESHOLD_BYTES:
            self.map(buffer, wgpu.MapMode.WRITE, payload.size, offset)
            for start, end in chunks:
                buffer.write_mapped(payload[start:end], offset + start)
                shown.advance(end - start)
            buffer.unmap()
        else:
            for start, end in chunks:
                self.ctx.device.queue.write_buffer(buffer, offset + start, payload[start:end])
                shown.advance(end - start)

    def download(self, buffer, nbytes: int | None = None) -> np.ndarray:
        """The first nbytes (default all) of `buffer` (a wgpu buffer or a Storage) as a new
        uint8 array; waits for the GPU."""
        size = buffer.size if nbytes is None else min(buffer.size, (nbytes + 3) & ~3)
        out = np.empty(size, np.uint8)
        with transfer_progress("download", size) as shown:
            done = 0
            for part, _, n in pieces(buffer, 0, size):  # each part read from its start
                self._read(part, out[done:done + n], shown)
                done += n
        return out

    def _read(self, buffer, out: np.ndarray, shown: TransferProgress) -> None:
        """Read the first out.size bytes of `buffer` into `out`."""
        import wgpu

        size = out.size
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
                mapped = np.frombuffer(source.read_mapped(0, size, copy=False), dtype=np.uint8)
                for start, end in _chunks(size):
                    out[start:end] = mapped[start:end]
                    shown.advance(end - start)
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


def _chunks(nbytes: int) -> list[tuple[int, int]]:
    """[start, end) byte ranges of at most progress.CHUNK_BYTES (a multiple of 8: the
    alignment of mapped writes) covering nbytes."""
    step = max(8, progress.CHUNK_BYTES // 8 * 8)
    if nbytes <= step:
        return [(0, nbytes)]
    return [(start, min(start + step, nbytes)) for start in range(0, nbytes, step)]
