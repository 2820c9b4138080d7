"""gpudml: Microsoft DirectML operator semantics on any GPU, through WGSL and wgpu.

The operators' functional forms (`gpudml.slice`, `gpudml.pad`, ...) and desc classes
(`gpudml.Slice1OperatorDesc`, ...) come from the operator specs (gpudml/ops/); graphs
(`gpudml.Graph`) from gpudml/graph.py.
"""

from .errors import DeviceLostError, DMLError, GpuError, InternalError, InvalidArgumentError, UnsupportedError
from .graph import CompiledGraph, Expression, Graph
from .ops import SPECS
from .ops.padding import padding
from .runtime import CompiledOperator, Device, Operator, Tensor, default_device
from .tensor_desc import TensorDesc, calc_buffer_tensor_size
from .types import AxisDirection, DataType, FeatureLevel, PaddingMode, ReduceFunction

__version__ = "0.1.0"

_OPERATORS = {name: value for spec in SPECS
              for name, value in ((spec.functional_name, spec.functional), (spec.desc.__name__, spec.desc))}
globals().update(_OPERATORS)

__all__ = [
    "AxisDirection", "CompiledGraph", "CompiledOperator", "DMLError", "DataType", "Device", "DeviceLostError",
    "Expression", "FeatureLevel", "GpuError", "Graph", "InternalError", "InvalidArgumentError", "Operator",
    "PaddingMode", "ReduceFunction", "Tensor", "TensorDesc", "UnsupportedError", "calc_buffer_tensor_size",
    "default_device", "padding",
]
__all__ += list(_OPERATORS)
