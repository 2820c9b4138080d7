"""ONNX models through DirectML semantics (API.md section 13): `gpudml.onnx.InferenceSession`,
onnxruntime's interface over a compiled gpudml Graph; the node mapping in `mapping.TABLE`."""

from .mapping import TABLE
from .session import InferenceSession, NodeArg, Unsupported, load_model

__all__ = ["TABLE", "InferenceSession", "NodeArg", "Unsupported", "load_model"]
