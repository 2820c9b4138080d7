"""DML_OPERATOR_DEQUANTIZE (FL 6.3): output = (input - zero_point) * scale, the scale and the
zero point (DirectML's QuantizationTensors, by QuantizationType: [scale] or [scale,
zero_point]) read per block of the output: every quantization tensor has the output's
DimensionCount and on each axis a size that divides the output's; output element o reads
scale element [o_d / (output size_d / scale size_d)]. A size of 1 is a whole axis (per
tensor: all 1), the axis' size one value per index (per axis, ONNX's `axis`), anything
between a block of that many (ONNX's blocked quantization, `block_size`). This is how ONNX
Runtime's DirectML execution provider describes MatMulNBits' scales to DEQUANTIZE (the
scale [N, K / block_size] of a weight [N, K]). Kernel: kernels/dequantize.py.

DirectML's page for DML_DEQUANTIZE_OPERATOR_DESC is not in the stored sdk-api repository
(its QUANTIZE page, stored as tests/data/pages/ns-directml-dml_dequantize_operator_desc.md
with the reason, says "TBD" for every field); what gpudml takes where DirectML says nothing:

- Types: InputTensor INT8, UINT8, INT4, UINT4; the scale FLOAT32 or FLOAT16, the output's
  type; the zero point the input's type; OutputTensor FLOAT32 or FLOAT16 (the QUANTIZE
  page's table, read in the other direction). Ranks 1 to 8, one for every tensor.
- 4-bit tensors: gpudml has no 4-bit DataType. A UINT4 (INT4) tensor is described by its
  bytes (QUANTIZE's INT4/UINT4 outputs are the same): a UINT8 (INT8) TensorDesc of the same
  sizes but the last, which is (n + 1) // 2 of the output's n (two elements a byte, the even
  one in the low nibble: ONNX's packing; each row of the last axis starts on a byte, which
  is ONNX's flat packing wherever that axis is even or the tensor 1-D; a row of odd length
  ends in a half byte, its high nibble unread). A 4-bit output's last size is 2 or more (the
  bytes of a last size of 1 have the 8-bit input's sizes). A 4-bit input's zero point is
  4-bit too: packed the same way (its last size half the scale's, where that is even) or one
  element a byte (the scale's sizes; the low nibble, sign-extended for INT4). The functional
  form takes `bits=4` with such byte tensors (the output's last size twice the bytes', or
  `size`, the logical last size, for an odd one), or an ml_dtypes int4/uint4 numpy array as
  it is (its own shape).
- Scales of zero, NaN or infinity are refused where they are on the host (a numpy array;
  the ONNX session's initializers) before any GPU work; a Tensor's are not read back to be
  checked (they give what the formula gives). Negative scales are taken: ONNX does not
  forbid them and onnxruntime's symmetric MatMulNBitsQuantizer writes them (each block's
  largest magnitude mapped to -8).

Precision: (input - zero_point) is exact in float32 (|difference| <= 510); the product with
the scale is rounded once to float32 (correctly rounded multiplication), and for a FLOAT16
output that float32 rounded to float16 once more: within 0.5 ULP of float32 (FLOAT32
output) or 0.5 ULP of float16 plus 2^-24 relative (FLOAT16), of the exact product.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels import dequantize as family
from ..kernels.base import ProblemPlanner
from ..tensor_desc import TensorDesc, as_int, check_same_rank, check_tensor_desc, view_strides
from ..types import F16, F32, I8, U8, FeatureLevel, QuantizationType
from .spec import Call, Cli, CliArg, Example, OpSpec, support_table

OP = "Dequantize"
FL = FeatureLevel
QUANTIZED = frozenset({I8, U8})
FLOATS = frozenset({F32, F16})
#: The QUANTIZE page's table read for DEQUANTIZE (module docstring; INT4/UINT4 are their bytes' INT8/UINT8).
SUPPORT = support_table(OP, ("input_tensor", "scale_tensor", "zero_point_tensor", "output_tensor"),
                        [(FL.FL_6_3, (1, 8), QUANTIZED, FLOATS, QUANTIZED, FLOATS)])
BITS = (8, 4)


@dataclass(frozen=True)
class DequantizeOperatorDesc:
    """DML_DEQUANTIZE_OPERATOR_DESC: output = (input - zero_point) * scale per block
    (module docstring). DirectML's QuantizationTensors array is `scale_tensor` and
    `zero_point_tensor` (None for QuantizationType SCALE); `quantization_tensors` gives it."""

    input_tensor: TensorDesc
    quantization_type: QuantizationType
    scale_tensor: TensorDesc
    zero_point_tensor: TensorDesc | None
    output_tensor: TensorDesc
    OPTIONAL_TENSORS = ("zero_point_tensor",)

    def __post_init__(self):
        object.__setattr__(self, "quantization_type",
                           QuantizationType.coerce(self.quantization_type, f"{OP}: quantization_type"))

    @property
    def quantization_tensors(self) -> tuple[TensorDesc, ...]:
        return tuple(t for t in (self.scale_tensor, self.zero_point_tensor) if t is not None)

    @property
    def bits(self) -> int:
        """4 where the input holds two elements a byte (its last size (n + 1) // 2 of the
        output's n, not n), else 8."""
        n, m = self.output_tensor.sizes[-1], self.input_tensor.sizes[-1]
        return 4 if m != n and m == (n + 1) // 2 else 8


# ---------------------------------------------------------------------------- 4-bit packing
#: ml_dtypes' 4-bit types and the bytes that hold them (INT8 for INT4, UINT8 for UINT4).
FOUR_BYTES = {"int4": np.dtype(np.int8), "uint4": np.dtype(np.uint8)}


def four_bytes(values: np.ndarray) -> np.ndarray:
    """An ml_dtypes int4/uint4 array as its bytes (pack4), INT8 for INT4, UINT8 for UINT4."""
    return pack4(values).view(FOUR_BYTES[values.dtype.name])


def pack4(values: np.ndarray) -> np.ndarray:
    """Integers in [-8, 15] (the 4-bit values of INT4 or UINT4; an ml_dtypes int4/uint4
    array) as bytes (uint8) two a byte along the last axis, the even element in the low
    nibble (ONNX's packing), each row starting on a byte: the last size (n + 1) // 2, an odd
    row's last high nibble 0."""
    v = np.asarray(values).astype(np.int64) & 0xF
    if v.ndim == 0:
        v = v.reshape(1)
    if v.shape[-1] % 2:
        v = np.concatenate([v, np.zeros(v.shape[:-1] + (1,), np.int64)], axis=-1)
    return (v[..., 0::2] | (v[..., 1::2] << 4)).astype(np.uint8)


def unpack4(data: np.ndarray, signed: bool, size: int | None = None) -> np.ndarray:
    """Bytes two 4-bit elements each (pack4's layout) as int64 values (sign-extended if
    signed), `size` values a row (default twice the bytes')."""
    b = np.asarray(data).view(np.uint8).astype(np.int64)
    out = np.stack([b & 0xF, b >> 4], axis=-1).reshape(*b.shape[:-1], b.shape[-1] * 2)
    out = out if size is None else out[..., :size]
    return np.where(out >= 8, out - 16, out) if signed else out


def four_values(data, dtype: str = "int4", size: int | None = None) -> np.ndarray:
    """A 4-bit tensor's bytes (pack4's layout: QUANTIZE's INT4/UINT4 output read back, a Tensor
    or a numpy array) as an ml_dtypes int4/uint4 array of `size` values a row (default twice
    the bytes': give the logical last size where it is odd). gpudml.unpack4."""
    import ml_dtypes

    name = str(dtype).strip().lower()
    if name not in ("int4", "uint4"):
        raise InvalidArgumentError(f"unpack4: dtype {dtype!r} must be 'int4' or 'uint4'")
    if hasattr(data, "numpy") and not isinstance(data, np.ndarray):
        data = data.numpy()
    data = np.asarray(data)
    if data.dtype.itemsize != 1 or data.dtype.kind not in "iu":
        raise InvalidArgumentError(f"unpack4: the bytes must be INT8 or UINT8 (two 4-bit values a byte), got "
                                   f"{data.dtype}")
    if data.ndim == 0:
        data = data.reshape(1)
    n = data.shape[-1]
    if size is not None and size not in (2 * n - 1, 2 * n):
        raise InvalidArgumentError(f"unpack4: size = {size} must be {2 * n - 1} or {2 * n} ({n} bytes a row)")
    return unpack4(data, name == "int4", size).astype(getattr(ml_dtypes, name))


def four_name(dtype) -> str | None:
    """"int4" / "uint4" for ml_dtypes' 4-bit numpy dtypes (FOUR_BYTES' keys), else None (also
    for what is not a numpy dtype)."""
    try:
        name = np.dtype(dtype).name
    except TypeError:
        return None
    return name if name in FOUR_BYTES else None


# ---------------------------------------------------------------------------- shapes
def _as_rank(t: TensorDesc, sizes, field: str) -> TensorDesc:
    """`t` re-described with `sizes` (its elements in order: a reshape by strides)."""
    if t.strides is None or list(sizes) == list(t.sizes):
        return t if list(sizes) == list(t.sizes) else TensorDesc(t.data_type, sizes)
    strides = view_strides(t.sizes, t.effective_strides, list(sizes))
    if strides is None:
        raise InvalidArgumentError(f"dequantize: {field} of sizes {list(t.sizes)} and strides {list(t.strides)} "
                                   f"cannot be viewed as {list(sizes)}")
    return TensorDesc(t.data_type, sizes, strides, total_tensor_size_in_bytes=t.total_tensor_size_in_bytes,
                      flags=t.flags, guaranteed_base_offset_alignment=t.guaranteed_base_offset_alignment)


def quantization_sizes(logical, scale_sizes, axis, block_size, field: str = "scale") -> list[int]:
    """The DirectML sizes (logical's rank, each dividing logical's) of a scale of
    `scale_sizes` for ONNX's `axis` and `block_size` (module docstring): one element: all
    1; rank 1 without block_size: per `axis` (default 1, 0 for a 1-D input); block_size:
    the scale has the input's rank, block_size times smaller on `axis`; otherwise (the
    input's rank, no axis) as given."""
    rank = len(logical)
    scale_sizes = list(scale_sizes)
    where = f"dequantize: {field}"
    if block_size is not None:
        block_size = as_int(block_size, "dequantize: block_size")
        if block_size < 0:
            raise InvalidArgumentError(f"dequantize: block_size = {block_size} must be 0 (none) or positive")
    if block_size:
        a = _axis(axis if axis is not None else 1 if rank > 1 else 0, rank)
        if logical[a] % block_size:
            raise InvalidArgumentError(f"dequantize: block_size = {block_size} must divide the input's axis {a} of "
                                       f"size {logical[a]} (DirectML takes no partial block)")
        want = [logical[d] // block_size if d == a else logical[d] for d in range(rank)]
        if scale_sizes != want:
            raise InvalidArgumentError(f"{where}.sizes {scale_sizes} must be {want} (the input's sizes {list(logical)} "
                                       f"with axis {a} divided by block_size {block_size})")
        return want
    if int(np.prod(scale_sizes, dtype=np.int64)) == 1 and axis is None:
        return [1] * rank
    if len(scale_sizes) == 1 and rank != 1 or axis is not None:
        a = _axis(axis if axis is not None else 1 if rank > 1 else 0, rank)
        n = int(np.prod(scale_sizes, dtype=np.int64))
        if len([s for s in scale_sizes if s != 1]) > 1 or n != logical[a]:
            raise InvalidArgumentError(f"{where}.sizes {scale_sizes} must be one element or [{logical[a]}] (one per "
                                       f"index of axis {a} of the input's sizes {list(logical)})")
        return [n if d == a else 1 for d in range(rank)]
    if len(scale_sizes) != rank:
        raise InvalidArgumentError(f"{where}.sizes {scale_sizes} must have the input's rank {rank} (or give axis or "
                                   f"block_size)")
    return scale_sizes


def _axis(axis, rank: int) -> int:
    a = as_int(axis, "dequantize: axis")
    if not -rank <= a < rank:
        raise InvalidArgumentError(f"dequantize: axis = {a} must be in [-{rank}, {rank - 1}] (the input's rank {rank})")
    return a % rank


def infer_output(input_tensor: TensorDesc, scale_tensor: TensorDesc, zero_point_tensor: TensorDesc | None = None,
                 *, axis=None, block_size=None, bits: int = 8, size=None) -> DequantizeOperatorDesc:
    """The desc of `dequantize(x, scale, zero_point, axis=, block_size=, bits=, size=)`: the
    output the input's logical sizes (a 4-bit input's last size doubled, or `size`, 2 n - 1
    for n bytes a row) in the scale's type, the scale and zero point re-described in
    DirectML's form (quantization_sizes)."""
    if isinstance(bits, (bool, np.bool_)) or bits not in BITS:
        raise InvalidArgumentError(f"dequantize: bits = {bits!r} must be 8 or 4")
    logical = list(input_tensor.sizes)
    if bits == 4:
        n = logical[-1]
        last = 2 * n if size is None else as_int(size, "dequantize: size")
        if last not in (2 * n - 1, 2 * n) or last < 2:
            raise InvalidArgumentError(f"dequantize: size = {last} (the 4-bit input's logical last size) must be "
                                       f"{2 * n - 1} or {2 * n} (x holds {n} bytes a row, two values a byte) and 2 or "
                                       f"more")
        logical[-1] = last
    elif size is not None:
        raise InvalidArgumentError(f"dequantize: size = {size!r} is a 4-bit input's logical last size (bits=4)")
    sizes = quantization_sizes(logical, scale_tensor.sizes, axis, block_size)
    scale = _as_rank(scale_tensor, sizes, "scale")
    zero = None
    if zero_point_tensor is not None:
        zsizes = list(sizes)
        packed = bits == 4 and zero_point_tensor.element_count * 2 == int(np.prod(sizes, dtype=np.int64))
        if packed:
            zsizes[-1] //= 2 if sizes[-1] % 2 == 0 else 1
        if zero_point_tensor.element_count != int(np.prod(zsizes, dtype=np.int64)):
            raise InvalidArgumentError(f"dequantize: zero_point.sizes {list(zero_point_tensor.sizes)} must hold the "
                                       f"scale's {int(np.prod(sizes))} elements ({sizes})"
                                       + (" or, packed two a byte, half as many" if bits == 4 else ""))
        zero = _as_rank(zero_point_tensor, zsizes, "zero_point")
    qtype = QuantizationType.SCALE if zero is None else QuantizationType.SCALE_ZERO_POINT
    return DequantizeOperatorDesc(input_tensor, qtype, scale, zero, TensorDesc(scale_tensor.data_type, logical))


def validate(desc: DequantizeOperatorDesc, feature_level: FeatureLevel) -> None:
    """Every tensor valid, of one DimensionCount, in the support row; the quantization type
    the tensors given; the input the output's sizes (a 4-bit input: the last halved, even);
    each quantization tensor's sizes dividing the output's; the scale the output's type, the
    zero point the input's (4-bit: packed or one a byte)."""
    inp, scale, zero, out = desc.input_tensor, desc.scale_tensor, desc.zero_point_tensor, desc.output_tensor
    named = {"input_tensor": inp, "scale_tensor": scale, "zero_point_tensor": zero, "output_tensor": out}
    named = {f: t for f, t in named.items() if t is not None or f != "zero_point_tensor"}
    for field, t in named.items():
        check_tensor_desc(OP, field, t, is_output=field == "output_tensor")
    rank = check_same_rank(OP, named)
    types = {f: t.data_type for f, t in named.items()}
    SUPPORT.check(feature_level, rank, types)
    if scale.data_type != out.data_type:
        raise InvalidArgumentError(f"{OP}: scale_tensor.data_type {scale.data_type.name} must equal "
                                   f"output_tensor.data_type {out.data_type.name}")
    if zero is not None and zero.data_type != inp.data_type:
        raise InvalidArgumentError(f"{OP}: zero_point_tensor.data_type {zero.data_type.name} must equal "
                                   f"input_tensor.data_type {inp.data_type.name}")
    bits = desc.bits
    if inp.sizes[:-1] != out.sizes[:-1] or inp.sizes[-1] not in (out.sizes[-1], (out.sizes[-1] + 1) // 2):
        raise InvalidArgumentError(f"{OP}: input_tensor.sizes {list(inp.sizes)} must be output_tensor.sizes "
                                   f"{list(out.sizes)} (8-bit) or those with the last n as (n + 1) // 2 (4-bit, two a "
                                   f"byte)")
    for d, (n, s) in enumerate(zip(out.sizes, scale.sizes, strict=True)):
        if n % s:
            raise InvalidArgumentError(f"{OP}: scale_tensor.sizes[{d}] = {s} must divide output_tensor.sizes[{d}] = "
                                       f"{n} (each scale covers a block of the output; sizes {list(scale.sizes)})")
    if zero is not None:
        packed = list(scale.sizes[:-1]) + [scale.sizes[-1] // 2]
        forms = [list(scale.sizes)] + ([packed] if bits == 4 and scale.sizes[-1] % 2 == 0 else [])
        if list(zero.sizes) not in forms:
            raise InvalidArgumentError(f"{OP}: zero_point_tensor.sizes {list(zero.sizes)} must be "
                                       f"{' or '.join(map(str, forms))} (the scale's"
                                       f"{', or packed two a byte' if len(forms) > 1 else ''})")
    want = {QuantizationType.SCALE: 1, QuantizationType.SCALE_ZERO_POINT: 2}.get(desc.quantization_type)
    if want != len(desc.quantization_tensors):
        raise InvalidArgumentError(f"{OP}: quantization_type {desc.quantization_type.name} takes "
                                   f"{'no' if want is None else want} quantization tensors (SCALE: the scale, "
                                   f"SCALE_ZERO_POINT: scale and zero point); {len(desc.quantization_tensors)} given")


def problem(desc: DequantizeOperatorDesc) -> family.Dequantize:
    zero = desc.zero_point_tensor
    return family.Dequantize(OP, desc.input_tensor, desc.scale_tensor, zero, desc.output_tensor, desc.bits,
                             zero is not None and desc.bits == 4 and zero.sizes != desc.scale_tensor.sizes)


DEQUANTIZE = ProblemPlanner(problem, family.FAMILY)


# ---------------------------------------------------------------------------- reference
def _expand(q: np.ndarray, sizes) -> np.ndarray:
    """A quantization tensor repeated to `sizes`, block by block on each axis."""
    for d, n in enumerate(sizes):
        q = np.repeat(q, n // q.shape[d], axis=d)
    return q


def _values(x: np.ndarray, bits: int, signed: bool, last: int | None = None) -> np.ndarray:
    """The integer values of a quantized array: 8-bit as they are, 4-bit unpacked (`last`:
    the logical last size; an array of it is one element a byte, the low nibble)."""
    if bits == 8:
        return x.astype(np.int64)
    if last is not None and x.shape[-1] == last:
        v = x.view(np.uint8).astype(np.int64) & 0xF
        return np.where(v >= 8, v - 16, v) if signed else v
    return unpack4(x, signed)


def reference(x, scale, zero_point=None, *, axis=None, block_size=None, bits=8, size=None) -> np.ndarray:
    """(x - zero_point) * scale in float64 (the difference exact), rounded once to the scale's
    type; the scale and zero point expanded block by block (module docstring). x of bits=4
    (or an ml_dtypes int4/uint4 array): packed bytes two a byte, low nibble first."""
    x, scale = np.asarray(x), np.asarray(scale)
    if four_name(x.dtype):
        x, bits, size = four_bytes(x), 4, x.shape[-1] if x.ndim else 1
    signed = x.dtype.kind == "i"
    v = _values(x, bits, signed)
    if bits == 4 and size is not None:
        v = v[..., :size]
    sizes = list(v.shape)
    qs = quantization_sizes(sizes, scale.shape, axis, block_size)
    s = _expand(scale.reshape(qs).astype(np.float64), sizes)
    z = 0
    if zero_point is not None:
        zp = np.asarray(zero_point)
        if four_name(zp.dtype):
            zp = zp.astype(np.int64)
        elif bits == 4:
            zs = list(qs)
            if zp.size * 2 == int(np.prod(qs)):
                zs[-1] //= 2
            zp = _values(zp.reshape(zs), 4, signed, qs[-1])
        z = _expand(zp.reshape(qs).astype(np.int64), sizes)
    return ((v - z).astype(np.float64) * s).astype(scale.dtype)


def tolerance(expected, inputs, arguments: dict):
    """The documented precision: 0.5 ULP of float32 for FLOAT32 (with a float32 subnormal
    floor: an adapter may flush), 0.5 ULP of float16 plus 2^-24 relative for FLOAT16."""
    e = np.abs(expected.astype(np.float64))
    if expected.dtype == np.float16:
        return np.where(np.isfinite(e), e * (2.0**-11 + 2.0**-24) + 2.0**-25, 0.0)
    return np.where(np.isfinite(e), e * 2.0**-24 + 2.0**-126, 0.0)


def sample(desc: DequantizeOperatorDesc, rng) -> list:
    """Any input and zero point bytes; scales positive, finite (2^-8 to 2^4)."""
    out = []
    for t in (desc.input_tensor, desc.scale_tensor, desc.zero_point_tensor):
        if t is None:
            continue
        if t.data_type.is_float:
            out.append((2.0 ** rng.uniform(-8, 4, t.required_elements)).astype(t.data_type.numpy))
        else:
            out.append(rng.integers(0, 256, t.required_elements, dtype=np.uint8).view(t.data_type.numpy))
    return out


# ---------------------------------------------------------------------------- API
def check_scale_values(scale, where: str = "dequantize") -> None:
    """Scales on the host: each finite and not zero; InvalidArgumentError naming the first
    other. (Negative scales are taken: onnxruntime's symmetric MatMulNBitsQuantizer writes
    them, mapping each block's largest magnitude to -8.)"""
    s = np.asarray(scale).astype(np.float64).reshape(-1)
    bad = np.flatnonzero(~(np.isfinite(s) & (s != 0)))
    if bad.size:
        raise InvalidArgumentError(f"{where}: scale[{int(bad[0])}] = {s[bad[0]]} must be finite and not zero "
                                   f"({bad.size} of {s.size} scales are not)")


def _host(value):
    """A numpy array of an ml_dtypes 4-bit type as its packed bytes (four_bytes), else as is."""
    if isinstance(value, np.ndarray) and four_name(value.dtype):
        return four_bytes(value), True
    return value, False


def dequantize(x, scale, zero_point=None, *, axis=None, block_size=None, bits=8, size=None, device=None):
    """DML_OPERATOR_DEQUANTIZE (ONNX's DequantizeLinear): (x - zero_point) * scale, x INT8 or
    UINT8 (or 4-bit: an ml_dtypes int4/uint4 array, or its bytes, two a byte low nibble
    first, with bits=4; `size`: the logical last size where it is odd, its bytes' twice less
    one), scale FLOAT32 or FLOAT16 (the output's type), the zero point x's
    type. The scale: one element (per tensor), one per index of `axis` (per axis), of x's
    shape divided by block_size on `axis` (blocked), or of x's rank with sizes that divide
    x's (DirectML's form). Scales on the host must be finite and not zero."""
    last = np.shape(x)[-1] if isinstance(x, np.ndarray) and four_name(x.dtype) and x.ndim else None
    x, four = _host(x)
    if isinstance(zero_point, np.ndarray) and four_name(zero_point.dtype):  # (its values, one a byte)
        zero_point = zero_point.astype(np.int64).astype(FOUR_BYTES[zero_point.dtype.name])
    if isinstance(scale, np.ndarray) or np.isscalar(scale):
        check_scale_values(scale)
    attributes = {"axis": axis, "block_size": block_size}
    if four or bits != 8:
        attributes["bits"] = 4 if four else bits
    if last is not None and last % 2:
        attributes["size"] = last
    elif size is not None:
        attributes["size"] = size
    tensors = [("x", x), ("scale", scale, np.atleast_1d)]  # (a 0-d scale or zero point: one element)
    tensors += [] if zero_point is None else [("zero_point", zero_point, np.atleast_1d)]
    return Call(tensors, attributes, device)


def arguments(desc: DequantizeOperatorDesc) -> dict:
    """No axis or block size (the desc's quantization tensors are in DirectML's form); bits
    for a 4-bit input (and its size where the output's last is odd)."""
    if desc.bits != 4:
        return {}
    n = desc.output_tensor.sizes[-1]
    return {"bits": 4, "size": n} if n % 2 else {"bits": 4}


def _from_cli(x: TensorDesc, o: dict) -> DequantizeOperatorDesc:
    """--shape is the output's; --block-size along the last axis (default 32 where it
    divides, else per tensor); --bits 8 or 4; --zero-point adds one."""
    bits = int(o.get("bits") or 8)
    dt = x.data_type if x.data_type in QUANTIZED else (I8 if bits == 4 else U8)
    sizes = list(x.sizes)
    block = int(o.get("block_size") or (32 if sizes[-1] % 32 == 0 else 0))
    scale = list(sizes)
    if block:
        scale[-1] //= block
    else:
        scale = [1] * len(sizes)
    packed = list(sizes[:-1]) + [sizes[-1] // 2 if bits == 4 else sizes[-1]]
    if bits == 4 and sizes[-1] % 2:
        raise InvalidArgumentError("dequantize: --bits 4 needs an even last size in --shape")
    zero = TensorDesc(dt, scale) if o.get("zero_point") else None
    return infer_output(TensorDesc(dt, packed), TensorDesc(F32, scale), zero, bits=bits)


#: The worked example of gpudml's reading of the page (tests/data/pages: blocks of 2 along axis 1).
_X = np.array([[-8, -1, 0, 7], [1, 2, 3, 4]], np.int8)
_SCALE = np.array([[0.5, 2.0], [0.25, 1.0]], np.float32)
_ZERO = np.array([[0, 1], [-1, 2]], np.int8)
_BLOCKED = np.array([[-4.0, -0.5, -2.0, 12.0], [0.5, 0.75, 1.0, 2.0]], np.float32)

SPEC = OpSpec(
    name=OP, key="dequantize", desc=DequantizeOperatorDesc, support=SUPPORT,
    infer_output=infer_output, validate=validate, reference=reference, functional=dequantize,
    tensors=("x", "scale", "zero_point"), arguments=arguments, planner=DEQUANTIZE,
    cli=Cli((CliArg("--block-size", "the block along the last axis (default 32 where it divides, else per tensor)",
                    "number"),
             CliArg("--bits", "8 or 4 (two elements a byte; default 8)", "number"),
             CliArg("--zero-point", "1: give a zero point (default 0: none)", "number")),
            _from_cli, "--shape 4096,4096 --dtype int8 --bits 4 --block-size 32 --zero-point 1"),
    page="DML_DEQUANTIZE_OPERATOR_DESC", tolerance=tolerance, sample=sample,
    examples=(Example("dequantize-1", _X, {"scale": _SCALE, "zero_point": _ZERO, "axis": 1, "block_size": 2},
                      _BLOCKED, "ns-directml-dml_dequantize_operator_desc.md"),),
)

__all__ = ["SPEC", "DequantizeOperatorDesc", "four_values", "pack4", "unpack4"]
