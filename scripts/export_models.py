"""Export the real models of tests/test_onnx_models.py to tests/data/models/ (run by hand, not by the tests).

The models are other people's architectures, exported by PyTorch's own ONNX exporter with
random weights (seeded; nothing downloads: weights=None, weights_backbone=None):

- lraspp_mobilenet_v3_large, deeplabv3_mobilenet_v3_large: torchvision's segmentation
  networks as torchvision builds them (Resize: bilinear, align_corners=False; HardSwish,
  HardSigmoid, the squeeze-excitation's global average pooling, dilated convolutions);
  their random weights redrawn from three levels per tensor so that the gzip-compressed
  file stays small (the architecture is torchvision's own, only the values are quantized);
- yolo_fpn: a YOLO-shaped detector (a strided convolution backbone, a feature pyramid whose
  top-down path is nn.Upsample(scale_factor=2, mode="nearest") and torch.cat, a head per
  level): the shape of YOLOv3/v5's neck, small;
- unet: a small UNet whose decoder upsamples bilinearly, align_corners=True in one stage and
  False in the other.

Usage (a virtualenv with the "export" extra of pyproject.toml: torch, torchvision, onnx,
onnxscript; outside the repository):

    python scripts/export_models.py [--out tests/data/models]

With torch 2.13.0 (CPU), torchvision 0.28.0, onnx 1.23.2 and onnxscript 0.7.2 it writes the
committed files byte for byte.
"""

from __future__ import annotations

import argparse
import gzip
import io
from pathlib import Path

import onnx
import torch
from torch import nn


def _torchvision():
    """torchvision, importable where its compiled ops do not load (PyPI's torchvision wheel
    is built against the CUDA torch; a CPU-only torch lacks libtorch_cuda): its fake-tensor
    registrations of nms and qnms need the two ops defined, which none of these models calls."""
    try:
        import torchvision
    except RuntimeError as exc:
        if "torchvision::nms does not exist" not in str(exc):
            raise
        library = torch.library.Library("torchvision", "DEF")  # noqa: F841 (kept alive: the ops stay defined)
        for op in ("nms", "qnms"):
            library.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        _torchvision.library = library
        import torchvision
    return torchvision

#: Input size of every model: (1, 3, SIZE, SIZE).
SIZE = 64
#: Opset of the exported files (PyTorch's exporter writes Resize-18 at this opset).
OPSET = 18


def quantize_weights(model: nn.Module) -> None:
    """Each convolution's weights (a parameter of 2 or more dimensions and more than 64
    values: the BatchNormalization scales and shifts and the biases stay) redrawn from three levels, -s, 0 and s
    (probabilities 1/4, 1/2, 1/4; s = the tensor's standard deviation times sqrt(2), so that
    the variance the initializer chose is kept): the same architecture, a file that gzip
    compresses to about 1.5 bits a weight."""
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for t in model.parameters():
            if t.dim() < 2 or t.numel() <= 64:
                continue
            s = float(t.std()) * 2 ** 0.5
            signs = torch.tensor([-s, 0.0, 0.0, s])
            t.copy_(signs[torch.randint(0, 4, t.shape, generator=generator)])


def calibrate_batchnorm(model: nn.Module, size: int) -> None:
    """Running statistics measured on random inputs (the cumulative average of 4 batches of
    4), as training would leave them: each BatchNormalization then normalizes its input, and
    the signal neither vanishes nor explodes through a deep network of random weights (a
    freshly built network's statistics, 0 and 1, leave a MobileNet's output almost constant)."""
    generator = torch.Generator().manual_seed(2)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.reset_running_stats()
            m.momentum = None
    model.train()
    with torch.no_grad():
        for _ in range(4):
            model(torch.rand(4, 3, size, size, generator=generator))
    model.eval()


class Conv(nn.Sequential):
    def __init__(self, c_in: int, c_out: int, stride: int = 1):
        super().__init__(nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False), nn.BatchNorm2d(c_out), nn.LeakyReLU(0.1))


class YoloFPN(nn.Module):
    """Backbone strides 8, 16, 32; the top-down pyramid: upsample x2 (nearest) and
    concatenate with the finer level; a 1x1 head per level (3 anchors x (5 + classes))."""

    def __init__(self, classes: int = 4):
        super().__init__()
        self.stem = nn.Sequential(Conv(3, 8, 2), Conv(8, 16, 2), Conv(16, 16, 2))      # /8
        self.c4, self.c5 = Conv(16, 32, 2), Conv(32, 64, 2)                            # /16, /32
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.lat5, self.lat4 = Conv(64, 32), Conv(64, 16)
        out = 3 * (5 + classes)
        self.head5, self.head4, self.head3 = nn.Conv2d(32, out, 1), nn.Conv2d(16, out, 1), nn.Conv2d(32, out, 1)

    def forward(self, x):
        p3 = self.stem(x)
        p4 = self.c4(p3)
        p5 = self.c5(p4)
        t5 = self.lat5(p5)
        t4 = self.lat4(torch.cat([self.up(t5), p4], 1))
        t3 = torch.cat([self.up(t4), p3], 1)
        return self.head5(t5), self.head4(t4), self.head3(t3)


class UNet(nn.Module):
    """Two down stages, two up stages (bilinear: align_corners=True, then False), skips by concatenation."""

    def __init__(self, classes: int = 3):
        super().__init__()
        self.e1, self.e2, self.e3 = Conv(3, 8), Conv(8, 16, 2), Conv(16, 32, 2)
        self.up_a = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)
        self.up_b = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.d2, self.d1 = Conv(32 + 16, 16), Conv(16 + 8, 8)
        self.out = nn.Conv2d(8, classes, 1)

    def forward(self, x):
        s1 = self.e1(x)
        s2 = self.e2(s1)
        b = self.e3(s2)
        y = self.d2(torch.cat([self.up_a(b), s2], 1))
        y = self.d1(torch.cat([self.up_b(y), s1], 1))
        return self.out(y)


class OutputOnly(nn.Module):
    """torchvision's segmentation models return a dict: the "out" tensor."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


def models() -> dict[str, tuple[nn.Module, bool]]:
    """name -> (model in eval mode, whether its weights are quantized and the file gzip-compressed)."""
    torch.manual_seed(0)
    seg = _torchvision().models.segmentation
    built = {
        "lraspp_mobilenet_v3_large": (OutputOnly(seg.lraspp_mobilenet_v3_large(
            weights=None, weights_backbone=None, num_classes=3)), True),
        "deeplabv3_mobilenet_v3_large": (OutputOnly(seg.deeplabv3_mobilenet_v3_large(
            weights=None, weights_backbone=None, num_classes=3, aux_loss=False)), True),
        "yolo_fpn": (YoloFPN(), False),
        "unet": (UNet(), False),
    }
    for model, quantized in built.values():
        if quantized:
            quantize_weights(model)
        calibrate_batchnorm(model, SIZE)
    return built


def export(model: nn.Module, x: torch.Tensor) -> bytes:
    buffer = io.BytesIO()
    program = torch.onnx.export(model, (x,), dynamo=True, opset_version=OPSET, input_names=["x"],
                                external_data=False)
    program.save(buffer)
    return stamped(buffer.getvalue(), "export_models.py")


def stamped(data: bytes, script: str) -> bytes:
    """An exported model, its producer name stamped with the script that wrote it, checked by onnx."""
    proto = onnx.load_from_string(data)
    proto.producer_name = f"{proto.producer_name} (gpudml scripts/{script})"
    onnx.checker.check_model(proto)
    return proto.SerializeToString()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = Path(__file__).resolve().parent.parent
    parser.add_argument("--out", type=Path, default=root / "tests" / "data" / "models")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    x = torch.rand(1, 3, SIZE, SIZE, generator=torch.Generator().manual_seed(3))
    for name, (model, compressed) in models().items():
        data = export(model, x)
        path = args.out / (f"{name}.onnx.gz" if compressed else f"{name}.onnx")
        path.write_bytes(gzip.compress(data, mtime=0) if compressed else data)
        print(f"{path}: {path.stat().st_size / 1e6:.2f} MB ({len(data) / 1e6:.2f} MB of ONNX)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
