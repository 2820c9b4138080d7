"""The Dispatch of a data-movement kernel (shaders/lib/movement.wgsl.j2), shared by
Slice1, Padding and ReverseSubsequences: they differ only in `value_at`."""

from __future__ import annotations

from ..tensor_desc import TensorDesc
from .base import Binding, Dispatch, element_bits

WORKGROUP_SIZE = 64
#: Output elements per invocation: decoding a coordinate costs divisions, stepping it does not.
#: Segments, kernel ms (A/B, one process): RUN 16 / 32 / 64 = W4 27.0 / 21.3 / 20.9,
#: W5 23.0 / 19.9 / 19.5, W6 38.2 / 31.6 / 32.3; workgroups of 256 no better (21.4, 24.0, 32.8 at 64).
#: With whole-chunk copies (paired kernel-time ratios to RUN 32 without them, 11 rounds):
#: RUN 32 W4 0.89, W5 0.96, W6 1.06; RUN 64 W4 0.87, W5 0.87, W6 1.03.
RUN = 64
#: Packed outputs walk segments (stretches of a row with an affine input offset) and
#: need new coordinate math only where a segment ends; False: the element-by-element path.
SEGMENTS = True


def movement_dispatch(
    template: str,
    input_desc: TensorDesc,
    output_desc: TensorDesc,
    uniforms: list[tuple[str, tuple[int, ...]]],
    *,
    extra_bindings: tuple[Binding, ...] = (),
    params: dict | None = None,
    segments: bool | None = None,
    invocations: int | None = None,
) -> Dispatch:
    bits = element_bits(output_desc)
    packed = output_desc.is_packed
    count = output_desc.element_count
    if invocations is None:
        invocations = -(-count // RUN)
    if packed:
        out_type = "array<vec4<u32>>"
    else:
        out_type = "array<atomic<u32>>" if bits < 32 else "array<u32>"
    segments = SEGMENTS if segments is None else segments
    bindings = (
        Binding("output", "output:0", out_type, writable=True),
        Binding("input", "input:0"),
    ) + extra_bindings
    if segments and packed:  # the same buffer as 16-byte chunks (buffers are whole chunks)
        bindings += (Binding("input_chunks", "input:0", "array<vec4<u32>>"),)
    all_uniforms = [
        ("shape", (count,)),
        ("out_sizes", output_desc.sizes),
        ("out_strides", output_desc.effective_strides),
    ] + uniforms
    return Dispatch(
        template=template,
        params={"rank": output_desc.rank, "bits": bits, "packed_output": packed, "run": RUN,
                "segments": segments, **(params or {})},
        bindings=bindings,
        uniforms=tuple((name, tuple(values)) for name, values in all_uniforms),
        invocations=invocations,
        workgroup_size=WORKGROUP_SIZE,
    )
