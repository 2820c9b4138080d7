"""DirectML's element-wise and activation operators (DML_OPERATOR_ELEMENT_WISE_* and
DML_OPERATOR_ACTIVATION_*), as rows of one table (`TABLE`): a row is everything its page
says that tells it apart (names, arity, attributes, the support table, the numpy
reference, the WGSL formula, the precision); `spec(row)` builds each row's OpSpec, and the
element-wise kernel family (kernels/elementwise.py) runs them all.

The package: row.py (the row type: `Row`, `Attr`, `ScaleBias`), the rows by topic
(arithmetic.py, transcendental.py, logical.py, activation.py, quantize.py; common.py what
they share), table.py (`TABLE` in the registry's order, `FUSABLE`), fused.py
(`FusedActivation`), semantics.py (validation, the kernels' problem, the reference, the
tolerance) and builders.py (each row's OpSpec: functional form, `gpudml shader` options).
The pieces other operators share are public modules beside it: gpudml/ops/precision.py
and gpudml/ops/activations.py.

Shared semantics, as implemented (and tested against the references):

- Descriptions are strict as DirectML's: every tensor of one DimensionCount and one set of
  sizes, one data type (the logical operators' outputs UINT8); a broadcast is a stride-0
  stride in the description. The functional forms broadcast as numpy does, by building
  such stride-0 descriptions (no copy).
- FLOAT32 and FLOAT16 compute in float32 (a float16 result is rounded once, to nearest
  even, and beyond 65504 is +-inf), FLOAT64 in float64 where the adapter has shader-f64.
  The float attributes (DirectML's FLOAT: alpha, min, scale, ...) are float32 values: a
  Python float is rounded to float32, one beyond float32's range is an
  InvalidArgumentError. NaN and infinities in them are IEEE arithmetic's to propagate.
- DML_SCALE_BIAS (`scale_bias`, `ScaleBias(scale, bias)` or a pair) applies x * scale +
  bias to the input before the function (float tensors only); a fused activation
  (`fused_activation`, `FusedActivation("relu")`, ADD1's) applies an activation to the
  result (FLOAT32 and FLOAT16 outputs only, as the ADD1 page says). Both are parts of the
  same kernel: the formula is one WGSL expression.
- Integers compute in 32 bits (64-bit ones exactly: native or as u32 pairs) and keep the
  low bits of the result: two's-complement wrap (INT8 127 + 1 is -128).
- MAX, MIN, CLIP, CLIP1, THRESHOLD, RELU, HARD_SIGMOID and CELU use IEEE 754-2008
  maxNum/minNum, as HLSL's max and min do on DirectML's hardware: where one operand is NaN
  the other is the result (RELU(NaN) = 0, CLIP0(NaN) = min, CLIP1(NaN) = max); of two equal
  operands (0.0 and -0.0) the second.
- Precision (docs/operators/precision.md): each float row states its error bound as the
  WGSL specification's accuracy table gives it for the built-in functions its formula
  uses (division 2.5 ULP, exp 3 + 2|x| ULP, log 3 ULP or 2^-21 absolute in [0.5, 2], sqrt
  as 1 / inverseSqrt, sin/cos 2^-11 absolute in [-pi, pi]), in ULPs of float32 at the
  exact result, plus: float16 results 1 ULP of float16 (their rounding), and the
  subnormals WGSL lets an adapter flush to zero (inputs and results below 2^-126). The
  row's `tolerance` is exactly that, per element, against the float64 reference.
"""

from __future__ import annotations

from ...types import TYPES_8
from ..precision import activation_error
from .builders import arguments, broadcast_descs, functional_of, infer_output_of, spec
from .common import FL, FLOATS, integer_bounds
from .fused import FusedActivation, as_activation
from .row import Attr, Row, ScaleBias, argument_name, as_float32, scalar_value
from .semantics import ElementWiseDesc, compute, problem, read_broadcast, reference_of, tolerance_of, validate
from .table import FUSABLE, IDENTITY_ROW, ORDER, TABLE

SPECS = tuple(spec(row) for row in TABLE)

__all__ = [
    "FL", "FLOATS", "FUSABLE", "IDENTITY_ROW", "ORDER", "SPECS", "TYPES_8", "TABLE", "Attr", "ElementWiseDesc",
    "FusedActivation", "Row", "ScaleBias", "activation_error", "argument_name", "arguments", "as_activation",
    "as_float32", "broadcast_descs", "compute", "functional_of", "infer_output_of", "integer_bounds", "problem",
    "read_broadcast", "reference_of", "scalar_value", "spec", "tolerance_of", "validate",
]
