"""The fused attention family (DML_MULTIHEAD_ATTENTION and MULTIHEAD_ATTENTION1): per
query row, softmax(scale q K^T + bias + mask) V with an online softmax over the keys
(running maximum m, running sum l, running output acc rescaled by exp(m_old - m_new) as a
larger score comes), so that no [heads, sequence, keys] score matrix is ever written.

The problem (`Attention`) reads every tensor through affine maps over (batch, sequence,
head, element) (`Operand`: the stacked layouts are offsets and strides into one tensor;
a broadcast is a stride of 0), the keys of a query head h from key/value head h / group
(grouped heads), key j from the past (j < P, or j < pastLength[b] for the shared cache) or
from the new keys; the length masks are computed from the lengths, in the kernel.

Strategies:

- `rows` (CPU-class): one invocation per (batch, head, ROWS_PER_INVOCATION query rows),
  all their keys in one loop: each key and value element is loaded once for the 16 rows
  (a CPU adapter's lanes would otherwise gather it once per row: 8x on lavapipe), FLOAT32
  keys and values as 16-byte blocks where every row starts on one (2.5x); the head sizes
  are compile-time parameters, so the dot products and the output updates are unrolled
  (one loop iteration per key: llvmpipe's loop budget, base.LOOP_BUDGET, then allows some
  32,000 keys; beyond that the keys are split as under `split`).
- `split` (decoding: few query rows against a long cache): the keys are cut into chunks;
  one invocation per (row, chunk) writes its partial (m, l, acc) to a scratch buffer, and a
  second dispatch merges the chunks of each row (flash-decoding). Also the fallback of
  `rows` past the loop budget.
- `tiles` (GPU-class, flash-attention-shaped): a workgroup takes a tile of 64 query rows
  of one (batch, head); the keys and values are streamed through workgroup memory a tile
  of keys at a time (the workgroup loads them together, then each invocation runs its
  row's online softmax over the tile), so each key is read from memory once per 64 rows.

The present outputs (past followed by the new keys, or the shared cache with the new keys
written at each batch's past length) are a third dispatch, one invocation per element
(bit copies where no bias is added).
"""

from __future__ import annotations

from typing import NamedTuple

from ..errors import UnsupportedError
from .base import LOOP_BUDGET, KernelFamily, count_option
from .builder import Dispatch, KernelPlan, f32_bits, input_buffer, output_buffer, scratch_buffer

WORKGROUP_SIZE = 64
#: Query rows one `rows` / `split` invocation takes (each key element loaded serves them all;
#: measured on lavapipe at head size 64: 4 rows 56 ms, 8 46 ms, 16 35 ms, 32 40 ms).
ROWS_PER_INVOCATION = 16
TILE_ROWS = 64
#: Per-key loop overhead and the per-invocation fixed loops, in loop iterations (estimates).
_FIXED = 64
#: The `split` strategy aims at this many invocations at least.
_SPLIT_TARGET = 512
_MIN_CHUNK = 16


class Operand(NamedTuple):
    """A tensor read (or written) at offset + b * strides[0] + s * strides[1] + h *
    strides[2] + d * strides[3] (elements); `index` is its input (output) number."""

    index: int
    offset: int
    strides: tuple[int, int, int, int]


class Bias(NamedTuple):
    """The bias [Hq D + Hkv D + Hkv Dv]: element e at e * stride; the key part from k_offset,
    the value part from v_offset."""

    index: int
    stride: int
    k_offset: int
    v_offset: int


class Mask(NamedTuple):
    """A mask of `kind` (MASK_TYPES but none): boolean strides over (b, h, i, j); a length
    mask's (per batch, per row of its table)."""

    index: int
    kind: str
    strides: tuple[int, int, int, int]


class Attention(NamedTuple):
    """What the family computes (module docstring)."""

    op: str
    bits: int
    batch: int
    q_len: int
    kv_len: int
    past_len: int
    present_len: int
    q_heads: int
    kv_heads: int
    head_size: int
    value_head_size: int
    shared: bool
    q: Operand
    k: Operand
    v: Operand
    past_key: Operand | None
    past_value: Operand | None
    bias: Bias | None
    mask: Mask | None
    rpb: Operand | None
    lengths: Operand | None
    output: Operand
    present_key: Operand | None
    present_value: Operand | None
    scale: float
    filter: float

    @property
    def rows(self) -> int:
        return self.batch * self.q_heads * self.q_len

    @property
    def key_count(self) -> int:
        return self.present_len


def key_budget(p: Attention) -> int:
    """Keys one invocation may walk (one loop iteration each: the unrolled head sizes)."""
    return max(1, LOOP_BUDGET - _FIXED - 2 * (p.head_size + p.value_head_size))


def _check(p: Attention) -> None:
    if p.head_size > 512 or p.value_head_size > 512:
        raise UnsupportedError(f"{p.op}: head sizes {p.head_size}, {p.value_head_size} above 512 (the kernels hold "
                               f"a row's query and output in registers)")


def strategies_for(p: Attention, caps, splits=None) -> tuple[str, ...]:
    _check(p)
    count_option(p.op, "splits", splits)
    cpu = caps is None or caps.adapter_class == "cpu"
    decode = p.rows < _SPLIT_TARGET and p.key_count >= 4 * _MIN_CHUNK
    tiles_ok = caps is None or _tile_keys(p, caps) >= 1
    order = ["split", "rows"] if decode else ["rows", "split"]
    if tiles_ok:
        if cpu:
            order.append("tiles")
        elif not decode:
            order.insert(0, "tiles")
        else:
            order.insert(1, "tiles")
    return tuple(order)


def _tile_keys(p: Attention, caps) -> int:
    """Keys per workgroup tile: as many as 16 KiB (or the adapter's workgroup memory) holds."""
    limit = min(16384, caps.max_workgroup_storage_size if caps is not None else 16384)
    return min(64, limit // (4 * (p.head_size + p.value_head_size)))


def _buffers(p: Attention):
    """The input buffers the attention reads, by input number: (name per role, Buffers)."""
    names, bufs = {}, []
    roles = {"q": p.q, "k": p.k, "v": p.v, "pk": p.past_key, "pv": p.past_value, "bias": p.bias, "mask": p.mask,
             "rpb": p.rpb, "pl": p.lengths}
    for role, x in roles.items():
        if x is None:
            continue
        name = f"in{x.index}"
        names[role] = name
        if all(b.name != name for b in bufs):
            bufs.append(input_buffer(x.index, name))
    return names, tuple(bufs)


def _vec_roles(p: Attention, caps, names: dict) -> tuple[str, ...]:
    """The key/value roles read as 16-byte blocks (`rows`, `split`): without a bias, head
    sizes of whole blocks (4 FLOAT32 or 8 FLOAT16 elements), every key and value row starting
    on a block (offsets and the b, s, h strides multiples of a block, d's 1), where the
    adapter has the bindings for them."""
    per = 128 // p.bits  # elements per block: 4 (FLOAT32), 8 (FLOAT16)
    if p.bias is not None or p.head_size % per or p.value_head_size % per or caps is None:
        return ()
    roles = {"k": p.k, "v": p.v, "pk": p.past_key, "pv": p.past_value}
    ok = tuple(r for r, x in roles.items() if x is not None)
    if any(roles[r].strides[3] != 1 or roles[r].offset % per or any(st % per for st in roles[r].strides[:3])
           for r in ok):
        return ()
    blocks = {names[r] for r in ok}
    if len(set(names.values())) + len(blocks) + 2 > caps.max_storage_buffers_per_shader_stage:
        return ()
    return ok


def _uniforms(p: Attention, splits: int, chunk: int) -> dict:
    zero = (0, 0, 0, 0)

    def st(x):
        return zero if x is None else tuple(x.strides)
    group = p.q_heads // p.kv_heads
    u = {"rows": p.rows, "batch": p.batch, "q_len": p.q_len, "kv_len": p.kv_len, "past_len": p.past_len,
         "present_len": p.present_len, "q_heads": p.q_heads, "kv_heads": p.kv_heads, "group": group,
         "splits": splits, "chunk": chunk, "scale": f32_bits(p.scale), "mask_filter": f32_bits(p.filter),
         "q_off": p.q.offset, "k_off": p.k.offset, "v_off": p.v.offset, "q_st": st(p.q), "k_st": st(p.k),
         "v_st": st(p.v), "pk_st": st(p.past_key), "pv_st": st(p.past_value), "mask_st": st(p.mask),
         "rpb_st": st(p.rpb), "out_st": st(p.output), "pl_st": 0 if p.lengths is None else p.lengths.strides[0],
         "bias_st": 0 if p.bias is None else p.bias.stride, "bias_k": 0 if p.bias is None else p.bias.k_offset,
         "bias_v": 0 if p.bias is None else p.bias.v_offset,
         "pk_off": 0 if p.past_key is None else p.past_key.offset,
         "pv_off": 0 if p.past_value is None else p.past_value.offset}
    return u


def _params(p: Attention, names: dict, mode: str, vec: tuple[str, ...] = (), rows: int = 1) -> dict:
    return {"mode": mode, "R": rows, "bits": p.bits, "D": p.head_size, "DV": p.value_head_size, "shared": p.shared,
            "past": p.past_key is not None, "mask": None if p.mask is None else p.mask.kind,
            "bias": p.bias is not None, "rpb": p.rpb is not None, "names": tuple(sorted(names.items())),
            "vec": vec}


def plan(p: Attention, caps, strategy: str, splits=None) -> KernelPlan:
    """The dispatches of `strategy` (module docstring), the present outputs' after them."""
    _check(p)
    count_option(p.op, "splits", splits)
    names, inputs = _buffers(p)
    budget = key_budget(p)
    least = -(-p.key_count // budget)
    out = output_buffer(p.output.index, "out", p.bits, "stores")
    dispatches, scratch = [], ()
    if strategy == "tiles":
        tk = _tile_keys(p, caps)
        if tk < 1:
            raise UnsupportedError(f"{p.op}: a tile of keys of head sizes {p.head_size} + {p.value_head_size} does "
                                   f"not fit the adapter's workgroup memory")
        tiles = -(-p.key_count // tk)
        per_tile = -(-tk * (p.head_size + p.value_head_size) // WORKGROUP_SIZE) + tk
        if tiles * per_tile + _FIXED > LOOP_BUDGET:
            raise UnsupportedError(f"{p.op}: {p.key_count} keys pass one invocation's loop budget under `tiles`")
        row_groups = -(-p.q_len // TILE_ROWS)
        params = {**_params(p, names, "tiles"), "tk": tk}
        uni = {**_uniforms(p, 1, tk), "row_groups": row_groups}
        dispatches.append(Dispatch("attention.wgsl.j2", params, (*inputs, out), uni,
                                   p.batch * p.q_heads * row_groups * TILE_ROWS, WORKGROUP_SIZE))
    else:
        if splits is None:
            splits = least
            if strategy == "split":
                want = -(-_SPLIT_TARGET // p.rows)
                splits = max(least, min(want, -(-p.key_count // _MIN_CHUNK)))
        splits = max(1, min(splits, p.key_count))
        chunk = -(-p.key_count // splits)
        splits = -(-p.key_count // chunk)
        if chunk > budget:
            raise UnsupportedError(f"{p.op}: option splits = {splits} leaves {chunk} keys per invocation, beyond its "
                                   f"loop budget ({budget} keys)")
        uni = _uniforms(p, splits, chunk)
        vec = _vec_roles(p, caps, names)
        blocks = {names[r] for r in vec}
        inputs = inputs + tuple(input_buffer(b.index, b.name + "_vec", "blocks") for b in inputs if b.name in blocks)
        group = min(ROWS_PER_INVOCATION, p.q_len)
        invocations = p.batch * p.q_heads * -(-p.q_len // group) * splits
        if splits == 1:
            dispatches.append(Dispatch("attention.wgsl.j2", _params(p, names, "direct", vec, group), (*inputs, out),
                                       uni, invocations, WORKGROUP_SIZE))
        else:
            record = p.value_head_size + 2
            scratch = (p.rows * splits * record * 4,)
            dispatches.append(Dispatch("attention.wgsl.j2", _params(p, names, "partials", vec, group),
                                       (*inputs, scratch_buffer(0, "part", writable=True)), uni,
                                       invocations, WORKGROUP_SIZE))
            merge = _params(p, {}, "merge")
            dispatches.append(Dispatch("attention.wgsl.j2", merge, (scratch_buffer(0, "part", writable=False), out),
                                       uni, p.rows * p.value_head_size, WORKGROUP_SIZE))
    present = _present(p, names, tuple(b for b in inputs if not b.name.endswith("_vec")))
    if present is not None:
        dispatches.append(present)
    return KernelPlan(tuple(dispatches), scratch_bytes=scratch)


def _present(p: Attention, names: dict, inputs) -> Dispatch | None:
    outs = []
    if p.present_key is not None:
        outs.append(output_buffer(p.present_key.index, "prk", p.bits, "stores"))
    if p.present_value is not None:
        outs.append(output_buffer(p.present_value.index, "prv", p.bits, "stores"))
    if not outs:
        return None
    keep = {"k", "v", "pk", "pv", "bias", "pl"}
    used = {n for r, n in names.items() if r in keep}
    ins = tuple(b for b in inputs if b.name in used)
    params = {**_params(p, {r: n for r, n in names.items() if r in keep}, "present"),
              "prk": p.present_key is not None, "prv": p.present_value is not None}
    zero = (0, 0, 0, 0)
    uni = {**_uniforms(p, 1, 1), "prk_st": zero if p.present_key is None else p.present_key.strides,
           "prv_st": zero if p.present_value is None else p.present_value.strides,
           "k_count": p.batch * p.kv_heads * p.present_len * p.head_size,
           "v_count": p.batch * p.kv_heads * p.present_len * p.value_head_size}
    count = uni["k_count"] * (p.present_key is not None) + uni["v_count"] * (p.present_value is not None)
    return Dispatch("attention.wgsl.j2", params, (*ins, *outs), uni, count, WORKGROUP_SIZE)


class AttentionFamily(KernelFamily):
    """The attention family: the module's functions over an `Attention`."""

    strategies = ("rows", "split", "tiles")
    options = ("splits",)

    def strategies_for(self, problem: Attention, caps, splits=None) -> tuple[str, ...]:
        return strategies_for(problem, caps, splits)

    def plan(self, problem: Attention, caps, strategy: str, splits=None) -> KernelPlan:
        return plan(problem, caps, strategy, splits)

    def variants(self, problem: Attention, caps, strategy: str) -> tuple[dict, ...]:
        """Other key splits of `split`."""
        return ({"splits": 8}, {"splits": 32}) if strategy == "split" else ()


FAMILY = AttentionFamily()
