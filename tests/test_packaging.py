"""The project's layout and its wheel: the WGSL templates live in the top-level shaders/
folder, ship inside the wheel as gpudml/shaders, and are found from an installed wheel,
an editable install and a checkout alike. The README's test command (`./setup.sh &&
.venv/bin/pytest`) runs the whole suite against the wheel that setup.sh installed, and
then the installed wheel's own check runs too; CI (.ci/run) sets GPUDML_TEST_INSTALLED=1,
which makes that check fail rather than skip if the suite ever imports the checkout."""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import gpudml
from gpudml.kernels import templates

pytestmark = pytest.mark.any_class  # the wheel: the same under either adapter class

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = sorted(str(p.relative_to(ROOT / "shaders")) for p in (ROOT / "shaders").rglob("*.j2"))
MODULES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "gpudml").rglob("*.py"))

#: Renders one kernel and prints where gpudml and its templates were found.
PROBE = """
import gpudml, gpudml.caps, gpudml.compiler, gpudml.kernels.templates
desc = gpudml.Slice1OperatorDesc(gpudml.TensorDesc(1, [4]), gpudml.TensorDesc(1, [4]), [0], [4], [-1])
wgsl = gpudml.compiler.compile(desc, gpudml.caps.profile("gl-cpu")).wgsl[0]
print(gpudml.__file__)
print(gpudml.kernels.templates.packaged_dir())
print("fn kernel" in wgsl and "fn main" in wgsl)
"""


def _pip(*args, cwd=ROOT):
    """pip in this interpreter. Installs elsewhere pass --ignore-installed: without it pip
    uninstalls the gpudml this suite is running (seen: the wheel CI installed vanished)."""
    res = subprocess.run([sys.executable, "-m", "pip", "-q", *args], cwd=cwd, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr


def _probe(cwd, prelude: str = "", env=None) -> tuple[Path, Path]:
    res = subprocess.run([sys.executable, "-c", prelude + PROBE], cwd=cwd, capture_output=True, text=True,
                         timeout=120, env={**os.environ, **(env or {})})
    assert res.returncode == 0, res.stderr
    module, folder, rendered = res.stdout.split()
    assert rendered == "True"
    return Path(module).resolve(), Path(folder).resolve()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel of a clean copy of the project (an in-tree build/ folder may hold stale files)."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for name in ("gpudml", "shaders"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("wheel")
    _pip("wheel", "--no-deps", "--no-build-isolation", "--wheel-dir", str(out), str(source))
    (found,) = out.glob("gpudml-*.whl")
    return found


def test_templates_live_in_the_top_level_shaders_folder():
    assert not (ROOT / "gpudml" / "shaders").exists()
    assert "lib/common.wgsl.j2" in TEMPLATES and "slice1.wgsl.j2" in TEMPLATES
    assert templates.names() == TEMPLATES  # the installed or checked-out package has all of them


@pytest.mark.slow
def test_the_bench_extra_hint_names_the_wheel_pip_builds(wheel):
    """`gpudml bench`'s hint for the extra (gpudml is not on PyPI) names the file `pip wheel .`
    writes, as docs/install.md says to build it."""
    from gpudml.bench.report import EXTRA_INSTALL

    assert f"'dist/{wheel.name}[bench]'" in EXTRA_INSTALL
    assert "pip wheel --no-deps -w dist ." in (ROOT / "docs" / "install.md").read_text()


@pytest.mark.slow
def test_wheel_file_list(wheel):
    """Every module and every template, nothing else (no tests, bench scripts, shaders/ at the top)."""
    names = zipfile.ZipFile(wheel).namelist()
    package = sorted(n for n in names if not n.startswith("gpudml-0.1.0.dist-info/"))
    assert package == sorted(MODULES + [f"gpudml/shaders/{t}" for t in TEMPLATES])
    assert any(n.endswith("entry_points.txt") for n in names)


@pytest.mark.slow
def test_installed_wheel_finds_its_templates(wheel, tmp_path):
    site = tmp_path / "site"
    _pip("install", "--no-deps", "--no-index", "--ignore-installed", "--target", str(site), str(wheel))
    module, folder = _probe(tmp_path, env={"PYTHONPATH": str(site)})
    assert module == site / "gpudml" / "__init__.py"
    assert folder == site / "gpudml" / "shaders"
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*.j2")) == TEMPLATES


@pytest.mark.slow
def test_editable_install_finds_the_checkout_templates(tmp_path):
    prefix = tmp_path / "prefix"
    _pip("install", "--no-deps", "--no-build-isolation", "--ignore-installed", "--prefix", str(prefix), "-e", str(ROOT))
    (site,) = prefix.glob("lib/python*/site-packages")
    # Put the editable install first, before the wheel this interpreter has installed.
    prelude = (f"import site, sys\nsite.addsitedir({str(site)!r})\n"
               "sys.meta_path.sort(key=lambda f: not getattr(f, '__module__', '').startswith('__editable__'))\n")
    module, folder = _probe(tmp_path, prelude)
    assert module == ROOT / "gpudml" / "__init__.py"
    assert folder == ROOT / "shaders"


def test_checkout_finds_its_templates(tmp_path):
    module, folder = _probe(tmp_path, f"import sys; sys.path.insert(0, {str(ROOT)!r})\n")
    assert module == ROOT / "gpudml" / "__init__.py"
    assert folder == ROOT / "shaders"


def from_installed_wheel(package: Path, root: Path = ROOT) -> bool:
    """Whether `package` (the folder gpudml was imported from) is an installed wheel's: in a
    site-packages (or Debian's dist-packages) folder, not the checkout at `root` (which an
    editable install and `python -m pytest` from the checkout import)."""
    return package != root / "gpudml" and bool({"site-packages", "dist-packages"} & set(package.parts))


#: Where the suite's gpudml comes from. `./setup.sh && .venv/bin/pytest` (the README's command)
#: imports the wheel setup.sh installed; `python -m pytest` from the checkout, the checkout.
IMPORTED_FROM = Path(gpudml.__file__).resolve().parent


def test_the_wheel_check_knows_an_installed_wheel():
    """The installed wheel's check below runs where the suite imports gpudml from site-packages
    (anyone running the README's test command, with GPUDML_TEST_INSTALLED or not), and only
    skips for a checkout or an editable install."""
    site = Path("/x/.venv/lib/python3.11/site-packages/gpudml")
    assert from_installed_wheel(site, Path("/x"))
    assert from_installed_wheel(Path("/usr/lib/python3/dist-packages/gpudml"))  # Debian's system Python
    assert not from_installed_wheel(Path("/x/gpudml"), Path("/x"))  # the checkout, or an editable install of it
    assert not from_installed_wheel(Path("/elsewhere/gpudml"), Path("/x"))  # another checkout on the path


@pytest.mark.skipif(not (from_installed_wheel(IMPORTED_FROM) or os.environ.get("GPUDML_TEST_INSTALLED")),
                    reason=f"gpudml is imported from {IMPORTED_FROM}, not an installed wheel (site-packages): the "
                           f"wheel's check runs where the suite imports one (./setup.sh && .venv/bin/pytest; "
                           f"GPUDML_TEST_INSTALLED=1 makes it required)")
def test_suite_runs_against_the_installed_wheel():
    here = IMPORTED_FROM
    assert here != ROOT / "gpudml", f"the suite imported the checkout ({here}), not the installed wheel"
    assert "site-packages" in here.parts
    assert templates.packaged_dir() == here / "shaders"
    # The installed wheel's own file list (its RECORD): every module and template of this checkout.
    installed = sorted(str(f) for f in importlib.metadata.files("gpudml") if str(f).startswith("gpudml/")
                       and not str(f).endswith(".pyc"))
    assert installed == sorted(MODULES + [f"gpudml/shaders/{t}" for t in TEMPLATES])
