"""The kernel families' protocol (kernels/base.py: KernelFamily, ProblemPlanner) and the
composite families (kernels/composite.py)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass

import numpy as np
import pytest

import gpudml as dml
from gpudml import caps as caps_module
from gpudml import compiler
from gpudml.device import CompiledOperator
from gpudml.errors import InternalError
from gpudml.kernels import builder, composite, convolution, elementwise, gemm, reduction
from gpudml.kernels.base import KernelFamily, Planner, ProblemPlanner
from gpudml.kernels.movement import family as movement
from gpudml.ops import SPECS, spec_for, spec_named
from gpudml.ops.spec import tensor_fields
from gpudml.tensor_desc import TensorDesc
from gpudml.types import DataType

F32 = DataType.FLOAT32
FAMILY_MODULES = ("reduction", "scan", "pooling", "gemm", "convolution", "normalization", "elementwise", "resample",
                  "movement.family")


@pytest.mark.parametrize("name", FAMILY_MODULES)
def test_each_family_module_has_one_family_instance(name):
    """Every family module names its family class's instance FAMILY: a KernelFamily whose
    strategies and options are tuples of names."""
    family = importlib.import_module(f"gpudml.kernels.{name}").FAMILY
    assert isinstance(family, KernelFamily)
    assert family.strategies and all(isinstance(s, str) for s in family.strategies)
    assert all(isinstance(o, str) for o in family.options)


def test_a_problem_planner_takes_a_family_instance_only():
    with pytest.raises(InternalError, match="no KernelFamily"):
        ProblemPlanner(lambda desc: desc, gemm)  # the module, not its family
    with pytest.raises(InternalError, match="no KernelFamily"):
        ProblemPlanner(lambda desc: desc)
    planner = ProblemPlanner(lambda desc: desc, reduction.FAMILY)
    assert (planner.strategies, planner.options, planner.prologue, planner.epilogue) == (
        reduction.FAMILY.strategies, reduction.FAMILY.options, True, True)


def test_the_hooks_a_family_lacks_say_so():
    """No stage, no prologue, no epilogue: the defaults of KernelFamily."""
    family = gemm.FAMILY
    assert family.stage(None) is None
    with pytest.raises(InternalError, match="reads no input through a chain"):
        family.strategies_through(None, None)
    with pytest.raises(InternalError, match="applies no epilogue"):
        elementwise.FAMILY.plan_with_epilogue(None, None, "runs", None)


def test_every_operator_planner_asks_its_family():
    """Every registered operator's planner is a Planner; those of a family are ProblemPlanners
    whose flags and names are their family's."""
    for spec in SPECS:
        planner = spec.planner
        assert isinstance(planner, Planner), spec.name
        if isinstance(planner, ProblemPlanner):
            family = planner.family
            assert isinstance(family, KernelFamily), spec.name
            assert (planner.strategies, planner.options) == (family.strategies, family.options), spec.name
            assert (planner.prologue, planner.epilogue) == (family.prologue, family.epilogue), spec.name
        else:  # the data-movement operators with a chain stage: their own index rules
            assert isinstance(planner, movement.MovementPlanner), spec.name


# ---------------------------------------------------------------------------- composites
def _desc(key: str, shape, **values):
    spec = spec_named(key)
    given = {a.dest: values.get(a.dest) for a in spec.cli.args}
    return spec.cli.desc(TensorDesc(F32, shape), given)


@dataclass(frozen=True)
class ExpSumDesc:
    """sum(exp(x)) over `axes`: a test's composite operator."""

    input_tensor: TensorDesc
    output_tensor: TensorDesc
    axes: tuple[int, ...]


class ExpSumFamily(composite.CompositeFamily):
    """exp (the element-wise family) into an intermediate value, then a reduction of it."""

    strategies = reduction.FAMILY.strategies
    options = ("chunks",)

    @staticmethod
    def parts(desc: ExpSumDesc):
        x = desc.input_tensor
        value = TensorDesc(x.data_type, x.sizes)
        exp = spec_named("exp")
        exp_problem = exp.planner.problem(exp.cli.desc(value, {a.dest: None for a in exp.cli.args}))
        return value, exp_problem, reduction.Reduction("SUM", value, desc.output_tensor, desc.axes)

    def strategies_for(self, problem: ExpSumDesc, caps, chunks=None) -> tuple[str, ...]:
        _, _, total = self.parts(problem)
        return reduction.FAMILY.strategies_for(total, caps, chunks=chunks)

    def steps(self, problem: ExpSumDesc, caps, strategy: str, *, element_stores=False, chunks=None):
        value, exp_problem, total = self.parts(problem)
        first = elementwise.FAMILY.strategies_for(exp_problem, caps)[0]
        return composite.Composition(
            (composite.Step(elementwise.FAMILY, exp_problem, first, composite.own(1), ((composite.VALUE, 0),)),
             composite.Step(reduction.FAMILY, total, strategy, ((composite.VALUE, 0),),
                            options={"chunks": chunks})),
            (composite.value_bytes(value),))


@dataclass(frozen=True)
class ExpSumSpec:
    """What runs an ExpSumDesc (an ops.spec.Operation, as a graph's fused kernels have)."""

    name: str = "ExpSum"
    planner: Planner = ProblemPlanner(lambda desc: desc, ExpSumFamily())

    def traffic(self, desc) -> int:
        inputs, outputs = tensor_fields(desc)
        return sum(d.buffer_bytes for _, d in inputs + outputs)


def test_compose_rebinds_each_steps_buffers():
    """Step 1 writes value 0 (scratch 0) instead of its output; step 2 reads it as its
    input and its own scratch (the partial results) becomes scratch 1."""
    desc = ExpSumDesc(TensorDesc(F32, [64, 4096]), TensorDesc(F32, [64, 1]), (1,))
    family = ExpSumSpec().planner.family
    plan = family.plan(desc, None, "partials", chunks=4)
    first, *rest = plan.dispatches
    assert plan.scratch_bytes[0] == 64 * 4096 * 4 and len(plan.scratch_bytes) == 2
    assert {b.key for b in first.buffers} == {(builder.SCRATCH, 0), (builder.INPUT, 0)}
    assert all(b.writable for b in first.buffers if b.role == builder.SCRATCH)
    assert len(rest) == 2  # the reduction's partials and combine passes
    partials, combine = rest
    assert {(b.key, b.writable) for b in partials.buffers} >= {((builder.SCRATCH, 0), False),
                                                               ((builder.SCRATCH, 1), True)}
    assert not any(b.role == builder.INPUT for b in partials.buffers + combine.buffers)
    assert {(b.key, b.writable) for b in combine.buffers} == {((builder.OUTPUT, 0), True),
                                                              ((builder.SCRATCH, 1), False)}
    # The kernels are the families' own: the same sources as each family planned alone.
    caps = caps_module.profile("vulkan-cpu")
    program = compiler.compile(desc, caps, strategy="partials", options={"chunks": 4}, operation=ExpSumSpec())
    _, exp_problem, total = ExpSumFamily.parts(desc)
    exp_plan = elementwise.FAMILY.plan(exp_problem, caps, elementwise.FAMILY.strategies_for(exp_problem, caps)[0])
    alone = exp_plan.dispatches + reduction.FAMILY.plan(total, caps, "partials", chunks=4).dispatches
    assert program.wgsl == [builder.build(d, caps.max_workgroups_per_dimension).source for d in alone]


def test_a_step_placing_too_few_tensors_is_an_internal_error():
    desc = ExpSumDesc(TensorDesc(F32, [4, 8]), TensorDesc(F32, [4, 1]), (1,))
    _, exp_problem, _ = ExpSumFamily.parts(desc)
    step = composite.Step(elementwise.FAMILY, exp_problem, "runs", (), ((composite.VALUE, 0),))
    with pytest.raises(InternalError, match="not placed"):
        composite.compose(composite.Composition((step,), (128,)), None)
    step = composite.Step(elementwise.FAMILY, exp_problem, "runs", composite.own(1), ((composite.VALUE, 1),))
    with pytest.raises(InternalError, match="value 1"):
        composite.compose(composite.Composition((step,), (128,)), None)


@pytest.mark.parametrize("strategy", ["rows", "partials"])
def test_a_composite_operator_runs(vulkan_device, strategy):
    """The composed kernels on a device: sum(exp(x)) along the rows, the exp written once to
    scratch and read by the reduction."""
    rng = np.random.default_rng(7)
    x = rng.uniform(-2, 2, (8, 300)).astype(np.float32)
    desc = ExpSumDesc(TensorDesc(F32, [8, 300]), TensorDesc(F32, [8, 1]), (1,))
    compiled = CompiledOperator(vulkan_device, dml.Operator(vulkan_device, desc, ExpSumSpec()), strategy)
    assert len(compiled.program.kernels) == (2 if strategy == "rows" else 3)
    (got,) = compiled.execute([x])
    np.testing.assert_allclose(got.reshape(8), np.exp(x.astype(np.float64)).sum(axis=1), rtol=1e-5)


def test_convolution_is_a_composite_of_the_gemm_family():
    """A convolution's GEMM strategies are one step of gemm.FAMILY (the implicit GEMM), its
    `direct` one of convolution.DIRECT: the plans are those families' own."""
    desc = _desc("convolution", [1, 8, 16, 16])
    planner = spec_for(desc).planner
    assert isinstance(planner.family, composite.CompositeFamily) and planner.family is convolution.FAMILY
    cv = planner.problem(desc)
    (step,) = convolution.FAMILY.steps(cv, None, "registers").steps
    assert step.family is gemm.FAMILY and step.inputs == composite.own(3 if cv.bias is not None else 2)
    problem, uniforms, params = convolution.gemm_of(cv)
    assert planner.plan(desc, None, "registers") == gemm.FAMILY.plan(
        problem, None, "registers", extra_uniforms=uniforms, extra_params=params)
    depthwise = _desc("convolution", [1, 2, 16, 16], channels=None)
    if "direct" in planner.strategies_for(depthwise, None):
        (step,) = convolution.FAMILY.steps(planner.problem(depthwise), None, "direct").steps
        assert step.family is convolution.DIRECT
