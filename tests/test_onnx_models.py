"""Real models nobody here wrote, through gpudml.onnx.InferenceSession, against onnxruntime's CPU provider.

tests/data/models/ holds ONNX files exported by PyTorch's own exporter (opset 18) by
scripts/export_models.py, with seeded random weights (nothing downloads): torchvision's
lraspp_mobilenet_v3_large and deeplabv3_mobilenet_v3_large (their weights redrawn from three
levels and the files gzip-compressed, to stay small; the architecture is torchvision's own),
a YOLO-shaped feature pyramid (nearest x2 Resize and Concat) and a small UNet (bilinear
Resize, align_corners both ways). Each runs fused on both adapters within
gpudml.onnx.session.TOLERANCE of the largest reference magnitude, with its dispatches per
run pinned, fused and unfused (docs/onnx.md, "Real models", has the figures and the times).
"""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

import gpudml.onnx as gonnx
from gpudml.onnx.session import TOLERANCE

sys.path.insert(0, str(Path(__file__).parent))
from test_onnx_session import oracle  # noqa: E402

MODELS = Path(__file__).parent / "data" / "models"

#: name -> (dispatches per run fused, unfused), by the device's adapter class: one per
#: convolution with its activation fused (HardSwish, ReLU, LeakyReLU), per Resize, Concat, the
#: squeeze-excitations' ReduceMean, HardSigmoid and Mul, ...; the GPU class's strategies run a
#: few long convolution reductions in two dispatches.
_CPU_CLASS = {"yolo_fpn": (16, 23), "unet": (12, 17), "lraspp_mobilenet_v3_large": (85, 146),
              "deeplabv3_mobilenet_v3_large": (99, 163)}
DISPATCHES = {"cpu": _CPU_CLASS, "gpu": {**_CPU_CLASS, "yolo_fpn": (18, 25), "lraspp_mobilenet_v3_large": (95, 156),
                                         "deeplabv3_mobilenet_v3_large": (109, 173)}}

#: Over 5 s on a cold shader cache (2 cores, under load): the first MobileNet compiles its
#: kernels in about 55 s on each adapter (the second reuses most: 7 s), the YOLO-shaped network
#: in about 20 s; the UNet takes 4 s.
SLOW = {"lraspp_mobilenet_v3_large", "deeplabv3_mobilenet_v3_large", "yolo_fpn"}


def load(name: str) -> onnx.ModelProto:
    """The model `name`: NAME.onnx, or NAME.onnx.gz decompressed with the standard library."""
    plain, packed = MODELS / f"{name}.onnx", MODELS / f"{name}.onnx.gz"
    data = plain.read_bytes() if plain.exists() else gzip.decompress(packed.read_bytes())
    return onnx.load_from_string(data)


#: Model files of tests/data/models/ tested in another file (the file).
ELSEWHERE = {"script_loop": "tests/test_onnx_control_flow.py",
             **{f"{name}{suffix}": "tests/test_onnx_transformers.py" for name in ("gpt2_past", "llama_past", "bert")
                for suffix in ("", "_opt")}, "llama_genai": "tests/test_onnx_transformers.py"}


def test_every_model_file_is_tested():
    files = {p.name.removesuffix(".gz").removesuffix(".onnx") for p in MODELS.glob("*.onnx*")}
    assert files == set(_CPU_CLASS) | set(ELSEWHERE)
    root = Path(__file__).resolve().parent.parent
    assert all(f"{name}.onnx" in (root / where).read_text() for name, where in ELSEWHERE.items())
    assert all(p.stat().st_size < 4_000_000 for p in MODELS.iterdir()), "a few MB at most per file"


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in _CPU_CLASS])
def test_real_model_matches_onnxruntime(name, device):
    """The fused session against onnxruntime; the unfused one (fuse=False) is built for its
    dispatch count only: its kernels compile at a first run, which would double the test's
    cold-cache time, and fusion is what the comparison checks."""
    model = load(name)
    feeds = {"x": np.random.default_rng(0).random((1, 3, 64, 64), dtype=np.float32)}
    want = oracle(model, feeds)
    session = gonnx.InferenceSession(model, device=device)
    got = session.run(None, feeds)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=0, atol=TOLERANCE * np.abs(w).max(), err_msg=name)
    unfused = gonnx.InferenceSession(model, device=device, fuse=False)
    assert (session.dispatch_count, unfused.dispatch_count) == DISPATCHES[device.adapter_class][name]
