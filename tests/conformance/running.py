"""Running a case: roomy buffers of random bits, the reference's result within the
documented precision, no byte but the outputs' elements changed (`run_case`), under every
strategy and option set (`run_every_variant`); Devices with limits forced low; the desc
API of a functional call."""

from __future__ import annotations

import numpy as np
from conftest import assert_bits_equal, random_bits

import gpudml as dml
from gpudml.device import tuning
from gpudml.ops import tensor_fields
from gpudml.ops.spec import flat_tensors, per_argument
from gpudml.runtime.tensor import logical_from_raw
from gpudml.testing import assert_within

from .cases import Case
from .draws import T


def element_offsets(desc: dml.TensorDesc) -> np.ndarray:
    """Buffer element index of every logical element of `desc`."""
    idx = np.zeros(1, dtype=np.int64)
    for n, s in zip(desc.sizes, desc.effective_strides):
        idx = (idx[:, None] + np.arange(n, dtype=np.int64)[None, :] * s).reshape(-1)
    return idx


def _odd_layout(raw: np.ndarray, how: str) -> np.ndarray:
    """The same elements (C order) as a non-contiguous, read-only, big-endian or 2-D array."""
    if how == "strided":
        wide = np.zeros(raw.size * 2, raw.dtype)
        wide[::2] = raw
        return wide[::2]
    if how == "readonly":
        out = raw.copy()
        out.flags.writeable = False
        return out
    if how == "bigendian":
        return raw.astype(raw.dtype.newbyteorder(">")) if raw.dtype.itemsize > 1 else raw.copy()
    return raw.reshape(1, -1)


def compile_case(device, case: Case, strategy=None, options=None):
    """The case's CompiledOperator under `strategy` (None: the operator's choice) and plan options."""
    return device.compile_operator(device.create_operator(case.desc), strategy, options=options or None)


def run_case(device, case: Case, rng, compiled=None, numpy_layout: str | None = None, what: str = "") -> None:
    """Run `case` (compiled: default the operator's choice) on Tensors in buffers 16-64 bytes
    larger than the desc (a kernel storing past the tensor's last 16-byte block then writes
    inside its binding, where it is seen, rather than being dropped by the adapter's bounds
    checks), filled with random bits past the elements: every output must be within the
    spec's documented precision of the reference (bit-exact where it documents none), no
    byte of an output's buffer but its elements may change, nor any byte of an input's.
    With `numpy_layout`, the same through numpy arrays of that odd layout, which must not
    change."""
    compiled = compiled or compile_case(device, case)
    in_fields, out_fields = tensor_fields(case.desc)
    raws, logical, inputs = [], [], []
    for (_, d), contents in zip(in_fields, case.buffers(rng), strict=True):
        raw = _random_buffer(d, rng)
        raw[:contents.size] = np.asarray(contents).reshape(-1)
        raws.append(raw)
        logical.append(logical_from_raw(raw, d))
        inputs.append(device.tensor(raw, desc=_roomy(d, raw)))
    wants, tolerances = case.spec.expected_outputs(case.desc, logical)
    label = f"{case.spec.name} {compiled.strategy} {what}"
    befores = [_random_buffer(d, rng) for _, d in out_fields]
    outs = [device.tensor(b, desc=_roomy(d, b)) for (_, d), b in zip(out_fields, befores)]
    results = compiled.execute(inputs, outputs=outs)
    assert len(results) == len(outs) and all(r is t for r, t in zip(results, outs))
    for (_, d), out, before, want, tolerance in zip(out_fields, outs, befores, wants, tolerances, strict=True):
        after = out.raw()
        assert_within(logical_from_raw(after, d), want, tolerance, label)
        untouched = np.ones(after.size, dtype=bool)
        untouched[element_offsets(d)] = False
        assert_bits_equal(after[untouched], before[untouched])  # (bytes outside the output)
    for t, raw in zip(inputs, raws):
        assert_bits_equal(t.raw(), raw)  # (an input unchanged)
    if numpy_layout is not None:  # numpy in, numpy out; the arrays must not change
        arrays = [_odd_layout(raw, numpy_layout) for raw in raws]
        copies = [a.copy() for a in arrays]
        for got, want, tolerance in zip(compiled.execute(arrays), wants, tolerances, strict=True):
            assert_within(got, want, tolerance, label)
        for a, c in zip(arrays, copies):
            assert_bits_equal(a, c)


def _random_buffer(desc: dml.TensorDesc, rng) -> np.ndarray:
    """Random bits for a buffer of whole 16-byte blocks, 16-64 bytes past the desc's total size."""
    nbytes = -(-desc.total_tensor_size_in_bytes // 16) * 16 + 16 * int(rng.integers(1, 5))
    return random_bits(rng, desc.data_type.numpy, [nbytes // desc.data_type.size])


def _roomy(desc: dml.TensorDesc, buffer: np.ndarray) -> dml.TensorDesc:
    """The same tensor in a buffer of `buffer`'s size."""
    return dml.TensorDesc(desc.data_type, desc.sizes, desc.strides, total_tensor_size_in_bytes=buffer.nbytes)


def variants(device, case: Case):
    """(strategy, options) for every strategy that can run the case, with its own plan and
    with each option set its planner offers the autotuner (Planner.variants)."""
    op = device.create_operator(case.desc)
    for strategy in device.compile_operator(op).strategies:
        for options in ({},) + tuple(op.spec.planner.variants(case.desc, device.caps, strategy)):
            yield strategy, options


def compile_variant(device, case: Case, strategy: str, options: dict):
    """The case compiled under `strategy` and `options`; None where the description cannot
    take the options (the tuner drops those too)."""
    try:
        return compile_case(device, case, strategy, options)
    except (dml.InvalidArgumentError, dml.UnsupportedError):
        if not options:
            raise
        return None


def run_every_variant(device, case: Case, seed: int = 0, runs=None, most: int | None = None) -> set[str]:
    """run_case under every strategy that can run the case, with its own plan and with each
    option set its planner offers the autotuner, on the same inputs (buffers drawn from
    `seed`); the strategies that ran come back. With `runs` (a Counter of variant names,
    tuning.variant_name) and `most`, a variant already run `most` times is left out, and each
    run is counted there."""
    ran = set()
    for strategy, options in variants(device, case):
        name = tuning.variant_name(strategy, options)
        if runs is not None and runs[name] >= most:
            continue
        compiled = compile_variant(device, case, strategy, options)
        if compiled is not None:
            run_case(device, case, np.random.default_rng(seed), compiled, what=f"{strategy} {options}")
            ran.add(strategy)
            if runs is not None:
                runs[name] += 1
    return ran


def run_random_variant(device, case: Case, seed: int, numpy_layout: str | None):
    """Run `case` under one of its eligible strategies (picked by `seed`), with its own plan
    or one of the option sets its planner offers the autotuner (one the description cannot
    take is the tuner's to drop, and is dropped here too); (the CompiledOperator, the
    variant's name) come back."""
    rng = np.random.default_rng(seed)
    offered = list(variants(device, case))
    strategy, options = offered[seed % len(offered)]
    compiled = compile_variant(device, case, strategy, options)
    if compiled is None:
        options, compiled = {}, compile_case(device, case, strategy)
    assert compiled.strategy == strategy and compiled.options == options
    run_case(device, case, rng, compiled, numpy_layout)
    return compiled, tuning.variant_name(strategy, options)


def assert_outputs_equal(got, want) -> None:
    """Bit-exact, output by output where an operator has several (`want` a list)."""
    if isinstance(want, list):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), (type(got), len(want))
        for g, w in zip(got, want):
            assert_bits_equal(g, w)
    else:
        assert_bits_equal(got, want)


# ============================================================================ limits forced low
SMALL_BINDING, SMALL_BUFFER = 256, 2048
_LIMITED: dict = {}


def limited(adapter: str, level=None, binding=SMALL_BINDING, buffer=None) -> dml.Device:
    """The process's Device on `adapter` at `level` with bindings of `binding` bytes and
    buffers of `buffer` bytes at most (Device(max_binding_bytes=, max_buffer_bytes=))."""
    key = (adapter, level, binding, buffer)
    if key not in _LIMITED:
        _LIMITED[key] = dml.Device(level, adapter, max_binding_bytes=binding, max_buffer_bytes=buffer)
    return _LIMITED[key]


def segments_of(compiled) -> dict:
    """(role, index) -> the most segments any kernel binds it as."""
    out: dict = {}
    for k in compiled.program.kernels:
        for b in k.buffers:
            out[b.key] = max(out.get(b.key, 1), b.segments)
    return out


# ============================================================================ the desc API of a call
def desc_of_call(spec, *args, **kwargs):
    """(the desc a functional call runs, its input arrays in the desc's order): the spec's
    functional form's Call, its tensors as numpy arrays, infer_output."""
    call = spec.functional(*args, **kwargs)
    flat, counts = flat_tensors(spec, call.tensors)
    arrays = [np.asarray(item[2](item[1]) if len(item) > 2 else item[1]) for item in flat]
    descs = [dml.TensorDesc(T.from_numpy(a.dtype), a.shape) for a in arrays]
    return spec.infer_output(*per_argument(descs, counts), **call.attributes), arrays
