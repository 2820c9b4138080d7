"""The worked examples of the DirectML pages (each operator's spec lists its own), run on a
Device by `gpudml examples` and through the reference by the tests."""

from __future__ import annotations

import numpy as np

from .ops import SPECS, spec_named
from .ops.spec import Example

#: Every example, operators in registry order, each operator's in page order.
EXAMPLES: tuple[Example, ...] = tuple(e for spec in SPECS for e in spec.examples)


def run_reference(example: Example) -> np.ndarray:
    """The example's output as the operator's reference computes it."""
    return spec_named(example.operator).reference(example.input, **example.args)


def run_on(device, example: Example) -> np.ndarray:
    """The example's output as `device` computes it (through the functional API)."""
    return spec_named(example.operator).functional(example.input, device=device, **example.args)
