"""What DML_CUMULATIVE_SUMMATION and DML_CUMULATIVE_PRODUCT share: their pages describe one
operator with + or x. Each of the two modules declares its desc, its support table, its
functional form and its page's examples, and builds its OpSpec with `spec` here. The
kernels are ops/scan.py's.

Semantics beyond the pages, as implemented (and tested against the reference):

- Along `axis`, output p combines the input elements before p (has_exclusive_*: TRUE) or
  up to p (FALSE), in scan order: ascending index (INCREASING) or descending (DECREASING,
  the scan runs from the end of the axis). An exclusive output with nothing before it is
  the identity (0 for sums, 1 for products).
- Floats: float16 is read as float32 and every output is computed in float32, then
  rounded once to the output type (a float16 result beyond 65504 is +-inf). float32 sums
  accumulate blocks of 64 elements before adding them to the running total, so that an
  output goes through at most `scan.rounding_depth(n)` roundings (710 for axes up to 1 M
  elements, 838 at 8 M, 1,232 at 16 M): |output - exact| <= depth x 2^-24 x (sum of |x|
  up to it), plus the final rounding. Products: a product of k factors in any order has a
  relative error <= (k - 1) x 2^-24, so |output - exact| <= 2 (k + 1) x 2^-24 x |exact|,
  while no partial product leaves float32's normal range. NaN and infinities propagate as IEEE
  arithmetic says (inf + -inf is NaN).
- Integers wrap modulo 2^bits in the tensor's width (INT32/UINT32 as u32, INT64/UINT64
  exactly on every adapter: native 64-bit integers, or exact u32 pairs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..builder import KernelPlan
from ..errors import InvalidArgumentError
from ..tensor_desc import TensorDesc, as_int
from ..types import AxisDirection, FeatureLevel
from . import scan
from .base import check_copy_tensors
from .spec import CliArg, Example, OpSpec, SupportTable

#: The combination of each operator: numpy's cumulative function and its identity.
FUNCTIONS = {"sum": (np.cumsum, 0), "product": (np.cumprod, 1)}
_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no")


@dataclass(frozen=True)
class Cumulative:
    """One cumulative operator: DirectML's name (OP), its key, its combination ("sum" or
    "product"), the name of its desc's exclusive field, its functional name, its table."""

    op: str
    key: str
    function: str
    exclusive_field: str
    functional_name: str
    support: SupportTable


def as_bool(value, field: str) -> bool:
    """DirectML's BOOL: True/False, or the integers 1/0 (numpy's too)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)) and int(value) in (0, 1):
        return bool(value)
    raise InvalidArgumentError(f"{field}: expected a bool (True/False, or 1/0), got {value!r}")


def normalize_desc(desc, op: str, exclusive_field: str) -> None:
    """The desc's __post_init__: axis an int, axis_direction an AxisDirection, the exclusive
    flag a bool (InvalidArgumentError naming the field otherwise)."""
    object.__setattr__(desc, "axis", as_int(desc.axis, f"{op}: axis"))
    object.__setattr__(desc, "axis_direction", AxisDirection.coerce(desc.axis_direction, f"{op}: axis_direction"))
    object.__setattr__(desc, exclusive_field, as_bool(getattr(desc, exclusive_field), f"{op}: {exclusive_field}"))


def _exclusive(cum: Cumulative, desc) -> bool:
    return getattr(desc, cum.exclusive_field)


# ---------------------------------------------------------------------------- desc
def numpy_axis(axis, rank: int, where: str) -> int:
    """numpy's axis (negative counts from the end) as DirectML's; InvalidArgumentError outside."""
    axis = as_int(axis, f"{where}: axis")
    if not -rank <= axis < rank:
        raise InvalidArgumentError(f"{where}: axis = {axis} is outside [{-rank}, {rank - 1}] (x has {rank} dimensions)")
    return axis + rank if axis < 0 else axis


def infer_output(cum: Cumulative, desc_class):
    """The spec's infer_output: the desc of `fn(x, axis, axis_direction=, exclusive=)`, the
    output x's sizes and type (the desc itself takes DirectML's axis only)."""
    def infer(input_tensor: TensorDesc, axis, axis_direction="increasing", exclusive=False):
        where = cum.functional_name
        fields = {
            "input_tensor": input_tensor, "output_tensor": TensorDesc(input_tensor.data_type, input_tensor.sizes),
            "axis": numpy_axis(axis, input_tensor.rank, where),
            "axis_direction": AxisDirection.coerce(axis_direction, f"{where}: axis_direction"),
            cum.exclusive_field: as_bool(exclusive, f"{where}: exclusive"),
        }
        return desc_class(**fields)
    return infer


def validator(cum: Cumulative):
    """The spec's validate: both tensors, one DimensionCount, data type and sizes, the
    support row at the level, the axis within DimensionCount."""
    def validate(desc, feature_level: FeatureLevel) -> None:
        inp, out = desc.input_tensor, desc.output_tensor
        rank = check_copy_tensors(cum.op, cum.support, feature_level, inp, out)
        if out.sizes != inp.sizes:
            raise InvalidArgumentError(
                f"{cum.op}: output_tensor.sizes {list(out.sizes)} must equal input_tensor.sizes {list(inp.sizes)}")
        if not 0 <= desc.axis < rank:
            raise InvalidArgumentError(
                f"{cum.op}: axis = {desc.axis} must be less than DimensionCount {rank} (and >= 0)")
    return validate


# ---------------------------------------------------------------------------- reference
def reference_of(function: str):
    """The reference of the operator combining with `function` ("sum" or "product")."""
    def reference(x, axis, axis_direction="increasing", exclusive=False) -> np.ndarray:
        return scan_reference(x, axis, axis_direction, exclusive, function)
    reference.__doc__ = (
        f"The cumulative {function} of x along `axis` (negative counts from the end), from the "
        "axis' end for axis_direction DECREASING, each output excluding its own element when "
        "`exclusive`. Floats: computed in float64 and rounded once to x's type. Integers: "
        "wrapping modulo 2^bits in x's type (computed in uint64, whose arithmetic wraps).")
    return reference


def scan_reference(x, axis, axis_direction, exclusive, function: str) -> np.ndarray:
    """See reference_of. ValueError for an axis outside x's dimensions."""
    x = np.asarray(x)
    axis = int(axis)
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"axis {axis} is outside [{-x.ndim}, {x.ndim})")
    axis %= x.ndim
    backwards = AxisDirection.coerce(axis_direction) == AxisDirection.DECREASING
    cumulative, identity = FUNCTIONS[function]
    values = np.flip(x, axis) if backwards else x
    if x.dtype.kind == "f":
        with np.errstate(over="ignore", invalid="ignore"):
            result = cumulative(values.astype(np.float64), axis=axis)
    else:
        result = cumulative(values.astype(np.uint64), axis=axis, dtype=np.uint64)
    if exclusive:
        before = np.take(result, range(x.shape[axis] - 1), axis=axis)
        first = np.full_like(np.take(result, [0], axis=axis), identity)
        result = np.concatenate([first, before], axis=axis)
    if backwards:
        result = np.flip(result, axis)
    if x.dtype.kind == "f":
        with np.errstate(over="ignore"):
            return result.astype(x.dtype)
    low = result & np.uint64((1 << (8 * x.dtype.itemsize)) - 1)
    return np.ascontiguousarray(low.astype(np.dtype(f"u{x.dtype.itemsize}")).view(x.dtype))


#: One unit in the last place (relative) of each float output type, and an absolute floor:
#: float16's smallest subnormal; for float32, 2^-100, as results below float32's normal range
#: may be flushed to zero.
_ULP = {np.dtype(np.float16): (2.0**-10, 2.0**-24), np.dtype(np.float32): (2.0**-23, 2.0**-100),
        np.dtype(np.float64): (2.0**-52, 2.0**-1000)}


def tolerance_of(function: str):
    """The documented precision (see the module docstring) as a tolerance per element:
    integers bit-exact (None); float sums within scan.rounding_depth(n) x 2^-24 x the
    running sum of |x|, products within 2 (k + 1) x 2^-24 x |result| (k: the elements
    combined), both plus one unit in the last place of the output type (the reference's
    own rounding) and a floor (_ULP). Where the result is not finite, exactly."""
    def tolerance(expected: np.ndarray, inputs, arguments: dict):
        if expected.dtype.kind != "f":
            return None
        x = np.asarray(inputs[0])
        axis = int(arguments["axis"]) % x.ndim
        want = np.abs(expected.astype(np.float64))
        ulp, tiny = _ULP[expected.dtype]
        with np.errstate(invalid="ignore", over="ignore"):  # inputs with NaN or infinities
            if function == "sum":
                magnitude = scan_reference(np.abs(x.astype(np.float64)), axis, arguments.get("axis_direction", 0),
                                           False, "sum")
                computed = scan.rounding_depth(x.shape[axis]) * 2.0**-24 * magnitude
            else:
                shape = [1] * x.ndim
                shape[axis] = x.shape[axis]
                factors = np.arange(2, x.shape[axis] + 2, dtype=np.float64).reshape(shape)  # k + 1, in scan order
                if AxisDirection.coerce(arguments.get("axis_direction", 0)) == AxisDirection.DECREASING:
                    factors = np.flip(factors, axis)
                computed = 2 * factors * 2.0**-24 * want
            bound = computed + ulp * want + tiny
        return np.where(np.isfinite(want) & np.isfinite(bound), bound, 0.0)
    return tolerance


def sample_of(function: str):
    """The spec's sample: integers any bits (they wrap); floats in a range that keeps sums
    and products finite (products near 1)."""
    low, high = (-3.0, 3.0) if function == "sum" else (0.9, 1.1)

    def sample(desc, rng) -> list:
        inp = desc.input_tensor
        if not inp.data_type.is_float:
            raw = rng.integers(0, 256, size=inp.required_elements * inp.data_type.size, dtype=np.uint8)
            return [raw.view(inp.data_type.numpy)]
        return [rng.uniform(low, high, inp.required_elements).astype(inp.data_type.numpy)]
    return sample


# ---------------------------------------------------------------------------- the spec
def spec(cum: Cumulative, desc_class, functional, *, page: str, examples: tuple) -> OpSpec:
    """The OpSpec of one cumulative operator: everything but its desc, table, functional
    form and examples is shared."""
    template = f"{cum.key}.wgsl.j2"

    def strategies_for(desc, caps, **options) -> tuple[str, ...]:
        return scan.strategies_for(desc.input_tensor, desc.output_tensor, desc.axis, desc.axis_direction, caps,
                                   **options)

    def plan(desc, caps, strategy: str, **options) -> KernelPlan:
        return scan.plan(template, desc.input_tensor, desc.output_tensor, desc.axis, desc.axis_direction,
                         _exclusive(cum, desc), caps, strategy, **options)

    def variants(desc, caps, strategy: str) -> tuple[dict, ...]:
        return scan.variants(desc.input_tensor, desc.output_tensor, desc.axis, desc.axis_direction, caps, strategy)

    def arguments(desc) -> dict:
        return {"axis": desc.axis, "axis_direction": desc.axis_direction, "exclusive": _exclusive(cum, desc)}

    def from_cli(x: TensorDesc, a: dict):
        axis = x.rank - 1 if a["axis"] is None else a["axis"]
        return infer_output(cum, desc_class)(x, axis, a["axis_direction"], _cli_bool(a["exclusive"]))

    return OpSpec(
        name=cum.op, key=cum.key, desc=desc_class, support=cum.support,
        infer_output=infer_output(cum, desc_class), validate=validator(cum),
        strategies=scan.STRATEGIES, strategies_for=strategies_for, plan=plan, options=scan.OPTIONS, variants=variants,
        tolerance=tolerance_of(cum.function), sample=sample_of(cum.function),
        reference=reference_of(cum.function), functional=functional, tensors=("x",), arguments=arguments,
        cli=(CliArg("--axis", "the axis to scan (default: the last; negative counts from the end)", "number"),
             CliArg("--axis-direction", "INCREASING or DECREASING (from the axis' end)", "str", "INCREASING"),
             CliArg("--exclusive", f"true: {cum.exclusive_field} (each output leaves out its own element)", "str",
                    "false")),
        from_cli=from_cli, cli_example="--shape 4096,4096 --axis 0 --axis-direction decreasing --exclusive true",
        page=page, examples=examples,
    )


def _cli_bool(text: str) -> bool:
    value = str(text).strip().lower()
    if value in _TRUE + _FALSE:
        return value in _TRUE
    raise InvalidArgumentError(f"--exclusive: {text!r} is not true or false")



#: The input of every example of both pages: Sizes {1,1,3,4}, FLOAT32.
PAGE_INPUT = np.array([[2, 1, 3, 5], [3, 8, 7, 3], [9, 6, 2, 4]], np.float32).reshape(1, 1, 3, 4)


def page_examples(key: str, page: str, rows) -> tuple[Example, ...]:
    """A page's examples from (axis, axis_direction, exclusive, output rows) each, in page
    order; `page` is the file under tests/data/pages/ that holds the page's text."""
    return tuple(
        Example(f"{key}-{number}", PAGE_INPUT, {"axis": axis, "axis_direction": direction, "exclusive": exclusive},
                np.array(output, np.float32).reshape(PAGE_INPUT.shape), page)
        for number, (axis, direction, exclusive, output) in enumerate(rows, 1))
