"""Device loss and adapter failure: clear DMLErrors naming the adapter and what to do,
never a bare wgpu traceback. Loss is simulated by destroying the wgpu device of a private
context (the fixtures' shared devices are untouched)."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest
from isolated import lose, own_device

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

    ctx = types.SimpleNamespace(caps=types.SimpleNamespace(name="Test Adapter"), lost=False, lost_reason="",
                                mark_lost=lambda reason: None)
    oom = guard.translate(ctx, wgpu.GPUOutOfMemoryError("Out of memory"))
    assert type(oom) is dml.GpuError and "Test Adapter ran out of memory" in str(oom)
    other = guard.translate(ctx, wgpu.GPUValidationError("Validation Error\n\nCaused by:\n  In x\n    bad"))
    assert type(other) is dml.GpuError and "Test Adapter" in str(other) and "gpudml bug" in str(other)
    lost = guard.translate(ctx, wgpu.GPUValidationError("Validation Error\n\nCaused by:\n    Parent device is lost"))
    assert type(lost) is dml.DeviceLostError and "(Parent device is lost)" in str(lost)


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
