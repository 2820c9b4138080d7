"""The one-hot family (DML_ONE_HOT): output element o is ValuesTensor's OnValue where the
index of o's sequence (the indices at o with the `axis` coordinate 0) selects o's
coordinate on `axis`, else its OffValue. An index of a signed type below 0 counts from
the end of the sequence; one outside it (after that) selects nothing: the whole sequence
is OffValue, as the page says. Pure bit movement: every data type, bit-exact.

Strategies: `runs` (CPU-class) gives an invocation a run of RUN consecutive outputs
(row-major), `elements` (GPU-class) one output per invocation.
"""

from __future__ import annotations

from typing import NamedTuple

from ..errors import InternalError
from ..tensor_desc import TensorDesc
from ..types import DataType
from .base import RUNS_ELEMENTS, KernelFamily, element_bits, runs_order
from .builder import Dispatch, KernelPlan, input_buffer, output_buffer

STRATEGIES = RUNS_ELEMENTS
RUN = 16
WORKGROUP_SIZE = 64


class OneHot(NamedTuple):
    """The indices (the output's sizes, 1 on `axis`), the values (OffValue at element 0,
    OnValue at `on_offset`, an element offset), the output."""

    op: str
    indices: TensorDesc
    values: TensorDesc
    output: TensorDesc
    axis: int
    on_offset: int


def strategies_for(p: OneHot, caps) -> tuple[str, ...]:
    """`runs` first on software adapters and without caps, `elements` first on GPUs."""
    return runs_order(caps)


def plan(p: OneHot, caps, strategy: str) -> KernelPlan:
    if strategy not in strategies_for(p, caps):
        raise InternalError(f"{p.op}: strategy {strategy} cannot run {p}")
    bits = element_bits(p.output)
    count = p.output.element_count
    run = RUN if strategy == "runs" else 1
    idx_strides = tuple(0 if d == p.axis else s for d, s in enumerate(p.indices.effective_strides))
    params = {"bits": bits, "rank": p.output.rank, "index_bits": element_bits(p.indices),
              "index_signed": p.indices.data_type in (DataType.INT32, DataType.INT64)}
    uniforms = {"out_sizes": p.output.sizes, "out_strides": p.output.effective_strides, "idx_strides": idx_strides,
                "count": count, "run": run, "axis": p.axis, "on_offset": p.on_offset}
    buffers = (output_buffer(0, "output", bits, "stores"), input_buffer(0, "indices"), input_buffer(1, "vals"))
    return KernelPlan((Dispatch("one_hot.wgsl.j2", params, buffers, uniforms, -(-count // run), WORKGROUP_SIZE),))


class OneHotFamily(KernelFamily):
    """The one-hot family: the module's functions over a `OneHot`."""

    strategies = STRATEGIES

    def strategies_for(self, problem: OneHot, caps) -> tuple[str, ...]:
        return strategies_for(problem, caps)

    def plan(self, problem: OneHot, caps, strategy: str) -> KernelPlan:
        return plan(problem, caps, strategy)


FAMILY = OneHotFamily()
