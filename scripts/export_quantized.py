"""Export the quantized models of tests/test_onnx_quantized.py to tests/data/models/quantized/
(run by hand, not by the tests).

Other people's architectures quantized by other people's tool, as its users run it:
torchvision's networks (random weights, seeded; nothing downloads) exported by PyTorch's
TorchScript-based exporter at opset 17 (what most published quantized models carry), then
`onnxruntime.quantization`:

- resnet18_qdq: torchvision's ResNet-18 (10 classes, input [1, 3, 64, 64]) through
  `quantize_static` in the QDQ format (QuantizeLinear/DequantizeLinear pairs around the float
  operators; int8 activations and weights, weights per channel), calibrated by a reader over 4
  random images;
- resnet18_qop: the same network through `quantize_static` in the QOperator format
  (QLinearConv, QLinearAdd, QLinearGlobalAveragePool, QGemm);
- mobilenet_v2_qop: torchvision's MobileNetV2 (10 classes) through `quantize_static`, QOperator
  format, uint8 activations and weights per tensor (the tool's format of its first versions);
- mobilenet_v2_qdq: MobileNetV2 through `quantize_static` in the QDQ format, uint8 activations
  and int8 weights per channel (the groups DirectML's provider fuses into QLinearConv: x86-64
  fuses uint8 activations only);
- bert_dynamic: tests/data/models/bert.onnx (scripts/export_transformers.py) through
  `quantize_dynamic` (DynamicQuantizeLinear and MatMulInteger around each MatMul with a
  constant weight);
- bert_qattention: tests/data/models/bert_opt.onnx (bert.onnx with Attention, SkipLayerNormalization,
  EmbedLayerNormalization and BiasGelu fused by onnxruntime.transformers.optimizer:
  scripts/export_transformers.py) through `quantize_dynamic` with the tool's defaults: each
  Attention a com.microsoft QAttention (uint8 input from a DynamicQuantizeLinear, int8 weights
  per tensor), each MatMul a MatMulInteger, the EmbedLayerNormalization a
  QEmbedLayerNormalization (8-bit tables). The optimized graph's contrib ops leave shape
  inference without types, hence DefaultTensorType FLOAT (the tool's advice);
- bert_qattention_per_channel: the same with `per_channel=True`, uint8 weights (QUInt8) and
  `op_types_to_quantize` Attention and MatMul (the ops DirectML's provider runs quantized: it has
  no QEmbedLayerNormalization kernel, so the embedding stays float): the QAttention weights'
  scales and zero points per column, input and weights of one type.

The convolution weights are redrawn from three levels before export (export_models.
quantize_weights) and the BatchNormalization statistics calibrated (export_models.
calibrate_batchnorm), so that the gzip-compressed files stay small and the activations keep
their scale through the network; every file is gzip-compressed.

Usage (a virtualenv with the "export" extra of pyproject.toml; outside the repository):

    python scripts/export_quantized.py [--out tests/data/models/quantized] [--only NAME,NAME]

With torch 2.13.0 (CPU), torchvision 0.28.0, onnx 1.23.2 and onnxruntime 1.32.0 it rewrites
the committed files byte for byte.
"""

from __future__ import annotations

import argparse
import gzip
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import onnx  # noqa: E402

#: Opset of the exported float models (the quantization tool keeps it).
OPSET = 17
#: Input size of the vision models: (1, 3, SIZE, SIZE).
SIZE = 64
ROOT = Path(__file__).resolve().parent.parent


def _float_model(name: str) -> bytes:
    """A torchvision network with random weights, exported at OPSET (BatchNormalization folded
    into the convolutions by the exporter, as in eval mode)."""
    import torch
    from export_models import _torchvision, calibrate_batchnorm, export_torchscript, quantize_weights

    tv = _torchvision()
    torch.manual_seed(0)
    model = getattr(tv.models, name)(weights=None, num_classes=10).eval()
    quantize_weights(model)
    calibrate_batchnorm(model, SIZE)
    x = torch.rand(1, 3, SIZE, SIZE, generator=torch.Generator().manual_seed(3))
    return export_torchscript(model, (x,), ["x"], ["logits"], opset=OPSET)


class _Reader:
    """The calibration data: 4 random images (seeded), one a call, as the tool's
    CalibrationDataReader protocol reads them."""

    def __init__(self, name: str, shape):
        rng = np.random.default_rng(4)
        self.batches = iter([{name: rng.random(shape, dtype=np.float32)} for _ in range(4)])

    def get_next(self):
        return next(self.batches, None)


def _static(data: bytes, fmt: str, per_channel: bool, activation: str, weight: str) -> bytes:
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    with tempfile.TemporaryDirectory() as tmp:
        source, target = Path(tmp) / "float.onnx", Path(tmp) / "quantized.onnx"
        source.write_bytes(data)
        quantize_static(str(source), str(target), _Reader("x", (1, 3, SIZE, SIZE)),
                        quant_format=getattr(QuantFormat, fmt), per_channel=per_channel,
                        activation_type=getattr(QuantType, activation), weight_type=getattr(QuantType, weight))
        return target.read_bytes()


def _dynamic(source: Path, **options) -> bytes:
    from onnxruntime.quantization import quantize_dynamic

    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "quantized.onnx"
        quantize_dynamic(str(source), str(target), **options)
        return target.read_bytes()


def _quant_type(name: str):
    from onnxruntime.quantization import QuantType

    return getattr(QuantType, name)


def _qattention_bert(**options) -> bytes:
    """bert_opt.onnx through quantize_dynamic: two QAttention nodes (and a QEmbedLayerNormalization
    where the embedding is quantized too)."""
    data = _dynamic(ROOT / "tests" / "data" / "models" / "bert_opt.onnx",
                    extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT}, **options)
    ops = [n.op_type for n in onnx.load_model_from_string(data).graph.node]
    assert ops.count("QAttention") == 2 and "Attention" not in ops, ops
    assert ("QEmbedLayerNormalization" in ops) == ("op_types_to_quantize" not in options), ops
    return data


def models() -> dict:
    """name -> a function returning the quantized model's bytes."""
    return {
        "resnet18_qdq": lambda: _static(_float_model("resnet18"), "QDQ", True, "QInt8", "QInt8"),
        "resnet18_qop": lambda: _static(_float_model("resnet18"), "QOperator", True, "QUInt8", "QInt8"),
        "mobilenet_v2_qop": lambda: _static(_float_model("mobilenet_v2"), "QOperator", False, "QUInt8", "QUInt8"),
        "mobilenet_v2_qdq": lambda: _static(_float_model("mobilenet_v2"), "QDQ", True, "QUInt8", "QInt8"),
        "bert_dynamic": lambda: _dynamic(ROOT / "tests" / "data" / "models" / "bert.onnx"),
        "bert_qattention": _qattention_bert,
        "bert_qattention_per_channel": lambda: _qattention_bert(per_channel=True, weight_type=_quant_type("QUInt8"),
                                                                op_types_to_quantize=["Attention", "MatMul"]),
    }


def main(argv=None) -> int:
    from export_models import stamped

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "tests" / "data" / "models" / "quantized")
    parser.add_argument("--only", default=None, metavar="NAME,NAME", help="export these models only")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    only = set(args.only.split(",")) if args.only else None
    for name, make in models().items():
        if only is not None and name not in only:
            continue
        data = stamped(make(), "export_quantized.py")
        path = args.out / f"{name}.onnx.gz"
        path.write_bytes(gzip.compress(data, mtime=0))
        print(f"{path}: {path.stat().st_size / 1e6:.2f} MB ({len(data) / 1e6:.2f} MB of ONNX)")
        onnx.load_model_from_string(data)  # (loads as written)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
