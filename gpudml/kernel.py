"""`gpudml.Kernel`: a user's HLSL compute shader, compiled once (gpudml/hlsl.py; kept in the
disk cache) and called like an operator: eagerly on numpy arrays or Tensors, or on a graph's
Expressions as an opaque node (no fusion across it). Runs through device/custom.py, so it
records like every operator: inside `device.batch()`, in `device.profile()` rows.

    k = gpudml.Kernel.from_hlsl(source, entry="main", defines=None)
    out, = k([x, y], outputs=[gpudml.TensorDesc("FLOAT32", [n])], grid=(n // 64, 1, 1),
             constants={"n": n})

Inputs are bound to t0, t1, ..., outputs to u0, u1, ..., the constants to cbuffer b0's members
by name (laid out by HLSL's packing rules). Everything is checked before any GPU work.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from . import hlsl
from .device import Device, default_device
from .device.custom import KernelCall, check_grid, check_interface, check_types
from .errors import InvalidArgumentError
from .graph import Expression, Graph
from .runtime import Tensor
from .runtime.tensor import checked_array
from .tensor_desc import TensorDesc, check_tensor_desc
from .types import DataType

#: KernelCalls a Kernel keeps (per device, descs, grid and constants), most recent last.
CALL_CACHE_SIZE = 32


class Kernel:
    """An HLSL compute shader (see the module's docstring and docs/hlsl.md). Make one with
    `Kernel.from_hlsl`; `interface` says what it binds, `code` is what the compiler made of it
    (WGSL from Slang, SPIR-V from glslang)."""

    def __init__(self, compiled: hlsl.CompiledHLSL):
        self.compiled = compiled
        self.name = f"HLSL({compiled.entry})"
        self._calls: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def from_hlsl(cls, source: str, entry: str = "main", defines: dict | None = None, *,
                  compiler: str | None = None) -> Kernel:
        """Compile HLSL `source` (its compute entry point `entry`; `defines`: {macro: value}).
        `compiler`: "slang" (the default where slangpy is installed: `pip install "gpudml[hlsl]"`)
        or "glslang" (glslangValidator, Debian package glslang-tools); GPUDML_HLSL_COMPILER
        sets the default. A kernel that does not compile is an InvalidArgumentError with the
        compiler's message and the numbered source."""
        return cls(hlsl.compile_hlsl(source, entry, defines, compiler))

    @property
    def interface(self) -> hlsl.Interface:
        return self.compiled.interface

    @property
    def compiler(self) -> str:
        return self.compiled.compiler

    @property
    def code(self) -> str | bytes:
        """The compiled code wgpu runs: WGSL text (Slang) or SPIR-V bytes (glslang)."""
        return self.compiled.code

    @property
    def source(self) -> str:
        return self.compiled.source

    def __repr__(self) -> str:
        i = self.interface
        regs = ", ".join(r.register for r in i.inputs + i.outputs)
        return f"Kernel({self.name}, {self.compiler}, binds {regs}{', b0' if i.cbuffer_binding is not None else ''})"

    # -- calls -------------------------------------------------------------------------
    def __call__(self, inputs, outputs, grid, constants: dict | None = None, *, device: Device | None = None):
        """Run the kernel once over `grid` workgroups (x, y, z). `inputs`: numpy arrays,
        Tensors or a graph's Expressions (bound t0, t1, ...); `outputs`: a TensorDesc per
        output (bound u0, u1, ...; new outputs start zeroed), or Tensors to write into;
        `constants`: {cbuffer member: value}. Returns a list: numpy arrays for numpy inputs,
        Tensors for Tensor inputs (or the Tensors given as outputs), Expressions in a graph."""
        where = self.name
        if not isinstance(inputs, (list, tuple)):
            raise InvalidArgumentError(f"{where}: inputs must be a list of numpy arrays, Tensors or Expressions, got "
                                       f"{type(inputs).__name__}")
        if not isinstance(outputs, (list, tuple)) or not outputs:
            raise InvalidArgumentError(f"{where}: outputs must be a non-empty list of TensorDescs (or Tensors to "
                                       f"write into), got {outputs!r}")
        if constants is not None and not isinstance(constants, dict):
            raise InvalidArgumentError(f"{where}: constants must be a dict {{name: value}}, got "
                                       f"{type(constants).__name__}")
        graphs = {x.graph for x in inputs if isinstance(x, Expression)}
        if graphs:
            if len(graphs) > 1:
                raise InvalidArgumentError(f"{where}: the Expressions come from several graphs")
            graph = graphs.pop()
            if device is not None and device is not graph.device:
                raise InvalidArgumentError(f"{where}: device={device!r} is not the graph's device")
            return self._record(graph, list(inputs), list(outputs), grid, constants)
        device = self._device(inputs, outputs, device)
        descs = [x.desc if isinstance(x, Tensor) else _packed(x, f"{where}: inputs[{k}]")
                 for k, x in enumerate(inputs)]
        written = all(isinstance(o, Tensor) for o in outputs)
        if not written and any(isinstance(o, Tensor) for o in outputs):
            raise InvalidArgumentError(f"{where}: outputs are all TensorDescs (new outputs) or all Tensors (written "
                                       f"into), not a mix")
        out_descs = [o.desc if isinstance(o, Tensor) else _desc(o, f"{where}: outputs[{k}]")
                     for k, o in enumerate(outputs)]
        call = self.call(device, descs, out_descs, grid, constants)
        return call.execute(list(inputs), list(outputs) if written else None)

    def call(self, device: Device, input_descs, output_descs, grid, constants=None, *,
             uniform_bytes: bytes | None = None) -> KernelCall:
        """The kernel bound to these descs, grid and constants on `device` (checked; kept).
        `uniform_bytes`: cbuffer b0's bytes as they are, instead of `constants` (the lab
        passes an operator's own uniforms)."""
        where = self.name
        interface = self.interface
        check_interface(interface, len(input_descs), len(output_descs), where)
        check_types(interface, list(input_descs) + list(output_descs), len(input_descs), where)
        grid = check_grid(grid, device.caps, interface, where)
        if uniform_bytes is None:
            data = hlsl.pack_constants(interface, constants, where)
        elif len(uniform_bytes) < interface.cbuffer_bytes:
            raise InvalidArgumentError(f"{where}: the kernel's cbuffer b0 holds {interface.cbuffer_bytes} bytes, more "
                                       f"than the {len(uniform_bytes)} given")
        else:
            data = bytes(uniform_bytes) + bytes(-len(uniform_bytes) % 16)
        key = (id(device), tuple(input_descs), tuple(output_descs), grid, data)
        with self._lock:
            hit = self._calls.get(key)
            if hit is not None and hit.device is device:
                self._calls.move_to_end(key)
                return hit
        made = KernelCall(device, self.compiled, self.name, input_descs, output_descs, grid, data)
        with self._lock:
            self._calls[key] = made
            while len(self._calls) > CALL_CACHE_SIZE:
                self._calls.popitem(last=False)
        return made

    def _device(self, inputs, outputs, device) -> Device:
        tensors = [x for x in list(inputs) + list(outputs) if isinstance(x, Tensor)]
        if device is None:
            device = tensors[0].device if tensors else default_device()
        elif not isinstance(device, Device):
            raise InvalidArgumentError(f"{self.name}: device must be a gpudml.Device or None, got "
                                       f"{type(device).__name__}")
        for t in tensors:
            if not device.shares_memory_with(t.device):
                raise InvalidArgumentError(f"{self.name}: a Tensor lives on {t.device.adapter_name}, the call runs "
                                           f"on {device.adapter_name}")
        return device

    def _record(self, graph: Graph, inputs, outputs, grid, constants) -> list:
        """A graph node: the Expressions' descs (other inputs become constants) bound now."""
        operands = [x if isinstance(x, Expression) else graph.constant(x) for x in inputs]
        out_descs = [_desc(o, f"{self.name}: outputs[{k}]") for k, o in enumerate(outputs)]
        try:
            call = self.call(graph.device, [e.desc for e in operands], out_descs, grid, constants)
        except InvalidArgumentError as exc:
            raise InvalidArgumentError(f"graph node {len(graph.nodes)} ({self.name}): {exc}") from exc
        return graph.record_custom(call, operands)


def _packed(x, where: str) -> TensorDesc:
    array = checked_array(x, where)
    return TensorDesc(DataType.from_numpy(array.dtype), array.shape)


def _desc(o, where: str) -> TensorDesc:
    if isinstance(o, Tensor):
        return o.desc
    if not isinstance(o, TensorDesc):
        raise InvalidArgumentError(f"{where}: expected a TensorDesc (or a Tensor to write into), got "
                                   f"{type(o).__name__}")
    check_tensor_desc("Kernel", where, o)
    return o


__all__ = ["Kernel"]
