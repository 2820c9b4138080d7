"""gpudml: Microsoft DirectML operator semantics on any GPU, through WGSL and wgpu."""

from .errors import DMLError, InvalidArgumentError, UnsupportedError
from .functional import slice
from .functional import reduce
from .ops.slice1 import Slice1OperatorDesc
from .ops.reduce import ReduceOperatorDesc
from .runtime import CompiledOperator, Device, Operator, Tensor, default_device
from .tensor_desc import TensorDesc, calc_buffer_tensor_size
from .types import DataType, FeatureLevel, PaddingMode, ReduceFunction

__version__ = "0.1.0"

__all__ = [
    "CompiledOperator", "DMLError", "DataType", "Device", "FeatureLevel", "InvalidArgumentError",
    "Operator", "PaddingMode", "ReduceFunction", "Slice1OperatorDesc", "Tensor", "TensorDesc",
    "UnsupportedError", "calc_buffer_tensor_size", "default_device", "slice",
    "ReduceOperatorDesc", "reduce",
]
