"""The GEMM family: Y = activation(alpha * A x B + beta * C) over batches of matrices, the
compute-bound kernels of DML_OPERATOR_GEMM (ops/gemm.py) and, as implicit GEMM, of the
operators built on matrix products (convolution: see "Operands" below).

A description arrives as a `Problem`: A as [batch..., M, K] and B as [batch..., K, N] *as
the product reads them* (a transpose is the two last axes' strides swapped: no copy), the
optional C and the output as [batch..., M, N], each tensor with its own strides (0
broadcasts: a batch axis, C's rows or columns), alpha and beta (float32 values), and the
fused activation as a WGSL expression over `x` (the element-wise family's formula, with
its attributes). FLOAT32 and FLOAT16 tensors; every product and sum is computed in f32
(float16 read into f32, the result rounded once, to nearest even, on the store).

The batch axes merge where contiguous in every tensor (merge_axes); each output element is
`activation(alpha * sum_k A[m, k] B[k, n] + beta * C[m, n])`, the epilogue applied in the
kernel's store (no extra dispatch). Strategies:

- `registers` (CPU-class): each invocation computes a register tile of TM x TN outputs
  (`tile`, default CPU_TILE, 16 x 8, smaller for narrower matrices), walking its chunk of
  K once, 4 k per step: neighbouring invocations own neighbouring tiles of a row. llvmpipe
  runs 8 invocations as the SIMD lanes of one vector and each lane's load is a load of its
  own (a loop over the lanes), so the kernel's cost is its loads per multiply-add:
  - operands as 16-byte blocks (`_blocks`: FLOAT32, where the strides allow): A along K
    (a row's 4 k) or, transposed, along M (4 rows at one k), B along N (4 columns) or,
    transposed, along K; one load per 4 elements;
  - A shared across the subgroup (`subgroups`, where the adapter has the feature: lavapipe,
    not GL's llvmpipe; float and integer operands, not the integer path's packed words):
    where the tile columns fill whole subgroups of SHARE_LANES (tiles_n
    a multiple of it; TM too), the lanes of one subgroup own neighbouring tiles of one tile
    row and need the same A, so lane l reads the pieces l, l + SHARE_LANES, ... of each
    step (a block or 4 elements: an implicit GEMM's im2col index arithmetic once per
    subgroup, not per lane) and hands them on through subgroupBroadcast; per step of 4 k a
    16 x 8 tile then reads 2 pieces of A and 8 blocks of B per lane for 512 multiply-adds
    (the element kernel of 8 x 8: 64 loads for 256);
  - every sum still adds its products in the order of k (the element kernel's bits: a
    step's products of one output go in order k, k + 1, k + 2, k + 3, and the K % 4 last
    ones element by element).
  The tile's stores: one `finish` per output, unrolled, where the store is plain; one loop
  over an array of the sums where it reads tensors of its own (a fused epilogue: its loads
  and index arithmetic inlined 128 times took lavapipe's LLVM up to 149 s a kernel;
  _looped_puts). K is cut into chunks of about CPU_CHUNK_K (split-K, a little cache blocking). No
  workgroup memory (on llvmpipe a workgroup's invocations run as SIMD lanes one group
  after another: sharing through memory costs barriers and buys little there).
  Measured on lavapipe (2 shared vCPUs, GPU timestamps, each pair interleaved in one
  process, median of 9: this kernel against the element kernel of 8 x 8 tiles and chunks
  of 128): 1024^3 0.26x the time, [4096, 1024] x [1024, 1024] 0.34x, the convolutions W20
  (3x3 256->256 at 14 x 14) 0.29x, W21 (1x1 1024->256) 0.24x, W22 (7x7/2 3->64 at 224 x
  224: elements, shared) 0.39x; GL's llvmpipe (blocks, no subgroups; wall clock) 1024^3 and
  W21 0.55x.
  Alone, on 1024^3: blocks 0.53-0.72x the element kernel, then sharing 0.5-0.6x the blocks.
- `workgroup` (GPU-class): a workgroup of GPU_THREADS x GPU_THREADS invocations computes a
  tile of (GPU_THREADS TM) x (GPU_THREADS TN) outputs; per step of `block_k` (BK) along K
  it loads the A and B tiles into workgroup memory (each invocation its share, neighbouring
  invocations on neighbouring addresses of the tensor's contiguous axis; 16-byte vector
  loads where that axis has stride 1 and the tile's rows start on 16-byte boundaries:
  `vec`), then each invocation multiplies its TM x TN register tile from there (rows ty,
  ty + 16, ..., columns tx, tx + 16, ...: conflict-free reads, coalesced stores). With
  `subgroups` (where the adapter has the feature "subgroup": lavapipe, Vulkan/Metal/D3D12
  GPUs; never GL's llvmpipe, where the option is not offered and True is an error), the
  SG_SHARE (4) invocations of a row that share A's operands (consecutive tx, one ty) read
  one k's TM operands each from workgroup memory per 4 steps of k and hand them on
  through subgroupShuffle: TM / 4 + TN workgroup-memory reads per step instead of TM + TN.
  The groups lie whole inside a subgroup of 4 or more (builder.py's _entry numbers a
  workgroup's invocations subgroup by subgroup: lavapipe 8, or 4 at 128-bit vectors; GPUs
  16 to 64); where the subgroups are narrower or not all full (sg_size 1) the kernel reads
  every operand itself. Either way the same products in the same order: the same bits.

Both cut K into `chunks` where needed (split-K): llvmpipe stops an invocation's loops after
65,535 iterations in all (base.LOOP_BUDGET), so a K longer than one invocation's budget
goes through partial sums: a first dispatch writes each chunk's sums to scratch (f32), a
combine dispatch (one invocation per output element) adds a position's chunks in order and
applies the epilogue. On GPUs a few long products also take chunks for parallelism.

Operands (for implicit GEMM): the kernels read A and B only through `a_row(bo, m)` /
`a_load(row, k)` and `b_col(bo, n)` / `b_load(col, k)` (shaders/lib/gemm.wgsl.j2's
`operands`: a row base and a stride; the handles' types are the operands' own) and store
through `out_offset(bo, m, n)` (its `output_offset`); `registers` also reads 16-byte blocks
through `a_block(row, k)` / `b_block(col, k)` along the axes `_blocks` picks (plain operands)
or the family gives (`Problem.blocks`); a family that reads A as an im2col
view of a convolution's input gives its own functions through `Problem.operands` (a
template module with `operands(p)` and `output_offset(p)` macros; kernels/convolution.py)
and its own uniforms, buffers and compile-time parameters (`extra_uniforms`,
`extra_inputs`, `extra_params`), and keeps the tiling, the split-K and the epilogue.

Plan options (lab variants, autotuning): tile=(TM, TN) (each 1, 2, 4 or 8; `registers` 16
too), block_k (the workgroup strategy's BK: 8, 16 or 32), chunks (split-K chunks, at
least what the loop budget needs), subgroups (share A's operands: `workgroup` through
subgroupShuffle, `registers` through subgroupBroadcast; default where the adapter has
subgroups, False a variant there).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import InternalError, InvalidArgumentError, UnsupportedError
from ..tensor_desc import TensorDesc, merge_axes
from .base import LOOP_BUDGET, KernelFamily, ProblemPlanner, count_option
from .builder import Dispatch, KernelPlan, f32_bits, input_buffer, output_buffer, parts, scratch_buffer
from .elementwise import Attribute, attribute_uniforms
from .epilogue import attach as attach_epilogue
from .epilogue import check as check_epilogue
from .quantized import Quantized, packed_dot

STRATEGIES = ("registers", "workgroup")
OPTIONS = ("tile", "block_k", "chunks", "subgroups")
TILE_SIDES = (1, 2, 4, 8)
#: `registers` also takes 16 (rows: a multiple of SHARE_LANES shares A's reads).
CPU_TILE_SIDES = (1, 2, 4, 8, 16)
BLOCK_KS = (8, 16, 32)
#: The register tile of `registers` (at most: no side longer than the matrix's, rounded up
#: to a power of two, so that a product of one row computes one), and of `workgroup`'s
#: invocations. Measured on lavapipe (2 vCPUs, shared; float32 1024^3, interleaved, blocks
#: and shared A, against 16 x 8): 8 x 8 1.02-1.24x the time, 16 x 4 1.35x, 32 x 4 1.12x,
#: 32 x 8 1.19x, 16 x 16 1.20x (more accumulators than a lane keeps in registers); W20
#: 8 x 8 1.4x; GL (no subgroups) 8 x 8 1.0-1.2x. GPU_TILE is unmeasured on a GPU (the
#: autotuner's variants time 2 x 2 to 8 x 8).
CPU_TILE = (16, 8)
GPU_TILE = (4, 4)
GPU_BLOCK_K = 16
#: `workgroup`: GPU_THREADS x GPU_THREADS invocations per workgroup.
GPU_THREADS = 16
CPU_WORKGROUP = 64
#: `workgroup` with subgroups: the invocations of a row of the workgroup that share their A
#: operands through subgroupShuffle, SG_SHARE consecutive ones (every subgroup size from 4
#: up holds such groups whole: lavapipe 8, or 4 at 128-bit vectors; GPUs 16 to 64).
#: Measured on lavapipe only (GPU class, 2 shared vCPUs, noisy): 512^3 with against without,
#: interleaved, 320/376, 343/342, 222/214 ms; W15 (1024^3) 1803 ms after against 2050 before,
#: one run each: within the noise. The target is GPUs (fewer workgroup-memory reads); unmeasured there.
SG_SHARE = 4
#: Loop iterations an invocation spends besides its K loop (set-up, the epilogue, and the
#: tile's stores where they loop: _looped_puts, at most 16 x 16).
_OVERHEAD = 64 + 16 * 16
#: Split-K for parallelism: a GPU aims at this many workgroups, a chunk at least
#: MIN_CHUNK_K of K; CPU adapters cut K only where the loop budget needs it.
GPU_TARGET_WORKGROUPS = 256
MIN_CHUNK_K = 256
#: `registers` cuts K into chunks of about this length (split-K as cache blocking: a SIMD
#: group of lanes walks its K rows of B before the next group reads the neighbouring lines
#: of the same rows). It paid with the element kernel (4 x 4 tiles, 1024^3: 1 chunk 8.1 s,
#: 8 chunks of 128 2.07 s); with blocks and shared A (16 x 8, interleaved against 8 chunks
#: of 128): 1024^3 4 chunks 0.81x, 2 0.76x, 1 0.72x the time, 16 1.34x; W20 (K 2304) 9
#: chunks 0.87x, 4 0.80x, 2 0.78x, 1 0.77x the 18 of 128; 2048^3 (4 chunks: the scratch
#: limit) 2 chunks 0.94x, 1 1.03x. Fewer chunks also leave fewer workgroups to share out.
CPU_CHUNK_K = 512
#: `registers` reads its operands as 16-byte blocks where their layout allows (_blocks),
#: 4 k per step (False: the element kernel, element by element, one k per step; kept for
#: interleaved comparisons: monkeypatch it between compiles).
CPU_BLOCKS = True
#: `registers` with subgroups: the lanes of a subgroup that share A's reads (lavapipe's
#: subgroups at 256-bit vectors; a kernel checks sg_size at run time and reads its own
#: operands where it differs or the tile columns do not fill whole subgroups).
SHARE_LANES = 8
#: ... as long as the partial sums stay within this much scratch.
CPU_SCRATCH_BYTES = 64 << 20
#: The integer path's packed products (`registers`, 8-bit operands, 4 k per word: _packed)
#: call WGSL's dot4I8Packed where the adapter has it (caps.PACKED_DOT); False: the
#: byte-by-byte fallback everywhere (tests compare both: monkeypatch it between compiles).
PACKED_DOT_INSTRUCTION = True


@dataclass(frozen=True)
class Problem:
    """A GEMM as the kernels see it (module docstring). `a`: [batch..., M, K], `b`:
    [batch..., K, N], `c` (or None) and `output`: [batch..., M, N], one rank, each with its
    strides; `activation`: a WGSL expression over `x` (f32) reading `u_NAME` for its
    `activation_attributes`; `operands`: the template module giving the operand reads."""

    op: str
    a: TensorDesc
    b: TensorDesc
    c: TensorDesc | None
    output: TensorDesc
    alpha: float = 1.0
    beta: float = 1.0
    activation: str | None = None
    activation_attributes: tuple[Attribute, ...] = ()
    operands: str = "lib/gemm.wgsl.j2"
    #: An implicit GEMM's block reads for `registers` (`_blocks`): the axis of A ("k", "m" or
    #: "") and of B ("k", "n" or "") along which its operands template's `a_block` / `b_block`
    #: read 4 float32 elements as one 16-byte block.
    blocks: tuple[str, str] = ("", "")
    #: The integer path (kernels/quantized.py): 8/16/32-bit integer A and B summed in i32,
    #: the zero points subtracted, the store's dequantization or requantization; None: float.
    quantized: Quantized | None = None


@dataclass(frozen=True)
class Layout:
    """The batch axes merged (sizes; strides of the output, A, B, C in that order) and the
    matrix axes' sizes and strides."""

    m: int
    n: int
    k: int
    batch_sizes: tuple[int, ...]
    batch_strides: tuple[tuple[int, ...], ...]
    a_m: int
    a_k: int
    b_k: int
    b_n: int
    c_m: int
    c_n: int
    o_m: int
    o_n: int

    @property
    def batches(self) -> int:
        return math.prod(self.batch_sizes)


def layout(p: Problem) -> Layout:
    r = p.output.rank
    tensors = [p.output, p.a, p.b, p.c]
    strides = [t.effective_strides if t is not None else (0,) * r for t in tensors]
    batch = merge_axes(p.output.sizes[:-2], *(s[:-2] for s in strides)) if r > 2 else []
    if not batch:
        sizes, bstrides = (1,), ((0,),) * 4
    else:
        sizes = tuple(ax.size for ax in batch)
        bstrides = tuple(tuple(ax.strides[i] for ax in batch) for i in range(4))
    (o_m, o_n), (a_m, a_k), (b_k, b_n), (c_m, c_n) = (s[-2:] for s in strides)
    return Layout(p.output.sizes[-2], p.output.sizes[-1], p.a.sizes[-1], sizes, bstrides,
                  a_m, a_k, b_k, b_n, c_m, c_n, o_m, o_n)


# ------------------------------------------------------------------------------ options
def _fit(default: tuple[int, int], lay: Layout) -> tuple[int, int]:
    """The default tile, no side longer than the matrix's rounded up to a power of two."""
    return (min(default[0], 1 << max(0, lay.m - 1).bit_length()),
            min(default[1], 1 << max(0, lay.n - 1).bit_length()))


def _tile(op: str, strategy: str, requested, lay: Layout) -> tuple[int, int]:
    """The requested tile, else the strategy's default (`registers`: fitted to the matrix)."""
    if requested is None:
        return _fit(CPU_TILE, lay) if strategy == "registers" else GPU_TILE
    sides = CPU_TILE_SIDES if strategy == "registers" else TILE_SIDES
    if (not isinstance(requested, (tuple, list)) or len(requested) != 2
            or any(isinstance(v, bool) or v not in sides for v in requested)):
        raise InvalidArgumentError(f"{op}: option tile = {requested!r} must be a pair (TM, TN), each one of "
                                   f"{', '.join(map(str, sides))} ({strategy})")
    return int(requested[0]), int(requested[1])


def _block_k(op: str, requested) -> int:
    if requested is None:
        return GPU_BLOCK_K
    if isinstance(requested, bool) or requested not in BLOCK_KS:
        raise InvalidArgumentError(f"{op}: option block_k = {requested!r} must be one of "
                                   f"{', '.join(map(str, BLOCK_KS))}")
    return int(requested)


def _max_chunk(strategy: str, block_k: int) -> int:
    """The longest stretch of K one invocation walks within the loop budget: `registers`
    one iteration per k; `workgroup` BK + 1 per step of BK."""
    if strategy == "registers":
        return LOOP_BUDGET - _OVERHEAD
    return (LOOP_BUDGET - _OVERHEAD) // (block_k + 1) * block_k


def _scratch_limit(caps) -> int:
    return caps.max_buffer_size if caps is not None else 1 << 30


def chunks_for(p: Problem, lay: Layout, caps, strategy: str, tile, block_k: int, requested=None) -> int:
    """Split-K chunks: at least what the loop budget needs; the requested number, else (on
    the workgroup strategy) enough for GPU_TARGET_WORKGROUPS; at most what one combine pass
    merges and what scratch holds (UnsupportedError where the budget needs more)."""
    need = -(-lay.k // _max_chunk(strategy, block_k))
    outputs = lay.batches * lay.m * lay.n
    per_chunk = 4 * outputs
    limit = _scratch_limit(caps)
    # One chunk needs no scratch (the direct pass): scratch bounds only a split of K.
    most = min(LOOP_BUDGET - _OVERHEAD, max(1, lay.k), max(1, limit // max(1, per_chunk)))
    if need > most:
        raise UnsupportedError(
            f"{p.op}: K = {lay.k} (the products summed per output) needs {need} chunks of partial sums per output "
            f"(strategy {strategy} walks at most {_max_chunk(strategy, block_k)} of K in one invocation's loop "
            f"budget); a chunk takes 4 bytes per output, {outputs} outputs: {per_chunk} bytes, and the adapter's "
            f"max-buffer-size ({limit} bytes) holds {limit // max(1, per_chunk)} chunks. Use a smaller batch (at most "
            f"{limit // (4 * need)} outputs per call) or another strategy (strategy=)")
    if requested is None:
        requested = max(1, min(lay.k // CPU_CHUNK_K, CPU_SCRATCH_BYTES // max(1, per_chunk)))
        if strategy == "workgroup":
            groups = lay.batches * -(-lay.m // (GPU_THREADS * tile[0])) * -(-lay.n // (GPU_THREADS * tile[1]))
            requested = min(-(-GPU_TARGET_WORKGROUPS // groups), max(1, lay.k // MIN_CHUNK_K))
    chunks = max(need, min(int(requested), most))
    return -(-lay.k // -(-lay.k // chunks))  # no empty chunk


def _vec(p: Problem, lay: Layout, tile, block_k: int) -> tuple[bool, bool]:
    """(A, B): does the workgroup strategy read the operand's tile rows as 16-byte blocks?
    FLOAT32 with the contiguous axis along K (A) or N (B) of stride 1, every other stride
    and the tile's extent along that axis whole blocks (the rows of a tile start on block
    boundaries), at least one block."""
    if p.a.data_type.size != 4 or p.operands != "lib/gemm.wgsl.j2":
        return False, False
    bs = lay.batch_strides
    a = (lay.a_k == 1 and lay.a_m % 4 == 0 and all(s % 4 == 0 for s in bs[1]) and block_k % 4 == 0
         and p.a.buffer_bytes >= 16)
    b = (lay.b_n == 1 and lay.b_k % 4 == 0 and all(s % 4 == 0 for s in bs[2])
         and (GPU_THREADS * tile[1]) % 4 == 0 and p.b.buffer_bytes >= 16)
    return a, b


def _packed(p: Problem, lay: Layout, tile) -> str:
    """The integer path's packed layout of B for `registers` ("" where the operands do not
    allow it): 8-bit A and B, A's rows along K contiguous in whole words (a_k 1, a_m and A's
    batch strides multiples of 4); B "k" (its columns along K contiguous the same way) or "n"
    (its rows along N contiguous: b_n 1, b_k and the batch strides multiples of 4, the tile's
    columns whole words). 4 k per word of each operand: kernels/quantized.py."""
    if p.quantized is None or p.a.data_type.size != 1 or p.b.data_type.size != 1 or p.operands != "lib/gemm.wgsl.j2":
        return ""
    bs = lay.batch_strides
    if not (lay.a_k == 1 and lay.a_m % 4 == 0 and all(s % 4 == 0 for s in bs[1])):
        return ""
    if not all(s % 4 == 0 for s in bs[2]):
        return ""
    if lay.b_k == 1 and lay.b_n % 4 == 0:
        return "k"
    if lay.b_n == 1 and lay.b_k % 4 == 0 and tile[1] % 4 == 0:
        return "n"
    return ""


def _blocks(p: Problem, lay: Layout, tile) -> tuple[str, str]:
    """(A, B): the axis along which `registers` reads the operand as 16-byte blocks of 4
    float32 elements ("k", "m" for A; "k", "n" for B; "" for element by element): FLOAT32,
    that axis of stride 1, the other axis' stride and the batch strides whole blocks, and
    for "m" / "n" the tile's side whole blocks (a block holds 4 rows or columns of the
    tile). Plain operands (lib/gemm), or an implicit GEMM's that offers blocks itself
    (Problem.blocks)."""
    if p.operands != "lib/gemm.wgsl.j2":
        return p.blocks
    if p.a.data_type.size != 4 or p.a.buffer_bytes < 16 or p.b.buffer_bytes < 16:
        return "", ""
    bs = lay.batch_strides

    def axis(k_stride: int, other: int, batch, side: int, across: str) -> str:
        if not all(s % 4 == 0 for s in batch):
            return ""
        if k_stride == 1 and other % 4 == 0:  # a row (A) / column (B): 4 consecutive k
            return "k"
        if other == 1 and k_stride % 4 == 0 and side % 4 == 0:  # 4 rows / columns at one k
            return across
        return ""

    return axis(lay.a_k, lay.a_m, bs[1], tile[0], "m"), axis(lay.b_k, lay.b_n, bs[2], tile[1], "n")


# ------------------------------------------------------------------------------ strategies and plans
def strategies_for(p: Problem, caps, tile=None, block_k=None, chunks=None, subgroups=None) -> tuple[str, ...]:
    """Both strategies (each wherever its chunks fit and it takes the tile), `registers`
    first on software adapters (and with no caps), `workgroup` first on GPUs."""
    count_option(p.op, "chunks", chunks)
    _subgroups(p.op, caps, subgroups)
    lay = layout(p)
    found = []
    _tile(p.op, "registers", tile, lay)  # (the wider choice: an error for both)
    for strategy in STRATEGIES:
        if strategy == "workgroup" and tile is not None and any(v not in TILE_SIDES for v in tile):
            continue  # (a side only `registers` takes)
        t = _tile(p.op, strategy, tile, lay)
        try:
            chunks_for(p, lay, caps, strategy, t, _block_k(p.op, block_k), chunks)
        except UnsupportedError:
            if strategy == STRATEGIES[-1] and not found:
                raise
            continue
        if strategy == "workgroup" and caps is not None:
            if GPU_THREADS * GPU_THREADS > caps.max_invocations_per_workgroup or \
                    _workgroup_bytes(t, _block_k(p.op, block_k)) > caps.max_workgroup_storage_size:
                continue
        found.append(strategy)
    if not found:
        raise UnsupportedError(f"{p.op}: no GEMM strategy runs this description on {caps.name}")
    if caps is not None and not caps.is_software:
        found.sort(key=lambda s: s != "workgroup")
    return tuple(found)


def _subgroups(op: str, caps, requested) -> bool:
    """Do the strategies share A's operands (`workgroup` through subgroupShuffle, `registers`
    through subgroupBroadcast)? Where the
    adapter has the feature "subgroup", unless the option `subgroups` says False (True
    without the feature: InvalidArgumentError)."""
    has = caps is not None and caps.has("subgroup")
    if requested is not None and not isinstance(requested, bool):
        raise InvalidArgumentError(f"{op}: option subgroups = {requested!r} must be True or False")
    if requested and not has:
        raise InvalidArgumentError(f"{op}: option subgroups = True needs an adapter with the feature "
                                   "\"subgroup\" (this one has none)")
    return has if requested is None else requested


def _workgroup_bytes(tile, block_k: int) -> int:
    return 4 * block_k * GPU_THREADS * (tile[0] + tile[1])



def quantized_params(p: Problem) -> tuple | None:
    """The integer path's compile-time parameters (shaders/lib/gemm.wgsl.j2's `p.q`, as
    (name, value) pairs): the store, the element bits and signedness of the operands
    (ROLE_bits, ROLE_signed) and of each quantization tensor present, the output type's
    range (requantize: lo, hi); None for a float GEMM."""
    q = p.quantized
    if q is None:
        return None
    out = {"store": q.store, "staged": q.store == "requantize"}
    for role, td in (("a", p.a), ("b", p.b)) + tuple((r, getattr(q, r)) for r in q.present()):
        out[f"{role}_bits"], out[f"{role}_signed"] = td.data_type.size * 8, td.data_type.is_signed
    if q.store == "requantize":
        bits = p.output.data_type.size * 8
        signed = p.output.data_type.is_signed
        out.update(lo=-(1 << (bits - 1)) if signed else 0, hi=(1 << (bits - (1 if signed else 0))) - 1)
    return tuple(sorted(out.items()))


def plan(p: Problem, caps, strategy: str, tile=None, block_k=None, chunks=None, subgroups=None,
         extra_uniforms=None, extra_inputs=(), extra_params=None) -> KernelPlan:
    """The dispatches of `strategy`: one (the product and its epilogue), or with several
    chunks the partial sums and the combine pass. `extra_uniforms`, `extra_inputs` and
    `extra_params` (compile-time parameters, handed to the operands template as `p.o`) are
    an implicit GEMM's (Problem.operands)."""
    if strategy not in strategies_for(p, caps, tile, block_k, chunks, subgroups):
        raise InternalError(f"{p.op}: strategy {strategy} cannot run {p}")
    lay = layout(p)
    tile = _tile(p.op, strategy, tile, lay)
    bk = _block_k(p.op, block_k)
    count = chunks_for(p, lay, caps, strategy, tile, bk, chunks)
    chunk_len = -(-lay.k // count)
    q = p.quantized
    # (the integer path: the blocks an implicit GEMM's operands offer, none of lib/gemm's float reads)
    blocks = _blocks(p, lay, tile) if (strategy == "registers" and CPU_BLOCKS
                                       and (q is None or p.operands != "lib/gemm.wgsl.j2")) else ("", "")
    packed = _packed(p, lay, tile) if strategy == "registers" else ""
    # Sharing A needs whole subgroups of tiles along a tile row (tiles_n a multiple of
    # SHARE_LANES, known here): where they are not, the kernel carries no shared steps (it
    # would never run them, and their unrolled copy of the step doubled LLVM's compile).
    share_a = SHARE_LANES if (strategy == "registers" and CPU_BLOCKS and tile[0] % SHARE_LANES == 0 and not packed
                              and -(-lay.n // tile[1]) % SHARE_LANES == 0 and _subgroups(p.op, caps, subgroups)) else 0
    if strategy == "workgroup" or any(blocks) or packed:  # whole steps of BK / of 4 k (blocks, words: aligned)
        step = bk if strategy == "workgroup" else 4
        chunk_len = -(-chunk_len // step) * step
        count = -(-lay.k // chunk_len)
    bits = p.output.data_type.size * 8
    # Does a chunk of `registers` end in k left over from its steps of 4 (the single-k loop)?
    # Known here: the kernel carries that loop only where one does.
    tail = strategy == "registers" and bool(lay.k % 4 or count > 1 and chunk_len % 4)
    uniforms = {
        "batch_sizes": lay.batch_sizes, "out_bs": lay.batch_strides[0], "a_bs": lay.batch_strides[1],
        "b_bs": lay.batch_strides[2], "c_bs": lay.batch_strides[3],
        "m": lay.m, "n": lay.n, "k": lay.k, "batches": lay.batches, "chunks": count, "chunk_len": chunk_len,
        "a_m": lay.a_m, "a_k": lay.a_k, "b_k": lay.b_k, "b_n": lay.b_n, "c_m": lay.c_m, "c_n": lay.c_n,
        "o_m": lay.o_m, "o_n": lay.o_n, "alpha": f32_bits(p.alpha), "beta": f32_bits(p.beta),
        **dict(extra_uniforms or {}),
    }
    act_uniforms, act_attrs = attribute_uniforms("act_", p.activation_attributes, "float", 32)
    uniforms.update(act_uniforms)
    epilogue = {"has_c": p.c is not None, "activation": p.activation or "", "activation_attributes": act_attrs}
    vec_a, vec_b = _vec(p, lay, tile, bk) if strategy == "workgroup" and q is None else (False, False)
    shuffle = strategy == "workgroup" and _subgroups(p.op, caps, subgroups) and q is None
    params = {"strategy": strategy, "bits": bits, "batch_rank": len(lay.batch_sizes), "tm": tile[0], "tn": tile[1],
              "bk": bk, "threads": GPU_THREADS, "sg_share": SG_SHARE if shuffle else 0, "operands": p.operands,
              "vec_a": vec_a, "vec_b": vec_b, "block_a": blocks[0], "block_b": blocks[1], "share_a": share_a,
              "tail": tail,
              "a_k_inner": lay.a_k == 1 or lay.a_m != 1, "b_n_inner": lay.b_n == 1 or lay.b_k != 1,
              "operand_params": tuple(sorted((extra_params or {}).items())), **epilogue,
              "q": quantized_params(p), "packed": packed,
              "dot4": bool(packed) and PACKED_DOT_INSTRUCTION and packed_dot(caps)}
    roles = dict(q.inputs) if q is not None else {"a": 0, "b": 1, "c": 2}
    staged = ()  # (QUANTIZED_LINEAR: its quantization values gathered first, into scratch 0)
    if q is not None:
        q_uniforms = {f"q_{r}": dict(q.strides)[r] for r in q.present()}
        uniforms.update(q_uniforms)
        q_inputs = tuple(input_buffer(roles[r], r) for r in q.present())
        if params["q"] and dict(params["q"])["staged"]:
            staged = (Dispatch("quantized_params.wgsl.j2", {"q": params["q"]},
                               (scratch_buffer(0, "qparams", writable=True),) + q_inputs,
                               {"m": lay.m, "n": lay.n, **q_uniforms}, lay.m + lay.n, CPU_WORKGROUP),)
            q_inputs = (scratch_buffer(0, "qparams", writable=False),)
        extra_inputs = tuple(extra_inputs) + q_inputs
    first = (4 * (4 * lay.m + 2 * lay.n),) if staged else ()
    pi = len(first)  # the partial sums' scratch index
    ops = (input_buffer(roles["a"], "a"), input_buffer(roles["b"], "b")) + tuple(extra_inputs)
    ops += (input_buffer(0, "a_vec", "blocks"),) if vec_a or blocks[0] else ()
    ops += (input_buffer(1, "b_vec", "blocks"),) if vec_b or (blocks[1] and q is None) else ()
    c_in = (input_buffer(roles["c"], "c"),) if p.c is not None else ()
    out = output_buffer(0, "output", bits, "stores")
    tiles_m, tiles_n = -(-lay.m // (tile[0] * (GPU_THREADS if strategy == "workgroup" else 1))), \
        -(-lay.n // (tile[1] * (GPU_THREADS if strategy == "workgroup" else 1)))
    uniforms.update(tiles_m=tiles_m, tiles_n=tiles_n)
    units = count * lay.batches * tiles_m * tiles_n
    if strategy == "registers":
        invocations, size = units, CPU_WORKGROUP
    else:
        invocations, size = units * GPU_THREADS * GPU_THREADS, GPU_THREADS * GPU_THREADS
    if count == 1:
        return KernelPlan(staged + (Dispatch("gemm.wgsl.j2", {**params, "pass": "direct"}, (out,) + ops + c_in,
                                             uniforms, invocations, size, subgroups=shuffle or bool(share_a)),),
                          scratch_bytes=first)
    partials = Dispatch("gemm.wgsl.j2", {**params, "pass": "partials"},
                        (scratch_buffer(pi, "partials", writable=True),) + ops, uniforms, invocations, size,
                        subgroups=shuffle or bool(share_a))
    outputs = lay.batches * lay.m * lay.n
    combine = Dispatch("gemm.wgsl.j2", {**params, "pass": "combine", "vec_a": False, "vec_b": False, "block_a": "",
                                                   "block_b": "", "share_a": 0, "sg_share": 0, "packed": "",
                                                   "dot4": False, "tail": False},
                       (out, scratch_buffer(pi, "partials", writable=False)) + c_in
                       + (q_inputs if q is not None and q.store != "int32" else ()), uniforms, outputs, CPU_WORKGROUP)
    return KernelPlan(staged + (partials, combine), scratch_bytes=first + (count * outputs * 4,))


def variants(p: Problem, caps, strategy: str) -> tuple[dict, ...]:
    """Options worth timing beside the strategy's own plan: other register tiles (both
    strategies), other BK (`workgroup`), subgroups=False where the adapter has them, and
    twice the chunks the plan picks where it cuts K. Sets that the description cannot take
    are the tuner's to drop."""
    lay = layout(p)
    if strategy == "registers":
        found = [{"tile": t} for t in ((8, 8), (16, 4), (4, 8), (4, 4)) if t != _fit(CPU_TILE, lay)]
        if caps is not None and caps.has("subgroup"):
            found.append({"subgroups": False})
    else:
        found = [{"tile": t} for t in ((2, 2), (4, 8), (8, 4), (8, 8)) if t != GPU_TILE]
        found += [{"block_k": b} for b in BLOCK_KS if b != GPU_BLOCK_K]
        if caps is not None and caps.has("subgroup"):
            found.append({"subgroups": False})
    try:
        tile = _fit(CPU_TILE, lay) if strategy == "registers" else GPU_TILE
        count = chunks_for(p, lay, caps, strategy, tile, GPU_BLOCK_K)
    except UnsupportedError:
        return ()
    if count > 1 or lay.k >= 4 * MIN_CHUNK_K:
        found.append({"chunks": count * 2})
    return tuple(found)


class GemmFamily(KernelFamily):
    """The GEMM family: the module's functions over a `Problem`, and the epilogue hook."""

    strategies = STRATEGIES
    options = OPTIONS
    epilogue = True

    def strategies_for(self, problem: Problem, caps, tile=None, block_k=None, chunks=None,
                       subgroups=None) -> tuple[str, ...]:
        return strategies_for(problem, caps, tile, block_k, chunks, subgroups)

    def plan(self, problem: Problem, caps, strategy: str, tile=None, block_k=None, chunks=None, subgroups=None,
             extra_uniforms=None, extra_inputs=(), extra_params=None) -> KernelPlan:
        """`plan`; the extra_* keywords are an implicit GEMM's (kernels/convolution.py)."""
        return plan(problem, caps, strategy, tile, block_k, chunks, subgroups, extra_uniforms, extra_inputs,
                    extra_params)

    def variants(self, problem: Problem, caps, strategy: str) -> tuple[dict, ...]:
        return variants(problem, caps, strategy)

    def plan_with_epilogue(self, problem: Problem, caps, strategy: str, epilogue) -> KernelPlan:
        """Every strategy: `finish` (the direct pass, or the combine of K's chunks) stores
        the epilogue's result of activation(alpha A x B + beta C), rounded to the GEMM's
        output type first."""
        check_epilogue(epilogue, problem.output)
        first = None if problem.quantized is not None else 2 + (problem.c is not None)  # (None: after every input)
        return attach_epilogue(plan(problem, caps, strategy), epilogue, first)


FAMILY = GemmFamily()


class GemmPlanner(ProblemPlanner):
    """An operator's Planner on the GEMM family: `GemmPlanner(problem)`, `problem(desc)`
    (ops/gemm.py) saying what a description computes."""

    family = FAMILY


# ------------------------------------------------------------------------------ the kernel's WGSL parts
def _lines(*groups) -> str:
    """Lines (strings, or iterables of them) as one WGSL snippet, no trailing newline."""
    out = []
    for g in groups:
        out += [g] if isinstance(g, str) else list(g)
    return "\n".join(out)


def _acc_decls(tm: int, tn: int, zero: str = "0.0") -> list[str]:
    return [f"    var acc{i}_{j} = {zero};" for i in range(tm) for j in range(tn)]


def _register_step(tm: int, tn: int, ba: str, bb: str, sl: int, pad: str, shared: bool) -> list[str]:
    """`registers`: the body of a step of 4 k: A's operands (`shared`: from the subgroup's
    pieces, lane l reading pieces l, l + sl, ...), B's, then the register tile's products
    in the order of k. A's operand of tile row i at step kk as the step holds it: `ba` "k"
    a vec4 of 4 k per row (a{i}[kk]); "m" a vec4 of 4 rows per k (a{i/4}_{kk}[i%4]); "" one
    value per row and k (a{i}_{kk}); B's likewise ("k", "n", "")."""
    out = []
    if shared:
        # The subgroup's pieces of A for a step of 4 k: tm vec4, piece b rows b's 4 k (A's
        # blocks "k", or elements), or ("m") rows 4 (b % (tm / 4)) + 0..3 at k + b / (tm / 4).
        for r in range(tm // sl):
            if ba == "":
                loads = ", ".join(f"a_load(la{r}, k{f' + {q}u' if q else ''})" for q in range(4))
                out.append(f"{pad}let mine{r} = vec4<ACC>({loads});")
            else:
                out.append(f"{pad}let mine{r} = a_block(la{r}, k + lk{r});")
        for b in range(tm):
            piece = f"a{b % (tm // 4)}_{b // (tm // 4)}" if ba == "m" else f"a{b}"
            out.append(f"{pad}let {piece} = subgroupBroadcast(mine{b // sl}, {b % sl}u);")
    elif ba == "k":
        out += [f"{pad}let a{i} = a_block(ra{i}, k);" for i in range(tm)]
    else:
        load = "a_block(qa{}" if ba == "m" else "a_load(ra{}"
        out += [f"{pad}let a{i}_{kk} = {load.format(i)}, k + {kk}u);"
                for kk in range(4) for i in range(tm // 4 if ba == "m" else tm)]
    if bb == "k":
        out += [f"{pad}let b{j} = b_block(cb{j}, k);" for j in range(tn)]
    else:
        load = "b_block(qb{}" if bb == "n" else "b_load(cb{}"
        out += [f"{pad}let b{j}_{kk} = {load.format(j)}, k + {kk}u);"
                for kk in range(4) for j in range(tn // 4 if bb == "n" else tn)]
    held = (ba or "k") if shared else ba

    def operand(name: str, i: int, kk: int, axis: str, across: str) -> str:
        if axis == "k":
            return f"{name}{i}[{kk}]"
        if axis == across:
            return f"{name}{i // 4}_{kk}[{i % 4}]"
        return f"{name}{i}_{kk}"

    out += [f"{pad}acc{i}_{j} += {operand('a', i, kk, held, 'm')} * {operand('b', j, kk, bb, 'n')};"
            for kk in range(4) for i in range(tm) for j in range(tn)]
    return out + [""]  # (an empty line after each step: the WGSL the template wrote before)


def _registers_parts(tm: int, tn: int, ba: str, bb: str, sl: int, zero: str = "0.0") -> dict[str, str]:
    """`registers`' unrolled parts: the row and column handles and the accumulators
    (`setup`), the steps of 4 k (`blocks`: "" without blocks or sharing), the loop of single
    k (from `tail_start`: its body `tail`) and the stores (`puts`)."""
    setup = [f"    let ra{i} = a_row(bo, min(m0 + {i}u, uni.m - 1u));" for i in range(tm)]
    setup += [f"    let cb{j} = b_col(bo, min(n0 + {j}u, uni.n - 1u));" for j in range(tn)]
    if ba == "m":
        setup.append("    // Blocks of 4 rows: the last one starting on a block inside the matrix.")
        setup += [f"    let qa{q} = a_row(bo, min(m0 + {4 * q}u, (uni.m - 1u) & ~3u));" for q in range(tm // 4)]
    if bb == "n":
        setup += [f"    let qb{q} = b_col(bo, min(n0 + {4 * q}u, (uni.n - 1u) & ~3u));" for q in range(tn // 4)]
    setup += _acc_decls(tm, tn, zero)
    blocks = []
    if ba or bb or sl:
        blocks += [
            "    // 4 k per step, the operands read as 16-byte blocks where the layout allows "
            f"(A: {ba or 'elements'},",
            f"    // B: {bb or 'elements'}); each sum still adds its products in the order of k.",
            "    let k4 = k1 - (k1 - k0) % 4u;"]
        if sl:
            blocks += [
                f"    // The subgroup's {sl} lanes (neighbouring tiles of one tile row where tiles_n is a",
                f"    // multiple of {sl}) need the same A: lane l reads its pieces l, l + {sl}, ... of each",
                f"    // step and hands them on (subgroupBroadcast): {tm // sl} read(s) instead of "
                f"{tm if ba else 4 * tm}.",
                f"    let lane = gid % {sl}u;"]
            for r in range(tm // sl):
                if ba == "m":
                    blocks += [f"    let la{r} = a_row(bo, min(m0 + 4u * ((lane + {r * sl}u) % {tm // 4}u), "
                               "(uni.m - 1u) & ~3u));",
                               f"    let lk{r} = (lane + {r * sl}u) / {tm // 4}u;"]
                else:
                    blocks.append(f"    let la{r} = a_row(bo, min(m0 + lane + {r * sl}u, uni.m - 1u));")
                    blocks += [f"    let lk{r} = 0u;"] if ba else []
            pad = " " * 12
            blocks += [f"    if (sg_size == {sl}u && uni.tiles_n % {sl}u == 0u) {{",
                       "        for (var k = k0; k < k4; k += 4u) {",
                       *_register_step(tm, tn, ba, bb, sl, pad, True),
                       "        }",
                       "    } else {",
                       "        for (var k = k0; k < k4; k += 4u) {",
                       *_register_step(tm, tn, ba, bb, sl, pad, False),
                       "        }",
                       "    }"]
        else:
            blocks += ["    for (var k = k0; k < k4; k += 4u) {",
                       *_register_step(tm, tn, ba, bb, sl, " " * 8, False),
                       "    }"]
    tail = [f"        let a{i} = a_load(ra{i}, k);" for i in range(tm)]
    tail += [f"        let b{j} = b_load(cb{j}, k);" for j in range(tn)]
    tail += [f"        acc{i}_{j} += a{i} * b{j};" for i in range(tm) for j in range(tn)]
    puts = [f"    put(u.x, u.y, bo, m0 + {i}u, n0 + {j}u, acc{i}_{j});" for i in range(tm) for j in range(tn)]
    return {"setup": _lines(setup), "blocks": _lines(blocks), "tail_start": "k4" if ba or bb or sl else "k0",
            "tail": _lines(tail), "puts": _lines(puts)}


def _packed_parts(tm: int, tn: int, b_layout: str, q: dict) -> dict[str, str]:
    """`registers` on the integer path's packed words (kernels/quantized.py): per step of 4 k
    one word of A per tile row and one of B per tile column ("k": a word of the column;
    "n": 4 words of 4 columns, their bytes regrouped by column), dot4_i8 per output; the
    operands read as INT8 (UINT8 bytes XOR 0x80), so the zero points (shifted by 128 for
    UINT8) enter after the steps through the rows' and columns' sums of those bytes; the
    K % 4 last k one by one (a_load, b_load: zero points subtracted), as `_registers_parts`."""
    parts = _registers_parts(tm, tn, "", "", 0, "0i")
    signed_a, signed_b = q["a_signed"], q["b_signed"]
    correct = not (signed_a and signed_b and not q.get("a_zero_bits") and not q.get("b_zero_bits")
                   and not q.get("staged"))
    steps = ["    let k4 = k1 - (k1 - k0) % 4u;"]
    if correct:
        steps += [f"    var sa{i} = 0i;" for i in range(tm)] + [f"    var sb{j} = 0i;" for j in range(tn)]
    steps.append("    for (var k = k0; k < k4; k += 4u) {")
    steps += [f"        let a{i} = a_word(ra{i}, k);" for i in range(tm)]
    if b_layout == "k":
        steps += [f"        let b{j} = b_word(cb{j}, k);" for j in range(tn)]
    else:
        for g in range(tn // 4):
            steps.append(f"        let g{g} = b_words(cb{4 * g}, k);")
            steps += [f"        let b{4 * g + c} = g{g}[{c}];" for c in range(4)]
    if correct:
        steps += [f"        sa{i} += dot4_i8(a{i}, 0x01010101u);" for i in range(tm)]
        steps += [f"        sb{j} += dot4_i8(b{j}, 0x01010101u);" for j in range(tn)]
    steps += [f"        acc{i}_{j} += dot4_i8(a{i}, b{j});" for i in range(tm) for j in range(tn)]
    steps.append("    }")
    if correct:
        steps += ["    // The zero points of the packed steps: sum (a - za)(b - zb) = sum a b - zb sum a - za sum b",
                  "    // + n za zb over their n k (i32, wrapping: the same bits).",
                  "    let cnt = bitcast<i32>(k4 - k0);"]
        steps += [f"    let za{i} = a_zs(ra{i});" for i in range(tm)]
        steps += [f"    let zb{j} = b_zs(cb{j});" for j in range(tn)]
        steps += [f"    acc{i}_{j} += cnt * za{i} * zb{j} - za{i} * sb{j} - zb{j} * sa{i};"
                  for i in range(tm) for j in range(tn)]
    return {**parts, "blocks": _lines(steps), "tail_start": "k4"}


def _tile_loads(operand: str, vec: bool, inner: bool, bm: int, bk: int, wg: int, zero: str = "0.0") -> list[str]:
    """`workgroup`: the invocations' share of one operand's tile (A: `bm` rows, B: `bm`
    columns, by `bk` k) into workgroup memory, each invocation every wg-th element (or
    16-byte block, `vec`) from its own, neighbouring ones on neighbouring addresses of the
    tensor's contiguous axis (`inner`: k for A, n for B); outside the matrix or the chunk: 0."""
    a = operand == "a"
    m, mm, tile = ("m", "mm", "tile_a") if a else ("n", "nn", "tile_b")
    count = bm * bk // 4 if vec else bm * bk
    out = []
    for r in range(-(-count // wg)):
        guard = (r + 1) * wg > count
        out += ["        {", f"            let e = lid + {r * wg}u;"]
        out += [f"            if (e < {count}u) {{"] if guard else []
        if vec and a:
            out += [f"            let mm = e / {bk // 4}u;", f"            let kk = (e % {bk // 4}u) * 4u;"]
        elif vec:
            out += [f"            let nn = (e % {bm // 4}u) * 4u;", f"            let kk = e / {bm // 4}u;"]
        elif a == inner:  # the index runs along k fastest
            out += [f"            let {mm} = e / {bk}u;", f"            let kk = e % {bk}u;"]
        else:
            out += [f"            let {mm} = e % {bm}u;", f"            let kk = e / {bm}u;"]
        out += [f"            let {m} = b{m}0 + {mm};", "            let k = kt + kk;"]
        if vec and a:
            out.append("            let v = bitcast<vec4<f32>>(a_vec_at((a_row(bo, min(m, uni.m - 1u)) + "
                       "min(k, k1 - 1u)) >> 2u));")
            out += [f"            tile_a[(kk + {q}u) * {bm}u + mm] = select(0.0, v[{q}], m < uni.m && "
                    f"k + {q}u < k1);" for q in range(4)]
        elif vec:
            out.append("            let v = bitcast<vec4<f32>>(b_vec_at((b_col(bo, min(n, uni.n - 1u)) + "
                       "min(k, k1 - 1u) * uni.b_k) >> 2u));")
            out += [f"            tile_b[kk * {bm}u + nn + {q}u] = select(0.0, v[{q}], n + {q}u < uni.n && "
                    "k < k1);" for q in range(4)]
        else:
            handle = "a_row" if a else "b_col"
            out.append(f"            let v = {operand}_load({handle}(bo, min({m}, uni.{m} - 1u)), min(k, k1 - 1u));")
            out.append(f"            {tile}[kk * {bm}u + {mm}] = select({zero}, v, {m} < uni.{m} && k < k1);")
        out += ["            }"] if guard else []
        out.append("        }")
    return out


def _workgroup_step(tm: int, tn: int, t: int, bn: int, kk: str, pad: str) -> list[str]:
    """One step of k (`kk`): B's tn operands from workgroup memory into the register
    tile's products with the a0.. in scope."""
    return ([f"{pad}let b{j} = tile_b[({kk}) * {bn}u + {j * t}u + tx];" for j in range(tn)]
            + [f"{pad}acc{i}_{j} += a{i} * b{j};" for i in range(tm) for j in range(tn)] + [""])


def _workgroup_parts(tm: int, tn: int, t: int, bk: int, share: int, vec_a: bool, vec_b: bool,
                     a_k_inner: bool, b_n_inner: bool, zero: str = "0.0") -> dict[str, str]:
    """`workgroup`'s unrolled parts: the accumulators (`setup`, after the subgroup group's
    first invocation where A's operands are shared), the tile loads (`load_a`, `load_b`), the
    products of a tile (`products`) and the stores (`puts`); the tiles' sizes."""
    bm, bn, wg = t * tm, t * tn, t * t
    setup = []
    if share:
        setup += [f"    // The subgroup's invocation of this one's group of {share} holding k = kb + 0.",
                  f"    let group = lid % max(sg_size, 1u) - tx % {share}u;"]
    setup += _acc_decls(tm, tn, zero)
    a_ops = [f"let a{i} = tile_a[kk * {bm}u + {i * t}u + ty];" for i in range(tm)]
    if share:
        v = share
        products = [
            "        // Per V steps of k, the V invocations of a group (consecutive tx, one ty, within one",
            "        // subgroup where sg_size >= V) each read A's TM operands of one k from workgroup",
            "        // memory and hand them to the others through subgroupShuffle (the same products in",
            "        // the same order as reading them all: the same bits); where the subgroups are",
            "        // narrower (sg_size 1: see builder.py's _entry) every invocation reads its own.",
            f"        for (var kb = 0u; kb < {bk}u; kb += {v}u) {{",
            f"            if (sg_size >= {v}u) {{",
            *[f"                let s{i} = tile_a[(kb + tx % {v}u) * {bm}u + {i * t}u + ty];" for i in range(tm)]]
        for q in range(v):
            products += ["                {",
                         *[f"                    let a{i} = subgroupShuffle(s{i}, group + {q}u);" for i in range(tm)],
                         *_workgroup_step(tm, tn, t, bn, f"kb + {q}u", " " * 20),
                         "                }"]
        products += ["            } else {",
                     f"                for (var kk = kb; kk < kb + {v}u; kk++) {{",
                     *[" " * 20 + x for x in a_ops],
                     *_workgroup_step(tm, tn, t, bn, "kk", " " * 20),
                     "                }",
                     "            }",
                     "        }"]
    else:
        products = [f"        for (var kk = 0u; kk < {bk}u; kk++) {{",
                    *[" " * 12 + x for x in a_ops],
                    *_workgroup_step(tm, tn, t, bn, "kk", " " * 12),
                    "        }"]
    puts = [f"    put(u.x, u.y, bo, bm0 + {i * t}u + ty, bn0 + {j * t}u + tx, acc{i}_{j});"
            for i in range(tm) for j in range(tn)]
    return {"setup": _lines(setup), "load_a": _lines(_tile_loads("a", vec_a, a_k_inner, bm, bk, wg, zero)),
            "load_b": _lines(_tile_loads("b", vec_b, b_n_inner, bn, bk, wg, zero)), "products": _lines(products),
            "puts": _lines(puts), "tile_a": str(bk * bm), "tile_b": str(bk * bn), "bm": str(bm), "bn": str(bn),
            "workgroup": str(wg)}


@parts("gemm.wgsl.j2")
def wgsl_parts(params: dict) -> dict[str, str]:
    """What shaders/gemm.wgsl.j2 substitutes (`code.NAME`), decided here from its
    compile-time parameters: the strategy's unrolled loops over the register tile, which
    loads a step makes (16-byte blocks, elements, shared through the subgroup) and where
    the products go (`put`: the chunk's partial sum, or the epilogue)."""
    p = params
    put = ("partials_set(((chunk * uni.batches + bi) * uni.m + m) * uni.n + n, bitcast<u32>(acc));"
           if p["pass"] == "partials" else "finish(bo, m, n, acc);")
    if p["pass"] == "combine":
        return {"put": put}
    zero = "0i" if p.get("q") else "0.0"  # (the integer path's accumulators: kernels/quantized.py)
    if p["strategy"] == "registers" and p.get("packed"):
        found = _packed_parts(p["tm"], p["tn"], p["packed"], dict(p["q"]))
    elif p["strategy"] == "registers":
        found = _registers_parts(p["tm"], p["tn"], p["block_a"], p["block_b"], p["share_a"], zero)
    else:
        found = _workgroup_parts(p["tm"], p["tn"], p["threads"], p["bk"], p["sg_share"], p["vec_a"], p["vec_b"],
                                 p["a_k_inner"], p["b_n_inner"], zero)
    if found.get("tail_start") == "k4" and not p["tail"]:  # (no chunk ends in k past its steps of 4)
        found["tail"] = ""
    q = dict(p["q"]) if p.get("q") else None
    if p["pass"] == "direct" and (p["strategy"] == "registers" and _reads_in_store(p) or
                                  q is not None and q["store"] != "int32"):
        found["puts"] = _looped_puts(p["tm"], p["tn"], p["strategy"], p["threads"])
    return {"put": put, **found}


def _reads_in_store(p: dict) -> bool:
    """Does the store read tensors (a fused graph's epilogue with inputs of its own: their
    loads and the index arithmetic of their coordinates per output)?"""
    ep = p.get("epilogue")
    return ep is not None and len(ep.kinds) > 1


def _looped_puts(tm: int, tn: int, strategy: str, threads: int) -> str:
    """The stores of a register tile as a loop over an array of the sums: `finish` (the
    epilogue: bias, activation, a fused graph's element-wise steps with their loads and
    index arithmetic; the integer path's requantization) inlined once per output of a
    16 x 8 tile took lavapipe's LLVM minutes: a fused convolution + 2 batch normalizations +
    add + relu of ResNet-50 149 s, 4 s with the loop (kernel_start's probes,
    docs/performance.md). `registers` loops where its store reads tensors (_reads_in_store:
    a plain store compiles in seconds unrolled) and on the integer path's requantizing or
    dequantizing store; `workgroup` on the latter. `registers` loops over the tile's rows,
    each row's tn stores unrolled (tn finishes to compile): a CPU adapter picks an array's
    element at a run-time index through a ladder of branches per lane, which over the 128
    sums one by one took over half of W66's time (perf); 16 picks of a row took W66 from
    2.1-2.2x the float32 convolution's time to 1.1-1.25x. `var`, not `let`: naga copies a
    `let` array into a variable at each dynamic index (W26 7x the time)."""
    if strategy == "registers":
        rows = ", ".join(f"array<ACC, {tn}>({', '.join(f'acc{i}_{j}' for j in range(tn))})" for i in range(tm))
        return _lines([f"    var sums = array<array<ACC, {tn}>, {tm}>({rows});",
                       f"    for (var i = 0u; i < {tm}u; i++) {{",
                       "        let row = sums[i];",
                       *[f"        put(u.x, u.y, bo, m0 + i, n0 + {j}u, row[{j}]);" for j in range(tn)],
                       "    }"])
    sums = ", ".join(f"acc{i}_{j}" for i in range(tm) for j in range(tn))
    row, col = f"bm0 + (t / {tn}u) * {threads}u + ty", f"bn0 + (t % {tn}u) * {threads}u + tx"
    return _lines([f"    var sums = array<ACC, {tm * tn}>({sums});",
                   f"    for (var t = 0u; t < {tm * tn}u; t++) {{",
                   f"        put(u.x, u.y, bo, {row}, {col}, sums[t]);",
                   "    }"])
