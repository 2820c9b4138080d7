"""HLSL compute shaders compiled for wgpu: the compilers, what a compiled kernel binds, and
its cbuffer laid out by HLSL's packing rules. Pure: no wgpu (gpudml/kernel.py and
device/custom.py run what this compiles).

Two compilers, neither a Python dependency of gpudml:

- Slang (the default; `pip install "gpudml[hlsl]"`): the `slangpy` wheel ships
  `libslang-compiler.so`, whose C API (called through ctypes; slangpy itself is never
  imported) turns HLSL into WGSL with no GPU device;
- glslang (`compiler="glslang"`; the Debian/Ubuntu package `glslang-tools`):
  `glslangValidator` turns HLSL into SPIR-V, which wgpu reads through naga's SPIR-V front end.

Both compile with register shifts, so that the register class survives as the WGSL/SPIR-V
binding number: b<N> -> binding N, t<N> -> T_SHIFT + N, u<N> -> U_SHIFT + N (descriptor
set 0 for all), and with HLSL's cbuffer packing (Slang's `-fvk-use-dx-layout`, glslang's
`--hlsl-offsets`). What a kernel binds is read back from the compiler's output (`Interface`):
registers a kernel declares but never uses are compiled away. A compiled kernel is kept in
the disk cache (gpudml/cache.py, kind "hlsl"), keyed by the compiler, its version, the
source, the entry point and the defines.
"""

from __future__ import annotations

import base64
import ctypes
import glob
import hashlib
import importlib.util
import json
import os
import re
import shutil
import struct
import subprocess
import tempfile
import threading
from dataclasses import asdict, dataclass

import numpy as np

from . import cache
from .errors import InvalidArgumentError, UnsupportedError

COMPILERS = ("slang", "glslang")
T_SHIFT = 32  # t<N> -> binding 32 + N
U_SHIFT = 64  # u<N> -> binding 64 + N
MAX_REGISTERS = 32  # t0..t31, u0..u31, b0..b31
#: What to install, per compiler (the error where none is found says so).
INSTALL = {
    "slang": 'pip install "gpudml[hlsl]" (the slangpy wheel, which ships Slang\'s compiler library)',
    "glslang": "apt-get install glslang-tools (glslangValidator; or put glslangValidator on PATH)",
}
#: Bumped when what this module makes of a compiler's output changes (the cache key has it).
FORMAT = 1
#: Source name compiler messages use.
SOURCE_NAME = "kernel.hlsl"

# ---------------------------------------------------------------------------- the interface
#: HLSL scalar names by WGSL/SPIR-V scalar, and the numpy-free DirectML type names a buffer of
#: that element accepts (uint: any type, its raw 32-bit words, as ByteAddressBuffer reads them).
SCALARS = {"f32": "float", "i32": "int", "u32": "uint", "f16": "half", "bool": "bool"}
BUFFER_TYPES = {"float": ("FLOAT32",), "int": ("INT32",), "uint": None, "half": ("FLOAT16",)}


@dataclass(frozen=True)
class Resource:
    """A buffer the kernel binds: its register ("t0", "u1"), wgpu binding, name in the source,
    element scalar ("float", "int", "uint", "half", or "" for a struct), and whether it is written."""

    register: str
    binding: int
    name: str
    element: str
    writable: bool

    @property
    def index(self) -> int:
        return int(self.register[1:])


@dataclass(frozen=True)
class Constant:
    """A cbuffer member: its name, HLSL type ("float", "uint2", ...; "" where it is not a
    scalar or a vector: it cannot be set by name), byte offset and size by HLSL's packing."""

    name: str
    type: str
    offset: int
    size: int

    @property
    def scalar(self) -> str:
        return self.type.rstrip("1234")

    @property
    def count(self) -> int:
        return int(self.type[-1]) if self.type[-1:].isdigit() else 1


@dataclass(frozen=True)
class Interface:
    """What a compiled kernel binds: its buffers (by register), its cbuffer b0 (members at
    HLSL offsets; `cbuffer_bytes` in all, 0 without one), its [numthreads] and whether it
    uses wave (subgroup) operations."""

    resources: tuple[Resource, ...]
    constants: tuple[Constant, ...]
    cbuffer_binding: int | None
    cbuffer_bytes: int
    workgroup_size: tuple[int, int, int]
    subgroups: bool
    entry: str

    @property
    def inputs(self) -> tuple[Resource, ...]:
        return tuple(sorted((r for r in self.resources if r.register[0] == "t"), key=lambda r: r.index))

    @property
    def outputs(self) -> tuple[Resource, ...]:
        return tuple(sorted((r for r in self.resources if r.register[0] == "u"), key=lambda r: r.index))

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> Interface:
        return cls(tuple(Resource(**r) for r in data["resources"]), tuple(Constant(**c) for c in data["constants"]),
                   data["cbuffer_binding"], data["cbuffer_bytes"], tuple(data["workgroup_size"]), data["subgroups"],
                   data["entry"])


@dataclass(frozen=True)
class CompiledHLSL:
    """A compiled kernel: `code` (WGSL text from Slang, SPIR-V bytes from glslang) and its
    `interface`; `source` is the HLSL it came from."""

    compiler: str
    code: str | bytes
    interface: Interface
    source: str
    entry: str
    defines: tuple[tuple[str, str], ...]

    @property
    def language(self) -> str:
        return "wgsl" if isinstance(self.code, str) else "spirv"


def hlsl_layout(members: list[tuple[str, str, int, int]]) -> list[tuple[str, str, int, int]]:
    """(name, type, offset, size) of each cbuffer member by HLSL's packing rules: members fill
    16-byte registers in order, a member never straddles a register boundary, and arrays and
    structs (type "") start a new register. `members` gives (name, type, component count,
    size in bytes)."""
    out, offset = [], 0
    for name, typ, _count, size in members:
        if not typ or size > 16:  # arrays, matrices, structs: a register of their own
            offset = -(-offset // 16) * 16
        elif offset // 16 != (offset + size - 1) // 16:
            offset = -(-offset // 16) * 16
        out.append((name, typ, offset, size))
        offset += size
    return out


#: WGSL's alignment of a vector of n 4-byte components (2-byte: half): what wgpu needs.
def wgsl_alignment(typ: str, size: int) -> int:
    if not typ:
        return 16
    count = int(typ[-1]) if typ[-1].isdigit() else 1
    component = size // count
    return component * (1 if count == 1 else 2 if count == 2 else 4)


def pack_constants(interface: Interface, constants, where: str) -> bytes:
    """The cbuffer's bytes for `constants` ({name: value}): each at its HLSL offset, checked
    against the member's type (InvalidArgumentError: a name the cbuffer lacks, a value of the
    wrong type or length). Members not given are zero."""
    constants = dict(constants or {})
    by_name = {c.name: c for c in interface.constants}
    if constants and interface.cbuffer_binding is None:
        raise InvalidArgumentError(f"{where}: constants {sorted(constants)} given, but the kernel reads no cbuffer "
                                   f"(b0)")
    data = bytearray(max(16, -(-interface.cbuffer_bytes // 16) * 16))
    for name, value in constants.items():
        member = by_name.get(name)
        if member is None:
            known = ", ".join(f"{c.type or 'other'} {c.name}" for c in interface.constants) or "none"
            raise InvalidArgumentError(f"{where}: constant {name!r}: the cbuffer has no such member (its members: "
                                       f"{known}; members the kernel never reads are compiled away)")
        if not member.type:
            raise InvalidArgumentError(f"{where}: constant {name!r}: only scalar and vector members can be set by "
                                       f"name; this one is an array, matrix or struct")
        data[member.offset:member.offset + member.size] = _constant_bytes(member, value, f"{where}: constant "
                                                                          f"{name!r}")
    return bytes(data)


_KINDS = {"float": "f", "half": "f", "int": "i", "uint": "u", "bool": "b"}
_DTYPES = {"float": "<f4", "half": "<f2", "int": "<i4", "uint": "<u4", "bool": "<u4"}


def _constant_bytes(member: Constant, value, where: str) -> bytes:
    scalar, count = member.scalar, member.count
    array = np.asarray(value)
    if array.dtype == object or array.ndim > 1 or array.size != count:
        raise InvalidArgumentError(f"{where}: {member.type} takes {count} value{'s' if count > 1 else ''}, got "
                                   f"{value!r}")
    kind = array.dtype.kind
    ok = {"float": "fiub", "half": "fiub", "int": "iub", "uint": "iub", "bool": "b"}[scalar]
    if kind not in ok:
        raise InvalidArgumentError(f"{where}: {member.type} needs {'a bool' if scalar == 'bool' else scalar} "
                                   f"value{'s' if count > 1 else ''}, got {value!r} ({array.dtype})")
    if scalar in ("int", "uint") and kind in "iu":
        lo, hi = (-(2**31), 2**31 - 1) if scalar == "int" else (0, 2**32 - 1)
        if array.min() < lo or array.max() > hi:
            raise InvalidArgumentError(f"{where}: {value!r} is outside {scalar}'s range [{lo}, {hi}]")
    return array.astype(_DTYPES[scalar]).reshape(-1).tobytes()


# ---------------------------------------------------------------------------- compilers
def available() -> tuple[str, ...]:
    """The compilers found on this machine, the default first."""
    return tuple(c for c in COMPILERS if (_slang_library() if c == "slang" else _glslang()) is not None)


def default_compiler() -> str:
    """GPUDML_HLSL_COMPILER, else Slang where it is installed, else glslang; UnsupportedError
    saying what to install where neither is."""
    chosen = os.environ.get("GPUDML_HLSL_COMPILER", "").strip().lower()
    if chosen:
        return check_compiler(chosen, "GPUDML_HLSL_COMPILER")
    found = available()
    if not found:
        raise UnsupportedError("gpudml: no HLSL compiler is installed; install Slang with "
                               f"{INSTALL['slang']}, or glslang with {INSTALL['glslang']}")
    return found[0]


def check_compiler(name, where: str) -> str:
    if name not in COMPILERS:
        raise InvalidArgumentError(f"{where}: compiler must be one of {', '.join(COMPILERS)} (or None: the "
                                   f"default), got {name!r}")
    if (_slang_library() if name == "slang" else _glslang()) is None:
        raise UnsupportedError(f"gpudml: the HLSL compiler {name} is not installed; {INSTALL[name]}")
    return name


def compile_hlsl(source: str, entry: str = "main", defines=None, compiler: str | None = None) -> CompiledHLSL:
    """`source` compiled by `compiler` (None: `default_compiler()`), from the disk cache when
    it was compiled before. InvalidArgumentError with the compiler's message and the numbered
    source where it does not compile."""
    if not isinstance(source, str) or not source.strip():
        raise InvalidArgumentError(f"Kernel.from_hlsl: source must be HLSL text (a non-empty str), got "
                                   f"{type(source).__name__}")
    if not isinstance(entry, str) or not re.fullmatch(r"[A-Za-z_]\w*", entry):
        raise InvalidArgumentError(f"Kernel.from_hlsl: entry must be the entry point's name, got {entry!r}")
    pairs = _defines(defines)
    compiler = default_compiler() if compiler is None else check_compiler(compiler, "Kernel.from_hlsl: compiler")
    key = hashlib.sha256(json.dumps([FORMAT, compiler, _version(compiler), entry, pairs, source]).encode())
    name = key.hexdigest()[:40] + ".json"
    cached = cache.read("hlsl", name)
    if cached is not None:
        try:
            data = json.loads(cached)
            code = data["code"] if data["language"] == "wgsl" else base64.b64decode(data["code"])
            return CompiledHLSL(compiler, code, Interface.from_json(data["interface"]), source, entry, pairs)
        except (ValueError, KeyError, TypeError):
            pass  # a damaged entry: compiled again
    if compiler == "slang":
        code, interface = _slang_compile(source, entry, pairs)
    else:
        code, interface = _glslang_compile(source, entry, pairs)
    text = code if isinstance(code, str) else base64.b64encode(code).decode()
    cache.write("hlsl", name, json.dumps({"language": "wgsl" if isinstance(code, str) else "spirv", "code": text,
                                          "interface": interface.to_json()}))
    return CompiledHLSL(compiler, code, interface, source, entry, pairs)


def _defines(defines) -> tuple[tuple[str, str], ...]:
    if defines is None:
        return ()
    if not isinstance(defines, dict):
        raise InvalidArgumentError(f"Kernel.from_hlsl: defines must be a dict {{name: value}} or None, got "
                                   f"{type(defines).__name__}")
    out = []
    for k, v in defines.items():
        if not isinstance(k, str) or not re.fullmatch(r"[A-Za-z_]\w*", k):
            raise InvalidArgumentError(f"Kernel.from_hlsl: defines: {k!r} is not a macro name")
        value = "1" if v is True else "0" if v is False else str(v)
        if "\n" in value:
            raise InvalidArgumentError(f"Kernel.from_hlsl: defines: {k}'s value spans lines")
        out.append((k, value))
    return tuple(sorted(out))


def numbered(source: str) -> str:
    """The source with line numbers, as compiler messages count them."""
    lines = source.splitlines()
    width = len(str(len(lines)))
    return "\n".join(f"{i:>{width}}  {line}" for i, line in enumerate(lines, start=1))


def _failed(compiler: str, message: str, source: str) -> InvalidArgumentError:
    return InvalidArgumentError(f"HLSL kernel did not compile ({compiler}):\n{message.strip()}\n\n"
                                f"{SOURCE_NAME}:\n{numbered(source)}")


# -- Slang, through libslang-compiler.so's C API ------------------------------------------
_SLANG_LOCK = threading.Lock()
_SLANG: dict = {}


def _slang_library() -> str | None:
    """The path of slangpy's libslang-compiler.so (found without importing slangpy), or None."""
    if "path" not in _SLANG:
        path = None
        try:
            spec = importlib.util.find_spec("slangpy")
        except (ImportError, ValueError):
            spec = None
        if spec is not None and spec.submodule_search_locations:
            for folder in spec.submodule_search_locations:
                found = sorted(glob.glob(os.path.join(folder, "libslang-compiler.so*")) +
                               glob.glob(os.path.join(folder, "slang-compiler.dll")) +
                               glob.glob(os.path.join(folder, "libslang-compiler*.dylib")))
                if found:
                    path = found[0]
                    break
        _SLANG["path"] = path
    return _SLANG["path"]


def _slang():
    """(the library, a session), made once per process."""
    with _SLANG_LOCK:
        if "lib" not in _SLANG:
            lib = ctypes.CDLL(_slang_library())
            p, c = ctypes.c_void_p, ctypes.c_char_p
            for fn, res, args in (
                ("spCreateSession", p, [c]), ("spCreateCompileRequest", p, [p]), ("spDestroyCompileRequest", None, [p]),
                ("spProcessCommandLineArguments", ctypes.c_int32, [p, ctypes.POINTER(c), ctypes.c_int]),
                ("spAddTranslationUnit", ctypes.c_int, [p, ctypes.c_int, c]),
                ("spAddTranslationUnitSourceString", None, [p, ctypes.c_int, c, c]),
                ("spAddEntryPoint", ctypes.c_int, [p, ctypes.c_int, c, ctypes.c_int]),
                ("spCompile", ctypes.c_int32, [p]), ("spGetDiagnosticOutput", c, [p]),
                ("spGetEntryPointCode", p, [p, ctypes.c_int, ctypes.POINTER(ctypes.c_size_t)]),
                ("spGetBuildTagString", c, []),
            ):
                getattr(lib, fn).restype = res
                getattr(lib, fn).argtypes = args
            _SLANG["session"] = lib.spCreateSession(None)
            _SLANG["lib"] = lib
        return _SLANG["lib"], _SLANG["session"]


SLANG_SOURCE_HLSL = 2  # SLANG_SOURCE_LANGUAGE_HLSL
SLANG_STAGE_COMPUTE = 6


def _slang_compile(source: str, entry: str, defines) -> tuple[str, Interface]:
    lib, session = _slang()
    args = ["-target", "wgsl", "-fvk-use-dx-layout", "-fvk-b-shift", "0", "all", "-fvk-t-shift", str(T_SHIFT), "all",
            "-fvk-u-shift", str(U_SHIFT), "all", "-warnings-disable", "39029"]
    for k, v in defines:
        args.append(f"-D{k}={v}")
    with _SLANG_LOCK:  # one compile request at a time per session
        request = lib.spCreateCompileRequest(session)
        try:
            argv = (ctypes.c_char_p * len(args))(*[a.encode() for a in args])
            if lib.spProcessCommandLineArguments(request, argv, len(args)) < 0:
                raise _failed("slang", lib.spGetDiagnosticOutput(request).decode(errors="replace"), source)
            unit = lib.spAddTranslationUnit(request, SLANG_SOURCE_HLSL, None)
            lib.spAddTranslationUnitSourceString(request, unit, SOURCE_NAME.encode(), source.encode())
            lib.spAddEntryPoint(request, unit, entry.encode(), SLANG_STAGE_COMPUTE)
            status = lib.spCompile(request)
            diagnostics = (lib.spGetDiagnosticOutput(request) or b"").decode(errors="replace")
            if status < 0:
                raise _failed("slang", diagnostics, source)
            size = ctypes.c_size_t()
            pointer = lib.spGetEntryPointCode(request, 0, ctypes.byref(size))
            if not pointer or not size.value:
                raise _failed("slang", diagnostics or "no code came out", source)
            wgsl = ctypes.string_at(pointer, size.value).decode()
        finally:
            lib.spDestroyCompileRequest(request)
    # wgpu enables subgroups through the device feature; naga rejects the directive.
    wgsl = re.sub(r"^enable subgroups\s*;\s*$", "", wgsl, flags=re.M)
    return wgsl, reflect_wgsl(wgsl, entry)


_WGSL_VAR = re.compile(r"@binding\((\d+)\)\s*@group\((\d+)\)\s*var<([^>]*)>\s*(\w+)\s*:\s*([^;]+);")
_WGSL_STRUCT = re.compile(r"struct\s+(\w+)\s*\{([^}]*)\}", re.S)
_WGSL_WORKGROUP = re.compile(r"@workgroup_size\(([^)]*)\)[^{]*?fn\s+(\w+)", re.S)


def _wgsl_type(t: str) -> tuple[str, int, int]:
    """(HLSL type, components, bytes) of a WGSL scalar or vector type; ("", 0, 0) otherwise."""
    t = t.strip()
    if t in SCALARS:
        return SCALARS[t], 1, 2 if t == "f16" else 4
    m = re.fullmatch(r"vec([234])<(\w+)>", t)
    if m and m.group(2) in SCALARS:
        n, s = int(m.group(1)), m.group(2)
        return f"{SCALARS[s]}{n}", n, n * (2 if s == "f16" else 4)
    return "", 0, 0


def _unmangle(name: str) -> str:
    """A source name from Slang's WGSL one (Slang appends _<n>)."""
    return re.sub(r"_\d+$", "", name)


def reflect_wgsl(wgsl: str, entry: str) -> Interface:
    """The interface of Slang's WGSL: bindings by number (the register shifts), the cbuffer
    struct's members (offsets as the WGSL struct lays them out: with `-fvk-use-dx-layout`, HLSL's)."""
    structs = {m.group(1): m.group(2) for m in _WGSL_STRUCT.finditer(wgsl)}
    resources, constants, cbuffer, cbuffer_bytes = [], [], None, 0
    for m in _WGSL_VAR.finditer(wgsl):
        binding, space, name, typ = int(m.group(1)), m.group(3), m.group(4), m.group(5).strip()
        if space.startswith("uniform"):
            if binding != 0:
                raise InvalidArgumentError(f"Kernel.from_hlsl: cbuffer {_unmangle(name)} is bound at b{binding}; "
                                           f"gpudml fills cbuffer b0 only")
            cbuffer = binding
            constants, cbuffer_bytes = _wgsl_cbuffer(structs.get(typ, ""), name)
            continue
        if not space.startswith("storage"):
            raise InvalidArgumentError(f"Kernel.from_hlsl: {_unmangle(name)}: only buffers (StructuredBuffer, "
                                       f"ByteAddressBuffer and their RW forms) and cbuffer b0 can be bound")
        writable = "read_write" in space
        element = re.fullmatch(r"array<(.+?)(?:,\s*\d+)?>", typ)
        scalar = _wgsl_type(element.group(1))[0].rstrip("234") if element else ""
        resources.append(Resource(_register(binding, name), binding, _unmangle(name), scalar, writable))
    return Interface(tuple(resources), tuple(constants), cbuffer, cbuffer_bytes, _wgsl_workgroup(wgsl, entry),
                     bool(re.search(r"\bsubgroup\w*|@builtin\(subgroup", wgsl)), _wgsl_entry(wgsl, entry))


def _wgsl_entry(wgsl: str, entry: str) -> str:
    m = re.search(r"@compute[^{]*?fn\s+(\w+)", wgsl, re.S)
    return m.group(1) if m else entry


def _wgsl_workgroup(wgsl: str, entry: str) -> tuple[int, int, int]:
    m = _WGSL_WORKGROUP.search(wgsl)
    if not m:
        return (1, 1, 1)
    sizes = [int(x.strip().rstrip("u")) for x in m.group(1).split(",") if x.strip()]
    return tuple(sizes + [1] * (3 - len(sizes)))


def _wgsl_cbuffer(body: str, name: str) -> tuple[list[Constant], int]:
    """The members of the cbuffer's WGSL struct, at HLSL's offsets, checked against where the
    WGSL struct places them (its @align; where WGSL cannot place a member where HLSL puts it:
    an error). Arrays of 16-byte vectors keep the offsets after them exact; after any other
    array, matrix or struct the members cannot be set by name (gpudml does not work their
    offsets out)."""
    members = []
    for line in body.splitlines():
        m = re.match(r"\s*(?:@align\((\d+)\)\s*)?(\w+)\s*:\s*(.+?),?\s*$", line)
        if not m:
            continue
        align, member, typ = int(m.group(1) or 0), _unmangle(m.group(2)), m.group(3).strip()
        hlsl, count, size = _wgsl_type(typ)
        exact = bool(hlsl)
        if not hlsl:
            array = re.fullmatch(r"array<vec4<(\w+)>,\s*(?:i32\()?(\d+)\)?>", typ)
            exact = bool(array) and array.group(1) in ("u32", "i32", "f32")
            size = 16 * int(array.group(2)) if array else 16
        members.append((member, hlsl, count, size, align, exact))
    packed = hlsl_layout([(n, t, c, s) for n, t, c, s, _, _ in members])
    constants, end, wgsl_end, exact = [], 0, 0, True
    for (member, typ, offset, size), (*_, align, known) in zip(packed, members):
        if exact:
            _check_alignment(member, typ, offset, size)
            step = max(align, wgsl_alignment(typ, size))
            at = -(-wgsl_end // step) * step
            if at != offset:
                raise InvalidArgumentError(f"Kernel.from_hlsl: cbuffer {_unmangle(name)}: the compiler placed "
                                           f"{member} at byte {at}, HLSL's packing at {offset}")
            wgsl_end = at + size
        exact = exact and known
        constants.append(Constant(member, typ if exact else "", offset, size))
        end = offset + size
    return constants, end


def _check_alignment(member: str, typ: str, offset: int, size: int) -> None:
    need = wgsl_alignment(typ, size)
    if offset % need:
        raise InvalidArgumentError(
            f"Kernel.from_hlsl: cbuffer member {typ or 'of an array/struct type'} {member} sits at byte {offset} by "
            f"HLSL's packing rules; wgpu (WGSL) needs a {typ or 'member of that type'} at a multiple of {need} bytes: "
            f"move it to the start of a 16-byte register (reorder the members, or pad before it)")


def _register(binding: int, name: str) -> str:
    if binding >= U_SHIFT:
        return f"u{binding - U_SHIFT}"
    if binding >= T_SHIFT:
        return f"t{binding - T_SHIFT}"
    raise InvalidArgumentError(f"Kernel.from_hlsl: buffer {_unmangle(name)} has no t or u register: declare inputs "
                               f"with register(t<N>) and outputs with register(u<N>)")


# -- glslang, through glslangValidator ----------------------------------------------------
def _glslang() -> str | None:
    return shutil.which("glslangValidator")


def _version(compiler: str) -> str:
    if compiler == "slang":
        lib, _ = _slang()
        return (lib.spGetBuildTagString() or b"").decode()
    if "glslang" not in _SLANG:
        try:
            out = subprocess.run([_glslang(), "--version"], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            out = ""
        _SLANG["glslang"] = out.splitlines()[0] if out else "?"
    return _SLANG["glslang"]


def _glslang_compile(source: str, entry: str, defines) -> tuple[bytes, Interface]:
    with tempfile.TemporaryDirectory(prefix="gpudml-hlsl-") as folder:
        path = os.path.join(folder, SOURCE_NAME)
        out = os.path.join(folder, "kernel.spv")
        with open(path, "w", encoding="utf-8") as f:
            f.write(source)
        args = [_glslang(), "-S", "comp", "-D", "-V", "-e", entry, "--target-env", "vulkan1.1", "--hlsl-offsets",
                "--hlsl-iomap", "--scb", "0", "--stb", str(T_SHIFT), "--suavb", str(U_SHIFT), "--sbb", str(T_SHIFT)]
        args += [f"-D{k}={v}" for k, v in defines]
        try:
            run = subprocess.run(args + [path, "-o", out], capture_output=True, text=True, timeout=120, cwd=folder)
        except (OSError, subprocess.SubprocessError) as exc:
            raise _failed("glslang", f"glslangValidator could not run: {exc}", source) from exc
        message = "\n".join(line for line in (run.stdout + run.stderr).splitlines() if line.strip() != path)
        if run.returncode != 0 or not os.path.exists(out):
            raise _failed("glslang", message.replace(path, SOURCE_NAME) or f"exit status {run.returncode}", source)
        with open(out, "rb") as f:
            spirv = f.read()
    interface = reflect_spirv(spirv, entry)
    if interface.subgroups:
        # naga's SPIR-V front end (wgpu-native 29) panics on glslang's subgroup code, which
        # would end the process: refused here instead.
        raise UnsupportedError("gpudml: wave intrinsics compiled by glslang cannot run through wgpu (naga's SPIR-V "
                               "front end fails on them); compile this kernel with Slang (compiler='slang', "
                               f"{INSTALL['slang']})")
    return spirv, interface


# SPIR-V opcodes and decorations that the reflection reads.
_OP = {"Name": 5, "MemberName": 6, "ExecutionMode": 16, "Capability": 17, "TypeBool": 20, "TypeInt": 21,
       "TypeFloat": 22, "TypeVector": 23, "TypeArray": 28, "TypeRuntimeArray": 29, "TypeStruct": 30,
       "TypePointer": 32, "Variable": 59, "Decorate": 71, "MemberDecorate": 72}
_BINDING, _OFFSET, _NONWRITABLE = 33, 35, 24
_LOCAL_SIZE = 17
_STORAGE_UNIFORM, _STORAGE_BUFFER = 2, 12
_SUBGROUP_CAPS = set(range(61, 69))  # GroupNonUniform and its kinds


def _string(words: list[int]) -> str:
    raw = struct.pack(f"<{len(words)}I", *words)
    return raw.split(b"\0", 1)[0].decode(errors="replace")


def reflect_spirv(spirv: bytes, entry: str) -> Interface:
    """The interface of glslang's SPIR-V: variables with a Binding decoration, the cbuffer's
    block members at their Offset decorations (glslang's --hlsl-offsets: HLSL's packing)."""
    words = struct.unpack(f"<{len(spirv) // 4}I", spirv[: len(spirv) // 4 * 4])
    names, member_names, types, pointers, variables = {}, {}, {}, {}, []
    bindings, offsets, nonwritable, caps, local = {}, {}, set(), set(), (1, 1, 1)
    i = 5
    while i < len(words):
        count, op = words[i] >> 16, words[i] & 0xFFFF
        ops = list(words[i + 1:i + count])
        if count == 0:
            break
        if op == _OP["Name"]:
            names[ops[0]] = _string(ops[1:])
        elif op == _OP["MemberName"]:
            member_names[(ops[0], ops[1])] = _string(ops[2:])
        elif op == _OP["ExecutionMode"] and ops[1] == _LOCAL_SIZE:
            local = tuple(ops[2:5])
        elif op == _OP["Capability"]:
            caps.add(ops[0])
        elif op in (_OP["TypeInt"], _OP["TypeFloat"], _OP["TypeBool"]):
            width = ops[1] if op != _OP["TypeBool"] else 32
            kind = "bool" if op == _OP["TypeBool"] else ("float" if op == _OP["TypeFloat"] else
                                                          "int" if ops[2] else "uint")
            if kind == "float" and width == 16:
                kind = "half"
            types[ops[0]] = ("scalar", kind, width // 8)
        elif op == _OP["TypeVector"]:
            types[ops[0]] = ("vector", ops[1], ops[2])
        elif op in (_OP["TypeArray"], _OP["TypeRuntimeArray"]):
            types[ops[0]] = ("array", ops[1])
        elif op == _OP["TypeStruct"]:
            types[ops[0]] = ("struct", tuple(ops[1:]))
        elif op == _OP["TypePointer"]:
            pointers[ops[0]] = (ops[1], ops[2])
        elif op == _OP["Variable"]:
            variables.append((ops[1], ops[0], ops[2]))  # (id, pointer type, storage class)
        elif op == _OP["Decorate"] and ops[1] == _BINDING:
            bindings[ops[0]] = ops[2]
        elif op == _OP["MemberDecorate"] and ops[2] == _OFFSET:
            offsets[(ops[0], ops[1])] = ops[3]
        elif op == _OP["MemberDecorate"] and ops[2] == _NONWRITABLE:
            nonwritable.add(ops[0])
        i += count

    def describe(t) -> tuple[str, int, int]:
        info = types.get(t, ("other",))
        if info[0] == "scalar":
            return info[1], 1, info[2]
        if info[0] == "vector":
            base, _, size = describe(info[1])
            return (f"{base}{info[2]}", info[2], size * info[2]) if base else ("", 0, 0)
        return "", 0, 0

    resources, constants, cbuffer, cbuffer_bytes = [], [], None, 0
    for var, pointer, storage in variables:
        if var not in bindings or pointer not in pointers:
            continue
        binding, block = bindings[var], pointers[pointer][1]
        name = names.get(var) or names.get(block, "")
        members = types.get(block, ("struct", ()))[1]
        if storage == _STORAGE_UNIFORM and binding < T_SHIFT:
            if binding != 0:
                raise InvalidArgumentError(f"Kernel.from_hlsl: cbuffer {names.get(block, '')} is bound at "
                                           f"b{binding}; gpudml fills cbuffer b0 only")
            cbuffer = 0
            for k, member in enumerate(members):
                typ, _, size = describe(member)
                offset = offsets.get((block, k), 0)
                _check_alignment(member_names.get((block, k), f"member{k}"), typ, offset, size or 16)
                constants.append(Constant(member_names.get((block, k), f"member{k}"), typ, offset, size or 16))
            cbuffer_bytes = max((c.offset + c.size for c in constants), default=0)
        elif storage in (_STORAGE_UNIFORM, _STORAGE_BUFFER):
            array = types.get(members[0]) if members else None
            element = describe(array[1])[0].rstrip("234") if array and array[0] == "array" else ""
            resources.append(Resource(_register(binding, name), binding, name, element, block not in nonwritable))
        else:
            raise InvalidArgumentError(f"Kernel.from_hlsl: {name}: only buffers (StructuredBuffer, "
                                       f"ByteAddressBuffer and their RW forms) and cbuffer b0 can be bound")
    return Interface(tuple(resources), tuple(constants), cbuffer, cbuffer_bytes, local,
                     bool(caps & _SUBGROUP_CAPS), entry)


# ---------------------------------------------------------------------------- interface text
HLSL_TYPES = {"FLOAT32": "float", "FLOAT16": "half", "INT32": "int", "UINT32": "uint"}


def interface_text(title: str, inputs, outputs, uniforms) -> str:
    """The HLSL declarations a custom kernel of an operator's description gets: its tensors
    `(field, DirectML type name, element count)` as t<N> (inputs) and u<N> (outputs) in
    order, and its uniforms `(name, values, per-axis array)` (builder.Kernel.uniforms) as
    cbuffer b0: per-axis arrays first as uint4 arrays, then uint scalars, which is both
    gpudml's uniform struct and HLSL's packing of these declarations (the same bytes)."""
    lines = [f"// {title}"]
    for k, (field, dtype, count) in enumerate(inputs):
        elem = HLSL_TYPES.get(dtype)
        decl = f"StructuredBuffer<{elem}> {_ident(field)}" if elem else f"ByteAddressBuffer {_ident(field)}"
        lines.append(f"{decl:<44} : register(t{k});  // {dtype}, {count} elements"
                     + ("" if elem else " (32-bit words: Load(byte offset))"))
    for k, (field, dtype, count) in enumerate(outputs):
        elem = HLSL_TYPES.get(dtype)
        decl = f"RWStructuredBuffer<{elem}> {_ident(field)}" if elem else f"RWByteAddressBuffer {_ident(field)}"
        lines.append(f"{decl:<44} : register(u{k});  // {dtype}, {count} elements"
                     + ("" if elem else " (32-bit words: Store(byte offset, value))"))
    members = [(name, "" if array else "uint", 1, 16 * -(-count // 4) if array else 4)
               for name, count, array in uniforms]
    lines.append("cbuffer Constants : register(b0) {")
    for (name, count, array), (_, _, offset, _) in zip(uniforms, hlsl_layout(members)):
        decl = f"uint4 {_ident(name)}[{-(-count // 4)}];" if array else f"uint {_ident(name)};"
        what = f"{count} value{'s' if count != 1 else ''}, per axis: {_ident(name)}[d / 4][d % 4]" if array else ""
        lines.append(f"    {decl:<40} // byte {offset}" + (f"; {what}" if what else ""))
    lines.append("};")
    return "\n".join(lines)


def _ident(name: str) -> str:
    return re.sub(r"\W", "_", name)
