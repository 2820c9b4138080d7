"""`gpudml shader` derived from the operator specs, and needing no adapter: with no Vulkan
or GL driver visible it compiles for a capability profile; with `--caps` it never imports
wgpu at all."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import same_gpudml_env

from gpudml import cli
from gpudml.ops import SPECS

ROOT = Path(__file__).resolve().parent.parent
#: Environment in which neither the Vulkan loader nor EGL finds a driver.
NO_DRIVERS = {"VK_ICD_FILENAMES": "/nonexistent/icd.json", "VK_DRIVER_FILES": "/nonexistent/icd.json",
              "__EGL_VENDOR_LIBRARY_FILENAMES": "/nonexistent/egl.json"}


def _gpudml(args, env=None, prelude=""):
    code = prelude + f"import sys\nfrom gpudml.cli import main\nsys.exit(main({args!r}))\n"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=same_gpudml_env(**(env or {})), cwd=str(Path(__file__).parent))


def test_shader_with_no_driver_visible():
    res = _gpudml(["shader", "reduce", "--function", "sum", "--axes", "1", "--shape", "64,64"], env=NO_DRIVERS)
    assert res.returncode == 0, res.stderr
    first = res.stdout.splitlines()[0]
    assert first.startswith("// Reduce at FL_6_4 on profile gpu") and "no adapter could be opened" in first
    assert "fn kernel(gid: u32)" in res.stdout and "@compute @workgroup_size(256)" in res.stdout  # workgroup


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
    assert "// strategy partials (eligible: partials, rows, columns, workgroup)" in capsys.readouterr().out
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


# ------------------------------------------------------------------ rough edges
def test_negative_numbers_in_list_options(capsys):
    """`--strides -1,1` (argparse took "-1,1" for an option: "expected one argument")."""
    assert cli.main(["shader", "slice1", "--shape", "4,4", "--strides", "-1,1", "--caps", "gpu"]) == 0
    assert cli.main(["shader", "slice1", "--shape", "6", "--offsets", "1", "--sizes", "5", "--strides", "-2",
                     "--caps", "gpu"]) == 0
    assert cli.main(["shader", "padding", "--shape", "3", "--value", "-2.5", "--caps", "gpu"]) == 0
    assert cli._attach_negative_values(["--strides", "-1,1", "--quick", "-h"]) == ["--strides=-1,1", "--quick", "-h"]
    capsys.readouterr()


def test_adapter_before_or_after_the_subcommand():
    args = cli.build_parser().parse_args(["--adapter", "gl", "info"])
    assert args.adapter == "gl"
    assert cli.build_parser().parse_args(["info", "--adapter", "gl"]).adapter == "gl"
    assert cli.build_parser().parse_args(["shader", "reduce", "--adapter", "vulkan"]).adapter == "vulkan"
    assert cli.build_parser().parse_args(["info"]).adapter is None


@pytest.mark.parametrize("command", [["examples"], ["info"], ["shader", "reduce", "--caps", "gpu"]])
def test_a_closed_pipe_is_no_traceback(command):
    """`gpudml info | head -1`: the reader goes away; no BrokenPipeError traceback. The pipe's
    reading end is closed before the command writes, so every write of it fails."""
    read_end, write_end = os.pipe()
    proc = subprocess.Popen([sys.executable, "-m", "gpudml", *command], stdout=write_end, stderr=subprocess.PIPE,
                            cwd=str(Path(__file__).parent), env=same_gpudml_env())
    os.close(write_end)
    os.close(read_end)
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, err
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


def test_examples_are_named_by_operator_and_example(capsys):
    assert cli.main(["examples"]) == 0
    out = capsys.readouterr().out
    assert "== padding-3: Padding example 3 of 4 (the DML_PADDING_OPERATOR_DESC page)" in out
    assert ("pad(x, start_padding=[0, 0, 1, 2], end_padding=[0, 0, 3, 4], mode='reflection', value=0.0)"
            in out)
    assert "reverse_subsequences(x, sequence_lengths=np.array([[[[2], [4], [3]]]], np.uint32), axis=3)" in out
    assert ".txt" not in out  # no seed file names


def test_every_help_has_an_example_that_runs(capsys):
    parser = cli.build_parser()
    commands = [["info"], ["examples"], ["bench"], ["shader"]] + [["shader", s.key] for s in SPECS]
    for words in commands:
        with pytest.raises(SystemExit):
            cli.main([*words, "--help"])
        text = capsys.readouterr().out
        assert "\nexample:\n  gpudml " in text, words
        example = text.split("\nexample:\n  ")[1].split()
        if example[1] == "shader":  # compile it, for a profile (needs no adapter)
            assert cli.main(example[1:] + ([] if "--caps" in example else ["--caps", "gpu"])) == 0, example
            capsys.readouterr()
        else:
            parser.parse_args(example[1:])
