"""The buffer pool of one context: storage buffers kept by size, so that repeated executes
of the same shapes allocate nothing. A Tensor that dies gives its buffer back. A tensor
larger than one buffer may be gets a Storage of several (runtime/storage.py), whose parts
are pooled one by one."""

from __future__ import annotations

import itertools
import threading
from collections import defaultdict

from ..errors import UnsupportedError
from ..tensor_desc import bound_bytes
from . import guard
from .storage import Storage

#: Bytes the pool may keep idle before it frees buffers.
POOL_LIMIT_BYTES = 512 << 20
#: Buffers one tensor may span (a bound on what a mistaken size can ask for; the device's
#: memory is the real limit, and an allocation past it is the GPU's out-of-memory error).
MAX_PARTS = 64

_serials = itertools.count(1)


class BufferPool:
    def __init__(self, ctx, lock: threading.RLock):
        self.ctx = ctx
        self.lock = lock
        self.allocations = 0  # buffers created (tests count them)
        self.limit_bytes = POOL_LIMIT_BYTES  # (an attribute: finalizers may run after module globals are gone)
        self._free: dict = defaultdict(list)
        self._free_bytes = 0
        self._holds = 0  # open batches: recorded commands may name pooled buffers
        self._shrinking = False  # a Tensor finalizer run by GC inside _shrink must not shrink again
        #: What finalizers gave back while another thread held the lock (see release):
        #: buffers for the pool, and wgpu objects to drop; taken in under the lock.
        self._returned: list = []
        self._graveyard: list = []
        #: Every buffer handed out and not given back, by id: the pool holds it strongly, so
        #: that a Tensor collected in a reference cycle never takes its buffer along (the
        #: cycle's finalizers would release the wgpu buffer while the Tensor's own __del__
        #: gives it back to the pool: a released buffer, reused).
        self._lent: dict = {}

    @property
    def mappable(self) -> bool:
        return self.ctx.caps.has("mappable-primary-buffers")

    def usage(self):
        import wgpu

        u = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
        if self.mappable:
            u |= wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.MAP_WRITE
        return u

    def acquire(self, nbytes: int, caps=None, what: str = "a tensor"):
        """A storage buffer of nbytes rounded up to 16 (contents unspecified): kernels may
        bind any buffer as array<vec4<u32>>. Above `caps.buffer_bytes` (caps: the Device's,
        default the adapter's) a Storage of parts of `caps.part_bytes`. The device lacking
        the memory is an OutOfMemoryError naming nbytes and `what` the buffer is for."""
        caps = caps or self.ctx.caps
        size = bound_bytes(nbytes)
        if size > caps.buffer_bytes:
            return self._acquire_parts(size, caps, what)
        with self.lock:
            self._take_in()
            free = self._free.get(size)
            if free:
                buf = free.pop()  # first: GC may run a finalizer (release, shrink) in between
                self._free_bytes -= size
            else:
                buf = self._create(size, nbytes, what)
            self._lent[id(buf)] = buf
            return buf

    def _create(self, size: int, nbytes: int, what: str):
        """A new buffer (under the lock). Out of memory, the idle buffers are freed and the
        allocation tried once more (where nothing recorded may name them); then
        OutOfMemoryError."""
        for attempt in (0, 1):
            try:
                buf = self.create_buffer(size)
            except Exception as exc:
                if not guard.is_out_of_memory(exc) or guard.is_lost_message(str(exc)):
                    raise
                if attempt == 0 and self._free_bytes and not self._holds:
                    self._shrink(0)
                    continue
                raise guard.out_of_memory(self.ctx, exc, nbytes, what) from exc
            self.allocations += 1
            buf._gpudml_serial = next(_serials)
            return buf

    def create_buffer(self, size: int):
        """The one place the pool asks wgpu for a buffer (tests replace it to fail)."""
        return self.ctx.device.create_buffer(size=size, usage=self.usage())

    def lent_totals(self) -> tuple[int, int]:
        """(buffers, bytes) lent out and not given back: held by Tensors and compiled operators."""
        lent = list(self._lent.values())  # (a copy: finalizers may change it meanwhile)
        return len(lent), sum(b.size for b in lent)

    def _acquire_parts(self, size: int, caps, what: str) -> Storage:
        part = caps.part_bytes
        count = -(-size // part)
        limit = caps.max_buffer_size * MAX_PARTS
        if size > limit:
            raise UnsupportedError(
                f"gpudml: {what} of {size} bytes would take {count} buffers of the adapter's max-buffer-size "
                f"{caps.max_buffer_size} ({caps.name}), more than the {MAX_PARTS} one tensor may span (at most "
                f"{limit} bytes); work on smaller pieces (a smaller batch)")
        parts = []
        try:
            for k in range(count):
                share = f"part {k + 1} of {count} ({size} bytes in all) of {what}"
                parts.append(self.acquire(min(part, size - k * part), caps, share))
        except BaseException:
            for buf in parts:
                self.release(buf)
            raise
        return Storage(parts, part, next(_serials))

    def release(self, buffer) -> None:
        """Give a buffer back to the pool. Reuse is safe at once: recorded dispatches run in
        order, and every upload submits recorded work first. Destroying is not (a recorded
        command may still name the buffer), so the pool shrinks only when nothing holds it.

        Never waits for the lock: finalizers call this in whatever thread the garbage
        collector runs, and that may be a thread another one waits for while holding the
        lock (wgpu-py starting a device's poll thread inside request_device: a deadlock,
        seen in CI). Then the buffer is handed over and taken in by the next holder."""
        if isinstance(buffer, Storage):
            self._returned.extend(buffer.parts)  # (atomic)
        else:
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

    def hold(self) -> None:
        """Recorded commands may name pooled buffers from now on: keep them all alive."""
        with self.lock:
            self._holds += 1

    def unhold(self) -> None:
        with self.lock:
            self._holds -= 1
            if not self._holds:
                self._shrink(self.limit_bytes)

    def _take_in(self) -> None:
        """Under the lock: pool the buffers handed over, drop the objects (drop_later)."""
        while self._graveyard:
            self._graveyard.pop()
        returned = False
        while self._returned:
            buffer = self._returned.pop()
            self._lent.pop(id(buffer), None)
            self._free[buffer.size].append(buffer)
            self._free_bytes += buffer.size
            returned = True
        if returned and not self._holds:
            self._shrink(self.limit_bytes)

    def _shrink(self, limit: int) -> None:
        if self._shrinking or self._free_bytes <= limit:
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
            if not self._holds:
                self._shrink(0)

    @property
    def pooled_bytes(self) -> int:
        """Bytes of idle buffers in the pool, those handed over by finalizers included."""
        with self.lock:
            self._take_in()
            return self._free_bytes
