"""Recorded, not submitted (runtime/batching.py): device-resident calls record into the
context's open encoder and return; the work is submitted when the host needs a result, at
the end of an explicit batch, or past a threshold. Results read right in every order,
buffers of pending work are never reused early, threads share the encoder, a failed
submission names the operators whose work it held."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from conftest import assert_bits_equal
from isolated import limited_device, own_device

import gpudml as dml
from gpudml.runtime import batching


def _submissions(device) -> int:
    """Submissions of recorded work made so far on `device`'s context."""
    return device._ctx.recorder.submissions


def _fresh(adapter: str) -> dml.Device:
    """A Device on a context of its own over the shared wgpu device: its recorder, pool and
    counts are the test's alone."""
    return limited_device(adapter)


def test_resident_calls_submit_nothing_until_the_host_reads(adapter):
    dev = _fresh(adapter)
    x = np.arange(64, dtype=np.float32).reshape(8, 8)
    t = dev.tensor(x)
    dev.synchronize()
    start = _submissions(dev)
    y = dml.slice(t, [0, 0], [8, 8], [1, -1])
    z = dml.pad(y, [1, 0], [0, 2], mode="reflection")
    r = dml.reduce(z, "sum", [1])
    assert _submissions(dev) == start and dev._ctx.recorder.pending_dispatches == 3
    np.testing.assert_array_equal(r.numpy(), np.pad(x[:, ::-1], [(1, 0), (0, 2)], "reflect").sum(1, keepdims=True))
    assert _submissions(dev) == start + 1 and dev._ctx.recorder.pending_dispatches == 0  # all three at once
    np.testing.assert_array_equal(y.numpy(), x[:, ::-1])  # nothing left to submit: a plain read
    assert _submissions(dev) == start + 1


@pytest.mark.parametrize("order", ["read", "synchronize", "numpy_call", "batch"])
def test_results_read_right_in_every_order(device, order):
    x = np.random.default_rng(1).random((16, 12), dtype=np.float32)
    t = device.tensor(x)
    want_y, want_r = x[::-1], x[::-1].max(1, keepdims=True)
    if order == "batch":
        with device.batch():
            y = dml.slice(t, [0, 0], [16, 12], [-1, 1])
            r = dml.reduce(y, "max", [1])
    else:
        y = dml.slice(t, [0, 0], [16, 12], [-1, 1])
        r = dml.reduce(y, "max", [1])
    if order == "synchronize":
        device.synchronize()
    elif order == "numpy_call":  # a numpy-returning call submits the work recorded before it too
        np.testing.assert_array_equal(dml.slice(x, [0, 0], [16, 12], [1, -1], device=device), x[:, ::-1])
    assert_bits_equal(r.numpy(), want_r)
    assert_bits_equal(y.numpy(), want_y)


def test_an_input_overwritten_after_recording(device):
    """A call recorded, then its input written by a later call, then read again: each call
    sees the contents of its turn (one encoder, in order)."""
    x = np.arange(32, dtype=np.int32)
    t, u = device.tensor(x), device.tensor(x + 100)
    before = dml.slice(t, [0], [32], [-1])
    copy = device.compile_operator(device.create_operator(dml.ops.spec_named("slice").infer_output(u.desc, [0], [32])))
    copy.execute([u], outputs=[t])  # t := u, after `before` read it
    after = dml.slice(t, [0], [32], [-1])
    np.testing.assert_array_equal(before.numpy(), x[::-1])
    np.testing.assert_array_equal(after.numpy(), (x + 100)[::-1])
    np.testing.assert_array_equal(t.numpy(), x + 100)


def test_a_tensor_dropped_before_submission(adapter):
    """An input and an output dropped while their work is pending: their buffers go back to
    the pool, and the next users (an upload, another call's output) never overwrite what
    the pending work reads or writes."""
    dev = _fresh(adapter)
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    t = dev.tensor(x)
    y = dml.slice(t, [0, 0], [16, 16], [1, -1])
    kept = dml.reduce(y, "sum", [1])
    serial = t.buffer._gpudml_serial
    del t, y  # both buffers back to the pool, their work not yet submitted
    assert dev._ctx.recorder.pending_dispatches == 2
    other = dev.tensor(np.full((16, 16), 7, np.float32))  # takes a pooled buffer: the upload submits first
    assert other.buffer._gpudml_serial == serial or dev._ctx.recorder.pending_dispatches == 0
    again = dml.slice(other, [0, 0], [16, 16], [-1, 1])  # its output: the dropped y's buffer, written later
    np.testing.assert_array_equal(kept.numpy(), x.sum(1, keepdims=True))
    np.testing.assert_array_equal(again.numpy(), np.full((16, 16), 7, np.float32))


def test_the_threshold_submits_recorded_work(adapter, monkeypatch):
    """Outside a batch, FLUSH_DISPATCHES dispatches submit what is recorded; inside one
    nothing does until its end; FLUSH_BYTES bound bytes do too."""
    dev = _fresh(adapter)
    t = dev.tensor(np.ones((4, 4), np.float32))
    dev.synchronize()
    start = _submissions(dev)
    for _ in range(batching.FLUSH_DISPATCHES + 5):
        dml.reduce(t, "sum", [1])
    assert _submissions(dev) == start + 1 and dev._ctx.recorder.pending_dispatches == 5
    dev.synchronize()
    assert _submissions(dev) == start + 2
    with dev.batch():
        for _ in range(2 * batching.FLUSH_DISPATCHES):
            dml.reduce(t, "sum", [1])
        assert _submissions(dev) == start + 2
    assert _submissions(dev) == start + 3
    monkeypatch.setattr(batching, "FLUSH_BYTES", 4 * 4 * 4 + 4 * 4)  # one [4,4] -> [4,1] float32 SUM
    dml.reduce(t, "sum", [1])
    assert _submissions(dev) == start + 4 and dev._ctx.recorder.pending_dispatches == 0


def test_threads_record_into_one_encoder_and_read_their_own_results(device):
    errors = []

    def work(seed):
        try:
            rng = np.random.default_rng(seed)
            x = rng.integers(0, 1000, size=(24, 40)).astype(np.int32)
            t = device.tensor(x)
            for _ in range(20):
                y = dml.slice(t, [0, 0], [24, 40], [1, -1])
                r = dml.reduce(y, "sum", [0])
                if rng.random() < 0.5:
                    device.synchronize()
                np.testing.assert_array_equal(r.numpy(), x.sum(0, keepdims=True)[:, ::-1])
                np.testing.assert_array_equal(y.numpy(), x[:, ::-1])
        except Exception as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors


def test_a_failed_submission_names_the_operators_of_its_work(adapter, monkeypatch):
    """A GPU error discovered when recorded work is submitted names what that work held
    (the calls returned long before)."""
    import wgpu

    dev = own_device(adapter)
    t = dev.tensor(np.arange(16, dtype=np.int32))
    dev.synchronize()
    dml.slice(t, [0], [16], [-1])
    dml.slice(t, [0], [16], [2])
    dml.reduce(t, "sum", [0])

    def fail(buffers, *args, **kwargs):
        raise wgpu.GPUValidationError("Validation Error\n\nCaused by:\n  a test's error")

    monkeypatch.setattr(dev._ctx.device.queue, "submit", fail)
    with pytest.raises(dml.GpuError, match=r"while it ran the work recorded by Slice1 \(2 dispatches\), Reduce "
                                           r"\(1 dispatch\) \(please report it as a gpudml bug\)"):
        dev.synchronize()
    monkeypatch.undo()
    assert dev._ctx.recorder.pending_dispatches == 0  # nothing stale left behind
    np.testing.assert_array_equal(dml.slice(t, [0], [16], [-1]).numpy(), np.arange(16)[::-1])
