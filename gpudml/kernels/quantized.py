"""Integer products and requantization: the arithmetic the quantized kernels share (the
GEMM family's integer path, kernels/gemm.py: MATRIX_MULTIPLY_INTEGER,
QUANTIZED_LINEAR_MATRIX_MULTIPLY, MATRIX_MULTIPLY_INTEGER_TO_FLOAT; the integer
convolutions' implicit GEMM), its WGSL (shaders/lib/quantized.wgsl.j2) and its numpy twin
(the references of ops/matrix_multiply_integer.py and the others).

The arithmetic, in the order the kernels do it:

- accumulation: sum_k (a[m, k] - a_zero[m]) (b[k, n] - b_zero[n]) in i32, every product
  and sum wrapping modulo 2^32 (WGSL's i32 arithmetic): bit-exact with the sum in int64
  wrapped to int32 (`accumulate`). 8-bit operands cannot wrap below K = 33,025 (255^2 K <
  2^31); 16/32-bit ones (MATRIX_MULTIPLY_INTEGER_TO_FLOAT) wrap as int32 arithmetic does;
- packed products (`PACKED_DOT`: the Caps feature of WGSL's packed_4x8_integer_dot_product,
  which runtime/context.py probes by compiling a kernel, as wgpu-native reports no WGSL
  language features; both software adapters here have it, naga writing a polyfill where a
  backend lacks the instruction): where both operands are 8-bit and 4 k lie in one word,
  dot4I8Packed sums four products at once; UINT8 bytes are read as INT8 ones (x - 128, an
  XOR of 0x80 per byte: `as_i8x4`) and the zero points shifted by 128, and the zero points
  enter after the products (sum (a - za)(b - zb) = sum a b - zb sum a - za sum b + K za zb,
  modulo 2^32: the same i32 bits). Adapters without the language feature read the bytes
  one by one (`dot4_i8`'s fallback: the same value);
- dequantization of the sum (`dequantized`): f32(acc), rounded to nearest even, times the
  scale, one f32 product (QUANTIZED_LINEAR: a_scale[m] * b_scale[n], itself one f32
  product; INTEGER_TO_FLOAT: the same, then + bias in f32);
- requantization (`requantize`): the dequantized value divided by the output scale exactly
  and rounded half to even (QUANTIZE_LINEAR's quantize_f32, ONNX's rounding; saturating
  at +-4096 first: past every 8-bit range), plus the output zero point, clamped to the
  output type's range.

So a QUANTIZED_LINEAR result is bit-exact against `requantize_reference` (the same f32
steps in numpy), except where an adapter flushes subnormal scales or products to zero
(WGSL allows it): the references' `flush` twin gives that result.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..caps import PACKED_DOT
from ..errors import InvalidArgumentError
from ..tensor_desc import TensorDesc

#: The stores of the integer path.
STORES = ("int32", "requantize", "float")


def packed_dot(caps) -> bool:
    return caps is not None and caps.has(PACKED_DOT)


@dataclass(frozen=True)
class Quantized:
    """The integer path of a GEMM (kernels/gemm.py's Problem.quantized): the operands' types
    are theirs (A's and B's TensorDescs: INT8/UINT8, or 16/32-bit integers), `store` says
    what the output gets (int32: the sum; requantize: the output type's quantized value;
    float: the dequantized sum plus the optional C as bias, FLOAT32/FLOAT16). The
    quantization tensors are read per row (A's zero point and scale, the output's) or per
    column (B's): element index m * stride (n * stride), a stride of 0 for one value per
    tensor; None where absent (zero point 0). `inputs`: the operator's input index of A, B,
    C and each quantization tensor present, by role."""

    store: str
    a_zero: TensorDesc | None = None
    b_zero: TensorDesc | None = None
    a_scale: TensorDesc | None = None
    b_scale: TensorDesc | None = None
    out_scale: TensorDesc | None = None
    out_zero: TensorDesc | None = None
    strides: tuple[tuple[str, int], ...] = ()
    inputs: tuple[tuple[str, int], ...] = ()

    ROLES = ("a_zero", "b_zero", "a_scale", "b_scale", "out_scale", "out_zero")

    def present(self) -> tuple[str, ...]:
        return tuple(r for r in self.ROLES if getattr(self, r) is not None)

    def index(self, role: str) -> int:
        return dict(self.inputs)[role]


def per_line_stride(op: str, field: str, td: TensorDesc, axis: int, count: int, rank: int) -> int:
    """The stride of a per-tensor / per-row (axis -2, `count` rows) / per-column (axis -1)
    quantization tensor of up to `rank` axes: 0 where it holds one value, else its stride
    along that axis; InvalidArgumentError naming the shapes it may have otherwise."""
    sizes = list(td.sizes)
    want_line = [1] * (td.rank - 1) + [count] if axis == -1 else [1] * (td.rank - 2) + [count, 1]
    if td.rank > rank:
        raise InvalidArgumentError(f"{op}: {field} has {td.rank} dimensions, more than the operands' {rank}")
    if all(s == 1 for s in sizes):
        return 0
    if td.rank >= -axis and sizes == want_line:
        return td.effective_strides[axis]
    if td.rank == 1 and axis == -2 and sizes == [count]:
        return td.effective_strides[0]
    where = "per row: {..., M, 1}" if axis == -2 else "per column: {..., 1, N}"
    raise InvalidArgumentError(
        f"{op}: {field}.sizes {sizes} must hold one value (every size 1) or one per "
        f"{'row' if axis == -2 else 'column'} ({where} with {'M' if axis == -2 else 'N'} = {count}: {want_line})")


# ------------------------------------------------------------------------------ numpy twins
def _wide(x, zero) -> np.ndarray:
    v = np.asarray(x).astype(np.int64)
    return v if zero is None else v - np.asarray(zero).astype(np.int64)


def accumulate(a, a_zero, b, b_zero) -> np.ndarray:
    """sum_k (a - a_zero)(b - b_zero) over numpy's matmul shapes (a_zero broadcast per row:
    [..., M, 1] or one value; b_zero per column: [..., 1, N]), in int64 wrapped to int32."""
    with np.errstate(over="ignore"):
        y = np.matmul(_wide(a, a_zero), _wide(b, b_zero))
    return (y & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def _flushed(x: np.ndarray, flush: bool) -> np.ndarray:
    x = np.asarray(x, np.float32)
    if not flush:
        return x
    return np.where(np.abs(x) < np.float32(2.0**-126), np.copysign(np.float32(0.0), x), x).astype(np.float32)


def dequantized_reference(acc, scale, flush: bool = False) -> np.ndarray:
    """f32(acc) (to nearest even) * scale in float32 (the kernels' `dequantized`)."""
    with np.errstate(all="ignore"):
        return _flushed(np.asarray(acc).astype(np.float32) * _flushed(scale, flush), flush)


def scale_product(a_scale, b_scale, flush: bool = False) -> np.ndarray:
    """a_scale * b_scale as one f32 product (subnormals flushed where `flush`)."""
    with np.errstate(all="ignore"):
        return _flushed(_flushed(a_scale, flush) * _flushed(b_scale, flush), flush)


def requantize_reference(acc, scale, out_scale, out_zero, dtype, flush: bool = False) -> np.ndarray:
    """The kernels' `requantize`: dequantized_reference(acc, scale) divided by out_scale
    exactly, rounded half to even (saturated at +-4096), plus out_zero, clamped to dtype."""
    x = dequantized_reference(acc, scale, flush).astype(np.float64)
    with np.errstate(all="ignore"):
        q = x / _flushed(out_scale, flush).astype(np.float64)  # exact enough to decide every tie of f32 / f32
        q = np.clip(np.rint(np.nan_to_num(q, nan=0.0, posinf=4096.0, neginf=-4096.0)), -4096, 4096).astype(np.int64)
    z = 0 if out_zero is None else np.asarray(out_zero).astype(np.int64)
    info = np.iinfo(np.dtype(dtype))
    q = np.clip(q + z, int(info.min), int(info.max))
    return q.astype(dtype)


def checked_scale(where: str, field: str):
    """A functional form's convert for a scale argument: the values as they are (float32 or
    float16; a scalar as one value of 1 dimension), InvalidArgumentError where one is zero, negative, NaN or infinite (a
    dequantization's scale is a positive finite number), before any GPU work."""

    def convert(value):
        arr = np.asarray(value)
        if arr.dtype.kind != "f":
            arr = arr.astype(np.float32)
        with np.errstate(invalid="ignore"):
            bad = ~(np.isfinite(arr) & (arr > 0))
        if bad.any():
            i = tuple(int(v) for v in np.argwhere(bad)[0])
            raise InvalidArgumentError(
                f"{where}: {field} must be positive and finite (a scale of zero, a negative or NaN scale has no "
                f"dequantization): {field}{list(i) if i else ''} = {arr[i] if i else arr.item()}")
        return arr.reshape(1) if arr.ndim == 0 else arr

    return convert


__all__ = ["PACKED_DOT", "STORES", "Quantized", "accumulate", "checked_scale", "dequantized_reference",
           "packed_dot", "per_line_stride", "requantize_reference", "scale_product"]
