"""The README's Use and Graphs examples run as written, and its Quick start matches .ci/run."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

import gpudml as dml

ROOT = Path(__file__).resolve().parent.parent


def test_use_example_runs():
    text = (ROOT / "README.md").read_text()
    block = re.search(r"## Use\n\n```python\n(.*?)```", text, re.S).group(1)
    namespace: dict = {}
    exec(compile(block, "README.md", "exec"), namespace)
    out = namespace["out"]
    assert out.reshape(2, 2).tolist() == [[14.0, 16.0], [6.0, 8.0]]
    assert namespace["y"].numpy().tolist() == namespace["x"].tolist()  # 20 row reversals


def test_graphs_example_runs():
    """The Graphs example runs as written and gives what the same calls give eagerly."""
    text = (ROOT / "README.md").read_text()
    block = re.search(r"## Graphs\n.*?```python\n(.*?)```", text, re.S).group(1)
    namespace: dict = {}
    exec(compile(block, "README.md", "exec"), namespace)
    y = dml.pad(namespace["array"], [0, 0, 2, 2], [0, 0, 2, 2], mode="reflection")
    z = dml.slice(y, [0, 0, 0, 0], [1, 3, 68, 68], [1, 1, -1, 2])
    np.testing.assert_array_equal(namespace["z_np"], z)
    np.testing.assert_array_equal(namespace["r_np"], dml.reduce(z, "sum", axes=[3]))
    np.testing.assert_array_equal(namespace["z_t"].numpy(), z)
    assert namespace["op"].dispatch_count == 2  # pad > slice fused; the reduce reads z
    g = namespace["g"]
    assert g.compile([namespace["r"]]).dispatch_count == 1  # the reduce reads through pad > slice


def test_quick_start_is_what_ci_runs():
    text = (ROOT / "README.md").read_text()
    quick = re.search(r"## Quick start.*?```bash\n(.*?)```", text, re.S).group(1)
    commands = [line.split("#")[0].strip() for line in quick.strip().splitlines()]
    assert len(commands) == 2
    assert commands[1] in (ROOT / ".ci" / "run").read_text()
