"""The quick loop: every operator of the registry once on each adapter, and a fused graph
once, in well under a minute on 2 cores (`.venv/bin/python -m pytest -q -m smoke`, or this
file alone). A change that breaks an operator, a kernel family or fusion fails here first;
the whole suite (the conformance kit's sweeps, the fuzz tests) then says how.

Each operator runs one packed case of its rule (tests/conformance), drawn from a fixed seed
at the Device's feature level, under the strategy the operator chooses (so on CI's second,
GPU-class run, the GPU-class one): against the reference within the spec's precision, the
bytes around the output untouched.
"""

from __future__ import annotations

import numpy as np
import pytest
from conformance import RandomDraw, draw_case, run_case, run_random_graph

from gpudml.ops import SPECS

pytestmark = pytest.mark.smoke
KEYS = [s.key for s in SPECS]


@pytest.mark.parametrize("spec", SPECS, ids=KEYS)
def test_every_operator_once(device, spec):
    rng = np.random.default_rng([KEYS.index(spec.key), 40])
    case = draw_case(spec, RandomDraw(rng), level=device.feature_level, layout="packed")
    assert case.accepted
    run_case(device, case, rng, what="smoke")


def test_a_fused_graph_once(device):
    """A random graph of element-wise, data-movement and reducing operators: fused as
    unfused (conformance.run_random_graph), with at least one fused kernel."""
    graph, fused = run_random_graph(device, seed=3, nodes=8)
    assert graph.fused_names(fused)
