"""`gpudml bench` runs end to end (one tiny workload, quick), its optional extras (onnx,
onnxruntime, matplotlib) absent as on a bare machine: results checked, files written."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import same_gpudml_env


@pytest.mark.slow
def test_bench_runs_without_its_optional_extras(tmp_path, adapter):
    code = ("import sys\n"
            "for name in ('onnx', 'onnxruntime', 'matplotlib'):\n"
            "    sys.modules[name] = None  # importing them raises ImportError\n"
            "from gpudml.cli import main\n"
            f"sys.exit(main(['--adapter', {adapter!r}, 'bench', '--quick', '--only', 'W8,W9,W10', "
            f"'--out', {str(tmp_path)!r}]))\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                         env=same_gpudml_env())
    assert res.returncode == 0, res.stderr
    report = json.loads((tmp_path / "bench.json").read_text())
    rows = {r["id"]: r for r in report["rows"]}
    assert set(rows) == {"W8", "W9", "W10"} and not any("WRONG" in r["note"] for r in rows.values())
    assert rows["W10"]["note"].startswith("1 dispatch, GPU ") and "x 20 calls" in rows["W10"]["note"]
    assert rows["W8"]["device_ms"] > 0 and rows["W8"]["ort_ms"] is None
    assert report["anchors"]["copy_kernel_gbps"] > 0
    markdown = (tmp_path / "bench.md").read_text()
    assert "| W8 SUM last axis [8,8] |" in markdown
    assert "| not installed (pip install 'gpudml[bench]') |" in markdown
    assert "onnxruntime is not installed, so its column is empty: pip install 'gpudml[bench]'" in markdown
    assert "matplotlib is not installed" in res.stdout
