"""Autotuning (docs/experimenting.md, device/tuning.py): off unless asked; the first compile of a
kind times its variants (strategies, and the plan options their specs offer) and writes the
cache file, a second process reuses the choice without timing; stale, foreign and corrupt
files are handled; two threads tune a kind once. Timings are never asserted, only which
variants were timed and what was kept."""

from __future__ import annotations

import json
import os
import threading
import warnings

import numpy as np
import pytest
from conftest import run_python
from isolated import limited_device

import gpudml as dml
from gpudml import cli, fusion
from gpudml.compare import first_wrong
from gpudml.device import tuning
from gpudml.ops import reduce, spec_named
from gpudml.runtime.tensor import logical_from_raw
from gpudml.testing import assert_within

PROBE = """
import json, numpy as np, gpudml as dml
from gpudml.device import tuning
dev = dml.Device(adapter="vulkan")
x = np.random.default_rng(0).random((2048, 64), dtype=np.float32)
op = dev.create_operator(dml.ops.reduce.infer_output(dml.TensorDesc(dml.DataType.FLOAT32, [2048, 64]), "sum", [0]))
compiled = dev.compile_operator(op)
assert np.allclose(compiled.execute([x])[0], x.sum(0, keepdims=True), rtol=1e-5)
print(json.dumps([[c.get("variant"), timed, sorted(c["ms"]), compiled.strategy, compiled.options]
                  for c, timed in tuning.tuner_for(dev._ctx).used.values()]))
"""


def _probe(tmp_path, **env) -> list:
    res = run_python(PROBE, **env)
    return json.loads(res.stdout.strip().splitlines()[-1]), res.stderr


def test_first_process_tunes_second_reuses(tmp_path):
    cache = tmp_path / "tuning.json"
    first, _ = _probe(tmp_path, GPUDML_AUTOTUNE="1", GPUDML_TUNING_CACHE=str(cache))
    assert len(first) == 1 and first[0][1] is True  # timed all
    variant, _, timed, strategy, options = first[0]
    # every strategy with its own plan, and the GPU-class ones with the options their spec offers
    assert {"columns", "rows", "partials", "workgroup", "columns unroll=1", "workgroup unroll=1"} <= set(timed)
    assert all(name.split()[0] in {"columns", "rows", "partials", "workgroup"} for name in timed)
    assert variant in timed and variant == tuning.variant_name(strategy, options)
    data = json.loads(cache.read_text())
    (section,) = data["sections"].values()
    assert section["adapter"].endswith("via Vulkan") and section["gpudml"] == dml.__version__
    (choice,) = section["choices"].values()
    assert (choice["variant"], choice["strategy"], choice["options"]) == (variant, strategy, options)
    default = "columns" if os.environ.get("GPUDML_ADAPTER_CLASS") == "gpu" else "partials"  # the class' choice
    assert set(choice["ms"]) == set(timed) and choice["default"] == default
    second, _ = _probe(tmp_path, GPUDML_AUTOTUNE="1", GPUDML_TUNING_CACHE=str(cache))
    assert second == [[variant, False, timed, strategy, options]]  # the cached choice, nothing timed


def test_off_unless_asked(tmp_path, monkeypatch):
    cache = tmp_path / "tuning.json"
    used, _ = _probe(tmp_path, GPUDML_AUTOTUNE="", GPUDML_TUNING_CACHE=str(cache))
    assert used == [] and not cache.exists()
    monkeypatch.setenv("GPUDML_AUTOTUNE", "1")
    assert dml.Device(adapter="vulkan", autotune=False).autotune is False
    monkeypatch.delenv("GPUDML_AUTOTUNE")
    assert dml.Device(adapter="vulkan").autotune is False and dml.Device(adapter="vulkan", autotune=True).autotune


def _tuned_device(adapter, tmp_path, monkeypatch, name="tuning.json"):
    monkeypatch.setenv("GPUDML_TUNING_CACHE", str(tmp_path / name))
    dev = limited_device(adapter)  # a tuner of its own
    dev.autotune = True
    return dev


def _partials_or_rows(dev):
    x = np.random.default_rng(1).random((1024, 96), dtype=np.float32)
    np.testing.assert_allclose(dml.reduce(x, "sum", [0], device=dev), x.sum(0, keepdims=True), rtol=1e-5)


def test_a_corrupt_file_is_ignored_with_one_warning(adapter, tmp_path, monkeypatch):
    (tmp_path / "tuning.json").write_text("{ not json")
    dev = _tuned_device(adapter, tmp_path, monkeypatch)
    with pytest.warns(RuntimeWarning, match="ignoring the tuning cache .*tuning.json"):
        _partials_or_rows(dev)
    data = json.loads((tmp_path / "tuning.json").read_text())  # replaced by a valid one
    assert data["format"] == 1 and len(data["sections"]) == 1


def test_foreign_and_stale_sections(adapter, tmp_path, monkeypatch):
    dev = _tuned_device(adapter, tmp_path, monkeypatch)
    _partials_or_rows(dev)
    path = tmp_path / "tuning.json"
    data = json.loads(path.read_text())
    (name, section), = data["sections"].items()
    (key, choice), = section["choices"].items()
    # another adapter's section holds a choice this one cannot use; an older gpudml's too
    foreign = {**section, "adapter": "Some Other GPU", "choices": {key: {**choice, "strategy": "bogus"}}}
    stale = {**section, "gpudml": "0.0.1", "choices": {key: {**choice, "strategy": "bogus"}}}
    data["sections"] = {"Some Other GPU|x|0.1.0|t": foreign, name.replace(dml.__version__, "0.0.1"): stale}
    path.write_text(json.dumps(data))
    dev2 = _tuned_device(adapter, tmp_path, monkeypatch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _partials_or_rows(dev2)
    assert any("for another gpudml version or other templates" in str(w.message) for w in caught)
    (c, timed), = tuning.tuner_for(dev2._ctx).used.values()
    assert timed and c["strategy"] in dml.ops.reduce.SPEC.planner.strategies  # timed afresh, the others untouched
    assert len(json.loads(path.read_text())["sections"]) == 3


def test_a_cached_strategy_that_cannot_run_is_tuned_again(adapter, tmp_path, monkeypatch):
    dev = _tuned_device(adapter, tmp_path, monkeypatch)
    _partials_or_rows(dev)
    path = tmp_path / "tuning.json"
    data = json.loads(path.read_text())
    for section in data["sections"].values():
        for choice in section["choices"].values():
            choice["strategy"] = "column"  # not a Reduce strategy
    path.write_text(json.dumps(data))
    dev2 = _tuned_device(adapter, tmp_path, monkeypatch)
    _partials_or_rows(dev2)
    (c, timed), = tuning.tuner_for(dev2._ctx).used.values()
    assert timed and c["strategy"] in dml.ops.reduce.SPEC.planner.strategies


def test_two_threads_tune_a_kind_once(adapter, tmp_path, monkeypatch):
    dev = _tuned_device(adapter, tmp_path, monkeypatch)
    calls = []
    original = tuning._time_variants

    def counting(*args):
        calls.append(1)
        return original(*args)

    monkeypatch.setattr(tuning, "_time_variants", counting)
    desc = reduce.infer_output(dml.TensorDesc(dml.DataType.FLOAT32, [2048, 48]), "sum", [0])
    op = dev.create_operator(desc)
    chosen = []
    threads = [threading.Thread(target=lambda: chosen.append(dev.compile_operator(op).strategy)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(set(chosen)) == 1 and len(chosen) == 4


def test_the_default_stays_unless_another_is_clearly_faster():
    assert tuning.pick({"rows": 10.0, "partials": 9.8}, "rows") == "rows"  # 2%: within the noise
    assert tuning.pick({"rows": 10.0, "partials": 9.0}, "rows") == "partials"
    assert tuning.pick({"rows": 9.0, "partials": 10.0}, "rows") == "rows"
    assert tuning.pick({"a": 10.0, "b": 9.9, "c": 5.0}, "b") == "c"


def test_kinds_differ_by_layout_and_size():
    caps = dml.caps.profile("vulkan-cpu")
    from gpudml import compiler

    def kind(shape, axes, dtype=dml.DataType.FLOAT32):
        return tuning.kind_of(compiler.compile(reduce.infer_output(dml.TensorDesc(dtype, shape), "sum", axes), caps))[0]

    assert kind([2048, 64], [0]) == kind([2100, 64], [0])  # same kind, same size bucket
    assert kind([2048, 64], [0]) != kind([64, 2048], [1])  # rows, not columns
    assert kind([2048, 64], [0]) != kind([2048 * 16, 64], [0])  # a bigger bucket
    assert kind([2048, 64], [0]) != kind([2048, 64], [0], dml.DataType.FLOAT16)


def test_tune_command(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GPUDML_TUNING_CACHE", str(tmp_path / "tuning.json"))
    monkeypatch.setenv("GPUDML_ADAPTER_CLASS", "cpu")  # (the default it names: rows)
    assert cli.main(["tune", "--only", "W8"]) == 0
    out = capsys.readouterr().out
    assert f"cache: {tmp_path / 'tuning.json'}" in out
    assert "W8 SUM last axis [8,8], Reduce: " in out and "the default rows)" in out
    assert " and 3 more; " in out  # rows, partials, workgroup and its 4 option sets: the 4 fastest named
    assert cli.main(["tune", "--only", "W0"]) == 2
    from gpudml.bench.workloads import WORKLOADS
    assert f"--only: W0 not a workload (W1-{WORKLOADS[-1].id})" in capsys.readouterr().err


def _reduce_columns(dev, shape=(1024, 96)):
    """Compile and check a SUM over axis 0 (a kind whose candidates include plan options)."""
    op = dev.create_operator(reduce.infer_output(dml.TensorDesc(dml.DataType.FLOAT32, list(shape)), "sum", [0]))
    compiled = dev.compile_operator(op)
    x = np.random.default_rng(3).random(shape, dtype=np.float32)
    np.testing.assert_allclose(compiled.execute([x])[0], x.sum(0, keepdims=True), rtol=1e-5)
    return compiled


def test_the_fastest_variant_is_kept_with_its_options(adapter, tmp_path, monkeypatch):
    """A variant with plan options that times fastest is what compile_operator builds, in
    this process and (from the cache) in the next Device, which times nothing."""
    timed = []

    def fake(device, operator, variants):
        timed.append(list(variants))
        return {name: 1.0 if name == "workgroup unroll=1" else 10.0 for name in variants}, {}

    monkeypatch.setattr(tuning, "_time_variants", fake)
    dev = _tuned_device(adapter, tmp_path, monkeypatch)
    compiled = _reduce_columns(dev)
    assert "workgroup unroll=1" in timed[0] and "columns" in timed[0]
    assert (compiled.strategy, compiled.options) == ("workgroup", {"unroll": 1})
    assert all(k.params["unroll"] == 1 for k in compiled.program.kernels if "unroll" in k.params)
    (choice, now), = tuning.tuner_for(dev._ctx).used.values()
    assert now and choice["variant"] == "workgroup unroll=1" and choice["default"] != "workgroup unroll=1"

    monkeypatch.setattr(tuning, "_time_variants", lambda *a: pytest.fail("timed again"))
    again = _reduce_columns(_tuned_device(adapter, tmp_path, monkeypatch))
    assert (again.strategy, again.options) == ("workgroup", {"unroll": 1})


def test_cached_options_a_description_cannot_take_leave_its_strategys_plan(adapter, tmp_path, monkeypatch):
    """A kind's choice holds options another description of the kind cannot take (here an
    impossible lane count), or options that are not a mapping (a hand-edited file): the
    description runs the chosen strategy with its own plan."""
    dev = _tuned_device(adapter, tmp_path, monkeypatch)
    _reduce_columns(dev)
    path = tmp_path / "tuning.json"
    for bad in ({"lanes": 1000}, ["lanes", 64]):
        data = json.loads(path.read_text())
        for section in data["sections"].values():
            for choice in section["choices"].values():
                choice.update(strategy="workgroup", options=bad, variant="workgroup lanes=1000")
        path.write_text(json.dumps(data))
        monkeypatch.setattr(tuning, "_time_variants", lambda *a: pytest.fail("timed again"))
        compiled = _reduce_columns(_tuned_device(adapter, tmp_path, monkeypatch))
        assert (compiled.strategy, compiled.options) == ("workgroup", {})


def _candidates(desc, caps_name):
    from gpudml import compiler
    from gpudml.device.compiled import Operator

    caps = dml.caps.profile(caps_name)
    op = Operator(None, desc, dml.ops.spec_for(desc))
    return tuning.candidates(op, caps, compiler.compile(desc, caps))


def test_candidates_each_strategy_and_the_options_its_spec_offers():
    """Pure: the variants the tuner times, the default first; options offered where they
    mean something on the adapter, none that builds the same kernels as another, none past
    the documented precision."""
    f32 = dml.DataType.FLOAT32
    rows = reduce.infer_output(dml.TensorDesc(f32, [4096, 4096]), "sum", [1])
    on_gpu = _candidates(rows, "gpu")
    assert list(on_gpu)[0] == "workgroup" and {"rows", "partials"} <= set(on_gpu)
    # lanes around the plan's 64, the old loop, the workgroup-memory merge (the adapter has subgroups)
    assert {"workgroup lanes=32", "workgroup lanes=128", "workgroup unroll=1",
            "workgroup subgroups=False"} <= set(on_gpu)
    assert on_gpu["workgroup lanes=32"] == ("workgroup", {"lanes": 32})
    assert "workgroup subgroups=False" not in _candidates(rows, "gl-cpu")  # no subgroups there: the same kernels
    assert list(_candidates(rows, "vulkan-cpu"))[0] == "rows"
    columns = _candidates(reduce.infer_output(dml.TensorDesc(f32, [4096, 4096]), "sum", [0]), "gpu")
    assert list(columns)[0] == "columns"
    assert {"columns chunks=32", "columns chunks=128", "columns chunks=256"} <= set(columns)  # around its 64
    # data movement: coalesced's other block form, unless it builds the same kernels (an output with gaps)
    x = dml.TensorDesc(f32, [64, 64])
    packed = _candidates(dml.Slice1OperatorDesc(x, dml.TensorDesc(f32, [32, 32]), [0, 0], [64, 64], [2, 2]), "gpu")
    assert list(packed) == ["coalesced", "coalesced block=stretches", "stretches", "elements"]
    gaps = _candidates(dml.Slice1OperatorDesc(x, dml.TensorDesc(f32, [32, 32], [64, 1]), [0, 0], [64, 64], [2, 2]),
                       "gpu")
    assert list(gaps) == ["coalesced", "strided"]
    # scans: more lines side by side, as far as the rounding depth the operators document allows
    scan_of = spec_named("cumulative_summation").infer_output
    assert list(_candidates(scan_of(dml.TensorDesc(f32, [4096, 4096]), 0), "gpu")) == [
        "tiles", "tiles lines=64", "tiles lines=128", "tiles lines=256", "runs"]
    assert list(_candidates(scan_of(dml.TensorDesc(f32, [1 << 20, 256]), 0), "gpu")) == [
        "tiles", "tiles lines=64", "runs"]  # 128 and 256 lines would walk too many chunk totals
    assert list(_candidates(scan_of(dml.TensorDesc(f32, [4096, 4096]), 1), "gpu")) == ["tiles", "runs"]


def test_a_graph_tunes_its_fused_kernels(adapter, tmp_path, monkeypatch):
    """A graph's fused kernels (a chain of data movement, a reduction reading through one)
    have no plan options to offer: their strategies are timed, and the graph's results are
    the eager calls' (`gpudml tune` once failed on W9's fused chain)."""
    dev = _tuned_device(adapter, tmp_path, monkeypatch)
    g = dml.Graph(device=dev)
    x = g.input([2, 3, 16, 16], dtype=np.float32, name="x")
    y = dml.padding(x, padding_mode=dml.PaddingMode.REFLECTION, padding_value=0.0, start_padding=[0, 0, 2, 2],
                    end_padding=[0, 0, 2, 2])
    z = dml.slice(y, input_window_offsets=[0, 0, 0, 0], input_window_sizes=[2, 3, 20, 20],
                  input_window_strides=[1, 1, -1, 2])
    r = dml.reduce(z, dml.ReduceFunction.SUM, axes=[3])
    op = g.compile([z, r])
    array = np.random.default_rng(5).random((2, 3, 16, 16), dtype=np.float32)
    z_np, r_np = op({"x": array})
    want = dml.slice(dml.pad(array, [0, 0, 2, 2], [0, 0, 2, 2], mode="reflection"), [0, 0, 0, 0], [2, 3, 20, 20],
                     [1, 1, -1, 2])
    np.testing.assert_array_equal(z_np, want)
    np.testing.assert_allclose(r_np, want.sum(3, keepdims=True), rtol=1e-5)
    assert any(timed and choice["kind"].startswith("Fused(Padding>Slice1)")
               for choice, timed in tuning.tuner_for(dev._ctx).used.values())



def test_fused_kernels_are_checked_against_their_nodes_references(vulkan_device):
    """What the tuner checks a fused kernel's variants against (fusion.FusedSpec): its nodes'
    references composed, on sample inputs drawn as the nodes draw theirs. Every strategy of a
    fused chain and of a reduction reading through one matches it; a result off by one
    element does not."""
    dev = vulkan_device
    g = dml.Graph(device=dev)
    x = g.input([40, 24], name="x")
    lengths = np.random.default_rng(3).integers(0, 45, (1, 26)).astype(np.uint32)
    chain = dml.gather(dml.slice(dml.reverse_subsequences(dml.pad(x, [2, 1], [0, 1], mode="symmetric"), lengths, 0),
                                 [1, 0], [41, 26], [1, -1]), np.array([[3, 1, 25, 0]], np.int64), 1)
    r = dml.reduce(dml.tile(chain, [2, 1]), "sum_square", [0])
    steps = g.compile([chain]).steps + g.compile([r]).steps
    assert [s.compiled.name for s in steps] == ["Fused(Padding>ReverseSubsequences>Slice1>Gather)",
                                                "Fused(Padding>ReverseSubsequences>Slice1>Gather>Tile>Reduce)"]
    rng = np.random.default_rng(4)
    for step in steps:
        desc = step.compiled.desc
        spec = fusion.read_spec(desc) if isinstance(desc, fusion.FusedReadDesc) else fusion.movement_spec(desc)
        raws = spec.sample_buffers(desc, rng)
        inputs = [dml.TensorDesc(d.data_type, [d.required_elements]) for _, d in step.compiled.inputs]
        assert [r.size for r in raws] == [d.sizes[0] for d in inputs]
        logical = [logical_from_raw(raw, d) for raw, (_, d) in zip(raws, step.compiled.inputs)]
        (want,), (tolerance,) = spec.expected_outputs(desc, logical)
        for strategy in step.compiled.strategies:
            compiled = dev.compile_operator(dml.Operator(dev, desc, spec), strategy)
            (got,) = compiled.execute(raws)
            assert_within(got, want, tolerance, strategy)
        shifted = np.roll(want, 1)
        assert first_wrong([shifted], [want], [tolerance]) is not None


BREAKS = {  # a workgroup kernel with unroll=1, broken: (line of the template, replacement, what the tuner says)
    "wrong": ("store_output(output_offset(coords), state_result(result, uni.red_count));",
              "store_output(output_offset(coords), state_result(result"
              "{% if unroll is defined and unroll == 1 %} * 2.0{% endif %}, uni.red_count));", "wrong result: at (0, "),
    "rejected": ("let count = uni.count;",
                 "let count = uni.count;{% if unroll is defined and unroll == 1 %} let broken: u32 = 1.5;{% endif %}",
                 "InternalError: reduce_workgroup.wgsl.j2 from the template folders"),
}


def _broken_templates(tmp_path, broken: str):
    """(a template folder with BREAKS[broken], the start of what the tuner says of it)"""
    from gpudml.kernels import templates

    line, replacement, why = BREAKS[broken]
    folder = tmp_path / broken
    folder.mkdir()
    text = (templates.packaged_dir() / "reduce_workgroup.wgsl.j2").read_text()
    assert text.count(line) == 1
    (folder / "reduce_workgroup.wgsl.j2").write_text(text.replace(line, replacement))
    return folder, why


@pytest.mark.parametrize("broken", list(BREAKS))
def test_a_variant_that_fails_is_never_chosen(adapter, tmp_path, monkeypatch, broken):
    """Every variant is compiled and its first run checked against the reference before any
    is timed (a driver may miscompile or reject one form of a kernel): here templates that
    make `workgroup` kernels with `unroll=1` write twice the sum, or not compile. That
    variant is not timed, is named in the choice's `failed` with why, a warning says so,
    and what is chosen computes right."""
    folder, why = _broken_templates(tmp_path, broken)
    dev = _tuned_device(adapter, tmp_path, monkeypatch)
    dev.template_path = dml.kernels.templates.parse_path(str(folder), "template_path")
    with pytest.warns(RuntimeWarning, match="autotuning Reduce: the variant workgroup unroll=1 failed on .* it is "
                                            "never chosen"):
        compiled = _reduce_columns(dev)  # checks the chosen variant's result
    (choice, timed), = tuning.tuner_for(dev._ctx).used.values()
    assert timed and set(choice["failed"]) == {"workgroup unroll=1"} and "workgroup unroll=1" not in choice["ms"]
    assert choice["failed"]["workgroup unroll=1"].startswith(why), choice["failed"]
    assert {"workgroup", "columns", "columns unroll=1"} <= set(choice["ms"])
    assert choice["variant"] != "workgroup unroll=1" and (compiled.strategy, compiled.options) != (
        "workgroup", {"unroll": 1})


def test_lab_and_autotuning_need_no_pytest(tmp_path):
    """pytest is a test extra: the shader lab and the autotuner compare results without it."""
    code = ("import sys; sys.modules['pytest'] = None\n"
            "import numpy as np, gpudml as dml\nfrom gpudml import cli\nfrom gpudml.device import tuning\n"
            "assert cli.main(['lab', 'slice1', '--shape', '8,8', '--reps', '1']) == 0\n"
            "dev = dml.Device(adapter='vulkan', autotune=True)\n"
            "x = np.arange(64, dtype=np.float32).reshape(8, 8)\n"
            "assert (dml.reduce(x, 'sum', [1], device=dev) == x.sum(1, keepdims=True)).all()\n"
            "assert tuning.tuner_for(dev._ctx).used\n")
    run_python(code, GPUDML_TUNING_CACHE=str(tmp_path / "t.json"))


def test_above_check_bytes_variants_are_timed_unchecked(adapter, tmp_path, monkeypatch):
    """Descriptions whose tensors hold more than CHECK_BYTES skip the check (the reference
    would take several times that in host memory): a wrong variant is timed like the rest."""
    folder, _ = _broken_templates(tmp_path, "wrong")
    monkeypatch.setattr(tuning, "CHECK_BYTES", 1000)  # [1024, 96] float32 is 393,600 bytes
    dev = _tuned_device(adapter, tmp_path, monkeypatch)
    dev.template_path = dml.kernels.templates.parse_path(str(folder), "template_path")
    op = dev.create_operator(reduce.infer_output(dml.TensorDesc(dml.DataType.FLOAT32, [1024, 96]), "sum", [0]))
    dev.compile_operator(op)
    (choice, timed), = tuning.tuner_for(dev._ctx).used.values()
    assert timed and not choice["failed"] and "workgroup unroll=1" in choice["ms"]


def test_tune_command_names_failed_variants(tmp_path, monkeypatch, capsys):
    folder, why = _broken_templates(tmp_path, "rejected")
    monkeypatch.setenv("GPUDML_TEMPLATE_PATH", str(folder))
    monkeypatch.setenv("GPUDML_TUNING_CACHE", str(tmp_path / "tuning.json"))
    with pytest.warns(RuntimeWarning, match="the variant workgroup unroll=1 failed"):
        assert cli.main(["tune", "--only", "W8"]) == 0
    assert f"    workgroup unroll=1 failed, never chosen: {why}" in capsys.readouterr().out
