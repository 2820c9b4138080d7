"""Tensors larger than one storage binding or one buffer (compiler._segment, builder.py's
accessors, runtime/storage.py).

Cheap and everywhere: Devices whose limits are forced low (`max_binding_bytes`,
`max_buffer_bytes`; every operator's random valid descriptions run so in segments and parts
on both adapters: tests/test_conformance.py). For real: tensors of 160 MiB, above
lavapipe's 128 MiB binding limit.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from conformance import SMALL_BUFFER, limited, segments_of
from conftest import ADAPTERS, assert_bits_equal, get_device, random_bits, run_python

import gpudml as dml
from gpudml import caps as caps_module
from gpudml import compiler, reference
from gpudml.ops.reduce import infer_output as reduce_desc
from gpudml.ops.slice1 import infer_output as slice_desc
from gpudml.runtime.storage import Storage

T = dml.DataType


# ------------------------------------------------------------------ options
def test_limit_options_and_their_errors(adapter, monkeypatch):
    dev = dml.Device(adapter=adapter, max_binding_bytes=4096, max_buffer_bytes=1 << 20)
    assert dev.caps.binding_bytes == 4096 and dev.caps.buffer_bytes == 1 << 20
    plain = get_device(adapter)
    assert plain.caps.binding_bytes == plain.caps.max_storage_binding_size
    for bad, message in [(255, "max_binding_bytes = 255 is below the smallest allowed, 256 bytes"),
                         ("4k", "max_binding_bytes must be a number of bytes, got '4k'"),
                         (True, "max_binding_bytes must be an int"), (4096.0, "max_binding_bytes must be an int")]:
        with pytest.raises(dml.InvalidArgumentError, match=message):
            dml.Device(adapter=adapter, max_binding_bytes=bad)
    with pytest.raises(dml.InvalidArgumentError, match="max_buffer_bytes = 16 is below"):
        dml.Device(adapter=adapter, max_buffer_bytes=16)
    monkeypatch.setenv("GPUDML_MAX_BINDING_BYTES", "1024")
    monkeypatch.setenv("GPUDML_MAX_BUFFER_BYTES", "0x10000")
    env = dml.Device(adapter=adapter)
    assert (env.caps.binding_bytes, env.caps.buffer_bytes) == (1024, 65536)
    assert dml.Device(adapter=adapter, max_binding_bytes=512).caps.binding_bytes == 512  # the argument wins
    monkeypatch.setenv("GPUDML_MAX_BINDING_BYTES", "lots")
    with pytest.raises(dml.InvalidArgumentError, match="GPUDML_MAX_BINDING_BYTES must be a number of bytes"):
        dml.Device(adapter=adapter)


def test_segmented_source_picks_the_binding_by_the_index():
    """Pure: what the builder writes for a tensor of 3 segments (no adapter needed)."""
    caps = caps_module.profile("vulkan-cpu").with_limits(1024, None)
    desc = slice_desc(dml.TensorDesc(T.FLOAT32, [700]), [0], [700], [-1])
    program = compiler.compile(desc, caps, strategy="stretches")
    (kernel,) = program.kernels
    src = kernel.source
    assert [(b.name, b.segments, b.segment_bytes, b.via) for b in kernel.buffers] == [
        ("output", 3, 1024, ""), ("input", 3, 1024, "input_blocks"), ("input_blocks", 3, 1024, "")]
    assert compiler.builder.binding_count(kernel.buffers) == 6  # the input's words read through its blocks
    for k in range(3):
        assert f"var<storage, read> input_blocks_{k}: array<vec4<u32>>;" in src
        assert f"var<storage, read_write> output_{k}: array<vec4<u32>>;" in src
    assert "var<storage, read> input_0" not in src
    assert ("fn input_at(i: u32) -> u32 {\n    let j = (i >> 2u) & 63u;\n    let s = (i >> 2u) >> 6u;\n"
            "    if (s < 1u) {\n        return input_blocks_0[j][i & 3u];") in src
    # pinned to one segment, for loops whose range lies in it (lib/common's `pinned`)
    assert ("fn input_at_1(i: u32) -> u32 {\n    let j = (i >> 2u) & 63u;\n"
            "    return input_blocks_1[j][i & 3u];\n}") in src
    assert "fn input_seg(i: u32) -> u32 {\n    return (i >> 2u) >> 6u;\n}" in src
    assert "fn input_blocks_at(i: u32) -> vec4<u32> {\n    let j = i & 63u;\n    let s = i >> 6u;" in src
    assert "input[" not in src and "output[" not in src  # every access goes through an accessor
    # the stretch loops, once per segment (and once picking) where the input is segmented
    assert "stretch_block_2(stretch_skip(s, k * 4u))" in src and "input_blocks_at_2(s.off / 4u + k * s.step)" in src
    assert "stretch_block_2" not in compiler.compile(desc, caps_module.profile("vulkan-cpu"),
                                                 strategy="stretches").kernels[0].source
    reduce = reduce_desc(dml.TensorDesc(T.FLOAT32, [4, 700]), "sum", [1])
    rows = compiler.compile(reduce, caps.with_limits(2048, None), strategy="rows").kernels[0].source
    assert "input_vec_at_1(v0 + v)" in rows and "load_x_1(off + j * st)" in rows


def test_too_many_bindings_grow_segments_then_run_in_passes():
    """Segments grow (up to the adapter's own limits) before a kernel takes more bindings
    than the adapter has; where even that is not enough, a data-movement kernel runs in
    passes (each binds some of the input's and the output's segments), and any other
    kernel is an UnsupportedError naming its bindings, before any GPU work."""
    base = caps_module.profile("gpu")  # 8 storage buffers per kernel
    desc = slice_desc(dml.TensorDesc(T.FLOAT32, [70000]), [0], [70000], [-1])
    grown = compiler.compile(desc, base.with_limits(256, None), strategy="coalesced")
    assert compiler.builder.binding_count(grown.kernels[0].buffers) <= 8
    assert max(b.segment_bytes for b in grown.kernels[0].buffers) > 256
    passes = compiler.compile(desc, base.with_limits(256, 4096), strategy="coalesced").kernels
    assert len(passes) == 18 * 18  # 69 segments of 4 KiB each side, 4 + 4 of them a pass
    for k in passes:
        assert k.params["strategy"] == "strided" and k.params["passes"]
        assert compiler.builder.binding_count(k.buffers) <= 8
        assert {b.of_segments for b in k.buffers} == {69}
    assert len({k.source for k in passes}) == 4  # the first segment is a uniform: groups of 4 or 1
    reduce = reduce_desc(dml.TensorDesc(T.FLOAT32, [70000]), "sum", [0])
    with pytest.raises(dml.UnsupportedError, match=r"needs \d+ storage bindings \(.*input 0: \d+.*"
                                                   r"above 8, the adapter's max-storage-buffers-per-shader-stage 8"):
        compiler.compile(reduce, base.with_limits(256, 4096))
    # An adapter with bindings to spare (an H100 has 524,288) still gets at most
    # compiler.MAX_BINDINGS: a forced 256-byte limit would otherwise mean 1,094 segments.
    roomy = dataclasses.replace(base, max_storage_buffers_per_shader_stage=524288).with_limits(256, None)
    kernel = compiler.compile(desc, roomy, strategy="coalesced").kernels[0]
    assert 64 < compiler.builder.binding_count(kernel.buffers) <= compiler.MAX_BINDINGS


@pytest.mark.any_class  # both classes' Devices made here: the GPU-class run would repeat them
@pytest.mark.parametrize("adapter_class", ["cpu", "gpu"])
def test_data_movement_beyond_the_bindings_runs_in_passes(adapter, adapter_class):
    """4 KiB buffers and 256-byte bindings: slice, pad (a fill and a mirror), reverse and
    tile of tensors of 40-340 KB take 10-84 segments each, more than the adapter's 16 (GL)
    or 32 (lavapipe) bindings: they run in passes, bit-exact for 8/16/32/64-bit elements."""
    dev = dml.Device(adapter=adapter, adapter_class=adapter_class, max_binding_bytes=256, max_buffer_bytes=4096)
    rng = np.random.default_rng(7)
    for dt in (np.uint8, np.float16, np.float32, np.int64):
        x = random_bits(rng, dt, [60, 700])
        lengths = rng.integers(0, 800, size=(60, 1)).astype(np.uint32)
        cases = [
            (lambda x=x: dml.slice(x, [1, 3], [59, 690], [-2, 3], device=dev), x[1:60][::-2, 3:693:3]),
            (lambda x=x: dml.pad(x, [2, 5], [3, 1], mode="reflection", device=dev),
             np.pad(x, [(2, 3), (5, 1)], "reflect")),
            (lambda x=x: dml.pad(x, [2, 5], [3, 1], value=7, device=dev),
             np.pad(x, [(2, 3), (5, 1)], constant_values=7)),
            (lambda x=x, n=lengths: dml.reverse_subsequences(x, n, 1, device=dev),
             reference.reverse_subsequences(x, lengths, 1)),
            (lambda x=x: dml.tile(x[:30], [2, 1], device=dev), np.tile(x[:30], [2, 1])),
        ]
        for run, want in cases:
            assert_bits_equal(run(), want)
    op = dev.compile_operator(dev.create_operator(slice_desc(dml.TensorDesc(T.INT64, [60, 700]), [0, 0], [60, 700])))
    assert len(op.program.kernels) > 1 and all(k.params["passes"] for k in op.program.kernels)


def test_tensor_in_several_buffers(adapter):
    """A Tensor above the buffer limit: a Storage of parts; upload, download, copy, clears
    and every binding of it work as on one buffer."""
    dev = limited(adapter, binding=512, buffer=SMALL_BUFFER)
    rng = np.random.default_rng(5)
    x = random_bits(rng, np.uint16, [3, 1500])  # 9,000 bytes: 5 parts
    t = dev.tensor(x)
    assert isinstance(t.buffer, Storage) and len(t.buffer.parts) == 5
    assert all(p.size == SMALL_BUFFER for p in t.buffer.parts[:-1])
    assert_bits_equal(t.numpy(), x)
    assert_bits_equal(t.copy().numpy(), x)
    assert_bits_equal(dml.slice(t, [0, 3], [3, 1490], [1, -7]).numpy(), x[:, 3:1493][:, ::-7])
    assert_bits_equal(dml.pad(t, [1, 700], [0, 3], mode="wrap").numpy(), np.pad(x, [(1, 0), (700, 3)], mode="wrap"))
    strided = dml.TensorDesc(T.UINT16, [3, 1500], [1600, 1])  # 9,600 bytes, a gap after each row
    desc = dml.Slice1OperatorDesc(dml.TensorDesc(T.UINT16, [3, 1500]), strided, [0, 0], [3, 1500], [1, 1])
    out = dev.compile_operator(dev.create_operator(desc)).execute([t])[0]
    assert isinstance(out.buffer, Storage)
    raw = np.zeros(4800, np.uint16)
    raw[:4700] = out.raw()  # the buffer ends with the last element
    assert_bits_equal(raw.reshape(3, 1600)[:, :1500], x)
    assert not raw.reshape(3, 1600)[:, 1500:].any()  # cleared first: the pool's parts held old data
    got = np.asarray(dml.reduce(t, "max", [1]).numpy())
    np.testing.assert_array_equal(got, x.max(1, keepdims=True))
    g = dml.Graph(dev)
    gx = g.input([3, 1500], dtype=np.uint16, name="x")
    (r,) = g.compile([dml.reverse_subsequences(gx, np.array([[1499]] * 3, np.uint32), 1)])({"x": x})
    assert_bits_equal(r, np.concatenate([x[:, :1499][:, ::-1], x[:, 1499:]], axis=1))


def test_a_tensor_made_under_other_limits_is_refused_clearly(adapter):
    """Parts of a Tensor made under a smaller buffer limit cannot hold the segments of an
    operator compiled under larger ones: InvalidArgumentError, not a wgpu error."""
    small = limited(adapter, binding=512, buffer=1024)
    big = limited(adapter, binding=4096)
    x = np.arange(6000, dtype=np.uint8)
    t = small.tensor(x)
    desc = slice_desc(dml.TensorDesc(T.UINT8, [6000]), [0], [6000], [-1])
    compiled = big.compile_operator(big.create_operator(desc))
    with pytest.raises(dml.InvalidArgumentError, match="straddles two parts"):
        compiled.execute([t])


def test_the_environment_variable_segments_the_suite_s_devices(tmp_path):
    """GPUDML_MAX_BINDING_BYTES reaches every Device of a process (how CI runs sweeps in
    segments): a reduce of 3,000 floats there binds its input as segments."""
    code = ("import numpy as np, gpudml as dml\n"
            "from gpudml.ops.reduce import infer_output\n"
            "d = dml.Device(adapter='vulkan')\n"
            "desc = infer_output(dml.TensorDesc(dml.DataType.FLOAT32, [3000]), 'sum', [0])\n"
            "c = d.compile_operator(d.create_operator(desc))\n"
            "print(max(b.segments for k in c.program.kernels for b in k.buffers))\n"
            "print(float(dml.reduce(np.ones(3000, np.float32), 'sum', device=d)[0]))\n")
    res = run_python(code, GPUDML_MAX_BINDING_BYTES="1024")
    segments, total = res.stdout.split()
    assert int(segments) >= 2 and float(total) == 3000.0


# ------------------------------------------------------------------ for real: 160 MiB
BIG_ROWS = 160 * 1024 * 1024 // (4 * 4096)  # float32 [10240, 4096]


@pytest.fixture(scope="module")
def big():
    adapter = ADAPTERS[0] if ADAPTERS else pytest.skip("no adapter")
    dev = get_device(adapter)
    x = np.random.default_rng(11).random([BIG_ROWS, 4096], dtype=np.float32)
    if x.nbytes <= dev.caps.binding_bytes:
        pytest.skip(f"{dev.adapter_name} binds {x.nbytes} bytes in one binding")
    return dev, x, dev.tensor(x)


@pytest.mark.slow
def test_real_160_mib_slice_pad_reverse_reduce(big):
    """The issue's test: 160 MiB of float32 on the first adapter (lavapipe binds 128 MiB):
    each operator's result equals numpy's."""
    dev, x, t = big
    desc = reduce_desc(dml.TensorDesc(T.FLOAT32, x.shape), "sum", [1])
    assert segments_of(dev.compile_operator(dev.create_operator(desc)))[("input", 0)] == 2
    got = dml.slice(t, [1, 0], [BIG_ROWS - 1, 4096], [-3, 2]).numpy()
    assert_bits_equal(got, x[1:][::-3, ::2])
    del got
    got = dml.pad(t, [2, 0], [1, 5], mode="symmetric").numpy()
    assert_bits_equal(got, np.pad(x, [(2, 1), (0, 5)], mode="symmetric"))
    del got
    lengths = np.arange(BIG_ROWS, dtype=np.uint32).reshape(-1, 1) % 4097
    got = dml.reverse_subsequences(t, lengths, 1).numpy()
    cols = np.arange(4096)
    index = np.where(cols < lengths, lengths - 1 - cols, cols)  # the reversal as a gather, all rows at once
    assert_bits_equal(got, np.take_along_axis(x, index, axis=1))
    del got, index
    np.testing.assert_allclose(dml.reduce(t, "sum", [1]).numpy(), x.sum(1, keepdims=True, dtype=np.float64),
                               rtol=1e-4)
    np.testing.assert_allclose(dml.reduce(t, "sum", [0]).numpy(), x.sum(0, keepdims=True, dtype=np.float64),
                               rtol=1e-4)
    assert dml.reduce(t, "argmax").numpy().item() == int(np.argmax(x))


def test_info_names_the_limits_in_force(monkeypatch, capsys):
    from gpudml import cli

    monkeypatch.setenv("GPUDML_MAX_BINDING_BYTES", "1024")
    assert cli.main(["info", "--adapter", ADAPTERS[0] if ADAPTERS else "vulkan"]) == 0
    out = capsys.readouterr().out
    assert "Large tensors:   bindings of at most 1024 bytes" in out and "(lowered: GPUDML_MAX_BINDING_BYTES" in out
    assert "min-storage-buffer-offset-alignment" in out


def test_shader_command_shows_segments_under_a_forced_limit(monkeypatch, capsys):
    """`GPUDML_MAX_BINDING_BYTES=1024 gpudml shader ... --caps gl-cpu`: the segmented WGSL,
    with no adapter."""
    from gpudml import cli

    args = ["shader", "slice1", "--shape", "700", "--sizes", "700", "--strides", "-1", "--caps", "gl-cpu"]
    assert cli.main(args) == 0
    assert "input_blocks_0" not in capsys.readouterr().out
    monkeypatch.setenv("GPUDML_MAX_BINDING_BYTES", "1024")
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert "var<storage, read> input_blocks_2: array<vec4<u32>>;" in out and "fn input_at_1(" in out
