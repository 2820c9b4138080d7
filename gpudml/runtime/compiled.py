"""Operator (a validated desc) and CompiledOperator (pipelines, uniforms, dispatch)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import codegen
from ..errors import InvalidArgumentError, UnsupportedError
from ..ops import tensor_fields
from .tensor import Tensor, host_buffer, logical_from_raw, new_buffer


@dataclass(frozen=True)
class Operator:
    """IDMLOperator: a desc validated at the device's feature level."""

    device: object
    desc: object
    module: object


@dataclass
class _Step:
    pipeline: object
    uniforms: object
    dispatch: object
    grid: tuple[int, int]


class CompiledOperator:
    """IDMLCompiledOperator: everything that does not change between executes, prepared once."""

    def __init__(self, device, operator: Operator):
        self.device = device
        self.desc = operator.desc
        ctx = device._ctx
        self.inputs, self.outputs = tensor_fields(operator.desc)
        self._check_bindings(ctx)
        plan = operator.module.plan(operator.desc, ctx.caps)
        self.plan = plan
        self.wgsl: list[str] = []
        self._steps: list[_Step] = []
        for dispatch in plan.dispatches:
            source = codegen.render(dispatch)
            self.wgsl.append(source)
            pipe = ctx.pipeline(source, dispatch.bindings)
            uniforms = ctx.device.create_buffer_with_data(
                data=codegen.uniform_bytes(dispatch), usage=_uniform_usage())
            self._steps.append(_Step(pipe, uniforms, dispatch, _grid(dispatch, ctx.caps)))
        self._scratch = [new_buffer(ctx, n) for n in plan.scratch_bytes]

    def _check_bindings(self, ctx) -> None:
        limit = ctx.caps.max_storage_binding_size
        for name, desc in self.inputs + self.outputs:
            if desc.buffer_bytes > limit:
                raise UnsupportedError(
                    f"{type(self.desc).__name__}: {name} needs a {desc.buffer_bytes}-byte binding, above the "
                    f"adapter's max-storage-buffer-binding-size {limit} ({ctx.caps.name})")

    def execute(self, inputs, outputs=None):
        """Run once. numpy inputs give numpy outputs; if every input is a Tensor, outputs are
        Tensors that stay on the GPU. `outputs` may name Tensors to write into."""
        name = type(self.desc).__name__
        if isinstance(inputs, (np.ndarray, Tensor)) or not isinstance(inputs, (list, tuple)):
            raise InvalidArgumentError(f"{name}.execute: inputs must be a list of {len(self.inputs)} "
                                       f"numpy arrays or Tensors, got {type(inputs).__name__}")
        if len(inputs) != len(self.inputs):
            raise InvalidArgumentError(
                f"{name}.execute: expected {len(self.inputs)} inputs "
                f"({', '.join(n for n, _ in self.inputs)}), got {len(inputs)}")
        in_buffers = [self._input_buffer(x, field, desc) for x, (field, desc) in zip(inputs, self.inputs)]
        to_tensors = all(isinstance(x, Tensor) for x in inputs)
        out_tensors = self._output_tensors(outputs)
        self._record([t.buffer for t in out_tensors], in_buffers)
        if to_tensors or outputs is not None:
            return out_tensors
        return [t.numpy() for t in out_tensors]

    def _input_buffer(self, x, field: str, desc):
        where = f"{type(self.desc).__name__}.execute: {field}"
        if isinstance(x, Tensor):
            self._check_tensor(x, field, desc, where)
            return x.buffer
        flat = host_buffer(x, desc, where)
        return new_buffer(self.device._ctx, desc.buffer_bytes, flat)

    def _check_tensor(self, t: Tensor, field: str, desc, where: str) -> None:
        if t.device._ctx is not self.device._ctx:
            raise InvalidArgumentError(f"{where}: the Tensor lives on another adapter ({t.device.adapter_name})")
        if t.data_type != desc.data_type:
            raise InvalidArgumentError(
                f"{where}: Tensor data type {t.data_type.name} differs from the desc's {desc.data_type.name}")
        if t.nbytes < desc.buffer_bytes:
            raise InvalidArgumentError(
                f"{where}: Tensor buffer of {t.nbytes} bytes is smaller than {field}.total_tensor_size_in_bytes "
                f"{desc.total_tensor_size_in_bytes}")

    def _output_tensors(self, outputs) -> list[Tensor]:
        if outputs is None:
            return [Tensor(self.device, new_buffer(self.device._ctx, d.buffer_bytes), d) for _, d in self.outputs]
        name = type(self.desc).__name__
        if not isinstance(outputs, (list, tuple)) or len(outputs) != len(self.outputs):
            raise InvalidArgumentError(f"{name}.execute: outputs must be a list of {len(self.outputs)} Tensors")
        for t, (field, desc) in zip(outputs, self.outputs):
            if not isinstance(t, Tensor):
                raise InvalidArgumentError(f"{name}.execute: outputs must be Tensors, got {type(t).__name__}")
            self._check_tensor(t, field, desc, f"{name}.execute: {field}")
        return [Tensor(self.device, t.buffer, d) for t, (_, d) in zip(outputs, self.outputs)]

    def _record(self, out_buffers, in_buffers) -> None:
        ctx = self.device._ctx
        buffers = {f"input:{i}": b for i, b in enumerate(in_buffers)}
        buffers.update({f"output:{i}": b for i, b in enumerate(out_buffers)})
        buffers.update({f"scratch:{i}": b for i, b in enumerate(self._scratch)})
        with ctx.lock:
            encoder = ctx.device.create_command_encoder()
            for step in self._steps:
                entries = [{"binding": i, "resource": {"buffer": buffers[b.tensor]}}
                           for i, b in enumerate(step.dispatch.bindings)]
                entries.append({"binding": len(entries), "resource": {"buffer": step.uniforms}})
                group = ctx.device.create_bind_group(layout=step.pipeline.layout, entries=entries)
                cpass = encoder.begin_compute_pass()
                cpass.set_pipeline(step.pipeline.pipeline)
                cpass.set_bind_group(0, group)
                cpass.dispatch_workgroups(*step.grid, 1)
                cpass.end()
            ctx.device.queue.submit([encoder.finish()])


def _uniform_usage():
    import wgpu

    return wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST


def _grid(dispatch, caps) -> tuple[int, int]:
    """Workgroups as (x, y): more than max-per-dimension fold into rows."""
    groups = max(1, -(-dispatch.invocations // dispatch.workgroup_size))
    limit = caps.max_workgroups_per_dimension
    x = min(groups, limit)
    y = -(-groups // x)
    if y > limit:
        raise UnsupportedError(
            f"gpudml: {dispatch.invocations} invocations need {groups} workgroups, more than {limit}^2")
    return x, y


__all__ = ["Operator", "CompiledOperator", "logical_from_raw"]
