"""DML_CUMULATIVE_SUMMATION_OPERATOR_DESC (introduced at FL 2_1) and
DML_CUMULATIVE_PRODUCT_OPERATOR_DESC (FL 3_1), two rows of one table: the running sum
(product) of the elements along one axis, from either end, each output including or
excluding its own element. Their pages describe one operator with + or x: a row (`Row`:
names, the combination, the name of the desc's exclusive field, the first support row,
the page's examples) is all each declares; `spec` builds the rest. The kernels are the
scan family's (kernels/scan.py).

Semantics beyond the pages, as implemented (and tested against the reference):

- Along `axis`, output p combines the input elements before p (has_exclusive_*: TRUE) or
  up to p (FALSE), in scan order: ascending index (INCREASING) or descending (DECREASING,
  the scan runs from the end of the axis). An exclusive output with nothing before it is
  the identity (0 for sums, 1 for products).
- Floats: float16 is read as float32 and every output is computed in float32, then
  rounded once to the output type (a float16 result beyond 65504 is +-inf). float32 sums
  accumulate subtotals of 64 elements before adding them to the running total, so that an
  output goes through at most `scan.rounding_depth(n)` roundings (710 for axes up to 1 M
  elements, 838 at 8 M, 1,232 at 16 M): |output - exact| <= depth x 2^-24 x (sum of |x|
  up to it), plus the final rounding, while that sum of |x| stays in float32's range.
  Products: a product of k factors in any order has a relative error <= (k - 1) x 2^-24,
  so |output - exact| <= 2 (k + 1) x 2^-24 x |exact|, while no partial product leaves
  float32's normal range (where one does, a float32 evaluation may overflow to +-inf or
  flush to 0 on the way: such outputs are not bounded). NaN and infinities propagate as IEEE
  arithmetic says (inf + -inf is NaN).
- Integers wrap modulo 2^bits in the tensor's width (INT32/UINT32 as u32, INT64/UINT64
  exactly on every adapter: native 64-bit integers, or exact u32 pairs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels import scan
from ..tensor_desc import TensorDesc, as_int
from ..types import F16, F32, I32, I64, U32, U64, AxisDirection, FeatureLevel
from .base import check_copy_tensors, numpy_axis
from .spec import Call, Cli, CliArg, Example, OpSpec, desc_class, support_table

#: The combination of each operator: numpy's cumulative function and its identity.
FUNCTIONS = {"sum": (np.cumsum, 0), "product": (np.cumprod, 1)}
_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no")


def as_bool(value, field: str) -> bool:
    """DirectML's BOOL: True/False, or the integers 1/0 (numpy's too)."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)) and int(value) in (0, 1):
        return bool(value)
    raise InvalidArgumentError(f"{field}: expected a bool (True/False, or 1/0), got {value!r}")


# ---------------------------------------------------------------------------- reference
def reference_of(function: str, name: str):
    """The reference of the operator combining with `function` ("sum" or "product"), named
    `name` (its functional form's)."""
    def reference(x, axis, axis_direction="increasing", exclusive=False) -> np.ndarray:
        return scan_reference(x, axis, axis_direction, exclusive, function)
    reference.__name__ = reference.__qualname__ = name
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


_F32_MAX = float(np.finfo(np.float32).max)


def _partial_products_leave_range(x: np.ndarray, axis: int, direction) -> np.ndarray:
    """Per output: whether the product of some run of consecutive factors up to it (in scan
    order) lies outside float32's normal range, [2^-126, 2^128) in magnitude: the largest
    and smallest such run, as differences of the running sums of log2 |x| (zeros and
    non-finite factors left out: a zero's product is 0 and a NaN's or infinity's is checked
    exactly)."""
    a = np.abs(np.moveaxis(x.astype(np.float64), axis, -1))
    if AxisDirection.coerce(direction) == AxisDirection.DECREASING:
        a = a[..., ::-1]
    with np.errstate(divide="ignore"):
        logs = np.where((a > 0) & np.isfinite(a), np.log2(np.where(a > 0, a, 1.0)), 0.0)
    running = np.cumsum(logs, axis=-1)
    before = np.concatenate([np.zeros_like(running[..., :1]), running[..., :-1]], axis=-1)
    largest = np.maximum.accumulate(running - np.minimum.accumulate(before, axis=-1), axis=-1)
    smallest = np.minimum.accumulate(running - np.maximum.accumulate(before, axis=-1), axis=-1)
    out = (largest >= 128) | (smallest < -126)
    if AxisDirection.coerce(direction) == AxisDirection.DECREASING:
        out = out[..., ::-1]
    return np.moveaxis(out, -1, axis)


def tolerance_of(function: str):
    """The documented precision (see the module docstring) as a tolerance per element:
    integers bit-exact (None); float sums within scan.rounding_depth(n) x 2^-24 x the
    running sum of |x|, products within 2 (k + 1) x 2^-24 x |result| (k: the elements
    combined), both plus one unit in the last place of the output type (the reference's
    own rounding) and a floor (_ULP). Where the result is not finite, exactly. Where the
    bound's condition fails (a sum of |x| past float32's range; a product of a run of the
    factors before an output, in scan order, outside float32's normal range: any float32
    evaluation may overflow to +-inf or flush to 0 there, as the float64 reference does
    not), the output is not bounded."""
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
                unbounded = magnitude > _F32_MAX
            else:
                shape = [1] * x.ndim
                shape[axis] = x.shape[axis]
                factors = np.arange(2, x.shape[axis] + 2, dtype=np.float64).reshape(shape)  # k + 1, in scan order
                if AxisDirection.coerce(arguments.get("axis_direction", 0)) == AxisDirection.DECREASING:
                    factors = np.flip(factors, axis)
                computed = 2 * factors * 2.0**-24 * want
                unbounded = _partial_products_leave_range(x, axis, arguments.get("axis_direction", 0))
            bound = computed + ulp * want + tiny
        bound = np.where(np.isfinite(want) & np.isfinite(bound), bound, 0.0)
        return np.where(np.isfinite(want) & unbounded, np.inf, bound)
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


# ---------------------------------------------------------------------------- the table
@dataclass(frozen=True)
class Row:
    """One operator of the table: DirectML's name (`op`), its combination (`function`, a key
    of FUNCTIONS), its functional form's name, its desc's exclusive field (DirectML's
    HasExclusiveSum / HasExclusiveProduct), the level of its first support row (4-D only:
    its introduction; both reach every rank at FL 4_0), and the page's examples: (axis,
    axis_direction, exclusive, output rows) each, on PAGE_INPUT."""

    op: str
    function: str
    functional_name: str
    exclusive_field: str
    introduced: FeatureLevel
    examples: tuple


TABLE = (
    Row("CumulativeSummation", "sum", "cumulative_sum", "has_exclusive_sum", FeatureLevel.FL_2_1, (
        (3, "increasing", False, [[2, 3, 6, 11], [3, 11, 18, 21], [9, 15, 17, 21]]),
        (3, "increasing", True, [[0, 2, 3, 6], [0, 3, 11, 18], [0, 9, 15, 17]]),
        (3, "decreasing", False, [[11, 9, 8, 5], [21, 18, 10, 3], [21, 12, 6, 4]]),
        (2, "increasing", False, [[2, 1, 3, 5], [5, 9, 10, 8], [14, 15, 12, 12]]),
    )),
    Row("CumulativeProduct", "product", "cumulative_product", "has_exclusive_product", FeatureLevel.FL_3_1, (
        (3, "increasing", False, [[2, 2, 6, 30], [3, 24, 168, 504], [9, 54, 108, 432]]),
        (3, "increasing", True, [[1, 2, 2, 6], [1, 3, 24, 168], [1, 9, 54, 108]]),
        (3, "decreasing", False, [[30, 15, 15, 5], [504, 168, 21, 3], [432, 48, 8, 4]]),
        (2, "increasing", False, [[2, 1, 3, 5], [6, 8, 21, 15], [54, 48, 42, 60]]),
    )),
)

#: The input of every example of both pages: Sizes {1,1,3,4}, FLOAT32.
PAGE_INPUT = np.array([[2, 1, 3, 5], [3, 8, 7, 3], [9, 6, 2, 4]], np.float32).reshape(1, 1, 3, 4)


def support_rows(row: Row) -> list[tuple]:
    """A row's "Tensor support" tables (input and output alike): its pages differ only in
    the level of the first, 4-D row."""
    return [
        (FeatureLevel.FL_5_0, (1, 8), {F32, F16, I64, I32, U64, U32}),
        (FeatureLevel.FL_4_0, (1, 8), {F32, F16, I32, U32}),
        (row.introduced, {4}, {F32, F16, I32, U32}),
    ]


def spec(row: Row) -> OpSpec:
    """The OpSpec of the operator of `row`."""
    key = "cumulative_" + row.op.removeprefix("Cumulative").lower()
    name, exclusive_field = row.functional_name, row.exclusive_field

    def post_init(desc):  # axis an int, axis_direction an AxisDirection, the flag a bool
        object.__setattr__(desc, "axis", as_int(desc.axis, f"{row.op}: axis"))
        object.__setattr__(desc, "axis_direction",
                           AxisDirection.coerce(desc.axis_direction, f"{row.op}: axis_direction"))
        object.__setattr__(desc, exclusive_field, as_bool(getattr(desc, exclusive_field),
                                                          f"{row.op}: {exclusive_field}"))

    desc = desc_class(
        f"{row.op}OperatorDesc", __name__, __post_init__=post_init,
        fields=[("input_tensor", TensorDesc), ("output_tensor", TensorDesc), ("axis", int),
                ("axis_direction", AxisDirection), (exclusive_field, bool)],
        doc=f"DML_{key.upper()}_OPERATOR_DESC: the running {row.function} along `axis`.")
    support = support_table(row.op, ("input_tensor", "output_tensor"), support_rows(row))

    def infer(input_tensor: TensorDesc, axis, axis_direction="increasing", exclusive=False):
        """The desc of `fn(x, axis, axis_direction=, exclusive=)`: the output x's sizes and
        type (the desc itself takes DirectML's axis only)."""
        return desc(input_tensor, TensorDesc(input_tensor.data_type, input_tensor.sizes),
                    numpy_axis(axis, input_tensor.rank, name),
                    AxisDirection.coerce(axis_direction, f"{name}: axis_direction"),
                    as_bool(exclusive, f"{name}: exclusive"))

    def validate(d, feature_level: FeatureLevel) -> None:
        """Both tensors, one DimensionCount, data type and sizes, the support row at the
        level, the axis within DimensionCount."""
        inp, out = d.input_tensor, d.output_tensor
        rank = check_copy_tensors(row.op, support, feature_level, inp, out)
        if out.sizes != inp.sizes:
            raise InvalidArgumentError(
                f"{row.op}: output_tensor.sizes {list(out.sizes)} must equal input_tensor.sizes {list(inp.sizes)}")
        if not 0 <= d.axis < rank:
            raise InvalidArgumentError(f"{row.op}: axis = {d.axis} must be less than DimensionCount {rank} (and >= 0)")

    def functional(x, axis, *, axis_direction="increasing", exclusive=False, device=None):
        return Call([("x", x)], {"axis": axis, "axis_direction": axis_direction,
                                 "exclusive": int(as_bool(exclusive, f"{name}: exclusive"))}, device)

    functional.__name__ = functional.__qualname__ = name
    functional.__doc__ = (
        f"DML_{key.upper()} along `axis` (negative counts from the end, as in numpy): output p is the {row.function} "
        f"of x's elements up to p (`exclusive`: before p), in the order of `axis_direction` (\"increasing\", or "
        f"\"decreasing\": from the axis' end; an AxisDirection or its value too). float16 is computed in float32; "
        f"integers wrap in their width.")

    def arguments(d) -> dict:
        return {"axis": d.axis, "axis_direction": d.axis_direction, "exclusive": getattr(d, exclusive_field)}

    def from_cli(x: TensorDesc, a: dict):
        axis = x.rank - 1 if a["axis"] is None else a["axis"]
        return infer(x, axis, a["axis_direction"], _cli_bool(a["exclusive"]))

    page_file = f"ns-directml-dml_{key}_operator_desc.md"
    return OpSpec(
        name=row.op, key=key, desc=desc, support=support, infer_output=infer, validate=validate,
        tolerance=tolerance_of(row.function), sample=sample_of(row.function),
        reference=reference_of(row.function, name), functional=functional, tensors=("x",), arguments=arguments,
        planner=scan.ScanPlanner(f"{key}.wgsl.j2", exclusive_field),
        cli=Cli((CliArg("--axis", "the axis to scan (default: the last; negative counts from the end)", "number"),
                 CliArg("--axis-direction", "INCREASING or DECREASING (from the axis' end)", "str", "INCREASING"),
                 CliArg("--exclusive", f"true: {exclusive_field} (each output leaves out its own element)", "str",
                        "false")),
                from_cli, "--shape 4096,4096 --axis 0 --axis-direction decreasing --exclusive true"),
        page=f"DML_{key.upper()}_OPERATOR_DESC",
        examples=tuple(
            Example(f"{key}-{number}", PAGE_INPUT,
                    {"axis": axis, "axis_direction": direction, "exclusive": exclusive},
                    np.array(output, np.float32).reshape(PAGE_INPUT.shape), page_file)
            for number, (axis, direction, exclusive, output) in enumerate(row.examples, 1)),
    )


def _cli_bool(text: str) -> bool:
    value = str(text).strip().lower()
    if value in _TRUE + _FALSE:
        return value in _TRUE
    raise InvalidArgumentError(f"--exclusive: {text!r} is not true or false")


SPECS = tuple(spec(row) for row in TABLE)
CumulativeSummationOperatorDesc, CumulativeProductOperatorDesc = (s.desc for s in SPECS)
