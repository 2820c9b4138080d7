"""The only package that touches wgpu: devices, compiled operators, tensors."""

from .compiled import CompiledOperator, Operator
from .device import Device, default_device
from .tensor import Tensor

__all__ = ["CompiledOperator", "Device", "Operator", "Tensor", "default_device"]
