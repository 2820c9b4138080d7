"""Runtime engine: batching, the buffer pool, bind-group reuse, Tensor lifetime, adapters."""

from __future__ import annotations

import gc
import io
import re
import sys
from collections import OrderedDict

import numpy as np
import pytest

import gpudml as dml
from gpudml.ops.slice1 import infer_output as slice_desc
from gpudml.runtime import adapters, progress


def _reverse_cols(x):
    return dml.slice(x, [0, 0], list(x.shape), [1, -1])


def test_batch_matches_unbatched(device):
    x = np.arange(48, dtype=np.int32).reshape(6, 8)
    t = device.tensor(x)
    with device.batch():
        y = t
        for _ in range(5):
            y = _reverse_cols(y)
        z = dml.slice(y, [1, 0], [5, 8], [2, 1])
    np.testing.assert_array_equal(y.numpy(), x[:, ::-1])
    np.testing.assert_array_equal(z.numpy(), x[1::2, ::-1])


def test_reading_inside_a_batch_flushes_it(device):
    x = np.arange(10, dtype=np.float32)
    t = device.tensor(x)
    with device.batch():
        y = dml.slice(t, [0], [10], [-1])
        np.testing.assert_array_equal(y.numpy(), x[::-1])        # readback submits the recorded work
        w = dml.slice(x, [2], [8], [2], device=device)            # numpy in/out inside the batch
        np.testing.assert_array_equal(w, x[2::2])
        u = dml.slice(y, [0], [10], [-1])
    np.testing.assert_array_equal(u.numpy(), x)


def test_dying_tensors_inside_a_batch_are_safe(device):
    x = np.arange(4096, dtype=np.uint32)
    t = device.tensor(x)
    with device.batch():
        outs = []
        for i in range(8):
            y = dml.slice(t, [i], [4096 - i], [1])
            del y  # its buffer returns to the pool while the dispatch is still only recorded
            gc.collect()
            outs.append(dml.slice(t, [0], [4096], [-1]))
    for o in outs:
        np.testing.assert_array_equal(o.numpy(), x[::-1])


def test_repeated_executes_allocate_nothing(vulkan_device):
    dev = vulkan_device
    memory = dev._ctx.pool
    x = np.random.default_rng(1).random((64, 64), dtype=np.float32)
    for _ in range(3):
        dml.slice(x, [0, 0], [64, 64], [-1, 2], device=dev)
    before = memory.allocations
    for _ in range(20):
        out = dml.slice(x, [0, 0], [64, 64], [-1, 2], device=dev)
    assert memory.allocations == before
    np.testing.assert_array_equal(out, x[::-1, ::2])


def test_functional_calls_reuse_a_compiled_operator_only_for_the_same_arguments(vulkan_device, monkeypatch):
    """The functional forms' cache of compiled operators: a repeated call (lists or tuples
    of ints alike) compiles nothing; 0.0 and -0.0, or 1 and 1.0 where both are valid, are
    arguments of their own, and a Split's list of outputs comes back as a list."""
    dev = vulkan_device
    compiled = []
    compile_operator = dev.compile_operator
    monkeypatch.setattr(dev, "compile_operator", lambda op: compiled.append(op) or compile_operator(op))
    x = dev.tensor(np.ones((3, 5), np.float32))  # (shapes no other test pads this way)
    dml.pad(x, [0, 1], [1, 0], value=0.0)
    compiled.clear()
    for paddings in ([0, 1], (0, 1)):
        dml.pad(x, paddings, [1, 0], value=0.0)
    assert compiled == []
    negative = dml.pad(x, [0, 1], [1, 0], value=-0.0).numpy()
    assert len(compiled) == 1 and np.signbit(negative[0, 0]) and negative[0, 1] == 1
    positive = dml.pad(x, [0, 1], [1, 0], value=0.0).numpy()
    assert len(compiled) == 1 and not np.signbit(positive[0, 0])
    ints = dev.tensor(np.zeros(7, np.int32))
    assert dml.pad(ints, [1], [0], value=1).numpy()[0] == 1
    assert dml.pad(ints, [1], [0], value=1.0).numpy()[0] == 1 and len(compiled) == 3
    parts = dml.split(dev.tensor(np.arange(6, dtype=np.float32)), 0, [2, 4])
    assert isinstance(parts, list) and [p.numpy().tolist() for p in parts] == [[0, 1], [2, 3, 4, 5]]


def test_bind_groups_are_reused(vulkan_device):
    dev = vulkan_device
    x = dev.tensor(np.zeros((4, 4), np.float32))
    desc = slice_desc(x.desc, [0, 0], [4, 4], [1, 1])
    compiled = dev.compile_operator(dev.create_operator(desc))
    out = dev.empty(desc.output_tensor)
    for _ in range(5):
        compiled.execute([x], outputs=[out])
    assert len(compiled._groups) == 1


def test_pooled_buffers_do_not_leak_old_bytes_into_gaps(device):
    """A new output reuses a pooled buffer; bytes its kernel does not write read as zero."""
    garbage = device.tensor(np.full(64, 0xAB, dtype=np.uint8))
    garbage.free()  # back to the pool, full of 0xAB
    x = np.arange(1, 4, dtype=np.uint8)
    desc = dml.Slice1OperatorDesc(dml.TensorDesc(dml.DataType.UINT8, [3]),
                                  dml.TensorDesc(dml.DataType.UINT8, [3], [20]), [0], [3], [1])
    out = device.compile_operator(device.create_operator(desc)).execute([device.tensor(x)])[0]
    raw = out.raw()
    np.testing.assert_array_equal(raw[[0, 20, 40]], x)
    assert not raw[np.setdiff1d(np.arange(raw.size), [0, 20, 40])].any()


def test_tensor_free_and_use_after_free(vulkan_device):
    t = vulkan_device.tensor(np.ones(8, np.float32))
    t.free()
    with pytest.raises(dml.InvalidArgumentError, match="used after free"):
        t.numpy()
    with pytest.raises(dml.InvalidArgumentError, match="the Tensor was freed"):
        dml.slice(t, [0], [8])


def test_tensor_copy_outside_and_inside_a_batch(device):
    """Tensor.copy(): a new buffer with the same desc and bytes (gaps included), ordered with
    the dispatches recorded before it, also inside a batch."""
    desc = dml.TensorDesc(dml.DataType.UINT8, [3, 2], [5, 2])
    t = device.tensor(np.arange(1, 14, dtype=np.uint8), desc=desc)
    c = t.copy()
    assert c.desc == t.desc and c.buffer is not t.buffer
    np.testing.assert_array_equal(c.raw(), t.raw())
    t.free()
    np.testing.assert_array_equal(c.numpy(), np.arange(1, 14, dtype=np.uint8)[[[0, 2], [5, 7], [10, 12]]])
    x = np.arange(10, dtype=np.float32)
    with device.batch():
        y = dml.slice(device.tensor(x), [0], [10], [-1])
        copies = [y.copy(), y.copy()]
        z = dml.slice(copies[0], [0], [10], [-1])  # reads the copy made in the same batch
    for got, want in zip([*copies, z], [x[::-1], x[::-1], x]):
        np.testing.assert_array_equal(got.numpy(), want)


def test_synchronize_and_empty(device):
    desc = dml.TensorDesc(dml.DataType.INT16, [3, 5])
    t = device.empty(desc)
    device.synchronize()
    np.testing.assert_array_equal(t.numpy(), np.zeros((3, 5), np.int16))


def test_large_transfers_round_trip_bit_exactly(device):
    """Above the map threshold transfers take the mapped path where the adapter has one."""
    rng = np.random.default_rng(3)
    x = rng.integers(0, 2**32, size=300_000, dtype=np.uint32).view(np.float32)  # NaN payloads included
    t = device.tensor(x)
    np.testing.assert_array_equal(t.numpy().view(np.uint32), x.view(np.uint32))


def test_unknown_adapter_lists_what_was_found():
    """With both software adapters installed, nothing to install is suggested."""
    with pytest.raises(dml.UnsupportedError) as err:
        dml.Device(adapter="no-such-adapter-xyz")
    message = str(err.value)
    assert "no adapter matches 'no-such-adapter-xyz'" in message
    assert all(a.summary in message for a in adapters.enumerate_adapters())
    assert "name one by backend (d3d12, gl, metal, opengl, vulkan) or by part of its name" in message
    assert "apt-get" not in message


def test_adapter_choice_by_backend_and_substring():
    assert "Vulkan" in adapters.choose_adapter("vulkan").summary
    assert "OpenGL" in adapters.choose_adapter("gl").summary
    assert "llvmpipe" in adapters.choose_adapter("LLVMPIPE").summary


def test_environment_variable_picks_the_adapter(monkeypatch):
    monkeypatch.setenv("GPUDML_ADAPTER", "gl")
    assert dml.Device().caps.backend == "OpenGL"
    monkeypatch.setenv("GPUDML_ADAPTER", "vulkan")
    assert dml.Device().caps.backend == "Vulkan"


def test_feature_level_argument():
    assert dml.Device(feature_level="FL_3_0", adapter="vulkan").feature_level == dml.FeatureLevel.FL_3_0
    assert dml.Device(adapter="vulkan").feature_level == dml.FeatureLevel.FL_6_4  # WRAP
    with pytest.raises(dml.InvalidArgumentError, match="feature_level: 'FL_9_9' is not a FeatureLevel"):
        dml.Device(feature_level="FL_9_9")
    assert dml.Device(adapter="vulkan").supports_data_type(dml.DataType.FLOAT64)


def test_a_compiled_operator_collected_in_a_cycle_gives_back_live_buffers(device):
    """A CompiledOperator that only the cycle collector frees (a traceback, a graph) gives its
    scratch buffers back to the pool alive: the collector may finalize the buffers of the
    garbage before the operator, and a buffer released so must not come back from the pool
    (it did: 'initializer for ctype struct WGPUBufferImpl * ... not NoneType')."""
    desc = dml.ops.reduce.infer_output(dml.TensorDesc(dml.DataType.FLOAT32, [64, 300]), "sum", [0])
    for _ in range(3):
        compiled = device.compile_operator(device.create_operator(desc), "partials")
        (nbytes,) = compiled.program.scratch_bytes
        compiled.cycle = compiled  # garbage only the cycle collector finds
        del compiled
        gc.collect()
        words = np.arange(nbytes // 4, dtype=np.uint32)
        np.testing.assert_array_equal(device.tensor(words).numpy(), words)  # the pool's buffer of that size


def test_adapter_class_detected_overridden_and_checked(vulkan_device, monkeypatch):
    """lavapipe is detected as "cpu"; Device(adapter_class=) wins over GPUDML_ADAPTER_CLASS,
    which wins over detection; the class decides the first strategy; bad values are named."""
    name = vulkan_device.adapter_name
    desc = dml.ops.reduce.infer_output(dml.TensorDesc(dml.DataType.FLOAT32, [4096, 256]), "sum", [1])
    monkeypatch.delenv("GPUDML_ADAPTER_CLASS", raising=False)
    cpu = dml.Device(adapter=name)
    assert cpu.adapter_class == "cpu" and cpu.caps.is_software
    assert cpu.compile_operator(cpu.create_operator(desc)).strategy == "rows"
    gpu = dml.Device(adapter=name, adapter_class="GPU")
    assert gpu.adapter_class == "gpu" and not gpu.caps.is_software and gpu.caps.detected_class == "cpu"
    assert gpu.compile_operator(gpu.create_operator(desc)).strategy == "workgroup"
    monkeypatch.setenv("GPUDML_ADAPTER_CLASS", "gpu")
    assert dml.Device(adapter=name).adapter_class == "gpu"
    assert dml.Device(adapter=name, adapter_class="cpu").adapter_class == "cpu"
    monkeypatch.setenv("GPUDML_ADAPTER_CLASS", "fast")
    with pytest.raises(dml.InvalidArgumentError, match="GPUDML_ADAPTER_CLASS must be \"cpu\" or \"gpu\", got 'fast'"):
        dml.Device(adapter=name)
    with pytest.raises(dml.InvalidArgumentError, match="Device: adapter_class must be \"cpu\" or \"gpu\", got 3"):
        dml.Device(adapter=name, adapter_class=3)


def test_software_adapters_by_type_or_name():
    """Some backends report a software adapter's type as Unknown (OpenGL on the H100 did for
    the GPU): the name decides then."""
    from gpudml.caps import is_software, profile

    assert is_software("CPU", "any") and is_software("Unknown", "llvmpipe (LLVM 15.0.6, 256 bits)")
    assert is_software("Unknown", "SwiftShader Device (Subzero)")
    assert not is_software("Unknown", "NVIDIA H100 80GB HBM3/PCIe/SSE2") and not is_software("DiscreteGPU", "NVIDIA")
    assert profile("gpu").adapter_class == "gpu" and profile("gl-cpu").adapter_class == "cpu"
    assert profile("gpu").with_class("cpu").is_software and profile("gpu").with_class(None) == profile("gpu")


def test_the_pipeline_cache_is_bounded(device, monkeypatch):
    """A context keeps its PIPELINE_CACHE_SIZE most recently used pipelines: an evicted one
    lives on in the compiled operators that hold it (and runs), and is compiled again when
    asked for anew."""
    from gpudml.runtime import context

    monkeypatch.setattr(context, "PIPELINE_CACHE_SIZE", 2)
    ctx = device._ctx
    monkeypatch.setattr(ctx, "_pipelines", OrderedDict())  # (the session's own come back after)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    ops = [device.compile_operator(device.create_operator(spec_desc)) for spec_desc in (
        dml.ElementWiseExpOperatorDesc(dml.TensorDesc(dml.DataType.FLOAT32, [2, 3]),
                                       dml.TensorDesc(dml.DataType.FLOAT32, [2, 3])),
        dml.ElementWiseSqrtOperatorDesc(dml.TensorDesc(dml.DataType.FLOAT32, [2, 3]),
                                        dml.TensorDesc(dml.DataType.FLOAT32, [2, 3])),
        dml.ActivationReluOperatorDesc(dml.TensorDesc(dml.DataType.FLOAT32, [2, 3]),
                                       dml.TensorDesc(dml.DataType.FLOAT32, [2, 3])))]
    assert len(ctx._pipelines) <= 2
    np.testing.assert_allclose(ops[0].execute([x])[0], np.exp(x), rtol=1e-6)  # evicted, still held: runs
    misses = ctx.stats.misses
    again = device.compile_operator(device.create_operator(ops[0].desc))  # exp's source: evicted, compiled anew
    assert ctx.stats.misses == misses + 1 and len(ctx._pipelines) == 2
    np.testing.assert_allclose(again.execute([x])[0], np.exp(x), rtol=1e-6)



# ------------------------------------------------------------------ issue 42: progress of long transfers
class _Terminal(io.StringIO):
    def isatty(self):
        return True


def _small_progress(monkeypatch) -> _Terminal:
    """Transfers of 256 KiB and more show their progress, in chunks of 128 KiB, every chunk
    drawn; stderr a terminal (set in the test's body: pytest's capture sets sys.stderr again
    after the fixtures)."""
    monkeypatch.setattr(progress, "PROGRESS_BYTES", 256 << 10)
    monkeypatch.setattr(progress, "CHUNK_BYTES", 128 << 10)
    monkeypatch.setattr(progress, "REDRAW_SECONDS", 0.0)
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    return terminal


def _drawn(text: str, what: str) -> list[str]:
    """The states of one transfer's progress line, in order (redrawn with carriage returns)."""
    return [s.replace("\033[K", "") for s in text.split("\r") if s.startswith(f"gpudml: {what} ")]


def test_a_large_transfer_shows_its_progress_on_a_terminal(device, monkeypatch):
    """An upload and a download of 512 KiB (4 chunks, both transfer paths: mapped and queued
    or staged) draw 0%, 25%, ..., 100% and a last line with a newline; the data arrives whole."""
    small_progress = _small_progress(monkeypatch)
    x = np.arange(128 << 10, dtype=np.float32)
    t = device.tensor(x)
    np.testing.assert_array_equal(t.numpy(), x)
    text = small_progress.getvalue()
    for what in ("upload", "download"):
        states = _drawn(text, what)
        assert states[0] == f"gpudml: {what} 0.00 / 0.50 MiB (0%)", states
        assert [int(m) for m in re.findall(r"\((\d+)%\)", "".join(states[1:-1]))] == [25, 50, 75, 100], states
        assert all(re.fullmatch(rf"gpudml: {what} 0\.\d\d / 0\.50 MiB \(\d+%\), \d+\.\d\d GB/s", s)
                   for s in states[1:-1]), states
        assert re.fullmatch(rf"gpudml: {what} 0\.50 MiB in \d+\.\d s, \d+\.\d\d GB/s\n", states[-1]), states
    assert text.index("gpudml: upload") < text.index("gpudml: download")


def test_a_tensor_in_several_buffers_is_one_transfer(adapter, monkeypatch):
    """A tensor kept in buffers of 128 KiB (a Storage): one progress line per transfer, over all its parts."""
    small_progress = _small_progress(monkeypatch)
    dev = dml.Device(adapter=adapter, max_binding_bytes=64 << 10, max_buffer_bytes=128 << 10)
    x = np.arange(96 << 10, dtype=np.float32)  # 384 KiB: three buffers
    np.testing.assert_array_equal(dev.tensor(x).numpy(), x)
    text = small_progress.getvalue()
    assert text.count("gpudml: upload 0.38 MiB in ") == 1 and text.count("gpudml: download 0.38 MiB in ") == 1
    assert [int(m) for m in re.findall(r"\((\d+)%\)", "".join(_drawn(text, "upload")))] == [0, 33, 66, 100]


def test_no_progress_into_a_pipe_nor_for_a_small_transfer(device, monkeypatch):
    small_progress = _small_progress(monkeypatch)
    device.tensor(np.ones(16, np.float32)).numpy()  # below the threshold: nothing, even on a terminal
    assert small_progress.getvalue() == ""
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # a pipe or a log file: nothing, whatever the size
    device.tensor(np.ones(128 << 10, np.float32)).numpy()
    assert sys.stderr.getvalue() == "" and small_progress.getvalue() == ""
    assert progress.is_terminal(small_progress) and not progress.is_terminal(io.StringIO())
