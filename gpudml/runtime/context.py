"""GpuContext: one wgpu device per adapter, its capabilities, its memory (buffer pool,
transfers, recording) and its pipeline cache.

Several `Device`s (say, at different feature levels) on the same adapter share
one context, so they share compiled pipelines.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

from ..caps import PACKED_DOT, PACKED_DOT_PROBE, WANTED_FEATURES, Caps
from ..errors import InternalError, UnsupportedError
from . import adapters as _adapters
from . import guard
from .batching import Recorder
from .pool import BufferPool
from .transfers import Transfers

#: Limits raised to the adapter's maximum (wgpu's defaults are lower).
RAISED_LIMITS = (
    "max-storage-buffer-binding-size", "max-buffer-size", "max-compute-workgroups-per-dimension",
    "max-compute-invocations-per-workgroup", "max-compute-workgroup-storage-size",
    "max-compute-workgroup-size-x", "max-storage-buffers-per-shader-stage",
)


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    compile_seconds: float = 0.0


#: Compute pipelines kept per context (least recently used first out). A software adapter
#: holds about 1 MB of compiled code per pipeline; the conformance kit compiles some 11,000
#: distinct kernels per process, which unbounded took 10 GB per test worker.
PIPELINE_CACHE_SIZE = 1024


@dataclass
class Pipeline:
    """A compute pipeline and its bind group layout."""

    pipeline: object
    layout: object


@dataclass
class GpuContext:
    adapter: object
    device: object
    caps: Caps
    stats: CacheStats = field(default_factory=CacheStats)
    _pipelines: OrderedDict = field(default_factory=OrderedDict)
    lock: threading.RLock = field(default=_adapters.WGPU_LOCK)  # one for all contexts (adapters.py)
    pool: BufferPool = field(init=False)
    recorder: Recorder = field(init=False)
    transfers: Transfers = field(init=False)
    lost: bool = False  # set once wgpu reports the device lost (runtime/guard.py)
    lost_reason: str = ""

    def __post_init__(self):
        self.pool = BufferPool(self, self.lock)
        self.recorder = Recorder(self, self.lock, self.pool)
        self.transfers = Transfers(self, self.lock, self.recorder)

    def mark_lost(self, reason: str = "") -> None:
        """Remember that the device is gone and forget this context, so that the next
        Device on the adapter opens a fresh wgpu device."""
        self.lost = True
        self.lost_reason = self.lost_reason or reason
        # No _CONTEXTS_LOCK: this may run under the wgpu lock, which get_context takes
        # while holding _CONTEXTS_LOCK. Single dict operations are atomic.
        for key, ctx in list(_CONTEXTS.items()):
            if ctx is self:
                _CONTEXTS.pop(key, None)

    def pipeline(self, source: str) -> Pipeline:
        """The compute pipeline of a WGSL source the builder made (compiled once per context)."""
        with self.lock:
            hit = self._pipelines.get(source)
            if hit is not None:
                self.stats.hits += 1
                self._pipelines.move_to_end(source)
                return hit
            t0 = time.perf_counter()
            entry = self._compile(source)
            self.stats.compile_seconds += time.perf_counter() - t0
            self.stats.misses += 1
            self._pipelines[source] = entry
            while len(self._pipelines) > PIPELINE_CACHE_SIZE:
                # The least recently used one goes: compiled operators still holding it keep it
                # (and recorded commands keep what they use), the rest is freed by the next
                # holder of the lock (pool.drop_later: a GL context is not released under
                # another thread's hold).
                self.pool.drop_later([self._pipelines.popitem(last=False)[1]])
            return entry

    def _compile(self, source: str) -> Pipeline:
        """The pipeline of a source the builder made: the adapter rejecting it is a gpudml bug."""
        def rejected(exc):
            return InternalError(
                f"gpudml: the adapter {self.caps.name} rejected a generated shader (a gpudml bug; please "
                f"report it with this message): {exc}\n{numbered(source)}")
        return self.create_pipeline(source, "main", rejected)

    def create_pipeline(self, source: str, entry_point: str, rejected) -> Pipeline:
        """A compute pipeline (not cached), with the layout wgpu derives from the shader: the
        builder's entry point uses every binding (builder._entry), so it holds all of them. (An
        explicit layout costs a first process some 75 ms more: wgpu-py's C types for it.) What
        the adapter rejects raises `rejected(exception)`; a lost device, DeviceLostError."""
        dev = self.device
        try:
            with self.lock:
                module = dev.create_shader_module(code=source)
                pipeline = dev.create_compute_pipeline(layout="auto", compute={"module": module,
                                                                               "entry_point": entry_point})
                layout = pipeline.get_bind_group_layout(0)
        except Exception as exc:
            if self.lost or guard.is_lost_message(str(exc)):
                raise guard.translate(self, exc) from exc
            raise rejected(exc) from exc
        return Pipeline(pipeline, layout)

    def uniform_buffer(self, data: bytes):
        """A buffer of uniforms holding `data` (made once, bound as is)."""
        import wgpu  # (lazily, as the rest of the runtime: importing gpudml stays light)

        with self.lock:
            return self.device.create_buffer_with_data(data=data, usage=wgpu.BufferUsage.UNIFORM
                                                       | wgpu.BufferUsage.COPY_DST)

    def bind_group(self, pipeline: Pipeline, resources: dict):
        """A bind group of `pipeline`'s layout: {binding: resource}, a resource a
        storage.storage_range or a buffer bound whole (a uniform buffer), in that order."""
        entries = [{"binding": k, "resource": r if isinstance(r, dict) else {"buffer": r}}
                   for k, r in resources.items()]
        with self.lock:
            return self.device.create_bind_group(layout=pipeline.layout, entries=entries)

    @property
    def driver(self) -> str:
        """The adapter's driver, as wgpu describes it."""
        return str(self.adapter.info.get("description", ""))

    def wait_idle(self) -> None:
        """Block, on the calling thread, until all submitted work has finished: a blocking
        device poll (wgpuDevicePoll with wait; never a promise of wgpu-py's poll thread, whose
        back-off costs 85-150 us against 13 us on lavapipe)."""
        with self.lock:  # a wgpu call like any other (see _poll_under_lock)
            self.device._poll_wait()


def numbered(source: str) -> str:
    """The source with line numbers, as compiler messages count them."""
    lines = source.splitlines()
    width = len(str(len(lines)))
    return "\n".join(f"{i:>{width}}  {line}" for i, line in enumerate(lines, start=1))


_CONTEXTS: dict[str, GpuContext] = {}
_CONTEXTS_LOCK = threading.Lock()
#: Every context ever created, lost ones included, kept for the life of the process:
#: wgpu-py releasing a device stops its poll thread with a one-second join and then frees
#: the device even if the thread is still polling it (a crash, seen under load). Contexts
#: are few: one per adapter, plus one per device loss.
_ALIVE: list[GpuContext] = []


def get_context(request: str | None) -> GpuContext:
    """The shared context of the adapter `request` names (see adapters.choose_adapter)."""
    adapter = _adapters.choose_adapter(request)
    key = adapter.summary
    with _CONTEXTS_LOCK:
        ctx = _CONTEXTS.get(key)
        if ctx is None:
            ctx = _create_context(adapter)
            _CONTEXTS[key] = ctx
        return ctx


def _create_context(adapter) -> GpuContext:
    features = [f for f in WANTED_FEATURES if f in adapter.features]
    if str(adapter.info.get("adapter_type", "")) == "DiscreteGPU":
        # Buffers mappable by the host live in host-visible memory on a discrete GPU: every
        # kernel would read them over PCIe (downloading 64 MiB took 3 s on an H100). Staging
        # buffers instead (runtime/transfers.py).
        features = [f for f in features if f != "mappable-primary-buffers"]
    limits = {k: adapter.limits[k] for k in RAISED_LIMITS if k in adapter.limits}
    try:
        with _adapters.WGPU_LOCK:
            device = adapter.request_device_sync(required_features=features, required_limits=limits)
    except Exception as exc:
        raise UnsupportedError(
            f"gpudml: could not open a device on {adapter.summary} ({exc}); {_adapters.INSTALL_HINT}") from exc
    lim = device.limits
    with _adapters.WGPU_LOCK:
        languages = {PACKED_DOT} if probe_packed_dot(device) else set()
    caps = Caps(
        name=adapter.summary,
        backend=str(adapter.info.get("backend_type", "")),
        adapter_type=str(adapter.info.get("adapter_type", "")),
        features=frozenset(str(f) for f in device.features) | languages,
        max_workgroups_per_dimension=lim["max-compute-workgroups-per-dimension"],
        max_storage_binding_size=lim["max-storage-buffer-binding-size"],
        max_buffer_size=lim["max-buffer-size"],
        max_invocations_per_workgroup=lim["max-compute-invocations-per-workgroup"],
        max_workgroup_storage_size=lim["max-compute-workgroup-storage-size"],
        max_storage_buffers_per_shader_stage=lim["max-storage-buffers-per-shader-stage"],
        min_storage_offset_alignment=lim.get("min-storage-buffer-offset-alignment", 256),
    )
    ctx = GpuContext(adapter=adapter, device=device, caps=caps)
    _poll_under_lock(device, ctx.lock)
    _ALIVE.append(ctx)  # (atomic; get_context may hold _CONTEXTS_LOCK here)
    return ctx


def probe_packed_dot(device) -> bool:
    """Does `device` compile WGSL's dot4I8Packed (caps.PACKED_DOT)?"""
    try:
        device.create_shader_module(code=PACKED_DOT_PROBE)
    except Exception:  # noqa: BLE001 (wgpu raises its own error types for a refused shader)
        return False
    return True


def _poll_under_lock(device, lock) -> None:
    """Make wgpu-py's poll thread take the wgpu lock (adapters.WGPU_LOCK) for each poll.

    wgpu-py polls a device from a thread of its own while a promise (a buffer mapping) is
    pending. On OpenGL, wgpu-hal aborts the whole process (a panic across the FFI
    boundary) when a thread finds the EGL context current in another thread (BadAccess)
    or waits more than one second for it, which another thread holds for as long as a
    dispatch, a shader compile or a wait takes (seconds on a loaded machine: the long fuzz
    run hit both). Every gpudml wgpu call runs under the wgpu lock; with the poll thread's
    calls under it too, no two threads ever use the GL context at once. The rule that
    follows: runtime code never waits for the poll thread (map_sync, read_buffer,
    GPUPromise.sync_wait on a pending promise) while holding the lock; it polls itself
    (Transfers.map)."""
    poller = getattr(device, "_poller", None)
    poll = getattr(poller, "_poll_func", None)
    if poll is None:
        return

    def poll_under_lock(block, poll=poll, lock=lock):
        with lock:
            poll(block)

    poller._poll_func = poll_under_lock
