"""DequantizeLinear (blocked, INT4/UINT4) and com.microsoft's MatMulNBits as ONNX Runtime's
DirectML execution provider maps them (DmlOperatorQuantization21.cpp, DmlOperatorMatMulNBits.cpp):
DML_OPERATOR_DEQUANTIZE (gpudml/ops/dequantize.py), and for MatMulNBits a DEQUANTIZE of the
weight feeding a GEMM (TransB) in one DirectML graph, which gpudml's graph fusion runs as one
GEMM kernel reading the 4-bit weight (gpudml/fusion.py: the GEMM's B operand dequantized in its
load; the weight is never expanded in memory).

Where gpudml differs from the provider, and why:

- MatMulNBits without zero_points: the contrib op's definition and onnxruntime's CPU kernel
  take 2^(bits - 1) (8 for 4 bits); the provider hands DEQUANTIZE no zero point (0). gpudml
  gives DEQUANTIZE the zero point 8 (the CPU provider's results, which symmetric models from
  onnxruntime's MatMulNBitsQuantizer need).
- MatMulNBits' optional g_idx (act-order) and a float zero point (zero_points of A's type)
  are refused (NotMapped, with the reason): DEQUANTIZE takes blocks in order and an integer
  zero point; the provider has neither either (it reads input 3 as a UINT4/UINT8 zero point
  and takes no input past it). Its `bias` (input 5) is added after the GEMM (ELEMENT_WISE_ADD).
  accuracy_level is ignored, as the provider ignores it (float32 products and sums).
- 4-bit tensors: gpudml takes them as bytes (two elements a byte, low nibble first, each
  row of the last axis starting on a byte: ops/dequantize.py's pack4): a constant's (an
  initializer's) ml_dtypes int4/uint4 values are packed on the host; a value computed at run
  time (a 4-bit graph input, whose ml_dtypes feed the session packs on the host; a
  QuantizeLinear to INT4/UINT4, DML_OPERATOR_QUANTIZE's 4-bit output) is a values.Packed4,
  its bytes on the graph beside its ONNX shape. DequantizeLinear (and QuantizeLinear, as its
  zero point) reads one (a 4-bit input's
  last size 2 or more: the bytes of a last size of 1 would read as 8-bit); a graph output
  is read back and unpacked to the ml_dtypes array; any other node reading one is refused
  with the node named. A 4-bit zero point computed at run time becomes one value a byte on
  the device (its bytes as they are where its last size is 1, else a DEQUANTIZE by 1 and a
  CAST to INT8/UINT8: two small dispatches), the form QUANTIZE and DEQUANTIZE both read.
- Cast and CastLike to or from INT4/UINT4 are refused: ONNX Runtime's DirectML provider
  registers Cast for its 8- to 64-bit types only (OperatorRegistration.cpp's
  supportedTypeListCast), and DirectML's CAST has no 4-bit type.
"""

from __future__ import annotations

import numpy as np
import onnx

from ..graph import Expression
from ..ops.dequantize import FOUR_BYTES, check_scale_values, four_bytes, four_name, four_values
from .values import NotMapped, Packed4, as_expr, dtype_of, rank, reshape


def _four_bit(x) -> bool:
    return four_name(dtype_of(x)) is not None


def _host_scale(scale, where: str) -> None:
    """Scales known at build time (initializers): finite and not zero (gpudml's rule: ops/dequantize.py)."""
    if not isinstance(scale, Expression):
        check_scale_values(scale, where)


def _as_bytes(x, field: str):
    """A 4-bit tensor as (its bytes, its logical last size): a run-time one's (a Packed4) as
    they are, a constant's packed on the host (four_bytes: INT8 for INT4, UINT8 for UINT4). A
    last size of 1 is refused (its bytes would read as 8-bit)."""
    shape = tuple(x.shape) if isinstance(x, Packed4) else np.shape(x)
    if not shape or shape[-1] < 2:
        raise NotMapped(f"a 4-bit {field} of shape {list(shape)}: gpudml packs 4-bit rows two elements a byte and "
                        f"takes a last size of 2 or more (the bytes of one element a row read as 8-bit)")
    if isinstance(x, Packed4):
        return x.data, shape[-1]
    return four_bytes(np.asarray(x)), shape[-1]


def _zero_bytes(ctx, zero):
    """A 4-bit zero point, one element a byte (QUANTIZE and DEQUANTIZE read the low nibble), as
    INT8/UINT8: a constant's values; a run-time one's (Packed4) bytes where its last size is 1
    (one a byte already), else DEQUANTIZE(bytes, 1) cast to INT8/UINT8."""
    byte = FOUR_BYTES[dtype_of(zero).name]
    if isinstance(zero, Packed4):
        shape = zero.shape or (1,)
        if shape[-1] == 1:
            return zero.data
        values = ctx.fn("dequantize")(zero.data, np.ones(1, np.float32), bits=4,
                                      **({"size": shape[-1]} if shape[-1] % 2 else {}))
        return ctx.fn("cast")(values, byte)
    return np.asarray(zero).astype(np.int64).astype(byte)


def quantize_linear4(ctx, n, out: np.dtype):
    """QuantizeLinear to INT4/UINT4 (opset 21 on): DML_OPERATOR_QUANTIZE's 4-bit output (per
    tensor, per axis or blocked), its bytes; eagerly the ml_dtypes values, in a graph a Packed4."""
    x, scale, zero = n.inputs[0], n.inputs[1], n.input(2)
    shape = tuple(x.shape) if isinstance(x, Expression) else np.shape(x)
    if not shape or shape[-1] < 2:
        raise NotMapped(f"QuantizeLinear to {out.name.upper()} of x shape {list(shape)}: gpudml packs 4-bit rows two "
                        f"elements a byte and takes a last size of 2 or more")
    block = n.attr("block_size", 0)
    sizes = list(scale.shape) if isinstance(scale, Expression) else list(np.shape(scale))
    axis = n.attr("axis", 1) if (sizes and int(np.prod(sizes)) > 1) or block else None
    zero = None if zero is None else as_expr(ctx, _zero_bytes(ctx, zero))
    y = ctx.fn("quantize")(as_expr(ctx, x), as_expr(ctx, scale), zero, dtype=out.name, axis=axis,
                           block_size=block or None)
    if ctx.graph is None:
        return four_values(y, out.name, shape[-1]).reshape(shape)
    return Packed4(y, shape, out)


def dequantize_linear(ctx, n, linear, contrib: bool = False):
    """DequantizeLinear: from opset 21 (blocked, 4-bit: DmlOperatorQuantization21) DEQUANTIZE for
    8- and 4-bit inputs; before it, and for 16/32-bit inputs, `linear` (ELEMENT_WISE_DEQUANTIZE_LINEAR).
    com.microsoft's (`contrib`: per tensor or per axis, as ONNX's opset 13) takes `linear` but for
    4-bit inputs."""
    x, scale, zero = n.inputs[0], n.inputs[1], n.input(2)
    block = n.attr("block_size", 0)
    four = _four_bit(x)
    eight = dtype_of(x) in (np.dtype(np.int8), np.dtype(np.uint8))
    if not four and not (eight and not contrib and (n.opset >= 21 or block)):
        if block:
            raise NotMapped(f"blocked dequantization of {dtype_of(x)}: DEQUANTIZE takes 8- and 4-bit inputs")
        return linear(ctx, n)
    _host_scale(scale, f"{n.name or 'DequantizeLinear'}: x_scale")
    bits = 8
    size = None
    if four:
        (x, last), bits = _as_bytes(x, "DequantizeLinear input"), 4
        size = last if last % 2 else None
        zero = None if zero is None else _zero_bytes(ctx, zero)
    x = as_expr(ctx, x)
    sizes = list(np.shape(scale)) if not isinstance(scale, Expression) else list(scale.shape)
    axis = n.attr("axis", 1) if (len(sizes) >= 1 and int(np.prod(sizes)) > 1) or block else None
    scale = as_expr(ctx, scale)
    zero = None if zero is None else as_expr(ctx, zero)
    y = ctx.fn("dequantize")(x, scale, zero, axis=axis, block_size=block or None, bits=bits,
                             **({"size": size} if size else {}))
    to = n.attr("output_dtype", 0)  # (opset 25: the output's type where it is not the scale's; CAST)
    if to and onnx.helper.tensor_dtype_to_np_dtype(to) != dtype_of(y):
        y = ctx.fn("cast")(y, onnx.helper.tensor_dtype_to_np_dtype(to))
    return [y]


def matmul_nbits(ctx, n):
    """MatMulNBits: Y = A x dequantize(B)^T (+ bias), B [N, K] in blocks of block_size along K,
    as the provider's graph of DEQUANTIZE and GEMM (TransB); the module docstring for its zero
    point, g_idx and bias."""
    a, blob, scales = n.inputs[0], n.inputs[1], n.inputs[2]
    zero, g_idx = n.input(3), n.input(4)
    bias = n.input(5) if len(n.inputs) > 5 else None
    k, cols, bits, block = n.attr("K"), n.attr("N"), n.attr("bits", 4), n.attr("block_size")
    if bits not in (4, 8):
        raise NotMapped(f"MatMulNBits bits={bits}: the provider runs 4 and 8 bits")
    if g_idx is not None:
        raise NotMapped("MatMulNBits g_idx (act-order): DEQUANTIZE takes K's blocks in order, and the provider "
                        "reads no input past zero_points")
    if zero is not None and dtype_of(zero).kind == "f":
        raise NotMapped("MatMulNBits with float zero_points: DEQUANTIZE takes an integer zero point (the provider "
                        "reads zero_points as UINT4/UINT8)")
    if not block or k % block:
        raise NotMapped(f"MatMulNBits K={k}, block_size={block}: gpudml takes K a multiple of block_size "
                        f"(DEQUANTIZE's blocks divide the axis)")
    blocks = k // block
    _host_scale(scales, f"{n.name or 'MatMulNBits'}: scales")
    per_byte = 8 // bits
    w = reshape(ctx, as_expr(ctx, blob), [cols, k // per_byte])
    s = reshape(ctx, as_expr(ctx, scales), [cols, blocks])
    if zero is None:
        z = np.full([cols, blocks], 1 << (bits - 1), np.uint8)
    elif isinstance(zero, Expression):
        if bits == 4 and blocks % 2:
            raise NotMapped("MatMulNBits with zero_points computed at run time and an odd block count: each row's "
                            "last half byte pads (gpudml takes runtime zero points packed whole)")
        z = reshape(ctx, zero, [cols, blocks // per_byte])
    else:
        z = np.asarray(zero).view(np.uint8).reshape(cols, -1)
        if bits == 4:  # each row's zero points, two a byte (the last half byte padding an odd count)
            z = np.stack([z & 0xF, z >> 4], axis=-1).reshape(cols, -1)[:, :blocks].astype(np.uint8)
    weight = ctx.fn("dequantize")(w, s, as_expr(ctx, z), axis=1, block_size=block, bits=bits)
    x = as_expr(ctx, a)
    lead = list(x.shape[:-1])
    rows = int(np.prod(lead)) if lead else 1
    y = ctx.fn("gemm")(reshape(ctx, x, [rows, k]), weight, trans_b=True)
    if bias is not None:
        y = ctx.fn("add")(y, reshape(ctx, as_expr(ctx, bias), [1, cols]))
    return [reshape(ctx, y, lead + [cols]) if rank(x) != 2 else y]


#: Contrib rows (domain com.microsoft), as mapping.CONTRIB_ROWS: (op, DirectML, build, needs).
NBITS_ROWS: tuple[tuple, ...] = (
    ("MatMulNBits", "DEQUANTIZE (the weight: UINT4/UINT8 blocks of block_size along K, a zero point of 2^(bits-1) "
     "where none is given), GEMM (TransB; fused: the weight dequantized in the GEMM's operand load); bias: "
     "ELEMENT_WISE_ADD", matmul_nbits, ("dequantize", "gemm", "add")),
)

def cast_four(x, to: np.dtype) -> None:
    """Cast and CastLike to or from INT4/UINT4: refused (the module docstring)."""
    names = {dtype_of(x).name, np.dtype(to).name} & set(FOUR_BYTES)
    if names:
        raise NotMapped(f"a Cast to or from {'/'.join(sorted(n.upper() for n in names))}: ONNX Runtime's DirectML "
                        f"provider registers Cast for 8- to 64-bit types only, and DirectML's CAST has no 4-bit type")


def check_reader(op_type: str, inputs, names) -> None:
    """A node that reads a 4-bit value computed at run time (a Packed4) other than
    DequantizeLinear, QuantizeLinear (its zero point) and Cast (which names its own refusal): refused."""
    if op_type in ("DequantizeLinear", "QuantizeLinear", "Cast", "CastLike"):
        return
    for v, name in zip(inputs, names):
        if isinstance(v, Packed4):
            raise NotMapped(f"it reads the 4-bit ({v.dtype.name.upper()}) value {name!r} computed at run time: gpudml "
                            f"runs such a value into DequantizeLinear and as QuantizeLinear's zero point (or returns "
                            f"it as a graph output) only, as DirectML has 4-bit types for QUANTIZE and DEQUANTIZE only")


__all__ = ["NBITS_ROWS", "cast_four", "check_reader", "dequantize_linear", "matmul_nbits", "quantize_linear4"]
