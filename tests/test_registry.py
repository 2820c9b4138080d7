"""The operator registry: every ops module declares one OpSpec, and everything that lists
operators is derived from the specs (the public API, the reference, the examples, the CLI,
the fuzz tests), so that adding an operator is one ops module, its templates and its test
file (docs/adding-an-operator.md)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import gpudml as dml
from gpudml import caps, cli, compiler, examples, reference, templates
from gpudml.ops import MODULES, SPECS, OpSpec, spec_for, spec_named
from gpudml.ops.spec import regroup, tensor_fields, tensor_groups

ROOT = Path(__file__).resolve().parent.parent
OPS_DIR = ROOT / "gpudml" / "ops"


def _declares_spec(path: Path) -> bool:
    return any(isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "SPEC" for t in node.targets)
               for node in ast.parse(path.read_text()).body)


def test_every_operator_module_is_registered():
    declaring = sorted(p.stem for p in OPS_DIR.glob("*.py") if _declares_spec(p))
    assert sorted(MODULES) == declaring
    assert [s.key for s in SPECS] == list(MODULES)  # the key is the module's name


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.key)
def test_one_spec_per_operator(spec: OpSpec):
    module = importlib.import_module(f"gpudml.ops.{spec.key}")
    assert module.SPEC is spec and module.OP == spec.name
    assert spec.desc.__name__.startswith(spec.name) and spec.desc.__name__.endswith("OperatorDesc")
    assert spec_named(spec.key) is spec and spec_named(spec.functional_name) is spec
    # The public API: the functional form and the desc class.
    assert getattr(dml, spec.functional_name) is spec.functional
    assert getattr(dml, spec.desc.__name__) is spec.desc
    assert {spec.functional_name, spec.desc.__name__} <= set(dml.__all__)
    # The reference under the operator's key.
    assert getattr(reference, spec.key) is spec.reference
    # Its examples, named after it, and what `gpudml examples` runs.
    assert spec.examples and all(e.operator == spec.key and e.name.startswith(f"{spec.key}-") for e in spec.examples)
    assert all(e in examples.EXAMPLES for e in spec.examples)
    # Its `gpudml shader` subcommand takes its CLI options.
    args = cli.build_parser().parse_args(["shader", spec.key])
    assert all(hasattr(args, a.dest) for a in spec.cli)
    # Its strategies are named, and its tensors are the desc's inputs.
    assert spec.strategies and len(set(spec.strategies)) == len(spec.strategies)
    desc = cli.description(spec, args)[0]
    assert spec_for(desc) is spec
    # `arguments` describes a desc in the functional form's terms (the lab's reference call);
    # a list field (JOIN's input_tensors) is one argument holding a list.
    inputs = [d for _, d in tensor_fields(desc)[0]]
    assert spec.infer_output(*regroup(tensor_groups(desc)[0], inputs), **spec.arguments(desc)) == desc
    assert spec.traffic(desc) >= sum(d.element_count for d in inputs)
    assert set(spec.tensor_lists) <= set(spec.tensors)
    # Its templates are shipped: those its kernels (under every strategy) and its stage (data
    # movement) come from, its own or another operator's (Padding1 runs Padding's stage, Slice Slice1's).
    used = set()
    for strategy in spec.strategies_for(desc, caps.profile("gpu")):
        used |= {k.template for k in compiler.compile(desc, caps.profile("gpu"), strategy=strategy).kernels}
    used |= {spec.chain_stage(desc).op} if spec.chain_stage is not None else set()
    assert used <= set(templates.names())


def test_examples_in_registry_order():
    assert [e.operator for e in examples.EXAMPLES] == [s.key for s in SPECS for _ in s.examples]


def test_not_an_operator_desc(vulkan_device):
    with pytest.raises(dml.InvalidArgumentError, match="create_operator: int is not an operator desc "
                                                       "\\(Slice1OperatorDesc, PaddingOperatorDesc"):
        vulkan_device.create_operator(3)
    with pytest.raises(dml.InvalidArgumentError, match="'conv' is not an operator \\(one of slice1, padding"):
        spec_named("conv")


def test_each_operator_has_a_test_file_with_its_fuzz_strategies():
    for spec in SPECS:
        text = (ROOT / "tests" / f"test_{spec.key}.py").read_text()
        assert "\nFUZZ = OpFuzz(" in text, spec.key
