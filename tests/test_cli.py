"""`gpudml shader` derived from the operator specs, and needing no adapter: with no Vulkan
or GL driver visible it compiles for a capability profile; with `--caps` it never imports
wgpu at all."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpudml import cli
from gpudml.ops import SPECS

ROOT = Path(__file__).resolve().parent.parent
#: Environment in which neither the Vulkan loader nor EGL finds a driver.
NO_DRIVERS = {"VK_ICD_FILENAMES": "/nonexistent/icd.json", "VK_DRIVER_FILES": "/nonexistent/icd.json",
              "__EGL_VENDOR_LIBRARY_FILENAMES": "/nonexistent/egl.json"}


def _gpudml(args, env=None, prelude=""):
    code = prelude + f"import sys\nfrom gpudml.cli import main\nsys.exit(main({args!r}))\n"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})}, cwd=str(Path(__file__).parent))


def test_shader_with_no_driver_visible():
    res = _gpudml(["shader", "reduce", "--function", "sum", "--axes", "1", "--shape", "64,64"], env=NO_DRIVERS)
    assert res.returncode == 0, res.stderr
    first = res.stdout.splitlines()[0]
    assert first.startswith("// Reduce at FL_5_0 on profile gpu") and "no adapter could be opened" in first
    assert "fn kernel(gid: u32)" in res.stdout and "@compute @workgroup_size(64)" in res.stdout


def test_shader_for_a_profile_never_imports_wgpu():
    res = _gpudml(["shader", "reduce", "--dtype", "INT64", "--shape", "3,5", "--caps", "gl-cpu"],
                  prelude="import sys\nsys.modules['wgpu'] = None\n")
    assert res.returncode == 0, res.stderr
    assert "on profile gl-cpu" in res.stdout and "alias W64 = vec2<u32>;" in res.stdout


def test_an_asked_for_adapter_that_is_missing_is_an_error():
    res = _gpudml(["--adapter", "vulkan", "shader", "slice1"], env=NO_DRIVERS)
    assert res.returncode == 2 and "no adapter matches 'vulkan'" in res.stderr


def test_every_operator_has_a_shader_subcommand(capsys):
    for spec in SPECS:
        assert cli.main(["shader", spec.key, "--caps", "vulkan-cpu"]) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"// {spec.name} at ") and "fn main" in out
        # the functional name is an alias (pad for padding)
        assert cli.main(["shader", spec.functional_name, "--caps", "vulkan-cpu"]) == 0
        assert capsys.readouterr().out == out


def test_shader_strategy_and_feature_level(capsys):
    assert cli.main(["shader", "reduce", "--shape", "4096,300", "--axes", "0", "--caps", "gl-cpu"]) == 0
    assert "// strategy split (eligible: split, rows)" in capsys.readouterr().out
    assert cli.main(["shader", "reduce", "--shape", "4096,300", "--axes", "0", "--caps", "gl-cpu",
                     "--strategy", "rows"]) == 0
    out = capsys.readouterr().out
    assert "// strategy rows" in out and out.count("// dispatch") == 1
    assert cli.main(["shader", "padding", "--mode", "symmetric", "--feature-level", "FL_2_1", "--caps", "gpu"]) == 2
    assert "SYMMETRIC is not supported at FL_2_1" in capsys.readouterr().err
    assert cli.main(["shader", "slice1", "--shape", "4,4", "--strides", "1,-1", "--input-strides", "8,1",
                     "--caps", "gpu"]) == 0


def test_shader_bad_options(capsys):
    assert cli.main(["shader", "slice1", "--dtype", "FLOAT128", "--caps", "gpu"]) == 2
    assert "--dtype: 'FLOAT128' is not a DataType" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["shader", "slice1", "--caps", "cuda"])
    with pytest.raises(SystemExit):
        cli.main(["shader", "slice1", "--strategy", "rows"])
