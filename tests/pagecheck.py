"""The DirectML pages of tests/data/pages/ (excerpts of MicrosoftDocs/sdk-api, each with its
source and license in its header), parsed: the tensors their examples print and their
"Tensor support" tables, so that an operator's tests can check its transcribed Examples
and its support table (gpudml/ops/<key>.py) against the page's own text."""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import numpy as np

import gpudml as dml

PAGES = Path(__file__).resolve().parent / "data" / "pages"

#: A printed tensor: `Label: (Sizes:{1, 2}, DataType:FLOAT32)` and its nested brackets.
_TENSOR = re.compile(r"(\w+(?:\[\d+\])?): \(Sizes:\{([\d, ]+)\}, DataType:(\w+)\)\s*\n(\[[\d\s,.\[\]-]*\])")
_LEVEL = re.compile(r"^### DML_FEATURE_LEVEL_(\d+)_(\d+) and above$", re.M)
_ROW = re.compile(r"^\| (\w+) \| [^|]+ \| ([^|]+) \| ([^|]+) \|$", re.M)


class Printed(NamedTuple):
    label: str  # "InputTensors[1]", "OutputTensor", ...
    sizes: tuple[int, ...]
    data_type: str
    values: tuple[float, ...]


def read(page: str) -> str:
    return (PAGES / page).read_text(encoding="utf-8")


def printed_tensors(page: str) -> list[Printed]:
    """Every tensor the page's examples print, in page order."""
    return [Printed(label, tuple(int(v) for v in sizes.split(",")), data_type,
                    tuple(float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", body)))
            for label, sizes, data_type, body in _TENSOR.findall(read(page))]


def as_printed(array: np.ndarray) -> tuple:
    """(sizes, data type name, values) of an array, as a page prints a tensor."""
    return tuple(array.shape), dml.DataType.from_numpy(array.dtype).name, tuple(float(v) for v in array.reshape(-1))


def assert_examples_printed(spec) -> None:
    """Each array of each of `spec`'s Examples (inputs and expected outputs) is a tensor its
    page prints: the same sizes, data type and numbers."""
    for example in spec.examples:
        printed = {(p.sizes, p.data_type, p.values) for p in printed_tensors(example.source)}
        arrays = [*_listed(example.input), *_listed(example.expected)]
        arrays += [v for v in example.args.values() if isinstance(v, np.ndarray)]
        for array in arrays:
            assert as_printed(array) in printed, (example.name, as_printed(array))


def _listed(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def support_rows(page: str) -> dict[dml.FeatureLevel, dict[str, tuple[frozenset, frozenset]]]:
    """The page's "Tensor support" tables: per level, per tensor (the page's name), its
    dimension counts and data types."""
    text = read(page)
    marks = list(_LEVEL.finditer(text))
    rows = {}
    for k, mark in enumerate(marks):
        body = text[mark.end():marks[k + 1].start() if k + 1 < len(marks) else len(text)]
        level = dml.FeatureLevel[f"FL_{mark.group(1)}_{mark.group(2)}"]
        rows[level] = {name: (_dimension_counts(dims), frozenset(dml.DataType[t.strip()] for t in types.split(",")))
                       for name, dims, types in _ROW.findall(body) if name != "Tensor"}
    return rows


def _dimension_counts(text: str) -> frozenset[int]:
    low, _, high = text.strip().partition(" to ")
    return frozenset(range(int(low), int(high or low) + 1))


def assert_support_table(table, page: str, fields: dict[str, str]) -> None:
    """`table` (a spec's SupportTable) has the page's rows: the same levels, and for each
    page tensor (`fields`: its name on the page -> the desc field the table names) the same
    dimension counts and data types."""
    page_rows = support_rows(page)
    assert sorted(page_rows) == sorted(row.level for row in table.rows)
    for row in table.rows:
        for name, field in fields.items():
            assert page_rows[row.level][name] == (row.ranks, row.types[field]), (row.level.name, name)
