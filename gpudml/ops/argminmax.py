"""DML_ARGMAX_OPERATOR_DESC and DML_ARGMIN_OPERATOR_DESC, two rows of one table: the index
of the largest (smallest) element over one or more axes, the first or the last one of
equal elements (AxisDirection). Introduced at FL 3_0; 64-bit inputs from FL 4_1.

The operators differ only in which extreme they find: a row (`Row`: names, numpy's pick,
the reduce State of the kernels, the page's examples) is all each declares. Everything
else is shared: the desc's fields (`ArgDesc`), the pages' rules, the numpy reference, and
the kernels, the reduction family's (kernels/reduction.py) with the row's State and the
axis direction as a compile-time parameter. docs/operators/argmax.md says what the pages
leave open and what gpudml does there.

The two pages print the same "Tensor support" tables (read at MicrosoftDocs/sdk-api
commits b6ccb924f6c4 for ArgMax and 8f2547f96c61 for ArgMin); each row builds its own
SupportTable from `SUPPORT_ROWS`, so that its errors name the operator.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.reduction import ARG_REDUCE
from ..tensor_desc import TensorDesc, as_int_tuple, check_same_rank, check_tensor_desc
from ..types import TYPES_8, AxisDirection, DataType, FeatureLevel
from .base import check_reduced_shape, normalize_axes
from .spec import Call, Cli, CliArg, Example, OpSpec, desc_class, support_table

T = DataType
TENSORS = ("input_tensor", "output_tensor")
INDEX_TYPES = frozenset({T.INT64, T.INT32, T.UINT64, T.UINT32})
#: Both pages' "Tensor support" tables: (level, ranks, input types, output types). The
#: operators were introduced at FL 3_0 (the pages' "Availability").
SUPPORT_ROWS = [
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
    axes = normalize_axes(axes, input_tensor.rank, f"{name}: axes")
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
    check_reduced_shape(op, inp, out, desc.axes)
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
    axes = sorted(normalize_axes(axes, x.ndim, "axes"))
    kept = [a for a in range(x.ndim) if a not in axes]
    rows = np.transpose(x, kept + axes).reshape([x.shape[a] for a in kept] + [int(np.prod([x.shape[a] for a in axes]))])
    if AxisDirection.coerce(axis_direction) == AxisDirection.INCREASING:
        index = pick(rows, axis=-1)
    else:
        index = rows.shape[-1] - 1 - pick(rows[..., ::-1], axis=-1)
    out_shape = [1 if a in axes else n for a, n in enumerate(x.shape)]
    return index.astype(DataType.parse(output_data_type).numpy).reshape(out_shape)


# ---------------------------------------------------------------------------- the table
@dataclass(frozen=True)
class Row:
    """One operator of the table: DirectML's name (`op`), numpy's `pick` (np.argmax or
    np.argmin), the `extreme` it finds (for docstrings), the page's file (under
    tests/data/pages/) and its examples: (functional arguments, expected output) each, on
    the page's 3x3 input, then the AxisDirection field's two on `ties`."""

    op: str
    pick: Callable
    extreme: str
    page_file: str
    examples: tuple
    ties: np.ndarray


_INPUT = np.array([[1, 2, 3], [3, 0, 4], [2, 5, 2]], np.float32)
_U32 = {"output_data_type": "UINT32"}

TABLE = (
    Row("ArgMax", np.argmax, "largest", "ns-directml-dml_argmax_operator_desc.md", (
        ({"axes": [0], **_U32}, np.array([[1, 2, 1]], np.uint32)),
        ({"axes": [1], **_U32}, np.array([[2], [2], [1]], np.uint32)),
        ({"axes": [0, 1], **_U32}, np.array([[7]], np.uint32)),
    ), np.array([3, 2, 1, 2, 3], np.float32)),
    Row("ArgMin", np.argmin, "smallest", "ns-directml-dml_argmin_operator_desc.md", (
        ({"axes": [0], **_U32}, np.array([[0, 1, 2]], np.uint32)),
        ({"axes": [1], **_U32}, np.array([[0], [1], [0]], np.uint32)),
        ({"axes": [0, 1], **_U32}, np.array([[4]], np.uint32)),
    ), np.array([1, 2, 3, 2, 1], np.float32)),
)

CLI_ARGS = (CliArg("--axes", "reduced axes, comma-separated (default all)"),
            CliArg("--axis-direction", "INCREASING (the first index of the extreme) or DECREASING (the last)", "str",
                   "INCREASING"),
            CliArg("--output-data-type", "the index type: INT64, INT32, UINT64 or UINT32", "str", "INT64"))
CLI_EXAMPLE = "--axes 1 --shape 4096,4096 --axis-direction decreasing"


def arguments(desc: ArgDesc) -> dict:
    return {"axes": desc.axes, "axis_direction": desc.axis_direction, "output_data_type": desc.output_tensor.data_type}


def spec(row: Row) -> OpSpec:
    """The OpSpec of the operator of `row`: its desc class (ArgDesc's fields), functional
    form, reference, table and examples; the rest is the table's."""
    key = row.op.lower()
    desc = desc_class(f"{row.op}OperatorDesc", __name__, base=ArgDesc, OP=row.op, FUNCTION=key.upper(),
                      doc=f"DML_{key.upper()}_OPERATOR_DESC: the index of the {row.extreme} element over `axes`.")
    support = support_table(row.op, TENSORS, SUPPORT_ROWS)

    def infer(input_tensor, axes=None, axis_direction="increasing", output_data_type="INT64"):
        return infer_output(desc, input_tensor, axes, axis_direction, output_data_type)

    def functional(x, axes=None, *, axis_direction="increasing", output_data_type="INT64", keepdims=True,
                   device=None):
        return Call([("x", x)], {"axes": axes, "axis_direction": axis_direction, "output_data_type": output_data_type},
                    device, keepdims)

    def ref(x, axes=None, axis_direction="increasing", output_data_type="INT64") -> np.ndarray:
        return reference(row.pick, x, axes, axis_direction, output_data_type)

    functional.__name__ = functional.__qualname__ = ref.__name__ = ref.__qualname__ = key
    functional.__doc__ = (
        f"DML_{key.upper()}: the flat index of the {row.extreme} element over `axes` (None: all; one int or a list; "
        f"negative ones count from the end, as in numpy), row-major over the reduced axes. The result keeps the "
        f"rank, size 1 on the reduced axes (`keepdims=False` drops them, as numpy does: the same elements "
        f"re-described, no copy; a numpy result of every axis reduced is 0-d, a Tensor's or an Expression's has "
        f"shape (1,)). `axis_direction`: \"increasing\" (the first of equal {row.extreme} "
        f"elements) or \"decreasing\" (the last); `output_data_type`: INT64, INT32, UINT64 or UINT32 (a DataType, "
        f"its name or a numpy dtype).")
    ref.__doc__ = (f"The index of the {row.extreme} element over `axes`, the first (INCREASING) or the last "
                   f"(DECREASING) of equal ones; NaN counts as the {row.extreme}, as numpy's {key} has it.")
    examples = [Example(f"{key}-{n}", _INPUT, args, want, row.page_file)
                for n, (args, want) in enumerate(row.examples, 1)]
    # The AxisDirection field's own examples (the page names no output type).
    examples += [Example(f"{key}-{len(examples) + n}", row.ties, {"axes": [0], "axis_direction": direction},
                         np.array([index], np.int64), row.page_file)
                 for n, (direction, index) in enumerate((("increasing", 0), ("decreasing", 4)), 1)]
    return OpSpec(
        name=row.op, key=key, desc=desc, support=support,
        infer_output=infer, validate=lambda d, level: validate(support, d, level),
        reference=ref, functional=functional, tensors=("x",), arguments=arguments, planner=ARG_REDUCE,
        cli=Cli(CLI_ARGS, lambda x, a: infer(x, a["axes"], a["axis_direction"], a["output_data_type"]), CLI_EXAMPLE),
        page=f"DML_{key.upper()}_OPERATOR_DESC", examples=tuple(examples),
    )


SPECS = tuple(spec(row) for row in TABLE)
ArgMaxOperatorDesc, ArgMinOperatorDesc = (s.desc for s in SPECS)
