"""Fused activations: `FusedActivation`, an activation row of the table applied to another
operator's result (DML_OPERATOR_DESC's FusedActivation, ADD1's), and `as_activation`, a row's
formula as a function of that result. Other operators take them from gpudml/ops/activations.py."""

from __future__ import annotations

import re

from ...errors import InvalidArgumentError
from .row import Row, fused_name
from .table import FUSABLE


class FusedActivation:
    """An activation fused into an operator's result (DML_OPERATOR_DESC's FusedActivation,
    ADD1's): `FusedActivation("relu")`, `FusedActivation("leaky_relu", alpha=0.1)`; the
    name is an activation's (its functional form's name without "activation_"), the
    keywords its attributes (the others take their defaults)."""

    __slots__ = ("name", "attributes")

    def __init__(self, name, **attributes):
        self._build(name, attributes, "FusedActivation")

    def _build(self, name, attributes: dict, where: str) -> None:
        row = FUSABLE.get(name.lower() if isinstance(name, str) else None)
        if row is None:
            raise InvalidArgumentError(
                f"{where}: {name!r} is not an activation that fuses (one of {', '.join(FUSABLE)})")
        known = {a.name: a for a in row.attributes}
        for key in attributes:
            if key not in known:
                raise InvalidArgumentError(f"{where}: {name} has no attribute {key!r} "
                                           f"(its attributes: {', '.join(known) or 'none'})")
        values = {a.name: a.check(attributes.get(a.name, a.default), f"{where}.{a.name}", row.op)
                  for a in row.attributes}
        object.__setattr__(self, "name", fused_name(row))
        object.__setattr__(self, "attributes", tuple(values.items()))

    def __setattr__(self, key, value):
        raise AttributeError("FusedActivation is immutable")

    @property
    def row(self) -> Row:
        return FUSABLE[self.name]

    @classmethod
    def coerce(cls, value, where: str = "fused_activation") -> FusedActivation | None:
        if value is None or isinstance(value, FusedActivation):
            return value
        if isinstance(value, str):
            made = cls.__new__(cls)
            made._build(value, {}, where)
            return made
        raise InvalidArgumentError(f"{where}: expected a FusedActivation, an activation's name or None, got {value!r}")

    def __eq__(self, other):
        return isinstance(other, FusedActivation) and (self.name, self.attributes) == (other.name, other.attributes)

    def __hash__(self):
        return hash((self.name, self.attributes))

    def __repr__(self):
        args = "".join(f", {k}={v!r}" for k, v in self.attributes)
        return f"FusedActivation({self.name!r}{args})"


def as_activation(expression: str) -> str:
    """An activation row's formula (over its input `a`) as a function of the result `x`."""
    return re.sub(r"\ba\b", "x", expression)
