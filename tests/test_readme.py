"""The README's Use example runs as written, and its Quick start matches .ci/run."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_use_example_runs():
    text = (ROOT / "README.md").read_text()
    block = re.search(r"## Use\n\n```python\n(.*?)```", text, re.S).group(1)
    namespace: dict = {}
    exec(compile(block, "README.md", "exec"), namespace)
    out = namespace["out"]
    assert out.reshape(2, 2).tolist() == [[14.0, 16.0], [6.0, 8.0]]
    assert namespace["y"].numpy().tolist() == namespace["x"].tolist()  # 20 row reversals


def test_quick_start_is_what_ci_runs():
    text = (ROOT / "README.md").read_text()
    quick = re.search(r"## Quick start.*?```bash\n(.*?)```", text, re.S).group(1)
    commands = [line.split("#")[0].strip() for line in quick.strip().splitlines()]
    assert len(commands) == 2
    assert commands[1] in (ROOT / ".ci" / "run").read_text()
