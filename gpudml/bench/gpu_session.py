"""What a session with a lent GPU runs (docs: "Figures on a GPU"): the device tool's machine,
after ../shared/tools/device_kit.sh's prefix, from a checkout. Writes into OUT (the tool's
$OUT):

    lab.log       `gpudml info`, then `gpudml lab` of W1-W7, two more reductions and two scans
                  (every eligible strategy, GPU timestamps, GB/s against the copy kernel)
    torch_anchor.{md,json}  the same workloads in PyTorch on CUDA (gpudml.bench.torch_anchor)
    bench.{md,json,png}     `gpudml bench`
    tune.log      gpudml.bench.gpu_tune: the GPU-class strategies' plan options side by side
                  (Reduce, data movement, scans)
    autotune.log, tuning.json  `gpudml tune` (a fresh cache): what the autotuner picks for the
                  bench workloads on this GPU, and every variant's time
    large.{log,json}  gpudml.bench.large: the segmented path (2 and 8 segments) against one
                  binding on a 256 MiB tensor, GPU class
    pytest.log    the conformance kit and the operators' tests on this GPU's Vulkan adapter,
                  GPU class (needs pytest, hypothesis and pytest-xdist among the carried
                  wheels; skipped without)
    session.log   the parts that failed

    python3 -m gpudml.bench.gpu_session OUT [PARTS]

PARTS (comma-separated; default all, in this order): lab, tune, torch, bench, large, pytest.
The device tool runs a command for at most 10 minutes, and what is under $OUT comes back
even when it is cut short: the parts that choose defaults come first, and `... OUT
lab,tune,torch` then `... OUT bench,large,pytest` splits it.
"""

from __future__ import annotations

import importlib.util
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

from .. import ops
from ..ops import SPECS

PARTS = ("lab", "tune", "torch", "bench", "large", "pytest")
#: `gpudml lab` of W1-W7 and more: (arguments, what it is).
LAB = (
    ("reduce --function sum --axes 1 --shape 4096,4096", "W1"),
    ("reduce --function sum --axes 0 --shape 4096,4096", "W2"),
    ("reduce --function argmax --axes 1 --shape 4096,4096", "W3"),
    ("padding --mode reflection --shape 1,3,1024,1024 --start 0,0,16,16", "W4"),
    ("padding --mode constant --shape 1,3,1024,1024 --start 0,0,16,16", "W5"),
    ("slice1 --shape 1,3,2048,2048 --sizes 1,3,2048,2048 --strides 1,1,-2,2", "W6"),
    ("reverse_subsequences --shape 64,4096,64 --axis 1", "W7"),
    ("reduce --function sum --axes 0 --shape 16777216", "whole tensor"),
    ("reduce --function max --axes 1 --shape 262144,64", "short rows"),
    ("cumulative_summation --axis 1 --shape 4096,4096", "scan along rows"),
    ("cumulative_summation --axis 0 --shape 4096,4096", "scan along columns"),
)
PYTHON = sys.executable


def _run(argv: list[str], log: Path, timeout: int, env: dict | None = None, append: bool = False) -> bool:
    """Run `argv` with its output into `log`; False when it failed or ran out of time."""
    with open(log, "a" if append else "w") as out:
        try:
            return subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, timeout=timeout,
                                  env={**os.environ, **(env or {})}).returncode == 0
        except subprocess.TimeoutExpired:
            out.write(f"\n(timed out after {timeout} s)\n")
            return False


def _tests(root: Path) -> list[str]:
    """The conformance kit and each operator module's own test file that exists (test_tile.py,
    test_argminmax.py for the table of ArgMax and ArgMin)."""
    modules = sorted({spec.key for spec in SPECS} | {m.name for m in pkgutil.iter_modules(ops.__path__)})
    names = ["test_conformance.py"] + [f"test_{m}.py" for m in modules]
    return [str(root / "tests" / n) for n in dict.fromkeys(names) if (root / "tests" / n).is_file()]


def run(out: Path, parts: tuple[str, ...], root: Path) -> list[str]:
    """Run `parts` into `out`; the names of those that failed."""
    out.mkdir(parents=True, exist_ok=True)
    failed = []
    if "lab" in parts:
        _run([PYTHON, "-m", "gpudml", "info"], out / "lab.log", 60)
        for args, _ in LAB:
            _run([PYTHON, "-m", "gpudml", "lab", *args.split(), "--reps", "20"], out / "lab.log", 120, append=True)
    if "tune" in parts:
        _run([PYTHON, "-m", "gpudml.bench.gpu_tune"], out / "tune.log", 180)
        if not _run([PYTHON, "-m", "gpudml", "tune"], out / "autotune.log", 120,
                    {"GPUDML_TUNING_CACHE": str(out / "tuning.json")}):
            failed.append("gpudml tune")
    if "torch" in parts and not _run([PYTHON, "-m", "gpudml.bench.torch_anchor", "--out", str(out)],
                                     out / "torch_anchor.log", 300):
        failed.append("torch anchor")
    if "bench" in parts and not _run([PYTHON, "-m", "gpudml", "bench", "--out", str(out)], out / "bench.log", 240):
        failed.append("bench")
    if "large" in parts and not _run([PYTHON, "-m", "gpudml.bench.large", "--class", "gpu", "--mib", "256",
                                      "--rounds", "9", "--json", str(out / "large.json")], out / "large.log", 120):
        failed.append("large")
    if "pytest" in parts and all(importlib.util.find_spec(m) for m in ("pytest", "hypothesis", "xdist")):
        _run([PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "8", *_tests(root)], out / "pytest.log",
             200, {"GPUDML_ADAPTER_CLASS": "gpu", "GPUDML_TEST_ADAPTERS": "vulkan"})
    if failed:
        (out / "session.log").write_text("".join(f"{name} failed\n" for name in failed))
    return failed


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    parts = tuple(p for p in (argv[1] if len(argv) > 1 else ",".join(PARTS)).split(",") if p)
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        print(f"unknown parts {', '.join(unknown)} (one of {', '.join(PARTS)})", file=sys.stderr)
        return 2
    failed = run(Path(argv[0]), parts, Path.cwd())
    for name in ("pytest.log", "large.log"):
        log = Path(argv[0]) / name
        if log.is_file():
            print("\n".join(log.read_text().splitlines()[-5:]))
    print(f"failed: {', '.join(failed)}" if failed else "every part ran")
    return 0


if __name__ == "__main__":
    sys.exit(main())
