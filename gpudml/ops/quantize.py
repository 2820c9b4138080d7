"""DML_OPERATOR_QUANTIZE (FL 6.3): y = clamp(round(x / scale) + zero_point, the output type's
range), the scale and the zero point read per tensor, per axis or per block of consecutive
elements along axes. The element-wise family runs it (kernels/elementwise.py: the formula of
ELEMENT_WISE_QUANTIZE_LINEAR, `quantize_f32`, over the quantization tensors read at the
input's coordinates: a blocked axis is split in two, [blocks, block], the quantization
tensors read along the second by stride 0; no copy of the scale is made).

What the page says (sdk-api's DML_QUANTIZE_OPERATOR_DESC, the 02/2025 version: its
descriptions are "TBD"), as implemented:

- InputTensor: FLOAT32 or FLOAT16, 1 to 8 dimensions; OutputTensor: INT8, UINT8, INT4 or
  UINT4, the input's sizes; QuantizationTensors: FLOAT32, FLOAT16, INT8, UINT8 (INT4, UINT4);
  every tensor one DimensionCount.
- QuantizationType (gpudml.QuantizationType): SCALE (QuantizationTensors holds a scale) or
  SCALE_ZERO_POINT (a scale, then a zero point); NONE is refused (nothing to quantize by).

Where the page is silent, gpudml's choices (those of ELEMENT_WISE_QUANTIZE_LINEAR's page and
of ONNX's QuantizeLinear, which ONNX Runtime's DirectML provider maps onto this operator):

- the scale has the input's type (ONNX's rule; ELEMENT_WISE_QUANTIZE_LINEAR's for FLOAT16
  inputs) and the zero point the output's;
- a quantization tensor's size along each axis is 1 (read broadcast), the input's (one value
  per element) or a divisor d of it (blocks of input size / d consecutive elements share a
  value: ONNX's blocked quantization, its block_size the quotient); the zero point has the
  scale's sizes. A block size that does not divide the axis is refused;
- rounding: x / scale rounded to float32 and then to an integer half to even (ONNX's and
  onnxruntime's arithmetic); NaN quantizes to 0 + zero_point, x / 0 saturates; the output
  saturates to its type's range. A scale's values are data: the functional form refuses a
  host scale that is zero, negative or NaN before any GPU work (ONNX's rule: a positive
  scale); a scale already on the device is not read back to be checked (the kernel's result
  for it is the formula's: saturation, NaN 0).

INT4 and UINT4 outputs (kernels/quantize4.py) take DEQUANTIZE's one representation of 4-bit
tensors (ops/dequantize.py): gpudml has no 4-bit DataType, so a 4-bit tensor is its bytes, an
INT8 (INT4) or UINT8 (UINT4) TensorDesc of the input's sizes but the last, which is
(n + 1) // 2: two elements a byte, the even one in the low nibble (ONNX's packing), each row
of the last axis starting on a byte; a row of odd length leaves its last byte's high nibble 0
(ONNX's rule for a tensor of odd element count: for a 1-D tensor, or any whose last size is
even, the bytes are exactly ONNX's). A last size of 1 is refused for 4-bit outputs: its
bytes would have the 8-bit output's sizes, which say 8-bit (reshape so the last axis holds 2
or more). Values saturate to [-8, 7] (INT4) or [0, 15] (UINT4). A 4-bit output's zero point is
bytes too: one value a byte, the scale's sizes (the low nibble read, sign-extended for INT4;
the functional form refuses host values outside the 4-bit range, and takes an ml_dtypes
int4/uint4 array as its values), or packed two a byte (the scale's sizes with the last halved,
where it is even). dml.quantize(x, scale, dtype="int4") returns the bytes' Tensor, which
dml.dequantize(..., bits=4) reads as it is; gpudml.unpack4 gives the values of its readback
(an ml_dtypes int4/uint4 array of the logical shape).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels import quantize4
from ..kernels.elementwise import ElementWisePlanner, Problem, value_kind
from ..tensor_desc import TensorDesc, as_int, check_same_rank, check_tensor_desc
from ..types import F16, F32, I8, U8, DataType, FeatureLevel, QuantizationType
from .dequantize import four_name, pack4, unpack4
from .spec import Call, Cli, CliArg, OpSpec, support_table

OP = "Quantize"
FL = FeatureLevel
FLOATS = frozenset({F32, F16})
OUT_TYPES = frozenset({I8, U8})  # (and INT4/UINT4 as their bytes: the module docstring)
SUPPORT = support_table(OP, ("input_tensor", "quantization_tensors", "output_tensor"), [
    (FL.FL_6_3, (1, 8), FLOATS, FLOATS | OUT_TYPES, OUT_TYPES),
])
#: The quantization tensors each QuantizationType holds.
COUNTS = {QuantizationType.SCALE: 1, QuantizationType.SCALE_ZERO_POINT: 2}
#: DirectML's 4-bit types, which gpudml describes by their bytes' type (the module docstring).
FOUR_BIT = {"INT4": I8, "UINT4": U8}
#: A 4-bit output's range, by its bytes' type.
FOUR_RANGE = {I8: (-8, 7), U8: (0, 15)}


@dataclass(frozen=True)
class QuantizeOperatorDesc:
    """DML_QUANTIZE_OPERATOR_DESC: `quantization_tensors` the scale (SCALE) or the scale and
    the zero point (SCALE_ZERO_POINT), each of the input's DimensionCount, each size 1, the
    input's or a divisor of it (blocks)."""

    input_tensor: TensorDesc
    quantization_type: QuantizationType
    quantization_tensors: tuple[TensorDesc, ...]
    output_tensor: TensorDesc

    def __post_init__(self):
        object.__setattr__(self, "quantization_type",
                           QuantizationType.coerce(self.quantization_type, f"{OP}: quantization_type"))
        tensors = self.quantization_tensors
        if isinstance(tensors, TensorDesc) or not isinstance(tensors, (list, tuple)):
            raise InvalidArgumentError(f"{OP}: quantization_tensors: expected a sequence of TensorDescs, got "
                                       f"{type(tensors).__name__}")
        object.__setattr__(self, "quantization_tensors", tuple(tensors))

    @property
    def scale_tensor(self) -> TensorDesc:
        return self.quantization_tensors[0]

    @property
    def bits(self) -> int:
        """4 where the output holds two elements a byte (its last size (n + 1) // 2 of the
        input's n, not n), else 8."""
        n, m = self.input_tensor.sizes[-1], self.output_tensor.sizes[-1]
        return 4 if m != n and m == (n + 1) // 2 else 8

    @property
    def zero_packed(self) -> bool:
        """A 4-bit output's zero point packed two a byte (the scale's last size halved)."""
        zero = self.zero_point_tensor
        return self.bits == 4 and zero is not None and tuple(zero.sizes) != tuple(self.scale_tensor.sizes)

    @property
    def zero_point_tensor(self) -> TensorDesc | None:
        return self.quantization_tensors[1] if len(self.quantization_tensors) > 1 else None


# ---------------------------------------------------------------------------- shapes
def quantization_sizes(x_shape, q_shape, axis=None, block_size=None, where: str = "quantize",
                       name: str = "scale") -> tuple[int, ...]:
    """The sizes, at x's rank, of a scale (or zero point) of shape `q_shape` as the functional
    form takes it: one element (per tensor), a 1-D tensor of x.shape[axis] elements (per axis,
    `axis` given), x's shape but x.shape[axis] / block_size along `axis` (`block_size` given;
    `axis` default 1 as ONNX's), or, neither given, any shape of x's rank whose sizes are 1,
    x's or a divisor of x's (the desc's own rule, validate names what does not fit)."""
    x_shape, q_shape = tuple(x_shape), tuple(q_shape)
    rank = len(x_shape)
    count = int(np.prod(q_shape, dtype=np.int64))
    if axis is not None or block_size is not None:
        a = 1 if axis is None else as_int(axis, f"{where}: axis")
        if not -rank <= a < rank:
            raise InvalidArgumentError(f"{where}: axis = {a} is out of range for x of {rank} dimensions")
        a %= rank
    if block_size is not None:
        b = as_int(block_size, f"{where}: block_size")
        n = x_shape[a]
        if b < 1 or n % b:
            raise InvalidArgumentError(
                f"{where}: block_size = {b} must be a positive divisor of x.shape[{a}] = {n} (blocked quantization: "
                f"blocks of block_size consecutive elements along axis {a} share a scale)")
        want = x_shape[:a] + (n // b,) + x_shape[a + 1:]
        if q_shape != want:
            raise InvalidArgumentError(
                f"{where}: {name} shape {list(q_shape)} must be x's {list(x_shape)} with x.shape[{a}] / block_size = "
                f"{n} / {b} = {n // b} along axis {a}: {list(want)} (blocked quantization)")
        return want
    if count == 1:
        return (1,) * rank
    if axis is not None:
        if len(q_shape) != 1 or q_shape[0] != x_shape[a]:
            raise InvalidArgumentError(
                f"{where}: {name} shape {list(q_shape)} must be one element or 1-D of x.shape[{a}] = {x_shape[a]} "
                f"elements (per-axis quantization along axis {a})")
        return tuple(x_shape[a] if k == a else 1 for k in range(rank))
    if len(q_shape) != rank:
        raise InvalidArgumentError(
            f"{where}: {name} shape {list(q_shape)}: without axis or block_size, the scale must hold one element or "
            f"have x's {rank} dimensions (x.shape {list(x_shape)})")
    return q_shape


def _at_rank(td: TensorDesc, sizes) -> TensorDesc:
    """`td` re-described at `sizes` (the same elements: one element, or a 1-D tensor placed
    on one axis, its stride there and 0 elsewhere)."""
    sizes = tuple(sizes)
    if tuple(td.sizes) == sizes:
        return td
    if td.element_count == 1:
        strides = [0] * len(sizes)
    else:
        (stride,) = [s for n, s in zip(td.sizes, td.effective_strides) if n != 1] or [0]
        strides = [stride if n != 1 else 0 for n in sizes]
    return TensorDesc(td.data_type, sizes, strides, total_tensor_size_in_bytes=td.total_tensor_size_in_bytes)


def out_type(dtype, where: str = "quantize") -> DataType:
    """The output's DataType from `dtype` (INT4, UINT4: their bytes' type, INT8, UINT8)."""
    return parse_dtype(dtype, where)[0]


def parse_dtype(dtype, where: str = "quantize") -> tuple[DataType, int]:
    """`dtype` as (the output's DataType, bits): "int4"/"uint4" (or ml_dtypes' int4/uint4
    numpy dtypes) are 4-bit, their bytes INT8/UINT8; the rest DataType.parse's, 8-bit."""
    name = dtype.strip().upper() if isinstance(dtype, str) else (four_name(dtype) or "").upper()
    if name in FOUR_BIT:
        return FOUR_BIT[name], 4
    return DataType.parse(dtype, f"{where}: dtype"), 8


def four_sizes(sizes, where: str = "quantize") -> list[int]:
    """A 4-bit tensor's bytes' sizes: the last (n + 1) // 2 (the module docstring); a last
    size of 1 refused."""
    sizes = list(sizes)
    if sizes[-1] < 2:
        raise InvalidArgumentError(
            f"{where}: a 4-bit output of sizes {sizes}: its last size must be 2 or more (two elements a byte; the "
            f"bytes of a last size of 1 have the 8-bit output's sizes): reshape x so its last axis holds 2 or more")
    return sizes[:-1] + [(sizes[-1] + 1) // 2]


def infer_output(input_tensor: TensorDesc, scale_tensor: TensorDesc, zero_point_tensor: TensorDesc | None = None,
                 *, dtype, axis=None, block_size=None) -> QuantizeOperatorDesc:
    """The desc of the functional call: the scale (and zero point) at x's rank
    (`quantization_sizes`), the output x's sizes of type `dtype`. `scale_tensor` may also be
    the desc's quantization_tensors as one list (the scale, then the zero point: how the
    registry regroups a desc's list field)."""
    if isinstance(scale_tensor, (list, tuple)) and zero_point_tensor is None:
        scale_tensor, zero_point_tensor = (list(scale_tensor) + [None])[:2]
    sizes = quantization_sizes(input_tensor.sizes, scale_tensor.sizes, axis, block_size)
    out, bits = parse_dtype(dtype)
    tensors = [_at_rank(scale_tensor, sizes)]
    if zero_point_tensor is not None:
        half = list(sizes[:-1]) + [sizes[-1] // 2]
        if bits == 4 and sizes[-1] % 2 == 0 and zero_point_tensor.element_count * 2 == int(np.prod(sizes)):
            zsizes = half  # (a 4-bit zero point packed two a byte)
        else:
            zsizes = quantization_sizes(input_tensor.sizes, zero_point_tensor.sizes, axis, block_size,
                                        name="zero_point")
        tensors.append(_at_rank(zero_point_tensor, zsizes))
    kind = QuantizationType.SCALE if zero_point_tensor is None else QuantizationType.SCALE_ZERO_POINT
    out_sizes = four_sizes(input_tensor.sizes) if bits == 4 else input_tensor.sizes
    return QuantizeOperatorDesc(input_tensor, kind, tuple(tensors), TensorDesc(out, out_sizes))


# ---------------------------------------------------------------------------- rules
def validate(desc: QuantizeOperatorDesc, feature_level: FeatureLevel) -> None:
    """The page's rules and gpudml's (module docstring), each error naming the field, the
    rule and the values."""
    inp, out, kind, tensors = desc.input_tensor, desc.output_tensor, desc.quantization_type, desc.quantization_tensors
    if kind not in COUNTS:
        raise InvalidArgumentError(f"{OP}: quantization_type {kind.name}: QUANTIZE needs a scale (SCALE or "
                                   f"SCALE_ZERO_POINT)")
    if len(tensors) != COUNTS[kind]:
        raise InvalidArgumentError(
            f"{OP}: quantization_tensors holds {len(tensors)} tensors; quantization_type {kind.name} takes "
            f"{COUNTS[kind]} ({'the scale' if COUNTS[kind] == 1 else 'the scale, then the zero point'})")
    named = {"input_tensor": inp, **{f"quantization_tensors[{k}]": t for k, t in enumerate(tensors)},
             "output_tensor": out}
    for field, td in named.items():
        check_tensor_desc(OP, field, td, is_output=field == "output_tensor")
    rank = check_same_rank(OP, named)
    SUPPORT.check(feature_level, rank, {"input_tensor": inp.data_type, "output_tensor": out.data_type})
    for td in tensors:
        SUPPORT.check(feature_level, rank, {"quantization_tensors": td.data_type})
    four = list(inp.sizes[:-1]) + [(inp.sizes[-1] + 1) // 2]
    if out.sizes != inp.sizes and (list(out.sizes) != four or inp.sizes[-1] < 2):
        raise InvalidArgumentError(f"{OP}: output_tensor.sizes {list(out.sizes)} must equal input_tensor.sizes "
                                   f"{list(inp.sizes)} (8-bit) or, for INT4/UINT4 as their bytes, {four} (two "
                                   f"elements a byte; the input's last size 2 or more)")
    scale = tensors[0]
    if scale.data_type != inp.data_type:
        raise InvalidArgumentError(
            f"{OP}: quantization_tensors[0] (the scale) has data type {scale.data_type.name}; it must be "
            f"input_tensor's, {inp.data_type.name}")
    for axis, (n, s) in enumerate(zip(inp.sizes, scale.sizes)):
        if n % s:
            raise InvalidArgumentError(
                f"{OP}: quantization_tensors[0].sizes[{axis}] = {s} must be 1, input_tensor.sizes[{axis}] = {n} or a "
                f"divisor of it (blocks of {n} / size consecutive elements); {s} does not divide {n}")
    if len(tensors) > 1:
        zero = tensors[1]
        if zero.data_type != out.data_type:
            raise InvalidArgumentError(
                f"{OP}: quantization_tensors[1] (the zero point) has data type {zero.data_type.name}; it must be "
                f"output_tensor's, {out.data_type.name}")
        forms = [list(scale.sizes)]
        if desc.bits == 4 and scale.sizes[-1] % 2 == 0:
            forms.append(list(scale.sizes[:-1]) + [scale.sizes[-1] // 2])
        if list(zero.sizes) not in forms:
            raise InvalidArgumentError(
                f"{OP}: quantization_tensors[1].sizes {list(zero.sizes)} (the zero point) must be "
                f"{' or '.join(map(str, forms))} (the scale's{', or packed two a byte' if len(forms) > 1 else ''})")


def check_scale_values(scale, where: str = "quantize: scale") -> None:
    """A host scale's values: positive and not NaN (ONNX's rule, before any GPU work)."""
    s = np.asarray(scale)
    if s.dtype.kind != "f":
        return  # (the type is validate's to name)
    bad = ~(s > 0)
    if bad.any():
        first = s.reshape(-1)[np.flatnonzero(bad.reshape(-1))[:4]]
        raise InvalidArgumentError(
            f"{where}: every scale must be positive (not zero, negative or NaN): {bad.sum()} of {s.size} are not, "
            f"e.g. {[float(v) for v in first]}")


# ---------------------------------------------------------------------------- the kernel
def _blocked(desc: QuantizeOperatorDesc) -> tuple[tuple[TensorDesc, ...], TensorDesc]:
    """The tensors as the element-wise kernel reads them: each axis where the scale holds
    d values, 1 < d < n, split into [d, n / d] (the input and output by their strides, the
    quantization tensors by theirs then 0), the others read broadcast."""
    inp, out = desc.input_tensor, desc.output_tensor
    qs = desc.quantization_tensors
    sizes, strides = [], [[] for _ in range(2 + len(qs))]
    for axis, n in enumerate(inp.sizes):
        d = qs[0].sizes[axis]
        own = [inp.effective_strides[axis], out.effective_strides[axis]]
        q_own = [0 if d == 1 else t.effective_strides[axis] for t in qs]
        if 1 < d < n:
            b = n // d
            sizes += [d, b]
            for k, s in enumerate(own):
                strides[k] += [s * b, s]
            for k, s in enumerate(q_own):
                strides[2 + k] += [s, 0]
        else:
            sizes.append(n)
            for k, s in enumerate(own + q_own):
                strides[k].append(s)

    def view(td: TensorDesc, st) -> TensorDesc:
        return TensorDesc(td.data_type, sizes, st, total_tensor_size_in_bytes=td.total_tensor_size_in_bytes)
    return (view(inp, strides[0]), *(view(t, strides[2 + k]) for k, t in enumerate(qs))), view(out, strides[1])


def problem(desc: QuantizeOperatorDesc) -> Problem | quantize4.Quantize4:
    """ELEMENT_WISE_QUANTIZE_LINEAR's formula over the blocked views (`_blocked`); a 4-bit
    output: the 4-bit family's problem (kernels/quantize4.py)."""
    if desc.bits == 4:
        return quantize4.Quantize4(OP, desc.input_tensor, desc.scale_tensor, desc.zero_point_tensor,
                                   desc.output_tensor, desc.zero_packed)
    inputs, output = _blocked(desc)
    zero = desc.zero_point_tensor
    z = "0i" if zero is None else ("c" if zero.data_type.is_signed else "i32(c)")
    q = f"quantize_f32_rn(a, b) + {z}"
    out_kind = value_kind(output.data_type)
    expression = f"clamp({q}, -128i, 127i)" if out_kind == "sint" else f"u32(clamp({q}, 0i, 255i))"
    return Problem(OP, inputs, output, tuple(value_kind(t.data_type) for t in inputs), out_kind, expression)


class QuantizePlanner(ElementWisePlanner):
    """The element-wise family for 8-bit outputs (a graph fuses them with element-wise
    neighbours), the 4-bit family for INT4/UINT4 ones (never fused: its problem is no
    element-wise Problem)."""

    def _family(self, p):
        return quantize4.FAMILY if isinstance(p, quantize4.Quantize4) else self.family

    def strategies_for(self, desc, caps, **options):
        p = self.problem(desc)
        return self._family(p).strategies_for(p, caps, **options)

    def plan(self, desc, caps, strategy: str, **options):
        p = self.problem(desc)
        return self._family(p).plan(p, caps, strategy, **options)

    def variants(self, desc, caps, strategy: str):
        p = self.problem(desc)
        return self._family(p).variants(p, caps, strategy)

    def stage(self, desc):
        p = self.problem(desc)
        return None if isinstance(p, quantize4.Quantize4) else self.family.stage(p)


# ---------------------------------------------------------------------------- the reference
def quantize_reference(x, scale, zero_point=None, output_data_type="UINT8", bounds=None) -> np.ndarray:
    """clamp(round(x / scale) + zero_point, the output type's range) in ONNX's float32
    arithmetic: x / scale rounded to float32 (FLOAT16 values read exactly), then to an integer
    half to even; NaN 0, saturating (x / 0, infinities). `bounds` (lo, hi): another range
    (a 4-bit output's) in the output type."""
    out = np.dtype(DataType.parse(output_data_type, "dtype").numpy)
    with np.errstate(all="ignore"):
        q = (np.asarray(x).astype(np.float32) / np.asarray(scale).astype(np.float32)).astype(np.float64)
        q = np.clip(np.rint(np.nan_to_num(q, nan=0.0, posinf=4096.0, neginf=-4096.0)), -4096, 4096).astype(np.int64)
    z = 0 if zero_point is None else np.asarray(zero_point).astype(np.int64)
    info = np.iinfo(out)
    lo, hi = (int(info.min), int(info.max)) if bounds is None else bounds
    return np.clip(q + z, lo, hi).astype(out)


def _expanded(q: np.ndarray, x_shape) -> np.ndarray:
    """`q` (at x's rank) repeated along each axis to x's shape (each value over its block)."""
    for axis, (n, d) in enumerate(zip(x_shape, q.shape)):
        if d != n:
            q = np.repeat(q, n // d, axis=axis)
    return q


def _four_zero(zero_point, x_shape, sizes, axis, block_size, signed: bool) -> np.ndarray:
    """A 4-bit output's zero point as int64 values at `sizes` (the scale's, at x's rank): an
    ml_dtypes int4/uint4 array's values; bytes packed two a byte (half the scale's elements,
    its last size even); else one value a byte, the low nibble (sign-extended for INT4)."""
    z = np.asarray(zero_point)
    if four_name(z.dtype):
        return z.astype(np.int64).reshape(quantization_sizes(x_shape, z.shape, axis, block_size, name="zero_point"))
    if sizes[-1] % 2 == 0 and z.size * 2 == int(np.prod(sizes)):
        return unpack4(z.reshape(list(sizes[:-1]) + [sizes[-1] // 2]), signed)
    v = z.reshape(quantization_sizes(x_shape, z.shape, axis, block_size, name="zero_point"))
    v = v.view(np.uint8).astype(np.int64) & 0xF
    return np.where(v >= 8, v - 16, v) if signed else v


def reference(x, scale, zero_point=None, *, dtype, axis=None, block_size=None) -> np.ndarray:
    """DML_QUANTIZE in numpy: each element's scale and zero point (per tensor, axis or block),
    then ONNX's quantization (float32 quotient, half to even, saturated); a 4-bit `dtype`:
    the values in its range packed two a byte (pack4: its bytes, INT8 for INT4, UINT8 for
    UINT4, the last size (n + 1) // 2)."""
    x = np.asarray(x)
    scale = np.asarray(scale)
    out, bits = parse_dtype(dtype)
    sizes = quantization_sizes(x.shape, scale.shape, axis, block_size)
    s = _expanded(scale.reshape(sizes), x.shape)
    z = None
    if bits == 4:
        four_sizes(x.shape)
        if zero_point is not None:
            z = _expanded(_four_zero(zero_point, x.shape, sizes, axis, block_size, out.is_signed), x.shape)
        values = quantize_reference(x, s, z, "INT32", FOUR_RANGE[out])
        return pack4(values).view(out.numpy)
    if zero_point is not None:
        zero_point = np.asarray(zero_point)
        zsizes = quantization_sizes(x.shape, zero_point.shape, axis, block_size, name="zero_point")
        z = _expanded(zero_point.reshape(zsizes), x.shape)
    return quantize_reference(x, s, z, out.name)


def _check_zero(zero_point, dtype, where: str = "quantize: zero_point"):
    """A host zero point against `dtype` (before any GPU work): an ml_dtypes int4/uint4 array
    only with its own 4-bit dtype (then as its values, one a byte); a 4-bit output's bytes
    within the 4-bit range. Returns the zero point to send."""
    if not isinstance(zero_point, np.ndarray) and not np.isscalar(zero_point):
        return zero_point  # (a Tensor or an Expression: its type is validate's to name)
    z = np.asarray(zero_point)
    out, bits = parse_dtype(dtype)
    four = (four_name(z.dtype) or "").upper()
    if four:
        if bits != 4 or FOUR_BIT[four] != out:
            raise InvalidArgumentError(f"{where}: a {four} zero point needs dtype {four} (the output's type), got "
                                       f"dtype {dtype}")
        return z.astype(np.int64).astype(out.numpy)
    if bits == 4 and z.dtype.kind in "iu":
        lo, hi = FOUR_RANGE[out]
        bad = (z < lo) | (z > hi)
        if bad.any():
            first = z.reshape(-1)[np.flatnonzero(bad.reshape(-1))[:4]].tolist()
            raise InvalidArgumentError(
                f"{where}: a zero point of a 4-bit output (dtype {dtype}) holds values in [{lo}, {hi}] (one a byte); "
                f"{int(bad.sum())} of {z.size} are not, e.g. {first}")
    return zero_point


def quantize(x, scale, zero_point=None, *, dtype, axis=None, block_size=None, device=None):
    """DML_OPERATOR_QUANTIZE: clamp(round(x / scale) + zero_point, dtype's range), x FLOAT32
    or FLOAT16 and the scale of x's type, `dtype` INT8, UINT8, INT4 or UINT4 (the zero
    point's type where one is given: for INT4/UINT4 its bytes' INT8/UINT8, one value a byte,
    or an ml_dtypes int4/uint4 array). Per tensor (a scale of one element), per axis (`axis`:
    a 1-D scale of x.shape[axis] values) or blocked (`block_size`, along `axis`, default 1:
    the scale x's shape with x.shape[axis] / block_size there). x / scale rounded to float32,
    then half to even (NaN 0, x / 0 saturating). A host scale must be positive (not zero,
    negative or NaN). INT4/UINT4: the result is the bytes (INT8/UINT8, x's shape but the last
    axis (n + 1) // 2: two values a byte, the even one in the low nibble), which
    dml.dequantize(..., bits=4) reads and gpudml.unpack4 turns into the values."""
    if not hasattr(scale, "desc") and not hasattr(scale, "node"):  # (a host value, not a Tensor or Expression)
        check_scale_values(scale)
    if zero_point is not None:
        zero_point = _check_zero(zero_point, dtype)
    tensors = [("x", x), ("scale", scale, np.atleast_1d)]  # (a 0-d scale or zero point: one element)
    tensors += [("zero_point", zero_point, np.atleast_1d)] if zero_point is not None else []
    return Call(tensors, {"dtype": dtype, "axis": axis, "block_size": block_size}, device)


def arguments(desc: QuantizeOperatorDesc) -> dict:
    out = desc.output_tensor.data_type
    return {"dtype": ("INT4" if out.is_signed else "UINT4") if desc.bits == 4 else out.name}


def sample(desc: QuantizeOperatorDesc, rng: np.random.Generator) -> list[np.ndarray]:
    """x of moderate values (with x / scale ties), positive scales (a power of two among
    them), zero points of any value."""
    inp = desc.input_tensor
    span = 40 if desc.bits == 4 else 300  # (a 4-bit output: values about its range, ties among them)
    x = (rng.integers(-span, span, inp.required_elements) / 2.0).astype(inp.data_type.numpy)
    out = [x]
    for k, td in enumerate(desc.quantization_tensors):
        n = td.required_elements
        if k == 0:
            values = rng.choice([0.5, 1.0, 2.0, 0.75, 3.0, 0.1], n).astype(td.data_type.numpy)
        else:
            info = np.iinfo(td.data_type.numpy)
            values = rng.integers(int(info.min), int(info.max) + 1, n).astype(td.data_type.numpy)
        out.append(values)
    return out


def _from_cli(x: TensorDesc, o: dict) -> QuantizeOperatorDesc:
    """--output-type (default UINT8; INT4, UINT4: their bytes); --axis, --block-size: a scale
    per axis or per block."""
    axis = o.get("axis")
    block = o.get("block_size")
    sizes = (1,) * x.rank
    if block is not None:
        a = (1 if axis is None else int(axis)) % x.rank
        sizes = tuple(n // int(block) if k == a else n for k, n in enumerate(x.sizes))
        axis = a
    elif axis is not None:
        a = int(axis) % x.rank
        sizes = (x.sizes[a],)
    scale = TensorDesc(x.data_type, sizes)
    dtype = o.get("output_type") or "UINT8"
    return infer_output(TensorDesc(x.data_type, x.sizes, x.strides), scale, TensorDesc(out_type(dtype), sizes),
                        dtype=dtype, axis=axis, block_size=None if block is None else int(block))


SPEC = OpSpec(
    name=OP, key="quantize", desc=QuantizeOperatorDesc, support=SUPPORT,
    infer_output=infer_output, validate=validate, reference=reference, functional=quantize,
    tensors=("x", "scale", "zero_point"), arguments=arguments, planner=QuantizePlanner(problem),
    cli=Cli((CliArg("--output-type", "the output's type, INT8, UINT8, INT4 or UINT4 (default UINT8)", "str"),
             CliArg("--axis", "the axis of a per-axis or blocked scale", "number"),
             CliArg("--block-size", "block size along --axis (default axis 1)", "number")),
            _from_cli, "--shape 64,4096 --axis 1 --block-size 32 --output-type INT8"),
    page="DML_QUANTIZE_OPERATOR_DESC", sample=sample,
)

__all__ = ["OP", "SPEC", "QuantizeOperatorDesc", "quantization_sizes", "check_scale_values", "parse_dtype"]
