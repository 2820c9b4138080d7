"""The operator registry: every ops module declares its operator's OpSpec (or, for a table of
operators that differ only in a formula, one per row), and everything that lists operators
is derived from the specs (the public API, the reference, the examples, the CLI, the
conformance kit), so that adding an operator is one ops module (or one table row), its
kernels' templates and its conformance rules (docs/adding-an-operator.md)."""

from __future__ import annotations

import ast
import functools
import importlib
from pathlib import Path

import pytest

import gpudml as dml
from gpudml import caps, cli, compiler, examples, reference
from gpudml.functional import FUNCTIONS
from gpudml.kernels import templates
from gpudml.kernels.base import Planner
from gpudml.ops import EXTENSIONS, SPECS, OpSpec, spec_for, spec_named
from gpudml.ops.spec import regroup, tensor_fields, tensor_groups

pytestmark = pytest.mark.any_class  # validation and registry facts: the same under either adapter class

ROOT = Path(__file__).resolve().parent.parent
OPS_DIR = ROOT / "gpudml" / "ops"


def _declared(path: Path) -> set[str]:
    """The names among SPEC and SPECS that a module assigns at its top level."""
    return {getattr(t, "id", None) for node in ast.parse(path.read_text()).body if isinstance(node, ast.Assign)
            for t in node.targets} & {"SPEC", "SPECS"}


def test_every_operator_module_is_registered_in_its_order():
    """Every module that declares specs is registered (in SPECS, or an extension in
    EXTENSIONS), each spec once, a module's specs in its own order; a module of one
    operator is named by its key."""
    registered = (*SPECS, *EXTENSIONS)
    found = []
    for path in sorted([*OPS_DIR.glob("*.py"), *OPS_DIR.glob("*/__init__.py")]):  # modules and packages
        declared = _declared(path)
        if not declared:
            continue
        module = importlib.import_module(f"gpudml.ops.{path.parent.name if path.name == '__init__.py' else path.stem}")
        specs = list(module.SPECS) if "SPECS" in declared else [module.SPEC]
        if "SPEC" in declared:
            assert module.SPEC.key == path.stem and module.OP == module.SPEC.name
        found += specs
        positions = [registered.index(s) for s in specs]
        assert positions == sorted(positions), path.stem
    assert sorted(id(s) for s in found) == sorted(id(s) for s in registered)
    keys = [s.key for s in registered]
    assert len(set(keys)) == len(keys)
    names = [s.functional_name for s in registered] + [f.__name__ for s in registered for f in s.aliases]
    assert len(set(names)) == len(names)


@functools.cache
def _parser():
    """gpudml's argument parser, built once (it holds a subcommand per operator)."""
    return cli.build_parser()


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.key)
def test_one_spec_per_operator(spec: OpSpec):
    assert spec.desc.__name__.startswith(spec.name) and spec.desc.__name__.endswith("OperatorDesc")
    assert spec_named(spec.key) is spec and spec_named(spec.functional_name) is spec
    # The public API: the functional form (its signature and docstring) and the desc class.
    public = getattr(dml, spec.functional_name)
    assert public is FUNCTIONS[spec.functional_name] and public.__wrapped__ is spec.functional
    assert public.__doc__ == spec.functional.__doc__ and public.__doc__
    assert all(getattr(dml, f.__name__).__wrapped__ is f for f in spec.aliases)
    assert getattr(dml, spec.desc.__name__) is spec.desc
    assert {spec.functional_name, spec.desc.__name__} <= set(dml.__all__)
    # The reference under the functional form's name: it takes the same arguments.
    assert getattr(reference, spec.functional_name) is spec.reference
    # Its examples, named after it, and what `gpudml examples` runs: the page's (where it has
    # none, as no element-wise or activation page has, its stored excerpt says so).
    page = Path(__file__).parent / "data" / "pages" / f"ns-directml-{spec.page.lower()}.md"
    assert spec.examples or (page.is_file() and "## Examples" not in page.read_text(encoding="utf-8")), spec.key
    assert all(e.operator == spec.key and e.name.startswith(f"{spec.key}-") for e in spec.examples)
    assert all(e in examples.EXAMPLES for e in spec.examples)
    # Its `gpudml shader` subcommand takes its CLI options.
    args = _parser().parse_args(["shader", spec.key])
    assert all(hasattr(args, a.dest) for a in spec.cli.args)
    # Its planner's strategies are named, and its tensors are the desc's inputs.
    planner = spec.planner
    assert isinstance(planner, Planner)
    assert planner.strategies and len(set(planner.strategies)) == len(planner.strategies)
    desc = cli.description(spec, args)[0]
    assert spec_for(desc) is spec
    # `arguments` describes a desc in the functional form's terms (the lab's reference call);
    # a list field (JOIN's input_tensors) is one argument holding a list.
    inputs = [d for _, d in tensor_fields(desc)[0]]
    assert spec.infer_output(*regroup(tensor_groups(desc)[0], inputs), **spec.arguments(desc)) == desc
    assert spec.traffic(desc) >= sum(d.element_count for d in inputs)
    assert set(spec.tensor_lists) <= set(spec.tensors)
    # Its templates are shipped: those its kernels (under every strategy) and its stage (data
    # movement) come from, its own or another operator's (Padding1 runs Padding's stage, Slice0 Slice1's).
    used = set()
    for strategy in planner.strategies_for(desc, caps.profile("gpu")):
        used |= {k.template for k in compiler.compile(desc, caps.profile("gpu"), strategy=strategy).kernels}
    stage = planner.stage(desc)
    used |= {stage.op} if stage is not None else set()
    assert used <= set(templates.names())


def test_examples_in_registry_order():
    assert [e.operator for e in examples.EXAMPLES] == [s.key for s in SPECS for _ in s.examples]


def test_not_an_operator_desc(vulkan_device):
    with pytest.raises(dml.InvalidArgumentError, match="create_operator: int is not an operator desc "
                                                       "\\(Slice1OperatorDesc, PaddingOperatorDesc"):
        vulkan_device.create_operator(3)
    with pytest.raises(dml.InvalidArgumentError, match="'conv' is not an operator \\(one of slice1, padding"):
        spec_named("conv")


def test_every_enum_is_exported_without_listing_it():
    """gpudml exports every DMLEnum subclass (types.ENUMS, filled as each class is made), so
    that a new enum touches types.py only."""
    found = {c.__name__: c for c in dml.types.DMLEnum.__subclasses__()}
    assert found == dml.types.ENUMS and len(found) >= 10
    for name, cls in found.items():
        assert getattr(dml, name) is cls and name in dml.__all__
