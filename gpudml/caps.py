"""What an adapter can do, as the compiler and the operator planners see it.

`Caps` is plain data: the runtime reads it off a wgpu adapter (runtime/context.py), and
`PROFILES` name typical ones, so that WGSL can be generated on a machine with no
adapter at all (`gpudml shader --caps gl-cpu ...`). No wgpu import here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from .errors import InvalidArgumentError

#: Native features the runtime requests when an adapter has them (kernels may use them;
#: data movement never depends on them).
WANTED_FEATURES = (
    "shader-f16", "shader-f64", "shader-int64", "shader-i16", "subgroup",
    "timestamp-query", "mappable-primary-buffers",
)


@dataclass(frozen=True)
class Caps:
    """An adapter's name, kind, native features and the limits kernels are planned against."""

    name: str
    backend: str
    adapter_type: str  # wgpu's adapter type: "CPU", "DiscreteGPU", "IntegratedGPU", ...
    features: frozenset[str]
    max_workgroups_per_dimension: int
    max_storage_binding_size: int
    max_buffer_size: int
    max_invocations_per_workgroup: int
    max_workgroup_storage_size: int
    #: Storage buffers one kernel may bind (WebGPU's default, which every adapter offers, is
    #: 8; the runtime raises it to the adapter's own: lavapipe 32, llvmpipe through GL 16).
    max_storage_buffers_per_shader_stage: int = 8
    #: "cpu" or "gpu": which family of kernel strategies to prefer; "" = detected from the
    #: adapter (`detected_class`). Set by Device(adapter_class=...) or GPUDML_ADAPTER_CLASS.
    class_override: str = ""
    #: Byte offsets of storage bindings are multiples of this (WebGPU's default: 256).
    min_storage_offset_alignment: int = 256
    #: Lowered limits (0: the adapter's own), for tests and experiments: bindings of at most
    #: `forced_binding_bytes` (Device(max_binding_bytes=...), GPUDML_MAX_BINDING_BYTES) and
    #: buffers of at most `forced_buffer_bytes` (max_buffer_bytes, GPUDML_MAX_BUFFER_BYTES).
    forced_binding_bytes: int = 0
    forced_buffer_bytes: int = 0

    @property
    def detected_class(self) -> str:
        """The adapter's class as its type and name tell: "cpu" for software adapters (wgpu's
        type CPU, or a known software rasterizer's name under a backend that reports the type
        as Unknown), "gpu" for integrated, discrete and virtual GPUs."""
        return "cpu" if is_software(self.adapter_type, self.name) else "gpu"

    @property
    def adapter_class(self) -> str:
        """The class the operator planners choose strategies for: "cpu" (one invocation per
        output row, long runs per invocation: what CPU emulators want) or "gpu" (many
        cooperating invocations, neighbouring ones on neighbouring addresses)."""
        return self.class_override or self.detected_class

    @property
    def is_software(self) -> bool:
        """True when the planners treat the adapter as a CPU adapter (adapter_class "cpu")."""
        return self.adapter_class == "cpu"

    def with_class(self, adapter_class: str | None) -> Caps:
        """These Caps with the adapter class overridden ("cpu"/"gpu"; None keeps them)."""
        if adapter_class is None:
            return self
        return replace(self, class_override=parse_class(adapter_class, "adapter_class"))

    def has(self, feature: str) -> bool:
        return feature in self.features

    @property
    def buffer_bytes(self) -> int:
        """The largest buffer gpudml allocates: the adapter's max-buffer-size or a lower forced one."""
        return min(self.max_buffer_size, self.forced_buffer_bytes or self.max_buffer_size)

    @property
    def binding_bytes(self) -> int:
        """The largest storage binding gpudml makes (a tensor above it is bound in segments):
        the adapter's max-storage-buffer-binding-size or a lower forced one, and never more
        than one buffer."""
        forced = self.forced_binding_bytes or self.max_storage_binding_size
        return min(self.max_storage_binding_size, forced, self.buffer_bytes)

    @property
    def segment_quantum(self) -> int:
        """The smallest segment: bindings start at multiples of the offset alignment and of
        16 bytes (so that no element or 16-byte block straddles two segments)."""
        return max(16, self.min_storage_offset_alignment)

    @property
    def largest_segment(self) -> int:
        """The largest segment any plan uses: the largest power of two within the adapter's
        own binding and buffer limits (a forced binding limit may be raised up to it where a
        kernel would otherwise need more bindings than the adapter has)."""
        return max(self.segment_quantum, floor_pow2(min(self.max_storage_binding_size, self.buffer_bytes)))

    @property
    def part_bytes(self) -> int:
        """The bytes of each buffer but the last of a tensor larger than one buffer: a whole
        number of the largest segments, so that no segment straddles two buffers."""
        q = self.largest_segment
        return max(q, self.buffer_bytes // q * q)

    def with_limits(self, max_binding_bytes: int | None, max_buffer_bytes: int | None) -> Caps:
        """These Caps with lowered binding and buffer limits (None keeps each)."""
        caps = self
        if max_binding_bytes is not None:
            caps = replace(caps, forced_binding_bytes=max_binding_bytes)
        if max_buffer_bytes is not None:
            caps = replace(caps, forced_buffer_bytes=max_buffer_bytes)
        return caps


#: WGSL's language feature packed_4x8_integer_dot_product (dot4I8Packed, dot4U8Packed), as a
#: Caps feature: the runtime probes it by compiling PACKED_DOT_PROBE (runtime/context.py;
#: wgpu-native reports no language features); kernels/quantized.py's packed products use it.
PACKED_DOT = "packed-4x8-integer-dot-product"
PACKED_DOT_PROBE = """
@group(0) @binding(0) var<storage, read_write> o: array<i32>;
@compute @workgroup_size(1) fn main() { o[0] = dot4I8Packed(0x01020304u, 0xFF010101u); }
"""

#: The native features gpudml asks for, by wgpu's names, with the short names `gpudml info`
#: prints.
FEATURE_NAMES = {
    "shader-f16": "f16", "shader-f64": "f64", "shader-int64": "int64", "shader-i16": "i16",
    "subgroup": "subgroups", "timestamp-query": "timestamps", "mappable-primary-buffers": "mappable buffers",
    # (a WGSL language feature, probed by compiling a kernel: kernels/quantized.py)
    PACKED_DOT: "packed 4x8 dot",
}


def floor_pow2(n: int) -> int:
    return 1 << (max(1, n).bit_length() - 1)


def parse_limit(value, field: str, minimum: int) -> int:
    """A byte limit: an int (or a decimal string, as environment variables give it) of at
    least `minimum`; InvalidArgumentError otherwise."""
    if isinstance(value, str):
        text = value.strip()
        try:
            value = int(text, 0)
        except ValueError:
            raise InvalidArgumentError(f"{field} must be a number of bytes, got {text!r}") from None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(f"{field} must be an int (bytes), got {type(value).__name__}")
    if value < minimum:
        raise InvalidArgumentError(f"{field} = {value} is below the smallest allowed, {minimum} bytes")
    return value


def limits_from_env() -> tuple[int | None, int | None]:
    """(GPUDML_MAX_BINDING_BYTES, GPUDML_MAX_BUFFER_BYTES); None where unset or empty."""
    out = []
    for name in ("GPUDML_MAX_BINDING_BYTES", "GPUDML_MAX_BUFFER_BYTES"):
        value = os.environ.get(name, "")
        out.append(parse_limit(value, name, MIN_FORCED_LIMIT) if value.strip() else None)
    return out[0], out[1]


#: The smallest forced binding or buffer limit (Device(max_binding_bytes=...)): WebGPU's
#: largest offset alignment.
MIN_FORCED_LIMIT = 256


#: Substrings of software adapters' names (lower case).
SOFTWARE_NAMES = ("llvmpipe", "lavapipe", "softpipe", "swiftshader", "microsoft basic render")
ADAPTER_CLASSES = ("cpu", "gpu")


def is_software(adapter_type: str, name: str) -> bool:
    """A software adapter: wgpu's type CPU, or a known software rasterizer's name (some
    backends report such an adapter's type as Unknown)."""
    return adapter_type == "CPU" or any(n in name.lower() for n in SOFTWARE_NAMES)


def parse_class(value, field: str) -> str:
    """An adapter class, "cpu" or "gpu" (any case); InvalidArgumentError otherwise."""
    name = value.strip().lower() if isinstance(value, str) else value
    if name not in ADAPTER_CLASSES:
        raise InvalidArgumentError(f"{field} must be \"cpu\" or \"gpu\", got {value!r}")
    return name


def class_from_env() -> str | None:
    """GPUDML_ADAPTER_CLASS (cpu|gpu), or None where it is unset or empty."""
    value = os.environ.get("GPUDML_ADAPTER_CLASS", "")
    return parse_class(value, "GPUDML_ADAPTER_CLASS") if value.strip() else None


_MESA_LIMITS = {
    "max_workgroups_per_dimension": 65535, "max_storage_binding_size": 1 << 27, "max_buffer_size": 2**31 - 1,
    "max_invocations_per_workgroup": 1024, "max_workgroup_storage_size": 32768,
}

#: Named capability profiles (`gpudml shader --caps NAME`), as read off the adapters they name.
PROFILES: dict[str, Caps] = {
    # Mesa 22.3 lavapipe, as `gpudml info` reports it on Debian 12.
    "vulkan-cpu": Caps("profile vulkan-cpu (Mesa lavapipe via Vulkan)", "Vulkan", "CPU",
                       frozenset(WANTED_FEATURES) | {PACKED_DOT}, **_MESA_LIMITS,
                       max_storage_buffers_per_shader_stage=32),
    # Mesa 22.3 llvmpipe through wgpu's OpenGL backend: no 16/64-bit shader types, no subgroups.
    "gl-cpu": Caps("profile gl-cpu (Mesa llvmpipe via OpenGL)", "OpenGL", "CPU",
                   frozenset({"timestamp-query", PACKED_DOT}), **_MESA_LIMITS, max_storage_buffers_per_shader_stage=16),
    # A discrete GPU through Vulkan (the limits wgpu reports for a recent NVIDIA card; storage
    # buffers per kernel: WebGPU's default 8, what Metal-class adapters offer, so that what
    # this profile prints runs anywhere).
    "gpu": Caps("profile gpu (a discrete GPU via Vulkan)", "Vulkan", "DiscreteGPU",
                frozenset({"shader-f16", "shader-f64", "shader-int64", "shader-i16", "subgroup", "timestamp-query",
                           PACKED_DOT}),
                max_workgroups_per_dimension=65535, max_storage_binding_size=2**31 - 1, max_buffer_size=2**32 - 1,
                max_invocations_per_workgroup=1024, max_workgroup_storage_size=49152),
}


def profile(name: str) -> Caps:
    """The Caps of a named profile; InvalidArgumentError naming the known ones."""
    try:
        return PROFILES[name]
    except KeyError:
        raise InvalidArgumentError(
            f"caps: {name!r} is not a capability profile (one of {', '.join(PROFILES)})") from None
