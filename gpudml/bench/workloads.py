"""The workloads of `gpudml bench` (WORKLOADS: W1-W70, float32 but W36-W39 and W64-W66), their numpy and
onnxruntime counterparts, and the timing of one workload. See report.py for the table."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

import gpudml as F

from .. import reference
from ..ops import convolution as convolution_op
from ..ops import dequantize as dequantize_op
from ..ops import gemm as gemm_op
from ..ops import normalization as normalization_op
from ..ops import slice1, spec_named
from ..ops import top_k as top_k_op
from . import anchors as _anchors
from . import training
from .report import Case, Row, check_result, median_ms, paired_ratio


@dataclass(frozen=True)
class Workload:
    id: str
    title: str
    setup: Callable  # (device, rng, quick) -> Case
    onnx: Callable[[], OnnxNode] | None = None  # its onnxruntime counterpart, built without the case's data


def _workload(id: str, title: str, case: Callable, *args, onnx: Callable[..., OnnxNode] | None = None) -> Workload:
    """A workload whose case and ONNX node take the same arguments (`case(*args, quick, rng,
    device)`, `onnx(*args)`): the case builds its onnxruntime model through `onnx` too, so
    the model `Workload.onnx` gives is the one the bench times."""
    return Workload(id, title, lambda d, r, q: case(*args, q, r, d),
                    None if onnx is None else lambda: onnx(*args))


def _close(rtol: float):
    def compare(got, want):
        return got.shape == want.shape and bool(np.allclose(got, want, rtol=rtol, atol=0))
    return compare


def _within(tolerance):
    """Within a documented precision: |got - want| <= tolerance, per element."""
    def compare(got, want):
        return got.shape == want.shape and bool(np.all(np.abs(got.astype(np.float64) - want) <= tolerance))
    return compare


def _ort_session(model_bytes):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    return ort.InferenceSession(model_bytes, opts, providers=["CPUExecutionProvider"])


#: ONNX's tensor element types (onnx.TensorProto.FLOAT, .INT64), named without importing onnx.
ONNX_FLOAT, ONNX_INT64 = 1, 7


@dataclass(frozen=True)
class OnnxNode:
    """A workload's one-node ONNX model, onnxruntime's counterpart: the operator, the shape of
    its float32 input `x`, its other inputs in order as initializers (a constant array, or the
    shape of data the case passes to `model`: zeros where it passes none), its attributes and
    its output's element type. Input, initializer and output names are distinct (an output
    named as an initializer is a model onnxruntime refuses: "Duplicate definition of name")."""

    op: str
    x_shape: tuple
    inits: dict = field(default_factory=dict)
    attrs: dict = field(default_factory=dict)
    out_dtype: int = ONNX_FLOAT
    opset: int = 13  # (Col2Im needs 18)

    INPUT = "x"
    OUTPUT = "output"

    def initializers(self, data: dict | None = None) -> dict:
        """The initializers' values: the constants, and `data`'s arrays (or zeros) for the others."""
        data = dict(data or {})
        values = {}
        for name, init in self.inits.items():
            if isinstance(init, np.ndarray):
                values[name] = init
                continue
            value = data.pop(name, None)
            value = np.zeros(init, np.float32) if value is None else np.asarray(value)
            if value.shape != tuple(init):
                raise ValueError(f"{self.op} node: initializer {name!r} has shape {list(value.shape)}, "
                                 f"the node declares {list(init)}")
            values[name] = value
        if data:
            raise ValueError(f"{self.op} node: data for {sorted(data)}, which are not its data initializers "
                             f"({[n for n, v in self.inits.items() if not isinstance(v, np.ndarray)]})")
        return values

    def model(self, data: dict | None = None) -> bytes | None:
        """The serialized model, or None without the `onnx` package (the bench's optional
        extra: the onnxruntime column stays empty then)."""
        names = [self.INPUT, *self.inits, self.OUTPUT]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.op} node: input, initializer and output names must be distinct, got {names}")
        values = self.initializers(data)
        try:
            from onnx import TensorProto, helper, numpy_helper
        except ImportError:
            return None
        node = helper.make_node(self.op, names[:-1], [self.OUTPUT], **self.attrs)
        graph = helper.make_graph(
            [node], self.op, [helper.make_tensor_value_info(self.INPUT, TensorProto.FLOAT, list(self.x_shape))],
            [helper.make_tensor_value_info(self.OUTPUT, self.out_dtype, None)],
            [numpy_helper.from_array(np.asarray(v), k) for k, v in values.items()])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)])
        model.ir_version = 8
        return model.SerializeToString()


def _reduce_onnx(shape, function, axis) -> OnnxNode:
    if function == "sum":
        return OnnxNode("ReduceSum", tuple(shape), {"axes": np.array([axis], np.int64)}, {"keepdims": 1})
    return OnnxNode("ArgMax", tuple(shape), {}, {"axis": axis, "keepdims": 1}, ONNX_INT64)


def _reduce_case(shape, function, axis, quick, rng, device) -> Case:
    x = rng.random(shape, dtype=np.float32)
    t = device.tensor(x)
    expected = reference.reduce(x, function, [axis])
    model = _reduce_onnx(shape, function, axis).model()
    if function == "sum":
        numpy_fn = lambda: x.sum(axis=axis, keepdims=True)  # noqa: E731
        compare, ort_expected = _close(1e-4), expected
    else:
        numpy_fn = lambda: np.argmax(x, axis=axis, keepdims=True).astype(np.uint32)  # noqa: E731
        compare, ort_expected = None, expected.astype(np.int64)
    return Case(
        device_fn=lambda: F.reduce(t, function, [axis]),
        numpy_io_fn=lambda: F.reduce(x, function, [axis], device=device),
        numpy_fn=numpy_fn, expected=expected, logical_bytes=x.nbytes,
        ort=(model, {"x": x}), ort_expected=ort_expected, compare=compare)


def _pad_onnx(mode) -> OnnxNode:
    pads = np.array([0, 0, 16, 16, 0, 0, 16, 16], np.int64)
    return OnnxNode("Pad", (1, 3, 1024, 1024), {"pads": pads}, {"mode": {"reflection": "reflect"}.get(mode, mode)})


def _pad_case(mode, quick, rng, device) -> Case:
    x = rng.random([1, 3, 1024, 1024], dtype=np.float32)
    t = device.tensor(x)
    start = end = [0, 0, 16, 16]
    expected = reference.pad(x, start, end, mode)
    np_mode = {"reflection": "reflect", "constant": "constant"}[mode]
    model = _pad_onnx(mode).model()
    return Case(
        device_fn=lambda: F.pad(t, start, end, mode=mode),
        numpy_io_fn=lambda: F.pad(x, start, end, mode=mode, device=device),
        numpy_fn=lambda: np.pad(x, [(0, 0), (0, 0), (16, 16), (16, 16)], mode=np_mode),
        expected=expected, logical_bytes=x.nbytes + expected.nbytes,
        ort=(model, {"x": x}), ort_expected=expected)


def _slice_onnx() -> OnnxNode:
    inits = {"starts": np.array([2047, 0], np.int64), "ends": np.array([-2**63, 2048], np.int64),
             "axes": np.array([2, 3], np.int64), "steps": np.array([-2, 2], np.int64)}
    return OnnxNode("Slice", (1, 3, 2048, 2048), inits)


def _slice_case(quick, rng, device) -> Case:
    x = rng.random([1, 3, 2048, 2048], dtype=np.float32)
    t = device.tensor(x)
    args = ([0, 0, 0, 0], [1, 3, 2048, 2048], [1, 1, -2, 2])
    expected = reference.slice(x, *args)
    return Case(
        device_fn=lambda: F.slice(t, *args),
        numpy_io_fn=lambda: F.slice(x, *args, device=device),
        numpy_fn=lambda: np.ascontiguousarray(x[:, :, ::-2, ::2]),
        expected=expected, logical_bytes=2 * expected.nbytes,
        ort=(_slice_onnx().model(), {"x": x}), ort_expected=expected)


def _reverse_case(quick, rng, device) -> Case:
    x = rng.random([64, 4096, 64], dtype=np.float32)
    lengths = rng.integers(0, 4097, size=[64, 1, 64]).astype(np.uint32)
    t, lt = device.tensor(x), device.tensor(lengths)
    expected = reference.reverse_subsequences(x, lengths, 1)
    k = np.arange(4096)[None, :, None]

    def numpy_fn():
        src = np.where(k < lengths, lengths.astype(np.int64) - 1 - k, k)
        return np.take_along_axis(x, src, axis=1)

    return Case(
        device_fn=lambda: F.reverse_subsequences(t, lt, 1),
        numpy_io_fn=lambda: F.reverse_subsequences(x, lengths, 1, device=device),
        numpy_fn=numpy_fn, expected=expected, logical_bytes=2 * x.nbytes + lengths.nbytes)


def _depth_to_space_onnx() -> OnnxNode:
    return OnnxNode("DepthToSpace", (8, 256, 64, 64), attrs={"blocksize": 2, "mode": "DCR"})


def _depth_to_space_case(quick, rng, device) -> Case:
    """DEPTH_TO_SPACE1 block 2, DCR: a permutation, bit-exact (the bench's target on lavapipe:
    0.8x the copy kernel's bandwidth or better)."""
    x = rng.random([8, 256, 64, 64], dtype=np.float32)
    t = device.tensor(x)
    expected = reference.depth_to_space(x, 2)
    return Case(
        device_fn=lambda: F.depth_to_space(t, 2),
        numpy_io_fn=lambda: F.depth_to_space(x, 2, device=device),
        numpy_fn=lambda: np.ascontiguousarray(
            x.reshape(8, 2, 2, 64, 64, 64).transpose(0, 3, 4, 1, 5, 2).reshape(8, 64, 128, 128)),
        expected=expected, logical_bytes=2 * x.nbytes,
        ort=(_depth_to_space_onnx().model(), {"x": x}), ort_expected=expected)


def _gather_elements_indices() -> np.ndarray:
    """W40's indices: random INT64 coordinates of each row's 1024 elements (seeded: the
    onnxruntime model holds them as a constant)."""
    return np.random.default_rng(40).integers(0, 1024, size=(4096, 1024), dtype=np.int64)


def _gather_elements_onnx() -> OnnxNode:
    return OnnxNode("GatherElements", (4096, 1024), {"indices": _gather_elements_indices()}, {"axis": 1})


def _gather_elements_case(quick, rng, device) -> Case:
    """GATHER_ELEMENTS along axis 1 of [4096, 1024] float32, random INT64 indices: bit-exact
    (the bench's target on lavapipe: 0.6x the copy kernel's bandwidth or better, the bytes
    counted as the operator's traffic: each output element read and written, each index read)."""
    x = rng.random([4096, 1024], dtype=np.float32)
    indices = _gather_elements_indices()
    t, ti = device.tensor(x), device.tensor(indices)
    expected = reference.gather_elements(x, indices, 1)
    return Case(
        device_fn=lambda: F.gather_elements(t, ti, 1),
        numpy_io_fn=lambda: F.gather_elements(x, indices, 1, device=device),
        numpy_fn=lambda: np.take_along_axis(x, indices, axis=1),
        expected=expected, logical_bytes=2 * x.nbytes + indices.nbytes,
        ort=(_gather_elements_onnx().model(), {"x": x}), ort_expected=expected)


def _gather_nd_indices() -> np.ndarray:
    """W41's indices: 4096 random rows of a 32000-row table, as [4096, 1] INT64 tuples."""
    return np.random.default_rng(41).integers(0, 32000, size=(4096, 1), dtype=np.int64)


def _gather_nd_onnx() -> OnnxNode:
    return OnnxNode("GatherND", (32000, 512), {"indices": _gather_nd_indices()})


def _gather_nd_case(quick, rng, device) -> Case:
    """GATHER_ND1 of 4096 rows of a [32000, 512] float32 table (an embedding lookup), INT64
    indices: bit-exact; the bytes counted as the operator's traffic (each output element read
    and written, each index read)."""
    x = rng.random([32000, 512], dtype=np.float32)
    indices = _gather_nd_indices()
    t, ti = device.tensor(x), device.tensor(indices)
    expected = reference.gather_nd(x, indices).reshape(4096, 512)
    return Case(
        device_fn=lambda: F.gather_nd(t, ti),
        numpy_io_fn=lambda: F.gather_nd(x, indices, device=device),
        numpy_fn=lambda: x[indices[:, 0]],
        expected=expected, logical_bytes=2 * expected.nbytes + indices.nbytes,
        ort=(_gather_nd_onnx().model(), {"x": x}), ort_expected=expected)
def _scatter_nd_onnx(indices) -> OnnxNode:
    return OnnxNode("ScatterND", (4096, 1024), {"indices": indices, "updates": (len(indices), 1024)})


def _scatter_nd_case(quick, rng, device) -> Case:
    """SCATTER_ND of whole rows: 2048 distinct rows of a [4096, 1024] float32 tensor replaced
    (tuples of one coordinate, as a KV cache's writes; bit-exact; the bench's target on
    lavapipe: 0.6x the copy kernel's bandwidth or better)."""
    x = rng.random([4096, 1024], dtype=np.float32)
    rows = rng.permutation(4096)[:2048].astype(np.int64).reshape(2048, 1)
    updates = rng.random([2048, 1024], dtype=np.float32)
    t, it, ut = device.tensor(x), device.tensor(rows), device.tensor(updates)
    expected = reference.scatter_nd(x, rows, updates)

    def numpy_fn():
        out = x.copy()
        out[rows[:, 0]] = updates
        return out

    return Case(
        device_fn=lambda: F.scatter_nd(t, it, ut),
        numpy_io_fn=lambda: F.scatter_nd(x, rows, updates, device=device),
        numpy_fn=numpy_fn, expected=expected, logical_bytes=2 * x.nbytes + updates.nbytes + rows.nbytes,
        ort=(_scatter_nd_onnx(rows).model({"updates": updates}), {"x": x}), ort_expected=expected)


def _scatter_elements_onnx(indices) -> OnnxNode:
    return OnnxNode("ScatterElements", (4096, 1024), {"indices": indices, "updates": indices.shape}, {"axis": 1})


def _scatter_elements_case(quick, rng, device) -> Case:
    """SCATTER_ELEMENTS on axis 1 of a [4096, 1024] float32 tensor: every element written
    once (a random permutation of each row's columns, INT64 indices; bit-exact)."""
    x = rng.random([4096, 1024], dtype=np.float32)
    indices = np.argsort(rng.random([4096, 1024]), axis=1).astype(np.int64)
    updates = rng.random([4096, 1024], dtype=np.float32)
    t, it, ut = device.tensor(x), device.tensor(indices), device.tensor(updates)
    expected = reference.scatter_elements(x, indices, updates, 1)

    def numpy_fn():
        out = x.copy()
        np.put_along_axis(out, indices, updates, axis=1)
        return out

    return Case(
        device_fn=lambda: F.scatter_elements(t, it, ut, 1),
        numpy_io_fn=lambda: F.scatter_elements(x, indices, updates, 1, device=device),
        numpy_fn=numpy_fn, expected=expected, logical_bytes=2 * x.nbytes + updates.nbytes + indices.nbytes,
        ort=(_scatter_elements_onnx(indices).model({"updates": updates}), {"x": x}), ort_expected=expected)
def _top_k_case(shape, k, quick, rng, device) -> Case:
    """TOP_K1 (the k largest along the last axis, sorted), float32 normals: the indices
    compared bit for bit (the values are the input's at them). Timed beside it, in the same
    run (GPU time, medians): one Reduce MAX of the same tensor (issue #44's target on
    lavapipe: k=5 over [64, 32000] within 2x of it). No onnxruntime column: TopK has two
    outputs, the bench's OnnxNode one."""
    x = rng.standard_normal(shape).astype(np.float32)
    t = device.tensor(x)
    compiled = device.compile_operator(device.create_operator(
        top_k_op.infer_output1(t.desc, k, -1)))
    reduce_max = device.compile_operator(device.create_operator(
        spec_named("reduce").infer_output(t.desc, "MAX", [len(shape) - 1])))
    return Case(
        device_fn=lambda: compiled.execute([t])[1],
        numpy_io_fn=lambda: F.top_k(x, k, device=device)[1],
        numpy_fn=lambda: np.argsort(-x, axis=-1, kind="stable")[..., :k].astype(np.uint32),
        expected=reference.top_k(x, k)[1], logical_bytes=x.nbytes,
        dispatches=len(compiled.program.kernels),
        peers={"one Reduce MAX": lambda: reduce_max.execute([t])})


def _tiny_case(quick, rng, device) -> Case:
    x = rng.random([8, 8], dtype=np.float32)
    t = device.tensor(x)
    model = _reduce_onnx([8, 8], "sum", 1).model()
    return Case(
        device_fn=lambda: F.reduce(t, "sum", [1]),
        numpy_io_fn=lambda: F.reduce(x, "sum", [1], device=device),
        numpy_fn=lambda: x.sum(axis=1, keepdims=True),
        expected=reference.reduce(x, "sum", [1]), logical_bytes=x.nbytes,
        ort=(model, {"x": x}), ort_expected=reference.reduce(x, "sum", [1]), compare=_close(1e-5))


#: W12's calls back to back.
TINY_CALLS = 200


def _tiny_calls_case(quick, rng, device) -> Case:
    """W8's call TINY_CALLS times back to back, no batch: recorded, then submitted together
    at the wait (runtime/batching.py); timed per call beside the same calls in a batch."""
    x = rng.random([8, 8], dtype=np.float32)
    t = device.tensor(x)

    def calls():
        for _ in range(TINY_CALLS):
            y = F.reduce(t, "sum", [1])
        return y

    def batched():
        with device.batch():
            return calls()

    return Case(device_fn=calls, numpy_io_fn=None, numpy_fn=None, expected=reference.reduce(x, "sum", [1]),
                logical_bytes=0, passes=0, calls=TINY_CALLS, batched=batched, compare=_close(1e-5))


def _elementwise_onnx(binary: bool) -> OnnxNode:
    shape = (4096, 4096)
    return OnnxNode("Add", shape, {"y": shape}) if binary else OnnxNode("Sigmoid", shape)


def _elementwise_case(binary: bool, quick, rng, device) -> Case:
    """An element-wise operator over 64 MiB of float32: SIGMOID (exp and a division per
    element) or ADD of two such tensors; the bound is the adapter's copy of the same bytes."""
    x = (rng.random([4096, 4096], dtype=np.float32) * 8 - 4).astype(np.float32)
    t = device.tensor(x)
    if binary:
        y = rng.random([4096, 4096], dtype=np.float32)
        u = device.tensor(y)
        return Case(
            device_fn=lambda: F.add(t, u), numpy_io_fn=lambda: F.add(x, y, device=device),
            numpy_fn=lambda: x + y, expected=reference.add(x, y), logical_bytes=3 * x.nbytes,
            ort=(_elementwise_onnx(True).model({"y": y}), {"x": x}), ort_expected=x + y, compare=_close(1e-6))
    return Case(
        device_fn=lambda: F.sigmoid(t), numpy_io_fn=lambda: F.sigmoid(x, device=device),
        numpy_fn=lambda: 1 / (1 + np.exp(-x)), expected=reference.sigmoid(x), logical_bytes=2 * x.nbytes,
        ort=(_elementwise_onnx(False).model(), {"x": x}), ort_expected=reference.sigmoid(x), compare=_close(1e-5))


def _gemm_onnx(a_shape, b_shape) -> OnnxNode:
    return OnnxNode("MatMul", tuple(a_shape), {"b": tuple(b_shape)})


def _gemm_case(a_shape, b_shape, quick, rng, device) -> Case:
    """GEMM A x B float32, batch axes as DirectML's 4-D GEMM takes them (compute-bound: 2 M N
    K floating-point operations per output matrix; the note gives GFLOP/s beside numpy's);
    checked within gemm's documented precision."""
    a = rng.uniform(-1, 1, a_shape).astype(np.float32)
    b = rng.uniform(-1, 1, b_shape).astype(np.float32)
    ta, tb = device.tensor(a), device.tensor(b)
    expected = reference.gemm(a, b)
    return Case(
        device_fn=lambda: F.gemm(ta, tb), numpy_io_fn=lambda: F.gemm(a, b, device=device), numpy_fn=lambda: a @ b,
        expected=expected, logical_bytes=a.nbytes + b.nbytes + expected.size * 4,
        ort=(_gemm_onnx(a_shape, b_shape).model({"b": b}), {"x": a}), ort_expected=expected,
        compare=_within(gemm_op.tolerance(expected, [a, b], {})), flops=2 * expected.size * a_shape[-1])


def _big_gemm_case(quick, rng, device) -> Case:
    """GEMM 4096^3 float32 (issue #31's GPU target: >= 0.6x PyTorch's FLOP rate, TF32 off):
    137 GFLOP, minutes on a software adapter, where it is 2048^3 (17 GFLOP) instead."""
    n = 2048 if device.caps.is_software else 4096
    return _gemm_case([n, n], [n, n], quick, rng, device)


def _int8_gemm_case(n: int, small: int, quick, rng, device) -> Case:
    """int8 GEMM [n, n] x [n, n] (issue 47): MATRIX_MULTIPLY_INTEGER, INT8 operands, INT32
    sums (2 n^3 integer operations: the note gives GOP/s), bit-exact against numpy's int64
    product; beside it (peer "float32 gemm"), the float32 GEMM of the same shape in the same
    run, interleaved (target on lavapipe: the int8 rate >= the float32 one). On a software
    adapter, where n^3 takes minutes, [small, small] instead (the title says which)."""
    if device.caps.is_software:
        n = small
    a = rng.integers(-128, 128, (n, n)).astype(np.int8)
    b = rng.integers(-128, 128, (n, n)).astype(np.int8)
    af, bf = a.astype(np.float32), b.astype(np.float32)
    ta, tb, tfa, tfb = (device.tensor(x) for x in (a, b, af, bf))
    expected = (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32)
    return Case(
        device_fn=lambda: F.matrix_multiply_integer(ta, tb),
        numpy_io_fn=lambda: F.matrix_multiply_integer(a, b, device=device),
        numpy_fn=lambda: (a.astype(np.int32) @ b.astype(np.int32)),
        expected=expected, logical_bytes=a.nbytes + b.nbytes + expected.nbytes,
        peers={"float32 gemm": lambda: F.gemm(tfa, tfb)}, flops=2 * n**3)


def _batch_normalization_onnx() -> OnnxNode:
    return OnnxNode("BatchNormalization", (8, 64, 112, 112), {name: (64,) for name in ("scale", "bias", "mean", "var")},
                    {"epsilon": 1e-5})


def _batch_normalization_case(quick, rng, device) -> Case:
    """BATCH_NORMALIZATION (inference) over ResNet-50's stem output at batch 8, [8, 64, 112,
    112] float32 (25.7 MB): one element-wise kernel reading the per-channel parameters by
    stride 0; the bound is the adapter's copy of the same bytes."""
    x = rng.normal(size=[8, 64, 112, 112]).astype(np.float32)
    mean, scale, bias = (rng.uniform(-1, 1, [64]).astype(np.float32) for _ in range(3))
    variance = rng.uniform(0.5, 2, [64]).astype(np.float32)
    params = [mean, variance, scale, bias]
    tensors = [device.tensor(p) for p in params]
    t = device.tensor(x)
    expected = reference.batch_normalization(x, *params)
    # Within the documented precision, plus a few ULPs of the terms: onnxruntime computes x *
    # (scale / sqrt(variance + epsilon)) + (bias - mean * ...), rounding relative to each term.
    c = (-1, 1, 1)
    a = np.abs(scale.reshape(c).astype(np.float64)) / np.sqrt(variance.reshape(c) + 1e-5)
    terms = (np.abs(x) + np.abs(mean.reshape(c))) * a + np.abs(bias.reshape(c))
    tolerance = spec_named("batch_normalization").tolerance(expected, [x, *params], {}) + 2.0**-21 * terms

    compare = _within(tolerance)

    def numpy_fn():
        return (x - mean.reshape(c)) / np.sqrt(variance.reshape(c) + 1e-5) * scale.reshape(c) + bias.reshape(c)
    model = _batch_normalization_onnx().model({"scale": scale, "bias": bias, "mean": mean, "var": variance})
    return Case(
        device_fn=lambda: F.batch_normalization(t, *tensors), numpy_io_fn=lambda: F.batch_normalization(
            x, *params, device=device), numpy_fn=numpy_fn, expected=expected, logical_bytes=2 * x.nbytes,
        compare=compare, ort=(model, {"x": x}), ort_expected=expected)


def _pool_onnx(kind: str) -> OnnxNode:
    if kind == "max":
        attrs = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}
        return OnnxNode("MaxPool", (8, 64, 112, 112), {}, attrs)
    return OnnxNode("GlobalAveragePool", (8, 2048, 7, 7))


def _pool_case(kind: str, quick, rng, device) -> Case:
    """ResNet-50's pooling at batch 8, float32: the stem's max pooling (3 x 3, stride 2,
    padding 1 over [8, 64, 112, 112], 25.7 MB in) and the head's global average pooling
    ([8, 2048, 7, 7]); the bound is the adapter's copy of the input and output bytes."""
    if kind == "max":
        x = rng.uniform(-1, 1, [8, 64, 112, 112]).astype(np.float32)
        args = {"window_size": 3, "strides": 2, "start_padding": 1, "end_padding": 1}
        run, ref = F.max_pooling, reference.max_pooling
        compare = _close(0)
    else:
        x = rng.uniform(-1, 1, [8, 2048, 7, 7]).astype(np.float32)
        args = {"window_size": None}
        run, ref = F.average_pooling, reference.average_pooling
    t = device.tensor(x)
    expected = ref(x, **args)
    if kind != "max":  # within average pooling's documented precision (a mean near 0: no relative bound)
        tolerance = spec_named("average_pooling").tolerance(expected, [x], args)

        compare = _within(tolerance)
    return Case(
        device_fn=lambda: run(t, **args), numpy_io_fn=lambda: run(x, device=device, **args), numpy_fn=None,
        expected=expected, logical_bytes=x.nbytes + expected.nbytes,
        ort=(_pool_onnx(kind).model(), {"x": x}),
        ort_expected=expected, compare=compare)


#: W68 (issue 48): the pooling gradients of a training step, float32, batch 32 of ResNet's
#: [64, 56, 56] stage: MAX_POOLING_GRAD 3 x 3 / 2 padding 1 (x and dy in, dx out) and, timed
#: beside it (a peer), AVERAGE_POOLING_GRAD 2 x 2 / 2 (dy in, dx out). Quick runs: batch 4.
POOL_GRAD_SHAPE = (32, 64, 56, 56)


def _pool_grad_case(quick, rng, device) -> Case:
    """MAX_POOLING_GRAD (two dispatches: the windows' maxima to scratch, then each dx element
    gathers its windows) and AVERAGE_POOLING_GRAD (one) over the same input; the bound is the
    adapter's copy of x, dy and dx (the average's: dy and dx). Results within their documented
    precision."""
    shape = (4, *POOL_GRAD_SHAPE[1:]) if quick else POOL_GRAD_SHAPE
    x = rng.uniform(-1, 1, shape).astype(np.float32)
    window = {"window_size": 3, "strides": 2, "start_padding": 1, "end_padding": 1}
    dy = rng.uniform(-1, 1, reference.max_pooling(x, **window).shape).astype(np.float32)
    average = {"window_size": 2, "strides": 2}
    g = rng.uniform(-1, 1, reference.average_pooling(x, **average).shape).astype(np.float32)
    tx, tdy, tg = device.tensor(x), device.tensor(dy), device.tensor(g)
    expected = reference.max_pooling_grad(x, dy, **window)
    spec = spec_named("max_pooling_grad")
    tolerance = spec.tolerance(expected, [x, dy], window)
    return Case(
        device_fn=lambda: F.max_pooling_grad(tx, tdy, **window),
        numpy_io_fn=lambda: F.max_pooling_grad(x, dy, device=device, **window), numpy_fn=None,
        expected=expected, logical_bytes=x.nbytes + dy.nbytes + expected.nbytes, compare=_within(tolerance),
        dispatches=2, peers={"average_pooling_grad 2x2 /2": lambda: F.average_pooling_grad(tg, shape, **average)})


#: W28, W29: ResNet's 3 x 3 convolution of 64 channels at 56 x 56 (padding 1) as im2col and
#: col2im: the image [1, 64, 56, 56] and its blocks [1, 576, 3136].
_FOLD_IMAGE, _FOLD_WINDOW = (1, 64, 56, 56), {"window_sizes": [3, 3], "start_padding": 1, "end_padding": 1}


def _fold_onnx() -> OnnxNode:
    return OnnxNode("Col2Im", (1, 576, 3136), {"image_shape": np.array([56, 56], np.int64),
                                               "block_shape": np.array([3, 3], np.int64)},
                    {"pads": [1, 1, 1, 1]}, opset=18)


def _fold_case(direction: str, quick, rng, device) -> Case:
    """UNFOLD (im2col) of the image, bit-exact; FOLD (col2im) of its blocks, each image
    element the sum of up to 9 block elements, within FOLD's documented precision. The bound
    is the adapter's copy of the input and output bytes."""
    if direction == "unfold":
        x = rng.uniform(-1, 1, _FOLD_IMAGE).astype(np.float32)
        run, expected = F.unfold, reference.unfold(x, **_FOLD_WINDOW)
        args, compare, ort = dict(_FOLD_WINDOW), _close(0), None
    else:
        x = rng.uniform(-1, 1, (1, 576, 3136)).astype(np.float32)
        args = {"output_size": _FOLD_IMAGE[2:], **_FOLD_WINDOW}
        run, expected = F.fold, reference.fold(x, **args)
        compare, ort = _within(spec_named("fold").tolerance(expected, [x], args)), (_fold_onnx().model(), {"x": x})
    t = device.tensor(x)
    return Case(
        device_fn=lambda: run(t, **args), numpy_io_fn=lambda: run(x, device=device, **args), numpy_fn=None,
        expected=expected, logical_bytes=x.nbytes + expected.nbytes, ort=ort,
        ort_expected=None if ort is None else expected, compare=compare)


def _resample_onnx(shape, mode: str, scale: float, antialiased: bool) -> OnnxNode:
    """ONNX Resize (opset 13, half_pixel; nearest_mode floor: dml.resample's defaults). Opset
    13 has no antialias: W34 has no counterpart."""
    scales = np.array([1, 1, scale, scale], np.float32)
    attrs = {"mode": "nearest" if mode == "nearest_neighbor" else mode, "coordinate_transformation_mode": "half_pixel"}
    if mode == "nearest_neighbor":
        attrs["nearest_mode"] = "floor"
    return OnnxNode("Resize", tuple(shape), {"roi": np.zeros(0, np.float32), "scales": scales}, attrs)


def _resample_case(shape, mode: str, scale: float, antialiased: bool, quick, rng, device,
                   dtype=np.float32) -> Case:
    """RESAMPLE3 on the last two axes: 2x upsampling (nearest, the copy's bound; linear) and an
    antialiased 0.25x downsample (the filter widened 4x: 8 x 8 taps, RESAMPLE3's page
    antialiases where 1 / scale > 2), float32 (float16: W36-W39, no onnxruntime counterpart:
    the bench's ONNX models are float32). Bytes: the input once and the output."""
    x = rng.uniform(-1, 1, shape).astype(dtype)
    t = device.tensor(x)
    args = {"scales": [1, 1, scale, scale], "mode": mode, "antialiased": antialiased}
    expected = reference.resample(x, **args)
    spec = spec_named("resample")
    tolerance = spec.tolerance(expected, [x], args)
    compare = _close(0) if tolerance is None else _within(tolerance)
    ort = None if antialiased or dtype != np.float32 else (_resample_onnx(shape, mode, scale, antialiased).model(),
                                                            {"x": x})
    return Case(
        device_fn=lambda: F.resample(t, **args), numpy_io_fn=lambda: F.resample(x, device=device, **args),
        numpy_fn=None, expected=expected, logical_bytes=x.nbytes + expected.nbytes, compare=compare,
        ort=ort, ort_expected=None if antialiased else expected)


def _mvn_onnx(shape, axes) -> OnnxNode:
    if axes == [1]:
        return OnnxNode("LayerNormalization", tuple(shape), {"scale": (shape[-1],), "bias": (shape[-1],)},
                        {"axis": -1, "epsilon": 1e-5})
    return OnnxNode("InstanceNormalization", tuple(shape), {"scale": (shape[1],), "bias": (shape[1],)},
                    {"epsilon": 1e-5})


def _mvn_case(shape, axes, quick, rng, device) -> Case:
    """MEAN_VARIANCE_NORMALIZATION1 float32 with a scale and bias: LayerNorm ([rows, hidden]
    over the last axis, scale and bias per column) or InstanceNorm ([N, C, H, W] over H and
    W, scale and bias per channel); checked within its documented precision. ONNX's
    LayerNormalization / InstanceNormalization for onnxruntime."""
    x = rng.normal(size=shape).astype(np.float32)
    affine = [shape[-1]] if axes == [1] else [shape[1], 1, 1]
    scale = rng.uniform(0.5, 2, affine).astype(np.float32)
    bias = rng.uniform(-1, 1, affine).astype(np.float32)
    t, ts, tb = device.tensor(x), device.tensor(scale), device.tensor(bias)
    expected = reference.mean_variance_normalization(x, scale, bias, axes=axes)
    tolerance = normalization_op.MVN1_SPEC.tolerance(expected, [x, scale, bias], {"axes": axes})

    compare = _within(tolerance)

    def numpy_fn():
        m = x.mean(axis=tuple(axes), keepdims=True)
        return (x - m) / np.sqrt(x.var(axis=tuple(axes), keepdims=True) + 1e-5) * scale + bias

    model = _mvn_onnx(shape, axes).model({"scale": scale.reshape(-1), "bias": bias.reshape(-1)})
    return Case(
        device_fn=lambda: F.mean_variance_normalization(t, ts, tb, axes=axes),
        numpy_io_fn=lambda: F.mean_variance_normalization(x, scale, bias, axes=axes, device=device),
        numpy_fn=numpy_fn, expected=expected, logical_bytes=2 * x.nbytes, ort=(model, {"x": x}),
        ort_expected=expected, compare=compare)


#: W69 (issue 48): batch-normalization training's forward pass and its gradient over a
#: ResNet-50 stage's activations at batch 32.
_BN_TRAINING_SHAPE = (32, 64, 56, 56)


def _batch_normalization_training_case(quick, rng, device) -> Case:
    """BATCH_NORMALIZATION_TRAINING over [32, 64, 56, 56] float32 (25.7 MB), per channel: the
    mean and variance (two passes, chunks merged as Chan's) and the output; checked within its
    documented precision. Timed beside it, in the same run (GPU time, medians):
    BATCH_NORMALIZATION_TRAINING_GRAD of the same shape (its sums, then dx: x and dy read,
    dx written, 1.5x the forward pass's bytes). No onnxruntime column: ONNX's training-mode
    BatchNormalization has outputs the bench's one-output OnnxNode cannot hold."""
    x = rng.normal(size=_BN_TRAINING_SHAPE).astype(np.float32) + 1
    dy = rng.normal(size=_BN_TRAINING_SHAPE).astype(np.float32)
    c = _BN_TRAINING_SHAPE[1]
    scale, bias = rng.uniform(0.5, 2, [c]).astype(np.float32), rng.uniform(-1, 1, [c]).astype(np.float32)
    t, tdy, ts, tb = (device.tensor(a) for a in (x, dy, scale, bias))
    forward = device.compile_operator(device.create_operator(
        spec_named("batch_normalization_training").infer_output(t.desc, ts.desc, tb.desc)))
    _, mean, variance = reference.batch_normalization_training(x, scale, bias)
    tm, tv = device.tensor(mean.reshape(-1)), device.tensor(variance.reshape(-1))
    backward = device.compile_operator(device.create_operator(
        spec_named("batch_normalization_training_grad").infer_output(t.desc, tdy.desc, tm.desc, tv.desc, ts.desc)))
    expected = reference.batch_normalization_training(x, scale, bias)[0]
    tolerance = spec_named("batch_normalization_training").tolerance(expected, [x, scale, bias], {})
    axes = (0, 2, 3)

    def numpy_fn():
        m = x.mean(axis=axes, keepdims=True)
        return (x - m) / np.sqrt(x.var(axis=axes, keepdims=True) + 1e-5) * scale.reshape(-1, 1, 1) + \
            bias.reshape(-1, 1, 1)

    return Case(
        device_fn=lambda: forward.execute([t, ts, tb])[0],
        numpy_io_fn=lambda: F.batch_normalization_training(x, scale, bias, device=device)[0], numpy_fn=numpy_fn,
        expected=expected, logical_bytes=2 * x.nbytes, compare=_within(tolerance),
        dispatches=len(forward.program.kernels),
        peers={"training_grad": lambda: backward.execute([t, tdy, tm, tv, ts])[0]})


#: W50: Mask R-CNN's box head on one FPN level: ROI_ALIGN of a [1, 256, 56, 56] feature map
#: (a 224-pixel image at stride 4) with 1,000 boxes, output 7 x 7, sampling ratio 2.
_ROI_IMAGE, _ROI_BOXES, _ROI_SCALE = (1, 256, 56, 56), 1000, 0.25
_ROI_ARGS = {"spatial_scale": _ROI_SCALE, "output_size": (7, 7), "minimum_samples_per_output": 2,
             "maximum_samples_per_output": 2}


def _roi_align_onnx() -> OnnxNode:
    """ONNX RoiAlign (opset 16: half_pixel, avg), the boxes as data, batch indices 0."""
    return OnnxNode("RoiAlign", _ROI_IMAGE, {"rois": (_ROI_BOXES, 4), "batch_indices": np.zeros(_ROI_BOXES, np.int64)},
                    {"output_height": 7, "output_width": 7, "sampling_ratio": 2, "spatial_scale": _ROI_SCALE},
                    opset=16)


def _roi_align_case(quick, rng, device) -> Case:
    """ROI_ALIGN1 (dml.roi_align; ROI_ALIGN's pixel offsets) of boxes 8-224 pixels wide and
    high over the image, within its documented precision. Bytes: the output, the boxes and
    indices, and the feature map once (roi_align's traffic)."""
    x = rng.uniform(-1, 1, _ROI_IMAGE).astype(np.float32)
    corner = rng.uniform(-8, 216, (_ROI_BOXES, 2))
    size = rng.uniform(8, 224, (_ROI_BOXES, 2))
    rois = np.concatenate([corner, corner + size], axis=1).astype(np.float32)
    batch = np.zeros(_ROI_BOXES, np.uint32)
    spec = spec_named("roi_align")
    expected = reference.roi_align(x, rois, batch, **_ROI_ARGS)
    args = dict(_ROI_ARGS)
    tolerance = spec.tolerance(expected, [x, rois, batch], args)
    t, tr, tb = device.tensor(x), device.tensor(rois), device.tensor(batch)
    desc = spec.infer_output(t.desc, tr.desc, tb.desc, **_ROI_ARGS)
    model = _roi_align_onnx().model({"rois": rois})
    return Case(
        device_fn=lambda: F.roi_align(t, tr, tb, **_ROI_ARGS),
        numpy_io_fn=lambda: F.roi_align(x, rois, batch, device=device, **_ROI_ARGS), numpy_fn=None,
        expected=expected, logical_bytes=spec.traffic(desc), ort=(model, {"x": x}), ort_expected=expected,
        compare=_within(tolerance))


def _numpy_convolution(x, w, stride: int, pad: int, groups: int) -> np.ndarray:
    """numpy's 2-D convolution (cross-correlation, FORWARD) of one image: im2col (a strided
    window view, copied) and one matmul (OpenBLAS); depthwise (groups = channels): one
    einsum over the window view."""
    xp = np.pad(x, [(0, 0), (0, 0), (pad, pad), (pad, pad)])
    kh, kw = w.shape[2:]
    view = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))[:, :, ::stride, ::stride]
    if groups == 1:
        n, c, oh, ow = view.shape[:4]
        cols = view.transpose(0, 2, 3, 1, 4, 5).reshape(n * oh * ow, c * kh * kw)
        return (cols @ w.reshape(w.shape[0], -1).T).reshape(n, oh, ow, -1).transpose(0, 3, 1, 2)
    return np.einsum("ncyxij,cij->ncyx", view, w[:, 0], optimize=True)


def _convolution_onnx(shape, cout, window, stride, pad, groups) -> OnnxNode:
    attrs = {"strides": [stride] * 2, "pads": [pad] * 4, "group": groups, "kernel_shape": [window] * 2}
    return OnnxNode("Conv", tuple(shape), {"w": (cout, shape[1] // groups, window, window)}, attrs)


def _convolution_case(shape, cout, window, stride, pad, groups, quick, rng, device) -> Case:
    """A 2-D convolution of ResNet-50's shapes (batch 1), FORWARD, float32 (compute-bound:
    the note gives GFLOP/s, 2 x output elements x C_in / groups x window, beside numpy's
    im2col matmul); checked within convolution's documented precision."""
    x = rng.uniform(-1, 1, shape).astype(np.float32)
    w = rng.uniform(-1, 1, [cout, shape[1] // groups, window, window]).astype(np.float32)
    tx, tw = device.tensor(x), device.tensor(w)
    args = {"strides": (stride, stride), "start_padding": (pad, pad), "end_padding": (pad, pad),
            "group_count": groups}
    expected = reference.convolution(x, w, **args)
    tolerance = convolution_op.tolerance(expected, [x, w], args)

    compare = _within(tolerance)
    model = _convolution_onnx(shape, cout, window, stride, pad, groups).model({"w": w})
    return Case(
        device_fn=lambda: F.convolution(tx, tw, **args), numpy_io_fn=lambda: F.convolution(x, w, device=device, **args),
        numpy_fn=lambda: _numpy_convolution(x, w, stride, pad, groups), expected=expected,
        logical_bytes=x.nbytes + w.nbytes + expected.nbytes, ort=(model, {"x": x}),
        ort_expected=expected, compare=compare, flops=2 * expected.size * (shape[1] // groups) * window * window)


CHAIN_LENGTH = 20


def _chain_ops(y, lengths, mod, shape):
    """Five rounds of slice (reverse the last axis), pad (EDGE, the last two axes), slice
    (unpad), reverse_subsequences (the last axis): 20 ops, shape kept."""
    rank = len(shape)
    flip = [1] * (rank - 1) + [-1]
    border = [0] * (rank - 2) + [1, 1]
    for _ in range(CHAIN_LENGTH // 4):
        y = mod.slice(y, [0] * rank, shape, flip)  # (gpudml and gpudml.reference: the same arguments)
        y = mod.pad(y, border, border, mode="edge")
        y = mod.slice(y, border, shape)
        y = mod.reverse_subsequences(y, lengths, rank - 1)
    return y


def _chain_inputs(shape, rng, device):
    x = rng.random(shape, dtype=np.float32)
    lengths = rng.integers(0, shape[-1] + 1, size=list(shape[:-1]) + [1]).astype(np.uint32)
    return x, lengths, device.tensor(x), device.tensor(lengths)


def _chain_case(quick, rng, device) -> Case:
    shape = [16, 16]
    x, lengths, t, lt = _chain_inputs(shape, rng, device)

    def device_fn():
        with device.batch():
            return _chain_ops(t, lt, F, shape)

    return Case(device_fn=device_fn, numpy_io_fn=None, numpy_fn=None, expected=_chain_ops(x, lengths, reference, shape),
                logical_bytes=0, passes=0)


def _chain_graph(shape, device):
    """W9's chain recorded on a Graph and compiled (fused: one dispatch)."""
    g = F.Graph(device)
    x, lengths = g.input(shape, name="x"), g.input(list(shape[:-1]) + [1], dtype=np.uint32, name="lengths")
    return g.compile([_chain_ops(x, lengths, F, shape)])


def _chain_graph_case(shape, quick, rng, device) -> Case:
    """The chain as a compiled graph. Timed beside it, in the same run (GPU time, medians):
    a Slice1 of the same input reversing its last axis (one op reading and writing as much),
    and the 20 ops called one by one in one batch."""
    x, lengths, t, lt = _chain_inputs(shape, rng, device)
    op = _chain_graph(shape, device)
    single = device.compile_operator(device.create_operator(
        slice1.infer_output(t.desc, [0] * len(shape), shape, [1] * (len(shape) - 1) + [-1])))

    def calls():
        with device.batch():
            return _chain_ops(t, lt, F, shape)

    return Case(device_fn=lambda: op({"x": t, "lengths": lt}, readback=False)[0], numpy_io_fn=None,
                numpy_fn=None, expected=_chain_ops(x, lengths, reference, shape), logical_bytes=2 * x.nbytes,
                passes=0, dispatches=op.dispatch_count,  # (a graph runs in a batch: no pass timestamps)
                peers={"one Slice1": lambda: single.execute([t])[0], f"{CHAIN_LENGTH} calls": calls})


MIXED_LENGTH = 10


def _mixed_ops(y, mod, shape):
    """Ten element-wise and data-movement ops alternating, shape kept: flip the last axis,
    scale, edge-pad the last two axes, add, crop them back, relu, flip the rows, subtract,
    negate, max with 0.25 (issue #30: one dispatch)."""
    rank = len(shape)
    border = [0] * (rank - 2) + [1, 1]
    y = mod.slice(y, [0] * rank, shape, [1] * (rank - 1) + [-1])  # (gpudml and gpudml.reference alike)
    y = mod.multiply(y, np.float32([0.5]))
    y = mod.pad(y, border, border, mode="edge")
    y = mod.add(y, np.float32([1.0]))
    y = mod.slice(y, border, shape)
    y = mod.relu(y)
    y = mod.slice(y, [0] * rank, shape, [1] * (rank - 2) + [-1, 1])
    y = mod.subtract(y, np.float32([0.75]))
    y = mod.negate(y)
    return mod.max(y, np.float32([0.25]))


def _mixed_graph_case(shape, quick, rng, device) -> Case:
    """W24's chain as a compiled graph: one dispatch (fusion of element-wise and data
    movement). Timed beside it, in the same run: a Slice1 reversing the last axis (one op
    reading and writing as much: the copy it is held to) and the ops one by one in a batch."""
    x = rng.standard_normal(shape).astype(np.float32)
    t = device.tensor(x)
    g = F.Graph(device)
    op = g.compile([_mixed_ops(g.input(shape, name="x"), F, shape)])
    single = device.compile_operator(device.create_operator(
        slice1.infer_output(t.desc, [0] * len(shape), shape, [1] * (len(shape) - 1) + [-1])))

    def calls():
        with device.batch():
            return _mixed_ops(t, F, shape)

    return Case(device_fn=lambda: op({"x": t}, readback=False)[0], numpy_io_fn=None, numpy_fn=None,
                expected=_mixed_ops(x, reference, shape), logical_bytes=2 * x.nbytes, passes=0,
                dispatches=op.dispatch_count, compare=_close(1e-6),
                peers={"one Slice1": lambda: single.execute([t])[0], f"{MIXED_LENGTH} calls": calls})

#: W51: NMS of 5,000 boxes of one class (a detector's last stage): corner boxes of 1-30
#: units across a 0-100 field, scores in [0, 1), IoU threshold 0.5, every box may be kept.
_NMS_BOXES = 5000


def _nms_onnx() -> OnnxNode:
    n = _NMS_BOXES
    return OnnxNode("NonMaxSuppression", (1, n, 4), {"scores": (1, 1, n), "k": np.array([n], np.int64),
                                                     "iou": np.array([0.5], np.float32)}, {}, ONNX_INT64, opset=11)


def _nms_case(quick, rng, device) -> Case:
    """gpudml's NON_MAX_SUPPRESSION extension (DirectML has none: its provider runs ONNX's on
    the CPU), bit-exact against the reference; the row's bytes: the boxes and scores read
    and the worst-case rows written."""
    n = _NMS_BOXES
    corner = rng.uniform(0, 100, (1, n, 2)).astype(np.float32)
    boxes = np.concatenate([corner, corner + rng.uniform(1, 30, (1, n, 2)).astype(np.float32)], axis=2)
    scores = rng.random((1, 1, n), dtype=np.float32)
    args = (n, 0.5)
    count, expected = reference.non_max_suppression(boxes, scores, *args)
    tb, ts = device.tensor(boxes), device.tensor(scores)
    ort = (_nms_onnx().model({"scores": scores}), {"x": boxes})
    return Case(
        device_fn=lambda: F.non_max_suppression(tb, ts, *args)[1],
        numpy_io_fn=lambda: F.non_max_suppression(boxes, scores, *args, device=device)[1],
        numpy_fn=None, expected=expected, logical_bytes=boxes.nbytes + scores.nbytes + expected.nbytes,
        ort=ort, ort_expected=expected[:int(count[0])], compare=None)



#: W52-W57: one LSTM layer (ONNX's gates i, o, f, c; sigmoid, tanh, tanh), 100 time steps,
#: input size = hidden size, weights scaled by 1/sqrt(size) (a trained layer's magnitudes):
#: the output sequence [T, D, B, H] (no state outputs).
_LSTM_STEPS = 100


def _lstm_onnx(hidden: int, batch: int, directions: int) -> OnnxNode:
    """ONNX LSTM (opset 14) with x [T, B, I], W, R, B as data initializers, Y as the output."""
    h, d = hidden, directions
    return OnnxNode("LSTM", (_LSTM_STEPS, batch, h), {"w": (d, 4 * h, h), "r": (d, 4 * h, h), "b": (d, 8 * h)},
                    {"hidden_size": h, "direction": "bidirectional" if d == 2 else "forward"}, opset=14)


def _lstm_case(hidden: int, batch: int, directions: int, quick, rng, device) -> Case:
    """DML_OPERATOR_LSTM (dml.lstm: one GEMM for the input projection, then the recurrence),
    within its documented precision; the row's bytes: x, W, R, B read and Y written once."""
    h, d, t = hidden, directions, _LSTM_STEPS
    x = rng.uniform(-1, 1, (1, t, batch, h)).astype(np.float32)
    w = (rng.uniform(-1, 1, (1, d, 4 * h, h)) / np.sqrt(h)).astype(np.float32)
    r = (rng.uniform(-1, 1, (1, d, 4 * h, h)) / np.sqrt(h)).astype(np.float32)
    b = (rng.uniform(-1, 1, (1, 1, d, 8 * h)) * 0.1).astype(np.float32)
    args = {"direction": "bidirectional" if d == 2 else "forward", "output_single": False,
            "output_cell_single": False}
    expected = reference.lstm(x, w, r, b, **args)
    tolerance = spec_named("lstm").tolerance(expected, [x, w, r, b], {"bias": b, **args})
    tx, tw, tr, tb = (device.tensor(a) for a in (x, w, r, b))
    model = _lstm_onnx(h, batch, d).model({"w": w[0], "r": r[0], "b": b[0, 0]})
    return Case(
        device_fn=lambda: F.lstm(tx, tw, tr, tb, **args),
        numpy_io_fn=lambda: F.lstm(x, w, r, b, device=device, **args), numpy_fn=None,
        expected=expected, logical_bytes=x.nbytes + w.nbytes + r.nbytes + b.nbytes + expected.nbytes,
        ort=(model, {"x": x[0]}), ort_expected=expected, compare=_within(tolerance))


#: W58: a Silero-VAD-shaped streaming call (Silero v5's 16 kHz branch, random weights): 512
#: new samples behind the previous call's last 64, the LSTM state [2, 1, 128] in and out.
_SILERO_SAMPLES, _SILERO_CONTEXT, _SILERO_HIDDEN = 512, 64, 128


def silero_shaped_model(rng) -> bytes:
    """Silero VAD v5's 16 kHz graph with random weights (onnx.helper): the input [1, 576]
    reflect-padded by 64, an STFT as a strided Conv (258 filters of 256 taps, stride 128),
    the magnitude (Slice, Mul, Add, Sqrt), four Conv+Relu encoder blocks (129->128, 128->64 /2,
    64->64 /2, 64->128) down to one frame, an LSTM of hidden size 128 from the state input
    (h, c: Slice) whose Y_h and Y_c are concatenated into stateN, and the decoder (Relu,
    1x1 Conv, Sigmoid, ReduceMean): output [1, 1]."""
    from onnx import TensorProto, helper, numpy_helper

    h = _SILERO_HIDDEN
    inits, nodes = [], []

    def const(name, value):
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def weights(name, shape, fan_in):
        return const(name, (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32))

    def node(op, inputs, name, **attrs):
        nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    x = node("Pad", ["input", const("pads", np.array([0, 0, 0, _SILERO_CONTEXT], np.int64))], "padded",
             mode="reflect")
    x = node("Unsqueeze", [x, const("axis1", np.array([1], np.int64))], "signal")
    spec = node("Conv", [x, weights("stft", [258, 1, 256], 256)], "stft_out", strides=[128])
    re = node("Slice", [spec, const("s0", np.array([0], np.int64)), const("s129", np.array([129], np.int64)),
                        const("ax1", np.array([1], np.int64))], "re")
    im = node("Slice", [spec, "s129", const("s258", np.array([258], np.int64)), "ax1"], "im")
    power = node("Add", [node("Mul", [re, re], "re2"), node("Mul", [im, im], "im2")], "power")
    x = node("Sqrt", [power], "magnitude")
    for k, (c_in, c_out, stride) in enumerate([(129, 128, 1), (128, 64, 2), (64, 64, 2), (64, h, 1)]):
        x = node("Conv", [x, weights(f"enc{k}_w", [c_out, c_in, 3], 3 * c_in), weights(f"enc{k}_b", [c_out], c_in)],
                 f"enc{k}", pads=[1, 1], strides=[stride])
        x = node("Relu", [x], f"enc{k}_relu")
    x = node("Transpose", [x], "frames", perm=[2, 0, 1])  # [1 frame, batch 1, 128]
    h0 = node("Slice", ["state", "s0", const("s1", np.array([1], np.int64)), const("ax0", np.array([0], np.int64))],
              "h0")
    c0 = node("Slice", ["state", "s1", const("s2", np.array([2], np.int64)), "ax0"], "c0")
    nodes.append(helper.make_node(
        "LSTM", [x, weights("lstm_w", [1, 4 * h, h], h), weights("lstm_r", [1, 4 * h, h], h),
                 weights("lstm_b", [1, 8 * h], h), "", h0, c0], ["", "hn", "cn"], name="lstm", hidden_size=h))
    node("Concat", ["hn", "cn"], "stateN", axis=0)
    x = node("Reshape", ["hn", const("chw", np.array([1, h, 1], np.int64))], "decoder_in")
    x = node("Conv", [node("Relu", [x], "decoder_relu"), weights("dec_w", [1, h, 1], h),
                      weights("dec_b", [1], 1)], "decoder")
    x = node("Sigmoid", [x], "probability")
    node("ReduceMean", [node("Reshape", [x, const("flat", np.array([1, 1, -1], np.int64))], "frames_out")],
         "mean", axes=[2], keepdims=0)
    nodes[-1].output[0] = "output"
    samples = _SILERO_SAMPLES + _SILERO_CONTEXT
    graph = helper.make_graph(
        nodes, "silero_shaped",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, samples]),
         helper.make_tensor_value_info("state", TensorProto.FLOAT, [2, 1, h])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 1]),
         helper.make_tensor_value_info("stateN", TensorProto.FLOAT, [2, 1, h])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def _silero_case(quick, rng, device) -> Case:
    """W58 through gpudml.onnx.InferenceSession: the timed call binds the audio as a CPU
    input (uploaded at each run, as a stream's new samples are), the state as the previous
    call's stateN Tensor (written into a second Tensor: two swapped, the state never leaves
    the device) and the output as a new Tensor: one streaming call. numpy in and out:
    session.run with the state read back and fed again, as onnxruntime's column runs it.
    The first call (zero state) is checked against onnxruntime's CPU provider (the bench
    extra's; onnx's reference evaluator has no LSTM Y_c) within the session's tolerance of
    the largest magnitude."""
    # (here, not at the top: the onnx package is the bench extra's; tests/test_architecture.py allows it)
    from ..onnx import InferenceSession
    from ..onnx.session import TOLERANCE

    try:
        import onnxruntime  # noqa: F401
    except ImportError as exc:  # the row says "not run" (run_workload)
        raise AttributeError(f"W58 checks its result against onnxruntime, which is not installed ({exc})") from None
    model = silero_shaped_model(rng)
    audio = (0.1 * rng.standard_normal([1, _SILERO_SAMPLES + _SILERO_CONTEXT])).astype(np.float32)
    state = np.zeros([2, 1, _SILERO_HIDDEN], np.float32)
    feeds = {"input": audio, "state": state}
    expected = _ort_session(model).run(None, feeds)[0]
    session = InferenceSession(model, device=device)
    binding = session.io_binding()
    states = [device.tensor(state), device.tensor(state)]

    def stream():
        binding.bind_cpu_input("input", audio)
        binding.bind_input("state", states[0])
        binding.bind_output("output")  # (get_outputs: in the order bound)
        binding.bind_output("stateN", states[1])
        session.run_with_iobinding(binding)
        states.reverse()
        return binding.get_outputs()[0]

    def numpy_io():
        return session.run(None, feeds)[0]

    return Case(device_fn=stream, numpy_io_fn=numpy_io, numpy_fn=None, expected=expected,
                logical_bytes=audio.nbytes + 2 * state.nbytes + expected.nbytes, ort=(model, feeds),
                ort_expected=expected, compare=_within(TOLERANCE * float(np.abs(expected).max())),
                dispatches=session.dispatch_count)


#: W70 (issue 48): one training step of gpudml/bench/training.py's CNN at batch 32, every
#: tensor on the device (forward, the gradient operators, ADAM_OPTIMIZER on its 7 parameter
#: tensors, the step counter): ms per step and dispatches per step (the numpy column: the
#: same step's forward and backward in float64 numpy). Each timed call trains one more step;
#: the checked first call is step 1, whose loss is the float64 reference's within GAMMA.
def _training_step_case(quick, rng, device) -> Case:
    x, labels = training.data(32)
    y = training.one_hot(labels)
    weights = training.initial_weights()
    tx, ty = device.tensor(x), device.tensor(y)
    with device.profile() as prof:  # the dispatches of one step (a trainer of its own: compiles them too)
        training.DeviceTrainer(device, weights).step(tx, ty)
        device.synchronize()
    trainer = training.DeviceTrainer(device, weights)
    w64, x64, y64 = {k: v.astype(np.float64) for k, v in weights.items()}, x.astype(np.float64), y.astype(np.float64)
    loss = training.reference_step(w64, x64, y64)[0]
    moved = sum(v.nbytes for v in weights.values()) * 7  # Adam reads x, m, v, g and writes x, m, v
    return Case(device_fn=lambda: trainer.step(tx, ty), numpy_io_fn=None,
                numpy_fn=lambda: training.reference_step(w64, x64, y64)[0], expected=np.array([[loss]]),
                logical_bytes=x.nbytes + y.nbytes + moved, compare=_within(training.GAMMA * abs(loss)),
                dispatches=len(prof.rows))


WORKLOADS = [
    _workload("W1", "SUM last axis [4096,4096]", _reduce_case, [4096, 4096], "sum", 1, onnx=_reduce_onnx),
    _workload("W2", "SUM axis 0 [4096,4096]", _reduce_case, [4096, 4096], "sum", 0, onnx=_reduce_onnx),
    _workload("W3", "ARGMAX last axis [4096,4096]", _reduce_case, [4096, 4096], "argmax", 1, onnx=_reduce_onnx),
    _workload("W4", "pad REFLECTION [1,3,1024,1024] +16", _pad_case, "reflection", onnx=_pad_onnx),
    _workload("W5", "pad CONSTANT [1,3,1024,1024] +16", _pad_case, "constant", onnx=_pad_onnx),
    _workload("W6", "slice [1,1,-2,2] of [1,3,2048,2048]", _slice_case, onnx=_slice_onnx),
    Workload("W7", "reverse_subsequences axis 1 [64,4096,64]", lambda d, r, q: _reverse_case(q, r, d)),
    Workload("W8", "SUM last axis [8,8]", lambda d, r, q: _tiny_case(q, r, d),
             lambda: _reduce_onnx([8, 8], "sum", 1)),
    Workload("W9", f"chain of {CHAIN_LENGTH} ops [16,16], one batch", lambda d, r, q: _chain_case(q, r, d)),
    Workload("W10", "W9's chain as a graph [16,16]", lambda d, r, q: _chain_graph_case([16, 16], q, r, d)),
    Workload("W11", "W9's chain as a graph [1,3,1024,1024]",
             lambda d, r, q: _chain_graph_case([1, 3, 1024, 1024], q, r, d)),
    Workload("W12", f"W8's call x{TINY_CALLS}, no batch (per call)", lambda d, r, q: _tiny_calls_case(q, r, d)),
    _workload("W13", "sigmoid [4096,4096]", _elementwise_case, False, onnx=_elementwise_onnx),
    _workload("W14", "add [4096,4096] + [4096,4096]", _elementwise_case, True, onnx=_elementwise_onnx),
    _workload("W15", "gemm [1024,1024] x [1024,1024]", _gemm_case, [1024, 1024], [1024, 1024], onnx=_gemm_onnx),
    _workload("W16", "max_pooling 3x3 /2 [8,64,112,112]", _pool_case, "max", onnx=_pool_onnx),
    _workload("W17", "global average_pooling [8,2048,7,7]", _pool_case, "average", onnx=_pool_onnx),
    _workload("W18", "LayerNorm (MVN1 last axis) [4096,1024]", _mvn_case, [4096, 1024], [1], onnx=_mvn_onnx),
    _workload("W19", "InstanceNorm (MVN1 H,W) [2,64,112,112]", _mvn_case, [2, 64, 112, 112], [2, 3], onnx=_mvn_onnx),
    _workload("W20", "conv 3x3 256->256 [1,256,14,14] pad 1", _convolution_case, [1, 256, 14, 14], 256, 3, 1, 1, 1,
              onnx=_convolution_onnx),
    _workload("W21", "conv 1x1 1024->256 [1,1024,14,14]", _convolution_case, [1, 1024, 14, 14], 256, 1, 1, 0, 1,
              onnx=_convolution_onnx),
    _workload("W22", "conv 7x7/2 3->64 [1,3,224,224] pad 3", _convolution_case, [1, 3, 224, 224], 64, 7, 2, 3, 1,
              onnx=_convolution_onnx),
    _workload("W23", "depthwise conv 3x3 [1,256,28,28] pad 1", _convolution_case, [1, 256, 28, 28], 256, 3, 1, 1, 256,
              onnx=_convolution_onnx),
    Workload("W24", f"{MIXED_LENGTH} element-wise and movement ops as a graph [1,3,1024,1024]",
             lambda d, r, q: _mixed_graph_case([1, 3, 1024, 1024], q, r, d)),
    Workload("W25", "gemm 4096^3 (2048^3 on a software adapter)", lambda d, r, q: _big_gemm_case(q, r, d),
             lambda: _gemm_onnx([4096, 4096], [4096, 4096])),  # (the GPU's size; the case's n on a software adapter)
    _workload("W26", "batched gemm [32,16,128,64] x [32,16,64,128]", _gemm_case, [32, 16, 128, 64], [32, 16, 64, 128],
              onnx=_gemm_onnx),
    _workload("W27", "batch_normalization [8,64,112,112]", _batch_normalization_case, onnx=_batch_normalization_onnx),
    Workload("W28", "unfold 3x3 pad 1 [1,64,56,56] (im2col)", lambda d, r, q: _fold_case("unfold", q, r, d)),
    Workload("W29", "fold 3x3 pad 1 [1,576,3136] (col2im)", lambda d, r, q: _fold_case("fold", q, r, d),
             _fold_onnx),
    _workload("W30", "resample nearest 2x [1,64,128,128]", _resample_case, [1, 64, 128, 128], "nearest_neighbor", 2.0,
              False, onnx=_resample_onnx),
    _workload("W31", "resample linear 2x [1,64,128,128]", _resample_case, [1, 64, 128, 128], "linear", 2.0, False,
              onnx=_resample_onnx),
    _workload("W32", "resample nearest 2x [8,256,64,64]", _resample_case, [8, 256, 64, 64], "nearest_neighbor", 2.0,
              False, onnx=_resample_onnx),
    _workload("W33", "resample linear 2x [8,256,64,64]", _resample_case, [8, 256, 64, 64], "linear", 2.0, False,
              onnx=_resample_onnx),
    Workload("W34", "resample linear antialiased 0.25x [8,256,64,64]",
             lambda d, r, q: _resample_case([8, 256, 64, 64], "linear", 0.25, True, q, r, d)),
    Workload("W35", "depth_to_space block 2 [8,256,64,64]", lambda d, r, q: _depth_to_space_case(q, r, d),
             _depth_to_space_onnx),
    *[Workload(f"W{36 + k}", f"resample {mode} 2x {list(shape)} float16".replace(", ", ","),
               lambda d, r, q, shape=shape, mode=mode: _resample_case(
                   shape, "nearest_neighbor" if mode == "nearest" else mode, 2.0, False, q, r, d, dtype=np.float16))
      for k, (shape, mode) in enumerate([((1, 64, 128, 128), "nearest"), ((1, 64, 128, 128), "linear"),
                                         ((8, 256, 64, 64), "nearest"), ((8, 256, 64, 64), "linear")])],
    Workload("W40", "gather_elements axis 1 [4096,1024]", lambda d, r, q: _gather_elements_case(q, r, d),
             _gather_elements_onnx),
    Workload("W41", "gather_nd 4096 rows of [32000,512]", lambda d, r, q: _gather_nd_case(q, r, d), _gather_nd_onnx),
    # scatters (issue #44)
    Workload("W42", "scatter_nd whole rows [4096,1024] <- [2048,1024]", lambda d, r, q: _scatter_nd_case(q, r, d),
             lambda: _scatter_nd_onnx(np.zeros([2048, 1], np.int64))),
    Workload("W43", "scatter_elements axis 1 [4096,1024]", lambda d, r, q: _scatter_elements_case(q, r, d),
             lambda: _scatter_elements_onnx(np.zeros([4096, 1024], np.int64))),
    # issue #44: TOP_K over a vocabulary's rows and over one long row
    *[_workload(f"W{44 + n}", f"TOP_K k={k} {list(shape)}".replace(", ", ","), _top_k_case, shape, k)
      for n, (shape, k) in enumerate([((64, 32000), 1), ((64, 32000), 5), ((64, 32000), 100),
                                      ((1, 1000000), 1), ((1, 1000000), 5), ((1, 1000000), 100)])],
    # issue 44: regions (W50)
    Workload("W50", "roi_align 1000 boxes [1,256,56,56] -> 7x7, 2x2 samples", lambda d, r, q: _roi_align_case(q, r, d),
             _roi_align_onnx),
    Workload("W51", "non_max_suppression 5000 boxes, 1 class (gpudml's extension)",
             lambda d, r, q: _nms_case(q, r, d), _nms_onnx),
    # issue #45: LSTM, 100 time steps, input size = hidden size (W52-W57)
    *[_workload(f"W{52 + n}", f"LSTM T=100 hidden {h} batch {b} {'bidirectional' if d == 2 else 'forward'}",
                _lstm_case, h, b, d, onnx=_lstm_onnx)
      for n, (h, b, d) in enumerate([(64, 1, 1), (256, 1, 1), (1024, 1, 1), (256, 32, 1), (256, 1, 2), (1024, 32, 2)])],
    # issue 45: a Silero-VAD-shaped streaming call through the ONNX session (its onnxruntime column: the whole model)
    Workload("W58", "Silero-VAD-shaped streaming call, 512 samples, LSTM state in and out (session)",
             lambda d, r, q: _silero_case(q, r, d)),
    # issue 46: attention (W59-W62), fused, beside the unfused GEMM-softmax-GEMM graph (peer)
    *[Workload(f"W{59 + n}", title, lambda d, r, q, a=a: _attention_case(*a, q, r, d))
      for n, (title, a) in enumerate([
          ("multihead_attention prefill [1,32,2048,128] float32", (2048, 0, np.float32)),
          ("multihead_attention prefill [1,32,2048,128] float16", (2048, 0, np.float16)),
          ("multihead_attention decode [1,32,1,128] x 4096 cache float32", (1, 4096, np.float32)),
          ("multihead_attention decode [1,32,1,128] x 4096 cache float16", (1, 4096, np.float16))])],
    # issue 46: per-token decoding latency of a small LLaMA-shaped model, its cache on the device
    Workload("W63", "LLaMA-shaped decoder (genai, GQA), 1 token after 31 cached (session + IO binding)",
             lambda d, r, q: _decode_step_case(q, r, d)),
    # issue 47: int8 GEMM (MATRIX_MULTIPLY_INTEGER), beside the float32 GEMM of the same shape (peer)
    Workload("W64", "matrix_multiply_integer int8 [1024,1024] x [1024,1024] (GOP/s; peer: float32 gemm)",
             lambda d, r, q: _int8_gemm_case(1024, 1024, q, r, d)),
    Workload("W65", "matrix_multiply_integer int8 4096^3 (software adapters: 2048^3; peer: float32 gemm)",
             lambda d, r, q: _int8_gemm_case(4096, 2048, q, r, d)),
    # issue 47: the quantized convolution of ResNet-50's 3x3 layer, beside the float32 one (peer)
    Workload("W66", "QLinearConv 3x3 64->64 [1,64,56,56] pad 1 uint8 x int8 (peer: float32 conv)",
             lambda d, r, q: _qlinear_conv_case(q, r, d)),
    # issue 47: 4-bit weights (MatMulNBits)
    Workload("W67", "MatMulNBits [1,4096] x [4096,4096] 4-bit block 32 (decode; GB/s of the packed weight)",
             lambda d, r, q: _nbits_case(q, r, d)),
    # issue 48: the pooling gradients (W68): max 3x3 /2 pad 1, the average 2x2 /2 beside it
    Workload("W68", "max_pooling_grad 3x3 /2 pad 1 [32,64,56,56] (+ average_pooling_grad 2x2 /2)",
             lambda d, r, q: _pool_grad_case(q, r, d)),
    # issue 48: batch-normalization training, forward beside its gradient (W69)
    Workload("W69", "batch_normalization_training [32,64,56,56] (+ training_grad beside it)",
             lambda d, r, q: _batch_normalization_training_case(q, r, d)),
    # issue 48: one training step of bench/training.py's CNN (forward, gradients, Adam) at batch 32
    Workload("W70", "CNN training step, batch 32 [32,1,8,8]: forward, gradients, 7 Adam steps",
             lambda d, r, q: _training_step_case(q, r, d)),
]


def _nbits_onnx(k: int, n: int, block: int, blob, scales, zero) -> bytes | None:
    """W67's onnxruntime counterpart: one com.microsoft MatMulNBits node (accuracy_level 0:
    float32 products, as gpudml's), or None without onnx."""
    try:
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        return None
    node = helper.make_node("MatMulNBits", ["x", "b", "scales", "zero_points"], ["output"], domain="com.microsoft",
                            K=k, N=n, bits=4, block_size=block, accuracy_level=0)
    graph = helper.make_graph([node], "MatMulNBits", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, k])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, n])],
                              [numpy_helper.from_array(blob, "b"), numpy_helper.from_array(scales, "scales"),
                               numpy_helper.from_array(zero, "zero_points")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    return model.SerializeToString()


def _nbits_case(quick, rng, device) -> Case:
    """W67: MatMulNBits at one token: y [1, N] = x [1, K] x W^T, W [N, K] 4-bit (UINT4, blocks
    of 32 along K, a scale and a packed zero point per block), as the ONNX session runs it: a
    graph of DEQUANTIZE and GEMM fused into one kernel reading the packed weight (the gemv
    strategy, kernels/dequantize_gemm.py). Bandwidth-bound: its GB/s count the packed weight's
    bytes (N K / 2) alone, beside the copy kernel's; checked within GEMM's documented
    precision of the dequantized weight. Quick runs: 1024 x 1024."""
    k = n = 1024 if quick else 4096
    block = 32
    w = rng.integers(0, 16, (n, k)).astype(np.uint8)
    blob = dequantize_op.pack4(w)
    scales = (2.0 ** rng.uniform(-9, -5, (n, k // block))).astype(np.float32)
    zero = rng.integers(0, 16, (n, k // block)).astype(np.uint8)
    zero_packed = dequantize_op.pack4(zero)
    x = rng.standard_normal((1, k)).astype(np.float32)
    g = F.Graph(device)
    xs, ws = g.input([1, k], dtype=np.float32, name="x"), g.input([n, k // 2], dtype=np.uint8, name="w")
    ss, zs = g.input([n, k // block], dtype=np.float32, name="s"), g.input([n, k // block // 2], dtype=np.uint8,
                                                                          name="z")
    y = F.gemm(xs, F.dequantize(ws, ss, zs, axis=1, block_size=block, bits=4), trans_b=True)
    op = g.compile([y])
    bound = {"x": device.tensor(x), "w": device.tensor(blob), "s": device.tensor(scales),
             "z": device.tensor(zero_packed)}
    weight = reference.dequantize(blob, scales, zero_packed, axis=1, block_size=block, bits=4)
    expected = reference.gemm(x, weight, trans_b=True)
    tolerance = gemm_op.tolerance(expected, [x, weight], {"trans_b": True})
    model = _nbits_onnx(k, n, block, blob.reshape(n, k // block, block // 2), scales.reshape(-1),
                        zero_packed.reshape(-1))
    return Case(device_fn=lambda: op(bound, readback=False)[0], numpy_io_fn=None,
                numpy_fn=lambda: x @ weight.T, expected=expected, logical_bytes=blob.nbytes,
                ort=(model, {"x": x}), ort_expected=expected, compare=_within(tolerance), dispatches=op.dispatch_count)


def _qlinear_conv_onnx(w, ws, b) -> bytes | None:
    """QLinearConv of a UINT8 x [1, 64, 56, 56] (onnxruntime's column; the OnnxNode models'
    inputs are float32): w, its per-channel scale and the bias as initializers."""
    try:
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        return None
    inits = {"xs": np.float32(0.02), "xz": np.uint8(128), "w": w, "ws": ws, "wz": np.zeros(len(ws), np.int8),
             "ys": np.float32(0.5), "yz": np.uint8(128), "b": b}
    node = helper.make_node("QLinearConv", ["x", *inits], ["output"], pads=[1, 1, 1, 1])
    graph = helper.make_graph([node], "W66", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 64, 56, 56])],
                              [helper.make_tensor_value_info("output", TensorProto.UINT8, None)],
                              [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model.SerializeToString()


def _qlinear_conv_case(quick, rng, device) -> Case:
    """W66 (issue 47): QUANTIZED_LINEAR_CONVOLUTION of ResNet-50's 3x3 layer, UINT8 input, INT8
    per-channel weights, an INT32 bias, requantized to UINT8 (GOP/s: 2 x outputs x 576), beside
    (peer "float32 conv") DML_CONVOLUTION of the same shape in float32. Checked within one unit
    of the reference (onnxruntime's one float32 multiplier rounds its ties differently;
    gpudml's result is the reference's exactly: tests/test_quantized_linear_convolution.py)."""
    x = rng.integers(0, 256, [1, 64, 56, 56]).astype(np.uint8)
    w = rng.integers(-128, 128, [64, 64, 3, 3]).astype(np.int8)
    ws = rng.uniform(0.002, 0.004, 64).astype(np.float32)
    b = rng.integers(-2000, 2000, 64).astype(np.int32)
    args = {"filter_scale": ws, "filter_zero_point": np.zeros(64, np.int8), "bias": b, "output_scale": np.float32(0.5),
            "output_zero_point": np.uint8(128), "start_padding": (1, 1), "end_padding": (1, 1)}
    tx, tw = device.tensor(x), device.tensor(w)
    params = {k: device.tensor(np.asarray(v).reshape(-1)) if isinstance(v, np.ndarray) or np.isscalar(v) else v
              for k, v in args.items()}
    xs, xz = device.tensor(np.array([0.02], np.float32)), device.tensor(np.array([128], np.uint8))
    expected = reference.quantized_linear_convolution(x, np.float32(0.02), np.uint8(128), filter=w, **args)
    xf, wf = device.tensor(x.astype(np.float32)), device.tensor(w.astype(np.float32))
    float_args = {"start_padding": (1, 1), "end_padding": (1, 1)}

    def compare(got, want):
        return got.shape == want.shape and bool(np.all(np.abs(got.astype(np.int64) - want.astype(np.int64)) <= 1))
    return Case(
        device_fn=lambda: F.quantized_linear_convolution(tx, xs, xz, filter=tw, **params),
        numpy_io_fn=lambda: F.quantized_linear_convolution(x, np.float32(0.02), np.uint8(128), filter=w,
                                                           device=device, **args),
        numpy_fn=None, expected=expected, logical_bytes=x.nbytes + w.nbytes + expected.nbytes,
        ort=(_qlinear_conv_onnx(w, ws, b), {"x": x}), ort_expected=expected, compare=compare,
        peers={"float32 conv": lambda: F.convolution(xf, wf, **float_args)}, dispatches=1,
        flops=2 * expected.size * 64 * 9)


#: W59-W62 (issue 46): attention, [batch 1, 32 heads, sequence, head size 128]: prefill of
#: 2048 tokens (causal-free self-attention) and one token's decoding against a 4096-token cache.
#: Quick runs (and the note's lavapipe figures, where the full prefill takes minutes) take
#: 8 heads of 512 tokens, head size 64, for the prefill; the decode rows keep their shape.
_ATTN_HEADS, _ATTN_HEAD = 32, 128


def _attention_case(seq, cache, dtype, quick, rng, device) -> Case:
    """MULTIHEAD_ATTENTION1 (dml.multihead_attention, the fused family), query/key/value [1,
    seq, 32 * 128] (decode: the new token, and past key/value [1, 32, cache, 128]); beside it
    (peer "unfused") the GEMM-softmax-GEMM graph of the same shape: gemm(Q, K^T) * scale, softmax
    over the keys, gemm(P, V) on head-major [32, seq, 128] copies, which writes the [32, seq,
    keys] scores. Checked per head within the operator's documented precision."""
    heads, d = (8, 64) if quick and seq > 1 else (_ATTN_HEADS, _ATTN_HEAD)
    if quick:
        seq = min(seq, 512)
    q = rng.uniform(-1, 1, (1, seq, heads * d)).astype(dtype)
    k = rng.uniform(-1, 1, (1, seq, heads * d)).astype(dtype)
    v = rng.uniform(-1, 1, (1, seq, heads * d)).astype(dtype)
    past = {}
    if cache:
        past = {"past_key": rng.uniform(-1, 1, (1, heads, cache, d)).astype(dtype),
                "past_value": rng.uniform(-1, 1, (1, heads, cache, d)).astype(dtype)}
    tq, tk, tv = device.tensor(q), device.tensor(k), device.tensor(v)
    tpast = {n: device.tensor(a) for n, a in past.items()}
    spec = spec_named("multihead_attention1")
    expected = np.empty_like(q)
    tolerance = np.empty(q.shape)
    for h in range(heads):  # the reference and its bound a head at a time (float64 scores of one head)
        cols = slice(h * d, (h + 1) * d)
        one = {n: a[:, h:h + 1] for n, a in past.items()}
        inputs = [q[..., cols], k[..., cols], v[..., cols]]
        expected[..., cols] = reference.multihead_attention(*inputs, head_count=1, **one)
        args = {n: None for n in spec.tensors[3:] if n not in one} | {"head_count": 1}
        tolerance[..., cols] = spec.tolerance(expected[..., cols], [*inputs, *one.values()], args)
    # the unfused graph's inputs: head-major [heads, keys, d]
    qh = device.tensor(np.ascontiguousarray(q.reshape(seq, heads, d).transpose(1, 0, 2)))
    keys = np.concatenate([past["past_key"][0], k.reshape(seq, heads, d).transpose(1, 0, 2)], axis=1) if past \
        else k.reshape(seq, heads, d).transpose(1, 0, 2)
    values = np.concatenate([past["past_value"][0], v.reshape(seq, heads, d).transpose(1, 0, 2)], axis=1) if past \
        else v.reshape(seq, heads, d).transpose(1, 0, 2)
    kh, vh = device.tensor(np.ascontiguousarray(keys)), device.tensor(np.ascontiguousarray(values))
    scale = 1.0 / float(np.sqrt(d))

    def unfused():
        scores = F.gemm(qh, kh, trans_b=True, alpha=scale)
        return F.gemm(F.softmax(scores, axes=[2]), vh)

    def fused():
        return F.multihead_attention(tq, tk, tv, head_count=heads, **tpast)

    nbytes = q.nbytes + k.nbytes + v.nbytes + expected.nbytes + sum(a.nbytes for a in past.values())
    desc = spec.infer_output(tq.desc, tk.desc, tv.desc, *(t.desc for t in tpast.values()),
                             given=("query", "key", "value", *tpast), head_count=heads)
    compiled = device.compile_operator(device.create_operator(desc))
    return Case(device_fn=fused, numpy_io_fn=None, numpy_fn=None, expected=expected, logical_bytes=nbytes,
                compare=_within(tolerance), peers={"unfused": unfused}, dispatches=len(compiled.program.kernels),
                flops=4 * heads * seq * (seq + cache) * d)


#: W63: a small LLaMA-shaped decoder as onnxruntime-genai's model builder writes it
#: (tests/data/models/llama_genai.onnx: LlamaForCausalLM from a random config, 2 layers, hidden
#: 64, 4 query and 2 key/value heads of 16, vocab 96; GroupQueryAttention with the rotary
#: embedding inside; scripts/export_transformers.py), one token after 31 cached positions of a
#: cache preallocated to 64 (the builder's shared buffer): the session's run with IO binding,
#: the cache bound as device Tensors (each present written into its past's Tensor), against
#: onnxruntime's CPU provider on the same feeds (its column: the same token's latency).
_DECODER_FILE = "tests/data/models/llama_genai.onnx"


def _decode_step_case(quick, rng, device) -> Case:
    from pathlib import Path

    try:
        import onnxruntime  # noqa: F401 (the reference column)

        from ..onnx import InferenceSession
        from ..onnx.session import TOLERANCE
    except ImportError as exc:  # (run_workload notes a row it cannot run: "not run: ...")
        raise AttributeError(f"W63 runs a model: it needs onnx and onnxruntime (the bench extra): {exc}") from exc
    path = Path(__file__).resolve().parents[2] / _DECODER_FILE
    if not path.exists():  # an installed package: the model lives in the repository's tests
        raise AttributeError(f"{_DECODER_FILE} is in gpudml's repository, not in its package")
    model = path.read_bytes()
    past, capacity = 31, 64
    mask = np.zeros((1, capacity), np.int64)
    mask[0, :past + 1] = 1  # padded to the cache (docs/transformers.md's loop: every token step one build)
    feeds = {"input_ids": rng.integers(0, 96, (1, 1)), "attention_mask": mask}
    cache = {f"past_key_values.{i}.{kind}": rng.standard_normal((1, 2, capacity, 16)).astype(np.float32)
             for i in range(2) for kind in ("key", "value")}
    session = InferenceSession(model, device=device)
    binding = session.io_binding()
    for name, value in feeds.items():
        binding.bind_cpu_input(name, value)
    for name, value in cache.items():
        tensor = device.tensor(value)  # uploaded once: the cache stays on the device
        binding.bind_input(name, tensor)
        binding.bind_output(name.replace("past_key_values", "present"), tensor)
    binding.bind_output("logits")

    def step():
        session.run_with_iobinding(binding)
        return binding.get_outputs()[-1]

    ort_feeds = {**feeds, **cache}
    expected = _ort_session(model).run(["logits"], ort_feeds)[0]  # [1, 1, 96]
    step()  # (built; a step writes its token's key/value at row 31 again: every call computes the same)
    return Case(step, None, None, expected, 4 * (sum(v.size for v in cache.values()) + 96),
                ort=(model, ort_feeds), ort_expected=expected,
                compare=_within(TOLERANCE * float(np.abs(expected).max())),
                dispatches=session.dispatch_count)


def measure_anchors(device, reps: int, quick: bool) -> dict:
    return _anchors.measure(device, reps=reps, quick=quick)


def first_call(device, w: Workload, quick: bool) -> tuple[Case, object, str]:
    """The workload's case (inputs seeded by its number), the result of one call of its
    device function (the call the bench checks), and the kernel strategies that call's
    dispatches ran, in order of first use, "+"-joined (e.g. "workgroup"; a graph: its
    nodes' strategies)."""
    case = w.setup(device, np.random.default_rng(int(w.id[1:])), quick)
    with device.profile() as prof:
        got = case.device_fn()
        device.synchronize()
    return case, got, "+".join(dict.fromkeys(row["strategy"] for row in prof.rows))


def run_workload(device, w: Workload, reps: int, quick: bool, yard=None) -> Row:
    row = Row(w.id, w.title, 0)
    try:
        case, got, row.strategy = first_call(device, w, quick)
    except AttributeError as exc:  # an operator not implemented yet
        row.note = f"not run: {exc}"
        return row
    row.logical_bytes = case.logical_bytes
    if not check_result(got.numpy(), case.expected, case.compare):
        row.note = "WRONG device result"
        return row
    inner = 20 if w.id in ("W8",) else 1

    def resident():
        case.device_fn()
        device.synchronize()

    if yard is None:
        row.device_ms = median_ms(resident, reps, inner=inner)
    else:  # interleaved with the yardsticks: device, its GPU time, copy kernel, empty dispatch, ...
        samples = {"device": [], "gpu": [], "copy": [], "empty": []}
        resident()
        for _ in range(reps):
            samples["device"].append(median_ms(resident, 1, warmup=0, inner=inner))
            if device.caps.has("timestamp-query"):
                samples["gpu"].append(_gpu_ms(device, case, 1))
            copy_ms, clock = yard.copy_ms()  # GPU timestamps where the adapter has them
            samples["copy"].append(copy_ms)
            samples["empty"].append(median_ms(yard.empty, 1, warmup=0, inner=20))
        row.device_ms = float(np.median(samples["device"]))
        # The run's baselines are the medians of every workload's samples (suite.run_suite);
        # the paired ratio divides each sample by the copy timed right after it.
        row.extra.update(copy_samples_ms=samples["copy"], copy_clock=clock, empty_samples_ms=samples["empty"],
                         x_copy_paired=paired_ratio(samples["gpu"] if clock == "gpu" else samples["device"],
                                                    samples["copy"], case.logical_bytes, yard.copy_gbps_bytes))
    if case.calls > 1:
        _per_call(device, case, reps, row)
    if w.id == "W9":
        row.extra["per_op_ms"] = row.device_ms / CHAIN_LENGTH
        row.extra["host_per_op_ms"] = _recording_ms(device, case.device_fn, reps) / CHAIN_LENGTH
        row.note = f"{row.extra['per_op_ms']:.4f} ms per op, {row.extra['host_per_op_ms']:.4f} ms of it recording"
    if case.peers:
        _time_peers(device, case, reps, row)
    if device.caps.has("timestamp-query"):
        row.kernel_ms = _gpu_ms(device, case, max(3, min(reps, 5)))
    if case.numpy_io_fn is not None:
        if not check_result(case.numpy_io_fn(), case.expected, case.compare):
            row.note = "WRONG numpy in/out result"
            return row
        row.numpy_io_ms = median_ms(case.numpy_io_fn, reps, inner=inner)
    if case.numpy_fn is not None:
        row.numpy_ms = median_ms(case.numpy_fn, reps, inner=inner * 10 if inner > 1 else 1)
    if case.ort is not None:
        row.ort_ms = _time_ort(case, reps, inner, row)
    if w.id == "W63":  # per-token decoding: the dispatches and the ratio the target names
        ratio = f", {row.device_ms / row.ort_ms:.1f}x onnxruntime CPU" if row.ort_ms else ""
        row.note = f"{case.dispatches} dispatches per token{ratio}" + (f"; {row.note}" if row.note else "")
    if w.id == "W70":  # a training step: the dispatches it takes (issue 48's figures)
        row.note = f"{case.dispatches} dispatches per step" + (f"; {row.note}" if row.note else "")
    if case.flops:
        rates = [f"{case.flops / ms / 1e6:.3g} GFLOP/s{label}" for ms, label in (
            (row.kernel_ms, " (GPU timestamps)"), (row.device_ms, ""), (row.numpy_ms, " numpy"),
            (row.ort_ms, " onnxruntime")) if ms]
        row.note = ", ".join(rates) + (f"; {row.note}" if row.note else "")
    return row


def _gpu_ms(device, case: Case, reps: int) -> float | None:
    """The GPU time of one device_fn call's dispatches (per operator call where it makes
    several), from GPU timestamps (device.profile()): the median over `reps` calls."""
    samples = []
    for _ in range(reps):
        with device.profile() as prof:
            case.device_fn()
            device.synchronize()
        if not prof.rows or any(r["clock"] != "gpu" for r in prof.rows):
            return None
        samples.append(prof.gpu_ms / case.calls)
    return float(np.median(samples))


def _per_call(device, case: Case, reps: int, row: Row) -> None:
    """A row of `case.calls` calls per device_fn: its time per call, beside the same calls in a
    batch and the adapter's floors (an empty dispatch + wait; a dispatch among 100 in one
    pass), timed interleaved (medians)."""
    samples = {"calls": [], "batched": []}
    for _ in range(max(reps, 5)):
        for name, fn in (("calls", case.device_fn), ("batched", case.batched)):
            t0 = time.perf_counter()
            fn()
            device.synchronize()
            samples[name].append((time.perf_counter() - t0) * 1e3 / case.calls)
    per_call, batched = (float(np.median(samples[name])) for name in ("calls", "batched"))
    row.device_ms = per_call
    row.extra.update(per_call_ms=per_call, batched_per_call_ms=batched)
    empty = float(np.median(row.extra["empty_samples_ms"])) if row.extra.get("empty_samples_ms") else None
    row.note = (f"{per_call / batched:.2f}x the same calls in a batch ({batched:.4f} ms per call)"
                + (f", {per_call / empty:.2f}x an empty dispatch + wait" if empty else ""))


def _recording_ms(device, fn, reps: int) -> float:
    """Median host time of `fn` recorded into an outer batch: the Python and wgpu-py calls
    of its operators, without the submit or the GPU's work (timed after, untimed)."""
    samples = []
    for _ in range(max(reps, 5)):
        with device.batch():
            t0 = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - t0)
        device.synchronize()
    return float(np.median(samples)) * 1e3


def _time_peers(device, case: Case, reps: int, row: Row) -> None:
    """GPU time (timestamps; the wall clock without them) of the case and of each peer,
    interleaved, medians; the ratios go into the note."""
    fns = {"case": case.device_fn, **case.peers}
    samples = {name: [] for name in fns}
    for _ in range(max(reps, 5)):
        for name, fn in fns.items():
            with device.profile() as prof:
                fn()
            device.synchronize()
            samples[name].append(prof.gpu_ms)
    ms = {name: float(np.median(v)) for name, v in samples.items()}
    row.extra.update({f"{name} ms": v for name, v in ms.items()})
    parts = [f"{ms['case'] / ms[name]:.2f}x {name} ({ms[name]:.3f} ms)" for name in case.peers]
    row.note = f"{case.dispatches} dispatch{'es' if case.dispatches != 1 else ''}, GPU {ms['case']:.3f} ms: " + \
        ", ".join(parts)


def _time_ort(case: Case, reps: int, inner: int, row: Row) -> float | None:
    if case.ort[0] is None:  # no onnx
        return None
    try:
        session = _ort_session(case.ort[0])
    except ImportError:
        return None
    except Exception as exc:  # onnxruntime refusing the model
        row.note += f" ort: {type(exc).__name__}"
        return None
    feeds = case.ort[1]
    got = session.run(None, feeds)[0]
    if not check_result(got, case.ort_expected, case.compare):
        row.note += " ort WRONG"
        return None
    return median_ms(lambda: session.run(None, feeds), reps, inner=inner * 10 if inner > 1 else 1)
