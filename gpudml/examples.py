"""The worked examples of the DirectML pages (each operator's spec lists its own), run on a
Device by `gpudml examples` and through the reference by the tests."""

from __future__ import annotations

import numpy as np

from .functional import FUNCTIONS
from .ops import SPECS, spec_named
from .ops.spec import Example

#: Every example, operators in registry order, each operator's in page order.
EXAMPLES: tuple[Example, ...] = tuple(e for spec in SPECS for e in spec.examples)


def run_reference(example: Example) -> np.ndarray:
    """The example's output as the operator's reference computes it."""
    return spec_named(example.operator).reference(example.input, **example.args)


def run_on(device, example: Example) -> np.ndarray:
    """The example's output as `device` computes it (through the functional API)."""
    return FUNCTIONS[spec_named(example.operator).functional_name](example.input, device=device, **example.args)


def arrays(value) -> list[np.ndarray]:
    """An example's input or output as a list of arrays (one, or a list argument's/output's)."""
    return list(value) if isinstance(value, (list, tuple)) else [value]


def matches(got, expected) -> bool:
    """`got` (what the functional form returned) is the page's output: as many arrays, each
    of its shape and values (NaN equal to NaN)."""
    if isinstance(got, (list, tuple)) != isinstance(expected, (list, tuple)):
        return False
    pairs = list(zip(arrays(got), arrays(expected)))
    return len(pairs) == len(arrays(expected)) and all(
        g.shape == e.shape and np.array_equal(g, e, equal_nan=True) for g, e in pairs)


def labelled(name: str, value) -> list[tuple[str, np.ndarray]]:
    """(label, array) for printing: `name`, or name[i] for each array of a list."""
    if isinstance(value, (list, tuple)):
        return [(f"{name}[{i}]", a) for i, a in enumerate(value)]
    return [(name, value)]
