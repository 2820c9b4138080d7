"""DML_RANDOM_GENERATOR_OPERATOR_DESC (docs/operators/random_generator.md, FL 3.0): Philox
4x32-10 random bits (`dml.random_generator`), as the page defines the state, and gpudml's
readings where it is silent.

The page (tests/data/pages/ns-directml-dml_random_generator_operator_desc.md): the input
state is UINT32 {1, 1, 1, 6}, "the first four 32-bit values contain a monotonically
increasing 128-bit counter, the last two the 64-bit key"; the output is UINT32 of any sizes
(rank 4, the table); the optional output state is the input's counter "incremented by
ceil(outputSize / 4)". What it leaves open, and gpudml's choice (each as Random123's
philox4x32, the generator the page cites, and as ONNX Runtime's DirectML execution
provider fills the state: counter word 0 the offset's low word, key word 4 the seed's low
word):

- word order: element 0 of the state is the counter's least significant word, element 3 its
  most significant (the counter carries from word 0 up); the key is (element 4, element 5),
  Philox's k0, k1;
- which bits go where: output element i (row-major over the output's sizes, wherever its
  strides put it) is word i % 4 of Philox4x32-10(counter + floor(i / 4), key), so that the
  counter advances by one per four elements, ceil(outputSize / 4) in all, as the Remarks
  say; a last block's words past the output are computed and dropped;
- the page's own example of the Remarks subtracts: 0x...74746c65 "incremented by 324,855"
  is printed as 0x...746f776e, which is 0x...74746c65 - 324,855. gpudml increments, as the
  text says (tests/test_random_generator.py checks both facts);
- the counter wraps modulo 2^128.

The generator is bit-exact (integers only): `reference` computes it in numpy with 64-bit
products, the kernel (gpudml/kernels/philox.py) from 16-bit halves in 32-bit arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels import philox as family
from ..kernels.base import ProblemPlanner
from ..tensor_desc import TensorDesc, as_int_tuple, check_same_rank, check_tensor_desc
from ..types import U32, FeatureLevel, RandomGeneratorType
from .spec import Call, Cli, CliArg, OpSpec, support_table

OP = "RandomGenerator"
TENSORS = ("input_state_tensor", "output_tensor", "output_state_tensor")
SUPPORT = support_table(OP, TENSORS, [(FeatureLevel.FL_3_0, {4}, {U32})])
#: The state's sizes for PHILOX_4X32_10: four counter words, two key words.
STATE_SIZES = (1, 1, 1, 6)
PHILOX = RandomGeneratorType.PHILOX_4X32_10
#: Philox4x32's multipliers and Weyl key increments (Random123, philox.h).
M0, M1 = 0xD2511F53, 0xCD9E8D57
W0, W1 = 0x9E3779B9, 0xBB67AE85
ROUNDS = 10


@dataclass(frozen=True)
class RandomGeneratorOperatorDesc:
    """DML_RANDOM_GENERATOR_OPERATOR_DESC: Philox 4x32-10 bits of the state
    `input_state_tensor` into `output_tensor`, and (optional, None) the advanced state into
    `output_state_tensor`."""

    input_state_tensor: TensorDesc
    output_tensor: TensorDesc
    output_state_tensor: TensorDesc | None
    type: RandomGeneratorType = PHILOX

    OPTIONAL_TENSORS = ("output_state_tensor",)

    def __post_init__(self):
        object.__setattr__(self, "type", RandomGeneratorType.coerce(self.type, f"{OP}: type"))


def infer_output(input_state: TensorDesc, output_sizes, *, type=PHILOX, output_state=True
                 ) -> RandomGeneratorOperatorDesc:
    """The desc of `random_generator(input_state, output_sizes, ...)`: a UINT32 output of
    `output_sizes`, and an output state of the input state's sizes unless output_state=False."""
    sizes = as_int_tuple(output_sizes, "random_generator: output_sizes")
    if not isinstance(output_state, (bool, np.bool_)):
        raise InvalidArgumentError(f"random_generator: output_state must be True or False, got {output_state!r}")
    state_out = TensorDesc(U32, input_state.sizes) if output_state else None
    return RandomGeneratorOperatorDesc(input_state, TensorDesc(U32, sizes), state_out, type)


def validate(desc: RandomGeneratorOperatorDesc, feature_level: FeatureLevel) -> None:
    """The tensors (valid, rank 4, UINT32: the support row; the output state optional), the
    state's sizes {1, 1, 1, 6} (PHILOX_4X32_10's; named first where the state's rank is not
    the output's), the output state's sizes the input state's, the type PHILOX_4X32_10."""
    given = zip(TENSORS, (desc.input_state_tensor, desc.output_tensor, desc.output_state_tensor))
    named = {field: td for field, td in given if td is not None or field != "output_state_tensor"}
    for field, td in named.items():
        check_tensor_desc(OP, field, td, is_output=field != "input_state_tensor")
    state = desc.input_state_tensor
    if state.rank != desc.output_tensor.rank:  # (a state of another shape first: what a seed of the wrong shape is)
        _check_state_sizes(state)
    rank = check_same_rank(OP, named)
    SUPPORT.check(feature_level, rank, {field: td.data_type for field, td in named.items()})
    _check_state_sizes(state)
    out = desc.output_state_tensor
    if out is not None and out.sizes != state.sizes:
        raise InvalidArgumentError(f"{OP}: output_state_tensor.sizes {list(out.sizes)} must equal "
                                   f"input_state_tensor.sizes {list(state.sizes)}")


def _check_state_sizes(state: TensorDesc) -> None:
    if state.sizes != STATE_SIZES:
        raise InvalidArgumentError(
            f"{OP}: input_state_tensor.sizes {list(state.sizes)} must be {list(STATE_SIZES)} (PHILOX_4X32_10's "
            f"state: a 128-bit counter and a 64-bit key, six UINT32 words)")


def problem(desc: RandomGeneratorOperatorDesc) -> family.Philox:
    return family.Philox(OP, desc.input_state_tensor, desc.output_tensor, desc.output_state_tensor)


RANDOM_GENERATOR = ProblemPlanner(problem, family.FAMILY)


# ---------------------------------------------------------------------------- reference
def _mulhilo(a: int, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    product = np.uint64(a) * b.astype(np.uint64)
    return (product >> np.uint64(32)).astype(np.uint32), (product & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def philox4x32_10(counters: np.ndarray, key: tuple[int, int]) -> np.ndarray:
    """Philox4x32-10 (Salmon et al., SC'11) of each row of `counters` ([n, 4] uint32 words,
    word 0 first) under `key` (k0, k1): [n, 4] uint32."""
    x0, x1, x2, x3 = (counters[:, j].astype(np.uint32) for j in range(4))
    k0, k1 = int(key[0]), int(key[1])
    for r in range(ROUNDS):
        if r:
            k0, k1 = (k0 + W0) & 0xFFFFFFFF, (k1 + W1) & 0xFFFFFFFF
        hi0, lo0 = _mulhilo(M0, x0)
        hi1, lo1 = _mulhilo(M1, x2)
        x0, x1, x2, x3 = hi1 ^ x1 ^ np.uint32(k0), lo1, hi0 ^ x3 ^ np.uint32(k1), lo0
    return np.stack([x0, x1, x2, x3], axis=1)


def counter_value(words) -> int:
    """The 128-bit counter of state words 0-3 (word 0 the least significant)."""
    return sum(int(w) << (32 * j) for j, w in enumerate(words))


def counter_words(value: int) -> np.ndarray:
    """The four uint32 words of a counter (modulo 2^128), least significant first."""
    value %= 1 << 128
    return np.array([(value >> (32 * j)) & 0xFFFFFFFF for j in range(4)], np.uint32)


def state_words(input_state) -> np.ndarray:
    """The six uint32 words of a state array (any shape of six UINT32 elements)."""
    state = np.asarray(input_state)
    if state.dtype != np.uint32 or state.size != 6:
        raise ValueError(f"random_generator: the state must be six UINT32 words, got {state.size} of {state.dtype}")
    return state.reshape(-1)


def reference(input_state, output_sizes, *, type=PHILOX, output_state=True):
    """Philox4x32-10 bits: element i of the output (row-major) is word i % 4 of the block of
    counter C + i // 4 (word by word in uint64 with the carry, modulo 2^128; each block's
    words from numpy's 64-bit products); the output state: C + ceil(n / 4), the key kept, {1, 1, 1, 6}. Returns
    [output, output_state] (as the functional form) or, with output_state=False, the output."""
    RandomGeneratorType.coerce(type, "random_generator: type")
    state = state_words(input_state)
    sizes = [int(s) for s in output_sizes]
    count = int(np.prod(sizes, dtype=np.int64))
    blocks = -(-count // 4)
    counters = np.empty((blocks, 4), np.uint32)
    carry = np.arange(blocks, dtype=np.uint64)
    for j in range(4):  # word j of C + b, the carry of the words below added
        total = np.uint64(state[j]) + carry
        counters[:, j] = (total & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        carry = total >> np.uint64(32)
    bits = philox4x32_10(counters, (state[4], state[5])).reshape(-1)[:count].reshape(sizes)
    if not output_state:
        return bits
    after = np.concatenate([counter_words(counter_value(state[:4]) + blocks), state[4:]]).reshape(STATE_SIZES)
    return [bits, after]


def philox_state(seed: int, counter: int = 0) -> np.ndarray:
    """A PHILOX_4X32_10 state {1, 1, 1, 6}: `counter` (modulo 2^128, least significant word
    first) and the 64-bit key `seed` (modulo 2^64: its low word in element 4), as ONNX
    Runtime's DirectML execution provider fills it from a seed and an offset."""
    seed = int(seed) % (1 << 64)
    key = np.array([seed & 0xFFFFFFFF, seed >> 32], np.uint32)
    return np.concatenate([counter_words(int(counter)), key]).reshape(STATE_SIZES)


def sample(desc: RandomGeneratorOperatorDesc, rng) -> list:
    """Random state words; the counter's low words near a carry now and then."""
    state = desc.input_state_tensor
    words = rng.integers(0, 2**32, size=state.required_elements, dtype=np.uint64).astype(np.uint32)
    if rng.random() < 0.5:
        stride = state.effective_strides[-1]
        for j in range(int(rng.integers(1, 4))):
            words[j * stride] = 0xFFFFFFFF - rng.integers(0, 4)
    return [words]


# ---------------------------------------------------------------------------- API
def state_array(value) -> np.ndarray:
    """A functional call's state: an integer array of six values in [0, 2^32) as UINT32, and
    six values in a row (a list, a 1-D array) as {1, 1, 1, 6}, the shape DirectML gives it;
    anything else as it is, for validation to name."""
    array = np.asarray(value)
    if array.dtype.kind in "iu" and array.size == 6 and array.dtype != np.uint32:
        if array.min() >= 0 and array.max() <= 0xFFFFFFFF:
            array = array.astype(np.uint32)
    if array.ndim == 1 and array.size == 6:
        array = array.reshape(STATE_SIZES)
    return array


def random_generator(input_state, output_sizes, *, type="philox_4x32_10", output_state=True, device=None):
    """DML_RANDOM_GENERATOR: Philox 4x32-10 random UINT32 bits of `output_sizes` (4 sizes)
    from `input_state`, UINT32 {1, 1, 1, 6}: a 128-bit counter (words 0-3, the least
    significant first) and a 64-bit key (words 4, 5); gpudml.ops.random_generator.philox_state(seed)
    makes one (a list or 1-D array of six words is taken too). Element i (row-major) is word i % 4 of
    Philox(counter + i // 4, key). Returns [output, output_state] (DirectML's field order), the
    state with the counter advanced by ceil(count / 4), to pass to the next call; with
    output_state=False only the output. Bit-exact."""
    return Call([("input_state", input_state, state_array)],
                {"output_sizes": output_sizes, "type": type, "output_state": output_state}, device)


def arguments(desc: RandomGeneratorOperatorDesc) -> dict:
    return {"output_sizes": desc.output_tensor.sizes, "type": desc.type,
            "output_state": desc.output_state_tensor is not None}


def from_cli(x: TensorDesc, a: dict) -> RandomGeneratorOperatorDesc:
    """--shape is the output's sizes (the state is {1, 1, 1, 6}; --dtype is not read: every
    tensor is UINT32); --output-state false drops the output state."""
    flag = str(a["output_state"]).strip().lower()
    if flag not in ("true", "false"):
        raise InvalidArgumentError(f"random_generator: --output-state must be true or false, got {a['output_state']!r}")
    return infer_output(TensorDesc(U32, STATE_SIZES), x.sizes, output_state=flag == "true")


SPEC = OpSpec(
    name=OP, key="random_generator", desc=RandomGeneratorOperatorDesc, support=SUPPORT,
    infer_output=infer_output, validate=validate,
    reference=reference, functional=random_generator, tensors=("input_state",), arguments=arguments,
    planner=RANDOM_GENERATOR,
    cli=Cli((CliArg("--output-state", "true (the default) or false: whether the advanced state is written", "str",
                    "true"),), from_cli, "--shape 1,1,64,64 --output-state true"),
    page="DML_RANDOM_GENERATOR_OPERATOR_DESC", sample=sample,
)
