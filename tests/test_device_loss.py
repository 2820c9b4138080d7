"""Device loss, out of memory and adapter failure: clear DMLErrors naming the adapter and
what to do, never a bare wgpu traceback. Loss is simulated by destroying the wgpu device of a
private context (the fixtures' shared devices are untouched); out of memory by the pool's
allocation seam failing as lavapipe fails, and for real in a process whose address space is
capped."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest
from conftest import run_python
from isolated import limited_device, lose, own_device

import gpudml as dml
from gpudml import cli
from gpudml.ops.reduce import infer_output as reduce_desc
from gpudml.ops.slice1 import infer_output as slice_desc
from gpudml.runtime import adapters, guard

HINT = "mesa-vulkan-drivers"


def _assert_lost(exc_info, dev) -> None:
    exc = exc_info.value
    assert type(exc) is dml.DeviceLostError
    assert isinstance(exc, dml.GpuError) and isinstance(exc, dml.DMLError) and isinstance(exc, RuntimeError)
    message = str(exc)
    assert dev.adapter_name in message and "was lost" in message, message
    assert "create a new gpudml.Device" in message and HINT in message, message


def test_every_entry_point_after_loss_raises_device_lost(adapter):
    dev = own_device(adapter)
    x = np.arange(16, dtype=np.float32)
    np.testing.assert_array_equal(dml.slice(x, [0], [16], [-1], device=dev), x[::-1])
    t = dev.tensor(x)
    desc = slice_desc(t.desc, [0], [16], [2])
    op = dev.create_operator(desc)
    compiled = dev.compile_operator(op)
    lose(dev)

    calls = {
        "functional (cached operator)": lambda: dml.slice(x, [0], [16], [-1], device=dev),
        "functional (new operator)": lambda: dml.pad(x, [1], [1], device=dev),
        "compile_operator": lambda: dev.compile_operator(op),
        "execute": lambda: compiled.execute([t]),
        "tensor": lambda: dev.tensor(x),
        "empty": lambda: dev.empty(desc.output_tensor),
        "Tensor.numpy": lambda: t.numpy(),
        "Tensor.raw": lambda: t.raw(),
        "synchronize": lambda: dev.synchronize(),
        "batch": lambda: dev.batch().__enter__(),
    }
    for name, call in calls.items():
        with pytest.raises(dml.DMLError) as info:
            call()
        _assert_lost(info, dev)
        assert name
    assert dev._ctx.lost
    # Validation needs no GPU: still InvalidArgumentError, not DeviceLostError.
    with pytest.raises(dml.InvalidArgumentError):
        dml.slice(x, [0], [17], device=dev)


def test_wgpu_error_stays_attached_as_the_cause(adapter):
    dev = own_device(adapter)
    lose(dev)
    with pytest.raises(dml.DeviceLostError) as info:
        dev.tensor(np.zeros(4, np.float32))
    assert type(info.value.__cause__).__module__.startswith("wgpu")


def test_loss_inside_a_batch(adapter):
    """The batch's submit fails, naming the work it held; no stale encoder stays behind for
    later work (regression: it did, and work recorded into it was never submitted)."""
    dev = own_device(adapter)
    t = dev.tensor(np.arange(8, dtype=np.int32))
    with pytest.raises(dml.DeviceLostError, match=r"lost while it ran the work recorded by Slice1 \(1 dispatch\)"):
        with dev.batch():
            dml.slice(t, [0], [8], [-1])
            lose(dev)
    assert dev._ctx.recorder._batches == 0 and dev._ctx.recorder._pending is None


def test_dropping_tensors_of_a_lost_device_is_quiet(adapter, monkeypatch):
    """Finalizers of Tensors and compiled operators on a lost device raise nothing."""
    import gc

    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    dev = own_device(adapter)
    tensors = [dev.tensor(np.zeros(n, np.uint8)) for n in (4, 400, 40_000)]
    compiled = dev.compile_operator(dev.create_operator(
        reduce_desc(dml.TensorDesc(dml.DataType.FLOAT32, [3, 200_000]), "sum", [1])))
    lose(dev)
    del tensors, compiled
    gc.collect()
    dev._ctx.pool.trim()
    assert not unraisable, [u.exc_value for u in unraisable]


def test_a_new_device_after_loss_works(adapter):
    """A lost context is dropped from the shared table: the next Device opens a fresh one,
    and default_device() replaces a lost default."""
    from gpudml.device import device as device_module
    from gpudml.runtime import context

    dev = own_device(adapter)
    key = dev._ctx.caps.name
    shared = context._CONTEXTS.get(key)
    context._CONTEXTS[key] = dev._ctx  # pretend the lost context was the shared one
    saved_default = device_module._DEFAULT
    try:
        device_module._DEFAULT = dev
        lose(dev)
        with pytest.raises(dml.DeviceLostError):
            dev.tensor(np.zeros(4, np.float32))
        assert context._CONTEXTS.get(key) is not dev._ctx
        fresh = dml.Device(adapter=adapter)
        assert fresh._ctx is not dev._ctx and not fresh._ctx.lost
        np.testing.assert_array_equal(dml.slice(np.arange(4, dtype=np.int8), [0], [4], [-1], device=fresh),
                                      [3, 2, 1, 0])
        assert dml.default_device() is not dev and not dml.default_device()._ctx.lost
    finally:
        device_module._DEFAULT = saved_default
        if shared is not None:
            context._CONTEXTS[key] = shared
        else:
            context._CONTEXTS.pop(key, None)


def test_translation_of_other_wgpu_errors():
    """Out of memory and unexpected wgpu errors become GpuError naming the adapter."""
    import wgpu

    caps = types.SimpleNamespace(name="Test Adapter", max_buffer_size=1 << 31, max_storage_binding_size=1 << 27)
    ctx = types.SimpleNamespace(caps=caps, lost=False, lost_reason="", mark_lost=lambda reason: None)
    oom = guard.translate(ctx, wgpu.GPUOutOfMemoryError("Out of memory"))
    assert type(oom) is dml.OutOfMemoryError and "Test Adapter ran out of memory" in str(oom)
    # wgpu-native reports lavapipe's failed allocation as a validation error: out of memory too
    oom = guard.translate(ctx, wgpu.GPUValidationError(NOT_ENOUGH))
    assert type(oom) is dml.OutOfMemoryError and "(wgpu: Not enough memory left.)" in str(oom)
    other = guard.translate(ctx, wgpu.GPUValidationError("Validation Error\n\nCaused by:\n  In x\n    bad"))
    assert type(other) is dml.GpuError and "Test Adapter" in str(other) and "gpudml bug" in str(other)
    lost = guard.translate(ctx, wgpu.GPUValidationError("Validation Error\n\nCaused by:\n    Parent device is lost"))
    assert type(lost) is dml.DeviceLostError and "(Parent device is lost)" in str(lost)


# ------------------------------------------------------------------ out of memory
#: What wgpu-native raises when lavapipe cannot allocate a buffer (seen for real below).
NOT_ENOUGH = "Validation Error\n\nCaused by:\n  In wgpuDeviceCreateBuffer\n    Not enough memory left.\n"


def _failing_pool(monkeypatch, dev, at_least: int, times: int = 1 << 30) -> list:
    """Make `dev`'s pool fail, as lavapipe does, to allocate buffers of `at_least` bytes or
    more, the first `times` times; returns the sizes it refused."""
    import wgpu

    pool, refused = dev._ctx.pool, []
    create = pool.create_buffer

    def failing(size):
        if size >= at_least and len(refused) < times:
            refused.append(size)
            raise wgpu.GPUValidationError(NOT_ENOUGH)
        return create(size)
    monkeypatch.setattr(pool, "create_buffer", failing)
    return refused


def _assert_out_of_memory(exc, dev, nbytes: int, what: str) -> str:
    assert type(exc) is dml.OutOfMemoryError
    assert isinstance(exc, MemoryError) and isinstance(exc, dml.GpuError) and isinstance(exc, dml.DMLError)
    message = str(exc)
    caps = dev.caps
    assert message.startswith(f"gpudml: {dev.adapter_name} ran out of memory allocating {nbytes} bytes "), message
    assert f"for {what} (wgpu: Not enough memory left.)" in message, message
    assert f"buffers of at most {caps.max_buffer_size} bytes (max-buffer-size" in message, message
    assert f"bindings of at most {caps.max_storage_binding_size} bytes (max-storage-buffer-binding-size)" in message
    assert "Free the Tensors you no longer need" in message and "a smaller batch" in message, message
    assert "gpudml bug" not in message and "\n" not in message, message
    assert type(exc.__cause__).__module__.startswith("wgpu")
    return message


def test_out_of_memory_names_the_allocation_and_the_limits(adapter, monkeypatch):
    dev = limited_device(adapter, shared_pipelines=True)  # a pool of its own
    x = np.ones((64, 64), np.float32)
    refused = _failing_pool(monkeypatch, dev, at_least=x.nbytes)
    with pytest.raises(dml.OutOfMemoryError) as info:
        dml.reduce(x, "sum", axes=[1], device=dev)  # the input's upload is the first buffer
    message = _assert_out_of_memory(info.value, dev, x.nbytes, "an input (FLOAT32 [64, 64]) uploaded for Reduce")
    assert "gpudml holds 0 bytes (0.0 KiB) in 0 buffers" in message and "(16.0 KiB)" in message, message
    # An operator's output names the operator and the field; the input uploaded before it is held.
    t = dev.tensor(np.ones(16, np.float32))
    monkeypatch.undo()
    _failing_pool(monkeypatch, dev, at_least=16 * 4 * 4)
    compiled = dev.compile_operator(dev.create_operator(dml.TileOperatorDesc(
        dml.TensorDesc(dml.DataType.FLOAT32, [16]), dml.TensorDesc(dml.DataType.FLOAT32, [64]), [4])))
    with pytest.raises(dml.OutOfMemoryError) as info:
        compiled.execute([t])
    message = _assert_out_of_memory(info.value, dev, 256, "Tile's output_tensor (FLOAT32 [64])")
    assert "gpudml holds 64 bytes (0.1 KiB) in 1 buffer lent" in message, message
    # Nothing is left half made, and the device stays usable once memory is there again.
    monkeypatch.undo()
    assert np.array_equal(compiled.execute([t])[0].numpy(), np.ones(64, np.float32))
    assert np.array_equal(dml.reduce(x, "sum", axes=[1], device=dev), np.full((64, 1), 64, np.float32))
    assert refused


def test_out_of_memory_frees_the_idle_pool_and_tries_again(adapter, monkeypatch):
    dev = limited_device(adapter, shared_pipelines=True)
    dev.tensor(np.zeros(1024, np.float32)).free()  # 4 KiB idle in the pool
    assert dev._ctx.pool.pooled_bytes == 4096
    refused = _failing_pool(monkeypatch, dev, at_least=8192, times=1)
    t = dev.tensor(np.arange(2048, dtype=np.float32))
    assert refused == [8192] and dev._ctx.pool.pooled_bytes == 0
    assert np.array_equal(t.numpy(), np.arange(2048, dtype=np.float32))


#: A process whose address space is capped 256 MiB above what it uses: a 64 MiB tensor
#: after another fails in the driver's allocation, for real (nothing near the machine's memory).
_REAL = """
import resource, sys
import numpy as np
import gpudml as dml
dev = dml.Device(adapter=sys.argv[1])
dml.pad(np.ones(4, np.float32), [1], [1], device=dev)  # the device, its threads and a pipeline: made
host = np.zeros(16 << 20, np.float32)
used = [int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmSize")][0]
resource.setrlimit(resource.RLIMIT_AS, (used + (256 << 20), resource.RLIM_INFINITY))
held = []
try:
    for _ in range(8):
        held.append(dev.tensor(host))
    print("no error")
except dml.OutOfMemoryError as exc:
    print("OutOfMemoryError:", exc)
held.clear()
print("after:", dml.pad(np.ones(4, np.float32), [1], [1], device=dev).tolist())
"""


def test_out_of_memory_for_real(adapter):
    if adapter == "gl":
        pytest.skip("wgpu's GL backend loses the device when llvmpipe cannot allocate (a DeviceLostError)")
    res = run_python(f"import sys; sys.argv[1:] = [{adapter!r}]\n" + _REAL, timeout=120)
    out = res.stdout
    assert "OutOfMemoryError: gpudml: " in out and "ran out of memory allocating 67108864 bytes" in out, out
    assert "for Device.tensor's FLOAT32 [16777216] (wgpu: Not enough memory left.)" in out, out
    assert "after: [0.0, 1.0, 1.0, 1.0, 1.0, 0.0]" in out, out


# ------------------------------------------------------------------ adapters missing
def test_unknown_adapter_names_the_request_and_what_was_found():
    with pytest.raises(dml.UnsupportedError) as info:
        dml.Device(adapter="no-such-gpu")
    message = str(info.value)
    assert "no adapter matches 'no-such-gpu'" in message and "as `gpudml info` lists them:\n  - llvmpipe" in message
    assert HINT not in message  # both software adapters are installed: nothing to suggest


def test_unknown_adapter_suggests_only_what_is_missing(monkeypatch):
    found = adapters.enumerate_adapters()
    vulkan_only = [a for a in found if adapters.backend_of(a) == "vulkan"]
    monkeypatch.setattr(adapters, "enumerate_adapters", lambda: vulkan_only)
    with pytest.raises(dml.UnsupportedError) as info:
        dml.Device(adapter="gl")
    message = str(info.value)
    assert "no adapter matches 'gl'" in message and "via Vulkan" in message
    assert "libegl-mesa0" in message and HINT not in message


def test_unknown_adapter_from_the_environment(monkeypatch):
    monkeypatch.setenv("GPUDML_ADAPTER", "no-such-gpu")
    with pytest.raises(dml.UnsupportedError, match=r"'no-such-gpu', from GPUDML_ADAPTER,"):
        dml.Device()


def test_adapter_argument_must_be_a_string():
    for bad in (3, ["vulkan"], b"vulkan"):
        with pytest.raises(dml.InvalidArgumentError, match="Device: adapter must be a string"):
            dml.Device(adapter=bad)


def test_no_adapter_at_all(monkeypatch):
    monkeypatch.setattr(adapters, "enumerate_adapters", lambda: [])
    with pytest.raises(dml.UnsupportedError) as info:
        dml.Device(adapter="vulkan")
    assert "lists them: none" in str(info.value) and HINT in str(info.value)
    monkeypatch.delenv("GPUDML_ADAPTER", raising=False)
    with pytest.raises(dml.UnsupportedError, match=f"no GPU adapter found.*{HINT}"):
        dml.Device()


def test_wgpu_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "wgpu", None)  # `import wgpu` raises ImportError
    with pytest.raises(dml.UnsupportedError) as info:
        adapters.enumerate_adapters()
    assert "pip install" in str(info.value) and HINT in str(info.value)


def test_info_explains_a_missing_adapter(monkeypatch, capsys):
    monkeypatch.setattr(adapters, "enumerate_adapters", lambda: [])
    monkeypatch.delenv("GPUDML_ADAPTER", raising=False)
    assert cli.main(["info"]) == 1
    out = capsys.readouterr().out
    assert "Adapters found:" in out and "(none)" in out and HINT in out
    assert "error: gpudml: no GPU adapter found" in out


def test_info_explains_a_driver_that_cannot_load(monkeypatch, capsys):
    def broken():
        raise dml.UnsupportedError(f"gpudml: could not enumerate GPU adapters (libvulkan.so.1: not found); "
                                   f"{adapters.INSTALL_HINT}")

    monkeypatch.setattr(adapters, "enumerate_adapters", broken)
    assert cli.main(["info"]) == 1
    out = capsys.readouterr().out
    assert "could not enumerate GPU adapters" in out and HINT in out


def test_info_explains_an_adapter_that_does_not_match(capsys):
    assert cli.main(["--adapter", "no-such-gpu", "info"]) == 1
    out = capsys.readouterr().out
    assert "no adapter matches 'no-such-gpu'" in out and "lists them:\n  - llvmpipe" in out
