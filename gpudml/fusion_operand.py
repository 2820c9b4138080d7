"""Operand-load fusion (gpudml/fusion.py's group_nodes asks `dequantized_operands`): a GEMM
whose B is the value of a DEQUANTIZE runs as one kernel that dequantizes B in its operand load
(kernels/dequantize_gemm.py), the graph ONNX Runtime's DirectML execution provider builds for
MatMulNBits: the 4-bit weight is read as it is stored, never expanded in memory.

The rule: the DEQUANTIZE's value is no graph output, is read by that GEMM alone and only as
its B, as it is (the GEMM's b_tensor is the value's desc: packed, 2-D) in a 2-D GEMM of the
same float type; the kernel's bindings fit the adapter's (BINDINGS, and a graph epilogue's
tensors where the GEMM stores element-wise nodes: the fused kernel is then the epilogue's
producer, `residual + MatMulNBits(x)` one kernel).
Results: the GEMM of the dequantized weight (each weight rounds to float32 as DEQUANTIZE
rounds it; the gemv strategy takes the scale out of each block's sum), within GEMM's
documented precision.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .kernels import dequantize_gemm
from .kernels.base import ProblemPlanner
from .ops import spec_for
from .ops.gemm import GemmOperatorDesc
from .ops.spec import tensor_fields
from .tensor_desc import TensorDesc
from .types import MatrixTransform

#: Storage buffers the fused kernel binds at most: output, A, A's blocks, the quantized bytes,
#: C, the scale, the zero point.
BINDINGS = 7


@dataclass(frozen=True)
class FusedDequantizeGemmDesc:
    """`gemm` reading its B as `dequantize`'s value: its inputs are A, the DEQUANTIZE's input,
    C (if the GEMM has one), the scale and the zero point (if any); its output the GEMM's."""

    input_tensors: tuple[TensorDesc, ...]
    output_tensor: TensorDesc
    dequantize: object
    gemm: GemmOperatorDesc


def problem(desc: FusedDequantizeGemmDesc) -> dequantize_gemm.DequantizedGemm:
    dq, g = desc.dequantize, desc.gemm
    return dequantize_gemm.DequantizedGemm(spec_for(g).planner.problem(g), spec_for(dq).planner.problem(dq),
                                           g.trans_b == MatrixTransform.TRANSPOSE)


PLANNER = ProblemPlanner(problem, dequantize_gemm.FAMILY)


class FusedDequantizeGemmSpec:
    """What runs a FusedDequantizeGemmDesc (an ops.spec.Operation): DEQUANTIZE's reference,
    then GEMM's, within GEMM's documented precision."""

    name = "Fused(Dequantize>Gemm)"
    planner = PLANNER

    @staticmethod
    def _split(desc: FusedDequantizeGemmDesc, values: list) -> tuple[list, list]:
        """(the GEMM's inputs but B, the DEQUANTIZE's) of the fused desc's inputs."""
        has_c = desc.gemm.c_tensor is not None
        gemm_own = [values[0]] + ([values[2]] if has_c else [])
        return gemm_own, [values[1]] + values[2 + has_c:]

    def sample_buffers(self, desc: FusedDequantizeGemmDesc, rng: np.random.Generator) -> list[np.ndarray]:
        g = spec_for(desc.gemm).sample_buffers(desc.gemm, rng)
        d = spec_for(desc.dequantize).sample_buffers(desc.dequantize, rng)
        return [g[0], d[0]] + g[2:] + d[1:]

    def expected_outputs(self, desc: FusedDequantizeGemmDesc, logical_inputs) -> tuple[list[np.ndarray], list]:
        gemm_own, dq_inputs = self._split(desc, list(logical_inputs))
        weight = spec_for(desc.dequantize).reference_outputs(desc.dequantize, dq_inputs)[0]
        return spec_for(desc.gemm).expected_outputs(desc.gemm, [gemm_own[0], weight, *gemm_own[1:]])

    def traffic(self, desc: FusedDequantizeGemmDesc) -> int:
        inputs, outputs = tensor_fields(desc)
        return sum(d.buffer_bytes if d.data_type.size == 1 else d.element_count * d.data_type.size
                   for _, d in inputs + outputs)


SPEC = FusedDequantizeGemmSpec()


def dequantized_operands(nodes, producer, needed, outputs, value_descs, max_bindings, taken) -> dict[int, int]:
    """{GEMM node: DEQUANTIZE node} of the pairs that fuse (module docstring); `taken`: nodes
    already fused otherwise (the roots of epilogues)."""
    readers: dict[int, int] = {}
    for i in needed:
        for v in nodes[i].inputs:
            readers[v] = readers.get(v, 0) + 1
    pairs = {}
    for i in sorted(needed):
        node = nodes[i]
        if i in taken or getattr(node.spec, "key", None) != "gemm" or len(node.inputs) < 2:
            continue
        v = node.inputs[1]
        j = producer.get(v)
        if j is None or j in taken or getattr(nodes[j].spec, "key", None) != "dequantize" or v in outputs:
            continue
        g, dq = node.desc, nodes[j].desc
        if readers.get(v) != 1 or v in node.inputs[2:] or node.inputs[0] == v:
            continue
        value = value_descs[v]
        if g.b_tensor != value or value != dq.output_tensor or not value.is_packed or value.rank != 2 \
                or g.output_tensor.rank != 2 or dq.output_tensor.data_type != g.output_tensor.data_type:
            continue
        if max_bindings is not None and max_bindings < BINDINGS:
            continue
        pairs[i] = j
    return pairs


def fused_desc(gemm_node, dq_node) -> tuple[FusedDequantizeGemmDesc, tuple[int, ...]]:
    """(the fused desc, its input value ids in the desc's order)."""
    g, dq = gemm_node.desc, dq_node.desc
    tensors = [g.a_tensor, dq.input_tensor]
    values = [gemm_node.inputs[0], dq_node.inputs[0]]
    if g.c_tensor is not None:
        tensors.append(g.c_tensor)
        values.append(gemm_node.inputs[2])
    tensors += [t for t in (dq.scale_tensor, dq.zero_point_tensor) if t is not None]
    values += list(dq_node.inputs[1:])
    return FusedDequantizeGemmDesc(tuple(tensors), g.output_tensor, dq, g), tuple(values)


__all__ = ["SPEC", "FusedDequantizeGemmDesc", "dequantized_operands", "fused_desc"]
