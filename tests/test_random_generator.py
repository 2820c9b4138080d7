"""RandomGenerator (DML_RANDOM_GENERATOR, PHILOX_4X32_10): what the conformance kit does not
cover: Random123's known answers, the counter's layout and carries (an independent
formulation in Python integers), the page's Remarks example, a stream continued through the
output state, both strategies under both adapter classes, the state's validation messages,
statistics of the bits, the command line."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import assert_bits_equal, get_device

import gpudml as dml
from gpudml import cli, reference
from gpudml.ops import random_generator as rg
from gpudml.ops import spec_named

SPEC = spec_named("random_generator")
U32 = dml.DataType.UINT32

#: Random123's known-answer vectors of philox4x32_10 (kat_vectors): counter, key, result.
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


def _state(counter, key) -> np.ndarray:
    return np.array([*counter, *key], np.uint32).reshape(1, 1, 1, 6)


def _classes(adapter):
    """A CPU-class and a GPU-class Device of the adapter: each strategy is its class' choice on one."""
    name = get_device(adapter).adapter_name
    return [dml.Device(adapter=name, adapter_class=c) for c in ("cpu", "gpu")]


def _run(device, state, sizes, strategy=None, output_state=True, strides=None):
    desc = SPEC.infer_output(dml.TensorDesc(U32, [1, 1, 1, 6]), sizes, output_state=output_state)
    if strides is not None:
        desc = rg.RandomGeneratorOperatorDesc(desc.input_state_tensor, dml.TensorDesc(U32, sizes, strides),
                                              desc.output_state_tensor)
    compiled = device.compile_operator(device.create_operator(desc), strategy)
    return [np.asarray(t) for t in compiled.execute([state])]


def test_known_answers(adapter):
    """Each KAT block, as the first four elements of an output, on both strategies and both
    adapter classes (the reference too): the generator is Random123's philox4x32_10."""
    for device in _classes(adapter):
        for strategy in ("runs", "blocks"):
            for counter, key, want in KAT:
                y, _ = _run(device, _state(counter, key), [1, 1, 1, 4], strategy)
                assert y.reshape(-1).tolist() == list(want), (device, strategy, counter)
    for counter, key, want in KAT:
        assert reference.random_generator(_state(counter, key), [1, 1, 1, 4])[0].reshape(-1).tolist() == list(want)


def _by_python_integers(state: np.ndarray, count: int) -> tuple[list[int], list[int]]:
    """An independent formulation: the 128-bit counter as a Python integer (word 0 least
    significant), block b = counter + b modulo 2^128, each through the KAT-checked Philox."""
    words = state.reshape(-1).tolist()
    c = sum(w << (32 * j) for j, w in enumerate(words[:4]))
    out = []
    for b in range(-(-count // 4)):
        v = (c + b) % (1 << 128)
        block = np.array([[(v >> (32 * j)) & 0xFFFFFFFF for j in range(4)]], np.uint32)
        out += rg.philox4x32_10(block, (words[4], words[5]))[0].tolist()
    after = (c + -(-count // 4)) % (1 << 128)
    return out[:count], [(after >> (32 * j)) & 0xFFFFFFFF for j in range(4)] + words[4:]


@pytest.mark.parametrize("counter", [
    (0xFFFFFFFE, 0, 0, 0),                                   # word 0 carries into word 1
    (0xFFFFFFFD, 0xFFFFFFFF, 0xFFFFFFFF, 7),                 # into word 3
    (0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF),        # wraps modulo 2^128
    (5, 0xFFFFFFFF, 0, 0),                                   # no carry: the upper words as they are
], ids=["word1", "word3", "wrap", "none"])
def test_counter_layout_and_carries(adapter, counter):
    """Element i is word i % 4 of the block of counter + i // 4 (128-bit, carrying from word
    0 up); the output state is counter + ceil(n / 4) with the key kept; an output of 4k + 1,
    + 2, + 3 elements drops the last block's other words. Both strategies, both classes."""
    state = _state(counter, (0x01234567, 0x89ABCDEF))
    for count in (13, 16):
        want, after = _by_python_integers(state, count)
        ref, ref_state = reference.random_generator(state, [1, 1, 1, count])
        assert ref.reshape(-1).tolist() == want and ref_state.reshape(-1).tolist() == after
        for device in _classes(adapter):
            for strategy in ("runs", "blocks"):
                y, s = _run(device, state, [1, 1, 1, count], strategy)
                assert y.reshape(-1).tolist() == want, (device, strategy, count)
                assert s.reshape(-1).tolist() == after, (device, strategy, count)


def test_the_pages_remarks_example():
    """The Remarks: a counter 0x48656c6c'6f46726f'6d536561'74746c65 and an output of {3, 3,
    20, 7219} elements advance the counter by 324,855. The page prints the result as
    ...746f776e: the counter minus 324,855 (a slip of the page: its text says
    "incremented"); gpudml adds, carrying from word 0 (the least significant, ...74746c65)."""
    before = 0x48656C6C_6F46726F_6D536561_74746C65
    sizes = [3, 3, 20, 7219]
    advance = -(-int(np.prod(sizes)) // 4)
    assert advance == 324_855
    assert 0x48656C6C_6F46726F_6D536561_746F776E == before - advance  # what the page prints
    state = np.concatenate([rg.counter_words(before), [7, 9]]).astype(np.uint32).reshape(1, 1, 1, 6)
    assert state.reshape(-1)[0] == 0x74746C65
    desc = SPEC.infer_output(dml.TensorDesc(U32, [1, 1, 1, 6]), [1, 1, 1, 4])
    assert rg.counter_value(reference.random_generator(state, sizes)[1].reshape(-1)[:4]) == before + advance
    assert desc.output_state_tensor.sizes == (1, 1, 1, 6)


def test_a_stream_continues_through_the_output_state(device):
    """Two calls of 4k elements, the second from the first's output state, give the elements
    of one call of 8k: the state is the stream's position. The same state gives the same
    bits (a pure function); another key other bits."""
    state = rg.philox_state(2024, counter=(1 << 32) - 3)
    whole = dml.random_generator(state, [1, 1, 2, 12], device=device, output_state=False)
    first, mid = dml.random_generator(state, [1, 1, 1, 12], device=device)
    second, end = dml.random_generator(mid, [1, 1, 1, 12], device=device)
    assert_bits_equal(np.concatenate([np.asarray(first), np.asarray(second)], axis=2), np.asarray(whole))
    assert rg.counter_value(np.asarray(end).reshape(-1)[:4]) == (1 << 32) - 3 + 6
    again = dml.random_generator(state, [1, 1, 2, 12], device=device, output_state=False)
    assert_bits_equal(np.asarray(again), np.asarray(whole))
    other = dml.random_generator(rg.philox_state(2025), [1, 1, 2, 12], device=device, output_state=False)
    assert (np.asarray(other) != np.asarray(whole)).mean() > 0.9


def test_strided_output_and_state(adapter):
    """An output of strides of its own (gaps kept) and a state read through its strides."""
    state = rg.philox_state(77, counter=123)
    want = reference.random_generator(state, [1, 2, 3, 5])
    spaced = np.full(16, 0xDEADBEEF, np.uint32)  # a state of stride 2 on its last axis: words 0, 2, ..., 10
    spaced[0:12:2] = state.reshape(-1)
    desc = rg.RandomGeneratorOperatorDesc(dml.TensorDesc(U32, [1, 1, 1, 6], [12, 12, 12, 2]),
                                          dml.TensorDesc(U32, [1, 2, 3, 5], [60, 1, 10, 2]),
                                          dml.TensorDesc(U32, [1, 1, 1, 6], [6, 6, 6, 1]))
    for device in _classes(adapter):
        for strategy in ("runs", "blocks"):
            compiled = device.compile_operator(device.create_operator(desc), strategy)
            y, s = (np.asarray(t) for t in compiled.execute([spaced[:11]]))
            assert_bits_equal(y, want[0])
            assert_bits_equal(s, want[1])


def test_bits_look_uniform(device):
    """64 Ki words: each of the 32 bit positions is set in 50% +- 1% of them (6 sigma is
    1.2%), the mean of the words / 2^32 is 0.5 +- 0.005, and neighbouring words are
    uncorrelated (|r| < 0.02)."""
    y = np.asarray(dml.random_generator(rg.philox_state(99), [1, 1, 256, 256], device=device, output_state=False))
    words = y.reshape(-1).astype(np.uint64)
    ones = [(words >> np.uint64(b) & np.uint64(1)).mean() for b in range(32)]
    assert max(abs(o - 0.5) for o in ones) < 0.01, ones
    u = words / 2.0**32
    assert abs(u.mean() - 0.5) < 0.005
    assert abs(np.corrcoef(u[:-1], u[1:])[0, 1]) < 0.02


@pytest.mark.any_class
@pytest.mark.parametrize("build, message", [
    (lambda: rg.RandomGeneratorOperatorDesc(dml.TensorDesc(U32, [1, 1, 1, 5]), dml.TensorDesc(U32, [1, 1, 2, 2]),
                                            None),
     "RandomGenerator: input_state_tensor.sizes [1, 1, 1, 5] must be [1, 1, 1, 6] (PHILOX_4X32_10's state"),
    (lambda: rg.RandomGeneratorOperatorDesc(dml.TensorDesc(U32, [1, 1, 2, 6]), dml.TensorDesc(U32, [1, 1, 2, 2]),
                                            None),
     "RandomGenerator: input_state_tensor.sizes [1, 1, 2, 6] must be [1, 1, 1, 6]"),
    (lambda: rg.RandomGeneratorOperatorDesc(dml.TensorDesc(dml.DataType.INT32, [1, 1, 1, 6]),
                                            dml.TensorDesc(U32, [1, 1, 2, 2]), None),
     "RandomGenerator: input_state_tensor.data_type INT32 is not supported at FL_6_4 (supported: UINT32)"),
    (lambda: rg.RandomGeneratorOperatorDesc(dml.TensorDesc(U32, [1, 1, 1, 6]), dml.TensorDesc(U32, [1, 1, 2, 2]),
                                            dml.TensorDesc(U32, [1, 1, 6, 1])),
     "RandomGenerator: output_state_tensor.sizes [1, 1, 6, 1] must equal input_state_tensor.sizes [1, 1, 1, 6]"),
    (lambda: rg.RandomGeneratorOperatorDesc(dml.TensorDesc(U32, [1, 1, 1, 6]), dml.TensorDesc(U32, [2, 2]), None),
     "RandomGenerator: all tensors must have the same DimensionCount (got input_state_tensor 4, output_tensor 2)"),
    (lambda: rg.RandomGeneratorOperatorDesc(dml.TensorDesc(U32, [1, 1, 1, 6]), dml.TensorDesc(U32, [1, 1, 2, 2]),
                                            None, 1),
     "RandomGenerator: type: 1 is not a RandomGeneratorType (one of PHILOX_4X32_10)"),
], ids=["short", "rows", "int32", "state_out", "rank", "type"])
def test_bad_descriptions(vulkan_device, build, message):
    """Each rule's message, before any GPU work."""
    with pytest.raises(dml.InvalidArgumentError) as info:
        vulkan_device.create_operator(build())
    assert message in str(info.value)


@pytest.mark.any_class
def test_bad_states_through_the_functional_form(vulkan_device):
    """A seed that is no state: a scalar, five words, a float array, negative words; each names the field."""
    for state, message in ((7, "random_generator: input_state has 0 dimensions"),
                           (np.ones((1, 1, 1, 1), np.uint32),
                            "input_state_tensor.sizes [1, 1, 1, 1] must be [1, 1, 1, 6]"),
                           (np.arange(5, dtype=np.uint32), "input_state_tensor.sizes [5] must be [1, 1, 1, 6]"),
                           (np.zeros(6, np.float32), "input_state_tensor.data_type FLOAT32 is not supported"),
                           ([-1, 0, 0, 0, 0, 0], "input_state_tensor.data_type INT64 is not supported")):
        with pytest.raises(dml.InvalidArgumentError, match="^(RandomGenerator|random_generator): ") as info:
            dml.random_generator(state, [1, 1, 2, 2], device=vulkan_device)
        assert message in str(info.value), (state, str(info.value))
    with pytest.raises(dml.InvalidArgumentError, match="output_state must be True or False"):
        dml.random_generator(rg.philox_state(1), [1, 1, 2, 2], output_state="yes", device=vulkan_device)


def test_philox_state():
    """The seed's low word in element 4 (as ONNX Runtime's DirectML execution provider fills
    the key), the counter's low word in element 0, both modulo their widths."""
    s = rg.philox_state(0x1122334455667788, counter=(1 << 128) + (5 << 32) + 3).reshape(-1).tolist()
    assert s == [3, 5, 0, 0, 0x55667788, 0x11223344]
    assert rg.philox_state(-1).reshape(-1).tolist()[4:] == [0xFFFFFFFF, 0xFFFFFFFF]


@pytest.mark.any_class
def test_command_line(capsys):
    """`gpudml shader random_generator` prints the kernel; --output-state false drops its store."""
    assert cli.main(["shader", "random_generator", "--shape", "1,1,8,8", "--caps", "gl-cpu"]) == 0
    with_state = capsys.readouterr().out
    assert "fn philox(" in with_state and "state_out_set" in with_state
    assert cli.main(["shader", "random_generator", "--shape", "1,1,8,8", "--output-state", "false",
                     "--caps", "gl-cpu"]) == 0
    assert "state_out_set" not in capsys.readouterr().out
    assert cli.main(["shader", "random_generator", "--output-state", "maybe", "--caps", "gl-cpu"]) == 2
    assert "--output-state must be true or false, got 'maybe'" in capsys.readouterr().err


def test_an_elementwise_chain_runs_in_the_generators_store(adapter):
    """In a graph, the bits' conversion to floats (BIT_AND, CAST, IDENTITY's ScaleBias: the
    ONNX random ops') runs in the generator's store: one dispatch, the unfused graph's
    result, under each strategy of the family on a CPU- and a GPU-class Device."""
    from gpudml import fusion
    from gpudml.device import CompiledOperator, Operator

    for device in _classes(adapter):
        g = dml.Graph(device)
        state = g.input([1, 1, 1, 6], np.uint32, name="state")
        bits = dml.random_generator(state, [1, 3, 5, 7], output_state=False)
        mantissa = dml.cast(dml.bit_and(bits, np.array([0x7FFFFF], np.uint32)), np.float32)
        out = dml.identity(mantissa, scale_bias=(2.0**-23, -0.5))
        feed = {"state": rg.philox_state(31, counter=(1 << 32) - 7)}
        fused, unfused = g.compile([out]), g.compile([out], fuse=False)
        assert [s.name for s in fused.steps] == ["Fused(RandomGenerator>ElementWiseBitAnd>Cast>ElementWiseIdentity)"]
        assert fused.dispatch_count == 1 < unfused.dispatch_count
        (got,), (want,) = fused(feed), unfused(feed)
        assert_bits_equal(np.asarray(got), np.asarray(want))
        step = fused.steps[-1]
        desc, spec = step.compiled.desc, fusion.epilogue_spec(step.compiled.desc)
        assert set(step.compiled.strategies) == {"runs", "blocks"}
        values = {**{e.value_id: feed[e.name] for e in g.inputs}, **g.constants}
        arrays = [device.tensor(np.asarray(values[v])) for v in step.inputs]  # the state, then the mask
        for strategy in ("runs", "blocks"):
            compiled = CompiledOperator(device, Operator(device, desc, spec), strategy)
            assert_bits_equal(compiled.execute(arrays)[0].numpy(), np.asarray(want))
