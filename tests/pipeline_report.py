"""Sum up a GPUDML_PIPELINE_REPORT folder (tests/conftest.py): the pipelines a suite run
compiled, by test file and by test function, distinct WGSL sources per adapter (what a cold
shader cache compiles once per adapter) and the seconds spent compiling.

    GPUDML_PIPELINE_REPORT=/tmp/pipes .venv/bin/pytest -q -n 2
    .venv/bin/python tests/pipeline_report.py /tmp/pipes [--top 30]
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path


def load(folder: Path) -> list[dict]:
    return [json.loads(line) for f in sorted(folder.glob("*.jsonl")) for line in f.read_text().splitlines()]


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder", type=Path)
    p.add_argument("--top", type=int, default=25)
    args = p.parse_args(argv)
    rows = load(args.folder)
    first = {}  # (adapter, sha) -> the first test that compiled it
    for r in rows:
        first.setdefault((r["adapter"], r["sha"]), r)
    print(f"{len(rows)} compiles, {len(first)} distinct (adapter, WGSL) pairs, "
          f"{sum(r['s'] for r in rows):.1f} s compiling")
    for adapter in sorted({a for a, _ in first}):
        print(f"  {adapter}: {sum(1 for a, _ in first if a == adapter)} distinct")
    for label, key in (("file", lambda t: t.split("::")[0]), ("test", lambda t: t.split("[")[0])):
        distinct = collections.Counter(key(r["test"]) for r in first.values())
        seconds = collections.Counter()
        for r in rows:
            seconds[key(r["test"])] += r["s"]
        print(f"\nby {label}: distinct pipelines first compiled there, seconds compiling")
        for name, n in distinct.most_common(args.top):
            print(f"  {n:6d} {seconds[name]:8.1f} s  {name}")


if __name__ == "__main__":
    main()
