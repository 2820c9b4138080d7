"""What every operator module shares: support tables as data, and the KernelPlan.

An operator module (one per DirectML operator) holds its desc dataclass, its
SUPPORT table (the seed page's rows), `validate(desc, feature_level)` and
`plan(desc, caps) -> KernelPlan`. Nothing here imports wgpu.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidArgumentError
from ..tensor_desc import TensorDesc, check_same_rank, check_tensor_desc
from ..types import DataType, FeatureLevel, type_list


@dataclass(frozen=True)
class SupportRow:
    """One row of a 'Tensor support' table: from `level` on, these ranks and types."""

    level: FeatureLevel
    ranks: frozenset[int]
    types: dict[str, frozenset[DataType]]  # tensor field name -> allowed data types


def ranks(lo: int, hi: int) -> frozenset[int]:
    return frozenset(range(lo, hi + 1))


class SupportTable:
    """The rows of one operator (or one function of it), highest level first."""

    def __init__(self, op: str, rows: list[SupportRow]):
        self.op = op
        self.rows = sorted(rows, key=lambda r: r.level, reverse=True)

    @property
    def introduced(self) -> FeatureLevel:
        return self.rows[-1].level

    def row_for(self, level: FeatureLevel) -> SupportRow:
        for row in self.rows:
            if row.level <= level:
                return row
        raise InvalidArgumentError(
            f"{self.op}: not available at feature level {FeatureLevel(level).name} "
            f"(introduced at {self.introduced.name})")

    def check(self, level: FeatureLevel, rank: int, types: dict[str, DataType]) -> SupportRow:
        """Validate a rank and the data type of each named tensor against the row for `level`."""
        row = self.row_for(level)
        lvl = FeatureLevel(level).name
        if rank not in row.ranks:
            later = self._first_level(lambda r: rank in r.ranks)
            raise InvalidArgumentError(
                f"{self.op}: DimensionCount {rank} is not supported at {lvl} "
                f"(supported: {_span(row.ranks)}){later}")
        for name, dt in types.items():
            allowed = row.types[name]
            if dt not in allowed:
                later = self._first_level(lambda r, n=name, t=dt: t in r.types[n] and rank in r.ranks)
                raise InvalidArgumentError(
                    f"{self.op}: {name}.data_type {DataType(dt).name} is not supported at {lvl} "
                    f"(supported: {type_list(allowed)}){later}")
        return row

    def _first_level(self, accepts) -> str:
        for row in reversed(self.rows):
            if accepts(row):
                return f"; it needs {row.level.name} or later"
        return ""


def _span(values) -> str:
    v = sorted(values)
    if v == list(range(v[0], v[-1] + 1)) and len(v) > 2:
        return f"{v[0]}-{v[-1]}"
    return ", ".join(map(str, v))


@dataclass(frozen=True)
class Binding:
    """One storage buffer of a dispatch: the WGSL variable and the tensor behind it."""

    name: str  # WGSL variable name
    tensor: str  # "input:K", "output:K" or "scratch:K"
    wgsl_type: str = "array<u32>"
    writable: bool = False


@dataclass(frozen=True)
class Dispatch:
    """One compute dispatch: a template with compile-time params, buffers, uniforms, size.

    `uniforms` are named lists of 32-bit values (negative ints are stored as
    two's complement); each becomes an `array<vec4<u32>, N>` field, so the
    number of values must depend on compile-time facts (the rank) only.
    """

    template: str
    params: dict[str, Any]
    bindings: tuple[Binding, ...]
    uniforms: tuple[tuple[str, tuple[int, ...]], ...]
    invocations: int
    workgroup_size: int = 64


@dataclass(frozen=True)
class KernelPlan:
    dispatches: tuple[Dispatch, ...]
    scratch_bytes: tuple[int, ...] = field(default=())


def element_bits(desc: TensorDesc) -> int:
    return desc.data_type.size * 8


def check_copy_tensors(op: str, support: SupportTable, level: FeatureLevel, inp: TensorDesc, out: TensorDesc) -> int:
    """The checks every operator whose output has its input's type shares: both descs,
    one DimensionCount, one data type, the support row. Returns the rank."""
    check_tensor_desc(op, "input_tensor", inp)
    check_tensor_desc(op, "output_tensor", out, is_output=True)
    rank = check_same_rank(op, {"input_tensor": inp, "output_tensor": out})
    if inp.data_type != out.data_type:
        raise InvalidArgumentError(
            f"{op}: output_tensor.data_type {out.data_type.name} must equal "
            f"input_tensor.data_type {inp.data_type.name}")
    support.check(level, rank, {"input_tensor": inp.data_type, "output_tensor": out.data_type})
    return rank
