"""A user's compiled HLSL kernel (gpudml/hlsl.py) bound to a Device, its tensors' descs, a
grid and its constants: `KernelCall`, which records like a compiled operator (batches,
profiles, a graph's steps: runtime/executor.py's protocol) and checks everything it is
handed before any GPU work.

Robust buffer access: each buffer is bound with exactly its desc's bytes (rounded up to 16),
and wgpu's shader translation (naga) bounds-checks every buffer index against its binding,
so no kernel reads or writes outside its tensors.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError, UnsupportedError
from ..hlsl import BUFFER_TYPES, CompiledHLSL, Interface, numbered
from ..runtime.context import Pipeline
from ..runtime.guard import gpu_errors
from ..runtime.profiler import DispatchLabel, Work
from ..runtime.storage import Storage, storage_range
from ..runtime.tensor import Tensor, execute_results, host_buffer, staged_inputs
from ..tensor_desc import TensorDesc, bound_bytes

STRATEGY = "hlsl"


def pipeline(device, kernel: CompiledHLSL) -> Pipeline:
    """The kernel's compute pipeline on the device's adapter, made once per adapter. What the
    adapter rejects is the kernel's fault: InvalidArgumentError with the generated code."""
    ctx = device._ctx
    cache = ctx.__dict__.setdefault("_hlsl_pipelines", {})
    key = (kernel.code, kernel.interface.entry)
    with ctx.lock:
        hit = cache.get(key)
        if hit is not None:
            return hit

        def rejected(exc):
            shown = (f"the {kernel.compiler} compiler's WGSL:\n{numbered(kernel.code)}" if kernel.language == "wgsl"
                     else f"the source:\n{numbered(kernel.source)}")
            return InvalidArgumentError(f"HLSL kernel {kernel.entry}: the adapter {ctx.caps.name} rejected what "
                                        f"{kernel.compiler} made of it: {exc}\n{shown}")

        entry = ctx.create_pipeline(kernel.code, kernel.interface.entry, rejected)
        cache[key] = entry
        return entry


def check_interface(interface: Interface, n_inputs: int, n_outputs: int, where: str) -> None:
    """The kernel's registers against the tensors given: t0..t<n-1> and u0..u<m-1>, each bound."""
    def listed(resources):
        return ", ".join(f"{r.register} ({r.name})" for r in resources) or "none"

    ins, outs = interface.inputs, interface.outputs
    if [r.index for r in ins] != list(range(len(ins))) or [r.index for r in outs] != list(range(len(outs))):
        raise InvalidArgumentError(f"{where}: the kernel binds {listed(ins)} and {listed(outs)}; inputs are bound "
                                   f"t0, t1, ... and outputs u0, u1, ... in order, with no gap")
    if len(ins) != n_inputs or len(outs) != n_outputs:
        raise InvalidArgumentError(
            f"{where}: the kernel binds inputs {listed(ins)} and outputs {listed(outs)}; {n_inputs} input"
            f"{'s' if n_inputs != 1 else ''} and {n_outputs} output{'s' if n_outputs != 1 else ''} were given "
            f"(registers the kernel declares but never uses are compiled away)")
    for r in ins:
        if r.writable:
            raise InvalidArgumentError(f"{where}: {r.register} ({r.name}) is writable; inputs are read-only "
                                       f"(StructuredBuffer, ByteAddressBuffer)")


def check_types(interface: Interface, descs: list[TensorDesc], n_inputs: int, where: str) -> None:
    for r, desc in zip(interface.inputs + interface.outputs, descs):
        accepted = BUFFER_TYPES.get(r.element)
        if r.element and accepted is not None and desc.data_type.name not in accepted:
            side = "input" if r.register[0] == "t" else "output"
            raise InvalidArgumentError(f"{where}: {side} {r.register} ({r.name}) holds {r.element}, the tensor is "
                                       f"{desc.data_type.name}")


def check_grid(grid, caps, interface: Interface, where: str) -> tuple[int, int, int]:
    if not isinstance(grid, (tuple, list)) or not 1 <= len(grid) <= 3 or not all(
            isinstance(g, (int, np.integer)) and not isinstance(g, bool) for g in grid):
        raise InvalidArgumentError(f"{where}: grid must be a tuple of 1 to 3 workgroup counts (x, y, z), got "
                                   f"{grid!r}")
    grid = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
    limit = caps.max_workgroups_per_dimension
    if any(g < 1 or g > limit for g in grid):
        raise InvalidArgumentError(f"{where}: grid {list(grid)}: each count must be 1..{limit} (the adapter's "
                                   f"max-compute-workgroups-per-dimension)")
    size = interface.workgroup_size
    invocations = size[0] * size[1] * size[2]
    if invocations > caps.max_invocations_per_workgroup:
        raise InvalidArgumentError(f"{where}: [numthreads({', '.join(map(str, size))})] is {invocations} "
                                   f"invocations per workgroup; the adapter allows "
                                   f"{caps.max_invocations_per_workgroup}")
    if interface.subgroups and "subgroup" not in caps.features:
        raise UnsupportedError(f"{where}: the kernel uses wave intrinsics, and the adapter {caps.name} has no "
                               f"subgroup operations; compile a variant without them for it (defines)")
    return grid


class KernelCall:
    """One HLSL kernel bound to its tensors' descs, grid and constants on a Device: what a
    compiled operator is to a description (runtime/executor.py's step protocol: `inputs`,
    `outputs`, `name`, `strategy`, `program.kernels`, `record_buffers`)."""

    def __init__(self, device, kernel: CompiledHLSL, name: str, input_descs, output_descs, grid, constant_bytes: bytes):
        self.device = device
        self.kernel = kernel
        self.name = name
        self.strategy = STRATEGY
        self.inputs = [(r.name, d) for r, d in zip(kernel.interface.inputs, input_descs)]
        self.outputs = [(r.name, d) for r, d in zip(kernel.interface.outputs, output_descs)]
        self.grid = grid
        self.program = _Program((kernel,), STRATEGY)
        caps = device.caps
        for field, desc in self.inputs + self.outputs:
            if desc.buffer_bytes > caps.max_storage_binding_size:
                raise UnsupportedError(f"{name}: {field}: {desc.buffer_bytes} bytes are more than one binding may "
                                       f"hold on {caps.name} ({caps.max_storage_binding_size}); HLSL kernels bind "
                                       f"each tensor whole")
        ctx = device._ctx
        with gpu_errors(ctx):
            self._pipeline = pipeline(device, kernel)
            self._uniforms = None
            if kernel.interface.cbuffer_binding is not None:
                self._uniforms = ctx.uniform_buffer(constant_bytes)
        nbytes = sum(d.element_count * d.data_type.size for _, d in self.inputs + self.outputs)
        self._work = Work((DispatchLabel(device, name, STRATEGY, 0, nbytes),), name, nbytes)
        self._groups: dict = {}
        self._clear_given = False  # zero the outputs it is handed too (as a graph's step)

    def graph_step(self) -> KernelCall:
        """This call as a graph's step: the outputs the executor hands it start zeroed, as a
        new output does (what the kernel leaves unwritten reads as zero)."""
        step = copy.copy(self)
        step._clear_given = True
        return step

    def __repr__(self) -> str:
        return f"KernelCall({self.name}, grid {list(self.grid)})"

    def execute(self, inputs, outputs=None):
        """Record the dispatch. `inputs`: Tensors or numpy arrays (their buffer contents);
        `outputs`: Tensors to write into, or None (new zeroed Tensors). Returns the output
        Tensors, or numpy arrays where any input was a numpy array and no outputs were given."""
        where = self.name
        checked = []
        for x, (field, desc) in zip(inputs, self.inputs):
            if isinstance(x, Tensor):
                _check_tensor(self.device, x, desc, f"{where}: input {field}")
                checked.append(x)
            else:
                checked.append(host_buffer(x, desc, f"{where}: input {field}"))
        if outputs is not None:
            for t, (field, desc) in zip(outputs, self.outputs):
                if not isinstance(t, Tensor):
                    raise InvalidArgumentError(f"{where}: outputs given as Tensors must all be Tensors")
                _check_tensor(self.device, t, desc, f"{where}: output {field}")
                if any(isinstance(x, Tensor) and x.buffer is t.buffer for x in checked):
                    raise InvalidArgumentError(f"{where}: output {field} is also an input; pass another Tensor")
        ctx = self.device._ctx
        with gpu_errors(ctx), staged_inputs(self.device, checked, [d for _, d in self.inputs],
                                             "an HLSL kernel") as in_buffers:
            if outputs is None:
                results = [Tensor(self.device, ctx.pool.acquire(d.buffer_bytes, self.device.caps,
                                                                f"an output {field} of an HLSL kernel"), d)
                           for field, d in self.outputs]
                clears = [t.buffer for t in results]  # what the kernel leaves unwritten reads as zero
            else:
                results = list(outputs)
                clears = [t.buffer for t in results] if self._clear_given else []
            self._record(in_buffers, [t.buffer for t in results], clears)
        return execute_results(results, outputs, inputs)

    def record_buffers(self, in_buffers: list, out_buffers: list, clears) -> None:
        """A compiled graph's step (runtime/executor.py): record on buffers the executor's
        plan vouches for, after clearing `clears` (a graph_step: every output; `clears` are some of them)."""
        self._record(in_buffers, out_buffers, out_buffers if self._clear_given else clears)

    def _record(self, in_buffers, out_buffers, clears) -> None:
        for b in in_buffers + out_buffers:
            if isinstance(b, Storage):
                raise UnsupportedError(f"{self.name}: a tensor in several buffers (larger than the adapter's "
                                       f"max-buffer-size) cannot be bound whole")
        key = tuple(b._gpudml_serial for b in in_buffers + out_buffers)
        ctx = self.device._ctx
        with ctx.lock:
            group = self._groups.get(key)
            if group is None:
                resources = {}
                for r, b, (_, d) in zip(self.kernel.interface.inputs + self.kernel.interface.outputs,
                                        in_buffers + out_buffers, self.inputs + self.outputs):
                    resources[r.binding] = storage_range(b, 0, bound_bytes(d.buffer_bytes))
                if self._uniforms is not None:
                    resources[self.kernel.interface.cbuffer_binding] = self._uniforms
                group = ctx.bind_group(self._pipeline, resources)
                if len(self._groups) >= 16:
                    self._groups.pop(next(iter(self._groups)))
                self._groups[key] = group
            ctx.recorder.record([(self._pipeline.pipeline, group, self.grid)], clears, self._work)


@dataclass(frozen=True)
class _Program:
    kernels: tuple
    strategy: str


def _check_tensor(device, t: Tensor, desc: TensorDesc, where: str) -> None:
    if t.device._ctx is not device._ctx:
        raise InvalidArgumentError(f"{where}: the Tensor lives on another adapter ({t.device.adapter_name})")
    if t.buffer is None:
        raise InvalidArgumentError(f"{where}: the Tensor was freed")
    if t.data_type != desc.data_type or t.desc.buffer_bytes < desc.buffer_bytes:
        raise InvalidArgumentError(f"{where}: a Tensor of {t.desc!r}, expected {desc!r}")
