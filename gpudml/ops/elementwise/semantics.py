"""What a row's description means (the package docstring's shared semantics): the desc base
class (`ElementWiseDesc`), `validate`, `problem` (what the element-wise kernels compute), the numpy
reference (`compute`, `reference_of`) and the documented precision (`tolerance_of`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ...errors import InvalidArgumentError
from ...kernels.elementwise import Attribute, FusedProblem, Problem, value_kind
from ...tensor_desc import TensorDesc, check_same_rank, check_tensor_desc
from ...types import F64, DataType, FeatureLevel
from ..precision import SUBNORMAL, as_float64, bound_of, spread, ulp
from .common import FLOATS, grad_bounds, integer_bounds
from .fused import FusedActivation, as_activation
from .quantize import cast_dtype
from .row import Row, ScaleBias, argument_name, signature_of


@dataclass(frozen=True)
class ElementWiseDesc:
    """What every element-wise and activation desc shares: its row (`ROW`, a class
    attribute). The fields are the row's (desc_class)."""

    ROW: ClassVar[Row]

    def __post_init__(self):
        row = self.ROW
        if row.scale_bias:
            object.__setattr__(self, "scale_bias", ScaleBias.coerce(self.scale_bias, f"{row.op}: scale_bias"))
        if row.fused_activation:
            object.__setattr__(self, "fused_activation",
                               FusedActivation.coerce(self.fused_activation, f"{row.op}: fused_activation"))
        out_type = getattr(getattr(self, row.output), "data_type", None)  # (not a TensorDesc: validation says so)
        if row.min_max_data_type:
            given = self.min_max_data_type
            object.__setattr__(self, "min_max_data_type", out_type if given is None else
                               DataType.parse(given, f"{row.op}: min_max_data_type"))
        value_type = self.min_max_data_type if row.min_max_data_type else out_type
        for a in row.attributes:
            object.__setattr__(self, a.name, a.check(getattr(self, a.name), a.name, row.op, value_type))

    @property
    def input_descs(self) -> tuple[TensorDesc | None, ...]:
        """The input tensors (None for an optional one left out)."""
        return tuple(getattr(self, f) for f in self.ROW.tensors)


def validate(support, desc: ElementWiseDesc, level: FeatureLevel) -> None:
    """The pages' rules: valid tensors of one DimensionCount and one set of sizes, one data
    type (the logical operators' outputs the table's), the support row; a fused activation
    only on FLOAT32 and FLOAT16 outputs; ScaleBias on float tensors only."""
    row = desc.ROW
    op = row.op
    named = {f: getattr(desc, f) for f in row.fields}
    named = {f: td for f, td in named.items() if td is not None or f not in row.optional}
    for field, td in named.items():
        check_tensor_desc(op, field, td, is_output=field == row.output)
    rank = check_same_rank(op, named)
    first_field, first = next(iter(named.items()))
    mixed = dict(row.mixed)
    for field, td in named.items():
        if td.sizes != first.sizes:
            raise InvalidArgumentError(
                f"{op}: {field}.sizes {list(td.sizes)} must equal {first_field}.sizes {list(first.sizes)} (a broadcast "
                f"is a stride of 0 in the description)")
    for group in row.type_groups():
        present = [f for f in group if f in named]
        for field in present[1:]:
            want = named[present[0]].data_type
            if named[field].data_type == want or (field in mixed and level >= mixed[field]):
                continue
            later = f" at {FeatureLevel(level).name}; it needs {mixed[field].name} or later" if field in mixed else ""
            raise InvalidArgumentError(
                f"{op}: {field}.data_type {named[field].data_type.name} must equal {present[0]}.data_type "
                f"{want.name}{later}")
    if row.min_max_data_type and desc.min_max_data_type != named[row.output].data_type:
        raise InvalidArgumentError(
            f"{op}: min_max_data_type {desc.min_max_data_type.name} must match {row.output}.data_type "
            f"{named[row.output].data_type.name}")
    if row.check is not None:
        row.check(op, named, level)
    support.check(level, rank, {f: td.data_type for f, td in named.items()})
    out_type = named[row.output].data_type
    if row.fused_activation and desc.fused_activation is not None and out_type not in FLOATS:
        raise InvalidArgumentError(
            f"{op}: fused_activation needs a FLOAT32 or FLOAT16 output_tensor, not {out_type.name}")
    for a in row.attributes:
        if a.kind == "float":
            a.check_level(getattr(desc, a.name), op, level)
    if row.scale_bias and desc.scale_bias is not None and not first.data_type.is_float:
        raise InvalidArgumentError(f"{op}: scale_bias applies to float tensors only, not {first.data_type.name}")


def read_broadcast(td: TensorDesc, sizes) -> TensorDesc:
    """`td` read at `sizes` (its rank): each axis of size 1 against a larger one with stride 0 (no copy)."""
    if tuple(td.sizes) == tuple(sizes):
        return td
    strides = [0 if n == 1 and want != 1 else s for n, s, want in zip(td.sizes, td.effective_strides, sizes)]
    return TensorDesc(td.data_type, sizes, strides, total_tensor_size_in_bytes=td.total_tensor_size_in_bytes)


def problem(desc: ElementWiseDesc) -> Problem | FusedProblem:
    """What the element-wise kernel computes for `desc`."""
    row = desc.ROW
    output = getattr(desc, row.output)
    inputs = tuple(t for t in desc.input_descs if t is not None)
    dt = inputs[0].data_type
    scale_bias = getattr(desc, "scale_bias", None)
    fused = getattr(desc, "fused_activation", None)
    activation, act_attrs = None, ()
    if fused is not None:
        activation = as_activation(fused.row.wgsl["float"])
        act_attrs = tuple(Attribute(k, "f32", v) for k, v in fused.attributes)
    if callable(row.wgsl):  # a formula built from the desc (CAST's per pair of types)
        expression = row.wgsl(desc)
    else:
        expression = row.formula(dt, *[t.data_type for t in inputs[1:]])
    if isinstance(expression, dict):  # one formula per value of the row's enum
        enum_attr = next(a for a in row.attributes if a.kind == "enum")
        expression = expression[getattr(desc, enum_attr.name)]
    copy = (row.copy and scale_bias is None) or (row.cast and dt == output.data_type)

    def kind(t: TensorDesc) -> str:  # a bit operation's values, and a cast's FLOAT64, are bits
        return "uint" if row.bits or (row.cast and t.data_type == F64) else value_kind(t.data_type)
    return Problem(
        op=row.op, inputs=inputs, output=output,
        kinds=tuple(kind(t) for t in inputs), out_kind=kind(output),
        expression=expression,
        attributes=_attributes(row, desc, dt),
        scale_bias=None if scale_bias is None else (scale_bias.scale, scale_bias.bias),
        activation=activation, activation_attributes=act_attrs, copy=copy)


def _attributes(row: Row, desc, data_type: DataType) -> tuple[Attribute, ...]:
    """The formula's attributes: FLOATs, or for an integer tensor the integer bounds of
    CLIP (integer_bounds)."""
    values = {a.name: getattr(desc, a.name) for a in row.attributes if a.kind != "enum"}
    if row.key == "clip0" and not data_type.is_float:
        lo, hi = integer_bounds(values["min"], values["max"], data_type.numpy)
        return (Attribute("min", "value", lo), Attribute("max", "value", hi))
    if row.key == "clip_grad0" and not data_type.is_float:
        lo, lo_on, hi, hi_on = grad_bounds(values["min"], values["max"], data_type.numpy)
        return (Attribute("lo", "value", lo), Attribute("lo_on", "f32", lo_on), Attribute("hi", "value", hi),
                Attribute("hi_on", "f32", hi_on))
    if row.int_attributes is not None and not data_type.is_float:
        return row.int_attributes(values, data_type.numpy)
    kinds = {a.name: "value" if a.kind == "value" else "f32" for a in row.attributes}
    return tuple(Attribute(k, kinds[k], v) for k, v in values.items())


def _activate(fused: FusedActivation | None, y: np.ndarray) -> np.ndarray:
    if fused is None:
        return y
    return fused.row.numpy(y, **dict(fused.attributes))


def compute(row: Row, arrays, scale_bias=None, fused=None, **attributes) -> np.ndarray:
    """The row's function on broadcast `arrays`: floats in float64, unrounded (the
    reference rounds); integers exactly, wrapped in their type."""
    given = iter(np.broadcast_arrays(*[np.asarray(a) for a in arrays if a is not None]))
    arrays = [None if a is None else next(given) for a in arrays]  # (None: an optional input left out)
    dtype = arrays[0].dtype
    with np.errstate(all="ignore"):
        if row.bits:  # the elements' bits, as unsigned integers of their width
            return np.asarray(row.numpy(*[a.view(f"u{a.dtype.itemsize}") for a in arrays], **attributes))
        if row.raw:
            return np.asarray(row.numpy(*arrays, **attributes))
        if dtype.kind == "f":
            xs = [as_float64(a) for a in arrays]
            if scale_bias is not None:  # computed in the kernel's float type: beyond float32's range, +-inf
                xs[0] = xs[0] * scale_bias.scale + scale_bias.bias
                if dtype != np.float64:
                    xs[0] = xs[0].astype(np.float32).astype(np.float64)
            return _activate(fused, np.asarray(row.numpy(*xs, **attributes), np.float64))
        return np.asarray(row.numpy(*arrays, **attributes))


def reference_of(row: Row) -> Callable:
    def reference(*args, **kwargs):
        bound = signature_of(row, with_device=False).bind(*args, **kwargs)
        bound.apply_defaults()
        values = dict(bound.arguments)
        given = {f: values.pop(argument_name(f)) for f in row.tensors}
        arrays = [None if v is None and f in row.optional else np.asarray(v) for f, v in given.items()]
        out_type = values.pop("output_data_type", None)
        if row.cast:
            out_type = cast_dtype(values.pop("dtype"), row.functional)
        scale_bias = ScaleBias.coerce(values.pop("scale_bias", None), "scale_bias")
        fused = FusedActivation.coerce(values.pop("fused_activation", None))
        for a in row.attributes:  # enums as members, scalars in the tensor's type
            if a.kind != "float":
                values[a.name] = a.check(values[a.name], a.name, row.op, DataType.from_numpy(arrays[0].dtype))
        if row.copy and scale_bias is None:  # a copy: bits through (NaN payloads too)
            return np.array(arrays[0])
        if row.cast or row.raw:
            values["output_data_type"] = out_type
        y = compute(row, arrays, scale_bias, fused, **values)
        if row.out_type is not None:  # its numpy gives the output's type
            return y
        with np.errstate(all="ignore"):
            if out_type is not None:
                want = np.dtype(DataType.parse(out_type, "output_data_type").numpy)
            else:  # the first input's type (a mixed row's too), or out_from's
                source = arrays[row.tensors.index(row.out_from)] if row.out_from else arrays[0]
                want = source.dtype
            if row.bits and y.dtype.itemsize == want.itemsize:
                return y.view(want)
            return y.astype(want)
    reference.__name__ = reference.__qualname__ = row.functional
    reference.__signature__ = signature_of(row, with_device=False)
    reference.__doc__ = (f"DML_{row.dml}: {row.summary}, on numpy-broadcast inputs; floats computed in float64 and "
                         f"rounded once to the type, integers wrapping in their type.")
    return reference


def tolerance_of(row: Row) -> Callable:
    """The row's documented precision (the package docstring), per element: the row's own
    error (ULPs of the compute type at the exact result, and an absolute part); the
    rounding of ScaleBias's x * scale + bias (1 ULP of each term) and the row's error
    propagated through the fused activation, by evaluating the functions at the ends of
    their inputs' error; float16's rounding of the result (1 ULP of float16); the
    subnormals an adapter may flush (results below the compute type's smallest normal,
    and the result of the inputs, and of x * scale + bias, flushed); where the exact result rounds to +-inf in the
    output type within the error, any value (the kernel may round below the limit); where
    the row's absolute bound is infinite (an infinite attribute in it: SCALED_ELU's
    |alpha gamma| 2^-22 with gamma = inf), any value, NaN included (inf times a difference
    the exact result makes 0 and the kernel's exp may not)."""
    def tolerance(expected: np.ndarray, inputs, arguments: dict):
        if expected.dtype.kind != "f" or row.bits or (row.copy and arguments.get("scale_bias") is None):
            return None
        if row.cast:  # exact; NaN any NaN, and a float32 result below 2^-126 may be flushed to 0
            return np.full(expected.shape, 2.0**-126 if expected.dtype == np.float32 else 0.0)
        arrays = np.broadcast_arrays(*[np.asarray(x) for x in inputs])
        attrs = {k: v for k, v in arguments.items() if k not in ("scale_bias", "fused_activation", "output_data_type")}
        sb = ScaleBias.coerce(arguments.get("scale_bias"), "scale_bias")
        fused = FusedActivation.coerce(arguments.get("fused_activation"))
        compute_type = np.dtype(np.float64) if expected.dtype == np.float64 else np.dtype(np.float32)
        tiny = SUBNORMAL[compute_type]
        with np.errstate(all="ignore"):
            xs = [as_float64(a) for a in arrays]
            f = lambda x0: np.asarray(row.numpy(x0, *xs[1:], **attrs), np.float64)  # noqa: E731
            e = np.zeros(xs[0].shape)
            if sb is not None:
                product = xs[0] * sb.scale
                xs[0] = product + sb.bias
                if compute_type == np.float32:
                    xs[0] = xs[0].astype(np.float32).astype(np.float64)
                e = spread(f, xs[0], ulp(product, compute_type) + ulp(xs[0], compute_type), f(xs[0]))
                top = float(np.finfo(compute_type).max)  # x * scale + bias beyond it: +-inf in the kernel
                e = np.where((np.abs(product) > top) | (np.abs(xs[0]) > top), np.inf, e)
            y = f(xs[0])
            own = bound_of(row.absolute, xs, attrs)
            unbounded = np.isposinf(own)  # an infinite attribute in the bound: any value (NaN included)
            e = e + bound_of(row.ulps, xs, attrs) * ulp(y, compute_type) + own
            if fused is not None:
                g_row, g_attrs = fused.row, dict(fused.attributes)
                g = lambda v: np.asarray(g_row.numpy(v, **g_attrs), np.float64)  # noqa: E731
                z = g(y)
                e = (spread(g, y, e, z) + bound_of(g_row.ulps, [y], g_attrs) * ulp(z, compute_type)
                     + bound_of(g_row.absolute, [y], g_attrs))
                y = z
            if row.ulps or row.absolute:  # the reference's own rounding to the output type
                e = e + 0.5 * ulp(y, compute_type)
            e = e + tiny
            if expected.dtype == np.float16:
                e = e + np.spacing(np.minimum(np.abs(y), 65504).astype(np.float16)).astype(np.float64)
            flushed = [np.where(np.abs(x) < tiny, np.copysign(0.0, x), x).astype(a.dtype) if a.dtype.kind == "f" else a
                       for a, x in zip(arrays, (as_float64(a) for a in arrays))]
            e = e + np.nan_to_num(np.abs(compute(row, flushed, sb, fused, **attrs) - y), nan=0.0, posinf=np.inf)
            if sb is not None:  # x * scale + bias is the function's input: flushed where subnormal too
                z = f(np.where(np.abs(xs[0]) < tiny, np.copysign(0.0, xs[0]), xs[0]))
                z = z if fused is None else np.asarray(fused.row.numpy(z, **dict(fused.attributes)), np.float64)
                e = e + np.nan_to_num(np.abs(z - y), nan=0.0, posinf=np.inf)
            limit = float(np.finfo(expected.dtype).max)
            edge = np.isinf(expected.astype(np.float64)) & np.isfinite(y) & (np.abs(y) <= limit + 2 * e)
            return np.where(edge | unbounded, np.inf, e)
    return tolerance
