"""The worked examples of the DirectML pages (each operator's spec lists its own), run on a
Device by `gpudml examples` and through the reference by the tests."""

from __future__ import annotations

import difflib

import numpy as np

from .errors import InvalidArgumentError
from .functional import FUNCTIONS
from .ops import SPECS, spec_named
from .ops.spec import Example, OpSpec

#: Every example, operators in registry order, each operator's in page order.
EXAMPLES: tuple[Example, ...] = tuple(e for spec in SPECS for e in spec.examples)


def operator_names(spec: OpSpec) -> tuple[str, ...]:
    """The names an operator goes by on `gpudml examples`' command line: DirectML's operator
    type with and without its prefix (DML_OPERATOR_ELEMENT_WISE_ADD1, ELEMENT_WISE_ADD1), its
    name (ElementWiseAdd1), its key (add1) and its functional names (add, and aliases such as
    padding's)."""
    dml = spec.operator_type
    return tuple(dict.fromkeys([dml.removeprefix("DML_OPERATOR_"), dml, spec.name, spec.key, spec.functional_name,
                                *(alias.__name__ for alias in spec.aliases)]))


def select(names: list[str]) -> tuple[tuple[Example, ...], tuple[OpSpec, ...]]:
    """The examples of the operators `names` name (any of `operator_names`, case-insensitive),
    in registry order, and the named operators whose page has none; every example for no
    names. An unknown name is an InvalidArgumentError listing the names closest to it."""
    if not names:
        return EXAMPLES, ()
    spelled = {name.lower(): name for spec in SPECS for name in operator_names(spec)}
    by_name = {name.lower(): spec for spec in SPECS for name in operator_names(spec)}
    unknown = [n for n in names if n.lower() not in by_name]
    if unknown:
        hints = []
        for name in unknown:
            close = difflib.get_close_matches(name.lower(), spelled, n=5, cutoff=0.6)
            hints.append(f"{name!r} (closest: {', '.join(spelled[c] for c in close)})" if close else
                         f"{name!r} (nothing close)")
        raise InvalidArgumentError(
            f"gpudml examples: unknown operator {'; '.join(hints)}; name an operator by DirectML's operator type "
            f"(ELEMENT_WISE_ADD1), its name (ElementWiseAdd1) or its function (add), or give no name for every "
            f"example")
    chosen = {by_name[n.lower()].key for n in names}
    specs = [spec for spec in SPECS if spec.key in chosen]
    return tuple(e for spec in specs for e in spec.examples), tuple(spec for spec in specs if not spec.examples)


def positional(example: Example) -> tuple:
    """The example's positional arguments: its input, or none where the example has none
    (`input` None: a generator, FILL_VALUE_CONSTANT's, whose arguments are all keywords)."""
    return () if example.input is None else (example.input,)


def run_reference(example: Example) -> np.ndarray:
    """The example's output as the operator's reference computes it."""
    return spec_named(example.operator).reference(*positional(example), **example.args)


def run_on(device, example: Example) -> np.ndarray:
    """The example's output as `device` computes it (through the functional API)."""
    return FUNCTIONS[spec_named(example.operator).functional_name](*positional(example), device=device,
                                                                   **example.args)


def arrays(value) -> list[np.ndarray]:
    """An example's input or output as a list of arrays (one, or a list argument's/output's;
    none for an example without input)."""
    if value is None:
        return []
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
    """(label, array) for printing: `name`, or name[i] for each array of a list (none for None)."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [(f"{name}[{i}]", a) for i, a in enumerate(value)]
    return [(name, value)]
