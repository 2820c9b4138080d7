"""DirectML's activations that normalize along axes: DML_OPERATOR_ACTIVATION_SOFTMAX,
SOFTMAX1, LOG_SOFTMAX, LOG_SOFTMAX1, HARDMAX and HARDMAX1, as rows of one table (`TABLE`).
They are not element-wise: each output element depends on its whole *row*, the elements
of the reduced axes at its position of the kept axes. A row declares its names, its
function, whether it has Axes (the version-1 operators) and its page's support table and
examples; `spec(row)` builds the rest, and the normalization kernel family
(kernels/normalization.py, shaders/softmax.wgsl.j2) runs them all. docs/operators/softmax1.md
says the same for users.

Names (API.md 11): the newest version takes the plain name, `dml.softmax(x, axes=[-1])`,
`dml.log_softmax`, `dml.hardmax`, descs ActivationSoftmax1OperatorDesc etc. (fields
input_tensor, output_tensor, axes); the version-0 operators are `softmax0`,
`log_softmax0`, `hardmax0` (ActivationSoftmaxOperatorDesc etc.: input_tensor,
output_tensor), as ELEMENT_WISE_ADD is `add0`.

What the pages say, as implemented:

- Version 1 (FL 5_1, windows-ai-docs pages): Axes, each in [0, DimensionCount - 1], the
  axes of the row; gpudml also requires at least one and none twice (InvalidArgumentError
  naming the field, the rule and the values). Any set of axes, in any order: a row is
  walked row-major over the reduced axes in increasing order.
- Version 0 (FL 1_0): "This tensor must have an effective rank no greater than 2" (the
  DimensionCount without the leftmost axes of size 1), and each page's remark on version 1
  says version 1 "is equivalent to [version 0] when AxisCount == 1, and Axes ==
  {DimensionCount - 1}": version 0 normalizes along the last axis, which (with effective
  rank <= 2) is every axis but the first of the effective shape {BatchCount, Width}.
  A larger effective rank is an InvalidArgumentError naming input_tensor and its sizes.
- SOFTMAX: exp(x) / sum(exp(x)) over the row; LOG_SOFTMAX: its natural log. HARDMAX: 1
  for the first occurrence of the row's largest value, 0 elsewhere (HARDMAX1's page: the
  index DML_REDUCE's ARGMAX with AXIS_DIRECTION_INCREASING returns).
- Both tensors FLOAT32 or FLOAT16, one DataType, DimensionCount and set of Sizes (a
  broadcast input is a stride of 0).

Semantics beyond the pages, as implemented (and tested against the references):

- The softmaxes are computed max-shifted, in float32 (FLOAT16 read as float32, the result
  rounded once): m = the row's maximum, exp(x - m) / sum(exp(x - m)) and (x - m) -
  log(sum(exp(x - m))), so that large inputs stay finite.
- NaN and infinities: where the row's maximum is not finite (a NaN or a +inf in the row,
  or every element -inf) every result of the row is NaN (what the max-shifted formula
  gives: inf - inf); otherwise a -inf element gives 0 (LOG_SOFTMAX: -inf).
- HARDMAX: NaN counts as the largest value (the first NaN gets the 1, as gpudml's ARGMAX
  and numpy's argmax have it); 0.0 and -0.0 are equal (the first of them). Bit-exact:
  +0.0 and 1.0.

Precision (`tolerance`, per element, against the float64 reference): from the WGSL
specification's accuracy table: exp 3 + 2|x| ULP, log 3 ULP (2^-21 absolute in [0.5,
2]), division 2.5 ULP, each subtraction and addition rounded (0.5 ULP). With eps = 2^-23
(one ULP relative), d = x - m and e = exp(d) (exact), s = sum(e) over n elements:

- each e is computed within eps (3 + 2.5|d|) e (exp's error, and d's rounding); `chunks`
  rescales a chunk's sum by exp(m_c - m), |m_c - m| <= |d|: twice that at most;
- the sum adds each term through at most D(n) = 136 + 2 ceil(n / 64) roundings (subtotals
  of 64 terms, chunks and lanes merged the same way, the butterfly's 8 steps): relative
  error delta_s <= 2 eps sum(e (3 + 2.5|d|)) / s + D(n) 2^-24;
- SOFTMAX: |y - e / s| <= (e / s) (eps (3 + 2.5|d|) + delta_s + 2.5 eps) x 1.01;
- LOG_SOFTMAX: |z - (d - log s)| <= eps (0.5|d| + 3 log s + 0.5|z|) + 2^-21 + 1.01 delta_s;
- plus the subnormals an adapter may flush (2^-126 absolute), and float16's rounding of
  the result (1 ULP of float16); within the error of the output type's largest value a
  result may be +-inf.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.normalization import NormalizationPlanner, Problem
from ..tensor_desc import TensorDesc, as_int_tuple
from ..types import F16, F32, FeatureLevel
from .base import check_copy_tensors, normalize_axes
from .spec import Call, Cli, CliArg, Example, OpSpec, desc_class, support_table

FL = FeatureLevel
FLOATS = frozenset({F32, F16})
TENSORS = ("input_tensor", "output_tensor")
#: The version-0 pages' three tables (each page prints the same).
V0_SUPPORT = ((FL.FL_3_0, (1, 8), FLOATS), (FL.FL_2_0, (4, 5), FLOATS), (FL.FL_1_0, {4}, FLOATS))
#: The version-1 pages' one table (a single table, at the level of Availability).
V1_SUPPORT = ((FL.FL_5_1, (1, 8), FLOATS),)
_SDK = "MicrosoftDocs/sdk-api"
_WAI = "MicrosoftDocs/windows-ai-docs"


@dataclass(frozen=True)
class Row:
    """One operator. `dml`: its enum name without DML_OPERATOR_ ("ACTIVATION_SOFTMAX1";
    `op`, in CamelCase, names it in messages and its desc class); `key`: the spec key;
    `functional`: the public name (API.md 11); `function`: the kernel family's
    ("SOFTMAX", "LOG_SOFTMAX", "HARDMAX"); `axes`: whether the desc has Axes (version 1;
    version 0: the last axis, effective rank <= 2); `support`: the page's rows; `page`:
    (repository, commit) read; `examples`: (functional arguments, expected output) on the
    page's input `example_input`, where the page has right ones."""

    dml: str
    key: str
    functional: str
    function: str
    axes: bool
    support: tuple
    page: tuple[str, str]
    summary: str
    examples: tuple = ()
    example_input: np.ndarray | None = None

    @property
    def op(self) -> str:
        return "".join(w.capitalize() for w in self.dml.split("_"))

    @property
    def page_file(self) -> str:
        return f"ns-directml-dml_{self.dml.lower()}_operator_desc.md"


#: HARDMAX1's page: one input, three examples (all three right: checked by hand, and by
#: the reference in the tests). LOG_SOFTMAX1's page prints the same three, copied from
#: HARDMAX1's with their 0/1 outputs: wrong for a log-softmax, they are not stored.
_PAGE_INPUT = np.array([[[12, 0], [-101, 11]], [[3, 234], [0, -101]]], np.float32)
_HARDMAX1_EXAMPLES = (
    ({"axes": [1]}, np.array([[[1, 0], [0, 1]], [[1, 1], [0, 0]]], np.float32)),
    ({"axes": [0]}, np.array([[[1, 0], [0, 1]], [[0, 1], [1, 0]]], np.float32)),
    ({"axes": [0, 2]}, np.array([[[0, 0], [0, 1]], [[0, 1], [0, 0]]], np.float32)),
)

TABLE: tuple[Row, ...] = (
    Row("ACTIVATION_SOFTMAX", "softmax0", "softmax0", "SOFTMAX", False, V0_SUPPORT,
        (_SDK, "b5f9f4f44d158ea4e2b3a6975fe06a3a4dd167cc"),
        "exp(x) / sum(exp(x)) along the last axis (effective rank <= 2)"),
    Row("ACTIVATION_SOFTMAX1", "softmax1", "softmax", "SOFTMAX", True, V1_SUPPORT,
        (_WAI, "6c63a7b579198fe6d011231edb25fcea7442bcd3"), "exp(x) / sum(exp(x)) over `axes`"),
    Row("ACTIVATION_LOG_SOFTMAX", "log_softmax0", "log_softmax0", "LOG_SOFTMAX", False, V0_SUPPORT,
        (_SDK, "9ade0e62b73672c2b4488a78fe4061bccf142590"),
        "log(exp(x) / sum(exp(x))) along the last axis (effective rank <= 2)"),
    Row("ACTIVATION_LOG_SOFTMAX1", "log_softmax1", "log_softmax", "LOG_SOFTMAX", True, V1_SUPPORT,
        (_WAI, "6c63a7b579198fe6d011231edb25fcea7442bcd3"), "log(exp(x) / sum(exp(x))) over `axes`"),
    Row("ACTIVATION_HARDMAX", "hardmax0", "hardmax0", "HARDMAX", False, V0_SUPPORT,
        (_SDK, "b5f9f4f44d158ea4e2b3a6975fe06a3a4dd167cc"),
        "1 at the first largest element along the last axis, 0 elsewhere (effective rank <= 2)"),
    Row("ACTIVATION_HARDMAX1", "hardmax1", "hardmax", "HARDMAX", True, V1_SUPPORT,
        (_WAI, "6c63a7b579198fe6d011231edb25fcea7442bcd3"),
        "1 at the first largest element over `axes`, 0 elsewhere", _HARDMAX1_EXAMPLES, _PAGE_INPUT),
)


# ============================================================================ descs, validation
@dataclass(frozen=True)
class SoftmaxDesc:
    """What the six descs share: their row (`ROW`). Fields: input_tensor, output_tensor,
    and (version 1) axes."""

    ROW: ClassVar[Row]

    def __post_init__(self):
        if self.ROW.axes:
            object.__setattr__(self, "axes", as_int_tuple(self.axes, f"{self.ROW.op}: axes"))


def effective_rank(sizes) -> int:
    """The DimensionCount without the leftmost axes of size 1 (the version-0 pages')."""
    sizes = list(sizes)
    while len(sizes) > 1 and sizes[0] == 1:
        sizes.pop(0)
    return len(sizes)


def check_axes(op: str, axes: tuple[int, ...], rank: int) -> None:
    """Axes: at least one, each in [0, DimensionCount - 1], none twice."""
    if not axes:
        raise InvalidArgumentError(f"{op}: axes must name at least one axis (AxisCount is 0)")
    for i, axis in enumerate(axes):
        if not 0 <= axis < rank:
            raise InvalidArgumentError(f"{op}: axes[{i}] = {axis} is outside [0, {rank - 1}] (DimensionCount {rank})")
        if axis in axes[:i]:
            raise InvalidArgumentError(f"{op}: axes[{i}] = {axis} repeats an axis (axes {list(axes)})")


def validate(support, desc: SoftmaxDesc, level: FeatureLevel) -> None:
    """The pages' rules: two valid tensors of one DimensionCount, data type and set of
    sizes, in the support row of `level`; version 1: the axes; version 0: effective rank <= 2."""
    row = desc.ROW
    op = row.op
    inp, out = desc.input_tensor, desc.output_tensor
    rank = check_copy_tensors(op, support, level, inp, out)
    if out.sizes != inp.sizes:
        raise InvalidArgumentError(f"{op}: output_tensor.sizes {list(out.sizes)} must equal input_tensor.sizes "
                                   f"{list(inp.sizes)}")
    if row.axes:
        check_axes(op, desc.axes, rank)
    elif effective_rank(inp.sizes) > 2:
        raise InvalidArgumentError(
            f"{op}: input_tensor.sizes {list(inp.sizes)} has effective rank {effective_rank(inp.sizes)} (the "
            f"DimensionCount without its leftmost axes of size 1); it must be at most 2 (use {row.op}1 for more)")


def axes_of(desc: SoftmaxDesc) -> tuple[int, ...]:
    """The axes a desc normalizes over, sorted: its Axes, or (version 0) the last."""
    return tuple(sorted(desc.axes)) if desc.ROW.axes else (desc.input_tensor.rank - 1,)


def problem(desc: SoftmaxDesc) -> Problem:
    return Problem(desc.ROW.op, desc.ROW.function, desc.input_tensor, desc.output_tensor, axes_of(desc))


# ============================================================================ the reference
def compute(function: str, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """The function over `axes` (DirectML's: non-negative, distinct), in float64,
    unrounded; NaN rows where the maximum is not finite (SOFTMAX, LOG_SOFTMAX)."""
    axes = tuple(sorted(axes))
    with np.errstate(all="ignore"):
        v = np.asarray(x).astype(np.float64)
        if function == "HARDMAX":
            kept = [a for a in range(v.ndim) if a not in axes]
            order = kept + list(axes)
            rows = np.transpose(v, order).reshape([v.shape[a] for a in kept] + [-1])
            first = np.argmax(rows, axis=-1)  # the first maximum; the first NaN where there is one
            hot = (np.arange(rows.shape[-1]) == first[..., None]).astype(np.float64)
            return np.transpose(hot.reshape([v.shape[a] for a in order]), np.argsort(order))
        m = np.max(v, axis=axes, keepdims=True)
        d = v - m
        s = np.sum(np.exp(d), axis=axes, keepdims=True)
        y = np.exp(d) / s if function == "SOFTMAX" else d - np.log(s)
        return np.where(np.isfinite(m), y, np.nan)


def reference_of(row: Row) -> Callable:
    if row.axes:
        def reference(x, axes=(-1,)) -> np.ndarray:
            x = np.asarray(x)
            with np.errstate(all="ignore"):
                return compute(row.function, x, normalize_axes(axes, x.ndim, f"{row.functional}: axes")).astype(x.dtype)
    else:
        def reference(x) -> np.ndarray:
            x = np.asarray(x)
            with np.errstate(all="ignore"):
                return compute(row.function, x, (x.ndim - 1,)).astype(x.dtype)
    reference.__name__ = reference.__qualname__ = row.functional
    reference.__doc__ = (f"DML_OPERATOR_{row.dml}: {row.summary}; computed in float64 (max-shifted) and rounded "
                         f"once to x's type (gpudml/ops/softmax.py says what NaN and infinities give).")
    return reference


EPS = 2.0**-23  # one ULP of float32, relative (at most)
_UNIT = 2.0**-24  # float32's unit roundoff
_TINY = 2.0**-126  # subnormals an adapter may flush


def rounding_depth(n: int) -> int:
    """D(n): roundings a term of a row's sum goes through at most (the module docstring)."""
    return 136 + 2 * -(-n // 64)


def tolerance_of(row: Row) -> Callable | None:
    """The row's documented precision (the module docstring), per element; None (bit-exact) for HARDMAX."""
    if row.function == "HARDMAX":
        return None

    def tolerance(expected: np.ndarray, inputs, arguments: dict):
        x = np.asarray(inputs[0])
        axes = normalize_axes(arguments["axes"], x.ndim, "axes") if row.axes else (x.ndim - 1,)
        n = math.prod(x.shape[a] for a in axes)
        with np.errstate(all="ignore"):
            v = x.astype(np.float64)
            m = np.max(v, axis=axes, keepdims=True)
            ok = np.isfinite(m)
            d = v - np.where(ok, m, 0.0)
            e = np.exp(d)
            ad = np.abs(d)
            exp_err = np.where(e > 0, EPS * (3 + 2.5 * ad) * e, 0.0)
            s = np.sum(e, axis=axes, keepdims=True)
            delta_s = 2 * np.sum(exp_err, axis=axes, keepdims=True) / s + rounding_depth(n) * _UNIT
            if row.function == "SOFTMAX":
                y = e / s
                err = 1.01 * y * (EPS * (3 + 2.5 * ad) + delta_s + 2.5 * EPS)
            else:
                y = d - np.log(s)
                err = EPS * (0.5 * ad + 3 * np.log(s) + 0.5 * np.abs(y)) + 2.0**-21 + 1.01 * delta_s
            err = np.nan_to_num(err, nan=0.0, posinf=np.inf) + _TINY
            if expected.dtype == np.float16:
                err = err + np.spacing(np.minimum(np.abs(y), 65504).astype(np.float16)).astype(np.float64)
            edge = np.abs(y) + err >= float(np.finfo(expected.dtype).max)  # may round to +-inf
            err = np.where(edge, np.inf, err)
            return np.where(ok, err, 0.0)  # a NaN row: NaN, whatever the NaN
    return tolerance


# ============================================================================ functional forms, specs
def functional_of(row: Row) -> Callable:
    if row.axes:
        def functional(x, axes=(-1,), *, device=None):
            return Call([("x", x)], {"axes": axes}, device)
        where = ("over `axes` (one int or a list, negative ones counting from the end as in numpy; None: every "
                 "axis; default the last)")
    else:
        def functional(x, *, device=None):
            return Call([("x", x)], {}, device)
        where = ("along the last axis; x's effective rank (its DimensionCount without leftmost axes of size 1) "
                 "must be at most 2")
    functional.__name__ = functional.__qualname__ = row.functional
    functional.__doc__ = (f"DML_OPERATOR_{row.dml}: {row.summary.split(' over ')[0].split(' along ')[0]}, {where}. "
                          f"FLOAT32 or FLOAT16, computed in float32; see gpudml/ops/softmax.py for NaN, infinities "
                          f"and the precision.")
    return functional


def spec(row: Row) -> OpSpec:
    """The OpSpec of `row`: its desc class, validation, reference, functional form, tolerance."""
    fields = [("input_tensor", TensorDesc), ("output_tensor", TensorDesc)]
    if row.axes:
        fields.append(("axes", tuple))
    desc = desc_class(f"{row.op}OperatorDesc", __name__, base=SoftmaxDesc, fields=fields, ROW=row,
                      doc=f"DML_{row.dml}_OPERATOR_DESC: {row.summary}.")
    support = support_table(row.op, TENSORS, row.support)

    if row.axes:
        def infer_output(input_tensor: TensorDesc, axes=(-1,)):
            axes = normalize_axes(axes, input_tensor.rank, f"{row.functional}: axes")
            return desc(input_tensor, TensorDesc(input_tensor.data_type, input_tensor.sizes), axes)

        def arguments(d) -> dict:
            return {"axes": d.axes}

        cli = Cli((CliArg("--axes", "normalized axes, comma-separated (default the last)"),),
                  lambda x, a: infer_output(x, (-1,) if a.get("axes") is None else a["axes"]),
                  "--shape 1024,1024 --axes 1")
    else:
        def infer_output(input_tensor: TensorDesc):
            return desc(input_tensor, TensorDesc(input_tensor.data_type, input_tensor.sizes))

        def arguments(d) -> dict:
            return {}

        cli = Cli((), lambda x, a: infer_output(x), "--shape 1,1,1024,1024")

    examples = tuple(Example(f"{row.key}-{k}", row.example_input, args, want, row.page_file)
                     for k, (args, want) in enumerate(row.examples, 1))
    return OpSpec(
        name=row.op, key=row.key, desc=desc, support=support,
        infer_output=infer_output, validate=lambda d, level: validate(support, d, level),
        reference=reference_of(row), functional=functional_of(row), tensors=("x",), arguments=arguments,
        planner=NormalizationPlanner(problem), cli=cli, page=f"DML_{row.dml}_OPERATOR_DESC", examples=examples,
        tolerance=tolerance_of(row), sample=sample_of(row),
    )


def sample_of(row: Row) -> Callable:
    """Inputs worth normalizing: SOFTMAX / LOG_SOFTMAX uniform in [-10, 10], a few -inf,
    +inf, NaN and large values among them (1 in 512: most rows stay finite); HARDMAX small
    integers (many ties), a few -0.0, infinities and NaNs (1 in 32)."""
    def sample(desc, rng) -> list:
        inp = desc.input_tensor
        count = inp.required_elements
        if row.function == "HARDMAX":
            values = rng.integers(-3, 4, count).astype(np.float64)
            specials, rate = np.array([-0.0, np.inf, -np.inf, np.nan]), 32
        else:
            values = rng.uniform(-10.0, 10.0, count)
            specials, rate = np.array([-np.inf, np.inf, np.nan, 70.0, -200.0]), 512
        hit = rng.integers(0, rate, count) == 0
        values[hit] = specials[rng.integers(0, len(specials), int(hit.sum()))]
        return [values.astype(inp.data_type.numpy)]
    return sample


SPECS = tuple(spec(row) for row in TABLE)

__all__ = ["SPECS", "TABLE", "Row"]
