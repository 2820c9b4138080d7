"""The Dispatch of a data-movement kernel (shaders/movement.wgsl.j2), shared by Slice1,
Padding, ReverseSubsequences and the fused chains of a graph (gpudml/fusion.py).

A data-movement kernel reads one *source* tensor through a chain of *stages*, each one
operator's index rule (its template, shaders/<key>.wgsl.j2, implements the stage
interface of shaders/lib/chain.wgsl.j2): an operator alone is a chain of at most one
stage, a fused chain has several. A slice next to the source (or next to another slice)
folds into the source's base and strides on the host. They share these strategies:

- `stretches` (packed outputs; the choice): each invocation owns RUN consecutive output
  elements and walks *stretches*, parts of an output row whose input offset is affine or a
  fill, so that coordinate math happens only where a stretch ends; 16-byte
  blocks are assembled in registers and stored whole. A stretch whose output blocks are
  whole input blocks loads them as such: in order (step 1 from a block's first element:
  copies) or reversed (step -1 from a block's last element: flipped in registers with
  constant indices); 8- and 16-bit stretches stepping by 2 or -2 from a block's first or
  last two elements load two input blocks per output block and keep their even or odd
  elements. Paired kernel-time ratios to element-by-element blocks, lavapipe (contended
  host, +-10%, 15-25 rounds): Slice1 reversing the last axis of [1, 3, 1024, 1024]
  float32 0.87-0.89 (1.42x the time of the same Slice1 copying became 1.26x), float16
  0.49-0.63, uint8 0.42-0.47, int64 0.87-0.92; stepping by 2 (W6's slice) float16
  0.73-0.84, uint8 0.57-0.66.
  32- and 64-bit stretches stepping by +-2 (W6) stay element by element: two vector loads
  per block measured no faster than the four (two) element loads.
- `elements` (packed outputs): RUN consecutive output elements, each found by
  `value_at`, assembled into 16-byte blocks.
- `strided` (any output, the only one of these three for outputs with gaps): element by
  element, 8- and 16-bit elements with atomic read-modify-write of their word.
- `coalesced` (any output; the GPU-class strategy): one invocation per 16-byte output
  block (per element for outputs with gaps, element by element as `strided` does), so that
  neighbouring invocations read and write neighbouring memory and the grid fills a GPU.
  The three above give each invocation a run of 64 elements, which suits CPU adapters
  (few invocations, coordinates decoded once per run) and serializes a GPU's memory
  accesses. A packed block is built as plan option `block` says (BLOCK_FORMS):
  "elements" (the default: the elements kernel, each element through the whole chain) or
  "stretches" (the stretches kernel with a run of one block: the chain maps the block's row
  once and steps its innermost coordinate, and a block inside a contiguous stretch that
  starts on a block boundary of the input is one 16-byte load). Same bits either way.

`strategies_for(output, caps)` puts the CPU-class strategies first on CPU adapters and
`coalesced` first elsewhere.

An operator that moves whole boxes of elements between tensors (JOIN into regions of its
output, SPLIT from regions of its input) plans one `Copy` per box: a chain of no stage,
one dispatch each, so that a kernel binds one input and one output whatever the number of
tensors (`copy`, `copy_strategies`, `copy_plan`).

The family's classes: `MovementFamily` (instance FAMILY) over a `Movement`, one chain into
one output (an operator's kernel, a graph's fused chain), and `CopyFamily` (instance
COPIES) over a tuple of `Copy`s. An operator with a chain stage has a `MovementPlanner`
(its index rule as `stage`, its plan a Movement on its kernel's own axes: `chain_plan`), an
operator of box copies a `CopyPlanner` (a ProblemPlanner of COPIES).
"""

from __future__ import annotations

import abc
from collections.abc import Mapping
from dataclasses import dataclass, field

from ...errors import InternalError, InvalidArgumentError
from ...tensor_desc import TensorDesc, merge_axes
from ..base import KernelFamily, Planner, ProblemPlanner, element_bits
from ..builder import Dispatch, KernelPlan, input_buffer, output_buffer
from ..chain import Chain, StageRule, chain

WORKGROUP_SIZE = 64
#: Output elements per invocation: decoding a coordinate costs divisions, stepping it does not.
#: Segments, kernel ms (A/B, one process): RUN 16 / 32 / 64 = W4 27.0 / 21.3 / 20.9,
#: W5 23.0 / 19.9 / 19.5, W6 38.2 / 31.6 / 32.3; workgroups of 256 no better (21.4, 24.0, 32.8 at 64).
#: With whole-block copies (paired kernel-time ratios to RUN 32 without them, 11 rounds):
#: RUN 32 W4 0.89, W5 0.96, W6 1.06; RUN 64 W4 0.87, W5 0.87, W6 1.03.
RUN = 64
#: A fused chain of several stages on a CPU adapter: one invocation per 1024 output elements
#: (a row of the bench's chains), so that the chain's per-row work (row_setup) is done once
#: per row. A 20-node chain over [1, 3, 1024, 1024] float32 on lavapipe, paired ratios to a
#: single Slice1 of the same output (11 rounds): RUN 64 / 1024 = 2.05x / 1.69x (H and W
#: stages mixed), 2.49x / 2.03x (every stage on W), 1.20x / 0.66x (every stage on H).
CHAIN_RUN_CPU = 1024
STRATEGIES = ("stretches", "elements", "strided", "coalesced")
#: Plan options of every data-movement operator (Planner.options): `block`, one of
#: BLOCK_FORMS (the first is the default), how `coalesced` builds a packed output's 16-byte
#: block (module doc). Kernel ms "elements" / "stretches", GPU class forced, gpudml lab,
#: float32, interleaved: lavapipe W4 33.2 / 26.0, W5 32.1 / 24.1, W6 24.0 / 22.8, W7 454 / 382;
#: llvmpipe through GL W5 18.3 / 24.4, W6 16.5 / 21.5. Not yet timed on a GPU: "elements" is
#: the form the H100 figures (docs/performance.md) were taken with, so it stays the default until then.
OPTIONS = ("block",)
BLOCK_FORMS = ("elements", "stretches")


def strategies_for(output: TensorDesc, caps) -> tuple[str, ...]:
    """Packed outputs: segments (the choice on CPU adapters; 0.20-0.33x of the copy kernel
    became 0.60-0.71x on lavapipe), elements, coalesced. Outputs with gaps: strided,
    coalesced. On other adapters (GPUs) coalesced comes first."""
    return _ordered(caps, writes_blocks(output))


def strategies_for_regions(regions, caps) -> tuple[str, ...]:
    """The strategies of an operator that writes several regions, one dispatch each
    (`regions`: (output desc, out_base) pairs): the block strategies where every region
    can take them, else strided and coalesced."""
    return _ordered(caps, all(writes_blocks(desc, base) for desc, base in regions))


def writes_blocks(output: TensorDesc, out_base: int = 0) -> bool:
    """Whether the block strategies (stretches, elements, packed coalesced) can write `output`
    from buffer element `out_base`: a packed output from a block boundary."""
    return output.is_packed and out_base % (128 // element_bits(output)) == 0


def _ordered(caps, blocks: bool) -> tuple[str, ...]:
    cpu = ("stretches", "elements") if blocks else ("strided",)
    return cpu + ("coalesced",) if caps is None or caps.is_software else ("coalesced",) + cpu


def movement_dispatch(
    strategy: str,
    output_desc: TensorDesc,
    the_chain: Chain,
    *,
    uniforms: dict | None = None,
    params: dict | None = None,
    invocations: int | None = None,
    run: int = RUN,
    out_base: int | None = None,
    output_index: int = 0,
    source_index: int = 0,
    block: str | None = None,
    input_blocks: bool = False,
    extra_buffers: tuple = (),
    output_access: str = "blocks",
) -> Dispatch:
    """The dispatch of shaders/movement.wgsl.j2 under `strategy`, writing `output_desc`
    from the chain's source and extra tensors, `run` output elements per invocation (a
    multiple of 16). The output is output `output_index` of the operator, from buffer
    element `out_base` on (a region of it; None: 0, and no uniform for it); the source is
    input `source_index`, the extra tensors the inputs after input 0 (kernels.chain.chain).
    `block`: plan option (OPTIONS; None: the first of BLOCK_FORMS); `input_blocks`: the source
    is also bound as 16-byte blocks (as for stretches) for an operator's own strategy;
    `extra_buffers`: more bindings an operator's own strategy reads (e.g. a stage's tensor
    as 16-byte blocks), after the others. Uniforms `count`, `out_sizes` and
    `out_strides` come first, then `out_base`, the chain's, and `uniforms`."""
    form = check_block(block)
    bits = element_bits(output_desc)
    count = output_desc.element_count
    blocks = writes_blocks(output_desc, out_base or 0)
    if strategy in ("stretches", "elements") and not blocks:
        raise InternalError(f"movement: strategy {strategy} cannot write {output_desc!r} from element {out_base}")
    template_strategy = strategy
    if strategy == "coalesced":  # the stretches, elements or strided kernel, one block or element each
        template_strategy = form if blocks else "strided"
        run = 128 // bits if blocks else 1
    if invocations is None:
        invocations = -(-count // run)
    buffers = (
        output_buffer(output_index, "output", bits, "stores" if template_strategy == "strided" else output_access),
        input_buffer(source_index, "input"),
    ) + the_chain.buffers(1)
    if template_strategy == "stretches" or input_blocks:  # the same buffer as 16-byte blocks (whole blocks)
        buffers += (input_buffer(source_index, "input_blocks", "blocks"),)
    buffers += tuple(extra_buffers)
    base = {} if out_base is None else {"out_base": out_base}
    return Dispatch(
        template="movement.wgsl.j2",
        params={"rank": output_desc.rank, "bits": bits, "run": run, "strategy": template_strategy,
                "out_base": out_base is not None, "stages": the_chain.stages, "unit": the_chain.unit,
                "rows": the_chain.rows, **(params or {})},
        buffers=buffers,
        uniforms={"count": count, "out_sizes": output_desc.sizes, "out_strides": output_desc.effective_strides,
                  **base, **the_chain.uniforms, **(uniforms or {})},
        invocations=invocations,
        workgroup_size=WORKGROUP_SIZE,
    )


def variants(desc, caps, strategy: str) -> tuple[dict, ...]:
    """Plan options worth timing beside `strategy`'s own plan when autotuning (every
    data-movement operator's Planner.variants): `coalesced` in the other block forms (the
    tuner drops a form that builds the same kernels, as on outputs with gaps)."""
    return tuple({"block": form} for form in BLOCK_FORMS[1:]) if strategy == "coalesced" else ()


def check_block(block: str | None) -> str:
    """Plan option `block` (None: the default form), checked."""
    if block is None:
        return BLOCK_FORMS[0]
    if block not in BLOCK_FORMS:
        raise InvalidArgumentError(f"plan option block={block!r}: must be one of {', '.join(BLOCK_FORMS)}")
    return block


@dataclass(frozen=True)
class Copy:
    """One box of elements copied between two tensors, as one dispatch: `output` is the
    box in the output's layout (merged axes), `source_strides` the source's strides over
    the same axes; the box starts at buffer element `out_base` of output `output_index`
    (None: 0, no uniform) and at `src_base` of input `source_index`."""

    output: TensorDesc
    source_strides: tuple[int, ...]
    out_base: int | None
    src_base: int
    output_index: int
    source_index: int


def copy(data_type, sizes, out_strides, source_strides, *, out_base: int | None = None, src_base: int = 0,
         output_index: int = 0, source_index: int = 0) -> Copy:
    """The Copy of a box of `sizes` elements, laid out by `out_strides` in the output and
    `source_strides` in the source: axes contiguous in both merge, size-1 axes drop."""
    axes = merge_axes(sizes, out_strides, source_strides)
    output = TensorDesc(data_type, [a.size for a in axes], [a.strides[0] for a in axes])
    return Copy(output, tuple(a.strides[1] for a in axes), out_base, src_base, output_index, source_index)


def copy_strategies(copies, caps) -> tuple[str, ...]:
    """The strategies that can run every one of `copies` (strategies_for_regions)."""
    return strategies_for_regions([(c.output, c.out_base or 0) for c in copies], caps)


def copy_plan(copies, strategy: str, block: str | None = None) -> KernelPlan:
    """One dispatch per Copy, in order, each under `strategy` (and plan option `block`)."""
    return KernelPlan(tuple(
        movement_dispatch(strategy, c.output, chain([], c.source_strides, c.src_base), out_base=c.out_base,
                          output_index=c.output_index, source_index=c.source_index, block=block) for c in copies))


# ---------------------------------------------------------------------------- the family
@dataclass(frozen=True)
class Movement:
    """One data-movement kernel: `output` written from `chain` (its source input 0, its
    stages' extra tensors inputs 1, 2, ...); `dispatch`, movement_dispatch's other keywords
    (uniforms, params, invocations, out_base, ...); `run` output elements per invocation
    of the CPU-class strategies (None: RUN, CHAIN_RUN_CPU for a chain of several stages on
    a CPU-class adapter)."""

    output: TensorDesc
    chain: Chain
    dispatch: Mapping = field(default_factory=dict)
    run: int | None = None


class MovementFamily(KernelFamily):
    """The data-movement family over a `Movement`: strategies chosen by the output alone,
    the plan option `block`, its variants."""

    strategies = STRATEGIES
    options = OPTIONS

    def strategies_for(self, problem: Movement, caps, block: str | None = None) -> tuple[str, ...]:
        check_block(block)
        return strategies_for(problem.output, caps)

    def plan(self, problem: Movement, caps, strategy: str, block: str | None = None) -> KernelPlan:
        run = problem.run
        if run is None:
            several = (caps is None or caps.is_software) and len(problem.chain.stages) > 1
            run = CHAIN_RUN_CPU if several else RUN
        return KernelPlan((movement_dispatch(strategy, problem.output, problem.chain, block=block, run=run,
                                             **problem.dispatch),))

    def variants(self, problem, caps, strategy: str) -> tuple[dict, ...]:
        return variants(problem, caps, strategy)


class CopyFamily(MovementFamily):
    """The data-movement family over boxes (a tuple of `Copy`s): one dispatch each, all under
    one strategy (copy_strategies, copy_plan)."""

    def strategies_for(self, problem: tuple[Copy, ...], caps, block: str | None = None) -> tuple[str, ...]:
        check_block(block)
        return copy_strategies(problem, caps)

    def plan(self, problem: tuple[Copy, ...], caps, strategy: str, block: str | None = None) -> KernelPlan:
        return copy_plan(problem, strategy, block)


FAMILY = MovementFamily()
COPIES = CopyFamily()


class MovementPlanner(Planner):
    """The Planner of a data-movement operator whose index rule is one stage over one
    source (Slice1, Slice, Padding, Tile, Gather, ReverseSubsequences: one module each in
    this package): the family's strategies and plan option, chosen by the output alone.
    A subclass gives `stage` (the index rule over the desc's own axes, for fused chains)
    and `plan` (the rule on the kernel's own axes, merged where the layout allows: a
    Movement planned by FAMILY, `chain_plan`)."""

    strategies = FAMILY.strategies
    options = FAMILY.options

    def strategies_for(self, desc, caps, block: str | None = None) -> tuple[str, ...]:
        check_block(block)
        return strategies_for(desc.output_tensor, caps)

    def variants(self, desc, caps, strategy: str) -> tuple[dict, ...]:
        return FAMILY.variants(desc, caps, strategy)

    @abc.abstractmethod
    def stage(self, desc) -> StageRule:
        """The index rule over the desc's own axes (fused chains: no axis merges)."""


class CopyPlanner(ProblemPlanner):
    """The Planner of an operator that moves whole boxes of elements between tensors (JOIN,
    SPLIT: kernels/movement/join_split.py): a ProblemPlanner of COPIES, the problem the
    boxes its `copies(desc)` gives, in dispatch order. It is no chain stage: a box binds one
    input and one output, whatever the number of tensors."""

    family = COPIES

    def __init__(self):
        super().__init__(lambda desc: tuple(self.copies(desc)))

    @abc.abstractmethod
    def copies(self, desc) -> list[Copy]:
        """The boxes `desc` copies, in dispatch order."""


def chain_plan(strategy: str, output: TensorDesc, the_chain: Chain, *, block: str | None = None,
               **dispatch) -> KernelPlan:
    """The plan of one movement dispatch (movement_dispatch's keywords): FAMILY's of the
    Movement (`run`, RUN by default, output elements per invocation)."""
    run = dispatch.pop("run", RUN)
    return FAMILY.plan(Movement(output, the_chain, dispatch, run), None, strategy, block=block)
