"""DML_MULTIHEAD_ATTENTION (FL 6.1, `dml.multihead_attention0`, MultiheadAttentionOperatorDesc)
and DML_MULTIHEAD_ATTENTION1 (FL 6.3, `dml.multihead_attention`,
MultiheadAttention1OperatorDesc): softmax(scale * Q K^T + relative position bias + mask) V
per head, with the stacked query/key/value layouts, the bias, every mask type, past
key/value and the present outputs (docs/operators/multihead_attention.md).

Shapes (the page's; a 4- or 5-dimensional tensor of rank-3 meaning has leading 1s):
query [B, S, Hq * D], key [B, L, Hkv * D], value [B, L, Hkv * Dv]; stacked query-key
[B, S, H, 2, D], key-value [B, L, H, 2, Dv] (D = Dv), query-key-value [B, S, H, 3, D];
bias [Hq * D + Hkv * D + Hkv * Dv] (leading 1s allowed) added to the new query, key and
value (never to the past); past key/value [B, Hkv, P, D or Dv]; output [B, S, Hq * Dv];
present key/value [B, Hkv, P + L, D or Dv]: the past followed by the new keys (values),
bias added. Version 0 has one HeadCount (Hq = Hkv); version 1 QueryHeadCount and
KeyValueHeadCount (grouped heads: query head h reads key/value head h / (Hq / Hkv)).

Where the pages are silent (or absent: MULTIHEAD_ATTENTION1's page is not in the index
gpudml reads; its fields are DirectML.h's struct, its semantics version 0's page plus what
ONNX Runtime's DirectML execution provider feeds it for GroupQueryAttention), gpudml's choices:

- Masks. BOOLEAN: an INT32 tensor of 1-5 dimensions broadcast (numpy's rule, right-aligned)
  to [B, Hq, S, T] (T the key count); 0 adds MaskFilterValue to the score, any other
  value adds nothing. KEY_SEQUENCE_LENGTH: [1, B] (or [B]), keys j >= length[b] get the
  score MaskFilterValue. KEY_SEQUENCE_END_START: [2, B], keys outside [start[b], end[b])
  get it. KEY_QUERY_SEQUENCE_LENGTH_START_END: [3B + 2]; the keys j >= min(keyLength[b],
  keyStart[b + 1] - keyStart[b]) get it (keyStart[B] is the page's keyEnd[B - 1]); the
  query starts are read by no rule (every query row is computed). The length masks are
  computed from the lengths in the kernels: no mask tensor of scores exists.
- MaskFilterValue must be finite (a row of masked keys then averages its values, as
  DirectML's formula gives; -inf would make it NaN). HeadCount >= 1 and dividing the
  hidden sizes; Hkv dividing Hq.
- Relative position bias: [B or 1, Hq or 1, S or 1, T] (4 dimensions, or 5 with a leading 1).
- PastSequenceLengthsTensor (version 1, INT32 [B] or [B, 1]): the shared-buffer cache of
  GroupQueryAttention: past key/value [B, Hkv, C, D] hold pastLength[b] valid rows; the
  new keys go to rows [pastLength[b], pastLength[b] + L) of the present outputs, which
  have the past's shape [B, Hkv, C, D] (the other rows copied from the past); query row i
  attends the keys j <= pastLength[b] + i (causal, as GroupQueryAttention, whose DirectML
  mapping passes no mask). A pastLength beyond C - L reads as C - L (nothing is read or
  written outside a buffer; the values are data, known only on the device).
- The functional forms return the output, or with `present=True` the tuple (output,
  present_key, present_value) (API.md 15: DirectML's outputs in field order).

Precision (`tolerance`, tests/test_multihead_attention.py): float32 arithmetic (float16 read
exactly, the output rounded once). With u = 2^-24, eps = 2^-23, score s_j's error
delta_j = (D + 2) u |scale| sum_d |q_d k_jd| + 2 u (|s_j| + |bias_j|) (s_j with its mask),
d_j = s_j - max s and the softmax weights p_j: a weight is within p_j (delta_j + eps (3 +
2.5 |d_j|) + 2 u) =: p_j e_j (WGSL's exp; the online softmax's rescalings are exp's too), and
the output within 1.05 (sum_j p_j |v_j| e_j + (sum_j p_j e_j) A + (2 T + 40) u A), A = sum_j
p_j |v_j|, plus a float16 ULP of the result for FLOAT16 (the rounding of float32's result, against the
reference's own rounding) and 2^-126 (flushed subnormals).
It grows with the key count T (the sums' roundings) and the head size D (the dot products).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels import attention as family
from ..kernels.base import ProblemPlanner
from ..tensor_desc import TensorDesc, as_int, check_tensor_desc
from ..types import F16, F32, I32, DataType, FeatureLevel
from .activations import as_float32
from .spec import Call, Cli, CliArg, OpSpec, desc_class, support_table

OP0, OP1 = "MultiheadAttention", "MultiheadAttention1"
FLOATS = frozenset({F32, F16})
MASK_TYPES = ("none", "boolean", "key_sequence_length", "key_sequence_end_start",
              "key_query_sequence_length_start_end")
#: The input fields in the structs' order (version 1 adds past_sequence_lengths_tensor).
INPUTS0 = ("query_tensor", "key_tensor", "value_tensor", "stacked_query_key_tensor", "stacked_key_value_tensor",
           "stacked_query_key_value_tensor", "bias_tensor", "mask_tensor", "relative_position_bias_tensor",
           "past_key_tensor", "past_value_tensor")
INPUTS1 = (*INPUTS0, "past_sequence_lengths_tensor")
OUTPUTS = ("output_tensor", "output_present_key_tensor", "output_present_value_tensor")
_RANKS = {"query_tensor": (3, 5), "key_tensor": (3, 5), "value_tensor": (3, 5), "stacked_query_key_tensor": (5, 5),
          "stacked_key_value_tensor": (5, 5), "stacked_query_key_value_tensor": (5, 5), "bias_tensor": (1, 5),
          "mask_tensor": (1, 5), "relative_position_bias_tensor": (4, 5), "past_key_tensor": (4, 5),
          "past_value_tensor": (4, 5), "past_sequence_lengths_tensor": (1, 2), "output_tensor": (3, 5),
          "output_present_key_tensor": (4, 5), "output_present_value_tensor": (4, 5)}


def _support(op, level, inputs):
    fields = (*inputs, *OUTPUTS)
    ranks = {f: _RANKS[f] for f in fields}
    types = [frozenset({I32}) if f in ("mask_tensor", "past_sequence_lengths_tensor") else FLOATS for f in fields]
    return support_table(op, fields, [(level, ranks, *types)])


SUPPORT0 = _support(OP0, FeatureLevel.FL_6_1, INPUTS0)
SUPPORT1 = _support(OP1, FeatureLevel.FL_6_3, INPUTS1)


# ---------------------------------------------------------------------------- descs
def _normalize(desc, op):
    mask = desc.mask_type
    name = "none" if mask is None else str(getattr(mask, "name", mask)).lower().removeprefix(
        "dml_multihead_attention_mask_type_")
    if name not in MASK_TYPES:
        raise InvalidArgumentError(f"{op}: mask_type {mask!r} must be one of {', '.join(MASK_TYPES)}")
    object.__setattr__(desc, "mask_type", name)
    object.__setattr__(desc, "scale", as_float32(desc.scale, f"{op}: scale"))
    object.__setattr__(desc, "mask_filter_value", as_float32(desc.mask_filter_value, f"{op}: mask_filter_value"))
    for f in ("head_count", "query_head_count", "key_value_head_count"):
        if hasattr(desc, f):
            object.__setattr__(desc, f, as_int(getattr(desc, f), f"{op}: {f}"))


def _heads0(self) -> tuple[int, int]:
    return self.head_count, self.head_count


def _heads1(self) -> tuple[int, int]:
    return self.query_head_count, self.key_value_head_count


def _desc_class(name: str, op: str, inputs: tuple[str, ...], heads: tuple[str, ...], doc: str) -> type:
    """The desc class of one version: its tensor fields (all optional but output_tensor), then
    Scale, MaskFilterValue, its head counts and MaskType, in the struct's order."""
    fields = [(f, "TensorDesc | None") for f in inputs] + [("output_tensor", "TensorDesc")]
    fields += [(f, "TensorDesc | None") for f in OUTPUTS[1:]]
    fields += [("scale", "float"), ("mask_filter_value", "float")] + [(h, "int") for h in heads]
    fields.append(("mask_type", "str", dataclasses.field(default="none")))
    return desc_class(name, __name__, doc=doc, fields=fields, OPTIONAL_TENSORS=inputs,
                      __post_init__=lambda self: _normalize(self, op),
                      heads=property(_heads1 if len(heads) == 2 else _heads0))


MultiheadAttentionOperatorDesc = _desc_class(
    "MultiheadAttentionOperatorDesc", OP0, INPUTS0, ("head_count",),
    "DML_MULTIHEAD_ATTENTION_OPERATOR_DESC (FL 6.1): every tensor but output_tensor optional (None); "
    "`heads` is (head_count, head_count).")
MultiheadAttention1OperatorDesc = _desc_class(
    "MultiheadAttention1OperatorDesc", OP1, INPUTS1, ("query_head_count", "key_value_head_count"),
    "DML_MULTIHEAD_ATTENTION1_OPERATOR_DESC (FL 6.3): version 0's fields, a past_sequence_lengths_tensor, and "
    "query_head_count / key_value_head_count (grouped heads); `heads` is (query, key/value) head counts.")


def _version(desc) -> tuple[str, tuple[str, ...], object]:
    if isinstance(desc, MultiheadAttention1OperatorDesc):
        return OP1, INPUTS1, SUPPORT1
    return OP0, INPUTS0, SUPPORT0


# ---------------------------------------------------------------------------- geometry
@dataclass(frozen=True)
class Geometry:
    """What a desc computes, in sizes: batch B, query rows S, new key rows L, past rows P
    (the past tensors' third size; 0 without), heads Hq and Hkv, head sizes D and Dv,
    the layout (which tensors hold query, key and value), and whether the cache is shared
    (version 1's past_sequence_lengths_tensor)."""

    batch: int
    q_len: int
    kv_len: int
    past_len: int
    q_heads: int
    kv_heads: int
    head_size: int
    value_head_size: int
    shared: bool

    @property
    def present_len(self) -> int:
        """The present outputs' third size: P + L, or the shared cache's capacity."""
        if self.shared:
            return self.past_len if self.past_len else self.kv_len
        return self.past_len + self.kv_len

    @property
    def key_count(self) -> int:
        """T: the keys a query row may see at most."""
        return self.present_len


def _last(td: TensorDesc, n: int) -> tuple[int, ...]:
    return tuple(td.sizes[td.rank - n:])


def _lead_ones(op: str, field: str, td: TensorDesc, n: int) -> None:
    if td.rank > n and any(s != 1 for s in td.sizes[:td.rank - n]):
        raise InvalidArgumentError(
            f"{op}: {field}.sizes {list(td.sizes)}: a tensor of {td.rank} dimensions must have 1s before its last "
            f"{n} (its meaning has {n} dimensions)")


def _div(op: str, what: str, total: int, heads: int, head_field: str) -> int:
    if heads < 1 or total % heads:
        raise InvalidArgumentError(
            f"{op}: {what} {total} must be a multiple of {head_field} = {heads} (hidden size = heads * head size)")
    return total // heads


def geometry(desc) -> Geometry:
    """The sizes of `desc` (InvalidArgumentError naming the field, the rule and the values)."""
    op, inputs, _ = _version(desc)
    for field in (*inputs, *OUTPUTS):
        td = getattr(desc, field)
        lo, hi = _RANKS[field]
        if td is not None and not lo <= td.rank <= hi:
            raise InvalidArgumentError(f"{op}: {field} DimensionCount {td.rank} is not supported (supported: "
                                       f"{lo}-{hi}; sizes {list(td.sizes)})")
    hq, hkv = desc.heads
    hf = "head_count" if op == OP0 else "query_head_count"
    kf = "head_count" if op == OP0 else "key_value_head_count"
    if hq < 1 or hkv < 1:
        raise InvalidArgumentError(f"{op}: {hf} = {hq} and {kf} = {hkv} must be >= 1")
    if hq % hkv:
        raise InvalidArgumentError(f"{op}: {hf} = {hq} must be a multiple of {kf} = {hkv} (grouped key/value heads)")
    q, k, v = desc.query_tensor, desc.key_tensor, desc.value_tensor
    sqk, skv, sqkv = desc.stacked_query_key_tensor, desc.stacked_key_value_tensor, desc.stacked_query_key_value_tensor
    layouts = {"query/key/value": (q, k, v), "stacked_query_key + value": (sqk, v),
               "query + stacked_key_value": (q, skv), "stacked_query_key_value": (sqkv,)}
    givens = [n for n, f in (("query_tensor", q), ("key_tensor", k), ("value_tensor", v),
                             ("stacked_query_key_tensor", sqk), ("stacked_key_value_tensor", skv),
                             ("stacked_query_key_value_tensor", sqkv)) if f is not None]
    match = [name for name, ts in layouts.items() if all(t is not None for t in ts)
             and sum(t is not None for t in (q, k, v, sqk, skv, sqkv)) == len(ts)]
    if not match:
        raise InvalidArgumentError(
            f"{op}: exactly one query, one key and one value must be given, stacked or not (one of: query_tensor + "
            f"key_tensor + value_tensor, stacked_query_key_tensor + value_tensor, query_tensor + "
            f"stacked_key_value_tensor, stacked_query_key_value_tensor); given: {', '.join(givens) or 'none'}")
    for field, td, n in (("query_tensor", q, 3), ("key_tensor", k, 3), ("value_tensor", v, 3),
                         ("stacked_query_key_tensor", sqk, 5), ("stacked_key_value_tensor", skv, 5),
                         ("stacked_query_key_value_tensor", sqkv, 5)):
        if td is not None:
            _lead_ones(op, field, td, n)
    stacked = sqk if sqk is not None else sqkv
    if stacked is not None and hq != hkv:
        raise InvalidArgumentError(f"{op}: a stacked query tensor has one head count: {hf} = {hq} must equal "
                                   f"{kf} = {hkv}")
    if stacked is not None:
        field = "stacked_query_key_tensor" if sqk is not None else "stacked_query_key_value_tensor"
        b, s, h, n, d = stacked.sizes
        if h != hq or n != (2 if sqk is not None else 3):
            raise InvalidArgumentError(
                f"{op}: {field}.sizes {list(stacked.sizes)} must be [batch, sequence, {hf} = {hq}, "
                f"{2 if sqk is not None else 3}, head size]")
        qb, qs = b, s
        head = d
    else:
        qb, qs, qh = _last(q, 3)
        head = _div(op, "query_tensor.sizes[-1]", qh, hq, hf)
    if sqkv is not None:
        kb, ks, vhead = qb, qs, head
    else:
        if skv is not None:
            kb, ks, h, n, d = skv.sizes
            if h != hkv or n != 2:
                raise InvalidArgumentError(
                    f"{op}: stacked_key_value_tensor.sizes {list(skv.sizes)} must be [batch, key sequence, {kf} = "
                    f"{hkv}, 2, head size]")
            if d != head:
                raise InvalidArgumentError(
                    f"{op}: stacked_key_value_tensor's head size {d} must equal the query's {head}")
            vhead = d
        else:
            if k is not None:
                kb, ks, kh = _last(k, 3)
                if kh != hkv * head:
                    raise InvalidArgumentError(
                        f"{op}: key_tensor.sizes[-1] = {kh} must be {kf} * head size = {hkv} * {head} = {hkv * head}")
            else:  # stacked query-key: the keys are the query's rows
                kb, ks = qb, qs
            vb, vs, vh = _last(v, 3)
            vhead = _div(op, "value_tensor.sizes[-1]", vh, hkv, kf)
            if (vb, vs) != (kb, ks):
                raise InvalidArgumentError(
                    f"{op}: value_tensor.sizes {list(v.sizes)} must be [batch {kb}, key sequence {ks}, "
                    f"{kf} * value head size] (the key's batch and sequence)")
    if kb != qb:
        raise InvalidArgumentError(f"{op}: the key's batch size {kb} must equal the query's {qb}")
    past = 0
    pk, pv = desc.past_key_tensor, desc.past_value_tensor
    if (pk is None) != (pv is None):
        raise InvalidArgumentError(f"{op}: past_key_tensor and past_value_tensor must be given together")
    shared = getattr(desc, "past_sequence_lengths_tensor", None) is not None
    if pk is not None:
        for field, td, d in (("past_key_tensor", pk, head), ("past_value_tensor", pv, vhead)):
            _lead_ones(op, field, td, 4)
            want_b, want_h, _, want_d = _last(td, 4)
            if (want_b, want_h, want_d) != (qb, hkv, d):
                raise InvalidArgumentError(
                    f"{op}: {field}.sizes {list(td.sizes)} must be [batch {qb}, {kf} {hkv}, past sequence, head size "
                    f"{d}]")
        past = _last(pk, 4)[2]
        if _last(pv, 4)[2] != past:
            raise InvalidArgumentError(f"{op}: past_value_tensor's sequence size {_last(pv, 4)[2]} must equal "
                                       f"past_key_tensor's {past}")
        if shared and past < ks:
            raise InvalidArgumentError(
                f"{op}: the shared cache (past_sequence_lengths_tensor given) of past_key_tensor's {past} rows "
                f"must hold the {ks} new key rows (past lengths beyond the cache)")
    return Geometry(qb, qs, ks, past, hq, hkv, head, vhead, shared)


def _check_broadcast(op: str, field: str, td: TensorDesc, target: tuple[int, ...], rule: str) -> None:
    sizes = td.sizes
    ok = len(sizes) <= len(target) and all(s in (1, t) for s, t in zip(sizes[::-1], target[::-1]))
    if not ok:
        raise InvalidArgumentError(f"{op}: {field}.sizes {list(sizes)} must broadcast to {list(target)} ({rule})")


def mask_sizes(g: Geometry, mask_type: str) -> tuple[int, ...] | None:
    """The sizes a length mask must have (None: the boolean mask broadcasts)."""
    return {"key_sequence_length": (1, g.batch), "key_sequence_end_start": (2, g.batch),
            "key_query_sequence_length_start_end": (3 * g.batch + 2,)}.get(mask_type)


def validate(desc, feature_level: FeatureLevel) -> None:
    """Every rule of the page (module docstring): the support row, one float type, the
    layouts, the head counts, the shapes of every tensor, the mask by its type."""
    op, inputs, support = _version(desc)
    named = {f: getattr(desc, f) for f in (*inputs, *OUTPUTS) if getattr(desc, f) is not None}
    for field, td in named.items():
        check_tensor_desc(op, field, td, is_output=field in OUTPUTS)
    row = support.row_for(feature_level)
    for field, td in named.items():
        support.check_rank(feature_level, field, td.rank)
        if td.data_type not in row.types[field]:
            allowed = " or ".join(sorted(t.name for t in row.types[field]))
            raise InvalidArgumentError(f"{op}: {field}.data_type {td.data_type.name} is not supported at "
                                       f"{FeatureLevel(feature_level).name} (supported: {allowed})")
    floats = {f: td for f, td in named.items() if f not in ("mask_tensor", "past_sequence_lengths_tensor")}
    first, want = next(iter(floats.items()))
    for field, td in floats.items():
        if td.data_type != want.data_type:
            raise InvalidArgumentError(f"{op}: {field}.data_type {td.data_type.name} must equal {first}.data_type "
                                       f"{want.data_type.name} (one DataType)")
    if not math.isfinite(desc.mask_filter_value):
        raise InvalidArgumentError(f"{op}: mask_filter_value = {desc.mask_filter_value!r} must be finite")
    if not math.isfinite(desc.scale):
        raise InvalidArgumentError(f"{op}: scale = {desc.scale!r} must be finite")
    g = geometry(desc)
    out = desc.output_tensor
    _lead_ones(op, "output_tensor", out, 3)
    want_out = (g.batch, g.q_len, g.q_heads * g.value_head_size)
    if _last(out, 3) != want_out:
        raise InvalidArgumentError(f"{op}: output_tensor.sizes {list(out.sizes)} must be [batch, sequence, "
                                   f"query heads * value head size] = {list(want_out)}")
    for field, d in (("output_present_key_tensor", g.head_size), ("output_present_value_tensor", g.value_head_size)):
        td = getattr(desc, field)
        if td is not None:
            _lead_ones(op, field, td, 4)
            want_p = (g.batch, g.kv_heads, g.present_len, d)
            if _last(td, 4) != want_p:
                raise InvalidArgumentError(
                    f"{op}: {field}.sizes {list(td.sizes)} must be [batch, key/value heads, "
                    f"{'the shared cache' if g.shared else 'past + key sequence'}, head size] = {list(want_p)}")
    bias = desc.bias_tensor
    if bias is not None:
        n = (g.q_heads + g.kv_heads) * g.head_size + g.kv_heads * g.value_head_size
        _lead_ones(op, "bias_tensor", bias, 1)
        if bias.sizes[-1] != n:
            raise InvalidArgumentError(
                f"{op}: bias_tensor.sizes {list(bias.sizes)} must end in the query, key and value hidden sizes "
                f"{g.q_heads * g.head_size} + {g.kv_heads * g.head_size} + {g.kv_heads * g.value_head_size} = {n}")
    target = (g.batch, g.q_heads, g.q_len, g.key_count)
    rpb = desc.relative_position_bias_tensor
    if rpb is not None:
        _lead_ones(op, "relative_position_bias_tensor", rpb, 4)
        _check_broadcast(op, "relative_position_bias_tensor", TensorDesc(rpb.data_type, _last(rpb, 4)), target,
                         "[batch or 1, query heads or 1, sequence or 1, key count]")
        if _last(rpb, 1)[0] != g.key_count:
            raise InvalidArgumentError(f"{op}: relative_position_bias_tensor.sizes[-1] = {rpb.sizes[-1]} must be the "
                                       f"key count {g.key_count}")
    mask = desc.mask_tensor
    if (mask is None) != (desc.mask_type == "none"):
        raise InvalidArgumentError(
            f"{op}: mask_type {desc.mask_type!r} " + ("needs a mask_tensor" if mask is None else
                                                      "with a mask_tensor: name the mask's type (mask_type)"))
    if mask is not None:
        sizes = mask_sizes(g, desc.mask_type)
        if sizes is None:
            _check_broadcast(op, "mask_tensor", mask, target,
                             "BOOLEAN: [batch, query heads, sequence, key count], numpy's broadcasting")
        else:
            got = mask.sizes if not (desc.mask_type == "key_sequence_length" and mask.rank == 1) else (1, *mask.sizes)
            if tuple(got) != sizes:
                raise InvalidArgumentError(f"{op}: mask_tensor.sizes {list(mask.sizes)} must be {list(sizes)} for "
                                           f"mask_type {desc.mask_type.upper()}")
    pl = getattr(desc, "past_sequence_lengths_tensor", None)
    if pl is not None and pl.sizes not in ((g.batch,), (g.batch, 1)):
        raise InvalidArgumentError(f"{op}: past_sequence_lengths_tensor.sizes {list(pl.sizes)} must be "
                                   f"[{g.batch}] or [{g.batch}, 1] (one past length per batch)")


# ---------------------------------------------------------------------------- the kernels' problem
def _operand(td: TensorDesc, index: int, axes: tuple[int, int, int, int], offset_axis=None, offset_index=0,
             head_split: int = 0) -> family.Operand:
    """Operand over (b, s, h, d) of `td`: `axes` name which of td's axes (counted from the
    end: 0 is the last) carry b, s, h, d; head_split > 0: the last axis holds h * head_split + d."""
    st = td.effective_strides
    r = td.rank

    def at(k):
        return st[r - 1 - k]
    if head_split:
        b, s = at(axes[0]), at(axes[1])
        d = at(0)
        return family.Operand(index, 0, (b, s, head_split * d, d))
    offset = at(offset_axis) * offset_index if offset_axis is not None else 0
    return family.Operand(index, offset, tuple(at(a) for a in axes))


def problem(desc) -> family.Attention:
    op, inputs, _ = _version(desc)
    g = geometry(desc)
    index = {}
    for f in inputs:
        if getattr(desc, f) is not None:
            index[f] = len(index)
    out_index = {f: i for i, f in enumerate(f for f in OUTPUTS if getattr(desc, f) is not None)}
    q = desc.query_tensor
    sqk, skv, sqkv = desc.stacked_query_key_tensor, desc.stacked_key_value_tensor, desc.stacked_query_key_value_tensor
    stacked = (4, 3, 2, 0)  # [B, S, H, n, D]: b, s, h, d from the end
    if sqkv is not None:
        i = index["stacked_query_key_value_tensor"]
        qo, ko, vo = (_operand(sqkv, i, stacked, 1, n) for n in range(3))
    else:
        if sqk is not None:
            i = index["stacked_query_key_tensor"]
            qo, ko = (_operand(sqk, i, stacked, 1, n) for n in range(2))
        else:
            qo = _operand(q, index["query_tensor"], (2, 1, 0, 0), head_split=g.head_size)
        if skv is not None:
            i = index["stacked_key_value_tensor"]
            ko, vo = (_operand(skv, i, stacked, 1, n) for n in range(2))
        else:
            if sqk is None:
                ko = _operand(desc.key_tensor, index["key_tensor"], (2, 1, 0, 0), head_split=g.head_size)
            vo = _operand(desc.value_tensor, index["value_tensor"], (2, 1, 0, 0), head_split=g.value_head_size)
    cache = (3, 1, 2, 0)  # [B, H, T, D]: b, s(t), h, d from the end
    pk = pv = None
    if desc.past_key_tensor is not None:
        pk = _operand(desc.past_key_tensor, index["past_key_tensor"], cache)
        pv = _operand(desc.past_value_tensor, index["past_value_tensor"], cache)
    bias = None
    if desc.bias_tensor is not None:
        b = desc.bias_tensor
        bias = family.Bias(index["bias_tensor"], b.effective_strides[-1], g.q_heads * g.head_size,
                           (g.q_heads + g.kv_heads) * g.head_size)
    mask = None
    if desc.mask_tensor is not None:
        m = desc.mask_tensor
        if desc.mask_type == "boolean":
            st = m.effective_strides
            strides = [0, 0, 0, 0]
            for k in range(m.rank):
                strides[4 - m.rank + k] = 0 if m.sizes[k] == 1 else st[k]
            mask = family.Mask(index["mask_tensor"], "boolean", tuple(strides))
        else:
            st = m.effective_strides
            if desc.mask_type == "key_query_sequence_length_start_end":
                strides = (st[0], 0)
            elif m.rank == 1:
                strides = (st[0], 0)
            else:
                strides = (st[1], st[0])  # (per batch, per row of the [2, B] table)
            mask = family.Mask(index["mask_tensor"], desc.mask_type, strides + (0, 0))
    rpb = None
    if desc.relative_position_bias_tensor is not None:
        t = desc.relative_position_bias_tensor
        sizes, st = _last(t, 4), t.effective_strides[t.rank - 4:]
        rpb = family.Operand(index["relative_position_bias_tensor"], 0,
                             tuple(0 if n == 1 else s for n, s in zip(sizes, st)))
    lengths = None
    pl = getattr(desc, "past_sequence_lengths_tensor", None)
    if pl is not None:
        lengths = family.Operand(index["past_sequence_lengths_tensor"], 0, (pl.effective_strides[0], 0, 0, 0))
    out = desc.output_tensor
    ost = out.effective_strides
    output = family.Operand(out_index["output_tensor"], 0,
                            (ost[-3], ost[-2], g.value_head_size * ost[-1], ost[-1]))
    presents = []
    for f in ("output_present_key_tensor", "output_present_value_tensor"):
        td = getattr(desc, f)
        presents.append(None if td is None else _operand(td, out_index[f], cache))
    bits = 16 if desc.output_tensor.data_type == F16 else 32
    return family.Attention(
        op, bits, g.batch, g.q_len, g.kv_len, g.past_len, g.present_len, g.q_heads, g.kv_heads, g.head_size,
        g.value_head_size, g.shared, qo, ko, vo, pk, pv, bias, mask, rpb, lengths, output, presents[0], presents[1],
        float(desc.scale), float(desc.mask_filter_value))


ATTENTION = ProblemPlanner(problem, family.FAMILY)


# ---------------------------------------------------------------------------- reference
def _heads(x: np.ndarray, heads: int) -> np.ndarray:
    """[B, S, H * D] (leading 1s dropped) -> [B, H, S, D]."""
    x = x.reshape(x.shape[-3:])
    b, s, n = x.shape
    return x.reshape(b, s, heads, n // heads).transpose(0, 2, 1, 3)


def _stacked(x: np.ndarray, k: int) -> np.ndarray:
    """[B, S, H, n, D] -> part k as [B, H, S, D]."""
    return x[:, :, :, k, :].transpose(0, 2, 1, 3)


def _cache(x: np.ndarray) -> np.ndarray:
    return x.reshape(x.shape[-4:])


class _Parts(dict):
    """The reference's float64 intermediates: q [B, Hq, S, D], the present key/value [B,
    Hkv, T, D], the scores with bias and masks [B, Hq, S, T], the keys each row sees."""


def _prepare(query=None, key=None, value=None, *, stacked_query_key=None, stacked_key_value=None,
             stacked_query_key_value=None, bias=None, mask=None, relative_position_bias=None, past_key=None,
             past_value=None, past_sequence_lengths=None, head_count, key_value_head_count=None, mask_type=None,
             scale=None, mask_filter_value=-10000.0) -> _Parts:
    hq = int(head_count)
    hkv = hq if key_value_head_count is None else int(key_value_head_count)
    arrays = [query, key, value, stacked_query_key, stacked_key_value, stacked_query_key_value]
    dtype = next(np.asarray(a).dtype for a in arrays if a is not None)
    query, key, value, sqk, skv, sqkv = (None if a is None else np.asarray(a).astype(np.float64) for a in arrays)
    if sqkv is not None:
        q, k, v = (_stacked(sqkv, n) for n in range(3))
    else:
        if sqk is not None:
            q, k = _stacked(sqk, 0), _stacked(sqk, 1)
        else:
            q = _heads(query, hq)
        if skv is not None:
            k, v = _stacked(skv, 0), _stacked(skv, 1)
        else:
            if sqk is None:
                k = _heads(key, hkv)
            v = _heads(value, hkv)
    batch, _, s_len, d = q.shape
    dv = v.shape[-1]
    if bias is not None:
        bb = np.asarray(bias).astype(np.float64).reshape(-1)
        q = q + bb[:hq * d].reshape(hq, 1, d)
        k = k + bb[hq * d:(hq + hkv) * d].reshape(hkv, 1, d)
        v = v + bb[(hq + hkv) * d:].reshape(hkv, 1, dv)
    new_len = k.shape[2]
    if past_key is not None:
        pk = _cache(np.asarray(past_key).astype(np.float64))
        pv = _cache(np.asarray(past_value).astype(np.float64))
    else:
        pk, pv = np.zeros((batch, hkv, 0, d)), np.zeros((batch, hkv, 0, dv))
    t_idx = None
    if past_sequence_lengths is not None:  # the shared cache
        cap = pk.shape[2] if past_key is not None else new_len
        lengths = np.clip(np.asarray(past_sequence_lengths).reshape(-1).astype(np.int64), 0, cap - new_len)
        kk, vv = np.zeros((batch, hkv, cap, d)), np.zeros((batch, hkv, cap, dv))
        kk[:, :, :pk.shape[2]], vv[:, :, :pv.shape[2]] = pk, pv
        for b in range(batch):
            kk[b, :, lengths[b]:lengths[b] + new_len] = k[b]
            vv[b, :, lengths[b]:lengths[b] + new_len] = v[b]
        t_idx = lengths
    else:
        kk, vv = np.concatenate([pk, k], axis=2), np.concatenate([pv, v], axis=2)
    t = kk.shape[2]
    group = hq // hkv
    ke = np.repeat(kk, group, axis=1)
    sc = 1.0 / math.sqrt(d) if scale is None else float(np.float32(scale))
    filt = float(np.float32(mask_filter_value))
    scores = sc * np.einsum("bhid,bhjd->bhij", q, ke)
    rmag = 0.0
    if relative_position_bias is not None:
        r = np.asarray(relative_position_bias).astype(np.float64)
        scores = scores + r.reshape(r.shape[-4:])
        rmag = np.abs(r.reshape(r.shape[-4:]))
    j = np.arange(t)
    if mask is not None:
        kind = (mask_type or "boolean").lower()
        m = np.asarray(mask).astype(np.int64)
        if kind == "boolean":
            scores = scores + np.where(np.broadcast_to(m, scores.shape[-m.ndim:]) == 0, filt, 0.0)
        else:
            flat = m.reshape(-1)
            if kind == "key_sequence_length":
                keep = j[None, :] < flat[:batch, None]
            elif kind == "key_sequence_end_start":
                keep = (j[None, :] < flat[:batch, None]) & (j[None, :] >= flat[batch:2 * batch, None])
            else:
                ks = flat[2 * batch + 1:3 * batch + 2]
                keep = j[None, :] < np.minimum(flat[:batch], ks[1:] - ks[:-1])[:, None]
            scores = np.where(keep[:, None, None, :], scores, filt)
    if t_idx is not None:  # causal within the valid rows
        i = np.arange(s_len)
        visible = (j[None, None, :] <= t_idx[:, None, None] + i[None, :, None])[:, None]
    else:
        visible = np.ones((1, 1, 1, t), bool)
    return _Parts(q=q, kk=kk, vv=vv, ke=ke, ve=np.repeat(vv, group, axis=1), scores=scores,
                  visible=np.broadcast_to(visible, scores.shape), dtype=dtype, scale=sc,
                  rmag=rmag)


def _softmax(parts: _Parts):
    """(p, d): the softmax weights over the visible keys and the shifted scores."""
    with np.errstate(all="ignore"):
        vis = parts["visible"]
        s = np.where(vis, parts["scores"], -np.inf)
        d = np.where(vis, s - np.max(s, axis=-1, keepdims=True), 0.0)
        e = np.where(vis, np.exp(d), 0.0)
        return e / np.sum(e, axis=-1, keepdims=True), d


def _weighted_values(p, ve, visible):
    """sum_j p[..., i, j] * ve[..., j, :] over the keys row i sees only: a key a row does not
    see weighs 0 and its value is never read (a shared cache's rows past the past length hold
    anything: 0 * NaN would be NaN); a non-finite value a row sees reaches its output."""
    finite = np.isfinite(ve)
    visible = np.broadcast_to(visible, p.shape)
    with np.errstate(all="ignore"):
        o = np.einsum("bhij,bhjd->bhid", p, np.where(finite, ve, 0.0))
        for b, h, j, d in zip(*np.nonzero(~finite)):
            seen = visible[b, h, :, j]
            o[b, h, seen, d] += p[b, h, seen, j] * ve[b, h, j, d]
    return o


def reference(query=None, key=None, value=None, *, stacked_query_key=None, stacked_key_value=None,
              stacked_query_key_value=None, bias=None, mask=None, relative_position_bias=None, past_key=None,
              past_value=None, past_sequence_lengths=None, head_count, key_value_head_count=None, mask_type=None,
              scale=None, mask_filter_value=-10000.0, present=False, given=None):
    """The attention in float64 (the module docstring's semantics), results in the inputs'
    float type: the output [B, S, Hq * Dv], with `present` the tuple (output, present_key,
    present_value)."""
    parts = _prepare(query, key, value, stacked_query_key=stacked_query_key, stacked_key_value=stacked_key_value,
                     stacked_query_key_value=stacked_query_key_value, bias=bias, mask=mask,
                     relative_position_bias=relative_position_bias, past_key=past_key, past_value=past_value,
                     past_sequence_lengths=past_sequence_lengths, head_count=head_count,
                     key_value_head_count=key_value_head_count, mask_type=mask_type, scale=scale,
                     mask_filter_value=mask_filter_value)
    p, _ = _softmax(parts)
    o = _weighted_values(p, parts["ve"], parts["visible"])
    b, h, s, dv = o.shape
    dtype = parts["dtype"]
    out = o.transpose(0, 2, 1, 3).reshape(b, s, h * dv).astype(dtype)
    if not present:
        return out
    return out, parts["kk"].astype(dtype), parts["vv"].astype(dtype)


def tolerance(expected: np.ndarray, inputs, arguments: dict):
    """The documented precision (module docstring) of the output, per element; the present
    outputs are copies: bit-exact without a bias, else one float32 addition (half an ULP of
    the result; FLOAT16: one float16 ULP, float32's sum rounded again)."""
    args = {k: v for k, v in arguments.items() if k not in TENSORS1 and k not in ("present", "given")}
    names = [n for n in TENSORS1 if not (n in arguments and arguments[n] is None)]
    named = dict(zip(names, [np.asarray(a) for a in inputs]))
    parts = _prepare(**named, **args)
    bq, hq, sq, _ = parts["q"].shape
    if expected.shape[-3:] != (bq, sq, hq * parts["vv"].shape[-1]):  # a present output: a copy
        return None if named.get("bias") is None else _copy_bound(expected)
    return _output_bound(expected, parts)


def _copy_bound(expected):
    e = np.abs(expected.astype(np.float64))
    if expected.dtype == np.float16:  # float32's sum rounded to float16: one float16 ULP off at most
        return _f16_ulp(expected) + 2.0**-126
    return 2.0**-24 * e + 2.0**-126


def _f16_ulp(expected):
    return np.spacing(np.minimum(np.abs(expected), 65504).astype(np.float16)).astype(np.float64)


def _output_bound(expected, parts):
    u, eps = 2.0**-24, 2.0**-23
    q, ke, ve, vis = parts["q"], parts["ke"], parts["ve"], parts["visible"]
    d = q.shape[-1]
    dots = parts["scale"] * np.einsum("bhid,bhjd->bhij", np.abs(q), np.abs(ke))
    p, dd = _softmax(parts)
    with np.errstate(all="ignore"):
        delta = (d + 2) * u * dots + 2 * u * (np.abs(np.where(vis, parts["scores"], 0.0)) + parts["rmag"])
        e = delta + eps * (3 + 2.5 * np.abs(dd)) + 2 * u
        av = np.abs(ve)
        a = np.einsum("bhij,bhjd->bhid", p, av)
        b = np.einsum("bhij,bhjd->bhid", p * e, av)
        pe = np.sum(p * e, axis=-1, keepdims=True)
        t = ke.shape[2]
        bound = 1.05 * (b + pe * a + (2 * t + 40) * u * a) + 2.0**-126
    bb, h, s, dv = bound.shape
    bound = bound.transpose(0, 2, 1, 3).reshape(bb, s, h * dv).reshape(expected.shape)
    if expected.dtype == np.float16:
        bound = bound + _f16_ulp(expected)
    return np.nan_to_num(bound, nan=np.inf)


def sample(desc, rng) -> list:
    """Floats in [-1, 1] (scores of moderate size: the softmax is not one-hot); masks of 0
    and 1 (BOOLEAN) or lengths within the keys; past lengths within the cache."""
    op, inputs, _ = _version(desc)
    g = geometry(desc)
    out = []
    for f in inputs:
        td = getattr(desc, f)
        if td is None:
            continue
        n = td.required_elements
        if f == "mask_tensor":
            if desc.mask_type == "boolean":
                out.append(rng.integers(0, 2, n).astype(np.int32))
            elif desc.mask_type == "key_query_sequence_length_start_end":
                b = g.batch
                lengths = rng.integers(1, g.key_count + 1, b)
                starts = np.concatenate([[0], np.cumsum(rng.integers(1, g.key_count + 1, b))])
                qs = np.concatenate([[0], np.cumsum(np.full(b, g.q_len))])
                vals = np.concatenate([lengths, qs, starts]).astype(np.int32)
                buf = np.zeros(n, np.int32)
                st = td.effective_strides[0]
                buf[np.arange(len(vals)) * st] = vals
                out.append(buf)
            else:
                buf = rng.integers(1, g.key_count + 1, n).astype(np.int32)
                if desc.mask_type == "key_sequence_end_start":  # start below end
                    buf = rng.integers(0, max(1, g.key_count // 2), n).astype(np.int32)
                    st = td.effective_strides
                    for b in range(g.batch):
                        buf[b * st[1]] = rng.integers(g.key_count // 2 + 1, g.key_count + 1)
                out.append(buf)
        elif f == "past_sequence_lengths_tensor":
            out.append(rng.integers(0, max(1, g.present_len - g.kv_len + 1), n).astype(np.int32))
        else:
            out.append(rng.uniform(-1.0, 1.0, n).astype(td.data_type.numpy))
    return out


# ---------------------------------------------------------------------------- API
TENSORS0 = ("query", "key", "value", "stacked_query_key", "stacked_key_value", "stacked_query_key_value", "bias",
            "mask", "relative_position_bias", "past_key", "past_value")
TENSORS1 = (*TENSORS0, "past_sequence_lengths")


def _call(tensors: dict, attributes: dict, device) -> Call:
    given = tuple(n for n, v in tensors.items() if v is not None)
    items = [(n, v, np.int32) if n in ("mask", "past_sequence_lengths") else (n, v)
             for n, v in tensors.items() if v is not None]
    return Call(items, {**attributes, "given": given}, device)


def multihead_attention(query=None, key=None, value=None, *, head_count, key_value_head_count=None,
                        stacked_query_key=None, stacked_key_value=None, stacked_query_key_value=None, bias=None,
                        mask=None, mask_type=None, relative_position_bias=None, past_key=None, past_value=None,
                        past_sequence_lengths=None, scale=None, mask_filter_value=-10000.0, present=False,
                        device=None):
    """DML_MULTIHEAD_ATTENTION1 (FL 6.3): softmax(scale Q K^T + relative_position_bias +
    mask) V per query head, query [B, S, head_count * D], key [B, L, Hkv * D], value [B, L,
    Hkv * Dv] (Hkv = key_value_head_count, default head_count; grouped heads share a
    key/value head), or stacked ([B, S, H, 2 or 3, D]); bias [(Hq + Hkv) D + Hkv Dv] added
    to the new query/key/value; mask INT32 by mask_type ("boolean" (default with a mask),
    "key_sequence_length", "key_sequence_end_start", "key_query_sequence_length_start_end");
    past_key/past_value [B, Hkv, P, D] concatenated before the keys, or with
    past_sequence_lengths (INT32 [B]) a shared cache written at each batch's length, causal;
    scale default 1/sqrt(D). Returns the output [B, S, head_count * Dv], or with
    present=True (output, present_key, present_value). Float32 arithmetic: precision in
    gpudml/ops/multihead_attention.py."""
    tensors = dict(zip(TENSORS1, (query, key, value, stacked_query_key, stacked_key_value, stacked_query_key_value,
                                  bias, mask, relative_position_bias, past_key, past_value, past_sequence_lengths)))
    return _call(tensors, {"head_count": head_count, "key_value_head_count": key_value_head_count,
                           "mask_type": mask_type, "scale": scale, "mask_filter_value": mask_filter_value,
                           "present": present}, device)


def multihead_attention0(query=None, key=None, value=None, *, head_count, stacked_query_key=None,
                         stacked_key_value=None, stacked_query_key_value=None, bias=None, mask=None, mask_type=None,
                         relative_position_bias=None, past_key=None, past_value=None, scale=None,
                         mask_filter_value=-10000.0, present=False, device=None):
    """DML_MULTIHEAD_ATTENTION (FL 6.1): multihead_attention with one head count (no grouped
    heads) and no shared cache; the same arguments otherwise."""
    tensors = dict(zip(TENSORS0, (query, key, value, stacked_query_key, stacked_key_value, stacked_query_key_value,
                                  bias, mask, relative_position_bias, past_key, past_value)))
    return _call(tensors, {"head_count": head_count, "mask_type": mask_type, "scale": scale,
                           "mask_filter_value": mask_filter_value, "present": present}, device)


def reference0(query=None, key=None, value=None, *, head_count, stacked_query_key=None, stacked_key_value=None,
               stacked_query_key_value=None, bias=None, mask=None, mask_type=None, relative_position_bias=None,
               past_key=None, past_value=None, scale=None, mask_filter_value=-10000.0, present=False, given=None):
    """multihead_attention0's reference (reference's with one head count)."""
    return reference(query, key, value, stacked_query_key=stacked_query_key, stacked_key_value=stacked_key_value,
                     stacked_query_key_value=stacked_query_key_value, bias=bias, mask=mask,
                     relative_position_bias=relative_position_bias, past_key=past_key, past_value=past_value,
                     head_count=head_count, mask_type=mask_type, scale=scale, mask_filter_value=mask_filter_value,
                     present=present)


def _infer(version: int):
    names = TENSORS1 if version else TENSORS0

    def infer_output(*descs, given=None, head_count, key_value_head_count=None, mask_type=None, scale=None,
                     mask_filter_value=-10000.0, present=False, **left_out):
        """The desc of the functional call: the given tensors by name (`given`, or every
        name not passed as None, in order), the output [B, S, Hq * Dv] in the query's
        type, and with `present` the present outputs."""
        op = OP1 if version else OP0
        absent = {n for n, v in left_out.items() if v is None}
        unknown = set(left_out) - set(names)
        if unknown:
            raise InvalidArgumentError(f"{op}: unknown arguments {sorted(unknown)}")
        if given is None:
            given = tuple(n for n in names if n not in absent)[:len(descs)]
        named = dict(zip(given, descs))
        fields = {n + "_tensor": named.get(n) for n in names}
        hq = as_int(head_count, f"{op}: head_count")
        hkv = hq if key_value_head_count is None else as_int(key_value_head_count, f"{op}: key_value_head_count")
        heads = {"query_head_count": hq, "key_value_head_count": hkv} if version else {"head_count": hq}
        kind = mask_type if mask_type is not None else ("boolean" if named.get("mask") is not None else "none")
        first = next((d for d in descs), None)
        dt = first.data_type if first is not None else DataType.FLOAT32
        probe_cls = MultiheadAttention1OperatorDesc if version else MultiheadAttentionOperatorDesc
        stub = TensorDesc(dt, [1, 1, 1])
        probe = probe_cls(**fields, output_tensor=stub, output_present_key_tensor=None,
                          output_present_value_tensor=None, scale=1.0, mask_filter_value=mask_filter_value,
                          **heads, mask_type=kind)
        try:
            g = geometry(probe)
        except InvalidArgumentError:
            g = None
        if g is None:  # left for validate to name
            out, pk, pv = stub, None, None
        else:
            out = TensorDesc(dt, [g.batch, g.q_len, g.q_heads * g.value_head_size])
            pk = TensorDesc(dt, [g.batch, g.kv_heads, g.present_len, g.head_size]) if present else None
            pv = TensorDesc(dt, [g.batch, g.kv_heads, g.present_len, g.value_head_size]) if present else None
        sc = (1.0 / math.sqrt(g.head_size) if g is not None else 1.0) if scale is None else scale
        return probe_cls(**fields, output_tensor=out, output_present_key_tensor=pk, output_present_value_tensor=pv,
                         scale=sc, mask_filter_value=mask_filter_value, **heads, mask_type=kind)
    return infer_output


def _arguments(version: int):
    names = TENSORS1 if version else TENSORS0

    def arguments(desc) -> dict:
        out = {n: None for n in names if getattr(desc, n + "_tensor") is None}
        hq, hkv = desc.heads
        out["head_count"] = hq
        if version:
            out["key_value_head_count"] = hkv
        out.update({"mask_type": None if desc.mask_type == "none" else desc.mask_type, "scale": desc.scale,
                    "mask_filter_value": desc.mask_filter_value,
                    "present": desc.output_present_key_tensor is not None})
        return out
    return arguments


def _from_cli(version: int):
    def from_cli(x: TensorDesc, a: dict):
        """--shape is the query [B, S, hidden] (default hidden 16 over --heads 2); keys and
        values as the query unless --kv-length; --past P adds past key/value."""
        sizes = list(x.sizes) if x.rank == 3 else [1, 4, 16]
        heads = int(a["heads"] or 2)
        b, s, hidden = sizes
        kv = int(a["kv_length"] or s)
        q = TensorDesc(x.data_type, [b, s, hidden])
        k = TensorDesc(x.data_type, [b, kv, hidden])
        past = int(a["past"] or 0)
        extra = {}
        if past:
            cache = TensorDesc(x.data_type, [b, heads, past, hidden // heads])
            extra = {"past_key": cache, "past_value": cache}
        given = ("query", "key", "value", *extra)
        return _infer(version)(q, k, k, *extra.values(), given=given, head_count=heads, present=bool(past))
    return from_cli


_CLI = (CliArg("--heads", "query heads (default 2)", "number"),
        CliArg("--kv-length", "key/value rows (default: the query's)", "number"),
        CliArg("--past", "past key/value rows (default 0: none; P > 0 adds the present outputs)", "number"))
PAGE = "ns-directml-dml_multihead_attention_operator_desc.md"


def _spec(version: int) -> OpSpec:
    op = OP1 if version else OP0
    return OpSpec(
        name=op, key="multihead_attention1" if version else "multihead_attention0",
        desc=MultiheadAttention1OperatorDesc if version else MultiheadAttentionOperatorDesc,
        support=SUPPORT1 if version else SUPPORT0, infer_output=_infer(version), validate=validate,
        reference=reference if version else reference0,
        functional=multihead_attention if version else multihead_attention0,
        tensors=TENSORS1 if version else TENSORS0, arguments=_arguments(version), planner=ATTENTION,
        cli=Cli(_CLI, _from_cli(version), "--shape 1,4,16 --heads 2"),
        page="DML_MULTIHEAD_ATTENTION1_OPERATOR_DESC" if version else "DML_MULTIHEAD_ATTENTION_OPERATOR_DESC",
        tolerance=tolerance, sample=sample)


SPECS = (_spec(0), _spec(1))
