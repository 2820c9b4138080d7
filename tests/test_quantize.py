"""What is special about DML_QUANTIZE and DML_DYNAMIC_QUANTIZE_LINEAR (the conformance kit
sweeps their types, ranks and layouts): ONNX's float32 rounding at a tie the exact quotient
decides the other way, blocked scales over strided and broadcast inputs, the bad inputs each
named before any GPU work, and the dynamic form's edge cases (all zeros, one sign, NaN,
infinities). The fixture `device` runs each test on both software adapters and both adapter
classes."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import gpudml as dml
from gpudml import reference

F32 = np.float32


def test_rounding_is_onnx_float32_quotient(device):
    """0.5 / fl32(5/255) is 25.4999998..., its float32 value 25.5: ONNX and onnxruntime round
    that to 26 (half to even), as QUANTIZE does; the exact quotient would give 25."""
    scale = F32(5) / F32(255)
    x = np.array([0.5, -0.5, 1.5 * scale, 2.5 * scale], F32)
    got = dml.quantize(x, np.array([scale], F32), dtype="int8", device=device)
    np.testing.assert_array_equal(got, [26, -26, 2, 2])  # (1.5 and 2.5 times the scale: halves to even)
    np.testing.assert_array_equal(got, reference.quantize(x, np.array([scale], F32), dtype="int8"))


@pytest.mark.parametrize("scale", [5 / 255, 0.1, 1 / 3, 7.77, 3 * 2.0**-10])
def test_quotients_near_a_half_are_decided_exactly(device, scale):
    """x within 3 ULP of (k + 1/2) scale: the kernel's integer decision near a half (and its
    fast path elsewhere) against numpy's correctly rounded float32 quotient."""
    rng = np.random.default_rng(11)
    s = F32(scale)
    exact = ((np.arange(-130, 130) + F32(0.5)) * s).astype(F32)
    parts, up, down = [exact], exact, exact
    for _ in range(3):  # 1, 2 and 3 ULP either side
        up, down = np.nextafter(up, F32(np.inf)), np.nextafter(down, F32(-np.inf))
        parts += [up, down]
    x = np.concatenate(parts)
    x = np.concatenate([x, (rng.standard_normal(500) * 40 * s).astype(F32), [s / 2, np.nextafter(s / 2, F32(1))]])
    for dtype in ("int8", "uint8"):
        got = dml.quantize(x.astype(F32), np.array([s], F32), dtype=dtype, device=device)
        np.testing.assert_array_equal(got, reference.quantize(x.astype(F32), np.array([s], F32), dtype=dtype))


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_blocked_scales_on_a_strided_input(device, dtype):
    """Blocks of 4 along axis 2 of a transposed view (Tensor strides), a zero point per block."""
    rng = np.random.default_rng(0)
    base = (rng.standard_normal((8, 3, 2)) * 20).astype(F32)
    x = device.tensor(base).with_desc(dml.TensorDesc(dml.DataType.FLOAT32, [2, 3, 8], [1, 2, 6]))
    logical = np.ascontiguousarray(base.transpose(2, 1, 0))
    scale = rng.uniform(0.05, 2.0, (2, 3, 2)).astype(F32)
    zero = rng.integers(-20, 20, (2, 3, 2)).astype(np.int8 if dtype == "int8" else np.uint8)
    got = np.asarray(dml.quantize(x, scale, zero, dtype=dtype, axis=2, block_size=4, device=device))
    want = reference.quantize(logical, scale, zero, dtype=dtype, axis=2, block_size=4)
    np.testing.assert_array_equal(got, want)
    blocked = np.repeat(scale, 4, axis=2)
    np.testing.assert_array_equal(want, reference.quantize(logical, blocked, np.repeat(zero, 4, axis=2),
                                                           dtype=dtype))


def test_a_desc_with_blocks_on_two_axes_and_a_broadcast_input(device):
    """The desc's own rule: a quantization tensor's size a divisor of each axis (blocks on
    several axes at once), the input read broadcast by stride 0."""
    x = dml.TensorDesc(dml.DataType.FLOAT16, [4, 6], [0, 1])  # one row of 6 read 4 times
    scale = dml.TensorDesc(dml.DataType.FLOAT16, [2, 3])
    out = dml.TensorDesc(dml.DataType.UINT8, [4, 6])
    desc = dml.QuantizeOperatorDesc(x, "SCALE", [scale], out)
    compiled = device.compile_operator(device.create_operator(desc))
    row = np.array([0.0, 1.0, -1.0, 7.5, 100.0, 3.25], np.float16)
    s = np.array([[0.5, 1.0, 2.0], [0.25, 4.0, 1.0]], np.float16)
    got = np.asarray(compiled.execute([row, s])[0])
    np.testing.assert_array_equal(got, reference.quantize(np.broadcast_to(row, (4, 6)), s, dtype="uint8"))


@pytest.mark.parametrize("call, message", [
    (lambda x: dml.quantize(x, np.array([0.5, 0.0], F32), dtype="int8", axis=1),
     "quantize: scale: every scale must be positive"),
    (lambda x: dml.quantize(x, np.array([np.nan], F32), dtype="int8"), "quantize: scale: every scale must be"),
    (lambda x: dml.quantize(x, np.array([-1.0], F32), dtype="int8"), "quantize: scale: every scale must be"),
    (lambda x: dml.quantize(x, np.ones((2, 2), F32), dtype="int8", axis=1, block_size=3),
     "block_size = 3 must be a positive divisor of x.shape[1] = 4"),
    (lambda x: dml.quantize(x, np.ones((2, 3), F32), dtype="int8", axis=1, block_size=2),
     "scale shape [2, 3] must be x's [2, 4] with x.shape[1] / block_size = 4 / 2 = 2 along axis 1: [2, 2]"),
    (lambda x: dml.quantize(x, np.ones(4, F32), np.zeros(4, np.uint8), dtype="int8", axis=1),
     "quantization_tensors[1] (the zero point) has data type UINT8; it must be output_tensor's, INT8"),
    (lambda x: dml.quantize(x, np.ones(4, F32), np.zeros(2, np.int8), dtype="int8", axis=1),
     "quantize: zero_point shape [2] must be one element or 1-D of x.shape[1] = 4"),
    (lambda x: dml.quantize(x, np.ones(4, np.float16), dtype="int8", axis=1),
     "quantization_tensors[0] (the scale) has data type FLOAT16; it must be input_tensor's, FLOAT32"),
    (lambda x: dml.quantize(x, np.ones(1, F32), np.array([16], np.uint8), dtype="uint4"),
     "quantize: zero_point: a zero point of a 4-bit output (dtype uint4) holds values in [0, 15] (one a byte); 1 of "
     "1 are not, e.g. [16]"),
    (lambda x: dml.quantize(x, np.ones(1, F32), np.array([-9], np.int8), dtype="int4"), "holds values in [-8, 7]"),
    (lambda x: dml.quantize(x, np.ones(1, F32), np.array([1], ml_dtypes.int4), dtype="int8"),
     "quantize: zero_point: a INT4 zero point needs dtype INT4 (the output's type), got dtype int8"),
    (lambda x: dml.quantize(x, np.ones(1, F32), np.array([1], ml_dtypes.int4), dtype="uint4"),
     "a INT4 zero point needs dtype INT4"),
    (lambda x: dml.quantize(x, np.ones(1, F32), np.array([1], np.uint8), dtype="int4"),
     "quantization_tensors[1] (the zero point) has data type UINT8; it must be output_tensor's, INT8"),
    (lambda x: dml.quantize(x[:, :1], np.ones(1, F32), dtype="int4"),
     "quantize: a 4-bit output of sizes [2, 1]: its last size must be 2 or more"),
    (lambda x: dml.quantize(x, np.ones(1, F32), dtype="int16"),
     "Quantize: output_tensor.data_type INT16 is not supported"),
])
def test_bad_input_is_named_before_any_gpu_work(device, call, message):
    x = np.zeros((2, 4), F32)
    with pytest.raises(dml.InvalidArgumentError, match=message.replace("[", r"\[").replace("]", r"\]")
                       .replace("(", r"\(").replace(")", r"\)").replace("*", r"\*")):
        call(x)


def test_desc_rules():
    x, out = dml.TensorDesc("FLOAT32", [2, 6]), dml.TensorDesc("UINT8", [2, 6])
    from gpudml.ops.quantize import validate
    level = dml.FeatureLevel.FL_6_3
    for desc, message in [
        (dml.QuantizeOperatorDesc(x, "NONE", [], out), "quantization_type NONE"),
        (dml.QuantizeOperatorDesc(x, "SCALE_ZERO_POINT", [dml.TensorDesc("FLOAT32", [1, 1])], out),
         "quantization_tensors holds 1 tensors; quantization_type SCALE_ZERO_POINT takes 2"),
        (dml.QuantizeOperatorDesc(x, "SCALE", [dml.TensorDesc("FLOAT32", [1, 4])], out),
         r"quantization_tensors\[0\].sizes\[1\] = 4 must be 1, input_tensor.sizes\[1\] = 6 or a divisor"),
        (dml.QuantizeOperatorDesc(x, "SCALE", [dml.TensorDesc("FLOAT32", [1])], out), "same DimensionCount"),
    ]:
        with pytest.raises(dml.InvalidArgumentError, match=message):
            validate(desc, level)
    with pytest.raises(dml.InvalidArgumentError, match=r"not available at feature level FL_6_2 \(introduced at FL_6_3"):
        validate(dml.QuantizeOperatorDesc(x, "SCALE", [dml.TensorDesc("FLOAT32", [1, 1])], out),
                 dml.FeatureLevel.FL_6_2)


@pytest.mark.parametrize("dtype", ["uint8", "int8"])
@pytest.mark.parametrize("values", [
    [0.0, 0.0, 0.0],                      # scale 0: zero point qmin, every y qmin
    [0.5, 1.5, 3.0],                      # all positive: min 0
    [-0.5, -1.5, -3.0],                   # all negative: max 0, zero point qmax
    [1.0, np.nan, 2.0],                   # NaN: scale NaN, zero point and y qmin
    [1.0, np.inf, -2.0],                  # +inf: scale inf, y the zero point
    [-3.0e38, 3.0e38, 1.0],               # max - min overflows: scale inf
    [1e-30, -1e-30, 0.0],                 # tiny
])
def test_dynamic_quantize_linear_edges(device, dtype, values):
    x = np.array(values, F32)
    got = dml.dynamic_quantize_linear(x, dtype=dtype, device=device)
    want = reference.dynamic_quantize_linear(x, dtype=dtype)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)
    qmin = -128 if dtype == "int8" else 0
    if not np.isfinite(values).all() and np.isnan(values).any() or not any(values):
        assert int(got[2][0]) == qmin and (got[0] == qmin).all()


def test_dynamic_quantize_linear_is_onnxs_on_a_large_input(device):
    """A tensor that takes several reduction partials, against ONNX's formula written out."""
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((3, 257, 129)) * 3 + 1).astype(F32)
    y, scale, zero = dml.dynamic_quantize_linear(x, device=device)
    lo, hi = min(F32(0), x.min()), max(F32(0), x.max())
    s = F32(hi - lo) / F32(255)
    z = np.clip(np.rint(F32(0) - lo / s), 0, 255)
    assert scale.shape == (1, 1, 1) and scale[0, 0, 0] == s and zero[0, 0, 0] == z
    want = np.clip(np.rint(x / s) + z, 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(y, want)


def test_quantize_in_a_graph_fuses_with_element_wise_producers(device):
    """x * 3 + 1 quantized per block of 4 (a graph): fused into fewer kernels, the same bits
    as the operators one by one and as the reference."""
    rng = np.random.default_rng(12)
    g = dml.Graph(device)
    x = g.input([3, 8], dtype=np.float32, name="x")
    scale = rng.uniform(0.05, 0.5, (3, 2)).astype(F32)
    zero = rng.integers(-10, 10, (3, 2)).astype(np.int8)
    y = dml.quantize(dml.add(dml.multiply(x, np.full([1, 1], 3, F32)), np.ones([1, 1], F32)), scale, zero,
                     dtype="int8", axis=1, block_size=4)
    fused, unfused = g.compile([y]), g.compile([y], fuse=False)
    a = (rng.standard_normal((3, 8)) * 4).astype(F32)
    want = reference.quantize(a * F32(3) + F32(1), scale, zero, dtype="int8", axis=1, block_size=4)
    np.testing.assert_array_equal(fused({"x": a})[0], want)
    np.testing.assert_array_equal(unfused({"x": a})[0], want)
    assert fused.dispatch_count < unfused.dispatch_count


def test_rank_8_strided_blocked(device):
    """A rank-8 view with every stride doubled, blocked along its last axis: nine axes in the
    kernel (the blocked one split), none mergeable."""
    rng = np.random.default_rng(13)
    shape = [2, 3, 2, 3, 2, 3, 2, 4]
    base = rng.standard_normal([2 * n for n in shape]).astype(F32)
    strides = [2 * int(np.prod([2 * m for m in shape[k + 1:]])) for k in range(8)]
    x = device.tensor(base).with_desc(dml.TensorDesc(dml.DataType.FLOAT32, shape, strides))
    logical = np.ascontiguousarray(base[tuple(slice(None, None, 2) for _ in shape)])
    scale = rng.uniform(0.1, 1, shape[:7] + [2]).astype(F32)
    got = np.asarray(dml.quantize(x, scale, dtype="int8", axis=7, block_size=2, device=device))
    np.testing.assert_array_equal(got, reference.quantize(logical, scale, dtype="int8", axis=7, block_size=2))


# ---------------------------------------------------------------------------- INT4 / UINT4
@pytest.mark.parametrize("dtype", ["int4", "uint4"])
def test_4bit_values_packed_two_a_byte(device, dtype):
    """Saturation to the 4-bit range, halves to even, NaN 0, the even element in the low
    nibble; the bytes' Tensor (INT8 for INT4) read back by dml.unpack4 and dequantized as it is."""
    x = np.array([-9.0, -8.4, -0.5, 0.5, 1.5, 2.5, 7.4, 7.6, 100.0, np.nan, 15.5, 14.5], F32)
    values = {"int4": [-8, -8, 0, 0, 2, 2, 7, 7, 7, 0, 7, 7], "uint4": [0, 0, 0, 0, 2, 2, 7, 8, 15, 0, 15, 14]}[dtype]
    v = np.array(values) & 15
    want = (v[0::2] | v[1::2] << 4).astype(np.uint8).view(np.int8 if dtype == "int4" else np.uint8)
    got = dml.quantize(device.tensor(x), np.array([1.0], F32), dtype=dtype, device=device)
    assert got.desc.data_type == (dml.DataType.INT8 if dtype == "int4" else dml.DataType.UINT8)
    np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal(reference.quantize(x, np.array([1.0], F32), dtype=dtype), want)
    unpacked = dml.unpack4(got, dtype)
    assert unpacked.dtype == np.dtype(getattr(ml_dtypes, dtype))
    np.testing.assert_array_equal(unpacked.astype(np.int64), values)
    back = dml.dequantize(got, np.array([2.0], F32), bits=4, device=device)
    np.testing.assert_array_equal(back.numpy(), np.array(values, F32) * 2)


@pytest.mark.parametrize("dtype", ["int4", "uint4"])
def test_4bit_odd_rows_blocked_on_a_strided_input(device, dtype):
    """A transposed view [3, 5] (odd rows: each row's last byte's high nibble 0), blocks of 5
    along axis 1 and per axis 0, a zero point of the 4-bit range one a byte and as ml_dtypes
    values; the round trip through DEQUANTIZE with `size`."""
    rng = np.random.default_rng(4)
    base = (rng.integers(-30, 30, (5, 3)) / 4).astype(F32)
    x = device.tensor(base).with_desc(dml.TensorDesc(dml.DataType.FLOAT32, [3, 5], [1, 3]))
    logical = np.ascontiguousarray(base.T)
    scale = np.array([0.5, 1.0, 0.75], F32)
    lo, hi = (-8, 7) if dtype == "int4" else (0, 15)
    zero = rng.integers(lo, hi + 1, 3).astype(np.int8 if dtype == "int4" else np.uint8)
    for z in (zero, zero.astype(getattr(ml_dtypes, dtype))):
        got = dml.quantize(x, scale, z, dtype=dtype, axis=0, device=device).numpy()
        assert got.shape == (3, 3)
        assert not (got.view(np.uint8)[:, -1] >> 4).any()
        np.testing.assert_array_equal(got, reference.quantize(logical, scale, zero, dtype=dtype, axis=0))
    q = np.clip(np.rint(logical / scale[:, None]) + zero[:, None], lo, hi)
    np.testing.assert_array_equal(dml.unpack4(got, dtype, 5).astype(np.int64), q)
    back = dml.dequantize(device.tensor(got), scale, zero, axis=0, bits=4, size=5, device=device).numpy()
    np.testing.assert_array_equal(back, ((q - zero[:, None]) * scale[:, None]).astype(F32))
    blocked = np.array([[0.5], [2.0], [1.0]], F32)
    got = dml.quantize(x, blocked, dtype=dtype, axis=1, block_size=5, device=device).numpy()
    np.testing.assert_array_equal(got, reference.quantize(logical, blocked, dtype=dtype, axis=1, block_size=5))


def test_4bit_desc_with_a_packed_zero_point_and_float16(device):
    """The desc's forms: FLOAT16 input, blocks of 2 along the last axis, the zero point packed
    two a byte (the scale's last size halved)."""
    x = dml.TensorDesc(dml.DataType.FLOAT16, [2, 8])
    scale = dml.TensorDesc(dml.DataType.FLOAT16, [2, 4])
    zero = dml.TensorDesc(dml.DataType.INT8, [2, 2])
    out = dml.TensorDesc(dml.DataType.INT8, [2, 4])
    desc = dml.QuantizeOperatorDesc(x, "SCALE_ZERO_POINT", [scale, zero], out)
    compiled = device.compile_operator(device.create_operator(desc))
    rng = np.random.default_rng(5)
    xv = (rng.integers(-40, 40, (2, 8)) / 4).astype(np.float16)
    sv = rng.choice([0.5, 1.0, 0.25], (2, 4)).astype(np.float16)
    zv = np.array([[-3, 2, 7, -8], [0, 1, -1, 5]])
    packed = ((zv[:, 0::2] & 15) | (zv[:, 1::2] & 15) << 4).astype(np.uint8).view(np.int8)
    got = np.asarray(compiled.execute([xv, sv, packed])[0])
    want = np.clip(np.rint(xv.astype(F32) / np.repeat(sv, 2, 1).astype(F32)) + np.repeat(zv, 2, 1), -8, 7)
    np.testing.assert_array_equal(dml.unpack4(got, "int4").astype(np.int64), want)
    np.testing.assert_array_equal(got, reference.quantize(xv, sv, packed, dtype="int4"))


def test_4bit_desc_rules():
    from gpudml.ops.quantize import validate
    level = dml.FeatureLevel.FL_6_3
    x, s = dml.TensorDesc("FLOAT32", [2, 5]), dml.TensorDesc("FLOAT32", [1, 1])
    for out, zero, message in [
        (dml.TensorDesc("INT8", [2, 2]), None, r"output_tensor.sizes \[2, 2\] must equal input_tensor.sizes \[2, 5\] "
         r"\(8-bit\) or, for INT4/UINT4 as their bytes, \[2, 3\]"),
        (dml.TensorDesc("UINT8", [2, 3]), dml.TensorDesc("INT8", [1, 1]), "the zero point. has data type INT8"),
    ]:
        tensors = [s] if zero is None else [s, zero]
        with pytest.raises(dml.InvalidArgumentError, match=message):
            validate(dml.QuantizeOperatorDesc(x, "SCALE" if zero is None else "SCALE_ZERO_POINT", tensors, out), level)
    x1 = dml.TensorDesc("FLOAT32", [2, 1])
    with pytest.raises(dml.InvalidArgumentError, match="must equal input_tensor.sizes"):  # (1 is 8-bit's)
        validate(dml.QuantizeOperatorDesc(x1, "SCALE", [s], dml.TensorDesc("INT8", [2, 2])), level)
    x4 = dml.TensorDesc("FLOAT32", [2, 4])
    with pytest.raises(dml.InvalidArgumentError, match=r"zero point\) must be \[2, 4\] or \[2, 2\]"):
        validate(dml.QuantizeOperatorDesc(x4, "SCALE_ZERO_POINT", [dml.TensorDesc("FLOAT32", [2, 4]),
                                                                   dml.TensorDesc("INT8", [2, 1])],
                                          dml.TensorDesc("INT8", [2, 2])), level)



ONE_PASS = {"rows": ["reduce"], "workgroup": ["reduce_workgroup"]}
TWO_STAGES = {"partials": ["reduce_partials", "reduce_combine"], "workgroup": ["reduce_workgroup"] * 2,
              "columns": ["reduce_partials", "reduce_workgroup"]}


@pytest.mark.parametrize("sizes", [(3, 5), (2, 3, 1000), (2, 300_000)])
def test_dynamic_quantize_linear_is_one_pass_and_two_or_three_dispatches(device, sizes):
    """Every strategy the adapter offers: the least and greatest values in one reduction (one
    pass over the input) whose last stage writes the scale and the zero point, then the
    quantizing kernel: 2 dispatches, 3 where the reduction merges partial States (the
    default plan of a small input is 2; 600,000 elements take a second stage on every
    adapter: one invocation's loop budget). A NaN in the last element, and an input read
    through strides (every other element), reach every stage."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(sizes) * 3 + 1).astype(F32)
    one = [1] * len(sizes)
    strides = [2 * s for s in dml.TensorDesc("FLOAT32", sizes).effective_strides]
    for strided in (False, True):
        inp = dml.TensorDesc("FLOAT32", sizes, strides if strided else None)
        desc = dml.DynamicQuantizeLinearOperatorDesc(inp, dml.TensorDesc("INT8", sizes), dml.TensorDesc("FLOAT32", one),
                                                     dml.TensorDesc("INT8", one))
        op = device.create_operator(desc)
        default = device.compile_operator(op)
        if x.size < 100:
            assert len(default.program.kernels) == 2
        for strategy in default.strategies:
            compiled = device.compile_operator(op, strategy)
            kernels = [k.template.removesuffix(".wgsl.j2") for k in compiled.program.kernels]
            assert kernels[-1] == "elementwise", kernels
            assert kernels[:-1] in (ONE_PASS.get(strategy), TWO_STAGES.get(strategy)), (strategy, kernels)
            if x.size > 500_000:
                assert len(kernels) == 3, (strategy, kernels)
            for values in (x, np.where(np.arange(x.size).reshape(sizes) == x.size - 1, np.nan, x).astype(F32)):
                feed = np.stack([values, -values], -1) if strided else values  # (the strided view reads values)
                got = compiled.execute([feed])
                for g, w in zip(got, reference.dynamic_quantize_linear(values, dtype="int8")):
                    np.testing.assert_array_equal(g, w, err_msg=f"{sizes} {strategy} strided={strided}")


def test_dynamic_quantize_linear_on_a_gpu_class_adapter_cuts_a_whole_tensor_by_workgroups(device):
    """A strided input makes the reduction family put `columns` first on GPU-class adapters
    (its invocations own neighbouring outputs); a whole tensor has one output, so the
    operator puts it last: `workgroup`, one pass and 2 dispatches for a small input."""
    gpu = dml.Device(adapter=device.adapter_name, adapter_class="gpu")
    inp = dml.TensorDesc("FLOAT32", [3, 5], [10, 2])
    one = [1, 1]
    desc = dml.DynamicQuantizeLinearOperatorDesc(inp, dml.TensorDesc("UINT8", [3, 5]), dml.TensorDesc("FLOAT32", one),
                                                 dml.TensorDesc("UINT8", one))
    compiled = gpu.compile_operator(gpu.create_operator(desc))
    assert compiled.strategy == "workgroup" and compiled.strategies[-1] == "columns"
    assert len(compiled.program.kernels) == 2
    x = np.random.default_rng(5).standard_normal((3, 10)).astype(F32)
    for g, w in zip(compiled.execute([x]), reference.dynamic_quantize_linear(x[:, ::2])):
        np.testing.assert_array_equal(g, w)


def test_min_max_reduction_takes_the_zero_points_levels_and_nothing_else():
    """The reduction family's MIN_MAX (DYNAMIC_QUANTIZE_LINEAR's) needs `dql` and binds the
    zero point as output 1 of the kernel writing the scale; no other function takes `dql`."""
    from gpudml.errors import InternalError
    from gpudml.kernels import reduction

    x, one = dml.TensorDesc("FLOAT32", [4, 6]), dml.TensorDesc("FLOAT32", [1, 1])
    made = reduction.plan(reduction.MIN_MAX, x, one, (0, 1), None, "partials", dql=(0, 255))
    outputs = [[b.name for b in d.buffers if b.role == "output"] for d in made.dispatches]
    assert outputs == [[], ["output", "zero_point"]]
    with pytest.raises(InternalError, match="MIN_MAX needs it"):
        reduction.plan(reduction.MIN_MAX, x, one, (0, 1), None, "rows")
    with pytest.raises(InternalError, match="no other function takes it"):
        reduction.plan("MIN", x, one, (0, 1), None, "rows", dql=(0, 255))
