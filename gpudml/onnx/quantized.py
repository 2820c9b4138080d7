"""onnxruntime's element-wise quantized contrib ops (domain com.microsoft) as DirectML
operators, as ONNX Runtime's DirectML execution provider composes them (microsoft/onnxruntime,
onnxruntime/core/providers/dml/DmlExecutionProvider/src/Operators/DmlOperatorQLinear*.cpp):

- QLinearAdd: DML_OPERATOR_ELEMENT_WISE_QUANTIZED_LINEAR_ADD (DmlOperatorQLinearAdd), a and b
  broadcast as numpy;
- QLinearSigmoid: dequantize, sigmoid, quantize (DmlOperatorQLinearSigmoid's operator graph);
- QLinearConcat: each input dequantized, joined, quantized (DmlOperatorQLinearConcat's);
- QLinearMul (the provider registers no kernel of it: onnxruntime runs it on its CPU provider;
  gpudml maps it as QLinearSigmoid is composed): a and b dequantized, multiplied, quantized;
- QEmbedLayerNormalization (no kernel in the provider either; what quantize_dynamic makes of a
  fused BERT's EmbedLayerNormalization): its 8-bit tables dequantized, then
  EmbedLayerNormalization's mapping (_qembed_layer_norm).

Beside them, `integer_to_float` (the 8-bit GEMM rescaled to float: MatMulIntegerToFloat's and
QAttention's projection) and `quant_value` (a scale or zero point as the integer GEMMs take it).

Every scale and zero point is per tensor (one element: the contrib schemas' rule). The
dequantization is ELEMENT_WISE_DEQUANTIZE_LINEAR (float32, as the provider's intermediate
tensors are), the float op the element-wise operator, and the requantization DML_OPERATOR_QUANTIZE
(FL 6_3: ONNX's float32 arithmetic, the quotient rounded to float32 then to an integer half
to even, as onnxruntime's CPU kernels compute it) rather than the provider's
ELEMENT_WISE_QUANTIZE_LINEAR, whose exact quotient can differ from onnxruntime's by one where
the float32 quotient rounds onto a half. A zero point left out is 0 (the output then the type
of the first input). QLinearSigmoid's sigmoid is gpudml's float32 ACTIVATION_SIGMOID; onnxruntime's CPU kernel
tabulates its own float32 logistic approximation, so their outputs may differ by one where
the float value lies near a rounding boundary (tests/test_onnx_quantized_ops.py)."""

from __future__ import annotations

import numpy as np

from ..graph import Expression
from .contrib import embed_layer_norm
from .values import NotMapped, as_expr, dtype_of, rank, reshape


def quant_value(ctx, v, f32: bool = False):
    """A zero point or scale as the integer GEMMs take it (a scalar as one value; 1-D [M]
    per row of A or the output, [N] per column of B, as the provider aligns them); a scale
    of another float type (QLinearMatMul-21's FLOAT16) as FLOAT32, exactly."""
    if v is None:
        return None
    if isinstance(v, Expression):
        if rank(v) == 0:
            v = reshape(ctx, v, [1])
        if f32 and v.dtype.numpy != np.float32:
            v = ctx.fn("cast")(v, np.float32)
        return v
    v = np.asarray(v)
    v = v.reshape(1) if v.ndim == 0 else v
    return v.astype(np.float32) if f32 and v.dtype != np.float32 else v


def integer_to_float(ctx, a, b, a_scale, b_scale, a_zero=None, b_zero=None, bias=None):
    """(a - a_zero) (b - b_zero) a_scale b_scale + bias in the scales' float type, a [M, K]
    and b [K, N] of INT8 or UINT8 (a_scale one value or [M] per row, b_scale and b_zero one
    value or [N] per column, bias [N]): DML_OPERATOR_MATRIX_MULTIPLY_INTEGER_TO_FLOAT, whose A
    and B share one type; A and B of different types (UINT8 activations, INT8 weights:
    onnxruntime's quantize_dynamic): MATRIX_MULTIPLY_INTEGER, then CAST to FLOAT32, MULTIPLY by
    a_scale and b_scale and ADD the bias (onnxruntime's CPU kernel's steps), FLOAT16 scales and
    bias read as FLOAT32 and the result CAST to FLOAT16 (a sum of 8-bit products can pass
    float16's largest value, 65504, before it is scaled).
    com.microsoft's MatMulIntegerToFloat and QAttention's projection."""
    dtype = dtype_of(a_scale)
    a_scale, b_scale = quant_value(ctx, a_scale), quant_value(ctx, b_scale)
    a_zero, b_zero = quant_value(ctx, a_zero), quant_value(ctx, b_zero)
    if dtype_of(a) == dtype_of(b):
        return ctx.fn("matrix_multiply_integer_to_float")(a, a_scale, a_zero, b=b, b_scale=b_scale,
                                                          b_zero_point=b_zero, bias=bias)
    acc = ctx.fn("matrix_multiply_integer")(a, b, a_zero, b_zero)
    a_scale, b_scale = quant_value(ctx, a_scale, f32=True), quant_value(ctx, b_scale, f32=True)
    row = a_scale if not isinstance(a_scale, np.ndarray) or a_scale.size == 1 else a_scale.reshape(-1, 1)
    y = ctx.fn("multiply")(ctx.fn("multiply")(ctx.fn("cast")(acc, np.float32), row), b_scale)
    if bias is not None:
        y = ctx.fn("add")(y, quant_value(ctx, bias, f32=True))
    return y if dtype == np.float32 else ctx.fn("cast")(y, dtype)


def _one(ctx, v):
    """A per-tensor scale or zero point (any shape of one element) as a 1-element tensor, or None."""
    return None if v is None else reshape(ctx, v, [1])


def _dequantized(ctx, x, scale, zero):
    """x (INT8 or UINT8) as float32: ELEMENT_WISE_DEQUANTIZE_LINEAR, per tensor."""
    return ctx.fn("dequantize_linear")(as_expr(ctx, x), _one(ctx, scale), _one(ctx, zero))


def _quantized(ctx, y, scale, zero, like):
    """Float y quantized per tensor (DML_OPERATOR_QUANTIZE) into the zero point's type, else `like`'s."""
    dtype = dtype_of(zero if zero is not None else like)
    return ctx.fn("quantize")(y, _one(ctx, scale), _one(ctx, zero), dtype=dtype)


def _qlinear_add(ctx, n):
    """QLinearAdd: DML_OPERATOR_ELEMENT_WISE_QUANTIZED_LINEAR_ADD (inputs A, A_scale, A_zero_point,
    B, B_scale, B_zero_point, C_scale, C_zero_point)."""
    a, b = as_expr(ctx, n.inputs[0]), as_expr(ctx, n.inputs[3])
    zero = n.input(7)
    kwargs = {} if zero is not None else {"output_data_type": dtype_of(a)}
    return [ctx.fn("quantized_linear_add")(a, _one(ctx, n.inputs[1]), _one(ctx, n.input(2)), b=b,
                                           b_scale=_one(ctx, n.inputs[4]), b_zero_point=_one(ctx, n.input(5)),
                                           output_scale=_one(ctx, n.inputs[6]), output_zero_point=_one(ctx, zero),
                                           **kwargs)]


def _qlinear_mul(ctx, n):
    """QLinearMul: a and b dequantized, multiplied in float32 (numpy's broadcasting), quantized."""
    a = _dequantized(ctx, n.inputs[0], n.inputs[1], n.input(2))
    b = _dequantized(ctx, n.inputs[3], n.inputs[4], n.input(5))
    return [_quantized(ctx, ctx.fn("multiply")(a, b), n.inputs[6], n.input(7), n.inputs[0])]


def _qlinear_sigmoid(ctx, n):
    """QLinearSigmoid: dequantized, ACTIVATION_SIGMOID in float32, quantized (X, X_scale,
    X_zero_point, Y_scale, Y_zero_point)."""
    x = _dequantized(ctx, n.inputs[0], n.inputs[1], n.input(2))
    return [_quantized(ctx, ctx.fn("sigmoid")(x), n.inputs[3], n.input(4), n.inputs[0])]


def _qlinear_concat(ctx, n):
    """QLinearConcat: inputs Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per input;
    each dequantized, joined along `axis`, quantized."""
    triples = [n.inputs[k:k + 3] for k in range(2, len(n.inputs), 3)]
    xs = [_dequantized(ctx, x, scale, zero) for x, scale, zero in triples]
    y = ctx.fn("join")(xs, n.attr("axis") % rank(xs[0]))
    return [_quantized(ctx, y, n.inputs[0], n.inputs[1], triples[0][0])]


def _qembed_layer_norm(ctx, n):
    """com.microsoft QEmbedLayerNormalization (what quantize_dynamic makes of an
    EmbedLayerNormalization; DirectML's provider has no kernel of it, onnxruntime runs it on its
    CPU provider): the word, position and segment embeddings, gamma and beta, 8-bit with one
    scale (inputs 8-12) and zero point (13-17) each, dequantized ((q - zero) scale in float32,
    onnxruntime's CPU kernel's) on the host where constant, else by
    ELEMENT_WISE_DEQUANTIZE_LINEAR; then EmbedLayerNormalization's mapping (positions 0..S-1;
    mask_index the count of the mask's ones)."""
    tables = {}
    for k, what in ((2, "word_embedding"), (3, "position_embedding"), (4, "segment_embedding"), (5, "gamma"),
                    (6, "beta")):
        q, scale, zero = n.input(k), n.input(k + 6), n.input(k + 11)
        if q is None:
            if k in (2, 3, 5):
                raise NotMapped(f"{what} missing: QEmbedLayerNormalization requires it")
            continue
        if scale is None or int(np.prod(scale.shape)) != 1 or (zero is not None and int(np.prod(zero.shape)) != 1):
            raise NotMapped(f"{what}'s scale {None if scale is None else list(scale.shape)} and zero point "
                            f"{None if zero is None else list(zero.shape)}: one value each (a scale is required)")
        if dtype_of(q) not in (np.int8, np.uint8):
            raise NotMapped(f"{what} of {dtype_of(q)}: INT8 or UINT8")
        if any(isinstance(v, Expression) for v in (q, scale, zero)):
            tables[k] = _dequantized(ctx, q, scale, zero)
        else:
            offset = 0 if zero is None else np.asarray(zero, np.float32).reshape(())
            tables[k] = ((np.asarray(q).astype(np.float32) - offset) * np.asarray(scale, np.float32).reshape(())
                         ).astype(np.float32)
    return embed_layer_norm(ctx, n, tables)


_DQ_Q = ("dequantize_linear", "quantize")

#: The rows (op type, DirectML operators, build, gpudml forms), domain com.microsoft.
QUANTIZED_ROWS: tuple[tuple, ...] = (
    ("QLinearAdd", "ELEMENT_WISE_QUANTIZED_LINEAR_ADD", _qlinear_add, ("quantized_linear_add",)),
    ("QLinearMul", "ELEMENT_WISE_DEQUANTIZE_LINEAR (a, b), MULTIPLY, QUANTIZE (not the provider's: onnxruntime runs "
     "it on its CPU provider)", _qlinear_mul, ("multiply", *_DQ_Q)),
    ("QLinearSigmoid", "ELEMENT_WISE_DEQUANTIZE_LINEAR, ACTIVATION_SIGMOID, QUANTIZE", _qlinear_sigmoid,
     ("sigmoid", *_DQ_Q)),
    ("QLinearConcat", "ELEMENT_WISE_DEQUANTIZE_LINEAR (each input), JOIN, QUANTIZE", _qlinear_concat,
     ("join", *_DQ_Q)),
    ("QEmbedLayerNormalization", "constant tables dequantized on the host (else ELEMENT_WISE_DEQUANTIZE_LINEAR), "
     "then EmbedLayerNormalization's GATHER, ELEMENT_WISE_ADD, MEAN_VARIANCE_NORMALIZATION1, LOGICAL_EQUALS, CAST, "
     "REDUCE (not the provider's: onnxruntime runs it on its CPU provider)", _qembed_layer_norm,
     ("dequantize_linear", "gather", "add", "mean_variance_normalization", "logical_equals", "cast", "reduce")),
)

__all__ = ["QUANTIZED_ROWS", "integer_to_float", "quant_value"]
