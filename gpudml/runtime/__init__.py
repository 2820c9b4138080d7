"""The only package that touches wgpu: devices, compiled operators, tensors.

Threading: one Device may be used from several threads at once; every wgpu call runs
under one process-wide lock, adapters.WGPU_LOCK (docs/threading.md). wgpu's exceptions
are translated into gpudml errors at this package's boundary (guard.py)."""

from .compiled import CompiledOperator, Operator
from .device import Device, default_device
from .tensor import Tensor

__all__ = ["CompiledOperator", "Device", "Operator", "Tensor", "default_device"]
