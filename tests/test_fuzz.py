"""Property and fuzz tests (hypothesis) for every operator of the registry (gpudml.ops.SPECS):
each operator's test file declares its strategies as `FUZZ` (tests/fuzzkit.py).

- Valid descriptions (ranks 1-8, every type the operator's support table lists at a random
  feature level, packed / padded / permuted / broadcast (stride 0) layouts, odd sizes that
  straddle 32-bit words, negative window strides, total sizes above the minimum) run on
  each adapter, under a random eligible strategy (with its own plan or one of the option
  sets its spec offers the autotuner), and are compared with the reference.
  Inputs and outputs are Tensors whose buffers are larger than the desc and filled with
  random bits: the bytes of the output buffer that are not output elements, and every
  byte of the input buffers, must be unchanged afterwards. Half the cases also run with
  numpy inputs given as non-contiguous, read-only or big-endian arrays, which must be
  unchanged too.
- Invalid descriptions (a valid one with one field broken) raise exactly
  InvalidArgumentError, before any GPU work, with a message naming the operator and the field.
- Hostile arguments to the functional API (non-arrays, lists, scalars, odd dtypes, empty or
  9-d arrays, wrong argument types and values) raise exactly InvalidArgumentError naming the
  function, or give the reference result.

Budget: the default run is CI-sized and derandomized (the same examples every run). For a
long run with fresh random examples:

    GPUDML_FUZZ_EXAMPLES=5000 python -m pytest -q tests/test_fuzz.py

(every @given test then tries that many examples, per adapter where it runs on each).
GPUDML_FUZZ_REPORT=counts.json writes the number of cases tried per operator and kind.
"""

from __future__ import annotations

import importlib
import json
import os

import numpy as np
import pytest
from conftest import ADAPTERS, get_device
from fuzzkit import (
    COUNTS,
    EXECUTE_EXAMPLES,
    FUNCTIONAL_EXAMPLES,
    INVALID_EXAMPLES,
    VALID_EXAMPLES,
    OpFuzz,
    assert_outputs_equal,
    broken_tensor,
    budget,
    hostile_arrays,
    hostile_inputs,
    long_run,
    odd_arrays,
    run_valid,
)
from hypothesis import given
from hypothesis import strategies as st

import gpudml as dml
from gpudml.ops import SPECS, tensor_fields


def _fuzz_of(spec) -> OpFuzz:
    module = importlib.import_module(f"test_{spec.key}")
    fuzz = getattr(module, "FUZZ", None)
    if not isinstance(fuzz, OpFuzz):
        raise AssertionError(f"tests/test_{spec.key}.py must declare FUZZ = fuzzkit.OpFuzz(...) for {spec.name}")
    return fuzz


pytestmark = pytest.mark.slow  # hypothesis: hundreds of examples per test

#: Every operator of the registry, by name, with its spec and its strategies.
OPS = {spec.name: (spec, _fuzz_of(spec)) for spec in SPECS}


@pytest.fixture(scope="module", autouse=True)
def _report_counts():
    yield
    path = os.environ.get("GPUDML_FUZZ_REPORT")
    if path:
        with open(path, "w") as f:
            json.dump({" ".join(k): v for k, v in sorted(COUNTS.items())}, f, indent=1)


# ------------------------------------------------------------------ valid descriptions
@pytest.mark.parametrize("op", list(OPS))
def test_valid_descriptions_match_reference(adapter, op):
    _, fuzz = OPS[op]

    @budget(VALID_EXAMPLES)
    @given(case=fuzz.valid, seed=st.integers(0, 2**32 - 1),
           numpy_layout=st.sampled_from([None, None, "strided", "readonly", "bigendian", "2d"]))
    def check(case, seed, numpy_layout):
        COUNTS["valid", op, adapter] += 1
        variant = run_valid(get_device(adapter, case.level), case, seed, numpy_layout)
        COUNTS["valid variant", op, variant, adapter] += 1

    check()


# ------------------------------------------------------------------ invalid descriptions
def _tensor_fields(desc) -> list[str]:
    """Every tensor of the desc by its tensor_fields name (`input_tensors[1]` in a list)."""
    inputs, outputs = tensor_fields(desc)
    return [name for name, _ in inputs + outputs]


@pytest.mark.parametrize("op", list(OPS))
def test_invalid_descriptions_raise_invalid_argument(op):
    """Validation is adapter-independent: it runs on the first adapter only."""
    _, fuzz = OPS[op]

    @budget(INVALID_EXAMPLES)
    @given(data=st.data())
    def check(data):
        case = data.draw(fuzz.valid)
        field = data.draw(st.sampled_from(_tensor_fields(case.desc) + ["operator field"] * 2))
        if field == "operator field":
            build, fragment, kind = data.draw(fuzz.broken(case.desc))
        else:
            build, fragment, kind = data.draw(broken_tensor(case.desc, field))
        COUNTS["invalid", op] += 1
        COUNTS["invalid kind", op, kind] += 1
        device = get_device(ADAPTERS[0], case.level)
        allocations = device._ctx.pool.allocations
        with pytest.raises(dml.InvalidArgumentError) as info:
            device.create_operator(build())
        assert type(info.value) is dml.InvalidArgumentError, (kind, type(info.value))
        message = str(info.value)
        assert op in message, (kind, message)
        assert fragment in message, (kind, fragment, message)
        assert device._ctx.pool.allocations == allocations  # no GPU work

    check()


# ------------------------------------------------------------------ hostile execute arguments
@pytest.mark.parametrize("op", list(OPS))
def test_execute_hostile_arguments(op):
    """CompiledOperator.execute with one input broken: InvalidArgumentError naming the
    operator and the input, before any upload (first adapter)."""
    _, fuzz = OPS[op]

    @budget(EXECUTE_EXAMPLES)
    @given(data=st.data())
    def check(data):
        case = data.draw(fuzz.valid)
        device = get_device(ADAPTERS[0], case.level)
        compiled = device.compile_operator(device.create_operator(case.desc))
        inputs, fragment = data.draw(hostile_inputs(device, case))
        COUNTS["execute", op] += 1
        pool = device._ctx.pool
        before = (pool.allocations, pool.pooled_bytes)
        with pytest.raises(dml.InvalidArgumentError) as info:
            compiled.execute(inputs)
        assert type(info.value) is dml.InvalidArgumentError
        message = str(info.value)
        assert message.startswith(op) and fragment in message, message
        # Nothing allocated or taken from the pool (a Tensor dying meanwhile may add to it).
        assert pool.allocations == before[0] and pool.pooled_bytes >= before[1]

    check()


# ------------------------------------------------------------------ hostile functional arguments
@pytest.mark.parametrize("op", list(OPS))
def test_functional_api_hostile_arguments(adapter, op):
    spec, fuzz = OPS[op]
    fn = spec.functional_name
    device = get_device(adapter)
    call = getattr(dml, fn)

    @budget(FUNCTIONAL_EXAMPLES)
    @given(data=st.data())
    def check(data):
        if data.draw(st.integers(0, 5)) == 0:
            x, shape = data.draw(hostile_arrays()), (4,)
        else:
            x = data.draw(odd_arrays())
            shape = x.shape
        args, expected, *first = data.draw(fuzz.functional(x, shape))
        COUNTS["functional", fn, adapter] += 1
        copy = x.copy() if isinstance(x, np.ndarray) else None
        try:
            got = call(first[0] if first else x, device=device, **args)
        except dml.InvalidArgumentError as exc:
            assert type(exc) is dml.InvalidArgumentError
            message = str(exc)
            assert message.startswith((fn, op)), message
            assert any(field in message for field in fuzz.fields), message
            COUNTS["functional rejected", fn, adapter] += 1
        else:
            native = x.astype(x.dtype.newbyteorder("="))  # results come in native byte order
            with np.errstate(all="ignore"):
                want = expected(native)
            if fuzz.compare is not None:
                fuzz.compare(got, want, native, args)
            else:
                assert_outputs_equal(got, want)
        if copy is not None:  # inputs are never written
            assert x.dtype == copy.dtype and x.shape == copy.shape
            assert (x.tolist() == copy.tolist()) if x.dtype.hasobject else x.tobytes() == copy.tobytes()

    check()


# ------------------------------------------------------------------ the budget
def test_long_run_flag_sets_the_budget(monkeypatch):
    """GPUDML_FUZZ_EXAMPLES=N: N fresh random examples per test; unset: the CI-sized,
    derandomized default (the same examples every run)."""
    monkeypatch.delenv("GPUDML_FUZZ_EXAMPLES", raising=False)
    assert long_run() is None
    default = budget(VALID_EXAMPLES)
    assert default.max_examples == VALID_EXAMPLES and default.derandomize and default.database is None
    monkeypatch.setenv("GPUDML_FUZZ_EXAMPLES", "7")
    assert long_run() == 7
    long = budget(VALID_EXAMPLES)
    assert long.max_examples == 7 and not long.derandomize
    assert "GPUDML_FUZZ_EXAMPLES" in __doc__
