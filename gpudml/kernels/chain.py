"""Chains of data-movement stages: the currency of fusion.

A data-movement operator maps each output coordinate to the input coordinate it reads (or
to a fill constant): its index rule, as a *stage* (its spec's kernels give it: Planner.stage)
implemented by its template (shaders/<key>.wgsl.j2, the stage interface of
shaders/lib/chain.wgsl.j2). A *chain* is such stages applied one after another, from the
kernel's output back to one *source* tensor: an operator alone is a chain of at most one
stage, a fused run of operators in a graph a chain of several, and a kernel that reads its
input through a chain (a Reduce after a pad: Planner.prologue) never materializes it.
Affine stages (slices) next to the source, or next to each other, fold on the host into
the source's base and strides, so they cost nothing in the kernel.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from ..tensor_desc import TensorDesc
from .builder import Buffer, input_buffer


class Stage(NamedTuple):
    """One stage of a kernel's chain, as its template sees it (a template parameter)."""

    op: str  # the template of the operator's index rule, e.g. "padding.wgsl.j2"
    prefix: str  # of its uniforms and bindings, e.g. "s0_"
    params: tuple  # its compile-time parameters, (name, value) pairs


@dataclass(frozen=True)
class StageRule:
    """What a data-movement operator gives a chain for one description (Planner.stage):
    its template and compile-time parameters (`axes`: the axes whose coordinate it
    changes, the others cost nothing; `fills`, `rowwise`: see shaders/lib/chain.wgsl.j2),
    its uniforms (unprefixed; per-axis
    tuples have the description's rank), the descs of the tensors it reads besides the
    data (bound as `lengths`, in order), and, for a slice, the affine map that folds on the
    host instead: input coordinate = starts + steps * output coordinate, per axis (with
    the window it reads); for a padding, its interior."""

    op: str
    params: dict = field(default_factory=dict)
    uniforms: dict = field(default_factory=dict)
    reads: tuple[TensorDesc, ...] = ()
    affine: tuple[tuple[int, ...], tuple[int, ...]] | None = None
    #: An affine rule: the input coordinates it reads, per axis (lowest, highest).
    window: tuple[tuple[int, int], ...] | None = None
    #: A padding: where its output copies its input, per axis (start, size); there output
    #: coordinate c reads input coordinate c - start.
    interior: tuple[tuple[int, int], ...] | None = None
    #: Its piece's slope is -1, 0 or +1 (False: SpaceToDepth's block size; the chain's
    #: steps_left then divides).
    unit: bool = True


@dataclass(frozen=True)
class Chain:
    """A chain ready for a kernel: the stages (output side first), their uniforms with the
    source's (src_base, src_strides), and the extra tensors they read, in binding order."""

    stages: tuple[Stage, ...]
    uniforms: dict
    reads: tuple[TensorDesc, ...]
    unit: bool = True  # every stage moves along the innermost axis by -1, 0 or +1 per step
    rows: bool = True  # every stage is rowwise (lib/chain.wgsl.j2): rows are mapped once

    def buffers(self, first_input: int) -> tuple[Buffer, ...]:
        """The extra tensors' bindings, as inputs first_input, first_input + 1, ..."""
        names = [f"{s.prefix}lengths" for s in self.stages for _ in range(dict(s.params).get("reads", 0))]
        return tuple(input_buffer(first_input + k, name) for k, name in enumerate(names))


def chain(rules, source_strides, base: int = 0, prefix: str = "") -> Chain:
    """The chain of `rules` (output side first) read from a source with `source_strides`
    (elements, per axis of the chain's rank) from element `base`: affine rules next to the
    source, or next to each other, fold into the source's base and strides (or into one
    affine stage), as does a padding that an affine rule reads only inside of (a crop
    after a pad); the others become stages s0_, s1_, ... in order. `prefix` goes before
    every uniform and stage name (several chains in one kernel: "i0" gives i0src_base,
    i0s0_). `source_strides` None: the chain maps coordinates only (its source is a value
    computed at the coordinates it maps to, not a tensor: nothing folds into it, and it
    has no src_ uniforms)."""
    strides = None if source_strides is None else list(source_strides)
    rules = list(rules)
    base, strides = _fold(rules, base, strides)  # next to the source: into it
    merged: list[StageRule] = []
    for rule in rules:
        last = merged[-1] if merged else None
        if last is not None and last.affine is not None and rule.affine is not None:
            (s2, t2), (s1, t1) = last.affine, rule.affine  # o -> s2 + t2 o, then s1 + t1 (.)
            window = tuple(tuple(sorted((a + t * lo, a + t * hi))) for a, t, (lo, hi) in
                           zip(s1, t1, last.window, strict=True))
            merged[-1] = _affine_rule(tuple(a + t * b for a, t, b in zip(s1, t1, s2, strict=True)),
                                      tuple(t * u for t, u in zip(t1, t2, strict=True)), window)
        elif last is not None and last.affine is not None and rule.interior is not None and all(
                start <= lo and hi < start + n
                for (lo, hi), (start, n) in zip(last.window, rule.interior, strict=True)):
            # A window inside a padding's interior: the padding is a shift there.
            starts, steps = last.affine
            merged[-1] = _affine_rule(tuple(a - start for a, (start, _) in zip(starts, rule.interior, strict=True)),
                                      steps, tuple((lo - start, hi - start) for (lo, hi), (start, _) in
                                                   zip(last.window, rule.interior, strict=True)))
        else:
            merged.append(rule)
    base, strides = _fold(merged, base, strides)  # (what merging made affine next to the source)
    stages, reads = [], []
    uniforms = {} if strides is None else {f"{prefix}src_base": base, f"{prefix}src_strides": tuple(strides)}
    for i, rule in enumerate(merged):
        name = f"{prefix}s{i}_"
        params = {"fills": False, "rowwise": True, **rule.params, "reads": len(rule.reads)}
        stages.append(Stage(rule.op, name, tuple(sorted(params.items()))))
        uniforms.update({name + key: value for key, value in rule.uniforms.items()})
        reads += rule.reads
    unit = all(r.unit and (r.affine is None or abs(r.affine[1][-1]) == 1) for r in merged)
    rows = all(dict(st.params)["rowwise"] for st in stages)
    return Chain(tuple(stages), uniforms, tuple(reads), unit, rows)


def _fold(rules: list, base: int, strides):
    """(base, strides) of the source with the affine rules at the end of `rules` (next to
    the source) folded into them, popped from `rules` (strides None: nothing folds)."""
    while strides is not None and rules and rules[-1].affine is not None:
        starts, steps = rules.pop().affine
        base += sum(a * s for a, s in zip(starts, strides, strict=True))
        strides = [s * t for s, t in zip(strides, steps, strict=True)]
    return base, strides


def _affine_rule(starts: tuple[int, ...], steps: tuple[int, ...], window) -> StageRule:
    moved = tuple(d for d, (a, t) in enumerate(zip(starts, steps, strict=True)) if a != 0 or t != 1)
    return StageRule("slice1.wgsl.j2", params={"axes": moved}, uniforms={"starts": starts, "steps": steps},
                     affine=(starts, steps), window=tuple(window))


def affine_stage(starts, steps, out_sizes) -> StageRule:
    """The stage of an affine map per axis (a slice) with output sizes `out_sizes`:
    input = starts + steps * output. An output axis of size 1 reads its start only, so its
    step is 1 here, whatever the operator's stride: a stride as large as the operator
    allows there would not fit the kernels' 32-bit strides once folded into the source's."""
    steps = tuple(t if n > 1 else 1 for t, n in zip(steps, out_sizes, strict=True))
    window = [tuple(sorted((a, a + t * (n - 1)))) for a, t, n in zip(starts, steps, out_sizes, strict=True)]
    return _affine_rule(tuple(starts), steps, window)


