"""gpudml: Microsoft DirectML operator semantics on any GPU, through WGSL and wgpu.

The operators' functional forms (`gpudml.slice`, `gpudml.pad`, ...) come from
gpudml/functional.py and their desc classes (`gpudml.Slice1OperatorDesc`, ...) from the
operator specs (gpudml/ops/); graphs (`gpudml.Graph`) from gpudml/graph.py.
"""

from . import python_operators  # noqa: F401  (Tensor's and Expression's Python operators: `t + 1` is gpudml.add)
from .device import CompiledOperator, Device, Operator, default_device
from .errors import DeviceLostError, DMLError, GpuError, InternalError, InvalidArgumentError, UnsupportedError
from .functional import FUNCTIONS
from .graph import CompiledGraph, Expression, Graph
from .kernel import Kernel
from .ops import SPECS
from .ops.elementwise import FusedActivation, ScaleBias
from .runtime import Tensor
from .tensor_desc import TensorDesc, calc_buffer_tensor_size
from .types import (
    AxisDirection,
    ConvolutionDirection,
    ConvolutionMode,
    DataType,
    FeatureLevel,
    IsInfinityMode,
    MatrixTransform,
    PaddingMode,
    ReduceFunction,
    RoundingMode,
)
from .version import __version__

_OPERATORS = {**FUNCTIONS, **{spec.desc.__name__: spec.desc for spec in SPECS}}
globals().update(_OPERATORS)

__all__ = [
    "AxisDirection", "CompiledGraph", "ConvolutionDirection", "ConvolutionMode",
    "CompiledOperator", "DMLError", "DataType", "Device", "DeviceLostError",
    "Expression", "FeatureLevel", "FusedActivation", "GpuError", "Graph", "InternalError", "InvalidArgumentError",
    "IsInfinityMode", "Kernel", "MatrixTransform", "Operator", "PaddingMode", "ReduceFunction", "RoundingMode",
    "ScaleBias", "Tensor", "TensorDesc",
    "UnsupportedError", "__version__", "calc_buffer_tensor_size", "default_device",
]
__all__ += list(_OPERATORS)
