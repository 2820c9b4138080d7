"""The operator registry: one module per DirectML operator, each exporting its `SPEC`.

This list is the one place an operator is registered; the public API, the functional
functions, the command line, `gpudml examples`, `gpudml.reference` and the tests' case
lists are derived from it (docs/adding-an-operator.md).
"""

from __future__ import annotations

import importlib

from ..errors import InvalidArgumentError
from .spec import OpSpec, tensor_fields

#: The operator modules, in documentation order: the one line that registers an operator.
MODULES = ("slice1", "padding", "reverse_subsequences", "reduce", "argmax", "argmin", "padding1", "slice_v1",
           "gather", "tile", "join", "split", "cumulative_summation", "cumulative_product")

SPECS: tuple[OpSpec, ...] = tuple(importlib.import_module(f".{name}", __name__).SPEC for name in MODULES)

_BY_DESC = {spec.desc: spec for spec in SPECS}
_BY_KEY = {spec.key: spec for spec in SPECS}


def spec_for(desc) -> OpSpec:
    """The spec of an operator desc; InvalidArgumentError for anything else."""
    try:
        return _BY_DESC[type(desc)]
    except KeyError:
        known = ", ".join(cls.__name__ for cls in _BY_DESC)
        raise InvalidArgumentError(
            f"create_operator: {type(desc).__name__} is not an operator desc ({known})") from None


def spec_named(name: str) -> OpSpec:
    """The spec whose key or functional name is `name` ("slice1", "slice", "padding", "pad")."""
    for spec in SPECS:
        if name in (spec.key, spec.functional_name):
            return spec
    raise InvalidArgumentError(f"{name!r} is not an operator (one of {', '.join(_BY_KEY)})")


__all__ = ["MODULES", "SPECS", "OpSpec", "spec_for", "spec_named", "tensor_fields"]
