"""ONNX models through DirectML semantics (API.md sections 13 and 16): `gpudml.onnx.InferenceSession`,
onnxruntime's interface over a compiled gpudml Graph (with IOBinding, SessionOptions and the
provider names onnxruntime code passes); the node mapping in `mapping.TABLE`."""

from .binding import IOBinding
from .mapping import TABLE
from .options import (
    PROVIDERS,
    ExecutionMode,
    GraphOptimizationLevel,
    ModelMetadata,
    SessionOptions,
    get_available_providers,
)
from .session import InferenceSession, NodeArg, Unsupported, load_model

__all__ = ["PROVIDERS", "TABLE", "ExecutionMode", "GraphOptimizationLevel", "IOBinding", "InferenceSession",
           "ModelMetadata", "NodeArg", "SessionOptions", "Unsupported", "get_available_providers", "load_model"]
