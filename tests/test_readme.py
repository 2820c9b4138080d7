"""The README is the front page: at most 400 lines, its tour runs as written, its Quick start
is what .ci/run runs, it lists every registered operator, and its links resolve (on GitHub
as in the documentation site, which uses it as its home page)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import gpudml as dml
from gpudml.ops import elementwise as elementwise_table
from gpudml.ops import quantized_linear_add

pytestmark = pytest.mark.any_class  # the README: the same under either adapter class

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_readme_is_a_front_page():
    assert len(README.splitlines()) <= 400  # the guides and the figures live in docs/


def test_tour_runs():
    """The short tour runs as written and gives what its comments say."""
    block = re.search(r"## A short tour\n\n```python\n(.*?)```", README, re.S).group(1)
    namespace: dict = {}
    exec(compile(block, "README.md", "exec"), namespace)
    x = namespace["x"]
    assert namespace["out"].reshape(2, 2).tolist() == [[14.0, 16.0], [6.0, 8.0]]
    assert namespace["peak"].numpy().item() == 16.0
    assert namespace["total"].shape == (1, 1) and namespace["total"].item() == 136.0  # keepdims=False
    assert "np.asarray(peak)" in block and 'mode="reflect"' in block  # the numpy interop lines
    padded = dml.pad(x, [0, 0, 1, 1], [0, 0, 1, 1], mode="edge")
    rows = dml.reduce(dml.slice(padded, [0, 0, 0, 0], [1, 1, 6, 6], [1, 1, 2, 2]), "sum", axes=[3])
    np.testing.assert_array_equal(namespace["rows_np"], rows)
    assert namespace["op"].dispatch_count == 1  # the reduce reads through pad > slice


def test_quick_start_is_what_ci_runs():
    quick = re.search(r"## Quick start.*?```bash\n(.*?)```", README, re.S).group(1)
    commands = [line.split("#")[0].strip() for line in quick.strip().splitlines()]
    assert commands == ["./setup.sh && .venv/bin/gpudml examples", "./setup.sh && .venv/bin/pytest -q -n 2"]
    assert commands[1] in (ROOT / ".ci" / "run").read_text()


def test_lists_every_operator():
    """The operator table names every registered operator's DirectML name and function."""
    table = README.split("## Operators")[1].split("\n## ")[0]
    elementwise = {row.key for row in elementwise_table.TABLE} | {quantized_linear_add.ROW.key}  # (a module of its own)
    assert "`DML_ELEMENT_WISE_*`, `DML_ACTIVATION_*`" in table and "(docs/elementwise.md)" in table  # one row
    for spec in dml.SPECS:
        if spec.key in elementwise:
            continue
        assert f"`{spec.page.removesuffix('_OPERATOR_DESC')}`" in table, spec.page
        assert f"`dml.{spec.functional_name}`" in table, spec.functional_name


def test_links_resolve():
    """Every relative link names a file or folder of the repository, every #anchor a heading."""
    anchors = {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-")
               for h in re.findall(r"^#+ (.+)$", README, re.M)}
    links = re.findall(r"\]\(([^)\s]+)\)", README)
    assert links
    for target in links:
        if re.match(r"[a-z]+:", target):
            continue
        if target.startswith("#"):
            assert target[1:] in anchors, target
        else:
            assert (ROOT / target.split("#")[0]).exists(), target
