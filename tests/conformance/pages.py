"""The stored DirectML pages (tests/data/pages, tests/data/seeds): their examples'
printed tensors, their arrays and their "Tensor support" tables."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from .draws import FL, T

DATA = Path(__file__).resolve().parent.parent / "data"
SEEDS_DIR, PAGES_DIR = DATA / "seeds", DATA / "pages"
#: A printed tensor: `Label: (Sizes:{1, 2}, DataType:FLOAT32)` (DIAGONAL_MATRIX1's page drops the
#: comma; FILL_VALUE_CONSTANT's writes 13.0f) and its nested brackets.
_PRINTED = re.compile(r"(\w+(?:\[\d+\])?): \(Sizes:\{([\d, ]+)\},? DataType:(\w+)\)\s*\n\s*(\[[\d\s,.f\[\]-]*\])")
#: A value printed inline: `argmax({3,2,1,2,3}) = 0`.
_INLINE = re.compile(r"\w+\(\{([\d\s,.-]+)\}\) = (-?\d+(?:\.\d+)?)")
_LEVEL = re.compile(r"DML_FEATURE_LEVEL_(\d)_(\d)")
_TYPE_NAME = re.compile(r"\b(?:FLOAT|U?INT)(?:8|16|32|64)\b")
_TENSOR_NAME = re.compile(r"^[|\s]*([A-Z][A-Za-z]*Tensors?)\b(?!:)")
#: A table row that lists dimension counts and no data types (DML_FOLD's, DML_UNFOLD's pages).
_UNTYPED = re.compile(r"^\|.*\d\s*\|\s*\|\s*$")


def page_text(name: str) -> str:
    """A stored page: tests/data/pages/NAME, else tests/data/seeds/NAME."""
    path = PAGES_DIR / name
    return (path if path.is_file() else SEEDS_DIR / name).read_text(encoding="utf-8")


def page_blocks(text: str, marker: str) -> list[list[float]]:
    """The numbers of each bracketed block that follows `marker` on a page, with `//`
    comments removed (the pages' typos are in punctuation/comments only)."""
    blocks = []
    for m in re.finditer(re.escape(marker), text):
        rest = text[m.end():]
        start = rest.index("[")
        depth, stop = 0, start
        for stop, ch in enumerate(rest[start:], start):  # noqa: B007 (used after the loop)
            depth += {"[": 1, "]": -1}.get(ch, 0)
            if depth == 0:
                break
        body = re.sub(r"//[^\n]*", "", rest[start:stop + 1])
        blocks.append([float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", body)])
    return blocks


def page_arrays(text: str, field: str) -> list[list[int]]:
    """Each `{...}` list a page's examples give the field (`Offsets = {0, 0, 1, 2}`,
    `StartPadding: {0, 0, 1, 2}`), in page order."""
    found = re.findall(rf"^{re.escape(field)}\s*[=:]\s*\{{([^}}]*)\}}", text, re.M)
    return [[int(v) for v in item.split(",")] for item in found]


#: Tensors a page prints with a data type its own constraints rule out: (page, sizes,
#: printed type) -> the type the constraints give it, which the transcribed example uses.
MISPRINTED_TYPES = {
    # DML_GATHER_ELEMENTS: "InputTensor and OutputTensor must have the same DataType"; the
    # FLOAT32 input's output is printed as UINT32.
    ("ns-directml-dml_gather_elements_operator_desc.md", (2, 3), "UINT32"): "FLOAT32",
}


def printed_tensors(text: str, name: str | None = None) -> set[tuple]:
    """(sizes, data type name, values) of every tensor the page's examples print; of a call
    printed inline (`argmax({3,2,1,2,3}) = 0`) and of tensors printed side by side without
    sizes (`side_by_side`), their values with neither sizes nor data type (None). With the
    page's `name`, a tensor of MISPRINTED_TYPES is also listed with the type its constraints
    give it."""
    numbers = lambda body: tuple(float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", body))  # noqa: E731
    printed = {(tuple(int(v) for v in sizes.split(",")), data_type, _in_type(numbers(body), data_type))
               for _, sizes, data_type, body in _PRINTED.findall(re.sub(r"//[^\n]*", "", text))}
    for argument, result in _INLINE.findall(text):
        printed |= {(None, None, numbers(argument)), (None, None, numbers(result))}
    printed |= {(None, None, values) for values in side_by_side(text)}
    printed |= {(sizes, MISPRINTED_TYPES[name, sizes, data_type], values) for sizes, data_type, values in printed
                if (name, sizes, data_type) in MISPRINTED_TYPES}
    return printed


#: A tensor's opening brackets in a code block where tensors stand side by side
#: (MAX_POOLING_GRAD's page: `[[1, 2, 3],   MaxPool    [[4, 4],`).
_OPENING = re.compile(r"(?:^|(?<=\s))\[\[")


def side_by_side(text: str) -> list[tuple]:
    """The values of each tensor printed side by side in a page's code blocks (no sizes, no
    type): a tensor's column starts where its `[[` opens; each number belongs to the column
    of the nearest opening at or before it, read line by line."""
    found = []
    for block in re.findall(r"```[^\n]*\n(.*?)```", text, re.S):
        lines = block.split("\n")
        starts = sorted({m.start() for line in lines for m in _OPENING.finditer(line)})
        columns: dict[int, list[float]] = {start: [] for start in starts}
        for line in lines:
            for m in re.finditer(r"-?\d+(?:\.\d+)?", line):
                owners = [start for start in starts if start <= m.start()]
                if owners:
                    columns[owners[-1]].append(float(m.group()))
        found += [tuple(values) for values in columns.values() if values]
    return found


def _in_type(values: tuple, data_type: str) -> tuple:
    """A float tensor's printed values (`-5.2f`, C's float literals too) rounded to its type."""
    kind = {"FLOAT32": np.float32, "FLOAT16": np.float16}.get(data_type)
    return values if kind is None else tuple(float(kind(v)) for v in values)


def is_printed(array: np.ndarray, printed: set[tuple]) -> bool:
    """Whether the page prints the array: as a tensor of its sizes, type and values, or inline (its values)."""
    sizes, data_type, values = as_printed(array)
    return (sizes, data_type, values) in printed or (None, None, values) in printed


def as_printed(array: np.ndarray) -> tuple:
    """(sizes, data type name, values) of an array, as a page prints a tensor."""
    return tuple(array.shape), T.from_numpy(array.dtype).name, tuple(float(v) for v in array.reshape(-1))


def _listed(value) -> list:
    if value is None:  # (an example without input: a generator's)
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def example_arrays(example) -> list[np.ndarray]:
    """Every array of an example: its inputs, its array arguments, its expected outputs."""
    return [*_listed(example.input), *[v for v in example.args.values() if isinstance(v, np.ndarray)],
            *_listed(example.expected)]


def _snake(name: str) -> str:
    """CamelCase as snake_case, an acronym as one word (ROITensor: roi_tensor)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def page_tables(text: str) -> list[tuple[str, dict]]:
    """The page's "Tensor support" tables in any of the stored pages' languages and forms
    (markdown, or text copied from the rendered page): a list of groups (Reduce's pages
    hold one per group of functions), each (its heading, {level: {tensor field: (ranks,
    types)}}). A row is a line naming a tensor and its data types, its dimension counts
    between them (a markdown row whose types cell is empty: no types, an empty set); it
    belongs to the level the last line naming a feature level names (a page with a single
    table: its Availability sentence's). A group ends where a level
    comes that is not below the one before it."""
    groups: list[tuple[str, dict]] = []
    level, previous = None, ""
    for line in text.splitlines():
        types = _TYPE_NAME.findall(line)
        name = _TENSOR_NAME.search(line)
        found = _LEVEL.search(line)
        untyped = not types and _UNTYPED.search(line)  # a markdown row whose types cell is empty
        if (types or untyped) and name and level is not None:
            end = _TYPE_NAME.search(line).start() if types else len(line)
            head = re.sub(r"\{[^}]*\}", "", line[name.end():end])  # not the sizes' digits
            dims = [int(v) for v in re.findall(r"\d+", head)]
            ranks = frozenset(range(dims[0], dims[-1] + 1))
            groups[-1][1].setdefault(level, {})[_snake(name.group(1))] = (ranks, frozenset(T[t] for t in types))
        elif found:
            new = FL[f"FL_{found.group(1)}_{found.group(2)}"]
            if level is None or new >= level:
                groups.append((previous, {}))  # the line before it heads the group
            level = new
        elif line.strip():
            previous = line.strip()
    return [(h, rows) for h, rows in groups if rows]


def table_rows(table) -> dict:
    """A SupportTable in page_tables' terms: {level: {field: (ranks, types)}}."""
    return {row.level: {field: (row.ranks_of(field), frozenset(types)) for field, types in row.types.items()}
            for row in table.rows}


def untyped_as_the_page(rows: dict, groups) -> dict:
    """A table in table_rows' terms with the types of each tensor whose page row lists none
    (DML_FOLD's, DML_UNFOLD's pages: the operator module says what gpudml takes) left out
    as the page leaves them, so that the levels and dimension counts are still compared."""
    untyped = {(level, field) for _, page in groups for level, fields in page.items()
               for field, (_, types) in fields.items() if not types}
    return {level: {field: (ranks, frozenset() if (level, field) in untyped else types)
                    for field, (ranks, types) in fields.items()} for level, fields in rows.items()}


def page_of(spec) -> str:
    """The stored page the spec's examples are transcribed from; for a spec without
    examples, its page's (spec.page's) file under tests/data/pages."""
    sources = {e.source for e in spec.examples}
    assert len(sources) <= 1, (spec.key, sources)
    return sources.pop() if sources else f"ns-directml-{spec.page.lower()}.md"
