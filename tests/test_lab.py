"""The shader lab (`gpudml lab`, gpudml/lab.py) and template override (GPUDML_TEMPLATE_PATH,
Device(template_path=...)): every variant of one description, correct or not, timed beside
the copy kernel; a template folder of one's own shadows the packaged templates. Timings are
never asserted, only that they exist."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import run_python

import gpudml as dml
from gpudml import cli, lab
from gpudml.device import tuning
from gpudml.kernels import templates
from gpudml.ops import padding, reduce, reverse_subsequences, slice1

T = dml.DataType
SMALL_COPY = 1 << 20

#: One description per seed operator, each with at least two eligible strategies.
DESCS = {
    "slice1": slice1.infer_output(dml.TensorDesc(T.FLOAT16, [33, 40]), [1, 0], [30, 40], [-2, 3]),
    "padding": padding.infer_output(dml.TensorDesc(T.INT8, [5, 37]), [1, 2], [0, 3], "reflection"),
    "reverse_subsequences": reverse_subsequences.infer_output(
        dml.TensorDesc(T.FLOAT32, [3, 37, 16]), dml.TensorDesc(T.UINT32, [3, 1, 16]), 1),
    "reduce": reduce.infer_output(dml.TensorDesc(T.FLOAT32, [300, 64]), "sum", [0]),
}


@pytest.fixture
def wrong_templates(tmp_path) -> Path:
    """A copy of lib/chain.wgsl.j2 that reads every element one place off."""
    folder = tmp_path / "off_by_one"
    (folder / "lib").mkdir(parents=True)
    text = (templates.packaged_dir() / "lib" / "chain.wgsl.j2").read_text()
    # every source offset: value_at's (a chain's source prefix `src`), stretch_start's and a
    # row's (stretches in rows)
    value_at = "uni.{{ src }}base + {{ src }}offset(o)"
    assert text.count(value_at) == 1 and text.count("uni.src_base + src_offset(o)") == 1
    assert text.count("row_base = uni.src_base") == 1
    text = text.replace(value_at, value_at + " + 1u")
    text = text.replace("uni.src_base + src_offset(o)", "uni.src_base + src_offset(o) + 1u")
    text = text.replace("row_base = uni.src_base", "row_base = 1u + uni.src_base")
    (folder / "lib" / "chain.wgsl.j2").write_text(text)
    return folder


@pytest.mark.parametrize("key", list(DESCS))
def test_every_strategy_correct_and_timed(device, key):
    rows = lab.run(device, DESCS[key], reps=2, copy_bytes=SMALL_COPY)
    assert len(rows) >= 2 and len({r.strategy for r in rows}) == len(rows)
    assert all(r.correct and r.error is None for r in rows), [(r.strategy, r.error, r.first_wrong) for r in rows]
    assert all(r.gpu_ms > 0 and r.gbps > 0 and r.ratio_to_copy > 0 and r.copy_ms > 0 for r in rows)
    assert all(r.ratio_to_same_copy > 0 and r.same_copy_ms > 0 for r in rows)
    assert [r.default for r in rows].count(True) == 1 and rows[0].default
    assert all(r.clock == "gpu" and len(r.samples_ms) == 2 for r in rows)


def test_a_wrong_template_is_reported_and_the_others_still_run(device, wrong_templates):
    rows = lab.run(device, DESCS["slice1"], templates=str(wrong_templates), reps=1, copy_bytes=SMALL_COPY)
    packaged = [r for r in rows if r.templates is None]
    mine = [r for r in rows if r.templates == str(wrong_templates)]
    assert len(packaged) == len(mine) == 3
    assert all(r.correct for r in packaged)
    assert all(not r.correct and r.first_wrong.startswith("at (0, 0): ") and r.gpu_ms > 0 for r in mine)


def test_a_template_that_does_not_compile(device, tmp_path):
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "movement.wgsl.j2").write_text('{% extends "lib/movement.wgsl.j2" %}'
                                           '{% block functions %}fn value_at( nonsense{% endblock %}')
    rows = lab.run(device, DESCS["slice1"], templates=str(folder), reps=1, copy_bytes=SMALL_COPY)
    broken = [r for r in rows if r.templates is not None]
    assert all(r.error.startswith("InternalError: Shader '' parsing error") and r.gpu_ms is None for r in broken)
    assert all(r.correct for r in rows if r.templates is None)


def test_named_strategies(vulkan_device):
    vulkan_device = dml.Device(adapter=vulkan_device.adapter_name, adapter_class="cpu")  # its order: CPU-class first
    rows = lab.run(vulkan_device, DESCS["reduce"], strategies=["partials"], reps=1, copy_bytes=SMALL_COPY)
    assert [r.strategy for r in rows] == ["partials"] and rows[0].correct and not rows[0].default  # rows is the choice
    rows = lab.run(vulkan_device, DESCS["slice1"], strategies=["strided", "stretches"], reps=1, copy_bytes=SMALL_COPY)
    assert rows[0].error == "not eligible for this description (eligible: stretches, elements, coalesced)"
    assert rows[1].correct


def test_lab_command_line(tmp_path, capsys):
    out_json, wgsl, png = tmp_path / "lab.json", tmp_path / "wgsl", tmp_path / "lab.png"
    assert cli.main(["lab", "reduce", "--function", "argmax", "--axes", "1", "--shape", "40,300", "--reps", "2",
                     "--json", str(out_json), "--wgsl", str(wgsl), "--png", str(png)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("Reduce of FLOAT32 [40, 300] (function='argmax', axes=(1,)")
    assert "default choice" in text and "(GPU times from timestamps, the copy kernel's too; one copy baseline" in text
    assert "GPU ms" in text.splitlines()[2]
    rows = json.loads(out_json.read_text())
    assert {"strategy", "templates", "options", "correct", "gpu_ms", "gbps", "ratio_to_copy",
            "ratio_to_same_copy"} <= set(rows[0])
    assert {r["strategy"] for r in rows} == {"rows", "partials", "workgroup"} and all(r["correct"] for r in rows)
    assert sorted(p.name for p in wgsl.iterdir()) == ["partials-0.wgsl", "partials-1.wgsl", "rows-0.wgsl",
                                                      "workgroup-0.wgsl"]
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "matplotlib is not installed" in text
    else:
        assert png.read_bytes().startswith(b"\x89PNG")


def test_lab_command_line_exits_1_when_a_variant_is_wrong(wrong_templates, capsys, tmp_path):
    assert cli.main(["lab", "slice1", "--shape", "8,8", "--reps", "1", "--templates", str(wrong_templates),
                     "--strategies", "stretches,coalesced", "--wgsl", str(tmp_path / "wgsl")]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert sum(" NO " in line and " off_by_one " in line and "WRONG: at (0, 0): " in line for line in lines) == 2
    assert sum(" yes " in line and " packaged " in line for line in lines) == 2
    assert sorted(p.name for p in (tmp_path / "wgsl").iterdir()) == [
        "coalesced-0.wgsl", "coalesced-off_by_one-0.wgsl", "stretches-0.wgsl", "stretches-off_by_one-0.wgsl"]


def test_lab_command_line_errors(capsys):
    assert cli.main(["lab", "slice1", "--strategies", "rows"]) == 2
    assert "--strategies: rows not a strategy of Slice1 (stretches, elements, strided, coalesced)" in \
        capsys.readouterr().err
    assert cli.main(["lab", "slice1", "--reps", "0"]) == 2
    assert cli.main(["lab", "slice1", "--templates", "/no/such/folder"]) == 2
    assert "template_path: '/no/such/folder' is not a folder" in capsys.readouterr().err


def test_plan_options_make_variants(vulkan_device, tmp_path, capsys):
    """Each set of plan options is its own variant of every strategy: compiled with those
    options (the WGSL differs), correct, named in the table and the JSON; a bad value or
    an unknown option is a clear error."""
    desc = reduce.infer_output(dml.TensorDesc(T.FLOAT32, [64, 500]), "max", [1])
    sets = [{}, {"lanes": 8}, {"lanes": 8, "subgroups": False}]
    rows = lab.run(vulkan_device, desc, strategies=["workgroup"], options=sets, reps=1, copy_bytes=SMALL_COPY)
    assert [r.options for r in rows] == sets and all(r.correct for r in rows)
    assert [lab.variant_name(r) for r in rows] == ["workgroup", "workgroup lanes=8",
                                                   "workgroup lanes=8 subgroups=False"]
    assert rows[0].default == (vulkan_device.compile_operator(vulkan_device.create_operator(desc)).strategy ==
                               "workgroup") and not rows[1].default
    rows = lab.run(vulkan_device, desc, strategies=["workgroup"], options=[{"lanes": 3}], reps=1, copy_bytes=SMALL_COPY)
    assert rows[0].error == "InvalidArgumentError: Reduce: option lanes = 3 must be a power of two in [1, 256]"
    wgsl = tmp_path / "wgsl"
    assert cli.main(["lab", "reduce", "--function", "max", "--axes", "1", "--shape", "64,500", "--reps", "1",
                     "--strategies", "workgroup", "--options", "lanes=8", "--options", "lanes=8,subgroups=false",
                     "--wgsl", str(wgsl)]) == 0
    assert "workgroup lanes=8 subgroups=False " in capsys.readouterr().out
    written = sorted(p.name for p in wgsl.iterdir())
    assert written == ["workgroup-lanes8-0.wgsl", "workgroup-lanes8-subgroupsFalse-0.wgsl"]
    assert "subgroupShuffleXor" not in (wgsl / written[1]).read_text()
    assert "const L: u32 = 8u;" in (wgsl / written[0]).read_text()
    assert cli.main(["lab", "reduce", "--options", "lanes"]) == 2
    assert "--options: 'lanes' is not KEY=VALUE (in 'lanes')" in capsys.readouterr().err
    assert cli.main(["lab", "reduce", "--options", "lanes=4x"]) == 2
    assert "--options: lanes = '4x' is not an integer, true, false or a name" in capsys.readouterr().err
    assert cli.main(["lab", "slice1", "--options", "lanes=4"]) == 2
    assert "--options: lanes not a plan option of Slice1 (block)" in capsys.readouterr().err
    assert lab.parse_options(" ") == {} and lab.parse_options("chunks=4, vectorize=FALSE, block=elements") == {
        "chunks": 4, "vectorize": False, "block": "elements"}


def test_the_tuned_variants(device, capsys):
    """`--strategies tuned`: the variants the autotuner would time (tuning.candidates), each
    checked and timed; not with --options."""
    desc = reduce.infer_output(dml.TensorDesc(T.FLOAT32, [64, 500]), "max", [1])
    rows = lab.run(device, desc, strategies="tuned", reps=1, copy_bytes=SMALL_COPY)
    default = device.compile_operator(device.create_operator(desc))
    wanted = tuning.candidates(device.create_operator(desc), device.caps, default.program)
    assert [lab.variant_name(r) for r in rows] == list(wanted) and len(rows) > len(default.strategies)
    assert all(r.correct for r in rows) and [r.default for r in rows] == [True] + [False] * (len(rows) - 1)
    assert "workgroup unroll=1" in wanted
    with pytest.raises(dml.InvalidArgumentError, match="plan options are for named strategies"):
        lab.run(device, desc, strategies="tuned", options=[{"lanes": 8}])
    assert cli.main(["lab", "slice1", "--shape", "8,64", "--sizes", "8,32", "--strides", "1,2", "--reps", "1",
                     "--strategies", "tuned"]) == 0
    out = capsys.readouterr().out
    assert "coalesced block=stretches " in out and "stretches " in out
    assert cli.main(["lab", "slice1", "--strategies", "tuned", "--options", "block=stretches"]) == 2
    assert "--options: not with --strategies tuned" in capsys.readouterr().err


# ------------------------------------------------------------------ template override
def test_device_template_path_shadows_the_packaged_template(device, wrong_templates):
    mine = dml.Device(adapter=device.adapter_name, template_path=wrong_templates)
    x = np.arange(10, dtype=np.int32)
    np.testing.assert_array_equal(dml.slice(x, [0], [9], device=device), x[:9])
    np.testing.assert_array_equal(dml.slice(x, [0], [9], device=mine), x[1:10])  # one place off
    desc = slice1.infer_output(dml.TensorDesc(T.INT32, [10]), [0], [9])
    assert mine.compile_operator(mine.create_operator(desc)).program.templates != \
        device.compile_operator(device.create_operator(desc)).program.templates


def test_the_environment_variable_and_lib_templates(tmp_path):
    """GPUDML_TEMPLATE_PATH puts folders first; a lib/ template there shadows gpudml's."""
    folder = tmp_path / "mine" / "lib"
    shutil.copytree(templates.packaged_dir() / "lib", folder)
    (folder / "elements.wgsl.j2").write_text((folder / "elements.wgsl.j2").read_text().replace(
        "return {{ buf }}_at{{ sfx }}(i);", "return {{ buf }}_at{{ sfx }}(i) + 1u;"))  # every 32-bit load one more
    code = ("import numpy as np, gpudml as dml\n"
            "x = np.arange(6, dtype=np.uint32)\n"
            "print(dml.slice(x, [0], [6], [-1], device=dml.Device(adapter='vulkan')).tolist())\n")
    res = run_python(code, GPUDML_TEMPLATE_PATH=str(tmp_path / "mine"))
    assert res.stdout.strip() == "[6, 5, 4, 3, 2, 1]"


def test_template_path_errors():
    with pytest.raises(dml.InvalidArgumentError, match="Device: template_path: '/nowhere' is not a folder"):
        dml.Device(adapter="vulkan", template_path="/nowhere")
    with pytest.raises(dml.InvalidArgumentError, match="template_path: expected a folder"):
        dml.Device(adapter="vulkan", template_path=3)


# ------------------------------------------------------------------ issue 34: honest figures
def test_one_copy_baseline_per_run_ranks_ratios_as_times():
    """Each variant divided by its own neighbouring copies ranked them against their times
    (partials 0.435 ms got 0.87, rows 0.401 ms 0.66): one baseline for the run does not."""
    slow = lab.Row("partials", None, {}, True, 0.435, gbps=100 / 0.435 / 1e6, copy_samples_ms=[0.50, 0.52],
                   same_copy_samples_ms=[0.2])
    fast = lab.Row("rows", None, {}, True, 0.401, gbps=100 / 0.401 / 1e6, copy_samples_ms=[0.30, 0.31],
                   same_copy_samples_ms=[0.1])
    broken = lab.Row("columns", None, {}, False, error="did not compile")
    rows = [slow, fast, broken]
    lab.apply_baselines(rows, copy_bytes=200, same_bytes=100)
    assert slow.copy_ms == fast.copy_ms == pytest.approx(0.405)  # the median of all four copies
    assert slow.same_copy_ms == fast.same_copy_ms == pytest.approx(0.15)
    assert fast.ratio_to_copy > slow.ratio_to_copy  # as their times rank
    assert fast.ratio_to_copy == pytest.approx((100 / 0.401) / (200 / 0.405))
    assert broken.ratio_to_copy is None and broken.copy_ms is None


def test_lab_table_names_its_clock_and_baseline():
    rows = [lab.Row("rows", None, {}, True, 0.4, gbps=1.0, copy_ms=0.5, clock="wall")]
    text = lab.table(rows, "Reduce of ...")
    assert "no GPU timestamps on this adapter: times are the wall clock" in text
    assert "one copy baseline for every row, 0.5000 ms" in text and "wall ms" in text.splitlines()[2]


def test_chart_title_fits_the_figure():
    """The --png chart's title wraps to the figure's width (it was cut off at 70 characters
    a line on a 4-inch figure): every line fits at 0.6 of the font size a character."""
    title = ("Reduce of FLOAT32 [4096, 1024] (function='sum', axes=(0,), output_data_type='float32') on "
             "llvmpipe (LLVM 15.0.6, 256 bits) (CPU) via Vulkan")
    for width in (6.0, 7.2, 12.0):
        lines = lab.chart_title(title, width).splitlines()
        assert " ".join(lines) == title
        assert all(len(line) * lab.CHART_TITLE_POINTS * 0.6 <= width * 72 for line in lines)


def test_chart_title_is_inside_the_saved_figure(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    rows = [lab.Row("rows", None, {}, True, 0.4, ratio_to_copy=0.9)]
    title = "Slice1 of FLOAT16 [33, 40] " * 6
    assert lab.chart(rows, str(tmp_path / "c.png"), title)
    fig = plt.figure(figsize=(6, 3.5))
    text = fig.suptitle(lab.chart_title(title, 6.0), fontsize=lab.CHART_TITLE_POINTS)
    box = text.get_window_extent(fig.canvas.get_renderer())
    assert box.x0 >= 0 and box.x1 <= fig.bbox.x1
