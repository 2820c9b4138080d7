"""`TABLE`: every row of the element-wise table, in the registry's order (`ORDER`: the
documentation's, the conformance kit's, `TABLE[0]` is IDENTITY), gathered from the topic
modules (arithmetic, transcendental, logical, activation, quantize); `FUSABLE`: the
activations another operator may fuse, by their FusedActivation name. (QUANTIZED_LINEAR_ADD,
between dequantize_linear and tanh in the registry, is a module of its own:
gpudml/ops/quantized_linear_add.py.)"""

from __future__ import annotations

from . import activation, arithmetic, logical, quantize, transcendental
from .row import Row, fused_name

#: The rows' keys in table order: a new row goes into its topic module's ROWS and here.
ORDER: tuple[str, ...] = (
    "identity", "add0", "add1", "multiply", "sqrt", "relu", "abs", "subtract", "divide", "max", "min", "mean", "exp",
    "log", "recip", "negate", "sin", "cos", "clip0", "logical_equals", "logical_greater_than", "logical_less_than",
    "logical_and", "logical_not", "logical_or", "logical_xor", "logical_greater_than_or_equal",
    "logical_less_than_or_equal", "bit_and", "bit_or", "bit_xor", "bit_not", "bit_count", "bit_shift_left",
    "bit_shift_right", "modulus_floor", "modulus_truncate", "if", "clip_grad0", "clip_grad", "relu_grad", "cast",
    "quantize_linear", "dequantize_linear", "tanh", "leaky_relu", "sigmoid",
    "activation_tanh", "elu", "linear", "softplus", "gelu", "clip", "pow", "constant_pow", "acos", "asin", "atan",
    "atan_yx", "acosh", "asinh", "atanh", "cosh", "sinh", "tan", "ceil", "floor", "round", "erf", "sign", "is_nan",
    "is_infinity", "threshold", "difference_square", "hard_sigmoid", "parametric_softplus", "scaled_elu",
    "scaled_tanh", "softsign", "thresholded_relu", "shrink", "celu", "hard_swish", "swish", "activation_identity",
    "parameterized_relu",
)


def _gather(order: tuple[str, ...], *topics: tuple[Row, ...]) -> tuple[Row, ...]:
    """The topics' rows in `order`; ValueError where a row is missing from either or twice in them."""
    by_key: dict[str, Row] = {}
    for row in (r for rows in topics for r in rows):
        if row.key in by_key:
            raise ValueError(f"element-wise table: row {row.key!r} twice")
        by_key[row.key] = row
    if set(by_key) != set(order) or len(order) != len(set(order)):
        raise ValueError(f"element-wise table: ORDER and the topic modules' rows differ: "
                         f"{sorted(set(by_key).symmetric_difference(order))}")
    return tuple(by_key[k] for k in order)


TABLE: tuple[Row, ...] = _gather(ORDER, arithmetic.ROWS, transcendental.ROWS, logical.ROWS, activation.ROWS,
                                 quantize.ROWS)
IDENTITY_ROW = TABLE[0]
FUSABLE = {fused_name(r): r for r in TABLE if r.fuses}
