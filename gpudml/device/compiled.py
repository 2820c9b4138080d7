"""Operator (a validated desc) and CompiledOperator (pipelines, uniforms, dispatch)."""

from __future__ import annotations

import weakref
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from .. import compiler
from ..errors import InternalError, InvalidArgumentError
from ..kernels import templates
from ..ops.spec import Operation, grouped_outputs, tensor_groups
from ..runtime.guard import guarded
from ..runtime.profiler import DispatchLabel, Work
from ..runtime.storage import storage_range
from ..runtime.tensor import Tensor, execute_results, host_buffer, logical_from_raw, staged_inputs
from ..tensor_desc import TensorDesc, bound_bytes

BIND_GROUP_CACHE_SIZE = 16


@dataclass(frozen=True)
class Operator:
    """IDMLOperator: a desc validated at the device's feature level."""

    device: object
    desc: object
    spec: Operation  # the operator's OpSpec, or a graph's fused kernel's FusedSpec


@dataclass
class _Dispatch:
    pipeline: object
    uniforms: object
    kernel: object  # builder.Kernel


class CompiledOperator:
    """IDMLCompiledOperator: everything that does not change between executes is prepared
    once here (the Program, pipelines, uniform buffers, scratch buffers)."""

    def __init__(self, device, operator: Operator, strategy: str | None = None, options: dict | None = None):
        self.device = device
        self.desc = operator.desc
        self.options = dict(options or {})  # the plan options it was compiled with
        self.name = operator.spec.name
        ctx = device._ctx
        self.program = compiler.compile(operator.desc, device.caps, strategy=strategy, options=options,
                                        template_path=device.template_path, operation=operator.spec)
        self.inputs, self.outputs = list(self.program.inputs), list(self.program.outputs)
        # What it holds goes back when it dies (_give_back); the finalizer holds these
        # containers, so that a cycle collected with the operator never has finalized its
        # buffers first (and the pool taken back released ones).
        self._dispatches: list[_Dispatch] = []
        self._scratch: list = []
        self._groups: OrderedDict = OrderedDict()
        weakref.finalize(self, _give_back, ctx.pool, self._scratch, self._dispatches, self._groups).atexit = False
        for kernel in self.program.kernels:
            pipe = self._pipeline(ctx, kernel)
            uniforms = ctx.uniform_buffer(kernel.uniform_bytes)
            self._dispatches.append(_Dispatch(pipe, uniforms, kernel))
        self._runs = [(d.pipeline.pipeline, d.kernel.workgroups) for d in self._dispatches]  # what record needs
        # What execute needs of each new output: (buffer bytes, desc, whether it starts zeroed).
        self._fresh = [(d.buffer_bytes, d, not d.covers_buffer) for _, d in self.outputs]
        self._output_purposes = [f"{self.name}'s {field} ({d.data_type.name} {list(d.sizes)})"
                                 for field, d in self.outputs]
        self._zeroed = any(zeroed for _, _, zeroed in self._fresh)
        groups = tensor_groups(self.desc)[1]
        self._one_output = len(groups) == 1 and isinstance(groups[0][1], TensorDesc)
        labels = tuple(DispatchLabel(device, self.name, self.program.strategy, i, self._bound_bytes(kernel))
                       for i, kernel in enumerate(self.program.kernels))
        self._work = Work(labels, self.name, sum(label.bytes for label in labels))
        scratch = f"{self.name}'s scratch (strategy {self.program.strategy})"
        self._scratch.extend(ctx.pool.acquire(n, device.caps, scratch) for n in self.program.scratch_bytes)

    def _pipeline(self, ctx, kernel):
        try:
            return ctx.pipeline(kernel.source)
        except InternalError as exc:
            custom = templates.search_path(self.device.template_path)[:-1]
            if not custom:
                raise
            raise InternalError(f"{kernel.template} from the template folders {', '.join(custom)} (before gpudml's "
                                f"own) did not compile; unless gpudml's own templates are at fault, the error is "
                                f"in those: {exc}") from exc

    def _bound_bytes(self, kernel) -> int:
        """Bytes of the tensors' elements and the scratch the kernel binds (what it may move)."""
        sizes = {("input", i): d.element_count * d.data_type.size for i, (_, d) in enumerate(self.program.inputs)}
        sizes.update({("output", i): d.element_count * d.data_type.size
                      for i, (_, d) in enumerate(self.program.outputs)})
        sizes.update({("scratch", i): n for i, n in enumerate(self.program.scratch_bytes)})
        return sum(sizes[key] for key in {b.key for b in kernel.buffers})

    @property
    def wgsl(self) -> list[str]:
        """The generated WGSL source of each dispatch."""
        return self.program.wgsl

    @property
    def strategy(self) -> str:
        """The kernel strategy this operator runs."""
        return self.program.strategy

    @property
    def strategies(self) -> tuple[str, ...]:
        """The strategies that could run this description (the chosen one first)."""
        return self.program.strategies

    def __repr__(self) -> str:
        n = len(self.program.kernels)
        return f"CompiledOperator({self.name}, strategy {self.strategy}, {n} dispatch{'es' if n != 1 else ''})"

    # -- execute -----------------------------------------------------------------------
    @guarded(lambda self: self.device._ctx)
    def execute(self, inputs, outputs=None):
        """Run once. numpy inputs give numpy outputs; if every input is a Tensor, outputs are
        Tensors that stay on the GPU. `outputs` may name Tensors to write into (returned)."""
        if isinstance(inputs, (np.ndarray, Tensor)) or not isinstance(inputs, (list, tuple)):
            raise InvalidArgumentError(f"{self.name}.execute: inputs must be a list of {len(self.inputs)} "
                                       f"numpy arrays or Tensors, got {type(inputs).__name__}")
        if len(inputs) != len(self.inputs):
            raise InvalidArgumentError(
                f"{self.name}.execute: expected {len(self.inputs)} inputs "
                f"({', '.join(n for n, _ in self.inputs)}), got {len(inputs)}")
        # Every argument is checked before any GPU work (and nothing staged can leak).
        checked = []
        for x, (field, desc) in zip(inputs, self.inputs):
            if isinstance(x, Tensor):
                self._check_tensor(x, field, desc)
                checked.append(x)
            else:
                checked.append(host_buffer(x, desc, f"{self.name}.execute: {field}"))
        if outputs is not None:
            self._check_outputs(outputs, checked)
        with staged_inputs(self.device, checked, [d for _, d in self.inputs], self.name) as in_buffers:
            results, clears = self._output_tensors(outputs)
            self._record(in_buffers, [t.buffer for t in results], clears)
        return execute_results(results, outputs, inputs)

    @guarded(lambda self: self.device._ctx)
    def run(self, tensors: list) -> list:
        """`execute` for the functional API, which built the call's key from these very
        Tensors' descs and devices: one Tensor per input, of this operator's descs, on its
        device. Only whether one was freed is left to check; new output Tensors come back."""
        in_buffers = [t.buffer for t in tensors]
        if None in in_buffers:
            field = self.inputs[in_buffers.index(None)][0]
            raise InvalidArgumentError(f"{self.name}: {field}: the Tensor was freed")
        device = self.device
        pool, caps = device._ctx.pool, device.caps
        results = [Tensor(device, pool.acquire(nbytes, caps, what), d)
                   for (nbytes, d, _), what in zip(self._fresh, self._output_purposes)]
        clears = [t.buffer for t, (_, _, zeroed) in zip(results, self._fresh) if zeroed] if self._zeroed else ()
        self._record(in_buffers, [t.buffer for t in results], clears)
        return results

    def record_buffers(self, in_buffers: list, out_buffers: list, clears) -> None:
        """A compiled graph's step (runtime/executor.py): record on these buffers, which the
        executor's plan vouches for (checked at compile: the descs' data types and bytes;
        the outputs new pooled buffers), after clearing `clears`. No check, no Tensor."""
        self._record(in_buffers, out_buffers, clears)

    def grouped(self, results: list):
        """`results` (one per output tensor) as the functional form returns them
        (ops.spec.grouped_outputs; the usual single output without working it out again)."""
        return results[0] if self._one_output else grouped_outputs(self.desc, results)

    def _check_tensor(self, t: Tensor, field: str, desc) -> None:
        where = f"{self.name}.execute: {field}"
        if t.device._ctx is not self.device._ctx:
            raise InvalidArgumentError(f"{where}: the Tensor lives on another adapter ({t.device.adapter_name})")
        if t.buffer is None:
            raise InvalidArgumentError(f"{where}: the Tensor was freed")
        if t.data_type != desc.data_type:
            raise InvalidArgumentError(
                f"{where}: Tensor data type {t.data_type.name} differs from the desc's {desc.data_type.name}")
        # The Tensor's own desc, not its (pooled, rounded-up) buffer: bytes past the desc
        # are not the Tensor's to read or write.
        if t.desc.buffer_bytes < desc.buffer_bytes:
            raise InvalidArgumentError(
                f"{where}: Tensor buffer of {t.desc.buffer_bytes} bytes is smaller than "
                f"{field}.total_tensor_size_in_bytes {desc.total_tensor_size_in_bytes}")

    def _output_tensors(self, outputs) -> tuple[list[Tensor], list]:
        """(output Tensors, buffers to clear first). A new output whose kernel leaves bytes
        unwritten (strided desc, tail bytes) starts zeroed: pooled buffers hold old data."""
        if outputs is None:
            device = self.device
            pool, caps = device._ctx.pool, device.caps
            tensors = [Tensor(device, pool.acquire(nbytes, caps, what), d)
                       for (nbytes, d, _), what in zip(self._fresh, self._output_purposes)]
            clears = [t.buffer for t, (_, _, zeroed) in zip(tensors, self._fresh) if zeroed]
            return tensors, clears
        return list(outputs), []

    def _check_outputs(self, outputs, inputs) -> None:
        if not isinstance(outputs, (list, tuple)) or len(outputs) != len(self.outputs):
            raise InvalidArgumentError(f"{self.name}.execute: outputs must be a list of {len(self.outputs)} Tensors")
        for k, (t, (field, desc)) in enumerate(zip(outputs, self.outputs)):
            if not isinstance(t, Tensor):
                raise InvalidArgumentError(f"{self.name}.execute: outputs must be Tensors, got {type(t).__name__}")
            self._check_tensor(t, field, desc)
            for u, (other, _) in zip(outputs[:k], self.outputs):
                if u.buffer is t.buffer:
                    raise InvalidArgumentError(f"{self.name}.execute: {field} is the Tensor given as {other}; each "
                                               f"output needs a Tensor of its own")
            for x, (in_field, _) in zip(inputs, self.inputs):
                if isinstance(x, Tensor) and x.buffer is t.buffer:
                    raise InvalidArgumentError(
                        f"{self.name}.execute: {field} is the Tensor given as {in_field}; an operator never "
                        f"writes into its inputs (in-place execution would race): pass another output Tensor")

    def _record(self, in_buffers, out_buffers, clears) -> None:
        key = tuple([b._gpudml_serial for b in in_buffers] + [b._gpudml_serial for b in out_buffers])
        ctx = self.device._ctx
        with ctx.lock:  # one Device may serve several threads
            dispatches = self._groups.get(key)  # (pipeline, bind group, grid) per dispatch
            if dispatches is None:
                groups = self._bind_groups(in_buffers, out_buffers)
                dispatches = [(pipeline, g, grid) for (pipeline, grid), g in zip(self._runs, groups)]
                self._groups[key] = dispatches
                if len(self._groups) > BIND_GROUP_CACHE_SIZE:
                    self._groups.popitem(last=False)
            else:
                self._groups.move_to_end(key)
            ctx.recorder.record(dispatches, clears, self._work)

    def _bind_groups(self, in_buffers, out_buffers) -> list:
        # A Tensor's buffer may be larger than the desc (even larger than a binding may be):
        # bind only the desc's bytes, rounded up to 16 (kernels may read them as vec4<u32>).
        buffers = {("input", i): (b, d.buffer_bytes) for i, (b, (_, d)) in enumerate(zip(in_buffers, self.inputs))}
        buffers.update({("output", i): (b, d.buffer_bytes)
                        for i, (b, (_, d)) in enumerate(zip(out_buffers, self.outputs))})
        buffers.update({("scratch", i): (b, n) for i, (b, n) in enumerate(zip(self._scratch,
                                                                             self.program.scratch_bytes))})
        ctx = self.device._ctx
        groups = []
        for dispatch in self._dispatches:
            resources = [r for b in dispatch.kernel.buffers for r in _bindings(b, *buffers[b.key])]
            resources.append(dispatch.uniforms)
            groups.append(ctx.bind_group(dispatch.pipeline, dict(enumerate(resources))))
        return groups


def _bindings(b, storage, nbytes: int) -> list[dict]:
    """The binding resources of kernel buffer `b` on `storage` (a wgpu buffer, or a Storage
    of several: runtime/storage.py) holding `nbytes`: one, or one per segment."""
    bound = bound_bytes(nbytes)
    if b.via:  # read through its blocks twin's bindings (builder.share_segments)
        return []
    if b.segments == 1 and not b.of_segments:
        return [storage_range(storage, 0, bound)]
    return [storage_range(storage, k * b.segment_bytes, min(b.segment_bytes, bound - k * b.segment_bytes))
            for k in range(b.first_segment, b.first_segment + b.segments)]


__all__ = ["Operator", "CompiledOperator", "logical_from_raw"]


def _give_back(pool, scratch: list, steps: list, groups: OrderedDict) -> None:
    """A dead CompiledOperator's resources, in whatever thread the garbage collector runs,
    so without waiting for the lock (BufferPool.release says why): scratch buffers back to
    the pool, the uniform buffers and bind groups handed over to be dropped."""
    for buf in scratch:
        pool.release(buf)
    pool.drop_later((steps, groups))
