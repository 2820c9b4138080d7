"""DirectML's pooling gradients: DML_MAX_POOLING_GRAD (`dml.max_pooling_grad`) and
DML_AVERAGE_POOLING_GRAD (`dml.average_pooling_grad`), FL 3_0. Both run the pooling family's
gradient kernels (kernels/pooling_grad.py, shaders/pooling_grad.wgsl.j2): each element of the
input gradient gathers, in a fixed order, what the forward windows covering it contribute
(deterministic: no atomics). docs/operators/max_pooling_grad.md says the same for users.

What the pages say (sdk-api, ns-directml-dml_max_pooling_grad_operator_desc.md and
ns-directml-dml_average_pooling_grad_operator_desc.md), as implemented:

- MAX_POOLING_GRAD: InputTensor (the forward MAX_POOLING2's input) decides, per window, the
  largest element; InputGradientTensor's value for that window goes to that element of
  OutputGradientTensor; where windows share their largest element the values are summed;
  unreferenced elements are 0. Ties: "the element with the lowest logical element index" (the
  first in the window's row-major order, as the forward MAX_POOLING2's OutputIndicesTensor
  picks). DimensionCount 2 only ("this operator only supports 4D tensors"); Strides,
  WindowSize, StartPadding, EndPadding and Dilations as MAX_POOLING2's. InputTensor and
  OutputGradientTensor have the same Sizes; the three tensors one DataType, FLOAT32 or
  FLOAT16.
- AVERAGE_POOLING_GRAD: OutputGradientTensor[x] = sum over the forward windows covering x of
  InputGradientTensor[window] / the window's divisor (the page's example: each element's
  "weighted contribution"); IncludePadding as AVERAGE_POOLING's (the padded positions count
  in the divisor). No Dilations (AVERAGE_POOLING's, version 0); DimensionCount 2 or 3 (4-D
  or 5-D tensors); both tensors one DataType, FLOAT32 or FLOAT16.

What gpudml decides where the pages are silent (documented, tested):

- InputGradientTensor's sizes must be the forward output's: BatchCount and ChannelCount of
  the forward input, then (size + StartPadding + EndPadding - dilated window) / Strides + 1
  per spatial axis (the pages say "typically"; a gradient of any other shape has no window to
  come from). The forward pooling's rules hold too (ops/pooling.py): strides, windows and
  dilations of at least 1, windows no larger than the padded input, no window over padding
  only.
- NaN in InputTensor: the forward MAX_POOLING2's rule (NaN counts as the largest, the first
  NaN of a window wins), so a window holding NaN sends its gradient to its first NaN.
- The functional forms: `max_pooling_grad(x, dy, window_size, ...)` takes the forward input
  and the gradient; `average_pooling_grad(dy, input_sizes, window_size, ...)` takes the
  gradient and the forward input's sizes (OutputGradientTensor's: the floor in the output
  formula makes them ambiguous from dy alone). window_size None: the whole spatial extent
  (global pooling's gradient).

Precision (`tolerance`), against the float64 reference, u = 2^-24; sums in f32, each
element's terms added in the order of the windows covering it (row-major), float16 read
exactly into f32 and the result rounded once to float16 (1 ULP of float16 more):

- MAX: an element that is the maximum of n windows is the f32 sum of their n gradients:
  within 1.01 (n - 1) u sum|dY| (bit-exact where n <= 1), plus n 2^-126 for the subnormals an
  adapter may flush.
- AVERAGE: each term dY / m (WGSL's division: 2.5 ULP, 5 u relative) and their f32 sum: within
  1.01 (n + 4) u sum|dY / m| (n terms), plus (n + 1) 2^-126.
- Any value where a sum may pass float32's (float16's) range.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels import pooling_grad as family
from ..kernels.base import ProblemPlanner
from ..kernels.pooling_grad import Problem
from ..tensor_desc import TensorDesc, as_int, as_int_tuple, check_window_fields
from ..types import DataType, FeatureLevel
from .base import check_one_type
from .normalization import as_bool
from .pooling import (
    WINDOW_FIELDS,
    check_no_empty_window,
    first_max,
    output_size,
    per_axis,
    window_elements,
    window_output_sizes,
)
from .spec import Call, Cli, CliArg, Example, OpSpec, support_table

FL, T = FeatureLevel, DataType
MAX, AVERAGE = "MaxPoolingGrad", "AveragePoolingGrad"
FLOATS = frozenset({T.FLOAT32, T.FLOAT16})
MAX_TENSORS = ("input_tensor", "input_gradient_tensor", "output_gradient_tensor")
AVERAGE_TENSORS = ("input_gradient_tensor", "output_gradient_tensor")
MAX_SUPPORT = support_table(MAX, MAX_TENSORS, [(FL.FL_3_0, {4}, FLOATS)])
AVERAGE_SUPPORT = support_table(AVERAGE, AVERAGE_TENSORS, [(FL.FL_3_0, (4, 5), FLOATS)])


# ============================================================================ descs
def _normalize_window(desc, op: str, fields) -> None:
    object.__setattr__(desc, "dimension_count", as_int(desc.dimension_count, f"{op}: dimension_count"))
    for name in fields:
        object.__setattr__(desc, name, as_int_tuple(getattr(desc, name), f"{op}: {name}"))


@dataclass(frozen=True)
class MaxPoolingGradOperatorDesc:
    """DML_MAX_POOLING_GRAD_OPERATOR_DESC: the gradient of MAX_POOLING2 with respect to its
    input: each window's incoming gradient goes to the window's largest element of
    input_tensor (the first of ties), summed where windows share it; 4-D tensors."""

    input_tensor: TensorDesc
    input_gradient_tensor: TensorDesc
    output_gradient_tensor: TensorDesc
    dimension_count: int
    strides: tuple[int, ...]
    window_size: tuple[int, ...]
    start_padding: tuple[int, ...]
    end_padding: tuple[int, ...]
    dilations: tuple[int, ...]

    def __post_init__(self):
        _normalize_window(self, MAX, WINDOW_FIELDS + ("dilations",))


@dataclass(frozen=True)
class AveragePoolingGradOperatorDesc:
    """DML_AVERAGE_POOLING_GRAD_OPERATOR_DESC: the gradient of AVERAGE_POOLING with respect
    to its input: each window's incoming gradient divided among the window's elements (its
    divisor as the forward's include_padding says); 4-D or 5-D tensors."""

    input_gradient_tensor: TensorDesc
    output_gradient_tensor: TensorDesc
    dimension_count: int
    strides: tuple[int, ...]
    window_size: tuple[int, ...]
    start_padding: tuple[int, ...]
    end_padding: tuple[int, ...]
    include_padding: bool

    def __post_init__(self):
        _normalize_window(self, AVERAGE, WINDOW_FIELDS)
        object.__setattr__(self, "include_padding", as_bool(self.include_padding, f"{AVERAGE}: include_padding"))


def _dilations(desc) -> tuple[int, ...]:
    return getattr(desc, "dilations", (1,) * len(desc.window_size))


# ============================================================================ validation
def _validate(op: str, support, named: dict, desc, level: FeatureLevel) -> None:
    """The pages' rules and gpudml's (module docstring): valid tensors of one DimensionCount
    and one data type in the support row, DimensionCount the spatial axes, the window fields'
    lengths and least values, the forward input's sizes (output_gradient_tensor's) and the
    forward output's (input_gradient_tensor's), no window over padding only."""
    rank = check_one_type(op, support, level, named)
    spatial = rank - 2
    if desc.dimension_count != spatial:
        raise InvalidArgumentError(f"{op}: dimension_count = {desc.dimension_count} must be the tensors' "
                                   f"DimensionCount - 2 = {spatial} (the spatial axes)")
    fields = WINDOW_FIELDS + (("dilations",) if hasattr(desc, "dilations") else ())
    check_window_fields(op, desc, fields, spatial, "dimension_count")
    dx, dy = desc.output_gradient_tensor, desc.input_gradient_tensor
    if "input_tensor" in named and desc.input_tensor.sizes != dx.sizes:
        raise InvalidArgumentError(f"{op}: output_gradient_tensor.sizes {list(dx.sizes)} must equal input_tensor.sizes "
                                   f"{list(desc.input_tensor.sizes)} (the page's constraint)")
    dil = _dilations(desc)
    want = window_output_sizes(op, dx.sizes, desc.window_size, desc.strides, desc.start_padding, desc.end_padding,
                               dil, field="output_gradient_tensor")
    if list(dy.sizes) != want:
        raise InvalidArgumentError(
            f"{op}: input_gradient_tensor.sizes {list(dy.sizes)} must be the forward pooling's output sizes {want} "
            f"(batch and channel of output_gradient_tensor, then (size + start_padding + end_padding - dilated "
            f"window) / strides + 1 per spatial axis, for window_size {list(desc.window_size)}, strides "
            f"{list(desc.strides)})")
    check_no_empty_window(op, dx.sizes, want, desc.window_size, desc.strides, desc.start_padding, desc.end_padding,
                          dil)


def _validate_max(desc: MaxPoolingGradOperatorDesc, level: FeatureLevel) -> None:
    _validate(MAX, MAX_SUPPORT, {"input_tensor": desc.input_tensor, "input_gradient_tensor":
                                 desc.input_gradient_tensor, "output_gradient_tensor": desc.output_gradient_tensor},
              desc, level)


def _validate_average(desc: AveragePoolingGradOperatorDesc, level: FeatureLevel) -> None:
    _validate(AVERAGE, AVERAGE_SUPPORT, {"input_gradient_tensor": desc.input_gradient_tensor,
                                         "output_gradient_tensor": desc.output_gradient_tensor}, desc, level)


# ============================================================================ shape inference and functional forms
def _fields(where: str, sizes, window_size, strides, start_padding, end_padding, dilations=None) -> dict:
    spatial = max(0, len(sizes) - 2)
    window = tuple(sizes[2:]) if window_size is None else per_axis(window_size, spatial, "window_size", 1, where)
    fields = {"dimension_count": spatial, "strides": per_axis(strides, spatial, "strides", 1, where),
              "window_size": window, "start_padding": per_axis(start_padding, spatial, "start_padding", 0, where),
              "end_padding": per_axis(end_padding, spatial, "end_padding", 0, where)}
    if dilations is not False:
        fields["dilations"] = per_axis(dilations, spatial, "dilations", 1, where)
    return fields


def max_infer(x: TensorDesc, dy: TensorDesc, window_size=None, *, strides=None, start_padding=None, end_padding=None,
              dilations=None) -> MaxPoolingGradOperatorDesc:
    """The desc of max_pooling_grad(x, dy, ...): the output gradient x's sizes and dy's type."""
    fields = _fields("max_pooling_grad", x.sizes, window_size, strides, start_padding, end_padding, dilations)
    return MaxPoolingGradOperatorDesc(x, dy, TensorDesc(dy.data_type, x.sizes), **fields)


def average_infer(dy: TensorDesc, input_sizes, window_size=None, *, strides=None, start_padding=None,
                  end_padding=None, include_padding=False) -> AveragePoolingGradOperatorDesc:
    """The desc of average_pooling_grad(dy, input_sizes, ...): the output gradient of
    input_sizes (the forward input's) and dy's type."""
    sizes = as_int_tuple(input_sizes, "average_pooling_grad: input_sizes")
    fields = _fields("average_pooling_grad", sizes, window_size, strides, start_padding, end_padding, False)
    return AveragePoolingGradOperatorDesc(dy, TensorDesc(dy.data_type, sizes), **fields,
                                          include_padding=include_padding)


def max_pooling_grad(x, dy, window_size=None, *, strides=None, start_padding=None, end_padding=None, dilations=None,
                     device=None):
    """DML_OPERATOR_MAX_POOLING_GRAD: the gradient of max_pooling(x, window_size, ...) with
    respect to x, given dy (the gradient of its output, of the forward output's shape): each
    window's dy goes to the window's largest element of x (the first of ties in row-major
    window order, the lowest flat index; NaN counts as the largest), summed where windows share
    it; 0 elsewhere. x 4-D (NCHW), FLOAT32 or FLOAT16; window_size, strides (default 1),
    start_padding, end_padding (default 0), dilations (default 1): one int for every spatial
    axis or one per axis; window_size=None: global. Summed in float32: bit-exact where an
    element is the maximum of one window; precision: gpudml/ops/pooling_grad.py."""
    return Call([("x", x), ("dy", dy)], {"window_size": window_size, "strides": strides,
                                         "start_padding": start_padding, "end_padding": end_padding,
                                         "dilations": dilations}, device)


def average_pooling_grad(dy, input_sizes, window_size=None, *, strides=None, start_padding=None, end_padding=None,
                         include_padding=False, device=None):
    """DML_OPERATOR_AVERAGE_POOLING_GRAD: the gradient of average_pooling(x, window_size, ...)
    with respect to x (of sizes input_sizes, 4-D or 5-D), given dy: each element sums dy over
    the windows covering it, each divided by its window's divisor (include_padding: the
    window's element count; else its input elements). FLOAT32 or FLOAT16, summed in float32:
    within 1.01 (n + 4) 2^-24 sum|dy / divisor| over its n windows."""
    return Call([("dy", dy)], {"input_sizes": input_sizes, "window_size": window_size, "strides": strides,
                               "start_padding": start_padding, "end_padding": end_padding,
                               "include_padding": include_padding}, device)


def _max_arguments(d: MaxPoolingGradOperatorDesc) -> dict:
    return {"window_size": d.window_size, "strides": d.strides, "start_padding": d.start_padding,
            "end_padding": d.end_padding, "dilations": d.dilations}


def _average_arguments(d: AveragePoolingGradOperatorDesc) -> dict:
    return {"input_sizes": d.output_gradient_tensor.sizes, "window_size": d.window_size, "strides": d.strides,
            "start_padding": d.start_padding, "end_padding": d.end_padding, "include_padding": d.include_padding}


# ============================================================================ the references
def _windows(where: str, sizes, window_size, strides, start_padding, end_padding, dilations):
    """The forward windows over a tensor of `sizes`: (the per-axis fields, _gather's flat
    indices [N, C, out..., positions] and validity)."""
    f = _fields(where, sizes, window_size, strides, start_padding, end_padding, dilations)
    args = (f["window_size"], f["strides"], f["start_padding"], f["end_padding"], f["dilations"])
    _, flats, valid = window_elements(np.zeros(sizes, np.int8), *args)
    return args, flats, valid


def _scatter(sizes, flats, weights, dtype) -> np.ndarray:
    """The float64 sums of `weights` at the flat indices `flats` over a tensor of `sizes`,
    rounded once to dtype."""
    dx = np.zeros(int(np.prod(sizes)), np.float64)
    with np.errstate(all="ignore"):
        np.add.at(dx, flats.reshape(-1), weights.reshape(-1))
        return dx.reshape(sizes).astype(dtype)


def max_reference(x, dy, window_size=None, *, strides=None, start_padding=None, end_padding=None, dilations=None):
    """DML_OPERATOR_MAX_POOLING_GRAD on numpy arrays: the forward reference's maxima (the first
    of ties, NaN first) as flat indices, dy summed at them in float64 (np.add.at), rounded
    once to dy's type."""
    x, dy = np.asarray(x), np.asarray(dy)
    f = _fields("max_pooling_grad", x.shape, window_size, strides, start_padding, end_padding, dilations)
    args = (f["window_size"], f["strides"], f["start_padding"], f["end_padding"], f["dilations"])
    _, index = first_max(*window_elements(x, *args))
    if index.shape != dy.shape:
        raise ValueError(f"max_pooling_grad: dy of shape {list(dy.shape)}, the forward output is {list(index.shape)}")
    return _scatter(x.shape, index, dy.astype(np.float64), dy.dtype)


max_reference.__name__ = max_reference.__qualname__ = "max_pooling_grad"


def _divisors(valid: np.ndarray, include_padding: bool) -> np.ndarray:
    return np.full(valid.shape[:-1], valid.shape[-1]) if include_padding else valid.sum(axis=-1)


def average_reference(dy, input_sizes, window_size=None, *, strides=None, start_padding=None, end_padding=None,
                      include_padding=False):
    """DML_OPERATOR_AVERAGE_POOLING_GRAD on numpy arrays: each window's dy / its divisor added
    (float64, np.add.at) to the window's input elements, rounded once to dy's type."""
    dy = np.asarray(dy)
    sizes = tuple(int(n) for n in input_sizes)
    _, flats, valid = _windows("average_pooling_grad", sizes, window_size, strides, start_padding, end_padding, None)
    if valid.shape[:-1] != dy.shape[2:]:
        raise ValueError(f"average_pooling_grad: dy of shape {list(dy.shape)} is not the forward output's")
    share = dy.astype(np.float64) / _divisors(valid, bool(include_padding))
    weights = np.where(valid, share[..., None], 0.0)
    return _scatter(sizes, flats, weights, dy.dtype)


average_reference.__name__ = average_reference.__qualname__ = "average_pooling_grad"


# ============================================================================ precision
UNIT, TINY = 2.0**-24, 2.0**-126


def _finish(e: np.ndarray, y: np.ndarray, dtype) -> np.ndarray:
    """The tolerance e of exact results y: float16's rounding added, any value near the range's end."""
    top = float(np.finfo(dtype).max)
    with np.errstate(all="ignore"):
        if dtype == np.float16:
            e = e + np.spacing(np.minimum(np.abs(y), 65504).astype(np.float16)).astype(np.float64)
        return np.where(np.abs(y) + e >= min(top, float(np.finfo(np.float32).max) / 2), np.inf,
                        np.nan_to_num(e, nan=np.inf))


def max_tolerance(expected, inputs, arguments):
    """The documented precision (module docstring), per element."""
    x, dy = np.asarray(inputs[0]), np.asarray(inputs[1])
    f = _fields("max_pooling_grad", x.shape, arguments.get("window_size"), arguments.get("strides"),
                arguments.get("start_padding"), arguments.get("end_padding"), arguments.get("dilations"))
    args = (f["window_size"], f["strides"], f["start_padding"], f["end_padding"], f["dilations"])
    _, index = first_max(*window_elements(x, *args))
    with np.errstate(all="ignore"):
        g = dy.astype(np.float64)
        n = _scatter(x.shape, index, np.ones(index.shape), np.float64)
        total = _scatter(x.shape, index, np.abs(g), np.float64)
        y = _scatter(x.shape, index, g, np.float64)
        e = 1.01 * np.maximum(n - 1, 0) * UNIT * total + n * TINY
        e = np.where(np.isfinite(total), e, np.inf)
    return _finish(e, y, np.asarray(expected).dtype)


def average_tolerance(expected, inputs, arguments):
    """The documented precision (module docstring), per element."""
    dy = np.asarray(inputs[0])
    sizes = tuple(int(v) for v in arguments["input_sizes"])
    _, flats, valid = _windows("average_pooling_grad", sizes, arguments.get("window_size"), arguments.get("strides"),
                               arguments.get("start_padding"), arguments.get("end_padding"), None)
    with np.errstate(all="ignore"):
        share = dy.astype(np.float64) / _divisors(valid, bool(arguments.get("include_padding", False)))
        n = _scatter(sizes, flats, np.broadcast_to(valid, flats.shape).astype(np.float64), np.float64)
        total = _scatter(sizes, flats, np.where(valid, np.abs(share)[..., None], 0.0), np.float64)
        y = _scatter(sizes, flats, np.where(valid, share[..., None], 0.0), np.float64)
        e = 1.01 * (n + 4) * UNIT * total + (n + 1) * TINY
        e = np.where(np.isfinite(total), e, np.inf)
    return _finish(e, y, np.asarray(expected).dtype)


def _sample_max(desc, rng) -> list:
    """x: small integers (ties in most windows: the tie rule decides), now and then NaN; dy:
    uniform in [-1, 1]."""
    x, dy = desc.input_tensor, desc.input_gradient_tensor
    values = rng.integers(-3, 4, x.required_elements).astype(np.float64)
    values[rng.random(x.required_elements) < 0.02] = np.nan
    return [values.astype(x.data_type.numpy), rng.uniform(-1, 1, dy.required_elements).astype(dy.data_type.numpy)]


def _sample_average(desc, rng) -> list:
    dy = desc.input_gradient_tensor
    return [rng.uniform(-1, 1, dy.required_elements).astype(dy.data_type.numpy)]


def _traffic(desc) -> int:
    """Every input and output element once (windows that overlap read no more)."""
    tds = [getattr(desc, "input_tensor", None), desc.input_gradient_tensor, desc.output_gradient_tensor]
    return sum(t.element_count * t.data_type.size for t in tds if t is not None)


# ============================================================================ the planner's problem
def problem(desc) -> Problem:
    maxed = isinstance(desc, MaxPoolingGradOperatorDesc)
    return Problem(MAX if maxed else AVERAGE, "MAX" if maxed else "AVERAGE",
                   desc.input_tensor if maxed else None, desc.input_gradient_tensor, desc.output_gradient_tensor,
                   desc.window_size, desc.strides, desc.start_padding, _dilations(desc),
                   bool(getattr(desc, "include_padding", False)))


PLANNER = ProblemPlanner(problem, family.FAMILY)


# ============================================================================ the command line
_CLI_ARGS = (CliArg("--window", "the window per spatial axis, comma-separated (default 3 per axis)"),
             CliArg("--strides", "the window's strides per spatial axis (default 1)"),
             CliArg("--pads", "start and end padding, one value for every spatial axis (default 0)"))


def _cli_fields(x: TensorDesc, o: dict, dilated: bool):
    """(window, keyword fields) of `gpudml shader`'s options; --shape is the forward input's."""
    spatial = max(0, x.rank - 2)
    pad = int(o["pads"][0]) if o.get("pads") else 0
    kwargs = {"strides": o.get("strides") or None, "start_padding": pad, "end_padding": pad}
    if dilated:
        kwargs["dilations"] = o.get("dilations") or None
    return o.get("window") or (3,) * spatial, kwargs


def _forward_dy(x: TensorDesc, window, kwargs) -> TensorDesc:
    """The forward output's desc (the gradient's) for input x (sizes of at least 1)."""
    f = _fields("gpudml shader", x.sizes, window, kwargs.get("strides"), kwargs["start_padding"],
                kwargs["end_padding"], kwargs.get("dilations"))
    out = list(x.sizes[:2])
    for i in range(max(0, x.rank - 2)):
        try:
            out.append(max(1, output_size(x.sizes[i + 2], f["window_size"][i], f["strides"][i],
                                          f["start_padding"][i], f["end_padding"][i], f["dilations"][i])))
        except (IndexError, ZeroDivisionError):
            out.append(1)
    return TensorDesc(x.data_type, out)


def _max_from_cli(x: TensorDesc, o: dict):
    window, kwargs = _cli_fields(x, o, True)
    return max_infer(x, _forward_dy(x, window, kwargs), window, **kwargs)


def _average_from_cli(x: TensorDesc, o: dict):
    window, kwargs = _cli_fields(x, o, False)
    return average_infer(_forward_dy(x, window, kwargs), x.sizes, window, **kwargs,
                         include_padding=bool(o.get("include_padding") or 0))


_MAX_PAGE, _AVERAGE_PAGE = ("ns-directml-dml_max_pooling_grad_operator_desc.md",
                            "ns-directml-dml_average_pooling_grad_operator_desc.md")


def _f32(rows) -> np.ndarray:
    return np.array(rows, np.float32).reshape(1, 1, len(rows), len(rows[0]))


MAX_SPEC = OpSpec(
    name=MAX, key="max_pooling_grad", desc=MaxPoolingGradOperatorDesc, support=MAX_SUPPORT, infer_output=max_infer,
    validate=_validate_max, reference=max_reference, functional=max_pooling_grad, tensors=("x", "dy"),
    arguments=_max_arguments, planner=PLANNER,
    cli=Cli(_CLI_ARGS + (CliArg("--dilations", "dilations per spatial axis (default 1)"),), _max_from_cli,
            "--shape 32,64,56,56 --window 3,3 --strides 2,2 --pads 1"),
    page="DML_MAX_POOLING_GRAD_OPERATOR_DESC", tolerance=max_tolerance, traffic=_traffic, sample=_sample_max,
    examples=(Example("max_pooling_grad-1", _f32([[1, 2, 3], [2, 4, 2], [5, 6, 7]]),
                      {"dy": _f32([[1, 2], [4, 5]]), "window_size": 2},
                      _f32([[0, 0, 0], [0, 3, 0], [0, 4, 5]]), _MAX_PAGE),),
)

AVERAGE_SPEC = OpSpec(
    name=AVERAGE, key="average_pooling_grad", desc=AveragePoolingGradOperatorDesc, support=AVERAGE_SUPPORT,
    infer_output=average_infer, validate=_validate_average, reference=average_reference,
    functional=average_pooling_grad, tensors=("dy",), arguments=_average_arguments, planner=PLANNER,
    cli=Cli(_CLI_ARGS + (CliArg("--include-padding", "1: the padding counts in the divisor", "number"),),
            _average_from_cli, "--shape 32,64,56,56 --window 2,2 --strides 2,2"),
    page="DML_AVERAGE_POOLING_GRAD_OPERATOR_DESC", tolerance=average_tolerance, traffic=_traffic,
    sample=_sample_average,
    examples=(Example("average_pooling_grad-1", _f32([[1, 2], [3, 4]]),
                      {"input_sizes": [1, 1, 3, 3], "window_size": 2},
                      _f32([[0.25, 0.75, 0.5], [1, 2.5, 1.5], [0.75, 1.75, 1]]), _AVERAGE_PAGE),),
)

SPECS = (MAX_SPEC, AVERAGE_SPEC)
__all__ = ["SPECS"]
