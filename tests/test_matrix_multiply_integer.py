"""The integer GEMMs (gpudml/ops/matrix_multiply_integer.py; kernels/gemm.py's integer path,
kernels/quantized.py): what the conformance kit does not cover: every operand type pair and
zero point kind on the packed words (B along K and along N) and element by element, the
packed dot instruction and its byte-by-byte fallback, split-K, both strategies under both
adapter classes, int32 wrapping against int64, requantization's ties (half to even) and
saturation, per-row and per-column scales, FLOAT16 scales and bias, the bad inputs' messages
before any GPU work, the ONNX contrib mapping of MatMulIntegerToFloat."""

from __future__ import annotations

import numpy as np
import pytest

import gpudml as dml
from gpudml.kernels import gemm as family
from gpudml.kernels import quantized
from gpudml.ops import matrix_multiply_integer as mm

CLASSES = ("cpu", "gpu")
INT8 = (np.int8, np.uint8)


def ints(rng, shape, dtype):
    info = np.iinfo(dtype)
    return rng.integers(int(info.min), int(info.max), shape, endpoint=True).astype(dtype)


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize(("a_type", "b_type"), [(np.int8, np.int8), (np.uint8, np.int8), (np.int8, np.uint8),
                                                 (np.uint8, np.uint8)])
def test_every_type_pair_and_zero_point_kind(adapter, cls, a_type, b_type):
    """MATRIX_MULTIPLY_INTEGER bit-exact against int64 for each operand type pair, zero
    points absent, one value, per row / per column; shapes that take the packed words (B
    along N: K, N multiples of 4), B transposed (along K), and element by element (K 7)."""
    device = dml.Device(adapter=adapter, adapter_class=cls)
    rng = np.random.default_rng(7)
    for m, k, n in ((5, 12, 8), (9, 7, 3)):
        a, b = ints(rng, (2, m, k), a_type), ints(rng, (k, n), b_type)
        for az, bz in ((None, None), (ints(rng, (1,), a_type), ints(rng, (n,), b_type)),
                       (ints(rng, (m,), a_type), None), (None, ints(rng, (1,), b_type))):
            got = dml.matrix_multiply_integer(a, b, az, bz, device=device)
            np.testing.assert_array_equal(got, mm.mmi_reference(a, b, az, bz), f"{m, k, n} {az} {bz}")
        az = ints(rng, (m,), a_type)
        got = dml.matrix_multiply_integer(a, b[np.newaxis], az, None, device=device)  # (B broadcast over the batch)
        np.testing.assert_array_equal(got, mm.mmi_reference(a, b, az, None))


@pytest.mark.parametrize("dot4", [True, False])
def test_packed_layouts_and_the_fallback(adapter, monkeypatch, dot4):
    """The packed words with B read along K (a transposed B: strides) and along N, with the
    dot4I8Packed instruction and with its byte-by-byte fallback: the same bits; the plan says
    which it took."""
    monkeypatch.setattr(family, "PACKED_DOT_INSTRUCTION", dot4)
    device = dml.Device(adapter=adapter, adapter_class="cpu")
    rng = np.random.default_rng(3)
    m, k, n = 6, 1028, 16  # (K past a chunk: split-K's partial sums and combine)
    a, bt = ints(rng, (m, k), np.uint8), ints(rng, (n, k), np.int8)
    az, bz = ints(rng, (m,), np.uint8), ints(rng, (n,), np.int8)
    want = mm.mmi_reference(a, bt.T, az, bz)
    for b_desc, b_values, layout in ((dml.TensorDesc(dml.DataType.INT8, [k, n], [1, k]), bt, "k"),
                                     (dml.TensorDesc(dml.DataType.INT8, [k, n]), np.ascontiguousarray(bt.T), "n")):
        desc = mm.mmi_infer_output(dml.TensorDesc(dml.DataType.UINT8, [m, k]), dml.TensorDesc(dml.DataType.UINT8, [m]),
                                   b_desc, dml.TensorDesc(dml.DataType.INT8, [n]))
        compiled = device.compile_operator(device.create_operator(desc), "registers")
        params = compiled.program.kernels[0].params  # (the products: partial sums, then the combine)
        assert params["packed"] == layout and params["dot4"] == (dot4 and device.caps.has(quantized.PACKED_DOT))
        (got,) = compiled.execute([a, az, b_values, bz])
        np.testing.assert_array_equal(got, want, layout)


def test_int32_wraps_as_int64_wrapped(device):
    """Sums past int32 (INT32_TO_FLOAT's 32-bit operands) wrap as int64 sums wrapped to int32."""
    a = np.full((2, 3), 2**30, np.int32)
    b = np.full((3, 2), 3, np.int32)
    scale = np.float32(1.0)
    got = dml.matrix_multiply_integer_to_float(a, scale, b=b, b_scale=scale, device=device)
    acc = ((2**30 * 3 * 3) & 0xFFFFFFFF) - 2**32 if (2**30 * 9) & 0x80000000 else (2**30 * 9) & 0xFFFFFFFF
    np.testing.assert_array_equal(got, np.full((2, 2), np.float32(acc), np.float32))


@pytest.mark.parametrize("cls", CLASSES)
def test_requantize_ties_half_to_even_and_saturation(adapter, cls):
    """QUANTIZED_LINEAR: sums times 0.5 land on halves, rounded to even (ONNX's rounding, not
    half away from zero); results past the type saturate; per-row output scale and zero
    point, per-column B scale; the reference bit-exact."""
    device = dml.Device(adapter=adapter, adapter_class=cls)
    a = np.arange(-8, 8, dtype=np.int8).reshape(4, 4)
    b = np.eye(4, dtype=np.int8)
    got = dml.quantized_linear_matrix_multiply(a, np.float32(0.5), b=b, b_scale=np.float32(1.0),
                                               output_scale=np.float32(1.0), device=device)
    np.testing.assert_array_equal(got, np.round(a / 2).astype(np.int8))  # numpy's round: half to even
    assert got.ravel().tolist()[:4] == [-4, -4, -3, -2]                     # -3.5 -> -4, -2.5 -> -2
    big = dml.quantized_linear_matrix_multiply(a * 16, np.float32(1.0), b=b * 8, b_scale=np.float32(1.0),
                                               output_scale=np.float32(1.0), output_zero_point=np.uint8(128),
                                               device=device)
    assert big.dtype == np.uint8 and big.min() == 0 and big.max() == 255
    rng = np.random.default_rng(5)
    a, b = ints(rng, (3, 7, 20), np.uint8), ints(rng, (20, 12), np.int8)
    kw = dict(b=b, b_scale=rng.uniform(0.01, 0.02, 12).astype(np.float32), b_zero_point=ints(rng, (12,), np.int8),
              output_scale=rng.uniform(0.5, 2, 7).astype(np.float32), output_zero_point=ints(rng, (7,), np.int8))
    az = ints(rng, (1,), np.uint8)
    got = dml.quantized_linear_matrix_multiply(a, np.float32(0.03), az, **kw, device=device)
    np.testing.assert_array_equal(got, mm.qlmm_reference(a, np.float32(0.03), az, **kw))
    assert got.dtype == np.int8


@pytest.mark.parametrize("cls", CLASSES)
def test_integer_to_float_float16_and_bias(adapter, cls):
    """INTEGER_TO_FLOAT with FLOAT16 scales and bias (16-bit operands), and FLOAT32 with a
    bias per column: within the documented tolerance (0 but for flushing and a fused
    multiply-add), split-K (K past a chunk) included."""
    device = dml.Device(adapter=adapter, adapter_class=cls)
    rng = np.random.default_rng(9)
    for dtype, ftype, k in ((np.int16, np.float16, 30), (np.uint8, np.float32, 1100)):
        a, b = ints(rng, (2, 5, k), dtype) // 4, ints(rng, (k, 6), dtype) // 4
        sa, sb = rng.uniform(0.01, 0.02, 5).astype(ftype), rng.uniform(0.01, 0.02, 6).astype(ftype)
        bias = rng.uniform(-1, 1, 6).astype(ftype)
        kw = dict(b=b, b_scale=sb, b_zero_point=ints(rng, (6,), dtype) // 4, bias=bias)
        got = dml.matrix_multiply_integer_to_float(a, sa, None, **kw, device=device)
        want = mm.mmitf_reference(a, sa, None, **kw)
        tol = mm.mmitf_tolerance(want, [a, sa, b, sb, kw["b_zero_point"], bias],
                                 {"given": ("a", "a_scale", "b", "b_scale", "b_zero_point", "bias")})
        assert got.dtype == ftype
        assert np.all(np.abs(got.astype(np.float64) - want) <= tol)


@pytest.mark.any_class
@pytest.mark.parametrize(("call", "fragment"), [
    (lambda d: dml.quantized_linear_matrix_multiply(np.ones((2, 3), np.int8), np.float32(0), b=np.ones((3, 2), np.int8),
                                                    b_scale=np.float32(1), output_scale=np.float32(1), device=d),
     "a_scale must be positive and finite"),
    (lambda d: dml.matrix_multiply_integer_to_float(np.ones((2, 3), np.int8), np.float32(1), b=np.ones((3, 2), np.int8),
                                                    b_scale=np.array([1, np.nan], np.float32), device=d),
     "b_scale must be positive and finite"),
    (lambda d: dml.quantized_linear_matrix_multiply(np.ones((2, 3), np.int8), np.float32(1), b=np.ones((3, 2), np.int8),
                                                    b_scale=np.float32(1), output_scale=np.float32(-2), device=d),
     "output_scale must be positive and finite"),
    (lambda d: dml.matrix_multiply_integer(np.ones((2, 3), np.int8), np.ones((3, 2), np.int8),
                                           np.array([1], np.uint8), device=d),
     "a_zero_point_tensor.data_type UINT8 must equal a_tensor.data_type INT8"),
    (lambda d: dml.matrix_multiply_integer(np.ones((2, 3), np.int8), np.ones((3, 2), np.int8),
                                           None, np.array([1, 2, 3], np.int8), device=d),
     "b_zero_point_tensor.sizes"),
    (lambda d: dml.matrix_multiply_integer(np.ones((2, 3), np.int8), np.ones((4, 2), np.int8), device=d),
     "K differs"),
])
def test_bad_input_named_before_gpu_work(vulkan_device, call, fragment):
    """Scales of zero, NaN or negative, zero points of the wrong type or length, K that
    differs: an InvalidArgumentError naming the field, the rule and the values, before any
    dispatch (the device's pool untouched)."""
    pool = vulkan_device._ctx.pool
    before = pool.allocations
    with pytest.raises(dml.InvalidArgumentError) as info:
        call(vulkan_device)
    assert type(info.value) is dml.InvalidArgumentError and fragment in str(info.value), str(info.value)
    assert pool.allocations == before


@pytest.mark.any_class
def test_matmul_integer_to_float_contrib_mapping(vulkan_device):
    """com.microsoft MatMulIntegerToFloat through a session: A and B of one type (the
    operator) and of different types (UINT8 x INT8: MATRIX_MULTIPLY_INTEGER, cast, multiply,
    add), against the reference's arithmetic."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    import gpudml.onnx as gonnx

    rng = np.random.default_rng(11)
    for b_type in (np.uint8, np.int8):
        a, b = ints(rng, (3, 8), np.uint8), ints(rng, (8, 5), b_type)
        sa, sb = np.float32(0.02), rng.uniform(0.01, 0.02, 5).astype(np.float32)
        bz, bias = ints(rng, (5,), b_type), rng.uniform(-1, 1, 5).astype(np.float32)
        inits = [helper.make_tensor(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape, v.ravel().tolist())
                 for n, v in (("b", b), ("sa", np.asarray(sa).reshape(())), ("sb", sb), ("bz", bz), ("bias", bias))]
        node = helper.make_node("MatMulIntegerToFloat", ["a", "b", "sa", "sb", "", "bz", "bias"], ["y"],
                                domain="com.microsoft")
        graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("a", TensorProto.UINT8, [3, 8])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 5])], inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                        helper.make_opsetid("com.microsoft", 1)])
        (got,) = gonnx.InferenceSession(model.SerializeToString(), device=vulkan_device).run(None, {"a": a})
        acc = mm.mmi_reference(a, b, None, bz).astype(np.float64)
        want = acc * np.float64(sa) * sb.astype(np.float64) + bias
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        assert onnx is not None
