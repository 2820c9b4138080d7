"""gpudml's pytest plugin: run your GPU tests on every adapter.

Installing gpudml registers this module with pytest (entry point `pytest11`, plugin name
`gpudml.testing`; `-p no:gpudml.testing` turns it off):

    pytest --gpudml-adapters=all|vulkan|gl|NAME[,NAME...]

    def test_mine(dml_device):                  # a gpudml.Device, once per selected adapter
        ...
    @pytest.mark.gpudml_requires("shader-f16", "int64")
    def test_needs_f16(dml_device): ...         # skipped, with the reason, where the adapter lacks one

    gpudml.testing.assert_bit_equal(actual, expected)
    gpudml.testing.assert_matches_reference(actual, "reduce", x, "sum", [1])

The adapters: `--gpudml-adapters`, else GPUDML_TEST_ADAPTERS, else GPUDML_ADAPTER (one),
else every adapter found. Each is named in test ids by its backend (`test_mine[vulkan]`,
`test_mine[gl]`), or by its backend and number where one backend has several. A name
that matches no adapter stops the run with the adapters that were found. Selection is the
same in every process, so `pytest -n auto` (pytest-xdist) collects the same tests in every
worker; each worker opens one Device per adapter.
"""

from __future__ import annotations

import inspect
import os
import threading
from dataclasses import dataclass

import pytest

from .caps import FEATURE_NAMES
from .compare import _as_array, assert_bit_equal, assert_within  # noqa: F401 (the plugin's API)
from .device import Device
from .errors import DMLError
from .ops import spec_named
from .runtime import adapters as found_adapters

#: Feature names a `gpudml_requires` marker may use: wgpu's names and gpudml's short ones.
FEATURES = {
    "shader-f16": "shader-f16", "f16": "shader-f16",
    "shader-f64": "shader-f64", "f64": "shader-f64",
    "shader-int64": "shader-int64", "int64": "shader-int64",
    "shader-i16": "shader-i16", "i16": "shader-i16",
    "subgroup": "subgroup", "subgroups": "subgroup",
    "timestamp-query": "timestamp-query", "timestamps": "timestamp-query",
    "mappable-primary-buffers": "mappable-primary-buffers", "mappable": "mappable-primary-buffers",
}
#: Test-id names of wgpu's backends.
BACKEND_IDS = {"vulkan": "vulkan", "opengl": "gl", "metal": "metal", "d3d12": "d3d12"}


@dataclass(frozen=True)
class Adapter:
    """A selected adapter: `request` names it to gpudml.Device, `id` in test ids."""

    request: str
    id: str


# ---------------------------------------------------------------------------- selection
def pytest_addoption(parser):
    group = parser.getgroup("gpudml", "gpudml: tests on every GPU adapter")
    group.addoption("--gpudml-adapters", default=None, metavar="all|vulkan|gl|NAME[,NAME...]",
                    help="adapters the dml_device fixture runs each test on (default: GPUDML_TEST_ADAPTERS, "
                         "else GPUDML_ADAPTER, else every adapter found)")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "gpudml_requires(*features): skip on adapters that lack these native features "
                   f"({', '.join(sorted(set(FEATURES)))})")
    if config.getoption("--gpudml-adapters", default=None) or os.environ.get("GPUDML_TEST_ADAPTERS"):
        selected_adapters(config)  # adapters named on purpose: one that is not there stops the run now


def selection(config=None) -> str:
    """The adapters asked for, as written: the option, else the environment, else "all"."""
    value = config.getoption("--gpudml-adapters", default=None) if config is not None else None
    return (value or os.environ.get("GPUDML_TEST_ADAPTERS") or os.environ.get("GPUDML_ADAPTER") or "all").strip()


_SELECTED: dict[str, list[Adapter]] = {}


def selected_adapters(config=None) -> list[Adapter]:
    """The adapters of `selection(config)`, resolved against those found (cached)."""
    asked = selection(config)
    if asked not in _SELECTED:
        _SELECTED[asked] = _resolve(asked)
    return _SELECTED[asked]


def _resolve(asked: str) -> list[Adapter]:
    names = [n.strip() for n in asked.split(",") if n.strip()]
    try:
        found = found_adapters.enumerate_adapters()
    except DMLError as exc:
        if names == ["all"]:
            return []  # no adapter at all: the tests that need one are skipped
        raise pytest.UsageError(f"--gpudml-adapters={asked}: {exc}") from None
    if names == ["all"]:
        counts: dict[str, int] = {}
        out = []
        for a in found:
            backend = found_adapters.backend_of(a)
            short = BACKEND_IDS.get(backend, backend)
            counts[short] = counts.get(short, 0) + 1
        seen: dict[str, int] = {}
        for a in found:
            short = BACKEND_IDS.get(found_adapters.backend_of(a), found_adapters.backend_of(a))
            if counts[short] == 1:
                out.append(Adapter(short, short))
            else:
                seen[short] = seen.get(short, 0) + 1
                out.append(Adapter(a.summary, f"{short}{seen[short]}"))
        return out
    out = []
    for name in names:
        try:
            adapter = found_adapters.choose_adapter(name)
        except DMLError as exc:
            raise pytest.UsageError(f"--gpudml-adapters={asked}: {exc}") from None
        out.append(Adapter(name, _id(name, adapter, found_adapters)))
    return out


def _id(name: str, adapter, found_adapters) -> str:
    backend = found_adapters.backend_of(adapter)
    if found_adapters.BACKEND_ALIASES.get(name.lower()) == backend:
        return BACKEND_IDS.get(backend, backend)
    return name


# ---------------------------------------------------------------------------- fixtures
def pytest_generate_tests(metafunc):
    if "dml_adapter" in metafunc.fixturenames:
        chosen = selected_adapters(metafunc.config)
        metafunc.parametrize("dml_adapter", [a.request for a in chosen], ids=[a.id for a in chosen],
                             indirect=True, scope="session")


@pytest.fixture(scope="session")
def dml_adapter(request) -> str:
    """The adapter of this test's parameter, as gpudml.Device(adapter=...) takes it."""
    return request.param


@pytest.fixture
def dml_device(request, dml_adapter):
    """A gpudml.Device on the test's adapter (one per adapter per process), after the test's
    `gpudml_requires` markers are met."""
    device = device_for(dml_adapter)
    missing = [f for marker in request.node.iter_markers("gpudml_requires") for f in _features(marker.args)
               if not device.caps.has(f)]
    if missing:
        pytest.skip(f"gpudml_requires: {device.adapter_name} lacks {', '.join(missing)}")
    return device


def _features(names) -> list[str]:
    out = []
    for name in names:
        if name not in FEATURES:
            raise pytest.UsageError(
                f"gpudml_requires: unknown feature {name!r} (one of {', '.join(sorted(FEATURES))})")
        out.append(FEATURES[name])
    return out


_DEVICES: dict = {}
_DEVICES_LOCK = threading.Lock()


def device_for(adapter: str, feature_level=None):
    """The process's Device on `adapter` at `feature_level` (made once)."""
    key = (adapter, feature_level)
    with _DEVICES_LOCK:
        if key not in _DEVICES:
            _DEVICES[key] = Device(feature_level=feature_level, adapter=adapter)
        return _DEVICES[key]


# ---------------------------------------------------------------------------- report header
def pytest_report_header(config) -> list[str]:
    try:
        chosen = selected_adapters(config)
    except pytest.UsageError as exc:
        return [f"gpudml: {exc}"]
    if not chosen:
        return ["gpudml: no adapter found (tests that use dml_device are skipped)"]
    lines = [f"gpudml adapters ({selection(config)}):"]
    for a in chosen:
        try:
            caps = device_for(a.request).caps
        except DMLError as exc:
            lines.append(f"  {a.id}: {exc}")
            continue
        native = ", ".join(short for name, short in FEATURE_NAMES.items() if caps.has(name)) or "none"
        lines.append(f"  {a.id}: {caps.name}, {caps.backend} {caps.adapter_type}; native: {native}")
    return lines


# ---------------------------------------------------------------------------- assertions
def assert_matches_reference(actual, operator: str, *inputs, **arguments) -> None:
    """`actual` equals gpudml's reference of `operator` (its key or functional name, e.g.
    "reduce" or "pad") for these inputs and functional arguments, within the operator's
    documented precision: bit-exact, but for float reductions (ops/reduce.py: MIN and MAX
    exact in value, the others within 4 x eps x the magnitudes they went through). A list
    argument (join's `xs`) is a list of arrays or Tensors; an operator with several outputs
    (split) is checked output by output (`actual`: a list)."""
    __tracebackhide__ = True
    spec = spec_named(operator)
    tensors = [[_as_array(v) for v in x] if name in spec.tensor_lists else _as_array(x)
               for name, x in zip(spec.tensors, inputs[:len(spec.tensors)])]
    bound = inspect.signature(spec.reference).bind(*tensors, *inputs[len(spec.tensors):], **arguments)
    expected = spec.reference(*bound.args, **bound.kwargs)
    tensor_names = list(inspect.signature(spec.reference).parameters)[:len(tensors)]
    named = {k: v for k, v in bound.arguments.items() if k not in tensor_names}
    if isinstance(expected, list) and (not isinstance(actual, (list, tuple)) or len(actual) != len(expected)):
        raise AssertionError(f"{operator}: a list of {len(expected)} outputs expected, got {type(actual).__name__}")
    pairs = zip(actual, expected) if isinstance(expected, list) else [(actual, expected)]
    for got, want in pairs:
        tolerance = spec.tolerance(want, tensors, named) if spec.tolerance is not None else None
        assert_within(got, want, tolerance, operator)
