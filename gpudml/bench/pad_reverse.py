"""Padding and ReverseSubsequences: gpudml against numpy for the same result.

    python -m gpudml.bench.pad_reverse [--adapter vulkan|gl] [--reps 9]

Workloads (float32), as in shared/research/perf_anchors.md (W4, W7):
  pad:     REFLECTION, 16 on each side of both spatial axes, [1,3,1024,1024] -> [1,3,1056,1056]
  reverse: ReverseSubsequences on axis 1 of [64,4096,64], random lengths in [0,4096] of shape [64,1,64]

For each: gpudml device-resident (input and output are device Tensors; execute +
device.synchronize()), gpudml numpy in / numpy out (the functional API: upload, run,
read back), and numpy's own time for the same result (np.pad mode='reflect'; a
vectorized np.take_along_axis gather). Every result is checked bit for bit against
gpudml/reference.py before timing. Times are medians of --reps rounds after a warm-up,
all paths timed round-robin together with a 64 MiB copy kernel (the yardstick of the
data-movement targets), so host load hits them alike; GB/s is logical traffic (every
element read or written counted once) per second.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

import gpudml as dml
from gpudml import reference
from gpudml.ops import padding, reverse_subsequences

#: The best WGSL copy kernel on lavapipe in perf_anchors.md; the data-movement targets are fractions of
#: a copy kernel's bandwidth, which this script also measures in the same run (the host is noisy).
COPY_KERNEL_GBPS = 12.5
COPY_KERNEL_WGSL = """
@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
    let stride = n.x * 256u;
    for (var j = 0u; j < 16u; j++) {
        dst[g.x + j * stride] = src[g.x + j * stride];
    }
}
"""


def median_ms(paths: dict, reps: int, warmup: int = 2) -> dict[str, float]:
    """Median ms of each callable, timed round-robin (one call of each per round) so that
    load from other tenants of the host falls on every path alike."""
    for fn in paths.values():
        for _ in range(warmup):
            fn()
    times: dict[str, list[float]] = {name: [] for name in paths}
    for _ in range(reps):
        for name, fn in paths.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(t) * 1e3 for name, t in times.items()}


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


def copy_kernel(device: dml.Device):
    """(run, bytes moved): the perf_anchors.md best copy kernel (WG=256, 16 strided vec4<u32>
    per invocation) over 64 MiB, on raw wgpu objects of the same adapter: the same-run
    bandwidth yardstick, timed alongside every workload."""
    import wgpu

    dev = device._ctx.device  # the adapter's wgpu device (gpudml internals; fine for a benchmark)
    nbytes = 64 * 2**20
    data = np.random.default_rng(2).integers(0, 2**32, size=nbytes // 4, dtype=np.uint32)
    usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
    src = dev.create_buffer_with_data(data=data, usage=usage)
    dst = dev.create_buffer(size=nbytes, usage=usage)
    pipe = dev.create_compute_pipeline(
        layout="auto", compute={"module": dev.create_shader_module(code=COPY_KERNEL_WGSL), "entry_point": "main"})
    group = dev.create_bind_group(layout=pipe.get_bind_group_layout(0), entries=[
        {"binding": 0, "resource": {"buffer": src}}, {"binding": 1, "resource": {"buffer": dst}}])

    def run():
        encoder = dev.create_command_encoder()
        cpass = encoder.begin_compute_pass()
        cpass.set_pipeline(pipe)
        cpass.set_bind_group(0, group)
        cpass.dispatch_workgroups(nbytes // 16 // 16 // 256)
        cpass.end()
        dev.queue.submit([encoder.finish()])
        device.synchronize()

    run()
    assert np.array_equal(np.frombuffer(dev.queue.read_buffer(dst), np.uint32), data), "copy kernel is wrong"
    return run, 2 * nbytes


def report(name: str, nbytes: int, timings: dict[str, float], copy_bytes: int) -> None:
    numpy_ms = timings["numpy"]
    print(f"\n{name}  ({nbytes / 2**20:.1f} MiB logical traffic)")
    print(f"  {'path':<28}{'ms':>10}{'GB/s':>9}{'numpy/this':>12}")
    for path, ms in timings.items():
        if path == "copy kernel":
            continue
        gbps = nbytes / (ms * 1e-3) / 1e9
        print(f"  {path:<28}{ms:>10.3f}{gbps:>9.2f}{numpy_ms / ms:>11.2f}x")
    copy_gbps = copy_bytes / (timings["copy kernel"] * 1e-3) / 1e9
    dev = nbytes / (timings["gpudml device-resident"] * 1e-3) / 1e9
    print(f"  device-resident = {dev / copy_gbps:.3f}x the copy kernel timed alongside "
          f"({copy_gbps:.2f} GB/s in this run; {COPY_KERNEL_GBPS} GB/s in perf_anchors.md)")


def bench_pad(device: dml.Device, reps: int, copy) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 3, 1024, 1024), dtype=np.float32)
    start, end = [0, 0, 16, 16], [0, 0, 16, 16]
    numpy_pad = lambda: np.pad(x, ((0, 0), (0, 0), (16, 16), (16, 16)), mode="reflect")  # noqa: E731

    desc = padding.infer_output(dml.TensorDesc(dml.DataType.FLOAT32, x.shape), start, end, "reflection")
    compiled = device.compile_operator(device.create_operator(desc))
    x_t, out_t = device.tensor(x), device.empty(desc.output_tensor)

    def resident():
        compiled.execute([x_t], outputs=[out_t])
        device.synchronize()

    host = lambda: dml.pad(x, start, end, mode="reflection", device=device)  # noqa: E731

    want = reference.pad(x, start, end, dml.PaddingMode.REFLECTION)
    resident()
    checks = {"device-resident": out_t.numpy(), "numpy in/out": host(), "np.pad": numpy_pad()}
    for path, got in checks.items():
        assert same_bits(got, want), f"pad: {path} differs from reference.pad"
    timings = median_ms({"gpudml device-resident": resident, "gpudml numpy in/out": host, "numpy": numpy_pad,
                         "copy kernel": copy[0]}, reps)
    report("pad REFLECTION float32 [1,3,1024,1024] +16 on H and W -> [1,3,1056,1056]",
           (x.size + want.size) * 4, timings, copy[1])


def bench_reverse(device: dml.Device, reps: int, copy) -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((64, 4096, 64), dtype=np.float32)
    lengths = rng.integers(0, 4097, size=(64, 1, 64)).astype(np.uint32)
    k = np.arange(x.shape[1], dtype=np.int64).reshape(1, -1, 1)

    def numpy_reverse():
        n = lengths.astype(np.int64)
        return np.take_along_axis(x, np.where(k < n, n - 1 - k, k), axis=1)

    desc = reverse_subsequences.infer_output(
        dml.TensorDesc(dml.DataType.FLOAT32, x.shape), dml.TensorDesc(dml.DataType.UINT32, lengths.shape), 1)
    compiled = device.compile_operator(device.create_operator(desc))
    x_t, lengths_t, out_t = device.tensor(x), device.tensor(lengths), device.empty(desc.output_tensor)

    def resident():
        compiled.execute([x_t, lengths_t], outputs=[out_t])
        device.synchronize()

    host = lambda: dml.reverse_subsequences(x, lengths, 1, device=device)  # noqa: E731

    want = reference.reverse_subsequences(x, lengths, 1)
    resident()
    checks = {"device-resident": out_t.numpy(), "numpy in/out": host(), "numpy gather": numpy_reverse()}
    for path, got in checks.items():
        assert same_bits(got, want), f"reverse: {path} differs from reference.reverse_subsequences"
    timings = median_ms({"gpudml device-resident": resident, "gpudml numpy in/out": host, "numpy": numpy_reverse,
                         "copy kernel": copy[0]}, reps)
    report("reverse_subsequences float32 [64,4096,64] axis 1, lengths [64,1,64] in [0,4096]",
           2 * x.nbytes + lengths.nbytes, timings, copy[1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adapter", default=None, help='"vulkan", "gl" or a name substring (default: auto)')
    parser.add_argument("--reps", type=int, default=9, help="timed runs per path (median; at least 7)")
    args = parser.parse_args(argv)
    reps = max(7, args.reps)
    device = dml.Device(adapter=args.adapter)
    print(f"adapter: {device.adapter_name}; numpy {np.__version__}; median of {reps} after warm-up")
    copy = copy_kernel(device)
    bench_pad(device, reps, copy)
    bench_reverse(device, reps, copy)
    return 0


if __name__ == "__main__":
    sys.exit(main())
