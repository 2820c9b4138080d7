"""The kernels of DML_JOIN and DML_SPLIT: one box copy per input (JOIN: into its region of
the output) or per output (SPLIT: from its region of the input), one dispatch each, in
order in one pass, so that a kernel binds one input and one output however many tensors
there are. The block strategies apply where every region is packed and starts on a 16-byte
block (joining along the outermost axis of more than one element, sizes in whole blocks),
else `strided`; `coalesced` (GPU-class) always."""

from __future__ import annotations

from .family import Copy, CopyPlanner, copy


class JoinPlanner(CopyPlanner):
    def copies(self, desc) -> list[Copy]:
        """Input k copied to its region of the output."""
        out = desc.output_tensor
        return [copy(out.data_type, t.sizes, out.effective_strides, t.effective_strides, out_base=base, source_index=k)
                for k, t, base in _regions(out, desc.input_tensors, desc.axis)]


class SplitPlanner(CopyPlanner):
    def copies(self, desc) -> list[Copy]:
        """Output k copied from its region of the input."""
        inp = desc.input_tensor
        return [copy(inp.data_type, t.sizes, t.effective_strides, inp.effective_strides, src_base=base, output_index=k)
                for k, t, base in _regions(inp, desc.output_tensors, desc.axis)]


def _regions(whole, parts, axis: int):
    """(k, part k, the buffer element where its region of `whole` starts) for each part: the
    parts lie one after the other along `axis`, part k from the sizes of the parts before it."""
    start = 0
    for k, t in enumerate(parts):
        yield k, t, start * whole.effective_strides[axis]
        start += t.sizes[axis]


JOIN = JoinPlanner()
SPLIT = SplitPlanner()
