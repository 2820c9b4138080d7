"""The compaction family: DML_NONZERO_COORDINATES, the coordinates of an input's non-zero
elements in row-major order, as a composite (kernels/composite.py) around the scan family
(kernels/scan.py), so that the result is deterministic (no atomics decide a position):

1. `flags` (a pass of this module): value 0, packed UINT32 [M] (M the input's elements), is
   1 where the element is non-zero, else 0: floats on their bits without the sign bit
   (-0.0 is zero, NaN is not), integers on their bits;
2. the scan family's inclusive CUMULATIVE_SUMMATION of value 0 into value 1 (positions: the
   non-zero elements up to and including each element), with the scan's own strategy
   (`runs` on CPU-class adapters, `tiles` on GPU-class ones: the composite's strategy);
3. `write` (a pass of this module): element i, with p = positions[i] and the count C =
   positions[M - 1], writes its last N coordinates to row p - 1 when it is non-zero, and to
   row C + i - p (the rank of the zero among the zeros, after the count) when it is zero,
   as zeros: every row of the worst-case [M, N] output is written exactly once, the
   coordinates of the non-zero elements first, ascending, then rows of zeros (the page
   leaves rows past the count undefined; gpudml defines them as zeros). Element 0 also
   writes the count.

The passes read and write element by element: `runs` (CPU-class) gives an invocation RUN
consecutive elements, `tiles` (GPU-class) one. The input is any 8-32-bit type, with its
own strides (the flags pass reads it through its coordinates); the outputs UINT32 with
their own strides.
"""

from __future__ import annotations

from typing import NamedTuple

from ..errors import InternalError
from ..tensor_desc import TensorDesc
from ..types import AxisDirection, DataType
from . import composite, scan
from .base import KernelFamily, element_bits
from .builder import Dispatch, KernelPlan, input_buffer, output_buffer

#: Elements per invocation of the passes under `runs` (the CPU-class strategy).
RUN = 64
WORKGROUP_SIZE = 64
PASSES = ("flags", "write")


class Compaction(NamedTuple):
    """What the family computes: the coordinates of `input`'s non-zero elements, the last
    `columns` axes of each, into `coordinates` [.., M, columns] and their number into
    `count` (module docstring)."""

    op: str
    input: TensorDesc
    count: TensorDesc
    coordinates: TensorDesc

    @property
    def columns(self) -> int:
        return self.coordinates.sizes[-1]

    @property
    def elements(self) -> int:
        return self.input.element_count

    def value(self) -> TensorDesc:
        """The flags and the positions: packed UINT32 [M]."""
        return TensorDesc(DataType.UINT32, (self.elements,))

    def scan(self) -> scan.Scan:
        return scan.Scan("cumulative_summation.wgsl.j2", self.value(), self.value(), 0, AxisDirection.INCREASING,
                         False)


class _Pass(NamedTuple):
    name: str  # one of PASSES
    problem: Compaction


def _run(strategy: str) -> int:
    return RUN if strategy == "runs" else 1


class PassFamily(KernelFamily):
    """The two passes of the compaction around the scan (module docstring): `flags` reads
    input 0 and writes output 0 (the flags); `write` reads input 0 (the positions) and
    writes output 0 (the count) and output 1 (the coordinates)."""

    strategies = scan.STRATEGIES
    options = ()

    def strategies_for(self, problem: _Pass, caps) -> tuple[str, ...]:
        return scan.FAMILY.strategies_for(problem.problem.scan(), caps)

    def plan(self, problem: _Pass, caps, strategy: str) -> KernelPlan:
        name, p = problem
        if strategy not in self.strategies or name not in PASSES:
            raise InternalError(f"{p.op}: no {name!r} pass under strategy {strategy!r}")
        m, run, inp = p.elements, _run(strategy), p.input
        params = {"pass": name, "rank": inp.rank, "bits": element_bits(inp),
                  "float": inp.data_type.is_float}
        uniforms = {"count": m, "run": run, "sizes": inp.sizes}
        if name == "flags":
            buffers = (input_buffer(0, "input"), output_buffer(0, "flags", 32))
            uniforms["in_strides"] = inp.effective_strides
        else:
            strides = p.coordinates.effective_strides
            buffers = (input_buffer(0, "positions"), output_buffer(0, "count", 32),
                       output_buffer(1, "coordinates", 32))
            uniforms.update(first_axis=inp.rank - p.columns, row_stride=strides[-2], column_stride=strides[-1])
        return KernelPlan((Dispatch("nonzero_coordinates.wgsl.j2", params, buffers, uniforms, -(-m // run),
                                    WORKGROUP_SIZE),))


PASS_FAMILY = PassFamily()


class CompactionFamily(composite.CompositeFamily):
    """Flags, the scan family's inclusive sum, the write pass (module docstring); the
    strategy is the scan's."""

    strategies = scan.STRATEGIES
    options = ()

    def strategies_for(self, problem: Compaction, caps) -> tuple[str, ...]:
        return scan.FAMILY.strategies_for(problem.scan(), caps)

    def steps(self, problem: Compaction, caps, strategy: str, *, element_stores: bool = False) -> composite.Composition:
        value = composite.value_bytes(problem.value())
        flags, positions = (composite.VALUE, 0), (composite.VALUE, 1)
        return composite.Composition((
            composite.Step(PASS_FAMILY, _Pass("flags", problem), strategy, composite.own(1), (flags,)),
            composite.Step(scan.FAMILY, problem.scan(), strategy, (flags,), (positions,)),
            composite.Step(PASS_FAMILY, _Pass("write", problem), strategy, (positions,),
                           composite.own(2, composite.OUTPUT)),
        ), (value, value))


FAMILY = CompactionFamily()
