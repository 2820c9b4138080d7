"""Every fusable activation reaches every family that fuses one (issue #40): each row of
`FUSABLE` (the parameterized ones with attribute values other than their defaults) as the
fused activation of every operator that takes one (GEMM, CONVOLUTION's direct kernel (and a
sample of rows through its implicit GEMM), MEAN_VARIANCE_NORMALIZATION1, BATCH_NORMALIZATION,
ADD1), and as a
graph's store epilogue after a GEMM (gpudml/fusion.py): compiled and run on each adapter,
within the operator's documented precision of its reference.

What makes it hold: the helpers a row's formula calls come from one macro,
lib/elementwise.wgsl.j2's formula_helpers, which every template computing rows' formulas
emits (test_no_template_lists_row_helpers). Shapes are tiny and shared, so each
(activation, kernel) is one pipeline."""

from __future__ import annotations

import re

import numpy as np
import pytest

import gpudml as dml
from gpudml.kernels import templates
from gpudml.ops import spec_named
from gpudml.ops.elementwise import FUSABLE
from gpudml.testing import assert_within

T = dml.DataType

#: Attribute values other than the defaults (a row not named here has none, or takes them).
ATTRIBUTES = {
    "leaky_relu": {"alpha": 0.25},
    "elu": {"alpha": 0.5},
    "linear": {"alpha": 1.5, "beta": -0.25},
    "softplus": {"steepness": 2.0},
    "hard_sigmoid": {"alpha": 0.3, "beta": 0.4},
    "parametric_softplus": {"alpha": 0.75, "beta": 1.5},
    "scaled_elu": {"alpha": 1.5, "gamma": 1.25},
    "scaled_tanh": {"alpha": 1.25, "beta": 0.75},
    "thresholded_relu": {"alpha": 0.5},
    "shrink": {"bias": 0.25, "threshold": 0.75},
    "celu": {"alpha": 2.0},
}
ACTIVATIONS = tuple(dml.FusedActivation(name, **ATTRIBUTES.get(name, {})) for name in FUSABLE)

rng = np.random.default_rng(40)


def _u(*shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


def _td(a):
    return dml.TensorDesc(T.from_numpy(a.dtype), a.shape)


# operator: (spec key, arrays, keywords, strategy or None: the adapter's choice). The values
# spread over [-3, 3] or so: every activation's bends (thresholds, shrink's band) are crossed.
OPERATORS = {
    "gemm": ("gemm", [_u(3, 4, lo=-2, hi=2), _u(4, 5), _u(5)], {"beta": 0.5}, None),
    "convolution_direct": ("convolution", [_u(1, 2, 4, 4, lo=-2, hi=2), _u(3, 2, 2, 2), _u(1, 3, 1, 1)], {}, "direct"),
    "convolution_gemm": ("convolution", [_u(1, 2, 4, 4, lo=-2, hi=2), _u(3, 2, 2, 2), _u(1, 3, 1, 1)], {},
                         "registers"),
    "mean_variance_normalization1": ("mean_variance_normalization1",
                                     [_u(2, 3, 6, lo=-3, hi=3), _u(1, 3, 1, lo=0.5, hi=2), _u(1, 3, 1)],
                                     {"axes": [2]}, None),
    "batch_normalization": ("batch_normalization",
                            [_u(1, 3, 2, 3, lo=-3, hi=3), _u(1, 3, 1, 1), _u(1, 3, 1, 1, lo=0.5, hi=2),
                             _u(1, 3, 1, 1, lo=0.5, hi=2), _u(1, 3, 1, 1)], {}, None),
    "add1": ("add1", [_u(2, 7, lo=-2, hi=2), _u(2, 7, lo=-1.5, hi=1.5)], {}, None),
}


#: The implicit-GEMM convolution stores through GEMM's epilogue (lib/gemm.wgsl.j2's, the
#: template "gemm" runs every row through) with operands of its own: a sample of rows whose
#: formulas call helpers of both groups (its pipelines are the slowest to build on llvmpipe).
SAMPLE = ("gelu", "celu")  # erf_approx (scalar_helpers); celu (math_helpers, calling max_num)


def test_every_fusable_row_is_covered():
    assert [a.name for a in ACTIVATIONS] == list(FUSABLE)
    assert set(ATTRIBUTES) <= set(FUSABLE) and set(SAMPLE) <= set(FUSABLE)
    for name, values in ATTRIBUTES.items():
        assert set(values) == {a.name for a in FUSABLE[name].attributes}, name


@pytest.mark.parametrize("operator", OPERATORS)
def test_every_activation_fuses_into(device, operator):
    """Each fusable activation as the operator's FusedActivation: one kernel's pipeline,
    within the operator's precision (the activation's error included) of its reference."""
    key, arrays, kwargs, strategy = OPERATORS[operator]
    spec = spec_named(key)
    for activation in ACTIVATIONS:
        if operator == "convolution_gemm" and activation.name not in SAMPLE:
            continue
        desc = spec.infer_output(*map(_td, arrays), **kwargs, fused_activation=activation)
        want = spec.reference_outputs(desc, arrays)[0]
        tolerance = spec.tolerance(want, arrays, spec.arguments(desc))
        compiled = device.compile_operator(device.create_operator(desc), strategy)
        if strategy is not None:
            assert compiled.program.strategy == strategy
        (got,) = compiled.execute(arrays)
        assert_within(got, want, tolerance, f"{operator} {activation!r}")


def test_every_activation_as_a_graph_epilogue(device):
    """activation(gemm(a, b)) as a graph: the activation runs in the GEMM's store (one
    dispatch), within the activation's precision of its reference at the GEMM's value."""
    a, b = _u(3, 4, lo=-2, hi=2), _u(4, 5)
    product = dml.gemm(a, b, device=device)
    for activation in ACTIVATIONS:
        row = activation.row
        attributes = dict(activation.attributes)
        g = dml.Graph(device)
        ga, gb = g.input([3, 4], name="a"), g.input([4, 5], name="b")
        fused = g.compile([getattr(dml, row.functional)(dml.gemm(ga, gb), **attributes)])
        assert fused.dispatch_count == 1, activation
        (got,) = fused({"a": a, "b": b})
        spec = spec_named(row.key)
        want = spec.reference(product, **attributes)
        assert_within(got, want, spec.tolerance(want, [product], attributes), f"graph {activation!r}")


def test_no_template_lists_row_helpers():
    """The helpers rows' formulas call are emitted through formula_helpers only: a template
    that names scalar_helpers or math_helpers itself would miss the next helper group."""
    root = templates.packaged_dir()
    offenders = []
    for name in templates.names():
        if name == "lib/elementwise.wgsl.j2":
            continue
        text = (root / name).read_text()
        if re.search(r"\b(scalar_helpers|math_helpers)\s*\(", text):
            offenders.append(name)
    assert offenders == []
