"""The DirectML reference pages stored under tests/data/ (seeds/: the seed operators' pages
as the project was given them; pages/: excerpts of the later operators' pages, each with its
source and license in a header): the numbers a page prints and its "Tensor support"
tables, to check what the operator modules transcribed from them."""

from __future__ import annotations

import re
from pathlib import Path

from gpudml.types import DataType, FeatureLevel

DATA = Path(__file__).resolve().parent / "data"
SEEDS_DIR = DATA / "seeds"
PAGES_DIR = DATA / "pages"


def page_text(name: str) -> str:
    """A stored page: tests/data/pages/NAME, else tests/data/seeds/NAME."""
    path = PAGES_DIR / name
    return (path if path.is_file() else SEEDS_DIR / name).read_text(encoding="utf-8")


def page_blocks(text: str, marker: str) -> list[list[float]]:
    """The numbers of each bracketed block that follows `marker` on a page,
    with `//` comments removed (the pages' typos are in punctuation/comments only)."""
    blocks = []
    for m in re.finditer(re.escape(marker), text):
        rest = text[m.end() :]
        start = rest.index("[")
        depth, stop = 0, start
        for stop, ch in enumerate(rest[start:], start):  # noqa: B007 (used after the loop)
            depth += {"[": 1, "]": -1}.get(ch, 0)
            if depth == 0:
                break
        body = re.sub(r"//[^\n]*", "", rest[start : stop + 1])
        blocks.append([float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", body)])
    return blocks


def page_arrays(text: str, field: str) -> list[list[int]]:
    """Each `{...}` list a page's examples give the field (`Offsets = {0, 0, 1, 2}`,
    `StartPadding: {0, 0, 1, 2}`), in page order."""
    found = re.findall(rf"^{re.escape(field)}\s*[=:]\s*\{{([^}}]*)\}}", text, re.M)
    return [[int(v) for v in item.split(",")] for item in found]


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def _ranks(text: str) -> frozenset[int]:
    low, _, high = text.partition(" to ")
    return frozenset(range(int(low), int(high or low) + 1))


def support_rows(text: str) -> set[tuple]:
    """The page's "Tensor support" tables as (level, ranks, ((tensor field, data types), ...))
    rows: one per "### DML_FEATURE_LEVEL_x_y and above" heading, or, for a page with a
    single table, one at the level its Availability section names."""
    section = text[text.index("## Tensor support"):]
    introduced = re.search(r"introduced in \W*DML_FEATURE_LEVEL_(\d_\d)", text).group(1)
    parts = re.split(r"^### DML_FEATURE_LEVEL_(\d_\d) and above\s*$", section, flags=re.M)
    tables = [(introduced, parts[0])] if len(parts) == 1 else list(zip(parts[1::2], parts[2::2], strict=True))
    rows = set()
    for level, table in tables:
        lines = [line for line in table.splitlines() if line.startswith("| ") and not set(line) <= set("|- ")]
        cells = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines[1:]]  # [0]: the header
        ranks = {_ranks(row[2]) for row in cells}
        assert len(ranks) == 1, f"FL {level}: the tensors' dimension counts differ ({ranks})"
        types = tuple(sorted((_snake(row[0]), frozenset(DataType[t.strip()] for t in row[3].split(",")))
                             for row in cells))
        rows.add((FeatureLevel[f"FL_{level}"], ranks.pop(), types))
    return rows


def table_rows(table) -> set[tuple]:
    """An operator's SupportTable in support_rows' terms."""
    return {(row.level, row.ranks, tuple(sorted(row.types.items()))) for row in table.rows}
