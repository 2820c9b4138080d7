"""docs/adding-an-operator.md's walk-throughs are true of the code: every fenced block marked
`<!-- walkthrough: NAME [PATH] -->` is taken from the page and run as written (python blocks
executed in order in one namespace per walk-through; a block with a PATH, a template, written
to a template folder of a Device), then what it defines is compiled and run on a Device and
checked against numpy. The element-wise row the page shows is the table's own, and a row made
from it runs."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis.strategies import SearchStrategy

import gpudml as dml
from gpudml import caps as caps_module
from gpudml import compiler
from gpudml.errors import InternalError, InvalidArgumentError, UnsupportedError
from gpudml.kernels import composite
from gpudml.kernels.base import KernelFamily, ProblemPlanner
from gpudml.ops.elementwise import activation, builders
from gpudml.ops.elementwise.table import TABLE

pytestmark = pytest.mark.any_class  # the documentation: the same under either adapter class

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "adding-an-operator.md"
F32 = dml.DataType.FLOAT32
BLOCK = re.compile(r"<!-- walkthrough: (\w+)(?: (\S+))? -->\n```(\w+)\n(.*?)```", re.S)


def blocks(name: str) -> list[tuple[str | None, str, int]]:
    """(path or None, code, line) of each block of walk-through `name`, in page order."""
    text = PAGE.read_text()
    found = [(m.group(2), m.group(4), text.count("\n", 0, m.start(4)) + 1)
             for m in BLOCK.finditer(text) if m.group(1) == name]
    assert found, f"no block marked walkthrough: {name}"
    return found


def run(name: str, namespace: dict, templates: Path | None = None) -> dict:
    """Run walk-through `name`'s blocks into `namespace` (its templates into `templates`)."""
    for path, code, line in blocks(name):
        if path is not None:
            target = templates / Path(path).name
            target.write_text(code)
            continue
        exec(compile("\n" * (line - 1) + code, str(PAGE), "exec", dont_inherit=True), namespace)  # noqa: S102
    return namespace


def test_every_marked_block_belongs_to_a_walkthrough():
    assert {m.group(1) for m in BLOCK.finditer(PAGE.read_text())} == {"family", "rule", "composite", "epilogue"}


@pytest.fixture(scope="module")
def family(tmp_path_factory) -> tuple[dict, Path]:
    """Section 5 run: its namespace, and the folder holding its template."""
    templates = tmp_path_factory.mktemp("templates")
    return run("family", {"__name__": "walkthrough_family"}, templates), templates


@pytest.fixture(scope="module")
def toy_device(vulkan_device, family) -> dml.Device:
    return dml.Device(adapter=vulkan_device.adapter_name, template_path=family[1])


def test_a_new_family(family, toy_device):
    """The family's strategies (the CPU order without caps and on software adapters, the GPU
    order on a GPU), the spec's validation, and both strategies on a Device against the
    spec's reference."""
    ns, templates = family
    fam, spec = ns["FAMILY"], ns["SPEC"]
    assert isinstance(fam, KernelFamily) and isinstance(spec.planner, ProblemPlanner)
    assert spec.planner.family is fam and spec.planner.strategies == ("runs", "elements")
    desc = spec.infer_output(dml.TensorDesc(F32, [3, 1000]))
    assert spec.planner.strategies_for(desc, None) == ("runs", "elements")
    assert spec.planner.strategies_for(desc, caps_module.profile("gpu")) == ("elements", "runs")
    spec.validate(desc, toy_device.feature_level)
    with pytest.raises(InvalidArgumentError, match="ToyNegate"):
        spec.validate(spec.infer_output(dml.TensorDesc(dml.DataType.FLOAT16, [4])), toy_device.feature_level)
    with pytest.raises(UnsupportedError):
        spec.planner.strategies_for(spec.infer_output(dml.TensorDesc(dml.DataType.FLOAT16, [4])), None)
    program = compiler.compile(desc, caps_module.profile("vulkan-cpu"), operation=spec, template_path=templates)
    assert program.strategy == "runs" and "bitcast<f32>(x_at(i))" in program.wgsl[0]
    x = np.random.default_rng(5).standard_normal((3, 1000)).astype(np.float32)
    for strategy in ("runs", "elements"):
        compiled = toy_device.compile_operator(dml.Operator(toy_device, desc, spec), strategy)
        (y,) = compiled.execute([x])
        np.testing.assert_array_equal(np.asarray(y).reshape(3, 1000), spec.reference(x))
    assert spec.functional(x).attributes == {}


def test_the_rule(family):
    """The rule file registers a rule whose calls are valid descriptions of the toy (run in
    the conformance kit's package, its registration undone)."""
    from conformance import RandomDraw
    from conformance.registry import RULES, Ask, Drawn

    spec = family[0]["SPEC"]
    namespace = {"__name__": "conformance.rules.toy_negate", "__package__": "conformance.rules"}
    try:
        run("rule", namespace)
        made = RULES["toy_negate"]
    finally:
        RULES.pop("toy_negate", None)
    assert made.call is namespace["toy_negate_call"] and "output_tensor" in made.fields
    assert isinstance(made.functional(None, (2, 3)), SearchStrategy)
    d = RandomDraw(np.random.default_rng(3))
    for rank in range(1, 9):
        ask = Ask(dml.FeatureLevel.FL_1_0, rank, {"input_tensor": F32, "output_tensor": F32})
        drawn = made.call(d, ask)
        assert isinstance(drawn, Drawn)
        desc = spec.infer_output(*drawn.tensors, **drawn.attributes)
        spec.validate(desc, dml.FeatureLevel.FL_1_0)
        assert desc.input_tensor.rank == rank
        assert isinstance(made.broken(desc), SearchStrategy)


@pytest.mark.parametrize("strategy", ["rows", "partials"])
def test_a_composite_operator(vulkan_device, strategy):
    """Section 6: exp into an intermediate value, then a reduction; both kernels run."""
    ns = run("composite", {"__name__": "walkthrough_composite"})
    desc_class, planner = ns["ExpSumDesc"], ns["EXP_SUM"]
    assert isinstance(planner.family, composite.CompositeFamily)
    desc = desc_class(dml.TensorDesc(F32, [8, 300]), dml.TensorDesc(F32, [8, 1]), (1,))
    made = planner.family.steps(desc, None, strategy)
    assert len(made.steps) == 2 and made.values == (8 * 300 * 4,)
    runs_it = SimpleNamespace(name="ExpSum", planner=planner)  # what the compiler needs of an ops.spec.Operation
    compiled = vulkan_device.compile_operator(dml.Operator(vulkan_device, desc, runs_it), strategy)
    assert len(compiled.program.kernels) == (2 if strategy == "rows" else 3)
    x = np.random.default_rng(7).uniform(-2, 2, (8, 300)).astype(np.float32)
    (got,) = compiled.execute([x])
    np.testing.assert_allclose(np.asarray(got).reshape(8), np.exp(x.astype(np.float64)).sum(axis=1), rtol=1e-5)


def test_a_fusion_hook(family, toy_device):
    """Section 7: the family with the epilogue hook, run as the graph fuser runs a producer
    with an element-wise consumer in its store: -x + b in one kernel, under both strategies."""
    ns = run("epilogue", dict(family[0]))
    planner, fused, spec = ns["TOY_NEGATE"], ns["fused"], ns["FUSED"]
    assert planner.epilogue and planner.strategies_with_epilogue(fused.producer, None, None) == ("runs", "elements")
    rng = np.random.default_rng(11)
    x = rng.standard_normal((3, 1000)).astype(np.float32)
    b = rng.standard_normal(1000).astype(np.float32)
    for strategy in ("runs", "elements"):
        compiled = toy_device.compile_operator(dml.Operator(toy_device, fused, spec), strategy)
        assert len(compiled.program.kernels) == 1
        (y,) = compiled.execute([x, b])
        np.testing.assert_array_equal(np.asarray(y).reshape(3, 1000), -x + b)
    # Without the hook the family says so.
    with pytest.raises(InternalError, match="applies no epilogue"):
        family[0]["FAMILY"].plan_with_epilogue(None, None, "runs", None)


# ---------------------------------------------------------------------------- section 3
def _elu_block() -> str:
    text = PAGE.read_text()
    return re.search(r"## 3\. A row of the element-wise table.*?```python\n(.*?)```", text, re.S).group(1)


def test_the_element_wise_row_is_the_tables():
    """The ELU row the page shows is, word for word, the one in ops/elementwise/activation.py,
    and evaluates (with that module's names: ACTIVATION_FLOAT, _elu, Attr) to TABLE's row."""
    shown = _elu_block()
    source = Path(activation.__file__).read_text()
    assert " ".join(shown.split()) in " ".join(source.split())
    row = eval(shown.strip().rstrip(","), vars(activation))  # noqa: S307
    table_row = next(r for r in TABLE if r.key == "elu")
    for f in dataclasses.fields(row):
        mine, theirs = getattr(row, f.name), getattr(table_row, f.name)
        if not callable(mine):
            assert mine == theirs, f.name


def test_a_row_made_from_the_page_runs(vulkan_device):
    """A new row (the page's ELU under another name) is an operator with nothing else: its
    spec (builders.spec) validates, runs on a Device and matches its reference within its
    tolerance, as the registered ELU does."""
    row = eval(_elu_block().strip().rstrip(","), vars(activation))  # noqa: S307
    row = dataclasses.replace(row, dml="ACTIVATION_ELU_WALKTHROUGH", key="elu_walkthrough",
                              functional="elu_walkthrough")
    spec = builders.spec(row)
    assert spec.name == "ActivationEluWalkthrough" and spec.desc.__name__ == "ActivationEluWalkthroughOperatorDesc"
    x = np.random.default_rng(2).uniform(-4, 4, (4, 257)).astype(np.float32)
    desc = spec.infer_output(dml.TensorDesc(F32, [4, 257]), alpha=0.5)
    spec.validate(desc, vulkan_device.feature_level)
    (y,) = vulkan_device.compile_operator(dml.Operator(vulkan_device, desc, spec)).execute([x])
    (expected,), (tolerance,) = spec.expected_outputs(desc, [x])
    assert np.all(np.abs(np.asarray(y, np.float64).reshape(4, 257) - expected) <= tolerance)
    np.testing.assert_allclose(np.asarray(y).reshape(4, 257), dml.elu(x, alpha=0.5), rtol=0, atol=0)
