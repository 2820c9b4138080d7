"""Cases: a description of an operator at a feature level drawn from its rule and its
support table (`draw_case`), and hypothesis's valid cases."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from hypothesis import strategies as st

from .draws import FL, Draw, HypothesisDraw
from .layouts import laid_out
from .registry import RULES, Ask, Rule
from .tables import accepts, desc_types, table_fields, tables


@dataclass
class Case:
    """A description of `spec`'s operator at `level`, and whether its support table takes it
    (a sweep asks for types the table may not list)."""

    spec: Any
    level: FL
    desc: Any
    accepted: bool = True
    contents: list | None = None  # each input's buffer contents, where a test gives them

    @property
    def rule(self) -> Rule:
        return RULES[self.spec.key]

    def buffers(self, rng) -> list[np.ndarray]:
        """Contents of each input's buffer (its required elements): the given contents, else
        the rule's fill, else the spec's sample."""
        if self.contents is not None:
            return self.contents
        fill = self.rule.fill or (lambda desc, r: self.spec.sample_buffers(desc, r))
        return fill(self.desc, rng)


_ANY = object()


def draw_case(spec, d: Draw, *, level=None, rank=None, data_type=None, key=_ANY, layout=None, sizes=None) -> Case:
    """A case of `spec` drawn through `d`: the table (a key whose table takes the rank and
    type where there are several), the level (one its table knows), a rank its row lists,
    the data types (the input's as given, the rule's free tensors' from the row, the others
    the input's), the rule's call, infer_output, and `layout` (one of LAYOUTS; None: each
    tensor in a random layout)."""
    rule_ = RULES[spec.key]
    options = tables(spec)
    if key is _ANY:
        keys = [k for k, t in options.items() if takes(t, level, rank, data_type)]
        key = d.pick(keys or list(options))
    table = options[key]
    if level is None:
        level = d.pick([lv for lv in FL if lv >= table.introduced])
    row = table.row_for(max(level, table.introduced))
    if rank is None:
        rank = len(sizes) if sizes is not None else d.pick(sorted(row.ranks))
    fields = table_fields(table)
    types = {fields[0]: data_type if data_type is not None else d.pick(sorted(row.types[fields[0]]))}
    free = rule_.free_fields(key)
    for field in fields[1:]:
        types[field] = d.pick(sorted(row.types[field])) if field in free else types[fields[0]]
    drawn = rule_.call(d, Ask(level, rank, types, key, None if sizes is None else tuple(sizes)))
    desc = laid_out(spec.infer_output(*drawn.tensors, **drawn.attributes), d, layout)
    return Case(spec, level, desc, accepts(table, level, rank, desc_types(desc, table)))


def takes(table, level, rank, data_type) -> bool:
    """Whether some row of the table (the one at `level`, where given) takes the rank and the
    input's data type (each where given)."""
    rows = [table.row_for(level)] if level is not None and level >= table.introduced else \
        table.rows if level is None else []
    main = table_fields(table)[0]
    return any((rank is None or rank in row.ranks) and (data_type is None or data_type in row.types[main])
               for row in rows)


def valid_cases(spec):
    """Hypothesis: valid cases of `spec` at any level, row, rank and type its table lists, in random layouts."""
    @st.composite
    def cases(draw):
        return draw_case(spec, HypothesisDraw(draw))
    return cases()
