"""Fixtures: every GPU test runs on each software adapter (Vulkan lavapipe and GL llvmpipe).

GPUDML_ADAPTER=x limits a run to one adapter; GPUDML_TEST_ADAPTERS=a,b names the list.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import pytest

import gpudml as dml

# The suite renders into a disk cache of its own (gpudml/cache.py), never the user's.
os.environ.setdefault("GPUDML_CACHE_DIR", tempfile.mkdtemp(prefix="gpudml-test-cache-"))


def _adapters() -> list[str]:
    if os.environ.get("GPUDML_ADAPTER"):
        return [os.environ["GPUDML_ADAPTER"]]
    return [a for a in os.environ.get("GPUDML_TEST_ADAPTERS", "vulkan,gl").split(",") if a]


ADAPTERS = _adapters()
_DEVICES: dict = {}


def get_device(adapter: str, level=None) -> dml.Device:
    key = (adapter, level)
    if key not in _DEVICES:
        _DEVICES[key] = dml.Device(feature_level=level, adapter=adapter)
    return _DEVICES[key]


@pytest.fixture(scope="session", params=ADAPTERS)
def adapter(request) -> str:
    return request.param


@pytest.fixture(scope="session")
def device(adapter) -> dml.Device:
    return get_device(adapter)


@pytest.fixture(scope="session")
def vulkan_device() -> dml.Device:
    """The first adapter of the run, for tests whose subject is not the adapter."""
    return get_device(ADAPTERS[0])


@pytest.fixture
def at_level():
    """at_level(level) -> a Device of the first adapter validating at `level`."""
    return lambda level: get_device(ADAPTERS[0], level)


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
