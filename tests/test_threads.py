"""Threads: one Device used from several threads at once (see docs/threading.md).

Four threads share the fixture's Device (each adapter) and run mixed operators, numpy and
Tensor paths, one of them inside device.batch(), checking every result against
reference.py. A thread that does not finish in time is a hang, and fails the test.

Long run (more threads and rounds; run it on a loaded machine too, where the OpenGL
adapter used to abort the process before the process-wide wgpu lock):
    GPUDML_THREADS=8 GPUDML_THREAD_ROUNDS=2000 python -m pytest -q tests/test_threads.py
"""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest
from conftest import assert_bits_equal, get_device, random_bits

import gpudml as dml
from gpudml import reference
from gpudml.ops.reduce import infer_output as reduce_desc
from gpudml.ops.slice1 import infer_output as slice_desc

THREADS = int(os.environ.get("GPUDML_THREADS", 4))
ROUNDS = int(os.environ.get("GPUDML_THREAD_ROUNDS", 60))
TIMEOUT_S = 120 * max(1, ROUNDS // 60)


def run_threads(target, count: int = THREADS) -> None:
    """Run target(index) in `count` threads started together; re-raise the first failure."""
    barrier = threading.Barrier(count)
    errors: list[BaseException] = []

    def body(i):
        try:
            barrier.wait()
            target(i)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(i,), daemon=True) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT_S)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0]


def _one_round(device, rng, batched: bool) -> None:
    """One round of mixed operators with fresh random inputs, checked against reference.py."""
    shape = [int(n) for n in rng.integers(1, 9, size=int(rng.integers(1, 5)))]
    dtype = [np.uint8, np.float16, np.int32, np.float32, np.uint64][int(rng.integers(0, 5))]
    x = random_bits(rng, dtype, shape)
    rank = len(shape)
    offsets = [int(rng.integers(0, n)) for n in shape]
    sizes = [n - o for n, o in zip(shape, offsets)]
    strides = [int(rng.choice([1, 2, -1, -3])) for _ in shape]
    start, end = [int(v) for v in rng.integers(0, 4, rank)], [int(v) for v in rng.integers(0, 4, rank)]
    axis = int(rng.integers(0, rank))
    lengths = rng.integers(0, shape[axis] + 2, size=[1 if a == axis else n for a, n in enumerate(shape)])
    lengths = lengths.astype(np.uint32)

    # numpy in, numpy out
    assert_bits_equal(dml.slice(x, offsets, sizes, strides, device=device),
                      reference.slice(x, offsets, sizes, strides))
    assert_bits_equal(dml.pad(x, start, end, mode="symmetric", device=device),
                      reference.pad(x, start, end, "symmetric"))
    # Tensor in, Tensor out (chained on the GPU), optionally inside a batch
    t = device.tensor(x)
    if batched:
        with device.batch():
            r = dml.reverse_subsequences(t, lengths, axis)
            p = dml.pad(r, start, end, mode="edge")
    else:
        r = dml.reverse_subsequences(t, lengths, axis)
        p = dml.pad(r, start, end, mode="edge")
    want_r = reference.reverse_subsequences(x, lengths, axis)
    assert_bits_equal(r.numpy(), want_r)
    assert_bits_equal(p.numpy(), reference.pad(want_r, start, end, "edge"))
    # Reduce (exact functions on any bits: MIN/MAX, ARGMAX)
    got = dml.reduce(x, "argmax", [axis], device=device)
    np.testing.assert_array_equal(got, reference.reduce(x, "argmax", [axis]))
    got = dml.reduce(t, "max", None).numpy()
    np.testing.assert_array_equal(got, reference.reduce(x, "max", None))


@pytest.mark.slow
def test_four_threads_share_one_device(device):
    def work(i):
        rng = np.random.default_rng([i, 7])
        for k in range(ROUNDS):
            _one_round(device, rng, batched=(i % 4 == 3 and k % 2 == 0))

    run_threads(work)


def test_threads_share_one_compiled_operator(device):
    """The same CompiledOperator (a two-pass reduction with scratch, and a slice) executed
    from four threads at once."""
    x_shape = (5, 20_000)
    desc = reduce_desc(dml.TensorDesc(dml.DataType.FLOAT32, x_shape), "sum", [1])
    reduce_op = device.compile_operator(device.create_operator(desc))
    assert len(reduce_op.wgsl) == 2  # partial results in a shared scratch buffer
    desc = slice_desc(dml.TensorDesc(dml.DataType.INT16, [64, 64]), [0, 0], [64, 64], [-1, 2])
    slice_op = device.compile_operator(device.create_operator(desc))

    def work(i):
        rng = np.random.default_rng([i, 9])
        for _ in range(25):
            x = rng.integers(-8, 8, size=x_shape).astype(np.float32)  # exact sums
            (got,) = reduce_op.execute([x])
            np.testing.assert_array_equal(got, x.sum(1, keepdims=True))
            y = rng.integers(-30000, 30000, size=(64, 64)).astype(np.int16)
            (out,) = slice_op.execute([device.tensor(y)])
            np.testing.assert_array_equal(out.numpy(), y[::-1, ::2])

    run_threads(work)


def test_default_device_is_one_device_across_threads(monkeypatch):
    from gpudml.device import device as device_module

    monkeypatch.setattr(device_module, "_DEFAULT", None)
    seen = []
    run_threads(lambda i: seen.append(dml.default_device()), 8)
    assert len({id(d) for d in seen}) == 1


def test_wgpu_poll_thread_takes_the_context_lock(device):
    """wgpu-py polls the device from a thread of its own; on OpenGL a thread that waits more
    than a second for the GL context aborts the process (wgpu-hal panics), so that thread's
    polls are serialized with every other wgpu call by the context lock."""
    ctx = device._ctx
    poll = ctx.device._poller._poll_func
    polled = threading.Event()
    with ctx.lock:
        poller = threading.Thread(target=lambda: (poll(False), polled.set()), daemon=True)
        poller.start()
        assert not polled.wait(0.3)  # waiting for the lock, not for the GL context
    assert polled.wait(TIMEOUT_S)


def test_mapping_never_waits_for_the_poll_thread(device):
    """Readbacks poll the device themselves while holding the lock the poll thread needs:
    many readbacks in a row, some while another thread also reads back, never block."""
    t = device.tensor(np.arange(1 << 17, dtype=np.uint32))  # above the mapped-transfer threshold
    run_threads(lambda i: [np.testing.assert_array_equal(t.numpy()[:4], [0, 1, 2, 3]) for _ in range(20)])


def test_gpu_timer_reads_back_without_the_poll_thread(device):
    from gpudml.bench.timer import GpuTimer

    if not device.caps.has("timestamp-query"):
        return
    x = device.tensor(np.zeros(4096, np.float32))
    with GpuTimer(device) as timer:
        dml.slice(x, [0], [4096], [-1])
    device.synchronize()
    (ms,) = timer.milliseconds()
    assert ms >= 0


def test_two_devices_on_one_adapter_and_enumeration_from_threads(adapter):
    """wgpu's OpenGL backend shares one EGL context between all adapter objects: two wgpu
    devices on it (the shared one and a private one), used from two threads while a third
    enumerates adapters, aborted the process (EGL BadAccess) before every wgpu call ran
    under one process-wide lock."""
    from isolated import own_device

    from gpudml.runtime import adapters

    devices = [get_device(adapter), own_device(adapter)]

    def work(i):
        if i == 2:
            for _ in range(15):
                adapters.enumerate_adapters()
            return
        dev, rng = devices[i], np.random.default_rng(i)
        for _ in range(40):
            x = rng.integers(0, 255, size=(64, 33), dtype=np.uint8)
            np.testing.assert_array_equal(dml.slice(x, [0, 0], [64, 33], [-1, 2], device=dev), x[::-1, ::2])
            np.testing.assert_array_equal(dml.reduce(dev.tensor(x), "max", [1]).numpy(), x.max(1, keepdims=True))

    run_threads(work, 3)


def test_finalizers_never_wait_for_the_lock(device):
    """The garbage collector runs finalizers in any thread, also in one that another thread
    waits for while it holds the wgpu lock (wgpu-py starts a device's poll thread inside
    request_device, under the lock: a deadlock in CI). A dying Tensor and CompiledOperator
    hand their buffers and wgpu objects over; the next holder of the lock takes them in."""
    memory = device._ctx.pool
    tensor = device.tensor(np.zeros(1000, np.float32))
    buffer = tensor.buffer
    desc = slice_desc(dml.TensorDesc(dml.DataType.FLOAT32, [1000]), [0], [1000], [-1])
    holder = [device.compile_operator(device.create_operator(desc))]
    holder[0].execute([tensor])
    finished = threading.Event()

    def die():
        tensor.free()  # what its death does: BufferPool.release
        holder.pop()  # the CompiledOperator's last reference: __del__ runs here
        finished.set()

    with memory.lock:
        threading.Thread(target=die, daemon=True).start()
        assert finished.wait(10), "a finalizer waited for the lock"
        assert any(b is buffer for b in memory._returned)
    assert memory.pooled_bytes >= buffer.size  # taken in by the next holder
    assert any(b is buffer for b in memory._free[buffer.size]) and not memory._returned
    assert not memory._graveyard  # the operator's wgpu objects dropped there
