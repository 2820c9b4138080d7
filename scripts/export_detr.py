"""Export the DETR-shaped detector of tests/test_onnx_models.py to tests/data/models/ (run by
hand, not by the tests).

Hugging Face transformers' DetrForObjectDetection from a small random config (seeded; nothing
downloads): no timm and no pretrained backbone, a transformers ResNet backbone (ResNetConfig:
basic layers, embedding 16, stages of 16, 32, 64 and 64 channels, one layer each), d_model 64,
2 encoder and 2 decoder layers of 4 heads (feed-forward 128), 20 object queries, 5 classes
(and DETR's "no object"), sine position embeddings, eager attention. The inputs are
pixel_values [1, 3, 128, 128] and pixel_mask [1, 128, 128] (INT64, 1 on the image and 0 on the
padding that DetrImageProcessor adds to batch images of other sizes; a fixed size); the outputs are
logits [1, 20, 6] and pred_boxes [1, 20, 4] (sigmoid of the box head: centre x, centre y,
width, height). Linear layers are drawn with init_std 0.15 (DETR's default, 0.02, makes this
narrow model's boxes move by 3e-5 between two images: a comparison that says little); the
backbone's frozen BatchNormalization (DETR replaces the ResNet's) gets random statistics and
affine parameters (the identity's otherwise, which would leave their Mul and Add untested).
With torch 2.13.0 (CPU), transformers 5.24.0, onnx 1.23.2 and onnxruntime 1.32.0 it rewrites
the committed files byte for byte.

Exported by PyTorch's TorchScript-based ONNX exporter (opset 17; the one onnxruntime's
transformer optimizer's fusions are written against) as detr.onnx, and detr_opt.onnx rewritten
by onnxruntime.transformers.optimizer (model type bert, 4 heads, hidden 64, opt_level 0: the
fusions only).

Usage (a virtualenv with the "export" extra of pyproject.toml: torch, transformers, onnx,
onnxruntime; outside the repository):

    python scripts/export_detr.py [--out tests/data/models]
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

OPSET = 17
SIZE = 128
HEADS, HIDDEN = 4, 64


def model():
    import torch
    from export_transformers import _transformers

    transformers = _transformers()
    backbone = transformers.ResNetConfig(embedding_size=16, hidden_sizes=[16, 32, 64, 64], depths=[1, 1, 1, 1],
                                         layer_type="basic", out_features=["stage4"])
    config = transformers.DetrConfig(use_timm_backbone=False, use_pretrained_backbone=False, backbone_config=backbone,
                                     d_model=HIDDEN, encoder_layers=2, decoder_layers=2, encoder_attention_heads=HEADS,
                                     decoder_attention_heads=HEADS, encoder_ffn_dim=128, decoder_ffn_dim=128,
                                     num_queries=20, num_labels=5, auxiliary_loss=False, init_std=0.15,
                                     attn_implementation="eager")
    torch.manual_seed(0)
    detr = transformers.DetrForObjectDetection(config).eval()
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, buffer in detr.named_buffers():
            if name.endswith(("running_mean", "bias")) and buffer.dtype == torch.float32:
                buffer.copy_(0.1 * torch.randn(buffer.shape, generator=generator))
            elif name.endswith(("running_var", "weight")) and buffer.dtype == torch.float32:
                buffer.copy_(0.5 + torch.rand(buffer.shape, generator=generator))
    return detr


def export(path: Path) -> None:
    import torch

    detr = model()

    class Wrapper(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.detr = detr

        def forward(self, pixel_values, pixel_mask):
            out = self.detr(pixel_values=pixel_values, pixel_mask=pixel_mask)
            return out.logits, out.pred_boxes

    pixels = torch.rand(1, 3, SIZE, SIZE, generator=torch.Generator().manual_seed(2))
    mask = torch.ones(1, SIZE, SIZE, dtype=torch.int64)
    mask[:, :, SIZE * 3 // 4:] = 0  # (traced: any values; a padded image's, as DetrImageProcessor pads)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(Wrapper().eval(), (pixels, mask), str(path), input_names=["pixel_values", "pixel_mask"],
                          output_names=["logits", "pred_boxes"], opset_version=OPSET, dynamo=False,
                          do_constant_folding=True)


def optimize(source: Path, target: Path) -> None:
    from onnxruntime.transformers import optimizer

    optimized = optimizer.optimize_model(str(source), model_type="bert", num_heads=HEADS, hidden_size=HIDDEN,
                                         opt_level=0, use_gpu=False)
    optimized.save_model_to_file(str(target))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent.parent / "tests/data/models")
    options = parser.parse_args()
    plain, fused = options.out / "detr.onnx", options.out / "detr_opt.onnx"
    export(plain)
    optimize(plain, fused)
    for p in (plain, fused):
        print(p.name, p.stat().st_size, "B")


if __name__ == "__main__":
    main()
