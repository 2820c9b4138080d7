"""DML_OPERATOR_CONVOLUTION_INTEGER: a FORWARD convolution (cross-correlation) of 8-bit integers
with optional zero points, summed in int32 (kernels/convolution.py's IntegerConvolutionFamily).
Its helpers serve DML_OPERATOR_QUANTIZED_LINEAR_CONVOLUTION too
(gpudml/ops/quantized_linear_convolution.py). docs/operators/convolution_integer.md says the
same for users.

What the page says (sdk-api's DML_CONVOLUTION_INTEGER_OPERATOR_DESC, the 10/2020 version), as
implemented:

- InputTensor { BatchCount, InputChannelCount, [InputHeight], InputWidth }, FilterTensor {
  FilterBatchCount (OutputChannelCount), InputChannelCount / GroupCount, [FilterHeight],
  FilterWidth }, OutputTensor { BatchCount, OutputChannelCount, [OutputHeight], OutputWidth
  }: DimensionCount 4 from FL 2.1, 3 or 4 (1-D too) from FL 4.0, one DimensionCount for the
  three; INT8 or UINT8 input and filter (each its own), INT32 output.
- InputZeroPointTensor (optional, the input's DataType): one element ({1, 1, 1, 1} at FL
  2.1; 1 to 4 dimensions from FL 4.0). FilterZeroPointTensor (optional, the filter's
  DataType): one element (per tensor) or OutputChannelCount (per output channel, {1,
  OutputChannelCount, 1, 1}). The two zero points share one DimensionCount.
- output[n, co, o] = sum over the group's input channels ci and window offsets k of
  (input[n, ci, o Strides + k Dilations - StartPadding] - InputZeroPoint) (filter[co, ci, k]
  - FilterZeroPoint[co]); the output's spatial sizes 1 + (input + StartPadding + EndPadding -
  ((window - 1) Dilations + 1)) / Strides, as DML_CONVOLUTION's FORWARD direction (its rules
  are gpudml/ops/convolution.py's check_geometry).

Where the page is silent, gpudml's choices:

- The padding holds the input's zero point (it adds 0 to the sum), as ONNX's ConvInteger
  (DirectML's execution provider maps it to this operator).
- The sum is int32 arithmetic: it wraps modulo 2^32 where it passes int32's range (the
  8-bit differences' products are exact; a reduction of K products overflows only past K =
  2^31 / 255^2 = 33,025).
- A zero point has the input's DimensionCount or 1 (the page's FL 4.0 row allows 1 to 4
  without saying where OutputChannelCount goes in the others): per channel {1, C_out, 1...}
  or [C_out], read with its strides (0 broadcasts).
- The page's text says "only a DimensionCount (the field) of 2"; its FL 4.0 table lists 3-D
  tensors: gpudml takes the table (DimensionCount 1 for 3-D tensors).

The functional form `convolution_integer(x, x_zero_point=None, *, filter,
filter_zero_point=None, strides=None, dilations=None, start_padding=None, end_padding=None,
group_count=1)` infers the output (INT32); the zero points may be numpy scalars or arrays
of one element or, the filter's, of OutputChannelCount elements ([C_out] is described as
{1, C_out, 1...} with strides of 0, no copy). Bit-exact (the reference sums in int64 and
wraps to int32).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.base import ProblemPlanner
from ..kernels.convolution import INTEGER_FAMILY, IntegerConvolution
from ..tensor_desc import TensorDesc, as_int, as_int_tuple, check_same_rank, check_tensor_desc
from ..types import I8, I32, U8, FeatureLevel
from . import convolution as float_convolution
from .spec import Call, Cli, CliArg, OpSpec, support_table

OP = "ConvolutionInteger"
FL = FeatureLevel
INT8S = frozenset({I8, U8})
TENSORS = ("input_tensor", "input_zero_point_tensor", "filter_tensor", "filter_zero_point_tensor", "output_tensor")
SUPPORT = support_table(OP, TENSORS, [
    (FL.FL_4_0, {"input_tensor": (3, 4), "input_zero_point_tensor": (1, 4), "filter_tensor": (3, 4),
                 "filter_zero_point_tensor": (1, 4), "output_tensor": (3, 4)}, INT8S, INT8S, INT8S, INT8S, {I32}),
    (FL.FL_2_1, {4}, INT8S, INT8S, INT8S, INT8S, {I32}),
])
GEOMETRY = ("strides", "dilations", "start_padding", "end_padding")


def normalize_geometry(desc, op: str) -> None:
    """A convolution desc's __post_init__: dimension_count (None: the input's DimensionCount
    - 2), the arrays (None: strides and dilations of 1, paddings of 0), group_count as ints."""
    set_ = object.__setattr__
    count = desc.dimension_count
    if count is None:
        count = desc.input_tensor.rank - 2 if isinstance(desc.input_tensor, TensorDesc) else 0
    set_(desc, "dimension_count", as_int(count, f"{op}: dimension_count"))
    for name in GEOMETRY:
        value = getattr(desc, name)
        if value is None:
            value = [1 if name in ("strides", "dilations") else 0] * max(0, desc.dimension_count)
        set_(desc, name, as_int_tuple(value, f"{op}: {name}"))
    set_(desc, "group_count", as_int(desc.group_count, f"{op}: group_count"))


@dataclass(frozen=True)
class ConvolutionIntegerOperatorDesc:
    """DML_CONVOLUTION_INTEGER_OPERATOR_DESC. The zero points are optional (None);
    `dimension_count` None: the input's DimensionCount - 2; the arrays None: strides and
    dilations of 1, paddings of 0."""

    input_tensor: TensorDesc
    input_zero_point_tensor: TensorDesc | None
    filter_tensor: TensorDesc
    filter_zero_point_tensor: TensorDesc | None
    output_tensor: TensorDesc
    dimension_count: int | None = None
    strides: tuple[int, ...] | None = None
    dilations: tuple[int, ...] | None = None
    start_padding: tuple[int, ...] | None = None
    end_padding: tuple[int, ...] | None = None
    group_count: int = 1
    OPTIONAL_TENSORS = ("input_zero_point_tensor", "filter_zero_point_tensor")

    def __post_init__(self):
        normalize_geometry(self, OP)


# ============================================================================ validation helpers
def check_tensors(op: str, support, level: FeatureLevel, named: dict, main: tuple[str, ...], optional) -> int:
    """Valid tensors (None: an optional one left out), the support row for the DimensionCount
    of `main` (one for all of them) and each tensor's type; the other tensors' DimensionCounts
    within the row's own ranges. Returns the main tensors' DimensionCount."""
    named = {f: td for f, td in named.items() if td is not None or f not in optional}
    for field, td in named.items():
        check_tensor_desc(op, field, td, is_output=field.startswith("output_tensor"))
    rank = check_same_rank(op, {f: named[f] for f in main})
    row = support.check(level, rank, {f: td.data_type for f, td in named.items()})
    for field, td in named.items():
        if field not in main and td.rank not in row.ranks_of(field):
            support.check_rank(level, field, td.rank)
    return rank


def check_same_type(op: str, named: dict, pairs) -> None:
    """Each (tensor, its zero point) of `pairs` of one DataType (the pages' constraints)."""
    for a, b in pairs:
        if named.get(a) is not None and named.get(b) is not None and named[a].data_type != named[b].data_type:
            raise InvalidArgumentError(f"{op}: {b}.data_type {named[b].data_type.name} must equal {a}.data_type "
                                       f"{named[a].data_type.name}")


def check_parameter(op: str, field: str, td: TensorDesc | None, channels: int | None, what: str, rank: int) -> None:
    """A scale, zero point or bias: of the input's DimensionCount `rank` or of 1, one element,
    or (where `channels` is given: per channel) `channels` elements along the channel axis (1
    of `rank` axes, 0 of one) and 1 along the others; `what` names the channels."""
    if td is None:
        return
    if td.rank not in (1, rank):
        raise InvalidArgumentError(f"{op}: {field} DimensionCount {td.rank} must be input_tensor's {rank} or 1 "
                                   f"(sizes {list(td.sizes)})")
    if td.element_count == 1:
        return
    axis = 1 if td.rank > 1 else 0
    if channels is None:
        raise InvalidArgumentError(f"{op}: {field}.sizes {list(td.sizes)} must hold one element (every size 1: "
                                   f"per-tensor quantization)")
    if td.sizes[axis] != channels or td.element_count != channels:
        want = [1, channels] + [1] * (rank - 2)
        raise InvalidArgumentError(
            f"{op}: {field}.sizes {list(td.sizes)} must hold one element (per tensor) or {what} = {channels} (per "
            f"channel: {want} or [{channels}])")


def check_same_parameter_ranks(op: str, named: dict, fields) -> None:
    given = {f: named[f] for f in fields if named.get(f) is not None}
    if len(given) > 1:
        check_same_rank(op, given)


def validate(desc: ConvolutionIntegerOperatorDesc, level: FeatureLevel) -> None:
    """The page's rules (module docstring): valid tensors (the zero points optional), the
    support row, each zero point of its tensor's DataType, one element (the filter's: or one
    per output channel), the zero points of one DimensionCount, the convolution's geometry."""
    named = {f: getattr(desc, f) for f in TENSORS}
    rank = check_tensors(OP, SUPPORT, level, named, ("input_tensor", "filter_tensor", "output_tensor"),
                         desc.OPTIONAL_TENSORS)
    check_same_type(OP, named, (("input_tensor", "input_zero_point_tensor"),
                                ("filter_tensor", "filter_zero_point_tensor")))
    check_same_parameter_ranks(OP, named, ("input_zero_point_tensor", "filter_zero_point_tensor"))
    channels = float_convolution.check_geometry(OP, desc, rank)
    check_parameter(OP, "input_zero_point_tensor", desc.input_zero_point_tensor, None, "", rank)
    check_parameter(OP, "filter_zero_point_tensor", desc.filter_zero_point_tensor, channels,
                    "OutputChannelCount", rank)


def integer_convolution_of(op: str, desc, roles: dict[str, str], quantized: bool) -> IntegerConvolution:
    """What the kernels compute for `desc`: `roles` maps the desc's input fields to the
    kernels' roles, in the desc's order (a field left out: absent)."""
    tensors = tuple((role, getattr(desc, field)) for field, role in roles.items() if getattr(desc, field) is not None)
    return IntegerConvolution(op, desc.input_tensor, desc.filter_tensor, desc.output_tensor, desc.strides,
                              desc.dilations, desc.start_padding, desc.group_count, tensors, quantized)


ROLES = {"input_tensor": "x", "input_zero_point_tensor": "x_zero_point", "filter_tensor": "filter",
         "filter_zero_point_tensor": "filter_zero_point"}


def problem(desc: ConvolutionIntegerOperatorDesc) -> IntegerConvolution:
    return integer_convolution_of(OP, desc, ROLES, quantized=False)


# ============================================================================ the functional form
def channel_desc(td: TensorDesc | None, spatial: int) -> TensorDesc | None:
    """A per-channel tensor given as [C] described as {1, C, 1...} with strides of 0 (no copy);
    others as they are."""
    if td is None or td.rank != 1 or td.sizes[0] == 1:
        return td
    return TensorDesc(td.data_type, [1, td.sizes[0]] + [1] * spatial, [0, td.effective_strides[0]] + [0] * spatial,
                      total_tensor_size_in_bytes=td.total_tensor_size_in_bytes)


def one_desc(td: TensorDesc | None, rank: int) -> TensorDesc | None:
    """A one-element tensor given with fewer axes than `rank` (a numpy scalar, [1]) described
    with `rank` axes of 1 (the FL 2.1 rows' {1, 1, 1, 1}); others as they are."""
    if td is None or td.rank == rank or td.element_count != 1:
        return td
    return TensorDesc(td.data_type, [1] * rank, [0] * rank, total_tensor_size_in_bytes=td.total_tensor_size_in_bytes)


def geometry(x: TensorDesc, strides, dilations, start_padding, end_padding, group_count, where: str) -> dict:
    """The geometry attributes of a functional call (defaults: strides and dilations 1,
    paddings 0, one group)."""
    spatial = max(0, x.rank - 2)

    def array(value, name, fill):
        return (fill,) * spatial if value is None else as_int_tuple(value, f"{where}: {name}")
    return {"dimension_count": spatial, "strides": array(strides, "strides", 1),
            "dilations": array(dilations, "dilations", 1), "start_padding": array(start_padding, "start_padding", 0),
            "end_padding": array(end_padding, "end_padding", 0),
            "group_count": as_int(group_count, f"{where}: group_count")}


def output_desc(x: TensorDesc, filter: TensorDesc, attrs: dict, data_type) -> TensorDesc:  # noqa: A002
    """The FORWARD output's desc by the page's formula (x's sizes where the shapes do not fit:
    validation names what is wrong)."""
    spatial = attrs["dimension_count"]
    if x.rank < 3 or filter.rank != x.rank or any(len(attrs[g]) != spatial for g in GEOMETRY):
        return TensorDesc(data_type, x.sizes)
    sizes = float_convolution.output_spatial(float_convolution.FORWARD, x.sizes[2:], filter.sizes[2:],
                                             attrs["strides"], attrs["dilations"], attrs["start_padding"],
                                             attrs["end_padding"], (0,) * spatial)
    return TensorDesc(data_type, [x.sizes[0], filter.sizes[0]] + [max(1, n) for n in sizes])


def given_descs(op: str, names: tuple[str, ...], descs, given, left_out: dict) -> dict:
    """The tensor descs of a functional call by argument name: `given` (the functional form's
    list of the arguments it passes, in order), else every name of `names` not passed as None
    in `left_out` (the reference's keywords: `arguments`), in order."""
    absent = {n for n, v in left_out.items() if n in names and v is None}
    extra = sorted(n for n in left_out if n not in names)
    if extra:
        raise InvalidArgumentError(f"{op}: unexpected arguments {extra}")
    names = tuple(given) if given is not None else tuple(n for n in names if n not in absent)
    if len(names) != len(descs):
        raise InvalidArgumentError(f"{op}: {len(descs)} tensors for the arguments {list(names)}")
    return dict(zip(names, descs))


TENSOR_NAMES = ("x", "x_zero_point", "filter", "filter_zero_point")


def infer_output(*descs, given=None, strides=None, dilations=None, start_padding=None, end_padding=None,
                 group_count=1, **left_out) -> ConvolutionIntegerOperatorDesc:
    """The desc of convolution_integer(...): an INT32 output of the FORWARD sizes; a zero point
    of one element takes the input's DimensionCount, the filter's [C_out] is {1, C_out, 1...}."""
    t = given_descs("convolution_integer", TENSOR_NAMES, descs, given, left_out)
    x, filter = t["x"], t["filter"]  # noqa: A001
    attrs = geometry(x, strides, dilations, start_padding, end_padding, group_count, "convolution_integer")
    rank = x.rank
    wz = channel_desc(one_desc(t.get("filter_zero_point"), rank), attrs["dimension_count"])
    return ConvolutionIntegerOperatorDesc(x, one_desc(t.get("x_zero_point"), rank), filter, wz,
                                          output_desc(x, filter, attrs, I32), **attrs)


def as_array(value) -> np.ndarray:
    """A `convert` of a functional form's scale, zero point or bias: the value as an array, a
    scalar as one element ([1])."""
    a = np.asarray(value)
    return a.reshape(1) if a.ndim == 0 else a


def convolution_integer(x, x_zero_point=None, *, filter, filter_zero_point=None, strides=None,  # noqa: A002
                        dilations=None, start_padding=None, end_padding=None, group_count=1, device=None):
    """DML_OPERATOR_CONVOLUTION_INTEGER over the spatial axes of x ({N, C_in, [H], W}, INT8 or
    UINT8): sum over the group's channels and the window of (x - x_zero_point) (filter -
    filter_zero_point[co]), an INT32 output (wrapping), filter {C_out, C_in / group_count,
    window...} (INT8 or UINT8); zero points optional (0), x's of one element, the filter's of
    one or C_out ([C_out] or {1, C_out, 1...}); strides and dilations (default 1), start and
    end padding (default 0, holding x's zero point) per spatial axis. Bit-exact."""
    tensors = [("x", x)] + ([("x_zero_point", x_zero_point, as_array)] if x_zero_point is not None else [])
    tensors += [("filter", filter)] + ([("filter_zero_point", filter_zero_point, as_array)]
                                       if filter_zero_point is not None else [])
    return Call(tensors, {"given": tuple(t[0] for t in tensors), "strides": strides, "dilations": dilations,
                          "start_padding": start_padding, "end_padding": end_padding, "group_count": group_count},
                device)


def left_out(desc, roles: dict) -> dict:
    """Each optional input `desc` leaves out, by its argument name, as None (ops/spec.py's
    tensor_arguments: the tensors after it pass by name)."""
    return {roles[f]: None for f in type(desc).OPTIONAL_TENSORS if getattr(desc, f) is None}


def geometry_arguments(desc) -> dict:
    return {"strides": desc.strides, "dilations": desc.dilations,
            "start_padding": desc.start_padding, "end_padding": desc.end_padding, "group_count": desc.group_count}


def arguments(desc) -> dict:
    return {**left_out(desc, ROLES), **geometry_arguments(desc)}


# ============================================================================ the reference
def per_channel(value, channels: int) -> np.ndarray:
    """A scale, zero point or bias (None: 0) as an array broadcasting over channels: shape
    [channels, 1] where it holds `channels` elements, [1, 1] for one."""
    if value is None:
        return np.zeros((1, 1), np.int64)
    v = np.asarray(value).reshape(-1)
    return v.reshape((len(v), 1)) if len(v) == channels and len(v) != 1 else v[:1].reshape((1, 1))


def integer_sums(x, x_zero_point, w, w_zero_point, strides, dilations, start_padding, end_padding,
                 group_count) -> np.ndarray:
    """The convolution of (x - x_zero_point) with (w - w_zero_point) in int64, exact (the
    float convolution's float64 sums of integers below 2^53 are exact), padding 0 after the
    zero point's subtraction."""
    x, w = np.asarray(x), np.asarray(w)
    spatial = x.ndim - 2
    xd = x.astype(np.int64) - per_channel(x_zero_point, 1).reshape(())
    wz = per_channel(w_zero_point, w.shape[0]).reshape((-1,) + (1,) * (w.ndim - 1))
    wd = w.astype(np.int64) - wz
    exact = float_convolution.exact_convolution(xd, wd, None, strides, dilations, start_padding, end_padding,
                                     (0,) * spatial, group_count, "forward", "cross_correlation")
    return np.rint(exact).astype(np.int64)


def wrap32(v: np.ndarray) -> np.ndarray:
    """int64 values wrapped to int32 (two's complement), as the kernels' i32 arithmetic."""
    return ((np.asarray(v, np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)


def reference(x, x_zero_point=None, *, filter, filter_zero_point=None, strides=None, dilations=None,  # noqa: A002
              start_padding=None, end_padding=None, group_count=1):
    """DML_OPERATOR_CONVOLUTION_INTEGER on numpy arrays (convolution_integer's arguments): the
    int64 sums wrapped to int32."""
    return wrap32(integer_sums(x, x_zero_point, filter, filter_zero_point, strides, dilations, start_padding,
                               end_padding, group_count))


reference.__name__ = reference.__qualname__ = "convolution_integer"


def flops(desc) -> int:
    """2 per product (a multiply and an add): 2 x the output's elements x K."""
    return 2 * desc.output_tensor.element_count * int(np.prod(desc.filter_tensor.sizes[1:]))


# ============================================================================ the command line
def filter_desc(x: TensorDesc, o: dict, data_type) -> tuple[TensorDesc, int]:
    """The filter of --channels C_out (default C_in), --window (default 3 per axis), --groups."""
    spatial = max(0, x.rank - 2)
    cin = x.sizes[1] if x.rank >= 2 else 1
    cout = int(o["channels"][0]) if o.get("channels") else cin
    groups = int(o["groups"][0]) if o.get("groups") else 1
    window = list(o.get("window") or [3] * spatial)
    return TensorDesc(data_type, [cout, max(1, cin // groups)] + window), groups


CLI_ARGS = (CliArg("--channels", "C_out, the output's channels (default: C_in)"),
            CliArg("--window", "the filter's window per spatial axis (default 3 each)"),
            CliArg("--strides", "strides per spatial axis (default 1)"),
            CliArg("--dilations", "dilations per spatial axis (default 1)"),
            CliArg("--pads", "start and end padding per spatial axis (default 0)"),
            CliArg("--groups", "group_count (default 1)"))


def _from_cli(x: TensorDesc, o: dict) -> ConvolutionIntegerOperatorDesc:
    """--shape is the input's ({N, C_in, spatial...}, --dtype INT8 or UINT8); a filter of x's
    type and zero points of one element for both."""
    x = x if x.data_type in INT8S else TensorDesc(U8, x.sizes, x.strides)  # (--dtype: INT8 or UINT8; default UINT8)
    f, groups = filter_desc(x, o, x.data_type)
    pads = o.get("pads")
    return infer_output(x, TensorDesc(x.data_type, [1] * x.rank), f, TensorDesc(x.data_type, [1] * x.rank),
                        strides=o.get("strides"),
                        dilations=o.get("dilations"), start_padding=pads, end_padding=pads, group_count=groups)


SPEC = OpSpec(
    name=OP, key="convolution_integer", desc=ConvolutionIntegerOperatorDesc, support=SUPPORT,
    infer_output=infer_output, validate=validate,
    reference=reference, functional=convolution_integer,
    tensors=("x", "x_zero_point", "filter", "filter_zero_point"), arguments=arguments,
    planner=ProblemPlanner(problem, INTEGER_FAMILY),
    cli=Cli(CLI_ARGS, _from_cli, "--shape 1,8,8,8 --dtype UINT8 --channels 8 --window 3,3 --pads 1,1"),
    page="DML_CONVOLUTION_INTEGER_OPERATOR_DESC",
)
