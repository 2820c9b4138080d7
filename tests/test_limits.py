"""Limits: 32-bit element counts and offsets, the storage-binding size, the workgroup grid.

A tensor whose desc needs more than the adapter's max-storage-buffer-binding-size (128 MiB
on the software adapters) is bound as several segments (compiler._segment; test_large.py
has the rest of that story). Element counts and element offsets beyond 2^32 - 1 are
InvalidArgumentError (DirectML's 32-bit limits). Dispatches of more than
max-compute-workgroups-per-dimension workgroups fold into a 2-D grid.

Boundaries are tested twice: on contexts that report small limits over the real wgpu
device (cheap, both adapters), and at the real 128 MiB / 65,535 limits (first adapter).
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import ADAPTERS, assert_bits_equal, get_device, random_bits
from isolated import limited_device

import gpudml as dml
from gpudml import reference
from gpudml.ops.padding import infer_output as pad_desc
from gpudml.ops.reduce import infer_output as reduce_desc
from gpudml.ops.reverse_subsequences import infer_output as reverse_subsequences_desc
from gpudml.ops.slice1 import infer_output as slice_desc

T = dml.DataType
U8, U32, F32 = T.UINT8, T.UINT32, T.FLOAT32
MAX = 2**32 - 1


def _descs(in_desc: dml.TensorDesc) -> dict[str, object]:
    """One desc per operator over `in_desc` (output inferred as the functional API does)."""
    lengths = dml.TensorDesc(U32, list(in_desc.sizes[:-1]) + [1], [0] * in_desc.rank)
    return {
        "Slice1": slice_desc(in_desc, [0] * in_desc.rank, [1] * in_desc.rank),
        "Padding": pad_desc(in_desc, [0] * in_desc.rank, [0] * in_desc.rank),
        "ReverseSubsequences": reverse_subsequences_desc(in_desc, lengths, in_desc.rank - 1),
        "Reduce": reduce_desc(in_desc, "max", [in_desc.rank - 1]),
    }


# ------------------------------------------------------------------ 32-bit counts and offsets
@pytest.mark.parametrize("op", ["Slice1", "Padding", "ReverseSubsequences", "Reduce"])
def test_element_count_beyond_32_bits_is_rejected(vulkan_device, op):
    """2^32 - 1 elements validate (broadcast, so the buffer is 4 bytes); 2^32 do not."""
    at_limit = dml.TensorDesc(F32, [65535, 65537], [0, 0])  # 4294967295 elements
    vulkan_device.create_operator(_descs(at_limit)[op])
    over = dml.TensorDesc(F32, [65536, 65536], [0, 0])
    with pytest.raises(dml.InvalidArgumentError) as info:
        vulkan_device.create_operator(_descs(over)[op])
    assert type(info.value) is dml.InvalidArgumentError
    message = str(info.value)
    assert message.startswith(op) and "input_tensor.sizes" in message and "4294967296" in message, message
    with pytest.raises(dml.InvalidArgumentError, match=r"input_tensor.sizes\[0\] = 4294967296 exceeds 4294967295"):
        vulkan_device.create_operator(_descs(dml.TensorDesc(F32, [2**32, 1], [0, 0]))[op])


def test_a_slice_of_2_pow_32_minus_1_broadcast_elements_runs(device):
    """Counts up to 2^32 - 1 are handled, not just accepted: a broadcast input that large."""
    in_desc = dml.TensorDesc(U32, [65535, 65537], [0, 0])
    desc = dml.Slice1OperatorDesc(in_desc, dml.TensorDesc(U32, [3, 2]), [65530, 5], [5, 65530], [-2, 40000])
    (got,) = device.compile_operator(device.create_operator(desc)).execute([np.array([123456789], np.uint32)])
    np.testing.assert_array_equal(got, np.full((3, 2), 123456789, np.uint32))


@pytest.mark.parametrize("field", ["input_tensor", "output_tensor"])
def test_element_offsets_beyond_32_bits_are_rejected(vulkan_device, field):
    """sum((sizes[i] - 1) * strides[i]) may reach 2^32 - 1 (validation passes) but not 2^32,
    even though every stride fits 32 bits."""
    dev = vulkan_device

    def desc(strides):
        strided = dml.TensorDesc(U8, [2, 2], strides)
        packed = dml.TensorDesc(U8, [2, 2])
        inp, out = (strided, packed) if field == "input_tensor" else (packed, strided)
        return dml.Slice1OperatorDesc(inp, out, [0, 0], [2, 2], [1, 1])

    dev.create_operator(desc([MAX - 1, 1]))  # last element at offset 2^32 - 1
    for strides, last in [([MAX, 1], 2**32), ([2**31, 2**31], 2**32), ([MAX, MAX], 2 * MAX)]:
        with pytest.raises(dml.InvalidArgumentError) as info:
            dev.create_operator(desc(strides))
        assert type(info.value) is dml.InvalidArgumentError
        message = str(info.value)
        assert f"Slice1: {field}.strides: the last element lies at element offset" in message, message
        assert f"= {last} " in message and "4294967295" in message, message


def test_functional_api_rejects_sizes_beyond_32_bits(vulkan_device):
    x = np.zeros(4, np.uint8)
    with pytest.raises(dml.InvalidArgumentError, match=r"Padding: output_tensor.sizes\[0\] = 4294967300 exceeds"):
        dml.pad(x, [2**32 - 4], [4], device=vulkan_device)
    with pytest.raises(dml.InvalidArgumentError, match=r"Slice1: output_tensor.sizes\[0\] = 4294967296 exceeds"):
        dml.slice(x, [0], [4], output_sizes=[2**32], device=vulkan_device)


# ------------------------------------------------------------------ binding size (small limits)
LIMIT = 4096


def _no_gpu_work(dev, build):
    """Run `build` (expected to raise UnsupportedError) and check it did no GPU work."""
    ctx = dev._ctx
    before = (ctx.pool.allocations, ctx.stats.misses)
    with pytest.raises(dml.UnsupportedError) as info:
        build()
    assert type(info.value) is dml.UnsupportedError
    assert (ctx.pool.allocations, ctx.stats.misses) == before, "GPU work before the UnsupportedError"
    return str(info.value)


def test_binding_limit_boundary_for_each_operator(adapter):
    """Exactly max-storage-buffer-binding-size is one binding; one word more is bound as
    segments, and both give the reference's result bit for bit."""
    dev = limited_device(adapter, max_storage_binding_size=LIMIT)
    rng = np.random.default_rng(0)
    cases = {  # op -> (element type, elements at the limit, run(x, device) -> (got, want))
        "Slice1": (U8, LIMIT, lambda x, d: (dml.slice(x, [5], [x.size - 7], [-3], device=d),
                                            reference.slice(x, [5], [x.size - 7], [-3]))),
        "Padding": (U8, LIMIT, lambda x, d: (dml.pad(x[:-9], [4], [5], mode="reflection", device=d),
                                             reference.pad(x[:-9], [4], [5], "reflection"))),
        "ReverseSubsequences": (F32, LIMIT // 4, lambda x, d: (
            dml.reverse_subsequences(x, np.array([777]), 0, device=d),
            reference.reverse_subsequences(x, np.array([777]), 0))),
        "Reduce": (F32, LIMIT // 4, lambda x, d: (dml.reduce(x, "max", device=d), reference.reduce(x, "max"))),
    }
    for op, (data_type, count, run) in cases.items():
        for n in (count, count + 4 // data_type.size):  # one binding, then two segments
            x = random_bits(rng, data_type.numpy, [n]) if data_type == U8 else rng.random(n, np.float32)
            with dev.profile() as prof:
                got, want = run(x, dev)
            assert_bits_equal(got, want)
            assert prof.rows and all(r["operator"] == op for r in prof.rows)
        field = "output_tensor" if op == "Padding" else "input_tensor"
        desc = _descs(dml.TensorDesc(data_type, [count + 4 // data_type.size]))[op] if op != "Padding" else \
            pad_desc(dml.TensorDesc(data_type, [count]), [0], [4 // data_type.size])
        program = dev.compile_operator(dev.create_operator(desc)).program
        role = "input" if field == "input_tensor" else "output"
        counts = {b.segments for k in program.kernels for b in k.buffers if b.key == (role, 0)}
        assert counts == {2}, (op, counts)


def test_total_size_counts_toward_the_binding(adapter):
    """A small tensor whose total_tensor_size_in_bytes exceeds the limit is bound whole: in
    segments, the elements it reads wherever they lie."""
    dev = limited_device(adapter, max_storage_binding_size=LIMIT)
    fits = dml.TensorDesc(U32, [4], total_tensor_size_in_bytes=LIMIT)
    over = dml.TensorDesc(U32, [4], [342], total_tensor_size_in_bytes=LIMIT + 16)  # the last at word 1026
    out = dml.TensorDesc(U32, [4])
    desc = dml.Slice1OperatorDesc(fits, out, [0], [4], [-1])
    (got,) = dev.compile_operator(dev.create_operator(desc)).execute([np.arange(LIMIT // 4, dtype=np.uint32)])
    np.testing.assert_array_equal(got, [3, 2, 1, 0])
    compiled = dev.compile_operator(dev.create_operator(dml.Slice1OperatorDesc(over, out, [0], [4], [-1])))
    assert {b.segments for b in compiled.program.kernels[0].buffers if b.role == "input"} == {2}
    (got,) = compiled.execute([np.arange(LIMIT // 4 + 4, dtype=np.uint32)])
    np.testing.assert_array_equal(got, [3 * 342, 2 * 342, 342, 0])


def test_tensor_larger_than_a_binding_is_bound_only_where_the_desc_reads(adapter):
    """A Tensor's buffer may exceed the binding limit; an operator binds only its desc's bytes."""
    dev = limited_device(adapter, max_storage_binding_size=LIMIT)
    big = dev.tensor(np.arange(3 * LIMIT, dtype=np.uint8))
    desc = dml.Slice1OperatorDesc(dml.TensorDesc(U8, [100]), dml.TensorDesc(U8, [100]), [0], [100], [-1])
    (got,) = dev.compile_operator(dev.create_operator(desc)).execute([big])
    np.testing.assert_array_equal(got.numpy(), np.arange(100, dtype=np.uint8)[::-1])


# ------------------------------------------------------------------ workgroup grid (small limits)
def test_workgroup_grid_folds_into_rows_up_to_the_limit_squared(adapter):
    """With 5 workgroups per dimension: 5, 6 (two rows) and 25 workgroups run correctly; 26
    raise UnsupportedError before GPU work. A data-movement workgroup covers
    WORKGROUP_SIZE invocations x RUN output elements."""
    from gpudml.kernels.movement.family import RUN, WORKGROUP_SIZE

    dev = limited_device(adapter, "cpu", max_workgroups_per_dimension=5)  # the CPU-class geometry
    rng = np.random.default_rng(1)
    per_group = WORKGROUP_SIZE * RUN
    for groups in (5, 6, 25):
        n = groups * per_group - 3
        x = random_bits(rng, np.uint32, [n])
        assert_bits_equal(dml.slice(x, [0], [n], [-1], device=dev), x[::-1])
        assert_bits_equal(dml.pad(x[:-2], [1], [1], mode="edge", device=dev),
                          reference.pad(x[:-2], [1], [1], "edge"))
        lengths = np.array([[n // 2]], np.uint32)
        assert_bits_equal(dml.reverse_subsequences(x.reshape(1, -1), lengths, 1, device=dev),
                          reference.reverse_subsequences(x.reshape(1, -1), lengths, 1))
    rows = rng.integers(0, 1000, size=(25 * 64, 3)).astype(np.int32)  # one reduce invocation per row
    np.testing.assert_array_equal(dml.reduce(rows, "sum", [1], device=dev), rows.sum(1, keepdims=True))
    too_many = np.zeros(25 * per_group + 1, np.uint32)
    message = _no_gpu_work(dev, lambda: dml.slice(too_many, [0], [too_many.size], device=dev))
    assert "need 26 workgroups, more than 5^2" in message


# ------------------------------------------------------------------ the real limits
@pytest.fixture(scope="module")
def first_device():
    return get_device(ADAPTERS[0])


def test_real_binding_limit_input(first_device):
    """At the real limit (one binding) and one byte beyond it (two segments)."""
    dev = first_device
    limit = dev.caps.max_storage_binding_size
    x = np.tile(np.arange(256, dtype=np.uint8), limit // 256 + 1)[: limit + 1]
    for n in (limit, limit + 1):
        got = dml.slice(x[:n], [n - 1000], [1000], [-1], device=dev)
        np.testing.assert_array_equal(got, x[:n][::-1][:1000])


def test_real_binding_limit_output(first_device):
    dev = first_device
    limit = dev.caps.max_storage_binding_size
    for n in (limit // 4, limit // 4 + 1):
        out = dml.pad(np.array([7], np.uint32), [n - 2], [1], value=3, device=dev)
        assert out.shape == (n,) and out[n - 2] == 7
        assert (out[: n - 2] == 3).all() and out[n - 1] == 3
        del out


def test_real_tensor_beyond_the_binding_limit(first_device):
    """A Tensor larger than max-storage-buffer-binding-size, read through a small desc
    (regression: the whole buffer used to be bound, a wgpu validation error)."""
    dev = first_device
    big = dev.empty(dml.TensorDesc(U8, [dev.caps.max_storage_binding_size + 64]))
    desc = dml.Slice1OperatorDesc(dml.TensorDesc(U8, [64]), dml.TensorDesc(U8, [64]), [0], [64], [-1])
    (got,) = dev.compile_operator(dev.create_operator(desc)).execute([big])
    np.testing.assert_array_equal(got.numpy(), np.zeros(64, np.uint8))


def test_real_workgroup_limit_folds(first_device):
    """65,537 workgroups of reduce outputs: more than max-compute-workgroups-per-dimension."""
    dev = first_device
    rows = dev.caps.max_workgroups_per_dimension * 64 + 65
    x = np.random.default_rng(2).integers(0, 2**32, size=(rows, 2), dtype=np.uint32)
    desc = reduce_desc(dml.TensorDesc(U32, x.shape), "sum", [1])
    compiled = dev.compile_operator(dev.create_operator(desc), "rows")  # (the CPU class's choice)
    assert compiled.program.kernels[-1].workgroups[1] == 2
    (got,) = compiled.execute([x])
    np.testing.assert_array_equal(got, x.sum(1, keepdims=True, dtype=np.uint32))


# ------------------------------------------------------------------ limits in the user's terms
def test_a_large_batch_convolution_needs_no_scratch_and_says_what_to_change():
    """Regression: a convolution of batch 100,000 (K = 27) was refused for '0 partial sums
    one combine pass merges in scratch', though one chunk of K needs no scratch. Its real
    limit, the bindings of one dispatch, names the bytes and what to change."""
    import dataclasses

    from gpudml import caps, compiler
    from gpudml.ops.convolution import infer_output as conv_desc

    F32 = dml.DataType.FLOAT32
    desc = conv_desc(dml.TensorDesc(F32, [100_000, 3, 32, 32]), dml.TensorDesc(F32, [16, 3, 3, 3]))
    with pytest.raises(dml.UnsupportedError) as info:
        compiler.compile(desc, caps.profile("vulkan-cpu"))
    message = str(info.value)
    assert "combine pass" not in message and "partial sums" not in message, message
    assert "its tensors take 6988801728 bytes, one dispatch reaches about 4294967296 bytes" in message, message
    assert "Use a smaller batch" in message, message
    # A GEMM whose K needs 3 chunks, where scratch holds 2: the sizes and what to change.
    from gpudml.ops.gemm import infer_output as gemm_desc

    gemm = gemm_desc(dml.TensorDesc(F32, [1, 70_000]), dml.TensorDesc(F32, [70_000, 4]))
    small = dataclasses.replace(caps.profile("vulkan-cpu"), max_buffer_size=32)
    with pytest.raises(dml.UnsupportedError) as info:
        compiler.compile(gemm, small, strategy="registers")
    message = str(info.value)
    assert message.startswith("Gemm: K = 70000 (the products summed per output) needs 3 chunks of partial "), message
    assert "4 outputs: 16 bytes, and the adapter's max-buffer-size (32 bytes) holds 2 chunks" in message, message
    assert "Use a smaller batch (at most 2 outputs per call) or another strategy (strategy=)" in message, message


def test_scan_and_lrn_limits_say_the_sizes_and_what_to_change():
    """A scan whose partial totals exceed the binding, and an LRN window beyond the loop
    budget: the sizes needed, the limits, and what the caller can change (no GPU needed)."""
    import dataclasses

    from gpudml import caps, compiler

    F32 = dml.DataType.FLOAT32
    x = dml.TensorDesc(F32, [4096, 4096])
    scan = dml.CumulativeSummationOperatorDesc(x, x, 1, dml.AxisDirection.INCREASING, False)
    small = dataclasses.replace(caps.profile("vulkan-cpu"), max_storage_binding_size=1024)
    with pytest.raises(dml.UnsupportedError) as info:
        compiler.compile(scan, small)
    message = str(info.value)
    assert message.startswith("scan of 4096 elements per line over 4096 lines: 'runs' needs "), message
    assert "max-storage-buffer-binding-size, 1024 bytes" in message and "Scan fewer lines per call" in message, message
    wide = dml.TensorDesc(F32, [1, 70_000, 1, 1])
    lrn = dml.LocalResponseNormalizationOperatorDesc(wide, wide, True, 69_999, 1e-4, 0.75, 1.0)
    with pytest.raises(dml.UnsupportedError) as info:
        compiler.compile(lrn, caps.profile("vulkan-cpu"))
    message = str(info.value)
    assert "a window of 69999 elements takes 70001 loop steps per output" in message, message
    assert "Use a smaller local_size" in message, message
