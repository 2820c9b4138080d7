"""gpudml: Microsoft DirectML operator semantics on any GPU, through WGSL and wgpu."""

from .errors import DeviceLostError, DMLError, GpuError, InvalidArgumentError, UnsupportedError
from .functional import pad, reduce, reverse_subsequences, slice
from .ops.padding import PaddingOperatorDesc
from .ops.reduce import ReduceOperatorDesc
from .ops.reverse_subsequences import ReverseSubsequencesOperatorDesc
from .ops.slice1 import Slice1OperatorDesc
from .runtime import CompiledOperator, Device, Operator, Tensor, default_device
from .tensor_desc import TensorDesc, calc_buffer_tensor_size
from .types import DataType, FeatureLevel, PaddingMode, ReduceFunction

__version__ = "0.1.0"

__all__ = [
    "CompiledOperator", "DMLError", "DataType", "Device", "DeviceLostError", "FeatureLevel", "GpuError",
    "InvalidArgumentError",
    "Operator", "PaddingMode", "PaddingOperatorDesc", "ReduceFunction", "ReduceOperatorDesc",
    "ReverseSubsequencesOperatorDesc", "Slice1OperatorDesc", "Tensor", "TensorDesc",
    "UnsupportedError", "calc_buffer_tensor_size", "default_device", "pad", "reduce", "reverse_subsequences",
    "slice",
]
