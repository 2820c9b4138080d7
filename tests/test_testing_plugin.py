"""gpudml's pytest plugin (gpudml.testing, docs/testing.md), as a user's project meets it:
pytester runs small test files of a user's own through pytest with the plugin."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import gpudml as dml
from gpudml import testing

pytestmark = pytest.mark.any_class  # the pytest plugin: the same under either adapter class

PLUGIN = ("-p", "gpudml.testing")

USER_TESTS = """
import numpy as np
import pytest
import gpudml as dml
from gpudml.testing import assert_bit_equal, assert_matches_reference

def test_slice_reverses(dml_device):
    x = np.arange(8, dtype=np.float32)
    assert_bit_equal(dml.slice(x, [0], [8], [-1], device=dml_device), x[::-1])

def test_reduce_sum(dml_device):
    x = np.random.default_rng(0).random((16, 300), dtype=np.float32)
    assert_matches_reference(dml.reduce(x, "sum", [1], device=dml_device), "reduce", x, "sum", [1])

@pytest.mark.gpudml_requires("shader-f16", "int64")
def test_needs_f16(dml_device):
    assert dml_device.caps.has("shader-f16")

def test_no_gpu():
    assert True
"""


@pytest.fixture
def user_project(pytester):
    pytester.makepyfile(test_user=USER_TESTS)
    return pytester


def _found_ids() -> list[str]:
    return [a.id for a in testing.selected_adapters()]


def test_every_adapter_by_default(user_project, monkeypatch):
    for name in ("GPUDML_TEST_ADAPTERS", "GPUDML_ADAPTER"):
        monkeypatch.delenv(name, raising=False)
    result = user_project.runpytest(*PLUGIN, "-v", "-rs")
    ids = _found_ids()
    assert ids == ["vulkan", "gl"]  # the software adapters setup.sh installs
    for test in ("test_slice_reverses", "test_reduce_sum"):
        for adapter in ids:
            result.stdout.fnmatch_lines([f"*test_user.py::{test}[[]{adapter}[]] PASSED*"])
    result.stdout.fnmatch_lines(["*test_needs_f16[[]vulkan[]] PASSED*",
                                 "*test_needs_f16[[]gl[]] SKIPPED*",
                                 "*gpudml_requires: llvmpipe*via OpenGL lacks shader-f16, shader-int64*"])
    result.assert_outcomes(passed=6, skipped=1)
    # the report header: each adapter, its backend and native features
    result.stdout.fnmatch_lines(["gpudml adapters (all):",
                                 "  vulkan: llvmpipe*via Vulkan, Vulkan CPU; native: f16, f64, int64, i16, subgroups*",
                                 "  gl: llvmpipe*via OpenGL, OpenGL CPU; native: timestamps*"])


def test_choosing_adapters(user_project, monkeypatch):
    monkeypatch.delenv("GPUDML_ADAPTER", raising=False)
    result = user_project.runpytest(*PLUGIN, "-v", "--gpudml-adapters=gl")
    result.assert_outcomes(passed=3, skipped=1)
    result.stdout.no_fnmatch_line("*[[]vulkan[]]*")
    monkeypatch.setenv("GPUDML_TEST_ADAPTERS", "vulkan")
    result = user_project.runpytest(*PLUGIN, "-v")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*test_needs_f16[[]vulkan[]] PASSED*"])
    result = user_project.runpytest(*PLUGIN, "-v", "--gpudml-adapters=vulkan,gl")  # the option wins
    result.assert_outcomes(passed=6, skipped=1)
    result = user_project.runpytest(*PLUGIN, "-v", "--gpudml-adapters=llvmpipe")  # part of an adapter's name
    result.stdout.fnmatch_lines(["*test_slice_reverses[[]llvmpipe[]] PASSED*"])


def test_an_adapter_that_is_not_there_stops_the_run(user_project):
    result = user_project.runpytest(*PLUGIN, "--gpudml-adapters=vulkan,metal")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--gpudml-adapters=vulkan,metal: gpudml: no adapter matches 'metal'; name one by *"])


def test_an_unknown_feature_is_a_usage_error(pytester):
    pytester.makepyfile("""
        import pytest
        @pytest.mark.gpudml_requires("raytracing")
        def test_x(dml_device):
            pass
    """)
    result = pytester.runpytest(*PLUGIN, "--gpudml-adapters=vulkan")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*gpudml_requires: unknown feature 'raytracing' (one of *shader-f16*"])


def test_pytest_xdist_collects_the_same_tests_in_every_worker(user_project, monkeypatch):
    """`pytest -n 2`: every worker selects the same adapters in the same order (xdist fails a
    run whose workers collect different tests) and opens its own Devices."""
    pytest.importorskip("xdist")
    from conftest import same_gpudml_env

    monkeypatch.setenv("PYTHONPATH", same_gpudml_env()["PYTHONPATH"])
    result = user_project.runpytest_subprocess(*PLUGIN, "-n", "2", "-v")
    result.assert_outcomes(passed=6, skipped=1)
    result.stdout.fnmatch_lines(["*gw* PASSED test_user.py::test_reduce_sum[[]gl[]]*"])


# ------------------------------------------------------------------ assertions
def test_assert_bit_equal_sees_nan_payloads_and_the_sign_of_zero():
    a = np.array([1.0, np.nan, -0.0], np.float32)
    testing.assert_bit_equal(a, a.copy())
    other_nan = a.copy()
    other_nan.view(np.uint32)[1] ^= 1  # another NaN payload
    with pytest.raises(AssertionError, match=r"1 of 3 elements differ in their bits; at \(1,\): nan"):
        testing.assert_bit_equal(a, other_nan)
    with pytest.raises(AssertionError, match=r"at \(2,\): -0\.0 \(bits 0x80000000\) != 0\.0 \(bits 0x00000000\)"):
        testing.assert_bit_equal(a, np.array([1.0, np.nan, 0.0], np.float32))
    with pytest.raises(AssertionError, match=r"dtype/shape float32\[3\] != float64\[3\]"):
        testing.assert_bit_equal(a, a.astype(np.float64))


def test_assert_within_takes_signaling_nans_quietly():
    """A float32 signaling NaN (an operator's output may carry one: data movement and MAX/MIN
    keep payloads) matches NaN without numpy's "invalid value encountered in cast" warning,
    which its cast to float64 raises (a long fuzz run showed it)."""
    x = np.array([0x7F800001, 0x3F800000], np.uint32).view(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        testing.assert_within(x, x.copy(), 0.0)
        with pytest.raises(AssertionError, match="1 of 2"):
            testing.assert_within(x, np.array([np.nan, 2.0], np.float32), 0.5)


def test_assert_within_an_expected_nan_with_no_bound_takes_any_value():
    """An expected NaN takes any value only where the tolerance is infinite (a documented
    bound with no limit there); with a finite one, and an expected infinity with an infinite
    one, NaN stays wrong."""
    want = np.array([np.nan, np.nan, np.inf], np.float32)
    testing.assert_within(np.array([-np.inf, 1.0, np.inf], np.float32), want, [np.inf, np.inf, 0.0])
    with pytest.raises(AssertionError, match=r"1 of 3 elements outside the tolerance; at \(0,\): -inf != nan"):
        testing.assert_within(np.array([-np.inf, 1.0, np.inf], np.float32), want, [1.0, np.inf, 0.0])
    with pytest.raises(AssertionError, match=r"at \(2,\): nan != inf"):
        testing.assert_within(np.array([np.nan, np.nan, np.nan], np.float32), want, np.inf)


def test_assert_bit_equal_takes_tensors(vulkan_device):
    x = np.arange(6, dtype=np.int64).reshape(2, 3)
    testing.assert_bit_equal(vulkan_device.tensor(x), x)


def test_assert_matches_reference_within_the_documented_precision(vulkan_device):
    rng = np.random.default_rng(1)
    x = rng.random((8, 5000), dtype=np.float32)
    got = dml.reduce(x, "sum", [1], device=vulkan_device)
    testing.assert_matches_reference(got, "reduce", x, "sum", [1])  # float32 sums: within tolerance
    off = got.copy()
    off[3, 0] *= 1.001
    with pytest.raises(AssertionError, match=r"reduce: 1 of 8 elements outside the tolerance; at \(3, 0\)"):
        testing.assert_matches_reference(off, "reduce", x, "sum", [1])
    y = rng.integers(0, 9, (4, 4)).astype(np.uint8)
    testing.assert_matches_reference(dml.pad(y, [1, 0], [0, 2], mode="symmetric", device=vulkan_device),
                                     "pad", y, [1, 0], [0, 2], mode="symmetric")  # data movement: bit-exact
    with pytest.raises(AssertionError, match="differ in their bits"):
        testing.assert_matches_reference(y, "slice1", y, [0, 0], [4, 4], [1, -1])


def test_the_readme_example_runs(pytester, monkeypatch):
    """The README's "Testing your code on every adapter" example, as written there."""
    text = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = text.split("## Testing your code on every adapter")[1]
    code = section.split("```python\n")[1].split("```")[0]
    pytester.makepyfile(test_readme_example=code)
    monkeypatch.delenv("GPUDML_ADAPTER", raising=False)
    monkeypatch.delenv("GPUDML_TEST_ADAPTERS", raising=False)
    result = pytester.runpytest(*PLUGIN, "--gpudml-adapters=all")
    assert result.ret == 0
    outcomes = result.parseoutcomes()
    assert outcomes["passed"] >= 2 * len(_found_ids()) - 1 and outcomes.get("failed", 0) == 0
