"""The Dispatch of a data-movement kernel (shaders/lib/movement.wgsl.j2), shared by
Slice1, Padding and ReverseSubsequences: they differ only in how an output element
finds its input (`value_at`, `seg_start`), and share these strategies:

- `segments` (packed outputs; the choice): each invocation owns RUN consecutive output
  elements and walks *segments*, stretches of an output row whose input offset is
  affine or a fill, so that coordinate math happens only where a segment ends; 16-byte
  chunks are assembled in registers and stored whole; contiguous aligned stretches copy
  whole chunks.
- `elements` (packed outputs): RUN consecutive output elements, each found by
  `value_at`, assembled into 16-byte chunks.
- `strided` (any output, the only one for outputs with gaps): element by element, 8- and
  16-bit elements with atomic read-modify-write of their word.
"""

from __future__ import annotations

from ..builder import Buffer, Dispatch, input_buffer, output_buffer
from ..tensor_desc import TensorDesc
from .base import element_bits

WORKGROUP_SIZE = 64
#: Output elements per invocation: decoding a coordinate costs divisions, stepping it does not.
#: Segments, kernel ms (A/B, one process): RUN 16 / 32 / 64 = W4 27.0 / 21.3 / 20.9,
#: W5 23.0 / 19.9 / 19.5, W6 38.2 / 31.6 / 32.3; workgroups of 256 no better (21.4, 24.0, 32.8 at 64).
#: With whole-chunk copies (paired kernel-time ratios to RUN 32 without them, 11 rounds):
#: RUN 32 W4 0.89, W5 0.96, W6 1.06; RUN 64 W4 0.87, W5 0.87, W6 1.03.
RUN = 64
STRATEGIES = ("segments", "elements", "strided")


def strategies_for(output: TensorDesc) -> tuple[str, ...]:
    """Packed outputs: segments (the choice; 0.20-0.33x of the copy kernel became 0.60-0.71x
    on lavapipe), else elements. Outputs with gaps: strided."""
    return ("segments", "elements") if output.is_packed else ("strided",)


def movement_dispatch(
    template: str,
    strategy: str,
    output_desc: TensorDesc,
    uniforms: dict[str, int | tuple[int, ...]],
    *,
    extra_buffers: tuple[Buffer, ...] = (),
    params: dict | None = None,
    invocations: int | None = None,
) -> Dispatch:
    """The dispatch of `template` (which extends lib/movement.wgsl.j2) under `strategy`.
    Uniforms `count`, `out_sizes` and `out_strides` come first, then the operator's own."""
    bits = element_bits(output_desc)
    count = output_desc.element_count
    if invocations is None:
        invocations = -(-count // RUN)
    buffers = (
        output_buffer(0, "output", bits, "elements" if strategy == "strided" else "chunks"),
        input_buffer(0, "input"),
    ) + extra_buffers
    if strategy == "segments":  # the same buffer as 16-byte chunks (buffers are whole chunks)
        buffers += (input_buffer(0, "input_chunks", "chunks"),)
    return Dispatch(
        template=template,
        params={"rank": output_desc.rank, "bits": bits, "run": RUN, "strategy": strategy, **(params or {})},
        buffers=buffers,
        uniforms={"count": count, "out_sizes": output_desc.sizes, "out_strides": output_desc.effective_strides,
                  **uniforms},
        invocations=invocations,
        workgroup_size=WORKGROUP_SIZE,
    )
