"""Quantize tests/data/models/llama_past.onnx (scripts/export_transformers.py) to 4 bits with
onnxruntime's MatMulNBitsQuantizer: each float MatMul with a constant weight becomes a
com.microsoft MatMulNBits (bits 4, blocks of 32 along K), written twice:

- llama_past_nbits_sym.onnx: symmetric (no zero_points input: the contrib op's zero point 8);
- llama_past_nbits_asym.onnx: asymmetric (a uint4 zero point per block, packed two a byte).

Run by hand (not by the tests), in a virtualenv with onnx and onnxruntime (the "export"
extra of pyproject.toml):

    python scripts/quantize_nbits.py [--models tests/data/models]

With onnx 1.23.2 and onnxruntime 1.32.0 it rewrites the committed files byte for byte
(the quantizer is deterministic: round to nearest on the weights).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import onnx
from onnxruntime.quantization.matmul_nbits_quantizer import DefaultWeightOnlyQuantConfig, MatMulNBitsQuantizer

BLOCK = 32


def quantize(source: Path, target: Path, symmetric: bool) -> None:
    model = onnx.load(str(source))
    config = DefaultWeightOnlyQuantConfig(block_size=BLOCK, is_symmetric=symmetric, accuracy_level=None)
    quantizer = MatMulNBitsQuantizer(model, algo_config=config)
    quantizer.process()
    out = quantizer.model.model
    out.ir_version = min(out.ir_version, 10)  # (gpudml's onnx.checker reads IR 10)
    onnx.save(out, str(target))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path, default=Path(__file__).resolve().parent.parent / "tests/data/models")
    args = parser.parse_args()
    source = args.models / "llama_past.onnx"
    for symmetric, name in ((True, "sym"), (False, "asym")):
        target = args.models / f"llama_past_nbits_{name}.onnx"
        quantize(source, target, symmetric)
        print(target, target.stat().st_size, "bytes")


if __name__ == "__main__":
    main()
