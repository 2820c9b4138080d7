"""DML_OPERATOR_ELEMENT_WISE_QUANTIZED_LINEAR_ADD: a and b dequantized, added in float32 and
the sum quantized again, an element-wise operator of two steps: the element-wise family runs
it (kernels/elementwise.py: one kernel of two steps, or two kernels where the adapter binds
too few tensors for its nine). docs/elementwise.md says the same for users.

A module of its own beside the element-wise table (as gpudml/ops/batch_normalization.py is)
rather than a row of it, because three things are its alone: its scales and zero points hold
one element each (the page: "the expected number of elements is 1"; `SINGLE`: each axis of
size 1, or of a's size with stride 0, read broadcast by stride 0), its kernel is two steps
(`problem`) and its precision is not a float row's (`tolerance`). Everything else is the
table's: its `ROW` (not in TABLE) gives the desc class (ElementWiseQuantizedLinearAddOperatorDesc),
the functional form, the reference, the support table and the rules every row shares; its
spec is the row's with those three pieces replaced, and the registry (gpudml/ops/__init__.py)
places it where the table's order had it, after DEQUANTIZE_LINEAR.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.elementwise import ElementWisePlanner, FusedProblem, Problem, Step, input_name, value_kind
from ..tensor_desc import TensorDesc, check_same_rank, check_tensor_desc
from ..types import F32, I8, U8, DataType
from .elementwise import Row, argument_name, read_broadcast, spec
from .elementwise import validate as validate_row
from .elementwise.common import FL
from .elementwise.quantize import quantize_reference
from .spec import Cli

OP = "ElementWiseQuantizedLinearAdd"
#: The inputs that hold one element.
SINGLE = ("a_scale_tensor", "a_zero_point_tensor", "b_scale_tensor", "b_zero_point_tensor", "output_scale_tensor",
          "output_zero_point_tensor")


def _quantized_add_out_type(named, attributes):
    """QUANTIZED_LINEAR_ADD's output type: `output_data_type` where given, else the output
    zero point's, else a's."""
    given = attributes.pop("output_data_type", None)
    if given is not None:
        return DataType.parse(given, "quantized_linear_add: output_data_type")
    return named.get("output_zero_point_tensor", named["a_tensor"]).data_type


def _flushed(x: np.ndarray, flush: bool) -> np.ndarray:
    """float32 `x` with its subnormals flushed to zero (sign kept) where `flush`."""
    return np.where(np.abs(x) < np.float32(2.0**-126), np.copysign(np.float32(0.0), x), x).astype(np.float32) \
        if flush else x


def _quantized_add_sum(a, a_scale, a_zero_point, b, b_scale, b_zero_point, contract: int = 0, flush: bool = False):
    """(a - a_zero_point) a_scale + (b - b_zero_point) b_scale in float32: each product and
    the sum rounded to float32, or (`contract` 1 or 2) a's or b's product and the sum
    rounded once (a fused multiply-add); with `flush`, subnormal scales, products and sum 0."""
    with np.errstate(all="ignore"):
        terms = []
        for x, scale, zero in ((a, a_scale, a_zero_point), (b, b_scale, b_zero_point)):
            d = x.astype(np.int32) - (0 if zero is None else zero.astype(np.int32))  # exact in float32 too
            terms.append((d.astype(np.float64), _flushed(scale.astype(np.float32), flush).astype(np.float64)))
        (da, sa), (db, sb) = terms
        av = _flushed((da * sa).astype(np.float32), flush)  # da sa exact in float64 (9 x 24 bits)
        bv = _flushed((db * sb).astype(np.float32), flush)
        if contract == 1:
            total = (da * sa + bv.astype(np.float64)).astype(np.float32)
        elif contract == 2:
            total = (av.astype(np.float64) + db * sb).astype(np.float32)
        else:
            total = (av + bv).astype(np.float32)
        return _flushed(total, flush)


def _quantized_add(a, a_scale, a_zero_point, b, b_scale, b_zero_point, output_scale, output_zero_point,
                   output_data_type=None):
    """DML_ELEMENT_WISE_QUANTIZED_LINEAR_ADD: a and b dequantized and added in float32, the
    sum quantized as QUANTIZE_LINEAR does (round half to even, saturated)."""
    total = _quantized_add_sum(a, a_scale, a_zero_point, b, b_scale, b_zero_point)
    return quantize_reference(total, output_scale, output_zero_point, output_data_type or a.dtype)


def _quantized_add_tolerance(expected, named, arguments):
    """Exact against the float32 computation; where a compiler contracts a product and the
    sum into one fused multiply-add, or the adapter flushes subnormals (WGSL allows both), the
    result of that computation: per element, the largest difference those make."""
    args = [named[f] for f in ("a_tensor", "a_scale_tensor", "a_zero_point_tensor", "b_tensor", "b_scale_tensor",
                               "b_zero_point_tensor")]
    args = [None if x is None else np.asarray(x) for x in args]
    out_type = arguments.get("output_data_type") or expected.dtype
    quantized = [quantize_reference(_quantized_add_sum(*args, contract=c, flush=f), named["output_scale_tensor"],
                           named["output_zero_point_tensor"], out_type).astype(np.int64)
                 for c in (0, 1, 2) for f in (False, True)]
    return np.max([np.abs(q - quantized[0]) for q in quantized], axis=0).astype(np.float64)


def _quantized_add_problem(desc, inputs: tuple[TensorDesc, ...], output: TensorDesc) -> FusedProblem:
    """The kernel's two steps: the sum (a and b dequantized and added, a float32 value) over
    the inputs of a and b, then its quantization over the output's scale and zero point (an
    adapter of few storage bindings runs them as two kernels: kernels/elementwise.py)."""
    fields = [f for f in desc.ROW.tensors if getattr(desc, f) is not None]
    index = {f: k for k, f in enumerate(fields)}
    first = [f for f in fields if not f.startswith("output_")]
    name = {f: input_name(k) for k, f in enumerate(first)}

    def value(x: str) -> str:
        signed = getattr(desc, f"{x}_tensor").data_type.is_signed
        zero = name.get(f"{x}_zero_point_tensor", "0i" if signed else "0u")
        return f"dq_diff_{'s' if signed else 'u'}({name[f'{x}_tensor']}, {zero}) * {name[f'{x}_scale_tensor']}"
    kind = {f: value_kind(getattr(desc, f).data_type) for f in fields}
    total = TensorDesc(F32, output.sizes)
    add = Problem(desc.ROW.op, tuple(inputs[index[f]] for f in first), total, tuple(kind[f] for f in first), "float",
                  f"{value('a')} + {value('b')}")
    z = "c" if desc.output_zero_point_tensor is not None else "0i"
    if desc.output_zero_point_tensor is not None and not desc.output_zero_point_tensor.data_type.is_signed:
        z = "i32(c)"
    q = f"quantize_f32(a, b) + {z}"
    second = [f for f in fields if f.startswith("output_")]
    out_kind = value_kind(output.data_type)
    quantize = Problem(desc.ROW.op, (total,) + tuple(inputs[index[f]] for f in second), output,
                       ("float",) + tuple(kind[f] for f in second), out_kind,
                       f"clamp({q}, -128i, 127i)" if out_kind == "sint" else f"u32(clamp({q}, 0i, 255i))")
    return FusedProblem(desc.ROW.op, inputs, output, (
        Step(add, tuple(("input", index[f]) for f in first)),
        Step(quantize, (("step", 0),) + tuple(("input", index[f]) for f in second))))


ROW = Row("ELEMENT_WISE_QUANTIZED_LINEAR_ADD", "quantized_linear_add", "quantized_linear_add",
("a_tensor", "a_scale_tensor", "a_zero_point_tensor", "b_tensor", "b_scale_tensor", "b_zero_point_tensor",
 "output_scale_tensor", "output_zero_point_tensor"), (
    (FL.FL_4_0, (1, 8), {I8, U8}, {F32}, {I8, U8}, {I8, U8}, {F32}, {I8, U8}, {F32}, {I8, U8}, {I8, U8}),
), _quantized_add, {}, "element_wise_quantized_linear_add_operator_desc.md",
"clamp(round(((a - a_zero_point) a_scale + (b - b_zero_point) b_scale) / output_scale) + output_zero_point, "
"the output type's range): a and b dequantized and added in float32, the sum quantized as quantize_linear "
"does (half to even, NaN 0, saturating); each scale and zero point one element, a zero point optional (0; "
"the output then output_data_type's, else a's type)",
raw=True, optional=("a_zero_point_tensor", "b_zero_point_tensor", "output_zero_point_tensor"),
same_type=(("a_tensor", "a_zero_point_tensor"), ("b_tensor", "b_zero_point_tensor"),
           ("output_zero_point_tensor", "output_tensor")),
out_type=_quantized_add_out_type,
out_type_arguments=lambda desc: {"output_data_type": desc.output_tensor.data_type.name},
precision="exact against the float32 sum (each product and the sum rounded); where a compiler contracts a "
          "product and the sum into a fused multiply-add, or the adapter flushes subnormals, the result of "
          "that computation")


def _check_single(op: str, field: str, td: TensorDesc, first_field: str, first: TensorDesc) -> None:
    """A tensor of one element: each axis of size 1, or of `first`'s size with stride 0."""
    for axis, (n, stride, want) in enumerate(zip(td.sizes, td.effective_strides, first.sizes)):
        if n != 1 and (n != want or stride != 0):
            raise InvalidArgumentError(
                f"{op}: {field} must hold one element (the page: its expected number of elements is 1), each axis of "
                f"size 1 or of {first_field}'s size with stride 0: {field}.sizes {list(td.sizes)} with strides "
                f"{list(td.effective_strides)} against {first_field}.sizes {list(first.sizes)} (axis {axis})")


def _one_element(d: TensorDesc, rank: int) -> TensorDesc:
    """A tensor of one element at `rank` (axes of 1 prepended)."""
    if d.rank == rank:
        return d
    return TensorDesc(d.data_type, [1] * rank, total_tensor_size_in_bytes=d.total_tensor_size_in_bytes)


_BASE = spec(ROW)
assert _BASE.name == OP


def validate(desc, level) -> None:
    """The table's rules (ops/elementwise/semantics.py's validate), the one-element tensors
    checked as such (in field order, where the table's rule checks sizes) and then read at
    a's sizes by stride 0 for the rest."""
    op = ROW.op
    named = {f: getattr(desc, f) for f in ROW.fields}
    named = {f: td for f, td in named.items() if td is not None or f not in ROW.optional}
    for field, td in named.items():
        check_tensor_desc(op, field, td, is_output=field == ROW.output)
    check_same_rank(op, named)
    first_field, first = next(iter(named.items()))
    for field, td in named.items():
        if field in SINGLE:
            _check_single(op, field, td, first_field, first)
        elif td.sizes != first.sizes:
            break  # (the table's rule names it)
    read = {f: read_broadcast(td, first.sizes) for f, td in named.items() if f in SINGLE}
    validate_row(_BASE.support, dataclasses.replace(desc, **read), level)


def infer_output(*descs, **attributes):
    """The table's infer_output (numpy's broadcasting), a one-element tensor kept one (its
    axes all 1: the kernel reads it broadcast)."""
    desc = _BASE.infer_output(*descs, **attributes)
    given = [f for f in ROW.tensors if getattr(desc, f) is not None]
    rank = desc.output_tensor.rank
    return dataclasses.replace(desc, **{f: _one_element(d, rank) for f, d in zip(given, descs)
                                        if f in SINGLE and d.element_count == 1})


def problem(desc) -> FusedProblem:
    """The element-wise kernels' problem: the one-element tensors read at the output's sizes
    (stride 0), the two steps of `_quantized_add_problem`."""
    output = desc.output_tensor
    inputs = tuple(read_broadcast(t, output.sizes) if f in SINGLE else t
                   for f, t in zip(ROW.tensors, desc.input_descs) if t is not None)
    return _quantized_add_problem(desc, inputs, output)


def tolerance(expected, inputs, arguments: dict):
    """The documented precision (`_quantized_add_tolerance`), the inputs the call gives
    named by field (None for an optional one left out)."""
    given = iter(inputs)
    named = {f: None if f in ROW.optional and arguments.get(argument_name(f), 0) is None else next(given)
             for f in ROW.tensors}
    return _quantized_add_tolerance(expected, named, arguments)


def _from_cli(x: TensorDesc, options: dict):
    """The table's `gpudml shader` desc, the scales and zero points of one element."""
    desc = _BASE.cli.desc(x, options)
    return dataclasses.replace(desc, **{f: TensorDesc(getattr(desc, f).data_type, [1] * x.rank) for f in SINGLE
                                        if getattr(desc, f) is not None})


SPEC = dataclasses.replace(_BASE, infer_output=infer_output, validate=validate, planner=ElementWisePlanner(problem),
                           tolerance=tolerance, cli=Cli(_BASE.cli.args, _from_cli, _BASE.cli.example))

__all__ = ["OP", "ROW", "SINGLE", "SPEC"]
