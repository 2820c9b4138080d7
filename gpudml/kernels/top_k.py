"""The top-k family (DML_TOP_K, DML_TOP_K1): along one axis of the input, each sequence's
k best elements, their values and their indices, sorted best first.

The order. Every element becomes a *record*: an order key and its index along the axis.
The key is an unsigned integer whose order is the elements' order (one 32-bit word, two for
64-bit elements): unsigned integers as they are, signed ones with the sign bit flipped,
floats (16 and 32 bits) as their sign-magnitude bits made monotone, -0.0 keyed as +0.0 (the
two are equal: a tie), every NaN keyed above +infinity (numpy's and PyTorch's order: NaN is
the largest value). Where the largest elements are wanted (DECREASING), the key is
complemented, so that the best record is always the smallest (key, index) pair: a tie goes
to the lower index whatever the direction, as DirectML's pages say. Records are distinct
(no two share an index), so "best k" and their order are one answer, and every strategy
gives it bit for bit: the values are the input's bits at the chosen indices.

The plan, in every strategy: a *select* dispatch splits each row (sequence) into chunks
and writes each chunk's best min(k, chunk) records, sorted, as a list into a scratch
buffer; then *merge* dispatches combine `group` consecutive lists of a row into one (the
best min(k, their elements) records, sorted), until one list is left per row; the last
dispatch writes the outputs (the values read back from the input at the records'
indices) instead of a list. A merge runs one invocation per record: its place in the
merged list is its place in its own list plus, for each other list of its group, the
number of records there that precede it (a binary search); records placed at k or beyond
are dropped. No invocation loops over more than a chunk, or a group's binary searches, so
every loop stays inside the loop budget (base.LOOP_BUDGET: llvmpipe ends an invocation's
loops after 65,535 iterations), whatever the axis' length and k.

Strategies (both select kernels write the same lists; the merges are shared):
- `rows` (CPU-class): one invocation per chunk of `chunk` elements walks it once, keeping
  its best records in a sorted private buffer of KB = the power of two at or above k (at
  most KMAX), inserted by an unrolled compare-and-swap chain; an element that does not
  beat the buffer's last record costs one comparison. Where k > KMAX, chunks are KMAX
  elements, each sorted whole.
- `workgroups` (GPU-class): one workgroup per chunk of up to SORT elements: the chunk's
  records in workgroup memory, bitonic-sorted by the workgroup (every invocation a pair
  of each step, a barrier between steps), the first min(k, chunk) written out.
Plan options: chunk (`rows`: elements per invocation), group (lists per merge).
"""

from __future__ import annotations

from typing import NamedTuple

from ..errors import InternalError, UnsupportedError
from ..tensor_desc import TensorDesc
from .base import LOOP_BUDGET, KernelFamily, count_option, element_bits, power_of_two_option
from .builder import Dispatch, KernelPlan, input_buffer, output_buffer, scratch_buffer

STRATEGIES = ("rows", "workgroups")
#: The largest private buffer of `rows` (records), and the chunk of k beyond it.
KMAX = 128
#: Elements per `rows` invocation by default where k <= KMAX: about the most the loop
#: budget allows (MAX_CHUNK), a multiple of 32 (whole blocks). Measured on lavapipe (2
#: cores, interleaved GPU times, k = 5): [64, 32000] 0.47x one Reduce MAX at 16000 against
#: 0.87x at 8192, 1.34x at 4096 and 1.80x at 2048 (longer chunks: fewer records to merge).
CHUNK = 16000
#: Lists merged at once by default (each record makes group - 1 binary searches).
GROUP = 16
#: The most records a `workgroups` chunk sorts (power of two), and its workgroup size.
SORT = 1024
SORT_WG = 256
#: Workgroup size of the merges, and of `rows`' select (one SIMD group of llvmpipe's: its
#: few long invocations spread over the CPU's threads).
WORKGROUP_SIZE = 64
ROWS_WG = 8
_OVERHEAD = 64
#: The largest `rows` chunk: each element costs up to two loop passes, each block of 32 one.
MAX_CHUNK = (LOOP_BUDGET - _OVERHEAD) * 32 // 65
#: Largest axis: an index must stay below the empty record's 0xFFFFFFFF.
MAX_AXIS = 2**32 - 2


class TopK(NamedTuple):
    """What the family computes (module docstring): `input`, the outputs `values` (the
    input's type) and `indices` (UINT32 or UINT64), each with its own strides; the axis,
    k and whether the largest elements are wanted (`decreasing`)."""

    op: str
    input: TensorDesc
    values: TensorDesc
    indices: TensorDesc
    axis: int
    k: int
    decreasing: bool

    @property
    def length(self) -> int:
        return self.input.sizes[self.axis]

    @property
    def rows(self) -> int:
        return self.input.element_count // self.length


def _key_kind(p: TopK) -> str:
    dt = p.input.data_type
    return "float" if dt.is_float else ("sint" if dt.is_signed else "uint")


def _buffer(p: TopK) -> int:
    """KB: the private buffer of `rows` (a power of two, at most KMAX)."""
    return min(KMAX, 1 << max(0, p.k - 1).bit_length())


def _chunk(p: TopK, strategy: str, chunk) -> int:
    """Elements per select chunk."""
    if strategy == "workgroups":
        return max(2, min(SORT, 1 << max(0, p.length - 1).bit_length()))
    if p.k > KMAX:
        return KMAX
    count_option(p.op, "chunk", chunk)
    wanted = CHUNK if chunk is None else chunk
    if wanted > MAX_CHUNK:
        raise UnsupportedError(f"{p.op}: option chunk = {chunk} passes one invocation's loop budget "
                               f"({MAX_CHUNK} elements: each is compared, and may be inserted, in a loop pass)")
    return max(1, min(wanted, p.length))


def _group(p: TopK, group) -> int:
    power_of_two_option(p.op, "group", group, 1024)
    g = GROUP if group is None else group
    if g < 2:
        raise UnsupportedError(f"{p.op}: option group = {group}: a merge combines 2 lists or more")
    return g


def strategies_for(p: TopK, caps, chunk=None, group=None) -> tuple[str, ...]:
    """Both strategies run every problem (`rows` first on software adapters and without
    caps, `workgroups` first on GPUs)."""
    if not 1 <= p.k <= p.length or p.length > MAX_AXIS:
        raise UnsupportedError(f"{p.op}: k = {p.k} over an axis of {p.length} elements")
    _chunk(p, "rows", chunk)
    _group(p, group)
    cpu = caps is None or caps.is_software
    order = ("rows", "workgroups") if cpu else ("workgroups", "rows")
    # `workgroups` holds a chunk's records in workgroup memory (words per record, 4 bytes each)
    size = _chunk(p, "workgroups", None)
    fits = caps is None or (caps.max_workgroup_storage_size >= size * (3 if element_bits(p.input) == 64 else 2) * 4
                            and caps.max_invocations_per_workgroup >= min(SORT_WG, size // 2))
    return order if fits else ("rows",)


def _row_axes(desc: TensorDesc, axis: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The sizes and strides of every axis but `axis` ((1,), (0,) for a rank-1 tensor)."""
    sizes = tuple(n for d, n in enumerate(desc.sizes) if d != axis) or (1,)
    strides = tuple(s for d, s in enumerate(desc.effective_strides) if d != axis) or (0,)
    return sizes, strides


def plan(p: TopK, caps, strategy: str, chunk=None, group=None) -> KernelPlan:
    if strategy not in strategies_for(p, caps, chunk, group):
        raise InternalError(f"{p.op}: strategy {strategy} cannot run {p}")
    bits = element_bits(p.input)
    wide = bits == 64
    words = 3 if wide else 2  # a record: key (1 or 2 words), index
    n, k, rows = p.length, p.k, p.rows
    size = _chunk(p, strategy, chunk)
    g = _group(p, group)
    lists = -(-n // size)
    capacity = min(k, size)
    row_sizes, in_rs = _row_axes(p.input, p.axis)
    _, val_rs = _row_axes(p.values, p.axis)
    _, idx_rs = _row_axes(p.indices, p.axis)
    params = {"kind": _key_kind(p), "bits": bits, "wide": wide, "words": words, "rr": len(row_sizes),
              "decreasing": p.decreasing, "index_bits": element_bits(p.indices)}
    common = {"n": n, "k": k, "rows": rows, "row_sizes": row_sizes, "in_rs": in_rs, "val_rs": val_rs,
              "idx_rs": idx_rs, "in_stride": p.input.effective_strides[p.axis],
              "val_stride": p.values.effective_strides[p.axis], "idx_stride": p.indices.effective_strides[p.axis]}
    outs = (output_buffer(0, "values", bits, "stores"), output_buffer(1, "indices", element_bits(p.indices), "stores"))
    scratch = [0, 0]  # the bytes of each scratch buffer: its largest set of lists
    scratch[0] = rows * lists * capacity * words * 4
    final = lists == 1
    sel_out = outs if final else (scratch_buffer(0, "dst", writable=True),)
    sel_uni = {**common, "chunk": size, "lists": lists, "capacity": capacity}
    if strategy == "rows":
        # 16-byte loads where every whole block of 32 elements starts on a 16-byte boundary
        vec = bits == 32 and common["in_stride"] == 1 and all(s % 4 == 0 for s in in_rs) and size % 32 == 0
        reads = (input_buffer(0, "input"),) + ((input_buffer(0, "input_vec", "blocks"),) if vec else ())
        dispatches = [Dispatch("top_k_select.wgsl.j2", {**params, "final": final, "kb": _buffer(p), "vec": vec},
                               (*reads, *sel_out), sel_uni, rows * lists, ROWS_WG)]
    else:
        wg = max(1, min(SORT_WG, size // 2))
        dispatches = [Dispatch("top_k_sort.wgsl.j2", {**params, "final": final, "size": size, "wg": wg},
                               (input_buffer(0, "input"), *sel_out), sel_uni, rows * lists * wg, wg)]
    span, src = size, 0
    while lists > 1:
        out_lists = -(-lists // g)
        final = out_lists == 1
        dst = (scratch_buffer(1 - src, "dst", writable=True),) if not final else outs
        uni = {**common, "lists": lists, "span": span, "capacity": min(k, span), "group": g,
               "out_lists": out_lists, "out_capacity": min(k, span * g)}
        records = rows * lists * min(k, span)
        if not final:
            scratch[1 - src] = max(scratch[1 - src], rows * out_lists * min(k, span * g) * words * 4)
        dispatches.append(Dispatch("top_k_merge.wgsl.j2", {**params, "final": final},
                                   (input_buffer(0, "input"), scratch_buffer(src, "src", writable=False), *dst),
                                   uni, records, WORKGROUP_SIZE))
        lists, span, src = out_lists, span * g, 1 - src
    used = 0 if len(dispatches) == 1 else 1 if len(dispatches) == 2 else 2
    return KernelPlan(tuple(dispatches), scratch_bytes=tuple(scratch[:used]))


class TopKFamily(KernelFamily):
    """The top-k family: the module's functions over a `TopK`."""

    strategies = STRATEGIES
    options = ("chunk", "group")

    def strategies_for(self, problem: TopK, caps, chunk=None, group=None) -> tuple[str, ...]:
        return strategies_for(problem, caps, chunk, group)

    def plan(self, problem: TopK, caps, strategy: str, chunk=None, group=None) -> KernelPlan:
        return plan(problem, caps, strategy, chunk, group)

    def variants(self, problem: TopK, caps, strategy: str) -> tuple[dict, ...]:
        """Other chunk lengths of `rows` and other merge widths."""
        out = [{"group": g} for g in (4, 64)]
        if strategy == "rows" and problem.k <= KMAX:
            out += [{"chunk": c} for c in (4096, 8192)]
        return tuple(out)


FAMILY = TopKFamily()

