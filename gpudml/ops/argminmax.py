"""What DML_ARGMAX_OPERATOR_DESC and DML_ARGMIN_OPERATOR_DESC share (ops/argmax.py,
ops/argmin.py): the desc's fields, the pages' rules, the numpy reference, and the kernels,
which are the reduction planner's (ops/reduction.py) with the ARGMAX or ARGMIN State and
the axis direction as a compile-time parameter. docs/operators/argmax.md says what the
pages leave open and what gpudml does there.

The two pages print the same "Tensor support" tables (read at MicrosoftDocs/sdk-api
commits b6ccb924f6c4 for ArgMax and 8f2547f96c61 for ArgMin); each module builds its own
SupportTable from `ROWS`, so that its errors name the operator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..builder import KernelPlan
from ..errors import InvalidArgumentError
from ..tensor_desc import TensorDesc, as_int_tuple, check_same_rank, check_tensor_desc
from ..types import TYPES_8, AxisDirection, DataType, FeatureLevel
from . import reduction
from .spec import CliArg, OpSpec, ReadThrough

T = DataType
TENSORS = ("input_tensor", "output_tensor")
INDEX_TYPES = frozenset({T.INT64, T.INT32, T.UINT64, T.UINT32})
#: Both pages' "Tensor support" tables: (level, ranks, input types, output types). The
#: operators were introduced at FL 3_0 (the pages' "Availability").
ROWS = [
    (FeatureLevel.FL_4_1, (1, 8), TYPES_8 | {T.INT64, T.UINT64}, INDEX_TYPES),
    (FeatureLevel.FL_3_0, (1, 8), TYPES_8, INDEX_TYPES),
]
#: Index types whose largest value is below the u32 the kernels count in.
_INDEX_LIMIT = {T.INT32: 2**31 - 1}


@dataclass(frozen=True)
class ArgDesc:
    """The fields both descs have, DirectML's names in snake case (AxisCount is len(axes)).
    Subclasses name their operator (`OP`, error messages) and its Reduce function
    (`FUNCTION`: its State in shaders/lib/reduction.wgsl.j2)."""

    OP: ClassVar[str]
    FUNCTION: ClassVar[str]
    input_tensor: TensorDesc
    output_tensor: TensorDesc
    axes: tuple[int, ...]
    axis_direction: AxisDirection

    def __post_init__(self):
        object.__setattr__(self, "axes", as_int_tuple(self.axes, f"{self.OP}: axes"))
        object.__setattr__(self, "axis_direction",
                           AxisDirection.coerce(self.axis_direction, f"{self.OP}: axis_direction"))


def infer_output(desc_class, input_tensor: TensorDesc, axes=None, axis_direction="increasing",
                 output_data_type="INT64") -> ArgDesc:
    """The desc of `argmax(x, axes, axis_direction=, output_data_type=)`: the output keeps
    the rank with size 1 on each reduced axis, in the index type `output_data_type`.
    `axes` as numpy takes them (None: every axis; one int or a list; negative ones count
    from the end); the desc itself takes DirectML's axes only."""
    name = desc_class.OP.lower()
    axes = reduction.normalize_axes(axes, input_tensor.rank, f"{name}: axes")
    out_type = DataType.parse(output_data_type, f"{name}: output_data_type")
    out_sizes = tuple(1 if i in axes else n for i, n in enumerate(input_tensor.sizes))
    direction = AxisDirection.coerce(axis_direction, f"{name}: axis_direction")
    return desc_class(input_tensor, TensorDesc(out_type, out_sizes), axes, direction)


def validate(support, desc: ArgDesc, feature_level: FeatureLevel) -> None:
    """The page's rules: two valid tensors of one DimensionCount, their types and ranks in
    the table row of `feature_level`, the axes and the output's sizes (as Reduce's); and
    gpudml's own: an INT32 output must hold the largest index (a broadcast input may have
    more than 2^31 elements to reduce)."""
    op = desc.OP
    check_tensor_desc(op, "input_tensor", desc.input_tensor)
    check_tensor_desc(op, "output_tensor", desc.output_tensor, is_output=True)
    inp, out = desc.input_tensor, desc.output_tensor
    rank = check_same_rank(op, {"input_tensor": inp, "output_tensor": out})
    support.check(feature_level, rank, {"input_tensor": inp.data_type, "output_tensor": out.data_type})
    reduction.check_reduced_shape(op, inp, out, desc.axes)
    largest = int(np.prod([inp.sizes[a] for a in desc.axes], dtype=object)) - 1
    limit = _INDEX_LIMIT.get(out.data_type)
    if limit is not None and largest > limit:
        raise InvalidArgumentError(
            f"{op}: output_tensor.data_type {out.data_type.name} cannot hold index {largest} (the reduced axes "
            f"{list(desc.axes)} hold {largest + 1} elements; at most {limit + 1}): use INT64, UINT32 or UINT64")


# ---------------------------------------------------------------------------- reference
def reference(pick, x, axes=None, axis_direction="increasing", output_data_type="INT64") -> np.ndarray:
    """The index `pick` (np.argmax or np.argmin) finds over `axes` (numpy's: None, an int or
    a list, negative ones counting from the end), keeping the rank with size 1 on the
    reduced axes. The index is flat and row-major over the reduced axes taken in increasing
    order, whatever order `axes` lists them in. INCREASING: the first extreme element, as
    numpy finds it (NaN counts as the extreme, so the first NaN); DECREASING: the last one,
    found as the first of the reversed row."""
    x = np.asarray(x)
    axes = sorted(reduction.normalize_axes(axes, x.ndim, "axes"))
    kept = [a for a in range(x.ndim) if a not in axes]
    rows = np.transpose(x, kept + axes).reshape([x.shape[a] for a in kept] + [-1])
    if AxisDirection.coerce(axis_direction) == AxisDirection.INCREASING:
        index = pick(rows, axis=-1)
    else:
        index = rows.shape[-1] - 1 - pick(rows[..., ::-1], axis=-1)
    out_shape = [1 if a in axes else n for a, n in enumerate(x.shape)]
    return index.astype(DataType.parse(output_data_type).numpy).reshape(out_shape)


# ---------------------------------------------------------------------------- kernels
def strategies_for(desc: ArgDesc, caps, **options) -> tuple[str, ...]:
    return reduction.strategies_for(desc.FUNCTION, desc.input_tensor, desc.output_tensor, desc.axes, caps,
                                    **options)


def plan(desc: ArgDesc, caps, strategy: str, **options) -> KernelPlan:
    return reduction.plan(desc.FUNCTION, desc.input_tensor, desc.output_tensor, desc.axes, caps, strategy,
                          axis_direction=desc.axis_direction.name, **options)


def variants(desc: ArgDesc, caps, strategy: str) -> tuple[dict, ...]:
    return reduction.variants(desc.FUNCTION, desc.input_tensor, desc.output_tensor, desc.axes, caps, strategy)


def _strategies_through(desc: ArgDesc, caps) -> tuple[str, ...]:
    return strategies_for(desc, caps, vectorize=False)


def _plan_through(desc: ArgDesc, caps, strategy: str, chain) -> KernelPlan:
    return plan(desc, caps, strategy, through=chain)


# ---------------------------------------------------------------------------- the spec
def arguments(desc: ArgDesc) -> dict:
    return {"axes": desc.axes, "axis_direction": desc.axis_direction, "output_data_type": desc.output_tensor.data_type}


CLI = (CliArg("--axes", "reduced axes, comma-separated (default all)"),
       CliArg("--axis-direction", "INCREASING (the first index of the extreme) or DECREASING (the last)", "str",
              "INCREASING"),
       CliArg("--output-data-type", "the index type: INT64, INT32, UINT64 or UINT32", "str", "INT64"))


def spec(desc_class, support, reference_fn, functional_fn, examples) -> OpSpec:
    """The OpSpec of one of the two operators, from what its module declares."""
    key = desc_class.OP.lower()

    def infer(input_tensor, axes=None, axis_direction="increasing", output_data_type="INT64"):
        return infer_output(desc_class, input_tensor, axes, axis_direction, output_data_type)

    def from_cli(x: TensorDesc, a: dict) -> ArgDesc:
        return infer(x, a["axes"], a["axis_direction"], a["output_data_type"])

    return OpSpec(
        name=desc_class.OP, key=key, desc=desc_class, support=support,
        infer_output=infer, validate=lambda desc, level: validate(support, desc, level),
        strategies=reduction.STRATEGIES + reduction.GPU_STRATEGIES, strategies_for=strategies_for, plan=plan,
        options=reduction.OPTIONS, variants=variants, read_through=ReadThrough(_strategies_through, _plan_through),
        reference=reference_fn, functional=functional_fn, tensors=("x",), arguments=arguments,
        cli=CLI, from_cli=from_cli, cli_example="--axes 1 --shape 4096,4096 --axis-direction decreasing",
        page=f"DML_{key.upper()}_OPERATOR_DESC", examples=examples,
    )
