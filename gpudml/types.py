"""DirectML enums with DirectML's numeric values, and the data-type table.

No wgpu import here: everything in this module is plain data.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Self

import numpy as np

from .errors import InvalidArgumentError

#: Every public DirectML enum (a DMLEnum subclass) by name, in definition order:
#: gpudml/__init__.py exports them all (adding an enum is adding its class, nothing more).
ENUMS: dict[str, type] = {}


class DMLEnum(enum.IntEnum):
    """An IntEnum with DirectML's values that prints as its name: `DataType.FLOAT32` for
    print(), repr() and f"{...}" alike (int(member) and format specs such as "d" or "#x"
    still give the number)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return str(self) if not spec else int.__format__(int(self), spec)

    def __init_subclass__(cls, field: str = "value", **kwargs):
        """`field`: the name coerce's errors give a value by default (the descs' field of
        that enum: `class DataType(DMLEnum, field="data_type")`)."""
        super().__init_subclass__(**kwargs)
        cls._coerce_field = field
        if not cls.__name__.startswith("_"):
            ENUMS[cls.__name__] = cls

    @classmethod
    def coerce(cls, value, field: str | None = None) -> Self:
        """Accept a member, its integer value or its name (any case), or one of the enum's
        aliases (_aliases); InvalidArgumentError otherwise, naming `field` (None: the enum's
        own field name)."""
        return _coerce_enum(cls, value, cls._coerce_field if field is None else field, cls._aliases())

    @classmethod
    def _aliases(cls) -> dict:
        """Other names (upper case) coerce accepts, and the member each means: none by default."""
        return {}


class DataType(DMLEnum, field="data_type"):
    FLOAT32 = 1
    FLOAT16 = 2
    UINT32 = 3
    UINT16 = 4
    UINT8 = 5
    INT32 = 6
    INT16 = 7
    INT8 = 8
    FLOAT64 = 9
    UINT64 = 10
    INT64 = 11

    @property
    def size(self) -> int:
        """Bytes per element."""
        return _INFO[self].size

    @property
    def numpy(self) -> np.dtype:
        return _INFO[self].numpy

    @property
    def is_float(self) -> bool:
        return self in (DataType.FLOAT16, DataType.FLOAT32, DataType.FLOAT64)

    @property
    def is_signed(self) -> bool:
        return self in (DataType.INT8, DataType.INT16, DataType.INT32, DataType.INT64)

    @classmethod
    def from_numpy(cls, dtype, field: str = "dtype") -> DataType:
        """The DataType of a numpy dtype (byte order ignored); InvalidArgumentError if none."""
        try:
            dt = np.dtype(dtype)
        except TypeError:
            raise InvalidArgumentError(f"{field}: {dtype!r} is not a numpy dtype") from None
        key = dt.newbyteorder("=") if dt.byteorder not in ("=", "|") else dt
        for member, info in _INFO.items():
            if info.numpy == key:
                return member
        raise InvalidArgumentError(
            f"{field}: numpy dtype {dt} has no DirectML data type "
            f"(supported: {', '.join(str(i.numpy) for i in _INFO.values())})"
        )

    @classmethod
    def parse(cls, value, field: str = "data_type") -> DataType:
        """Accept what coerce does, or a numpy dtype (np.int64, "int64", "<f4"): the error
        lists the DataType names."""
        if isinstance(value, (DataType, int, np.integer)) and not isinstance(value, (bool, np.bool_)):
            return cls.coerce(value, field)
        if isinstance(value, str) and value.strip().upper() in cls.__members__:
            return cls[value.strip().upper()]
        try:
            dt = np.dtype(value)
        except (TypeError, ValueError):
            dt = None
        if dt is not None:
            return cls.from_numpy(dt, field)
        raise InvalidArgumentError(
            f"{field}: {value!r} is not a DataType ({', '.join(cls.__members__)}) nor the numpy dtype of one")


@dataclass(frozen=True)
class _TypeInfo:
    size: int
    numpy: np.dtype


_INFO = {
    DataType.FLOAT32: _TypeInfo(4, np.dtype(np.float32)),
    DataType.FLOAT16: _TypeInfo(2, np.dtype(np.float16)),
    DataType.UINT32: _TypeInfo(4, np.dtype(np.uint32)),
    DataType.UINT16: _TypeInfo(2, np.dtype(np.uint16)),
    DataType.UINT8: _TypeInfo(1, np.dtype(np.uint8)),
    DataType.INT32: _TypeInfo(4, np.dtype(np.int32)),
    DataType.INT16: _TypeInfo(2, np.dtype(np.int16)),
    DataType.INT8: _TypeInfo(1, np.dtype(np.int8)),
    DataType.FLOAT64: _TypeInfo(8, np.dtype(np.float64)),
    DataType.UINT64: _TypeInfo(8, np.dtype(np.uint64)),
    DataType.INT64: _TypeInfo(8, np.dtype(np.int64)),
}

F32, F16, F64 = DataType.FLOAT32, DataType.FLOAT16, DataType.FLOAT64
I8, I16, I32, I64 = DataType.INT8, DataType.INT16, DataType.INT32, DataType.INT64
U8, U16, U32, U64 = DataType.UINT8, DataType.UINT16, DataType.UINT32, DataType.UINT64

#: "8 types" of the support tables: F32 F16 I32 I16 I8 U32 U16 U8.
TYPES_8 = frozenset({F32, F16, I32, I16, I8, U32, U16, U8})
#: "11 types": the 8 plus F64 I64 U64.
TYPES_11 = TYPES_8 | {F64, I64, U64}


class FeatureLevel(DMLEnum, field="feature_level"):
    FL_1_0 = 0x1000
    FL_2_0 = 0x2000
    FL_2_1 = 0x2100
    FL_3_0 = 0x3000
    FL_3_1 = 0x3100
    FL_4_0 = 0x4000
    FL_4_1 = 0x4100
    FL_5_0 = 0x5000
    FL_5_1 = 0x5100
    FL_5_2 = 0x5200
    FL_5_3 = 0x5300
    FL_6_0 = 0x6000
    FL_6_1 = 0x6100
    FL_6_2 = 0x6200
    FL_6_3 = 0x6300
    FL_6_4 = 0x6400


#: The highest feature level named by any table gpudml implements (Padding's WRAP mode), and
#: the level a default Device validates at.
HIGHEST_FEATURE_LEVEL = FeatureLevel.FL_6_4


class ReduceFunction(DMLEnum, field="function"):
    ARGMAX = 0
    ARGMIN = 1
    AVERAGE = 2
    L1 = 3
    L2 = 4
    LOG_SUM = 5
    LOG_SUM_EXP = 6
    MAX = 7
    MIN = 8
    MULTIPLY = 9
    SUM = 10
    SUM_SQUARE = 11


class PaddingMode(DMLEnum, field="padding_mode"):
    CONSTANT = 0
    EDGE = 1
    REFLECTION = 2
    SYMMETRIC = 3
    WRAP = 4

    @classmethod
    def _aliases(cls) -> dict:
        """numpy's name for the same mode (`np.pad`'s "reflect" is REFLECTION; "constant",
        "edge", "symmetric" and "wrap" are spelled alike)."""
        return PADDING_MODE_ALIASES


#: numpy's `np.pad` mode names that mean what a PaddingMode of another name does (numpy's
#: modes linear_ramp, maximum, mean, median, minimum and empty have no DirectML mode).
PADDING_MODE_ALIASES = {"REFLECT": PaddingMode.REFLECTION}


class AxisDirection(DMLEnum, field="axis_direction"):
    INCREASING = 0
    DECREASING = 1


class DepthSpaceOrder(DMLEnum, field="order"):
    """DML_DEPTH_SPACE_ORDER (DEPTH_TO_SPACE1, SPACE_TO_DEPTH1): how a channel of the deep
    tensor splits into (block row i, block column j, channel c) of the shallow one.
    DEPTH_COLUMN_ROW: channel (i * BlockSize + j) * C + c (ONNX's DepthToSpace mode "DCR",
    DML_DEPTH_TO_SPACE's only order); COLUMN_ROW_DEPTH: channel (c * BlockSize + i) *
    BlockSize + j (ONNX's "CRD")."""

    DEPTH_COLUMN_ROW = 0
    COLUMN_ROW_DEPTH = 1

    @classmethod
    def _aliases(cls) -> dict:
        """ONNX's mode names: "DCR" and "CRD"."""
        return {"DCR": cls.DEPTH_COLUMN_ROW, "CRD": cls.COLUMN_ROW_DEPTH}


class InterpolationMode(DMLEnum, field="interpolation_mode"):
    """DML_INTERPOLATION_MODE (the resampling operators): NEAREST_NEIGHBOR, LINEAR; CUBIC is
    gpudml's extension (RESAMPLE3 only: ONNX Resize's cubic, which DirectML lacks)."""

    NEAREST_NEIGHBOR = 0
    LINEAR = 1
    CUBIC = 2

    @classmethod
    def _aliases(cls) -> dict:
        """ONNX Resize's mode names: "nearest" is NEAREST_NEIGHBOR ("linear", "cubic" are spelled alike)."""
        return {"NEAREST": InterpolationMode.NEAREST_NEIGHBOR}


class MatrixTransform(DMLEnum, field="trans"):
    """DML_MATRIX_TRANSFORM: how GEMM reads a matrix operand (TRANSPOSE: its two last axes swapped)."""

    NONE = 0
    TRANSPOSE = 1


class QuantizationType(DMLEnum, field="quantization_type"):
    """DML_QUANTIZATION_TYPE (QUANTIZE, DEQUANTIZE; FL 6.3): what QuantizationTensors hold:
    nothing (NONE), a scale (SCALE), a scale and a zero point (SCALE_ZERO_POINT)."""

    NONE = 0
    SCALE = 1
    SCALE_ZERO_POINT = 2


class ConvolutionMode(DMLEnum, field="mode"):
    """DML_CONVOLUTION_MODE: CONVOLUTION flips the filter along every spatial axis;
    CROSS_CORRELATION (what ML models mean by convolution) reads it as it is."""

    CONVOLUTION = 0
    CROSS_CORRELATION = 1


class ConvolutionDirection(DMLEnum, field="direction"):
    """DML_CONVOLUTION_DIRECTION: FORWARD, or BACKWARD (the transposed convolution: the
    adjoint of FORWARD with the same filter, strides, dilations and paddings)."""

    FORWARD = 0
    BACKWARD = 1


class RoundingMode(DMLEnum, field="rounding_mode"):
    """DML_ROUNDING_MODE (ELEMENT_WISE_ROUND): to the nearest integer, halves to the even one;
    toward zero (the fraction dropped); to the nearest, halves away from zero."""

    HALVES_TO_NEAREST_EVEN = 0
    TOWARD_ZERO = 1
    TOWARD_INFINITY = 2


class IsInfinityMode(DMLEnum, field="infinity_mode"):
    """DML_IS_INFINITY_MODE (ELEMENT_WISE_IS_INFINITY): -inf or inf, inf, -inf."""

    EITHER = 0
    POSITIVE = 1
    NEGATIVE = 2


class RandomGeneratorType(DMLEnum, field="type"):
    """DML_RANDOM_GENERATOR_TYPE (RANDOM_GENERATOR): PHILOX_4X32_10, Philox 4x32 with 10
    rounds (Salmon et al., SC'11), DirectML's only generator."""

    PHILOX_4X32_10 = 0

    @classmethod
    def _aliases(cls) -> dict:
        """"philox": the only generator."""
        return {"PHILOX": cls.PHILOX_4X32_10}


def _coerce_enum(cls, value, field, aliases=None):
    if isinstance(value, cls):
        return value
    aliases = aliases or {}
    if isinstance(value, str):
        name = value.strip().upper()
        if name in cls.__members__:
            return cls[name]
        if name in aliases:
            return aliases[name]
    elif isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        try:
            return cls(int(value))
        except ValueError:
            pass
    names = ", ".join(cls.__members__)
    also = "".join(f"; {a.lower()!r} (numpy's name) is {m.name}" for a, m in aliases.items())
    raise InvalidArgumentError(f"{field}: {value!r} is not a {cls.__name__} (one of {names}){also}")


def type_list(types) -> str:
    """'FLOAT32, FLOAT16, ...' in DataType order, for error messages."""
    return ", ".join(t.name for t in sorted(types))


class RecurrentNetworkDirection(DMLEnum, field="direction"):
    """DML_RECURRENT_NETWORK_DIRECTION (RNN, LSTM, GRU): FORWARD (t = 0 .. T-1), BACKWARD
    (t = T-1 .. 0), BIDIRECTIONAL (both, direction 0 forward and 1 backward)."""

    FORWARD = 0
    BACKWARD = 1
    BIDIRECTIONAL = 2

    @classmethod
    def _aliases(cls) -> dict:
        """ONNX's names: "reverse" is BACKWARD."""
        return {"REVERSE": RecurrentNetworkDirection.BACKWARD}


