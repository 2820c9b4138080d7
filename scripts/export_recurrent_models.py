"""Export the recurrent models of tests/test_onnx_recurrent_models.py to tests/data/models/recurrent/ (run by hand).

Other people's architectures, exported by PyTorch's ONNX exporter with seeded random
weights (nothing downloads):

- crnn: a CRNN text recognizer (Shi, Bai and Yao's shape): three convolutions with ReLU and
  max pooling over a 32 x 100 grayscale text line, the feature map's columns as a sequence
  of 25 steps, a 2-layer bidirectional nn.LSTM (hidden 48), a linear head over 37 classes
  and a log-softmax (CTC's input); sequence first, as CRNN feeds its LSTM;
- gru_speech: a speech-shaped model: a 1-D convolution front end (stride 2) over 40 mel
  features, an nn.GRU(batch_first=True, hidden 64) and a linear head per frame, its final
  hidden state a second output.

Usage (a virtualenv with the "export" extra of pyproject.toml: torch, onnx, onnxscript;
outside the repository):

    python scripts/export_recurrent_models.py [--out tests/data/models/recurrent]

PyTorch's TorchScript exporter (dynamo=False) writes nn.LSTM and nn.GRU as ONNX's LSTM and
GRU ops (its dynamo exporter unrolls them into MatMul and element-wise ops); with torch
2.13.0 (CPU) and onnx 1.23.2 it writes the committed files byte for byte.
"""

from __future__ import annotations

import argparse
import io
import warnings
from pathlib import Path

import torch
from export_models import stamped  # (scripts/ is the script's own directory: on sys.path)
from torch import nn

#: Opset of the exported files (LSTM-14 and GRU-14: the `layout` attribute's version).
OPSET = 17


class CRNN(nn.Module):
    """[N, 1, 32, 100] -> [25, N, 37] log-probabilities (sequence first)."""

    def __init__(self, classes: int = 37, hidden: int = 48):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2),             # 16 x 50
            nn.Conv2d(16, 32, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2),            # 8 x 25
            nn.Conv2d(32, 64, 3, 1, 1), nn.ReLU(), nn.MaxPool2d((8, 1)))       # 1 x 25
        self.rnn = nn.LSTM(64, hidden, num_layers=2, bidirectional=True)
        self.head = nn.Linear(2 * hidden, classes)

    def forward(self, x):
        f = self.features(x).squeeze(2).permute(2, 0, 1)  # [25, N, 64]
        y, _ = self.rnn(f)
        return self.head(y).log_softmax(-1)


class GRUSpeech(nn.Module):
    """[N, T, 40] mel frames -> ([N, T/2, 12] frame scores, [1, N, 64] final hidden state)."""

    def __init__(self, mels: int = 40, hidden: int = 64, classes: int = 12):
        super().__init__()
        self.front = nn.Sequential(nn.Conv1d(mels, hidden, 5, 2, 2), nn.ReLU())
        self.rnn = nn.GRU(hidden, hidden, batch_first=True)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x, h0):
        f = self.front(x.transpose(1, 2)).transpose(1, 2)  # [N, T/2, hidden]
        y, h = self.rnn(f, h0)
        return self.head(y), h


def models() -> dict[str, tuple[nn.Module, tuple, list[str], list[str]]]:
    """name -> (model in eval mode, example inputs, input names, output names)."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    return {
        "crnn": (CRNN().eval(), (torch.rand(1, 1, 32, 100, generator=g),), ["image"], ["log_probs"]),
        "gru_speech": (GRUSpeech().eval(), (torch.randn(1, 50, 40, generator=g), torch.zeros(1, 1, 64)),
                       ["mels", "h0"], ["scores", "hn"]),
    }


def export(model: nn.Module, args: tuple, inputs: list[str], outputs: list[str]) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation and batch-size warnings
        torch.onnx.export(model, args, buffer, dynamo=False, opset_version=OPSET, input_names=inputs,
                          output_names=outputs)
    return stamped(buffer.getvalue(), "export_recurrent_models.py")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "tests/data/models/recurrent")
    out = parser.parse_args(argv).out
    out.mkdir(parents=True, exist_ok=True)
    for name, (model, example, inputs, outputs) in models().items():
        (out / f"{name}.onnx").write_bytes(export(model, example, inputs, outputs))
        print(f"{out / name}.onnx: {(out / f'{name}.onnx').stat().st_size / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
