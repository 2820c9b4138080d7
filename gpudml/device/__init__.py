"""The device layer: what users hold of an adapter (docs/architecture.md).

`Device` (device.py) validates descriptions, asks the compiler for Programs and hands them
to the runtime; `Operator` and `CompiledOperator` (compiled.py: a Program's pipelines,
uniforms, scratch and bind groups); the autotuner (tuning.py); `KernelCall` (custom.py: a
user's compiled HLSL kernel bound to descs). It lies above the compiler and below graphs
and the functional API; it touches wgpu only through gpudml/runtime/."""

from .compiled import CompiledOperator, Operator
from .device import Device, default_device

__all__ = ["CompiledOperator", "Device", "Operator", "default_device"]
