"""Fixtures: every GPU test runs on each selected adapter through gpudml's own pytest plugin
(gpudml.testing: `dml_adapter`, `dml_device`, `--gpudml-adapters`, `gpudml_requires`); here,
the suite's shorter names and helpers. By default every adapter found (on a machine set up
by setup.sh: Vulkan lavapipe and GL llvmpipe); `--gpudml-adapters=gl`, GPUDML_TEST_ADAPTERS
or GPUDML_ADAPTER narrows a run.
"""

from __future__ import annotations

import gc
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

import gpudml as dml
from gpudml import caps, testing
from gpudml.runtime import context as runtime_context

# The suite renders into a disk cache of its own (gpudml/cache.py), never the user's: one
# folder for the run (made by the first process, pytest-xdist's workers inherit it), removed
# when that process ends (pytest_unconfigure), so a run leaves nothing in the temp directory.
_OWN_CACHE = None
if "GPUDML_CACHE_DIR" not in os.environ:
    _OWN_CACHE = os.environ["GPUDML_CACHE_DIR"] = tempfile.mkdtemp(prefix="gpudml-test-cache-")

# Memory per test process: a context keeps its 256 most recently used pipelines, not 1024 (a
# software adapter holds ~1 MB of compiled code per pipeline, and the conformance kit's
# cases rarely reuse another test's kernels): 700 layout-sweep cases peaked at 567 MB
# instead of 954 MB, in the same time. Tests of the cache itself set their own size.
runtime_context.PIPELINE_CACHE_SIZE = 256

#: The selected adapters (as Device(adapter=...) names them), known once pytest is configured.
ADAPTERS: list[str] = []


def pytest_configure(config):
    ADAPTERS[:] = [a.request for a in testing.selected_adapters(config)]


def pytest_unconfigure(config):
    if _OWN_CACHE:
        shutil.rmtree(_OWN_CACHE, ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    """The tests marked `exhaustive` (full products that a covering design stands for in the
    default run) run only when the -m expression names them (`-m exhaustive`).

    Under GPUDML_ADAPTER_CLASS=gpu (CI's second run: the GPU-class strategies chosen) the
    tests marked `any_class` are left out: what they check (validation before any GPU work,
    the CLI, docs, packaging, a strategy the test forces, a Device of each class the test
    makes itself, whatever the environment says) the first run checked already, and the
    class changes none of it. GPUDML_TEST_EVERY_CLASS=1 keeps them."""
    if "exhaustive" not in (config.option.markexpr or ""):
        _deselect(config, items, lambda item: item.get_closest_marker("exhaustive"))
    if caps.class_from_env() != "gpu" or os.environ.get("GPUDML_TEST_EVERY_CLASS"):
        return
    _deselect(config, items, lambda item: item.get_closest_marker("any_class"))


def pytest_collection_finish(session):
    """The collected items (40,000 and more, each with its parameters, marks and fixtures'
    closures) moved out of the garbage collector's sight (gc.freeze, after one collection of
    what is garbage already): they live until the process ends, and every full collection
    (a test's gc.collect(), or Python's own as a test allocates) walked them all, 0.5 s each
    in a worker of the whole suite: test_runtime's 8 gc.collect() calls took 4.8 s, 0.06 s
    frozen. Refcounting still frees them; only a cycle among them would never be collected."""
    gc.collect()
    gc.freeze()


def _deselect(config, items, which) -> None:
    left = [item for item in items if which(item)]
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = [item for item in items if not which(item)]


def get_device(adapter: str, level=None) -> dml.Device:
    return testing.device_for(adapter, level)


@pytest.fixture(scope="session")
def adapter(dml_adapter) -> str:
    return dml_adapter


@pytest.fixture(scope="session")
def device(adapter) -> dml.Device:
    return get_device(adapter)


def _first() -> str:
    if not ADAPTERS:
        pytest.skip("no adapter selected or found")
    return ADAPTERS[0]


@pytest.fixture(scope="session")
def vulkan_device() -> dml.Device:
    """The first adapter of the run, for tests whose subject is not the adapter."""
    return get_device(_first())


@pytest.fixture
def at_level():
    """at_level(level) -> a Device of the first adapter validating at `level`."""
    return lambda level: get_device(_first(), level)


ALL_TYPES = list(dml.DataType)


def random_bits(rng: np.random.Generator, dtype, shape) -> np.ndarray:
    """Random elements of any dtype from random bytes: NaN payloads, -0.0, subnormals and infs included."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape))
    raw = rng.integers(0, 256, size=count * dtype.itemsize, dtype=np.uint8)
    return raw.view(dtype).reshape(shape)


def bits(a: np.ndarray) -> np.ndarray:
    """The raw bits of an array, for bit-exact comparison of floats (NaN payloads included)."""
    a = np.ascontiguousarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.dtype.itemsize])


def assert_bits_equal(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(bits(got), bits(want))


def same_gpudml_env(**extra) -> dict:
    """The environment for a subprocess that must import the gpudml these tests import (the
    checkout under `python -m pytest`, the installed wheel under `.venv/bin/pytest`)."""
    root = str(Path(dml.__file__).resolve().parent.parent)
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": root + (os.pathsep + path if path else ""), **extra}


def run_python(code: str, timeout: int = 120, **env) -> subprocess.CompletedProcess:
    """Run `code` in a fresh interpreter, in same_gpudml_env(**env) and the tests folder (its
    helper modules importable); it must exit with status 0 (else its stderr is the failure)."""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                         env=same_gpudml_env(**env), cwd=str(Path(__file__).parent))
    assert res.returncode == 0, res.stderr
    return res


# ---------------------------------------------------------------------------- pipeline report
# GPUDML_PIPELINE_REPORT=DIR: every process of the run appends to DIR/<pid>.jsonl one line per
# pipeline it compiles (the test, a hash of the WGSL, the adapter, the seconds it took), so a
# change to the suite can count the distinct kernels it compiles before and after (what a cold
# shader cache pays for): tests/pipeline_report.py sums them up.
_REPORT = os.environ.get("GPUDML_PIPELINE_REPORT")
_CURRENT = ["(collection)"]

if _REPORT:
    import hashlib
    import json
    import time

    _compile = runtime_context.GpuContext._compile

    def _recorded_compile(self, source):
        t0 = time.perf_counter()
        try:
            return _compile(self, source)
        finally:
            line = {"test": _CURRENT[0], "sha": hashlib.sha1(source.encode()).hexdigest()[:16],
                    "adapter": self.caps.name, "s": round(time.perf_counter() - t0, 4)}
            os.makedirs(_REPORT, exist_ok=True)
            with open(os.path.join(_REPORT, f"{os.getpid()}.jsonl"), "a") as f:
                f.write(json.dumps(line) + "\n")

    runtime_context.GpuContext._compile = _recorded_compile


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    _CURRENT[0] = item.nodeid

