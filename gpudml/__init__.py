"""gpudml: Microsoft DirectML operator semantics on any GPU, through WGSL and wgpu.

The operators' functional forms (`gpudml.slice`, `gpudml.pad`, ...) come from
gpudml/functional.py and their desc classes (`gpudml.Slice1OperatorDesc`, ...) from the
operator specs (gpudml/ops/); graphs (`gpudml.Graph`) from gpudml/graph.py.
"""

from . import python_operators  # noqa: F401  (Tensor's and Expression's Python operators and numpy ufuncs, as numpy 2 computes them)
from .device import CompiledOperator, Device, Operator, default_device
from .errors import DeviceLostError, DMLError, GpuError, InternalError, InvalidArgumentError, UnsupportedError
from .functional import FUNCTIONS
from .graph import CompiledGraph, Expression, Graph
from .kernel import Kernel
from .ops import SPECS
from .ops.elementwise import FusedActivation, ScaleBias
from .runtime import Tensor
from .tensor_desc import TensorDesc, calc_buffer_tensor_size
from .types import ENUMS
from .version import __version__

_OPERATORS = {**FUNCTIONS, **{spec.desc.__name__: spec.desc for spec in SPECS}}
globals().update(_OPERATORS)
globals().update(ENUMS)  # DataType, FeatureLevel, ReduceFunction, ... (every enum of types.py)

__all__ = [
    "CompiledGraph", "CompiledOperator", "DMLError", "Device", "DeviceLostError",
    "Expression", "FusedActivation", "GpuError", "Graph", "InternalError", "InvalidArgumentError",
    "Kernel", "Operator", "ScaleBias", "Tensor", "TensorDesc",
    "UnsupportedError", "__version__", "calc_buffer_tensor_size", "default_device",
]
__all__ += list(ENUMS) + list(_OPERATORS)
