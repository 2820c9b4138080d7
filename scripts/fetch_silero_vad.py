"""Extract Silero VAD's ONNX model from its PyPI wheel into tests/data/models/recurrent/ (run by hand).

The Silero voice-activity detector (https://github.com/snakers4/silero-vad, MIT License,
Copyright (c) 2020-present Silero Team) ships its ONNX files inside the `silero-vad` wheel
(silero_vad/data/). This script downloads the wheel with pip (`pip download silero-vad==VERSION
--no-deps`: no dependency is installed, nothing runs) and copies `silero_vad.onnx`, the file
the package's `load_silero_vad(onnx=True)` loads (opset 16: one If on the sample rate `sr`,
a graph input; each branch's decoder a 1-layer LSTM of hidden size 128 whose state is the
`state` input and `stateN` output), and the wheel's LICENSE beside it. The tests run on the
committed copy; nothing downloads when they run.

Usage (any Python with pip; network access to PyPI):

    python scripts/fetch_silero_vad.py [--version 6.2.3] [--out tests/data/models/recurrent]
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

#: The committed file's package version and its SHA-256.
VERSION = "6.2.3"
SHA256 = "1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = Path(__file__).resolve().parent.parent
    parser.add_argument("--version", default=VERSION)
    parser.add_argument("--out", type=Path, default=root / "tests" / "data" / "models" / "recurrent")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", f"silero-vad=={args.version}", "--no-deps",
                        "--only-binary", ":all:", "-d", tmp], check=True)
        (wheel,) = Path(tmp).glob("silero_vad-*.whl")
        with zipfile.ZipFile(wheel) as z:
            model = z.read("silero_vad/data/silero_vad.onnx")
            license_name = next(n for n in z.namelist() if n.endswith(".dist-info/licenses/LICENSE"))
            license_text = z.read(license_name)
    (args.out / "silero_vad.onnx").write_bytes(model)
    (args.out / "silero_vad.LICENSE").write_bytes(license_text)
    digest = hashlib.sha256(model).hexdigest()
    print(f"silero-vad {args.version}: silero_vad.onnx {len(model) / 1e6:.2f} MB, sha256 {digest}")
    if args.version == VERSION and digest != SHA256:
        print(f"warning: not the committed file's digest {SHA256}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
