"""The adapter's own ceilings, measured with plain kernels (for `gpudml bench`):
an empty dispatch round trip, the best vec4 copy kernel, copy_buffer_to_buffer.

These measure the adapter itself, beside gpudml's runtime: they use its wgpu device
(gpudml internals) with hand-written WGSL, on purpose."""

from __future__ import annotations

import statistics
import time

import numpy as np

from ..runtime.timestamps import TimestampQueries

COPY_KERNEL = """
@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;
@compute @workgroup_size({wg})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {{
    let threads = nwg.x * {wg}u;
    for (var j = 0u; j < {k}u; j++) {{
        let i = gid.x + j * threads;   // neighbours copy neighbours on every step
        if (i < arrayLength(&dst)) {{
            dst[i] = src[i];
        }}
    }}
}}
"""
#: The copy in the other shape (not the yardstick: an anchor beside it): each invocation
#: copies k neighbouring 16-byte blocks. CPU adapters run an invocation's SIMD lanes over
#: their own runs, and on lavapipe this copy is 1.2-1.8x faster than the lane-interleaved
#: one (2 cores, 64 MiB); on GPUs it is the slower shape (lanes no longer coalesce).
RUNS_COPY_KERNEL = """
@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;
@compute @workgroup_size({wg})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {{
    let first = gid.x * {k}u;
    for (var j = 0u; j < {k}u; j++) {{
        let i = first + j;   // each invocation its own run
        if (i < arrayLength(&dst)) {{
            dst[i] = src[i];
        }}
    }}
}}
"""
EMPTY_KERNEL = """
@group(0) @binding(0) var<storage, read_write> dst: array<u32>;
@compute @workgroup_size(1)
fn main() { dst[0] = dst[0] + 1u; }
"""


def median_ms(fn, reps: int, warmup: int = 1, inner: int = 1) -> float:
    """Median wall time of `fn` in ms over `reps` samples, each averaging `inner` calls."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - t0) / inner)
    return statistics.median(samples) * 1e3


def _pipeline(dev, source: str, writable: list[bool]):
    import wgpu

    entries = [{"binding": i, "visibility": wgpu.ShaderStage.COMPUTE,
                "buffer": {"type": wgpu.BufferBindingType.storage if w else wgpu.BufferBindingType.read_only_storage}}
               for i, w in enumerate(writable)]
    layout = dev.create_bind_group_layout(entries=entries)
    pipe = dev.create_compute_pipeline(layout=dev.create_pipeline_layout(bind_group_layouts=[layout]),
                                       compute={"module": dev.create_shader_module(code=source), "entry_point": "main"})
    return pipe, layout


def _dispatch(ctx, pipe, group, groups: int, timestamp_writes=None) -> None:
    dev = ctx.device
    enc = dev.create_command_encoder()
    cpass = enc.begin_compute_pass(timestamp_writes=timestamp_writes)
    cpass.set_pipeline(pipe)
    cpass.set_bind_group(0, group)
    cpass.dispatch_workgroups(groups, 1, 1)
    cpass.end()
    dev.queue.submit([enc.finish()])


def measure(device, reps: int = 9, copy_bytes: int = 64 << 20, quick: bool = False) -> dict:
    """Anchors for `device`'s adapter, as a dict of floats (ms and GB/s)."""
    import wgpu

    ctx = device._ctx
    dev = ctx.device
    out: dict[str, float | str] = {}
    with ctx.lock:
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
        tiny = dev.create_buffer(size=16, usage=usage)
        pipe, layout = _pipeline(dev, EMPTY_KERNEL, [True])
        group = dev.create_bind_group(layout=layout, entries=[{"binding": 0, "resource": {"buffer": tiny}}])

        def empty():
            _dispatch(ctx, pipe, group, 1)
            ctx.wait_idle()

        out["empty_dispatch_ms"] = median_ms(empty, reps, inner=20)

        def hundred():  # the bare floor of recorded work: 100 dispatches in one pass, one submit, one wait
            enc = dev.create_command_encoder()
            cpass = enc.begin_compute_pass()
            cpass.set_pipeline(pipe)
            for _ in range(100):
                cpass.set_bind_group(0, group)
                cpass.dispatch_workgroups(1, 1, 1)
            cpass.end()
            dev.queue.submit([enc.finish()])
            ctx.wait_idle()

        out["dispatch_in_a_pass_ms"] = median_ms(hundred, reps) / 100
    # The best 4-byte readback this adapter allows (the path gpudml itself takes).
    readback = ctx.pool.acquire(16)
    group_rb = dev.create_bind_group(layout=layout, entries=[{"binding": 0, "resource": {"buffer": readback}}])
    out["empty_dispatch_4B_readback_ms"] = median_ms(
        lambda: (_dispatch(ctx, pipe, group_rb, 1), ctx.transfers.download(readback, 4)), reps, inner=20)
    ctx.pool.release(readback)
    with ctx.lock:
        src = dev.create_buffer(size=copy_bytes, usage=usage)
        dst = dev.create_buffer(size=copy_bytes, usage=usage)
        vec4s = copy_bytes // 16
        best = None
        variants = [(256, 16), (256, 4), (64, 4)] if not quick else [(256, 16)]
        for wg, k in variants:
            pipe_c, layout_c = _pipeline(dev, COPY_KERNEL.format(wg=wg, k=k), [False, True])
            group_c = dev.create_bind_group(layout=layout_c, entries=[
                {"binding": 0, "resource": {"buffer": src}}, {"binding": 1, "resource": {"buffer": dst}}])
            groups = -(-vec4s // (wg * k))

            def copy(p=pipe_c, g=group_c, n=groups):
                _dispatch(ctx, p, g, n)
                ctx.wait_idle()

            ms = median_ms(copy, reps)
            out[f"copy_kernel_wg{wg}_k{k}_ms"] = ms
            if best is None or ms < best:
                best, best_variant = ms, f"wg{wg}_k{k}"
        out["copy_kernel_ms"] = best
        out["copy_kernel_best"] = best_variant
        out["copy_kernel_gbps"] = 2 * copy_bytes / best / 1e6
        pipe_r, layout_r = _pipeline(dev, RUNS_COPY_KERNEL.format(wg=64, k=8), [False, True])
        group_r = dev.create_bind_group(layout=layout_r, entries=[
            {"binding": 0, "resource": {"buffer": src}}, {"binding": 1, "resource": {"buffer": dst}}])
        out["copy_kernel_runs_wg64_k8_ms"] = median_ms(
            lambda: (_dispatch(ctx, pipe_r, group_r, -(-vec4s // 512)), ctx.wait_idle()), reps)

        def b2b():
            enc = dev.create_command_encoder()
            enc.copy_buffer_to_buffer(src, 0, dst, 0, copy_bytes)
            dev.queue.submit([enc.finish()])
            ctx.wait_idle()

        ms = median_ms(b2b, reps)
        out["copy_buffer_to_buffer_ms"] = ms
        out["copy_buffer_to_buffer_gbps"] = 2 * copy_bytes / ms / 1e6
        src.destroy()
        dst.destroy()
    host = np.random.default_rng(0).integers(0, 255, size=copy_bytes, dtype=np.uint8)
    buf = ctx.pool.acquire(copy_bytes)
    out["upload_64MiB_ms"] = median_ms(lambda: (ctx.transfers.upload(buf, host), ctx.wait_idle()), reps)
    out["download_64MiB_ms"] = median_ms(lambda: ctx.transfers.download(buf), reps)
    ctx.pool.release(buf)
    return out


class Yardsticks:
    """The empty dispatch and the best copy kernel, to time beside a workload: on a shared
    host the adapter's speed drifts within minutes, so ratios come from samples taken
    side by side, not from anchors measured once."""

    def __init__(self, device, wg: int, k: int, copy_bytes: int = 64 << 20):
        import wgpu

        self.ctx = ctx = device._ctx
        dev = ctx.device
        self.copy_bytes = copy_bytes
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
        with ctx.lock:
            self._tiny = dev.create_buffer(size=16, usage=usage)
            self._empty_pipe, layout = _pipeline(dev, EMPTY_KERNEL, [True])
            self._empty_group = dev.create_bind_group(
                layout=layout, entries=[{"binding": 0, "resource": {"buffer": self._tiny}}])
            self._src = dev.create_buffer(size=copy_bytes, usage=usage)
            self._dst = dev.create_buffer(size=copy_bytes, usage=usage)
            self._copy_pipe, layout_c = _pipeline(dev, COPY_KERNEL.format(wg=wg, k=k), [False, True])
            self._copy_group = dev.create_bind_group(layout=layout_c, entries=[
                {"binding": 0, "resource": {"buffer": self._src}}, {"binding": 1, "resource": {"buffer": self._dst}}])
        self._copy_groups = -(-(copy_bytes // 16) // (wg * k))
        self._queries = None

    @property
    def copy_gbps_bytes(self) -> int:
        """Bytes one copy moves (read and written)."""
        return 2 * self.copy_bytes

    def copy_ms(self) -> tuple[float, str]:
        """One copy kernel's time in ms and its clock: "gpu" (timestamps), or "wall" (submit
        to completion) on adapters without timestamps."""
        if not self.ctx.caps.has("timestamp-query"):
            t0 = time.perf_counter()
            self.copy()
            return (time.perf_counter() - t0) * 1e3, "wall"
        if self._queries is None:
            self._queries = TimestampQueries(self.ctx, 1)
        with self.ctx.lock:
            _dispatch(self.ctx, self._copy_pipe, self._copy_group, self._copy_groups, self._queries.writes(0))
        return self._queries.read(1)[0], "gpu"

    def empty(self) -> None:
        _dispatch(self.ctx, self._empty_pipe, self._empty_group, 1)
        self.ctx.wait_idle()

    def copy(self) -> None:
        _dispatch(self.ctx, self._copy_pipe, self._copy_group, self._copy_groups)
        self.ctx.wait_idle()

    def close(self) -> None:
        for b in (self._tiny, self._src, self._dst):
            b.destroy()
