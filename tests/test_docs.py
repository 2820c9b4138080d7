"""The documentation site: `mkdocs build --strict` (every warning an error: broken links,
pages missing from the nav, docstrings mkdocstrings cannot read) succeeds, with one
generated page per registered operator (mkdocs_hooks.py), and the guides' examples run as
written (they moved there from the README)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gpudml as dml

pytestmark = pytest.mark.any_class  # the documentation: the same under either adapter class

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site built into a temporary folder (from there: the checkout is not on the path
    of this process, and the hook imports the checkout's gpudml itself)."""
    work = tmp_path_factory.mktemp("docs")
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
                          str(ROOT / "mkdocs.yml"), "--site-dir", str(work / "site")],
                         cwd=work, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    return work / "site"


def _text(page: Path) -> str:
    return re.sub(r"<[^>]+>", "", page.read_text())


def test_site_builds_strict(site):
    assert (site / "index.html").exists()  # the front page: README.md
    for name in ("using", "graphs", "testing", "experimenting", "semantics", "limits", "threading",
                 "performance", "benchmarks", "tests", "architecture", "adding-an-operator"):
        assert (site / name / "index.html").exists(), name


def test_one_page_per_operator(site):
    index = _text(site / "operators" / "index.html")
    for spec in dml.SPECS:
        page = _text(site / "operators" / spec.key / "index.html")
        assert spec.page in index and spec.page in page
        assert f"gpudml.{spec.functional_name}(" in page  # the signature
        assert spec.desc.__name__ in page and "Support by feature level" in page
        for strategy in spec.planner.strategies:
            assert strategy in page
        for example in spec.examples:
            assert example.name in page
        if (DOCS / "operators" / f"{spec.key}.md").exists():
            assert f"docs/operators/{spec.key}.md" in page  # its hand-written notes, included


def test_operator_notes_belong_to_operators():
    keys = {spec.key for spec in dml.SPECS}
    assert {p.stem for p in (DOCS / "operators").glob("*.md")} <= keys


def test_api_reference(site):
    api = _text(site / "api" / "gpudml" / "index.html")
    for name in ("Device", "compile_operator", "Tensor", "TensorDesc", "Graph", "CompiledGraph", "Expression",
                 "DataType", "FeatureLevel", "InvalidArgumentError", "DeviceLostError"):
        assert name in api, name
    functional = _text(site / "api" / "functional" / "index.html")
    reference = _text(site / "api" / "reference" / "index.html")
    for name in dml.FUNCTIONS:  # argmax, cumulative_sum, ...: made at import time, from the registry
        assert f"gpudml.{name}(" in functional, name
    for spec in dml.SPECS:
        assert f"gpudml.reference.{spec.functional_name}(" in reference
    assert "assert_matches_reference" in _text(site / "api" / "testing" / "index.html")


def test_readme_example_is_included(site):
    """docs/testing.md includes the README's plugin example (one copy of it, the README's)."""
    assert "def test_flip_rows(dml_device)" in _text(site / "testing" / "index.html")


def test_benchmark_results_are_listed(site):
    page = _text(site / "benchmarks" / "index.html")
    for folder in (ROOT / "bench" / "results").iterdir():
        if folder.is_dir():
            assert f"bench/results/{folder.name}/" in page


def _python_block(page: str, heading: str) -> str:
    text = (DOCS / page).read_text()
    return re.search(rf"{heading}\n.*?```python\n(.*?)```", text, re.S).group(1)


def test_using_example_runs():
    namespace: dict = {}
    exec(compile(_python_block("using.md", "# Using gpudml"), "docs/using.md", "exec"), namespace)
    out = namespace["out"]
    assert out.reshape(2, 2).tolist() == [[14.0, 16.0], [6.0, 8.0]]
    assert namespace["y"].numpy().tolist() == namespace["x"].tolist()  # 20 row reversals


def test_graphs_example_runs():
    """The Graphs example runs as written and gives what the same calls give eagerly."""
    namespace: dict = {}
    exec(compile(_python_block("graphs.md", "# Graphs and fusion"), "docs/graphs.md", "exec"), namespace)
    y = dml.pad(namespace["array"], [0, 0, 2, 2], [0, 0, 2, 2], mode="reflection")
    z = dml.slice(y, [0, 0, 0, 0], [1, 3, 68, 68], [1, 1, -1, 2])
    np.testing.assert_array_equal(namespace["z_np"], z)
    np.testing.assert_array_equal(namespace["r_np"], dml.reduce(z, "sum", axes=[3]))
    np.testing.assert_array_equal(namespace["z_t"].numpy(), z)
    assert namespace["op"].dispatch_count == 2  # pad > slice fused; the reduce reads z
    g = namespace["g"]
    assert g.compile([namespace["r"]]).dispatch_count == 1  # the reduce reads through pad > slice


def test_the_bench_and_lab_columns_are_explained():
    """Every column of `gpudml bench`'s and `gpudml lab`'s tables has its explanation in the
    docs (and in --help: tests/test_cli.py)."""
    from gpudml import lab
    from gpudml.bench import report

    performance = (ROOT / "docs" / "performance.md").read_text().split("### The table's columns")[1]
    for column in report.COLUMNS:
        assert f"- `{column}`:" in performance, column
    experimenting = (ROOT / "docs" / "experimenting.md").read_text()
    for column in lab.COLUMNS:
        assert f"`{column}`" in experimenting, column


# ------------------------------------------------------------------ issue 42: paths that exist
#: Pages the site generates (mkdocs_hooks.py), linked from the guides; `mkdocs build --strict`
#: (test_site_builds_strict) checks those links.
GENERATED = {"index.md", "benchmarks.md", "operators/index.md", "api/functional.md", "api/reference.md",
             *(f"operators/{spec.key}.md" for spec in dml.SPECS)}
#: Paths the pages name that are not in a checkout, on purpose, and why.
NOT_IN_A_CHECKOUT = {
    "gpudml/kernels/toy_negate.py": "the walkthrough's new family, which the reader writes (tests/test_walkthrough.py)",
    "shaders/toy_negate.wgsl.j2": "the walkthrough's template",
    "gpudml/ops/toy_negate.py": "the walkthrough's operator",
    "tests/conformance/rules/toy_negate.py": "the walkthrough's conformance rule",
    "kernels/normalize.py": "the glossary's former name of kernels/normalization.py",
    "gpudml/shaders/": "where the wheel puts shaders/",
}
#: Where a page's relative path may start: the repository, the package, the templates, the
#: conformance kit, the kernels (the glossary's `movement/`), or the page's own folder.
_BASES = ("", "gpudml", "gpudml/kernels", "shaders", "tests/conformance")
_FILE = re.compile(r"[\w.-]+(/[\w.-]+)*(\.(py|md|sh|toml|yml|j2|wgsl|json|txt|hlsl|onnx|png|log|npy)|/)")


def _in_repository(path: Path) -> bool:
    return path.resolve().is_relative_to(ROOT) and path.exists()


def _pages() -> list[Path]:
    return [ROOT / "README.md", ROOT / "bench" / "README.md", *sorted(DOCS.rglob("*.md"))]


def test_the_pages_name_only_paths_of_the_repository():
    """Every repository path the README and the docs name, in backticks (`gpudml/bench/large.py`,
    `tests/`) or as a link, exists in the repository: none outside it (the README once cited a
    checker script of the workplace, `../shared/tools/...`) and none since renamed. Bare file
    names (`suite.py`) are read in their sentence's folder and are not checked; a path with a
    space, a variable or a wildcard is a command, not a path."""
    missing = []
    for page in _pages():
        text = page.read_text()
        for token in re.findall(r"`([^`\n]+)`", text):
            if "/" not in token or not _FILE.fullmatch(token) or token.startswith((".venv/", "dist/", "site/")):
                continue
            if token not in NOT_IN_A_CHECKOUT and not any(
                    _in_repository(ROOT / base / token) for base in _BASES) and not _in_repository(page.parent / token):
                missing.append(f"{page.relative_to(ROOT)}: `{token}`")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            path = target.split("#")[0]
            if re.match(r"[a-z]+:", target) or not path:
                continue
            resolved = (page.parent / path).resolve()
            if resolved.is_relative_to(DOCS) and resolved.relative_to(DOCS).as_posix() in GENERATED:
                continue
            if not _in_repository(resolved):
                missing.append(f"{page.relative_to(ROOT)}: ({target})")
    assert missing == []


def test_the_path_check_finds_a_missing_path():
    """The check itself: a path outside the repository, a renamed one and a present one."""
    assert not _in_repository(ROOT / "../shared/tools/fresh_machine.sh")
    assert not _in_repository(ROOT / "bench/bench_large.py") and _in_repository(ROOT / "gpudml/bench/large.py")
    assert _FILE.fullmatch("gpudml/bench/large.py") and _FILE.fullmatch("tests/")
    assert not _FILE.fullmatch("python -m gpudml.bench.large") and not _FILE.fullmatch("$OUT/bench.md")
