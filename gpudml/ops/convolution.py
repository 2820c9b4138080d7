"""DML_OPERATOR_CONVOLUTION: a convolution of FilterTensor with InputTensor over 1 to 3 spatial
axes, FORWARD or BACKWARD (the transposed convolution), in groups, plus a bias per output
channel and a fused activation (kernels/convolution.py runs it as implicit GEMM on the GEMM
family). docs/operators/convolution.md says the same for users.

What the page says (sdk-api's DML_CONVOLUTION_OPERATOR_DESC, the 11/2022 version), as
implemented:

- InputTensor { BatchCount, InputChannelCount, [InputDepth], [InputHeight], InputWidth },
  FilterTensor { FilterBatchCount, FilterChannelCount, [FilterDepth], [FilterHeight],
  FilterWidth }, the optional BiasTensor { 1, OutputChannelCount, 1... }, OutputTensor {
  BatchCount, OutputChannelCount, spatial... }: DimensionCount 4 or 5 from FL 1.0, 3 to 5
  from FL 4.0; FLOAT32 or FLOAT16, every tensor one DataType and one DimensionCount.
  DimensionCount (the field) is the number of spatial axes: the tensors' DimensionCount - 2,
  and the length of Strides, Dilations, StartPadding, EndPadding and OutputPadding.
- FORWARD: the filter is { OutputChannelCount, InputChannelCount / GroupCount, window... },
  output[n, co, o] = sum over the group's input channels ci and the window offsets k of
  input[n, ci, o Strides + k Dilations - StartPadding] filter[co, ci, k] (0 outside the
  input: the padding), output size 1 + (input + StartPadding + EndPadding - ((window - 1)
  Dilations + 1)) / Strides (rounded down; the dilated window must fit the padded input).
- BACKWARD (the transposed convolution, ONNX's ConvTranspose): the filter is {
  InputChannelCount, OutputChannelCount / GroupCount, window... }, input[n, ci, i] adds
  input[n, ci, i] filter[ci, co, k] to output position i Strides + k Dilations -
  StartPadding; output size (input - 1) Strides + (window - 1) Dilations + 1 - StartPadding
  - EndPadding + OutputPadding (OutputPadding: positions added at each axis' end).
  gpudml takes OutputPadding in the BACKWARD direction only (FORWARD: zeros; the page
  gives it no FORWARD meaning).
- Mode CONVOLUTION flips the filter along every spatial axis, CROSS_CORRELATION (the
  default: what ML models mean) reads it as it is; the page's "Mode interactions" table
  describes the same four cases from the direct convolution's point of view.
- GroupCount divides the input and output channels into that many independent
  convolutions (depthwise: GroupCount = InputChannelCount). The bias is added to every
  element of its channel, then the fused activation (an activation of the element-wise
  family's).
- A description that breaks a rule is an InvalidArgumentError naming the field, the rule
  and the values; the output's sizes must be exactly the ones above.

The functional form `convolution(x, filter, bias=None, *, strides=None, dilations=None,
start_padding=None, end_padding=None, output_padding=None, group_count=1,
direction="forward", mode="cross_correlation", fused_activation=None)` infers the output
(strides and dilations default to 1, paddings to 0); a bias may be given as [C_out] (a
stride-0 description of { 1, C_out, 1... }, no copy).

Precision (`tolerance`), against the float64 reference: the products and sums of GEMM's
kernels, in float32 (FLOAT16 read exactly into float32, the result rounded once). With u =
2^-24, K = InputChannelCount / GroupCount x prod(window) (the reduction length) and S =
the sum of |input| |filter| over the products of an output element, every result is within

    1.01 (K + 3) u (S + |bias|)

of the exact value (GEMM's bound with alpha = beta = 1 and C = the bias), plus 2^-126 (K (1 +
max |input| + max |filter|) + 2) for the subnormals an adapter may flush, the fused
activation's own error and how it moves the result's, and float16's rounding of the result
(1 ULP of float16). Where S + |bias| passes float32's largest value: any value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.convolution import Convolution, ConvolutionPlanner
from ..tensor_desc import TensorDesc, as_int, as_int_tuple, check_length
from ..types import F16, F32, ConvolutionDirection, ConvolutionMode, FeatureLevel
from .activations import FusedActivation
from .base import check_one_type
from .gemm import TINY, UNIT, finish_bound, kernel_activation, sample
from .spec import Call, Cli, CliArg, OpSpec, support_table

OP = "Convolution"
FL = FeatureLevel
FLOATS = frozenset({F32, F16})
TENSORS = ("input_tensor", "filter_tensor", "bias_tensor", "output_tensor")
SUPPORT = support_table(OP, TENSORS, [
    (FL.FL_4_0, (3, 5), FLOATS),
    (FL.FL_1_0, (4, 5), FLOATS),
])
FORWARD, BACKWARD = ConvolutionDirection.FORWARD, ConvolutionDirection.BACKWARD
CONVOLUTION, CROSS_CORRELATION = ConvolutionMode.CONVOLUTION, ConvolutionMode.CROSS_CORRELATION
_UINT_MAX = 2**32 - 1
_ARRAYS = ("strides", "dilations", "start_padding", "end_padding", "output_padding")


@dataclass(frozen=True)
class ConvolutionOperatorDesc:
    """DML_CONVOLUTION_OPERATOR_DESC. `bias_tensor` is optional (None); `dimension_count`
    None: the input's DimensionCount - 2; the arrays None: strides and dilations of 1,
    paddings of 0."""

    input_tensor: TensorDesc
    filter_tensor: TensorDesc
    bias_tensor: TensorDesc | None
    output_tensor: TensorDesc
    mode: ConvolutionMode = CROSS_CORRELATION
    direction: ConvolutionDirection = FORWARD
    dimension_count: int | None = None
    strides: tuple[int, ...] | None = None
    dilations: tuple[int, ...] | None = None
    start_padding: tuple[int, ...] | None = None
    end_padding: tuple[int, ...] | None = None
    output_padding: tuple[int, ...] | None = None
    group_count: int = 1
    fused_activation: FusedActivation | None = None
    #: Tensor fields that may be None (the conformance kit never breaks them into None).
    OPTIONAL_TENSORS = ("bias_tensor",)

    def __post_init__(self):
        set_ = object.__setattr__
        set_(self, "mode", ConvolutionMode.coerce(self.mode, f"{OP}: mode"))
        set_(self, "direction", ConvolutionDirection.coerce(self.direction, f"{OP}: direction"))
        count = self.dimension_count
        if count is None:
            count = self.input_tensor.rank - 2 if isinstance(self.input_tensor, TensorDesc) else 0
        set_(self, "dimension_count", as_int(count, f"{OP}: dimension_count"))
        for name in _ARRAYS:
            value = getattr(self, name)
            if value is None:
                value = [1 if name in ("strides", "dilations") else 0] * max(0, self.dimension_count)
            set_(self, name, as_int_tuple(value, f"{OP}: {name}"))
        set_(self, "group_count", as_int(self.group_count, f"{OP}: group_count"))
        set_(self, "fused_activation", FusedActivation.coerce(self.fused_activation, f"{OP}: fused_activation"))


def window_extent(window: int, dilation: int) -> int:
    """The dilated window's extent along an axis: (window - 1) dilation + 1."""
    return (window - 1) * dilation + 1


def output_spatial(direction, in_sizes, window, strides, dilations, start, end, output_padding) -> list[int]:
    """The output's spatial sizes (the module docstring's formulas; not checked)."""
    out = []
    for i, w, s, d, p0, p1, op in zip(in_sizes, window, strides, dilations, start, end, output_padding):
        if direction == FORWARD:
            out.append(1 + (i + p0 + p1 - window_extent(w, d)) // max(s, 1))
        else:
            out.append((i - 1) * s + window_extent(w, d) - p0 - p1 + op)
    return out


def output_channels(desc_or_filter: TensorDesc, direction, groups: int) -> int:
    return desc_or_filter.sizes[0] if direction == FORWARD else desc_or_filter.sizes[1] * groups


def check_geometry(op: str, desc, rank: int) -> int:
    """The page's rules on a convolution's geometry (the module docstring; the integer
    convolutions' too, whose descs have no direction and output padding: FORWARD, zeros):
    DimensionCount = the tensors' - 2, the arrays' lengths and values, the channels and
    groups, the window within the padded input, the output's sizes. Returns
    OutputChannelCount."""
    spatial = rank - 2
    direction = getattr(desc, "direction", FORWARD)
    output_padding = getattr(desc, "output_padding", (0,) * spatial)
    arrays = [name for name in _ARRAYS if hasattr(desc, name)]
    if desc.dimension_count != spatial:
        raise InvalidArgumentError(f"{op}: dimension_count = {desc.dimension_count} must be the tensors' "
                                   f"DimensionCount {rank} - 2 = {spatial} (the spatial axes)")
    for name in arrays:
        values = getattr(desc, name)
        check_length(op, name, values, spatial)
        least = 1 if name in ("strides", "dilations") else 0
        for i, v in enumerate(values):
            if not least <= v <= _UINT_MAX:
                raise InvalidArgumentError(f"{op}: {name}[{i}] = {v} must be in [{least}, {_UINT_MAX}]")
    groups = desc.group_count
    if not 1 <= groups <= _UINT_MAX:
        raise InvalidArgumentError(f"{op}: group_count = {groups} must be at least 1")
    x, f, out = desc.input_tensor.sizes, desc.filter_tensor.sizes, desc.output_tensor.sizes
    if x[1] % groups:
        raise InvalidArgumentError(f"{op}: input_tensor.sizes[1] = {x[1]} (InputChannelCount) must be a multiple "
                                   f"of group_count = {groups}")
    if direction == FORWARD:
        if f[1] != x[1] // groups:
            raise InvalidArgumentError(
                f"{op}: filter_tensor.sizes[1] = {f[1]} must be InputChannelCount / group_count = {x[1]} / "
                f"{groups} = {x[1] // groups} (FORWARD: the filter is {{OutputChannelCount, InputChannelCount / "
                f"GroupCount, window...}})")
        if f[0] % groups:
            raise InvalidArgumentError(f"{op}: filter_tensor.sizes[0] = {f[0]} (OutputChannelCount) must be a "
                                       f"multiple of group_count = {groups}")
        if any(output_padding):
            raise InvalidArgumentError(f"{op}: output_padding = {list(output_padding)} must be zeros in the "
                                       f"FORWARD direction (it pads the BACKWARD direction's output)")
        for d in range(spatial):
            padded = x[2 + d] + desc.start_padding[d] + desc.end_padding[d]
            extent = window_extent(f[2 + d], desc.dilations[d])
            if extent > padded:
                raise InvalidArgumentError(
                    f"{op}: the window is larger than the padded input on spatial axis {d}: (filter_tensor.sizes"
                    f"[{2 + d}] - 1) * dilations[{d}] + 1 = ({f[2 + d]} - 1) * {desc.dilations[d]} + 1 = {extent} "
                    f"> input_tensor.sizes[{2 + d}] + start_padding[{d}] + end_padding[{d}] = {x[2 + d]} + "
                    f"{desc.start_padding[d]} + {desc.end_padding[d]} = {padded}")
    else:
        if f[0] != x[1]:
            raise InvalidArgumentError(
                f"{op}: filter_tensor.sizes[0] = {f[0]} must be InputChannelCount = input_tensor.sizes[1] = {x[1]} "
                f"(BACKWARD: the filter is {{InputChannelCount, OutputChannelCount / GroupCount, window...}})")
    want_spatial = output_spatial(direction, x[2:], f[2:], desc.strides, desc.dilations, desc.start_padding,
                                  desc.end_padding, output_padding)
    for d, n in enumerate(want_spatial):
        if n < 1:
            raise InvalidArgumentError(
                f"{op}: the BACKWARD output is empty on spatial axis {d}: (input_tensor.sizes[{2 + d}] - 1) * "
                f"strides[{d}] + (filter_tensor.sizes[{2 + d}] - 1) * dilations[{d}] + 1 - start_padding[{d}] - "
                f"end_padding[{d}] + output_padding[{d}] = {n} < 1")
    channels = output_channels(desc.filter_tensor, direction, groups)
    want = [x[0], channels] + want_spatial
    if list(out) != want:
        raise InvalidArgumentError(
            f"{op}: output_tensor.sizes {list(out)} must be {want} ({{BatchCount, OutputChannelCount, spatial...}} "
            f"of the {direction.name} direction: OutputChannelCount = "
            + ("filter_tensor.sizes[0]" if direction == FORWARD else "filter_tensor.sizes[1] * group_count")
            + ")")
    return channels


def validate(desc: ConvolutionOperatorDesc, level: FeatureLevel) -> None:
    """The page's rules (module docstring): valid tensors (the bias optional), one
    DimensionCount and DataType, the support row, DimensionCount = the tensors' - 2, the
    arrays' lengths and values, the channels and groups, the window within the padded input,
    the output's and the bias' sizes."""
    rank = check_one_type(OP, SUPPORT, level, {"input_tensor": desc.input_tensor, "filter_tensor": desc.filter_tensor,
                                               "bias_tensor": desc.bias_tensor, "output_tensor": desc.output_tensor},
                          ("bias_tensor",))
    channels = check_geometry(OP, desc, rank)
    if desc.bias_tensor is not None:
        want_bias = [1, channels] + [1] * (rank - 2)
        if list(desc.bias_tensor.sizes) != want_bias:
            raise InvalidArgumentError(f"{OP}: bias_tensor.sizes {list(desc.bias_tensor.sizes)} must be {want_bias} "
                                       f"({{1, OutputChannelCount, 1...}})")


def convolution_of(desc: ConvolutionOperatorDesc) -> Convolution:
    """What the kernels compute for `desc`."""
    activation, attrs = kernel_activation(desc.fused_activation)
    return Convolution(OP, desc.input_tensor, desc.filter_tensor, desc.bias_tensor, desc.output_tensor,
                       desc.direction == BACKWARD, desc.mode == CONVOLUTION, desc.strides, desc.dilations,
                       desc.start_padding, desc.group_count, activation, attrs)


# ============================================================================ the functional form
def _array(value, name: str, spatial: int, fill: int) -> tuple[int, ...]:
    if value is None:
        return (fill,) * spatial
    return as_int_tuple(value, f"convolution: {name}")


def infer_output(x: TensorDesc, filter: TensorDesc, bias: TensorDesc | None = None, *, strides=None,  # noqa: A002
                 dilations=None, start_padding=None, end_padding=None, output_padding=None, group_count=1,
                 direction="forward", mode="cross_correlation", fused_activation=None) -> ConvolutionOperatorDesc:
    """The desc of convolution(x, filter, bias, ...): the output's sizes by the page's formula
    (module docstring); a bias of [C_out] described as { 1, C_out, 1... } with strides of 0."""
    spatial = max(0, x.rank - 2)
    direction = ConvolutionDirection.coerce(direction, "convolution: direction")
    mode = ConvolutionMode.coerce(mode, "convolution: mode")
    groups = as_int(group_count, "convolution: group_count")
    arrays = {"strides": _array(strides, "strides", spatial, 1),
              "dilations": _array(dilations, "dilations", spatial, 1),
              "start_padding": _array(start_padding, "start_padding", spatial, 0),
              "end_padding": _array(end_padding, "end_padding", spatial, 0),
              "output_padding": _array(output_padding, "output_padding", spatial, 0)}
    attrs = {"mode": mode, "direction": direction, "dimension_count": spatial, **arrays, "group_count": groups,
             "fused_activation": fused_activation}
    if x.rank < 3 or filter.rank != x.rank or any(len(v) != spatial for v in arrays.values()):
        return ConvolutionOperatorDesc(x, filter, bias, TensorDesc(x.data_type, x.sizes), **attrs)
    sizes = output_spatial(direction, x.sizes[2:], filter.sizes[2:], *arrays.values())
    channels = output_channels(filter, direction, groups)
    if bias is not None and bias.rank == 1:
        bias = TensorDesc(bias.data_type, [1, bias.sizes[0]] + [1] * spatial,
                          [0, bias.effective_strides[0]] + [0] * spatial,
                          total_tensor_size_in_bytes=bias.total_tensor_size_in_bytes)
    out = TensorDesc(x.data_type, [x.sizes[0], channels] + [max(1, n) for n in sizes])
    return ConvolutionOperatorDesc(x, filter, bias, out, **attrs)


def convolution(x, filter, bias=None, *, strides=None, dilations=None, start_padding=None,  # noqa: A002
                end_padding=None, output_padding=None, group_count=1, direction="forward", mode="cross_correlation",
                fused_activation=None, device=None):
    """DML_OPERATOR_CONVOLUTION over the spatial axes of x ({N, C_in, [D], [H], W}):
    direction "forward" (filter {C_out, C_in / group_count, window...}) or "backward" (the
    transposed convolution, filter {C_in, C_out / group_count, window...}), mode
    "cross_correlation" (the default) or "convolution" (the filter flipped); strides and
    dilations (default 1), start, end and (backward) output padding (default 0) per spatial
    axis; bias [C_out] or {1, C_out, 1...}; fused_activation in the store. FLOAT32 or
    FLOAT16, accumulated in float32; within 1.01 (K + 3) 2^-24 (sum |x| |filter| + |bias|)
    of the exact result, K = C_in / group_count x prod(window) (gpudml/ops/convolution.py)."""
    tensors = [("x", x), ("filter", filter)] + ([("bias", bias)] if bias is not None else [])
    return Call(tensors, {"strides": strides, "dilations": dilations, "start_padding": start_padding,
                          "end_padding": end_padding, "output_padding": output_padding, "group_count": group_count,
                          "direction": direction, "mode": mode, "fused_activation": fused_activation}, device)


def arguments(desc: ConvolutionOperatorDesc) -> dict:
    return {"strides": desc.strides, "dilations": desc.dilations, "start_padding": desc.start_padding,
            "end_padding": desc.end_padding, "output_padding": desc.output_padding, "group_count": desc.group_count,
            "direction": desc.direction.name.lower(), "mode": desc.mode.name.lower(),
            "fused_activation": desc.fused_activation}


# ============================================================================ the reference and its precision
def exact_convolution(x, w, bias, strides, dilations, start_padding, end_padding, output_padding, group_count,
                      direction, mode) -> np.ndarray:
    """The convolution in float64 (unrounded, no activation): FORWARD as a sum over the
    window's offsets of strided slices of the zero-padded input, BACKWARD as their scatter
    into the full transposed output, then cropped."""
    with np.errstate(invalid="ignore"):
        x, w = np.asarray(x).astype(np.float64), np.asarray(w).astype(np.float64)
    spatial = x.ndim - 2
    direction = ConvolutionDirection.coerce(direction, "convolution: direction")
    if ConvolutionMode.coerce(mode, "convolution: mode") == CONVOLUTION:
        w = np.flip(w, axis=tuple(range(2, w.ndim)))
    st = _array(strides, "strides", spatial, 1)
    dl = _array(dilations, "dilations", spatial, 1)
    p0 = _array(start_padding, "start_padding", spatial, 0)
    p1 = _array(end_padding, "end_padding", spatial, 0)
    po = _array(output_padding, "output_padding", spatial, 0)
    g = int(group_count)
    window = w.shape[2:]
    cig = x.shape[1] // g
    with np.errstate(all="ignore"):
        if direction == FORWARD:
            cog = w.shape[0] // g
            out = output_spatial(FORWARD, x.shape[2:], window, st, dl, p0, p1, po)
            xp = np.pad(x, [(0, 0), (0, 0)] + list(zip(p0, p1)))
            y = np.zeros((x.shape[0], w.shape[0], *out))
            for k in np.ndindex(*window):
                part = xp[(slice(None), slice(None)) + tuple(
                    slice(k[d] * dl[d], k[d] * dl[d] + (out[d] - 1) * st[d] + 1, st[d]) for d in range(spatial))]
                for gi in range(g):
                    y[:, gi * cog:(gi + 1) * cog] += np.einsum(
                        "nc...,oc->no...", part[:, gi * cig:(gi + 1) * cig], w[(slice(gi * cog, (gi + 1) * cog),
                                                                              slice(None)) + k])
        else:
            cog = w.shape[1]
            full = [(i - 1) * s + window_extent(n, d) + q for i, s, n, d, q in zip(x.shape[2:], st, window, dl, po)]
            y = np.zeros((x.shape[0], cog * g, *full))
            for k in np.ndindex(*window):
                at = (slice(None), slice(None)) + tuple(
                    slice(k[d] * dl[d], k[d] * dl[d] + (x.shape[2 + d] - 1) * st[d] + 1, st[d]) for d in range(spatial))
                for gi in range(g):
                    y[(slice(None), slice(gi * cog, (gi + 1) * cog)) + at[2:]] += np.einsum(
                        "nc...,co->no...", x[:, gi * cig:(gi + 1) * cig], w[(slice(gi * cig, (gi + 1) * cig),
                                                                           slice(None)) + k])
            y = y[(slice(None), slice(None)) + tuple(slice(p0[d], full[d] - p1[d]) for d in range(spatial))]
        if bias is not None:
            y = y + np.asarray(bias).astype(np.float64).reshape((1, -1) + (1,) * spatial)
    return y


def reference(x, filter, bias=None, *, strides=None, dilations=None, start_padding=None,  # noqa: A002
              end_padding=None, output_padding=None, group_count=1, direction="forward", mode="cross_correlation",
              fused_activation=None):
    """DML_OPERATOR_CONVOLUTION on numpy arrays (convolution's arguments): computed in float64
    and rounded once to x's type."""
    fused = FusedActivation.coerce(fused_activation)
    y = exact_convolution(x, filter, bias, strides, dilations, start_padding, end_padding, output_padding, group_count,
               direction, mode)
    with np.errstate(all="ignore"):
        if fused is not None:
            y = np.asarray(fused.row.numpy(y, **dict(fused.attributes)), np.float64)
        return y.astype(np.asarray(x).dtype)


reference.__name__ = reference.__qualname__ = "convolution"


def tolerance(expected: np.ndarray, inputs, arguments: dict):
    """The documented precision (module docstring), per element."""
    x, w = inputs[0], inputs[1]
    bias = inputs[2] if len(inputs) > 2 else None
    geometry = {"strides": None, "dilations": None, "start_padding": None, "end_padding": None,
                "output_padding": None, "group_count": 1, "direction": "forward", "mode": "cross_correlation"}
    geometry.update({k: v for k, v in arguments.items() if k in geometry and v is not None})
    with np.errstate(all="ignore"):
        ax, aw = np.abs(np.asarray(x).astype(np.float64)), np.abs(np.asarray(w).astype(np.float64))
        magnitude = exact_convolution(ax, aw, None if bias is None else np.abs(np.asarray(bias).astype(np.float64)),
                                      **geometry)
        k = (np.asarray(x).shape[1] // int(geometry["group_count"])) * math.prod(np.asarray(w).shape[2:])
        top = float(np.nanmax(ax, initial=0.0)) + float(np.nanmax(aw, initial=0.0))
        e = 1.01 * (k + 3) * UNIT * magnitude + TINY * (k * (1 + top) + 2)
        y = exact_convolution(x, w, bias, **geometry)
    return finish_bound(expected, y, e, magnitude, FusedActivation.coerce(arguments.get("fused_activation")))


def flops(desc: ConvolutionOperatorDesc) -> int:
    """2 per product of a filter element with an input element that reaches the output:
    2 x the output's elements x K (FORWARD), 2 x the input's elements x the filter's
    elements / InputChannelCount (BACKWARD: each input element meets the window of every
    output channel of its group)."""
    f = desc.filter_tensor
    if desc.direction == FORWARD:
        return 2 * desc.output_tensor.element_count * math.prod(f.sizes[1:])
    return 2 * desc.input_tensor.element_count * math.prod(f.sizes[1:])


# ============================================================================ the command line
def _from_cli(x: TensorDesc, o: dict) -> ConvolutionOperatorDesc:
    """--shape is the input's ({N, C_in, spatial...}); --channels C_out (default C_in),
    --window per spatial axis (default 3), --strides, --dilations, --pads (start = end),
    --groups, --direction forward/backward, --bias yes/no."""
    spatial = max(0, x.rank - 2)
    cin = x.sizes[1] if x.rank >= 2 else 1
    cout = int(o["channels"][0]) if o.get("channels") else cin
    groups = int(o["groups"][0]) if o.get("groups") else 1
    window = list(o.get("window") or [3] * spatial)
    direction = (o.get("direction") or "forward").lower()
    fsizes = ([cout, max(1, cin // groups)] if direction == "forward" else [cin, max(1, cout // groups)]) + window
    f = TensorDesc(x.data_type, fsizes)
    bias = TensorDesc(x.data_type, [cout]) if (o.get("bias") or "no").lower() in ("yes", "true", "1") else None
    pads = o.get("pads")
    return infer_output(x, f, bias, strides=o.get("strides"), dilations=o.get("dilations"), start_padding=pads,
                        end_padding=pads, group_count=groups, direction=direction)


SPEC = OpSpec(
    name=OP, key="convolution", desc=ConvolutionOperatorDesc, support=SUPPORT,
    infer_output=infer_output, validate=validate,
    reference=reference, functional=convolution, tensors=("x", "filter", "bias"), arguments=arguments,
    planner=ConvolutionPlanner(convolution_of),
    cli=Cli((CliArg("--channels", "C_out, the output's channels (default: C_in)"),
             CliArg("--window", "the filter's window per spatial axis (default 3 each)"),
             CliArg("--strides", "strides per spatial axis (default 1)"),
             CliArg("--dilations", "dilations per spatial axis (default 1)"),
             CliArg("--pads", "start and end padding per spatial axis (default 0)"),
             CliArg("--groups", "group_count (default 1)"),
             CliArg("--direction", "forward or backward (the transposed convolution)", "str"),
             CliArg("--bias", "yes: a bias per output channel", "str")),
            _from_cli, "--shape 1,64,56,56 --channels 64 --window 3,3 --pads 1,1"),
    page="DML_CONVOLUTION_OPERATOR_DESC", tolerance=tolerance, sample=sample,
)
