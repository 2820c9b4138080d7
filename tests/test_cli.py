"""`gpudml shader` derived from the operator specs, and needing no adapter: with no Vulkan
or GL driver visible it compiles for a capability profile; with `--caps` it never imports
wgpu at all."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import same_gpudml_env

import gpudml
import gpudml as dml
from gpudml import cli
from gpudml.ops import SPECS

pytestmark = pytest.mark.any_class  # the command line: the same under either adapter class

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
    assert first.startswith("// Reduce at FL_6_4 for profile gpu (a discrete GPU via Vulkan); no adapter could be "
                            "opened: no GPU adapter found"), first
    assert "fn kernel(gid: u32)" in res.stdout and "@compute @workgroup_size(256)" in res.stdout  # workgroup


def test_shader_for_a_profile_never_imports_wgpu():
    res = _gpudml(["shader", "reduce", "--dtype", "INT64", "--shape", "3,5", "--caps", "gl-cpu"],
                  prelude="import sys\nsys.modules['wgpu'] = None\n")
    assert res.returncode == 0, res.stderr
    assert "for profile gl-cpu" in res.stdout and "alias W64 = vec2<u32>;" in res.stdout


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


def test_info_counts_every_directml_operator(capsys):
    """`gpudml info` names the registry's count: every DirectML operator through FL_6_4."""
    assert cli.main(["info"]) == 0
    out = capsys.readouterr().out
    assert f"Operators:       {len(SPECS)} of DirectML's 177 (through FL_6_4" in out and len(SPECS) == 177
    assert len({s.desc for s in SPECS}) == 177 and "1 extension: non_max_suppression" in out


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



# ------------------------------------------------------------------ issue 42: examples by operator, quietly
def test_examples_of_named_operators_quietly(adapter, capsys):
    """`gpudml examples --quiet NAMES`: only the named operators' examples (by DirectML's operator
    type, name or function, any case), and nothing but the summary line when all pass; an operator
    whose page has no example is named in it."""
    assert cli.main(["--adapter", adapter, "examples", "--quiet", "ELEMENT_WISE_ADD", "relu", "DML_OPERATOR_REDUCE",
                     "pad"]) == 0
    assert capsys.readouterr().out == "7 passed, 0 failed; no worked example on the page of ElementWiseAdd, " \
                                      "ActivationRelu\n"
    assert cli.main(["--adapter", adapter, "examples", "elementwisebitnot"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Adapter: ") and out.count("\n== ") == 1 and "== bit_not-1: ElementWiseBitNot" in out
    assert "\nbit_not(x)\n" in out and out.endswith("PASS\n\n1 passed, 0 failed\n")


def test_quiet_examples_print_their_failures(adapter, capsys, monkeypatch):
    monkeypatch.setattr(cli.examples, "matches", lambda got, expected: False)
    assert cli.main(["--adapter", adapter, "examples", "-q", "tile"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("== tile-1: Tile example 1 of 1") and "\nexpected:\n" in out
    assert out.endswith("FAIL\n\n0 passed, 1 failed\n")


def test_an_unknown_example_operator_lists_close_names(capsys):
    assert cli.main(["examples", "reduce", "relux", "ELEMENT_WISE_AD"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing ran
    assert captured.err.startswith("error: gpudml examples: unknown operator 'relux' (closest: relu, elu, gelu, "
                                   "celu); 'ELEMENT_WISE_AD' (closest: ELEMENT_WISE_ADD, ELEMENT_WISE_ADD1, ")
    assert cli.main(["examples", "no_such_thing_at_all"]) == 2
    assert "'no_such_thing_at_all' (nothing close); name an operator by DirectML's operator type" in \
        capsys.readouterr().err


# ------------------------------------------------------------------ issue 34: a tidy command line
def test_version(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out == f"gpudml {gpudml.__version__}\n"


def test_one_header_style(capsys):
    """The shader header names what it compiled for once (it read `on profile gpu (a discrete GPU via
    Vulkan) (profile gpu)`)."""
    assert cli.main(["shader", "reduce", "--caps", "gpu"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first == "// Reduce at FL_6_4 for profile gpu (a discrete GPU via Vulkan)"
    assert cli.main(["shader", "slice1"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    device = dml.Device()
    assert first == f"// Slice1 at FL_6_4 for {device.caps.name}" and first.count("(") == first.count(")")


def test_a_request_matching_no_adapter_lists_what_info_lists(capsys):
    assert cli.main(["info"]) == 0
    listed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  - ")]
    assert listed
    assert cli.main(["--adapter", "no-such-gpu", "info"]) == 1
    out = capsys.readouterr().out
    error = out[out.index("error: "):]
    assert [line for line in error.splitlines() if line.startswith("  - ")] == listed
    first = error.splitlines()[0]
    depth = deepest = 0
    for c in first:  # no parenthesis inside another (it nested four deep)
        depth += (c == "(") - (c == ")")
        deepest = max(deepest, depth)
    assert deepest == 1 and depth == 0, first


def test_tune_and_bench_help_list_the_workloads_that_run(capsys):
    from gpudml.bench import report, workloads

    for command in (["tune"], ["bench"]):
        with pytest.raises(SystemExit):
            cli.main([*command, "--help"])
        text = capsys.readouterr().out
        for w in workloads.WORKLOADS:
            assert f"  {w.id:4s} {w.title}" in text, (command, w.id)
    assert f"benchmark suite W1-{workloads.WORKLOADS[-1].id} " in text  # (numbers may skip: each issue's own)
    for column in report.COLUMNS:  # every column of the table explained
        assert f"\n  {column} " in text, column
    assert "pip install '.[bench]'" in text


def test_lab_help_explains_every_column(capsys):
    from gpudml import lab

    with pytest.raises(SystemExit):
        cli.main(["lab", "reduce", "--help"])
    text = capsys.readouterr().out
    for column in lab.COLUMNS:
        assert f"\n  {column} " in text, column
    table = lab.table([lab.Row("rows", None, {}, True, 1.0, 2.0, 0.5, 3.0, clock="gpu")], "t")
    for column in lab.COLUMNS:  # the columns explained are the table's
        assert column in table.splitlines()[2], column


def test_bench_writes_where_the_user_says_and_by_default_to_a_temporary_folder(tmp_path, monkeypatch, capsys):
    """Without --out: a new temporary folder named in the output, never ./bench/results in the
    user's current folder (the suite is a stand-in here: test_bench runs the real one)."""
    from gpudml.bench import suite

    def fake_suite(device, *, quick, only, json_path, md_path, png_path):
        assert only == ["W8"]
        for path in (json_path, md_path):
            Path(path).write_text("{}")
        return "the table"

    monkeypatch.setattr(suite, "run_suite", fake_suite)
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    assert cli.main(["bench", "--only", "W8"]) == 0
    out = capsys.readouterr().out
    folder = Path(out.split("results go to ")[1].split()[0])
    assert list(project.iterdir()) == []  # nothing in the current folder
    assert folder.parent == Path(tempfile.gettempdir()) and folder.name.startswith("gpudml-bench-")
    assert f"written: {folder / 'bench.md'}, {folder / 'bench.json'}" in out
    shutil.rmtree(folder)
    mine = tmp_path / "mine"
    assert cli.main(["bench", "--only", "W8", "--out", str(mine)]) == 0
    assert (mine / "bench.md").exists() and f"results go to {mine}" in capsys.readouterr().out
    assert cli.main(["bench", "--only", "W99"]) == 2
    from gpudml.bench.workloads import WORKLOADS
    assert f"--only: W99 not a workload (W1-{WORKLOADS[-1].id})" in capsys.readouterr().err


# ------------------------------------------------------------------ issue 40: a command line that starts fast
def test_the_parser_builds_only_the_operator_the_command_names(capsys):
    """`gpudml shader OP` builds OP's parser alone (every operator's took ~0.3 s a call), none
    for a command with no OP, and every one where the OP is missing or unknown, so that the
    error lists every choice."""
    assert cli._operators_built(["--adapter", "gl", "shader", "--adapter", "gl", "pad", "--caps", "gl-cpu"],
                                "shader") == (next(s for s in SPECS if s.key == "padding"),)
    assert cli._operators_built(["lab", "reduce", "--function", "max"], "lab") == (
        next(s for s in SPECS if s.key == "reduce"),)
    assert cli._operators_built(["shader", "reduce"], "lab") == ()
    every = cli.COMMAND_SPECS  # (DirectML's operators, then gpudml's extensions)
    assert every[:len(SPECS)] == SPECS
    assert cli._operators_built(["shader", "bogus"], "shader") == every
    assert cli._operators_built(["shader"], "shader") == every
    assert cli._operators_built(None, "shader") == every
    with pytest.raises(SystemExit):
        cli.main(["shader", "bogus", "--function", "max"])
    err = capsys.readouterr().err
    assert "invalid choice: 'bogus'" in err and all(f"'{s.key}'" in err for s in every)
    assert cli.main(["shader", "pad", "--caps", "gl-cpu"]) == 0 and "fn main" in capsys.readouterr().out


# ------------------------------------------------------------------ bad input, every subcommand
def _subcommands(parser) -> dict:
    """{name: its parser} of an argparse parser's subcommands."""
    import argparse

    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def _path_options(parser) -> list:
    """(option or None for a positional, metavar) of every argument that takes a path."""
    return [(a.option_strings[0] if a.option_strings else None, a.metavar) for a in parser._actions
            if isinstance(a.metavar, str) and any(w in a.metavar for w in ("FILE", "DIR", ".onnx"))]


def test_every_subcommand_refuses_bad_input_in_one_line(tmp_path, monkeypatch, capsys):
    """Each subcommand of the parser (a new one is covered by itself): an unknown option is
    argparse's status 2; each path it takes, given one that cannot be read or written, is
    status 2 and one line `error: ...` naming the path; never a traceback, nothing written."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-file").write_text("")
    model = tmp_path / "relu.onnx"
    import onnx
    from onnx import TensorProto, helper

    onnx.save(helper.make_model(helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])), str(model))
    made = sorted(tmp_path.iterdir())
    bad = str(tmp_path / "a-file" / "x")  # under a plain file: no such folder, none can be made
    commands = _subcommands(cli.build_parser())
    assert {"info", "examples", "bench", "run", "tune", "shader", "lab"} <= set(commands)
    checked = 0
    for name, parser in commands.items():
        words = [name]
        if name in ("shader", "lab"):  # per-operator subcommands: one operator stands for all
            words.append("slice1")
            parser = _subcommands(parser)["slice1"]
        with pytest.raises(SystemExit) as info:
            cli.main(words + ["--no-such-option"])
        err = capsys.readouterr().err
        assert info.value.code == 2 and "gpudml" in err and " error: " in err and "Traceback" not in err, err
        for option, metavar in _path_options(parser):
            value = f"x={bad}" if "=" in metavar else bad
            argv = words + ([value] if option is None else [str(model), option, value] if name == "run" else
                            [option, value])
            assert cli.main(argv) == 2, argv
            out, err = capsys.readouterr()
            assert err.startswith("error: ") and err.count("\n") == 1 and bad in err, (argv, err)
            assert "Traceback" not in err + out, argv
            checked += 1
    assert checked >= 6  # run MODEL and --input, bench --out, lab --json, --png, --wgsl, --templates, --hlsl
    assert sorted(tmp_path.iterdir()) == made
