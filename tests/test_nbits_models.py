"""4-bit weights end to end: llama_past.onnx (scripts/export_transformers.py) quantized by
onnxruntime's MatMulNBitsQuantizer (scripts/quantize_nbits.py: blocks of 32, symmetric and
asymmetric: llama_past_nbits_sym.onnx and llama_past_nbits_asym.onnx; every MatMul with a
constant weight a com.microsoft MatMulNBits) against
onnxruntime's CPU provider; a MatMulNBits node of every form (zero points packed, one a byte,
none; 8 bits; bias; a batch of rows); what is refused; the fused kernel on both adapter
classes; DequantizeLinear at opset 21 on DEQUANTIZE (4-bit constants, blocked, per axis).

Tolerance: 1e-4 of the largest reference value. Both providers dequantize each weight to the
same float32 ((q - z) * scale, one rounding) and sum float32 products; onnxruntime's CPU
MatMulNBits at accuracy_level 0 (the quantizer's default, written as no attribute) blocks K
differently and uses fused multiply-adds, gpudml sums in order of k (the decode-shaped gemv:
the scale once per block), so the sums differ by a few ULP of their magnitude, carried
through 2 layers of RMSNorm, attention and SwiGLU (the float model's own test:
tests/test_onnx_transformers.py, 5e-5)."""

from __future__ import annotations

from pathlib import Path

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import gpudml as dml
import gpudml.onnx as gonnx
from gpudml import reference
from gpudml.errors import UnsupportedError
from gpudml.ops import gemm as gemm_op
from gpudml.ops.dequantize import pack4

ort = pytest.importorskip("onnxruntime")

MODELS = Path(__file__).parent / "data" / "models"
TOLERANCE = 1e-4
PAST = [f"past_key_values.{i}.{kind}" for i in range(2) for kind in ("key", "value")]


def _oracle(model: onnx.ModelProto, feeds: dict) -> list:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def _feeds(tokens: int, past: int) -> dict:
    rng = np.random.default_rng(1)
    ids = rng.integers(0, 96, (1, tokens))
    return {"input_ids": ids, "position_ids": np.arange(past, past + tokens, dtype=np.int64)[None],
            "attention_mask": np.ones((1, past + tokens), np.int64),
            **{name: rng.standard_normal((1, 2, past, 8)).astype(np.float32) for name in PAST}}


@pytest.mark.parametrize("name", ["llama_past_nbits_sym", "llama_past_nbits_asym"])
@pytest.mark.parametrize("tokens", [1, 3])
def test_quantized_llama_matches_onnxruntime(name, tokens, device):
    """A decode step (one token: the gemv strategy) and a prompt of 3 (registers/workgroup)."""
    model = onnx.load(str(MODELS / f"{name}.onnx"))
    assert sum(n.op_type == "MatMulNBits" for n in model.graph.node) == 15
    assert (MODELS / f"{name}.onnx").stat().st_size < 400_000
    feeds = _feeds(tokens, 5)
    want = _oracle(model, feeds)
    got = gonnx.InferenceSession(model, device=device).run(None, feeds)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=0, atol=TOLERANCE * np.abs(w).max(), err_msg=name)


def _nbits_model(k, n, block, bits=4, zero="packed", bias=False, rows=(1,), g_idx=False, seed=0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    blocks = k // block
    per_byte = 8 // bits
    blob = rng.integers(0, 256, (n, blocks, block // per_byte)).astype(np.uint8)
    scales = rng.uniform(0.01, 0.1, n * blocks).astype(np.float32)
    inits = [numpy_helper.from_array(blob, "b"), numpy_helper.from_array(scales, "s")]
    inputs = ["a", "b", "s"]
    if zero == "packed":
        count = n * (-(-blocks // per_byte))
        inits.append(numpy_helper.from_array(rng.integers(0, 256, count).astype(np.uint8), "z"))
        inputs.append("z")
    elif zero == "float":
        inits.append(numpy_helper.from_array(np.ones(n * blocks, np.float32), "z"))
        inputs.append("z")
    if g_idx or bias:
        inputs.append("")
        if g_idx:
            inits.append(numpy_helper.from_array(np.arange(k, dtype=np.int32) // block, "g"))
            inputs[-1] = "g"
    if bias:
        if "z" not in inputs:
            inputs.insert(3, "")
        inits.append(numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "bias"))
        inputs.append("bias")
    node = helper.make_node("MatMulNBits", inputs, ["y"], domain="com.microsoft", K=k, N=n, bits=bits,
                            block_size=block, accuracy_level=4)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [*rows, k])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [*rows, n])], inits)
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 10
    return model


def _level0(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with accuracy_level 0 (onnxruntime's float32 products)."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    for a in out.graph.node[0].attribute:
        if a.name == "accuracy_level":
            a.i = 0
    return out


@pytest.mark.parametrize("k, n, block, bits, zero, bias, rows", [
    (64, 24, 32, 4, "packed", False, (1,)),     # an even block count: zero points packed
    (96, 20, 32, 4, "packed", False, (1,)),     # odd: each row's last half byte pads (unpacked on the host)
    (64, 24, 32, 4, None, False, (1,)),         # none: 8
    (64, 24, 16, 4, "packed", True, (2, 3)),    # blocks of 16 (no gemv), a bias, a batch of rows
    (64, 16, 32, 8, "packed", False, (1,)),     # 8 bits
    (64, 16, 32, 8, None, False, (4,)),         # 8 bits, zero point 128
])
def test_matmulnbits_forms_match_onnxruntime(k, n, block, bits, zero, bias, rows, device):
    """accuracy_level is ignored (gpudml computes float32 products, as at level 0): the
    reference is onnxruntime at level 0."""
    model = _nbits_model(k, n, block, bits, zero, bias, rows)
    x = np.random.default_rng(5).standard_normal((*rows, k)).astype(np.float32)
    (want,) = _oracle(_level0(model), {"a": x})
    (got,) = gonnx.InferenceSession(model, device=device).run(None, {"a": x})
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * np.abs(want).max() + 1e-6)


@pytest.mark.any_class
@pytest.mark.parametrize("kwargs, words", [
    ({"g_idx": True}, "g_idx"),
    ({"zero": "float"}, "float zero_points"),
    ({"block": 48}, "K a multiple of block_size"),
])
def test_matmulnbits_refusals_say_why(kwargs, words):
    args = {"k": 64, "n": 8, "block": 32} | kwargs
    if args["block"] == 48:
        args["k"] = 96 + 24  # not a multiple of 48
    model = _nbits_model(args.pop("k"), args.pop("n"), args.pop("block"), **args)
    with pytest.raises(UnsupportedError, match=words):
        gonnx.InferenceSession(model)


def test_a_matmulnbits_is_one_dispatch(device):
    """The session's graph runs a MatMulNBits as one kernel (DEQUANTIZE fused into the
    GEMM's operand load: the weight never expanded); unfused it is two."""
    model = _nbits_model(64, 24, 32)
    x = np.random.default_rng(5).standard_normal((1, 64)).astype(np.float32)
    fused, unfused = gonnx.InferenceSession(model, device=device), gonnx.InferenceSession(model, device=device,
                                                                                          fuse=False)
    np.testing.assert_allclose(fused.run(None, {"a": x})[0], unfused.run(None, {"a": x})[0], rtol=0, atol=1e-5)
    assert fused.dispatch_count == 1 and unfused.dispatch_count == 2


@pytest.mark.any_class  # both classes' Devices made here: the GPU-class run would repeat them
@pytest.mark.parametrize("adapter_class", ["cpu", "gpu"])
@pytest.mark.parametrize("m, k, n, block, zero, signed", [
    (1, 128, 37, 32, "packed", False),   # gemv, 8 rows an invocation with a partial last group
    (1, 64, 24, 16, "bytes", True),      # blocks of 16: registers / workgroup; INT4, zero points one a byte
    (3, 96, 17, 32, None, False),        # M = 3: registers / workgroup
])
def test_fused_dequantize_gemm_both_classes(adapter, adapter_class, m, k, n, block, zero, signed):
    """The fused kernel of every strategy against the reference GEMM of the dequantized weight,
    within GEMM's documented precision, on both adapter classes."""
    device = dml.Device(adapter=adapter, adapter_class=adapter_class)
    rng = np.random.default_rng(m * k + n)
    q = rng.integers(-8, 8, (n, k)) if signed else rng.integers(0, 16, (n, k))
    blob = pack4(q).view(np.int8 if signed else np.uint8)
    scales = rng.uniform(-0.1, 0.1, (n, k // block)).astype(np.float32)
    z = rng.integers(-8, 8, (n, k // block)) if signed else rng.integers(0, 16, (n, k // block))
    zbytes = pack4(z).view(blob.dtype) if zero == "packed" else z.astype(blob.dtype) if zero == "bytes" else None
    x = rng.standard_normal((m, k)).astype(np.float32)
    g = dml.Graph(device)
    xs, ws = g.input([m, k], dtype=np.float32, name="x"), g.input(list(blob.shape), dtype=blob.dtype, name="w")
    ss = g.input(list(scales.shape), dtype=np.float32, name="s")
    zs = None if zbytes is None else g.input(list(zbytes.shape), dtype=zbytes.dtype, name="z")
    y = dml.gemm(xs, dml.dequantize(ws, ss, zs, axis=1, block_size=block, bits=4), trans_b=True)
    op = g.compile([y])
    assert op.dispatch_count == 1
    strategy = op.steps[0].compiled.strategy
    assert strategy == "gemv" if m == 1 and block % 32 == 0 else strategy == {"cpu": "registers", "gpu": "workgroup"}[
        adapter_class]
    feeds = {"x": x, "w": blob, "s": scales} | ({} if zbytes is None else {"z": zbytes})
    (got,) = op(feeds)
    weight = reference.dequantize(blob, scales, zbytes, axis=1, block_size=block, bits=4)
    want = reference.gemm(x, weight, trans_b=True)
    tolerance = gemm_op.tolerance(want, [x, weight], {"trans_b": True})
    assert np.all(np.abs(got.astype(np.float64) - want) <= tolerance)


@pytest.mark.any_class  # both classes' Devices made here: the GPU-class run would repeat them
@pytest.mark.parametrize("adapter_class", ["cpu", "gpu"])
@pytest.mark.parametrize("k, n, zero, signed", [
    (512, 19, "packed", False),   # 16 blocks a row: scales 4 a block read, packed zero points 8 a word
    (256, 9, "bytes", True),      # INT4, zero points one a byte: 4 a word
    (256, 12, None, False),       # no zero point (8)
    (96, 10, "bytes", False),     # 3 blocks a row: the scales and zero points one by one
])
def test_gemv_shared_reads_change_no_bit(adapter, adapter_class, k, n, zero, signed, monkeypatch):
    """The decode-shaped gemv reads A once a subgroup (subgroupBroadcast, where the adapter
    has subgroups), 4 blocks' scales as one 16-byte block and 8 (or 4) zero points as one
    word where the layout allows: the same bits as the kernel reading each one by one, and
    within GEMM's documented precision of the reference."""
    from gpudml.kernels import dequantize_gemm

    device = dml.Device(adapter=adapter, adapter_class=adapter_class)
    rng = np.random.default_rng(k + n)
    q = rng.integers(-8, 8, (n, k)) if signed else rng.integers(0, 16, (n, k))
    blob = pack4(q).view(np.int8 if signed else np.uint8)
    scales = rng.uniform(-0.1, 0.1, (n, k // 32)).astype(np.float32)
    z = rng.integers(-8, 8, (n, k // 32)) if signed else rng.integers(0, 16, (n, k // 32))
    zbytes = pack4(z).view(blob.dtype) if zero == "packed" else z.astype(blob.dtype) if zero == "bytes" else None
    x = rng.standard_normal((1, k)).astype(np.float32)
    feeds = {"x": x, "w": blob, "s": scales} | ({} if zbytes is None else {"z": zbytes})

    def run():
        g = dml.Graph(device)
        xs, ws = g.input([1, k], dtype=np.float32, name="x"), g.input(list(blob.shape), dtype=blob.dtype, name="w")
        ss = g.input(list(scales.shape), dtype=np.float32, name="s")
        zs = None if zbytes is None else g.input(list(zbytes.shape), dtype=zbytes.dtype, name="z")
        op = g.compile([dml.gemm(xs, dml.dequantize(ws, ss, zs, axis=1, block_size=32, bits=4), trans_b=True)])
        assert op.steps[0].compiled.strategy == "gemv"
        return op(feeds)[0], op.steps[0].compiled.wgsl[0]

    got, wgsl = run()
    quads = k // 32 % 4 == 0
    assert ("dq_scale_quad_at" in wgsl) == quads and ("zw0" in wgsl) == (zero is not None and quads)
    assert ("subgroupBroadcast" in wgsl) == device.caps.has("subgroup")
    # the weight rows as 32-byte units where the adapter has shader-int64 and a row is an even count of blocks
    assert ("array<vec4<u64>>" in wgsl) == (device.caps.has("shader-int64") and k // 32 % 2 == 0)
    monkeypatch.setattr(dequantize_gemm, "_scale_quads", lambda p: False)
    monkeypatch.setattr(dequantize_gemm, "_zero_words", lambda p: False)
    one_by_one = dequantize_gemm._gemv
    monkeypatch.setattr(dequantize_gemm, "_gemv", lambda p, caps: one_by_one(p, None))
    plain, plain_wgsl = run()
    assert "subgroupBroadcast" not in plain_wgsl and "dq_scale_quad_at" not in plain_wgsl
    assert "vec4<u64>" not in plain_wgsl
    assert np.array_equal(got.view(np.uint32), plain.view(np.uint32))
    weight = reference.dequantize(blob, scales, zbytes, axis=1, block_size=32, bits=4)
    want = reference.gemm(x, weight, trans_b=True)
    assert np.all(np.abs(got.astype(np.float64) - want) <= gemm_op.tolerance(want, [x, weight], {"trans_b": True}))


@pytest.mark.parametrize("adapter_class", ["cpu", "gpu"])
@pytest.mark.parametrize("k, block, signed", [(256, 64, False), (384, 128, True)])
def test_gemv_blocks_of_several_quads(adapter, adapter_class, k, block, signed):
    """Blocks of 64 and 128 4-bit weights (2 and 4 16-byte blocks a scale: the gemv's loop
    over a block's quads, not the one-quad body W67 takes) within GEMM's documented precision."""
    device = dml.Device(adapter=adapter, adapter_class=adapter_class)
    n = 11
    rng = np.random.default_rng(k + block)
    q = rng.integers(-8, 8, (n, k)) if signed else rng.integers(0, 16, (n, k))
    blob = pack4(q).view(np.int8 if signed else np.uint8)
    scales = rng.uniform(-0.1, 0.1, (n, k // block)).astype(np.float32)
    z = rng.integers(-8, 8, (n, k // block)) if signed else rng.integers(0, 16, (n, k // block))
    zbytes = z.astype(blob.dtype)
    x = rng.standard_normal((1, k)).astype(np.float32)
    g = dml.Graph(device)
    xs, ws = g.input([1, k], dtype=np.float32, name="x"), g.input(list(blob.shape), dtype=blob.dtype, name="w")
    ss, zs = g.input(list(scales.shape), dtype=np.float32, name="s"), g.input(list(z.shape), dtype=blob.dtype, name="z")
    op = g.compile([dml.gemm(xs, dml.dequantize(ws, ss, zs, axis=1, block_size=block, bits=4), trans_b=True)])
    assert op.steps[0].compiled.strategy == "gemv" and "uni.block_words; j += 4u" in op.steps[0].compiled.wgsl[0]
    (got,) = op({"x": x, "w": blob, "s": scales, "z": zbytes})
    weight = reference.dequantize(blob, scales, zbytes, axis=1, block_size=block, bits=4)
    want = reference.gemm(x, weight, trans_b=True)
    assert np.all(np.abs(got.astype(np.float64) - want) <= gemm_op.tolerance(want, [x, weight], {"trans_b": True}))


def test_gemv_weight_in_binding_segments(adapter):
    """A weight larger than one binding (a forced 1 KiB): the gemv's reads (32-byte units
    where the adapter has shader-int64) pick their segment, the same bits as unsegmented."""
    k, n = 256, 13
    rng = np.random.default_rng(5)
    blob = pack4(rng.integers(0, 16, (n, k))).view(np.uint8)
    scales = rng.uniform(-0.1, 0.1, (n, k // 32)).astype(np.float32)
    zbytes = pack4(rng.integers(0, 16, (n, k // 32))).view(np.uint8)
    x = rng.standard_normal((1, k)).astype(np.float32)
    results = []
    for device in (dml.Device(adapter=adapter), dml.Device(adapter=adapter, max_binding_bytes=1024)):
        g = dml.Graph(device)
        xs, ws = g.input([1, k], dtype=np.float32, name="x"), g.input(list(blob.shape), dtype=np.uint8, name="w")
        ss, zs = g.input(list(scales.shape), dtype=np.float32, name="s"), g.input(list(zbytes.shape), dtype=np.uint8,
                                                                              name="z")
        op = g.compile([dml.gemm(xs, dml.dequantize(ws, ss, zs, axis=1, block_size=32, bits=4), trans_b=True)])
        assert op.steps[0].compiled.strategy == "gemv"
        results.append((op({"x": x, "w": blob, "s": scales, "z": zbytes})[0], op.steps[0].compiled.wgsl[0]))
    (whole, _), (split, wgsl) = results
    assert "b_vec_1" in wgsl and ("array<vec4<u64>>" in wgsl) == dml.Device(adapter=adapter).caps.has("shader-int64")
    assert np.array_equal(whole.view(np.uint32), split.view(np.uint32))


def _dequantize_linear_model(x, scale, zero, axis, block, x_is_input: bool) -> tuple[onnx.ModelProto, dict]:
    """DequantizeLinear at opset 21, the scale a graph input (so that the node is not folded
    on the host), x an initializer (4-bit: a constant) or an input."""
    kinds = {"int8": TensorProto.INT8, "uint8": TensorProto.UINT8, "int4": TensorProto.INT4, "uint4": TensorProto.UINT4}
    inits = [numpy_helper.from_array(zero, "z")] if zero is not None else []
    inputs = [helper.make_tensor_value_info("s", TensorProto.FLOAT, list(scale.shape))]
    feeds = {"s": scale}
    if x_is_input:
        inputs.append(helper.make_tensor_value_info("x", kinds[x.dtype.name], list(x.shape)))
        feeds["x"] = x
    else:
        inits.append(numpy_helper.from_array(x, "x"))
    node = helper.make_node("DequantizeLinear", ["x", "s"] + (["z"] if zero is not None else []), ["y"], axis=axis,
                            block_size=block)
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    model.ir_version = 10
    return model, feeds


@pytest.mark.parametrize("form", ["int4_blocked", "uint4_axis", "int8_axis", "uint8_blocked"])
def test_dequantize_linear_opset21_runs_dequantize(form, device):
    """Opset 21's DequantizeLinear through the session on DEQUANTIZE (4-bit constants packed on
    the host; 8-bit inputs at run time), against onnx's reference evaluator."""
    rng = np.random.default_rng(7)
    kind, how = form.split("_")
    dtype = {"int4": ml_dtypes.int4, "uint4": ml_dtypes.uint4, "int8": np.int8, "uint8": np.uint8}[kind]
    lo, hi = {"int4": (-8, 8), "uint4": (0, 16), "int8": (-128, 128), "uint8": (0, 256)}[kind]
    x = rng.integers(lo, hi, (6, 32)).astype(dtype)
    axis, block = (1, 16) if how == "blocked" else (0, 0)
    shape = [6, 2] if how == "blocked" else [6]
    scale = rng.uniform(-0.5, 0.5, shape).astype(np.float32)
    zero = rng.integers(lo, hi, shape).astype(dtype)
    model, feeds = _dequantize_linear_model(x, scale, zero, axis, block, x_is_input=kind in ("int8", "uint8"))
    want = ReferenceEvaluator(model).run(None, feeds)[0]
    got = gonnx.InferenceSession(model, device=device).run(None, feeds)[0]
    np.testing.assert_array_equal(got, want)


def test_dequantize_linear_output_dtype(device):
    """Opset 25's output_dtype (FLOAT16 from a FLOAT scale): DEQUANTIZE, then CAST."""
    x = np.arange(-4, 4, dtype=np.int8).reshape(2, 4)
    scale = np.array([0.5, 0.25], np.float32)
    node = helper.make_node("DequantizeLinear", ["x", "s"], ["y"], axis=0, output_dtype=TensorProto.FLOAT16)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.INT8, [2, 4]),
                                            helper.make_tensor_value_info("s", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT16, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 25)])
    model.ir_version = 10
    got = gonnx.InferenceSession(model, device=device).run(None, {"x": x, "s": scale})[0]
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, (x * scale[:, None]).astype(np.float16))


def test_matmulnbits_float16(device):
    """A FLOAT16 A and scales: the fused kernel's float16 operands (registers / workgroup)."""
    model = _nbits_model(64, 24, 32)
    for init in model.graph.initializer:
        if init.name == "s":
            init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init).astype(np.float16), "s"))
    for value in (*model.graph.input, *model.graph.output):
        value.type.tensor_type.elem_type = TensorProto.FLOAT16
    x = np.random.default_rng(5).standard_normal((1, 64)).astype(np.float16)
    got = gonnx.InferenceSession(model, device=device).run(None, {"a": x})[0]
    want = _oracle(_level0(model), {"a": x})[0]
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=0,
                               atol=2e-3 * np.abs(want).max())


@pytest.mark.parametrize("kind", ["int8", "uint4"])
def test_contrib_dequantize_linear(kind, device):
    """com.microsoft's DequantizeLinear: per axis on ELEMENT_WISE_DEQUANTIZE_LINEAR (int8 at run
    time), a 4-bit constant on DEQUANTIZE; the scale a graph input (no folding on the host)."""
    rng = np.random.default_rng(9)
    dtype, (lo, hi) = (np.int8, (-128, 128)) if kind == "int8" else (ml_dtypes.uint4, (0, 16))
    x = rng.integers(lo, hi, (3, 8)).astype(dtype)
    scale = rng.uniform(0.1, 1, 3).astype(np.float32)
    zero = rng.integers(lo, hi, 3).astype(dtype)
    types = {"int8": TensorProto.INT8, "uint4": TensorProto.UINT4}
    node = helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"], axis=0, domain="com.microsoft")
    inputs = [helper.make_tensor_value_info("s", TensorProto.FLOAT, [3])]
    inits = [numpy_helper.from_array(zero, "z")]
    feeds = {"s": scale}
    if kind == "int8":
        inputs.append(helper.make_tensor_value_info("x", types[kind], [3, 8]))
        feeds["x"] = x
    else:
        inits.append(numpy_helper.from_array(x, "x"))
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 10
    got = gonnx.InferenceSession(model, device=device).run(None, feeds)[0]
    want = (x.astype(np.int64) - zero.astype(np.int64)[:, None]) * scale.astype(np.float64)[:, None]
    np.testing.assert_array_equal(got, want.astype(np.float32))


@pytest.mark.parametrize("m", [1, 3])
def test_fused_kernel_stores_a_residual_add(m, device):
    """`residual + gemm(x, dequantize(w))`: the fused kernel is the epilogue's producer (one
    dispatch, the weight never written), within GEMM's precision of the reference."""
    rng = np.random.default_rng(m)
    k, n, block = 64, 40, 32
    blob = pack4(rng.integers(0, 16, (n, k)))
    scales = rng.uniform(-0.1, 0.1, (n, k // block)).astype(np.float32)
    x, r = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((m, n)).astype(np.float32)
    g = dml.Graph(device)
    xs, ws = g.input([m, k], dtype=np.float32, name="x"), g.input([n, k // 2], dtype=np.uint8, name="w")
    ss, rs = g.input([n, k // block], dtype=np.float32, name="s"), g.input([m, n], dtype=np.float32, name="r")
    y = dml.add(dml.gemm(xs, dml.dequantize(ws, ss, axis=1, block_size=block, bits=4), trans_b=True), rs)
    op = g.compile([y])
    assert op.dispatch_count == 1 and op.steps[0].compiled.name == "Fused(Dequantize>Gemm>ElementWiseAdd1)"
    (got,) = op({"x": x, "w": blob, "s": scales, "r": r})
    weight = reference.dequantize(blob, scales, axis=1, block_size=block, bits=4)
    product = reference.gemm(x, weight, trans_b=True)
    tolerance = gemm_op.tolerance(product, [x, weight], {"trans_b": True}) + 2.0**-24 * np.abs(product + r)
    assert np.all(np.abs(got.astype(np.float64) - (product.astype(np.float64) + r)) <= tolerance)


@pytest.mark.parametrize("signed", [False, True])
def test_gemv_eight_bits_at_the_extremes(adapter, signed):
    """8-bit weights in the decode-shaped gemv (each byte masked in place against A scaled by
    256^-t, the top byte shifted down; INT8 flipped to an offset of 128): the extreme levels
    and zero points (q - z from -255 to 255) within GEMM's documented precision."""
    device = dml.Device(adapter=adapter)
    k, n = 128, 11
    rng = np.random.default_rng(8 + signed)
    lo, hi = (-128, 128) if signed else (0, 256)
    dtype = np.int8 if signed else np.uint8
    q = rng.choice([lo, hi - 1, lo + 1, hi - 2, 0], (n, k)).astype(dtype)
    z = rng.choice([lo, hi - 1, 0], (n, k // 32)).astype(dtype)
    scales = rng.uniform(-0.1, 0.1, (n, k // 32)).astype(np.float32)
    x = rng.standard_normal((1, k)).astype(np.float32)
    g = dml.Graph(device)
    xs, ws = g.input([1, k], dtype=np.float32, name="x"), g.input([n, k], dtype=dtype, name="w")
    ss, zs = g.input([n, k // 32], dtype=np.float32, name="s"), g.input([n, k // 32], dtype=dtype, name="z")
    op = g.compile([dml.gemm(xs, dml.dequantize(ws, ss, zs, axis=1, block_size=32, bits=8), trans_b=True)])
    assert op.steps[0].compiled.strategy == "gemv"
    (got,) = op({"x": x, "w": q, "s": scales, "z": z})
    weight = reference.dequantize(q, scales, z, axis=1, block_size=32, bits=8)
    want = reference.gemm(x, weight, trans_b=True)
    assert np.all(np.abs(got.astype(np.float64) - want) <= gemm_op.tolerance(want, [x, weight], {"trans_b": True}))
