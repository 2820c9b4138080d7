"""Running a list of steps over value ids: the executor of compiled graphs (gpudml/graph.py).

A value id names one tensor of a graph (an input, a constant, a node's output). A `Step`
binds one compiled operator to value ids: it reads `inputs` and writes `outputs`, in the
order of its compiled operator's own `inputs` and `outputs`. The executor knows no
operator and no Graph: any list of steps runs, as long as each step's inputs are sources
(graph inputs, constants) or outputs of earlier steps (`check_steps`). A fused step that
reads a graph input and writes a value many nodes later, skipping the values between,
is just another step.

What a step's `compiled` must provide (gpudml/device/'s CompiledOperator and KernelCall
do): `inputs` and `outputs`, lists of (field name, TensorDesc), the descs of the values it
reads and writes; `name` (for messages); `program.kernels` (one per compute dispatch, for `dispatch_count`); and
`record_buffers(input buffers, output buffers, clears)`, which records its dispatches on
those buffers (after clearing `clears`; under the context's lock, contiguously), checks
nothing (the plan was checked at compile: `check_steps`), and neither submits nor reads back.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import InternalError
from ..tensor_desc import TensorDesc
from .guard import gpu_errors
from .tensor import Tensor


@dataclass(frozen=True)
class Step:
    """`compiled` run on the values `inputs`, writing the values `outputs` (value ids)."""

    compiled: Any  # a CompiledOperator (gpudml/device/), a KernelCall: what the module's docstring says
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]

    @property
    def dispatches(self) -> int:
        """Compute dispatches this step records."""
        return len(self.compiled.program.kernels)

    @property
    def name(self) -> str:
        """The kernel's name: its operator's ("Reduce"), or a fused one's
        ("Fused(Padding>Slice1>Reduce)")."""
        return self.compiled.name

    def __repr__(self) -> str:
        reads = ", ".join(f"%{v}" for v in self.inputs)
        writes = ", ".join(f"%{v}" for v in self.outputs)
        return (f"Step({self.name}, strategy {self.compiled.strategy}, {self.dispatches} "
                f"dispatch{'es' if self.dispatches != 1 else ''}: ({reads}) -> ({writes}))")


def check_steps(steps: Sequence[Step], sources: dict[int, TensorDesc], outputs: Iterable[int]) -> None:
    """A planner's steps, checked once (at compile): each step's arity matches its compiled
    operator, reads only values that exist by then with the data type it expects, and
    every wanted output is produced or a source. InternalError otherwise: a planner bug."""
    known = dict(sources)
    for n, step in enumerate(steps):
        name = step.compiled.name
        if len(step.inputs) != len(step.compiled.inputs) or len(step.outputs) != len(step.compiled.outputs):
            raise InternalError(
                f"graph step {n} ({name}): {len(step.inputs)} inputs / {len(step.outputs)} outputs bound, its "
                f"operator has {len(step.compiled.inputs)} / {len(step.compiled.outputs)}")
        for value, (field, desc) in zip(step.inputs, step.compiled.inputs):
            if value not in known:
                raise InternalError(f"graph step {n} ({name}): {field} reads value {value}, which no earlier step "
                                    f"writes and no input or constant holds")
            if known[value].data_type != desc.data_type or known[value].buffer_bytes < desc.buffer_bytes:
                raise InternalError(f"graph step {n} ({name}): {field} expects {desc!r}, value {value} is "
                                    f"{known[value]!r}")
        known.update((value, desc) for value, (_, desc) in zip(step.outputs, step.compiled.outputs))
    missing = [v for v in outputs if v not in known]
    if missing:
        raise InternalError(f"graph outputs {missing}: no step writes them and no input or constant holds them")


def upload(device, contents: np.ndarray, desc: TensorDesc, what: str = "a constant") -> Tensor:
    """A Tensor for `desc` whose buffer starts with `contents` (buffer elements, C order).
    Unlike `device.tensor` nothing is cleared (kernels read only the desc's elements)."""
    ctx = device._ctx
    with gpu_errors(ctx):
        t = Tensor(device, ctx.pool.acquire(desc.buffer_bytes, device.caps,
                                            f"{what} ({desc.data_type.name} {list(desc.sizes)})"), desc)
        ctx.transfers.upload(t.buffer, contents)
    return t


def run_steps(device, steps: Sequence[Step], sources: dict[int, Tensor], outputs: Sequence[int]) -> list[Tensor]:
    """Record `steps` (submitted with the rest of the recorded work: runtime/batching.py)
    and return one new Tensor per id in `outputs`: `Plan(steps, outputs).run(...)` (a caller
    that runs the same steps again keeps its Plan: CompiledGraph does)."""
    return Plan(steps, outputs).run(device, sources)


class Plan:
    """`steps` made ready to record again and again (a compiled graph's calls): what each
    step reads and writes, the bytes and clears of the values it writes, worked out once.

    `run(device, sources)`: `sources` are the Tensors of the values no step writes (graph
    inputs, constants, checked by the caller: live, on the device, of the descs
    check_steps was given); they are only read. Every value a step writes gets a pooled
    buffer; those not returned go back to the pool once recorded (work recorded later is all
    that can reuse them), so a repeated run allocates nothing, and gets the same buffers, so
    the steps' bind groups come from their caches. A returned Tensor is never a source nor
    returned twice: an output that is a source, or an id listed again, is a GPU copy
    (recorded with them). The steps are recorded through `compiled.record_buffers` with no
    Tensor made and nothing checked again per step: check_steps checked the plan (each
    step's arity, the data type and bytes of every value it reads) at compile, and the
    buffers a step writes are new, so never one it reads nor one another output has.
    """

    def __init__(self, steps: Sequence[Step], outputs: Sequence[int]):
        wanted = set(outputs)
        self.outputs = list(outputs)
        #: (record, value ids read, [(value id, bytes, what, cleared first)] written) per step
        self.steps = [
            (step.compiled.record_buffers, step.inputs,
             [(v, desc.buffer_bytes, f"a value of a compiled graph ({desc.data_type.name} {list(desc.sizes)})",
               v in wanted and not desc.covers_buffer)
              for v, (_, desc) in zip(step.outputs, step.compiled.outputs)])
            for step in steps]
        self._descs = {v: desc for step in steps for v, (_, desc) in zip(step.outputs, step.compiled.outputs)}

    def run(self, device, sources: dict[int, Tensor]) -> list[Tensor]:
        ctx = device._ctx
        acquire, caps = ctx.pool.acquire, device.caps
        buffers = {v: t.buffer for v, t in sources.items()}
        made: dict = {}  # value id -> the pooled buffer a step writes it into
        results = []
        try:
            with gpu_errors(ctx):
                for record, reads, writes in self.steps:
                    written = []
                    clears = []
                    for v, nbytes, what, cleared in writes:
                        buf = acquire(nbytes, caps, what)
                        made[v] = buffers[v] = buf
                        written.append(buf)
                        if cleared:  # (a returned value starts zeroed where its kernel leaves bytes)
                            clears.append(buf)
                    record([buffers[v] for v in reads], written, clears)
                returned: dict = {}  # value id -> its first returned Tensor (an id listed again: a copy of it)
                for v in self.outputs:
                    own = made.pop(v, None)
                    if own is not None:
                        t = returned[v] = Tensor(device, own, self._descs[v])
                    else:
                        t = (sources[v] if v in sources else returned[v]).copy()
                    results.append(t)
        except BaseException:
            for t in results:
                t.free()
            raise
        finally:
            release = ctx.pool.release
            for buf in reversed(made.values()):  # intermediates: reused only by work recorded after them
                release(buf)
        return results
