"""onnxruntime's session surface for drop-in use (API.md section 16): `SessionOptions` (the
attribute names of onnxruntime.SessionOptions; an onnxruntime.SessionOptions is read the
same way), the execution providers a session accepts, and `ModelMetadata`
(onnxruntime.ModelMetadata's fields). What is honoured and what is only accepted is listed
in docs/onnx.md ("onnxruntime's surface")."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import onnx

from ..device import Device, default_device
from ..errors import InvalidArgumentError

#: The provider a gpudml session runs on (get_providers()).
PROVIDER = "GpudmlExecutionProvider"
#: Provider names a session accepts: gpudml's own; DirectML's and WebGPU's, which gpudml stands
#: in for (DirectML's operators, on WebGPU); and the CPU provider, which onnxruntime code lists
#: as its fallback (gpudml has none: every node runs on the device, or construction refuses
#: the model). Every one of them means the same thing: the session's gpudml Device.
PROVIDERS = (PROVIDER, "DmlExecutionProvider", "WebGpuExecutionProvider", "CPUExecutionProvider")


def get_available_providers() -> list[str]:
    """onnxruntime.get_available_providers(): the provider names a session accepts."""
    return list(PROVIDERS)


class GraphOptimizationLevel(enum.IntEnum):
    """onnxruntime.GraphOptimizationLevel's names and values. gpudml's one graph optimization
    is fusion: ORT_DISABLE_ALL runs one kernel per node (fuse=False), every other level fuses."""

    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_LAYOUT = 3
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    """onnxruntime.ExecutionMode (accepted; a gpudml run records its dispatches in order)."""

    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


@dataclass
class SessionOptions:
    """onnxruntime.SessionOptions' attributes, for code that builds its options without
    onnxruntime installed. Honoured: `graph_optimization_level` (ORT_DISABLE_ALL: no fusion;
    below ORT_ENABLE_EXTENDED: QDQ groups run as written, gpudml/onnx/qdq.py), `enable_profiling`
    and `profile_file_prefix` (gpudml's profiler; `end_profiling()` writes the file), and the
    session config entry "session.qdqisint8allowed" (qdq.INT8_ALLOWED_KEY). The others are
    accepted and kept (docs/onnx.md says why each has no effect)."""

    graph_optimization_level: GraphOptimizationLevel = GraphOptimizationLevel.ORT_ENABLE_ALL
    enable_profiling: bool = False
    profile_file_prefix: str = "onnxruntime_profile_"
    intra_op_num_threads: int = 0
    inter_op_num_threads: int = 0
    execution_mode: ExecutionMode = ExecutionMode.ORT_SEQUENTIAL
    log_severity_level: int = 2
    log_verbosity_level: int = 0
    logid: str = ""
    optimized_model_filepath: str = ""
    enable_cpu_mem_arena: bool = True
    enable_mem_pattern: bool = True
    enable_mem_reuse: bool = True
    use_deterministic_compute: bool = False
    _config: dict = field(default_factory=dict, repr=False)

    def add_session_config_entry(self, key: str, value: str) -> None:
        """Kept (get_session_config_entry gives it back); of the entries, only
        "session.qdqisint8allowed" changes what gpudml does (gpudml/onnx/qdq.py)."""
        self._config[str(key)] = str(value)

    def get_session_config_entry(self, key: str) -> str:
        if key not in self._config:
            raise InvalidArgumentError(f"SessionOptions: no session config entry {key!r}")
        return self._config[key]


def optimization_disabled(options) -> bool:
    """True where `options` (gpudml's or onnxruntime's SessionOptions) set
    graph_optimization_level to ORT_DISABLE_ALL."""
    level = getattr(options, "graph_optimization_level", None)
    if level is None:
        return False
    name = getattr(level, "name", None)  # both enums have names; onnxruntime's (pybind11) has no int()
    if name is not None:
        return name == "ORT_DISABLE_ALL"
    return int(level) == 0


def optimization_basic(options) -> bool:
    """True where `options` set graph_optimization_level to ORT_ENABLE_BASIC (onnxruntime's
    level-1 rewrites only: no QDQ group becomes a quantized operator, gpudml/onnx/qdq.py)."""
    level = getattr(options, "graph_optimization_level", None)
    if level is None:
        return False
    name = getattr(level, "name", None)
    return name == "ORT_ENABLE_BASIC" if name is not None else int(level) == 1


def check_options(options, where: str) -> None:
    """`options` is None or has SessionOptions' attributes (gpudml's, onnxruntime's)."""
    if options is None:
        return
    wanted = ("graph_optimization_level", "enable_profiling", "intra_op_num_threads")
    if not all(hasattr(options, name) for name in wanted):
        raise InvalidArgumentError(
            f"{where}: sess_options must be a gpudml.onnx.SessionOptions, an onnxruntime.SessionOptions or None, "
            f"got {type(options).__name__}")


def parse_providers(providers, provider_options, where: str) -> dict:
    """The options of the session's provider from onnxruntime's `providers` (names, or
    (name, options dict) tuples) and `provider_options` (one dict per provider): the first
    accepted provider's that is not the CPU one (else the CPU one's), as strings. A name
    gpudml does not accept is an InvalidArgumentError listing the accepted ones."""
    if providers is None:
        if provider_options is not None:
            raise InvalidArgumentError(f"{where}: provider_options given without providers")
        return {}
    if isinstance(providers, (str, bytes)) or not hasattr(providers, "__iter__"):
        raise InvalidArgumentError(f"{where}: providers must be a list of provider names or (name, options) "
                                   f"tuples, got {type(providers).__name__} {providers!r}")
    providers = list(providers)
    if provider_options is not None:
        provider_options = list(provider_options)
        if len(provider_options) != len(providers):
            raise InvalidArgumentError(f"{where}: {len(provider_options)} provider_options for {len(providers)} "
                                       f"providers (one dict each)")
        if any(isinstance(p, tuple) for p in providers):
            raise InvalidArgumentError(f"{where}: give a provider's options in its (name, options) tuple or in "
                                       f"provider_options, not both")
    chosen: list[tuple[str, dict]] = []
    for k, item in enumerate(providers):
        name, opts = item if isinstance(item, tuple) and len(item) == 2 else (item, None)
        if provider_options is not None:
            opts = provider_options[k]
        if not isinstance(name, str):
            raise InvalidArgumentError(f"{where}: providers[{k}] must be a provider name or a (name, options dict) "
                                       f"tuple, got {item!r}")
        if name not in PROVIDERS:
            raise InvalidArgumentError(f"{where}: unknown execution provider {name!r}; gpudml runs every model on "
                                       f"its Device and accepts the providers {', '.join(map(repr, PROVIDERS))} "
                                       f"(all the same: the session's device)")
        if opts is not None and not isinstance(opts, dict):
            raise InvalidArgumentError(f"{where}: the options of provider {name!r} must be a dict, got "
                                       f"{type(opts).__name__}")
        chosen.append((name, {str(key): str(value) for key, value in (opts or {}).items()}))
    device_providers = [opts for name, opts in chosen if name != "CPUExecutionProvider"]
    if device_providers:
        return device_providers[0]
    return chosen[0][1] if chosen else {}


def session_device(device, sess_options, providers, provider_options, where: str) -> tuple[Device, dict]:
    """The session's Device and its provider's options (as strings), from InferenceSession's
    arguments, all checked: `device` (None: the provider option `adapter`, as
    Device(adapter=), else the default device); a `device_id` other than 0 is refused (gpudml
    names adapters, it does not number them)."""
    check_options(sess_options, where)
    chosen = parse_providers(providers, provider_options, where)
    if device is not None and not isinstance(device, Device):
        hint = (" (onnxruntime's fourth argument, provider_options, is the keyword provider_options= here)"
                if isinstance(device, (list, tuple)) else "")
        raise InvalidArgumentError(f"{where}: device must be a gpudml.Device or None, got {type(device).__name__}"
                                   f"{hint}")
    device_id = chosen.get("device_id", "0")
    if device_id.strip() != "0":
        raise InvalidArgumentError(f"{where}: provider option device_id={device_id!r}: gpudml picks an adapter by "
                                   f"name, not by number; give the option 'adapter' (\"vulkan\", \"gl\" or part of "
                                   f"an adapter's name) or a device=gpudml.Device(adapter=...)")
    adapter = chosen.get("adapter")
    if device is None:
        return (Device(adapter=adapter) if adapter is not None else default_device()), chosen
    if adapter is not None and not device.shares_memory_with(Device(adapter=adapter)):
        raise InvalidArgumentError(f"{where}: the provider option adapter={adapter!r} names another adapter than "
                                   f"the device's, {device.adapter_name}")
    return device, chosen


@dataclass(frozen=True)
class ModelMetadata:
    """onnxruntime.ModelMetadata: the model's producer_name, graph_name, domain, description
    (the model's doc_string), graph_description (the graph's doc_string), version
    (model_version) and custom_metadata_map (its metadata_props)."""

    producer_name: str
    graph_name: str
    domain: str
    description: str
    graph_description: str
    version: int
    custom_metadata_map: dict

    @classmethod
    def of(cls, model: onnx.ModelProto) -> ModelMetadata:
        return cls(producer_name=model.producer_name, graph_name=model.graph.name, domain=model.domain,
                   description=model.doc_string, graph_description=model.graph.doc_string,
                   version=model.model_version,
                   custom_metadata_map={p.key: p.value for p in model.metadata_props})


__all__ = ["PROVIDERS", "ExecutionMode", "GraphOptimizationLevel", "ModelMetadata", "SessionOptions",
           "get_available_providers"]
