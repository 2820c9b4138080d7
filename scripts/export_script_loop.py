"""Export tests/data/models/script_loop.onnx (run by hand, not by the tests): a loop over time
steps written in Python and compiled with torch.jit.script, whose list append exports as a
Loop carrying a sequence (SequenceEmpty before it, SequenceInsert in its body) and whose
torch.stack after it as ConcatFromSequence (new_axis=1): the shape of a scripted decoder or
recurrent cell loop (issue #45's Loop-carried sequences).

The model: h = tanh(W_h h + W_x x[:, t] + b) over the T steps of x [B, T, 8], each step's
y_t = W_o h appended to a list, stacked to [T, B, 4]; the trip count is T, computed from
x's shape. Random weights (seeded).

Usage (a virtualenv with torch; outside the repository; TorchScript's exporter, dynamo=False):

    python scripts/export_script_loop.py [--out tests/data/models]

With torch 2.13.0 (CPU) and onnx 1.23.2 it writes the committed file byte for byte.
"""

from __future__ import annotations

import argparse
import io
from pathlib import Path

import torch
from torch import nn

#: Opset of the exported file.
OPSET = 17


class ScriptedLoop(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.Linear(8, 8)
        self.inp = nn.Linear(8, 8, bias=False)
        self.out = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.zeros(x.size(0), 8)
        outs: list[torch.Tensor] = []
        for t in range(x.size(1)):
            h = torch.tanh(self.cell(h) + self.inp(x[:, t]))
            outs.append(self.out(h))
        return torch.stack(outs, 0)


def export() -> bytes:
    torch.manual_seed(0)
    model = torch.jit.script(ScriptedLoop().eval())
    buffer = io.BytesIO()
    torch.onnx.export(model, (torch.randn(2, 5, 8),), buffer, dynamo=False, opset_version=OPSET,
                      input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "batch", 1: "steps"}})
    return buffer.getvalue()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent.parent / "tests" / "data" / "models"))
    args = parser.parse_args(argv)
    path = Path(args.out) / "script_loop.onnx"
    path.write_bytes(export())
    print(path, path.stat().st_size, "bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
