"""The values an ONNX node's build function reads and writes (gpudml/onnx/mapping.py,
gpudml/onnx/contrib.py): Expressions on a session's graph or, eagerly, numpy arrays; views
of them (reshape, transpose, broadcast: strides, no dispatch); NotMapped, what a node gpudml
cannot run raises."""

from __future__ import annotations

import numpy as np

from ..graph import Expression
from ..tensor_desc import view_strides


class NotMapped(Exception):
    """A node gpudml cannot run as DirectML's execution provider would (the message says why)."""


class Packed4:
    """A 4-bit (INT4/UINT4) tensor computed at run time in a session's graph (a 4-bit graph
    input, QuantizeLinear's 4-bit output): `data`, its bytes on the graph (INT8 for INT4,
    UINT8 for UINT4: ops/dequantize.py's pack4 layout, two values a byte, the even one in the
    low nibble, each row of the last axis starting on a byte), `shape` (ONNX's) and `dtype`
    (ml_dtypes' int4/uint4). DequantizeLinear reads it; a graph output is read back as the
    ml_dtypes array; any other node reading it is refused (gpudml/onnx/nbits.py)."""

    def __init__(self, data: Expression, shape, dtype):
        self.data, self.shape, self.dtype = data, tuple(int(n) for n in shape), np.dtype(dtype)

    @property
    def signed(self) -> bool:
        return self.dtype.name == "int4"

    def __repr__(self) -> str:
        return f"Packed4({self.dtype.name}{list(self.shape)}, bytes {list(self.data.shape)})"


def dtype_of(x) -> np.dtype:
    if isinstance(x, Packed4):
        return x.dtype
    return x.dtype.numpy if isinstance(x, Expression) else np.asarray(x).dtype


def shape(x) -> list[int]:
    return list(x.shape)


def as_expr(ctx, x):
    """x as an operand of a gpudml operator: an Expression (a numpy constant becomes a graph
    constant) or, eagerly, a numpy array; BOOL as UINT8 (DirectML's), rank 0 as one element."""
    if isinstance(x, Expression):
        return x
    x = np.asarray(x)
    if x.dtype == np.bool_:
        x = x.astype(np.uint8)
    x = x.reshape(x.shape or (1,))
    return x if ctx.graph is None else ctx.graph.constant(x)


def materialize(ctx, x: Expression) -> Expression:
    """x written as a packed tensor: DML_OPERATOR_ELEMENT_WISE_IDENTITY of its view."""
    return ctx.fn("identity")(x)


def reshape(ctx, x, sizes):
    """x with other sizes of its element count: the same buffer (a view), as the provider's
    Reshape; a strided x is written packed first."""
    sizes = [int(s) for s in sizes]
    if not isinstance(x, Expression):
        return np.reshape(x, sizes)
    if list(x.shape) == sizes and x.desc.is_packed:
        return x
    if x.desc.is_packed:
        return ctx.graph.view(x, sizes or [1])
    strides = view_strides(list(x.shape), list(x.desc.effective_strides), sizes or [1])
    if strides is None:  # axes merged across a layout change: written packed first (the provider copies too)
        return ctx.graph.view(materialize(ctx, x), sizes or [1])
    return ctx.graph.view(x, sizes or [1], strides)


def transpose(ctx, x, perm):
    if not isinstance(x, Expression):
        return np.transpose(x, perm)
    strides = x.desc.effective_strides
    return ctx.graph.view(x, [x.shape[p] for p in perm], [strides[p] for p in perm])


def broadcast(ctx, x, sizes):
    """x broadcast to `sizes` (numpy's rule): stride 0 on the broadcast axes."""
    if not isinstance(x, Expression):
        return np.broadcast_to(x, sizes)
    pad = len(sizes) - rank(x)
    own, base = [1] * pad + list(x.shape), [0] * pad + list(x.desc.effective_strides)
    return ctx.graph.view(x, list(sizes), [0 if o == 1 and s != 1 else st for o, s, st in zip(own, sizes, base)])


def rank(x) -> int:
    return len(x.shape)


__all__ = ["NotMapped", "Packed4", "as_expr", "broadcast", "dtype_of", "materialize", "rank", "reshape", "shape",
           "transpose"]
