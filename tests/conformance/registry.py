"""The rules' registry: what a rule draws a call for (`Ask`), what it draws (`Drawn`), the
`Rule` itself, `RULES` (by spec key) and `rule(...)`, which registers one; `discover()`
imports every rule module of conformance/rules/ (each registers its operators' rules)."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import gpudml as dml
from gpudml.ops import SPECS

from .draws import FL, MAX_SIZE, Draw, T


@dataclass(frozen=True)
class Ask:
    """What a rule draws a call for: a feature level, the input's rank, a data type per tensor
    of the support table (`types`, the input's first), the support table's key where the
    spec has several (Reduce: its function), and the input's sizes where they are given."""

    level: FL
    rank: int
    types: dict
    key: Any = None
    sizes: tuple | None = None

    @property
    def data_type(self) -> T:
        """The input's data type (the table's first tensor)."""
        return next(iter(self.types.values()))

    def input_sizes(self, d: Draw, top: int | None = None) -> list[int]:
        """The given sizes, or sizes of `rank` axes drawn up to `top` (MAX_SIZE) each."""
        if self.sizes is not None:
            return list(self.sizes)
        return d.ints(self.rank, 1, top or MAX_SIZE[self.rank])

    def input(self, d: Draw, top: int | None = None) -> dml.TensorDesc:
        return dml.TensorDesc(self.data_type, self.input_sizes(d, top))


class Drawn(NamedTuple):
    """A rule's call: the functional form's tensor arguments as TensorDescs (a list of them for
    a list argument) and infer_output's keyword arguments."""

    tensors: list
    attributes: dict


@dataclass(frozen=True)
class Rule:
    """An operator's rule (see the package's docstring: conformance/__init__.py)."""

    call: Callable[[Draw, Ask], Drawn]
    broken: Callable
    functional: Callable
    fields: tuple[str, ...]
    free: tuple[str, ...] | Callable = ()
    fill: Callable | None = None
    compare: Callable | None = None
    #: Another rule runs the same kernels on every layout (a row of a table whose rows
    #: differ only in a formula: the element-wise operators), or the operator's own tests
    #: cover its shapes and its kernels are compute-bound, slow on a software adapter
    #: (GEMM: tests/test_gemm.py): the layout sweep takes each data type at one rank
    #: (rotating), the fuzz tests a quarter of the examples.
    light: bool = False

    def free_fields(self, key) -> tuple[str, ...]:
        return self.free(key) if callable(self.free) else self.free


#: Every operator's rule, by spec key: registered by the rule modules of conformance/rules/
#: as discover() imports them, then in the registry's order (gpudml.ops.SPECS).
RULES: dict[str, Rule] = {}


def rule(key: str, **parts):
    """Register the decorated function as the `call` of `key`'s rule, with its other parts
    (a key that two rules register is an error)."""
    def register(call):
        if key in RULES:
            raise ValueError(f"two rules for {key!r}: {RULES[key].call.__module__} and {call.__module__}")
        RULES[key] = Rule(call, **parts)
        return call
    return register


def discover() -> dict[str, Rule]:
    """Import every rule module of conformance/rules/ (one file per operator or family of
    operators, each registering its rules with `rule(...)` as it is imported; a module whose
    name starts with an underscore holds helpers, no rule) and put RULES in the registry's
    order. Adding an operator is adding its rule file: nothing here names one."""
    from . import rules

    for module in pkgutil.iter_modules(rules.__path__):
        if not module.name.startswith("_"):
            importlib.import_module(f"{rules.__name__}.{module.name}")
    order = {spec.key: i for i, spec in enumerate(SPECS)}
    ordered = sorted(RULES.items(), key=lambda item: order.get(item[0], len(order)))
    RULES.clear()
    RULES.update(ordered)
    return RULES
