"""The support tables of a spec: their fields, the data types of a description, and which
feature level's row takes a rank and types."""

from __future__ import annotations

from .draws import FL


def tables(spec) -> dict:
    """The spec's support tables by key: {None: its table}, or its dict of them (Reduce's, by function)."""
    return dict(spec.support) if isinstance(spec.support, dict) else {None: spec.support}


def table_fields(table) -> list[str]:
    return list(table.rows[0].types)


def desc_types(desc, table) -> dict:
    """The data type of each tensor the table names, in `desc` (a list field: its first)."""
    out = {}
    for field in table_fields(table):
        value = getattr(desc, field)
        if value is None:  # an optional tensor left out (GEMM's C)
            continue
        out[field] = (value[0] if isinstance(value, (list, tuple)) else value).data_type
    return out


def row_accepts(row, rank: int, types: dict) -> bool:
    return rank in row.ranks and all(t in row.types[f] for f, t in types.items())


def accepts(table, level, rank: int, types: dict) -> bool:
    """Whether the table's row at `level` takes the rank and these types."""
    if level < table.introduced:
        return False
    return row_accepts(table.row_for(level), rank, types)


def lowest_level(table, rank: int, types: dict):
    """The lowest feature level whose row takes the rank and these types, or None."""
    levels = [lv for lv in FL if accepts(table, lv, rank, types)]
    return min(levels) if levels else None
