"""`gpudml info | examples | shader | bench`."""

from __future__ import annotations

import argparse
import sys

import numpy as np

from . import functional
from .errors import DMLError
from .types import DataType

FEATURE_NAMES = {
    "shader-f16": "f16", "shader-f64": "f64", "shader-int64": "int64", "shader-i16": "i16",
    "subgroup": "subgroups", "timestamp-query": "timestamps", "mappable-primary-buffers": "mappable buffers",
}


def cmd_info(args) -> int:
    from .runtime import adapters
    from .runtime.device import Device

    try:
        found = adapters.enumerate_adapters()
    except DMLError as exc:
        print(f"error: {exc}")
        return 1
    print("Adapters found:")
    for a in found:
        print(f"  - {a.summary}")
    if not found:
        print(f"  (none) {adapters.INSTALL_HINT}")
    try:
        dev = Device(adapter=args.adapter)
    except DMLError as exc:
        print(f"error: {exc}")
        return 1
    caps = dev.caps
    native = [short for name, short in FEATURE_NAMES.items() if caps.has(name)]
    print(f"Chosen adapter:  {caps.name}")
    print(f"Backend:         {caps.backend} ({'software' if caps.is_software else 'hardware'}, {caps.adapter_type})")
    print(f"Native features: {', '.join(native) or 'none'}")
    print("Limits:")
    print(f"  max-storage-buffer-binding-size      {caps.max_storage_binding_size}")
    print(f"  max-buffer-size                      {caps.max_buffer_size}")
    print(f"  max-compute-workgroups-per-dimension {caps.max_workgroups_per_dimension}")
    print(f"  max-compute-invocations-per-workgroup {caps.max_invocations_per_workgroup}")
    print(f"  max-compute-workgroup-storage-size   {caps.max_workgroup_storage_size}")
    print(f"Feature level:   {dev.feature_level.name}")
    supported = [dt.name for dt in DataType if dev.supports_data_type(dt)]
    print(f"Data types:      {', '.join(supported)}")
    return 0


def cmd_examples(args) -> int:
    from . import seed_examples
    from .runtime.device import Device

    device = Device(adapter=args.adapter)
    print(f"Adapter: {device.adapter_name}\n")
    failures = 0
    examples = [e for e in seed_examples.SEED_EXAMPLES if e.operator in RUNNERS]
    for ex in examples:
        try:
            got = RUNNERS[ex.operator](ex.input, device=device, **ex.args)
            ok = got.shape == ex.expected.shape and np.array_equal(got, ex.expected, equal_nan=True)
        except DMLError as exc:
            got, ok = f"error: {exc}", False
        failures += not ok
        print(f"== {ex.name} ({ex.source}) {ex.args}")
        print(f"input {list(ex.input.shape)} {ex.input.dtype}:\n{ex.input}")
        print(f"output:\n{got}")
        if not ok:
            print(f"expected:\n{ex.expected}")
        print("PASS\n" if ok else "FAIL\n")
    print(f"{len(examples) - failures} passed, {failures} failed")
    return 1 if failures else 0


#: operator name -> functional API call (operators add themselves here).
RUNNERS = {
    "slice1": functional.slice,
    "padding": functional.pad,
    "reverse_subsequences": functional.reverse_subsequences,
    "reduce": functional.reduce,
}


def _ints(text: str, what: str = "value") -> tuple[int, ...]:
    from .errors import InvalidArgumentError

    try:
        return tuple(int(v) for v in text.replace(" ", "").split(",") if v)
    except ValueError:
        raise InvalidArgumentError(f"{what}: {text!r} is not a comma-separated list of integers") from None


def _number(text: str, what: str) -> int | float:
    """An int when the text is one (int64 values stay exact), else a float."""
    from .errors import InvalidArgumentError

    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    raise InvalidArgumentError(f"{what}: {text!r} is not a number")


def cmd_shader(args) -> int:
    from .runtime.device import Device
    from .tensor_desc import TensorDesc

    device = Device(adapter=args.adapter)
    dt = DataType.coerce(args.dtype)
    in_strides = _ints(args.input_strides, "--input-strides") if args.input_strides else None
    in_desc = TensorDesc(dt, _ints(args.shape, "--shape"), in_strides)
    if args.op == "slice1":
        offsets = _ints(args.offsets, "--offsets") if args.offsets else (0,) * in_desc.rank
        sizes = _ints(args.sizes, "--sizes") if args.sizes else in_desc.sizes
        strides = _ints(args.strides, "--strides") if args.strides else None
        desc = functional.slice_desc(in_desc, offsets, sizes, strides)
    elif args.op == "pad":
        start = _ints(args.start, "--start") if args.start else (1,) * in_desc.rank
        end = _ints(args.end, "--end") if args.end else start
        desc = functional.pad_desc(in_desc, start, end, args.mode, _number(args.value, "--value"))
    elif args.op == "reverse_subsequences":
        axis = _number(args.axis, "--axis") if args.axis is not None else in_desc.rank - 1
        sizes = tuple(1 if i == axis else n for i, n in enumerate(in_desc.sizes))
        lengths = TensorDesc(DataType.coerce(args.lengths_dtype), sizes)
        desc = functional.reverse_subsequences_desc(in_desc, lengths, axis)
    elif args.op == "reduce":
        axes = _ints(args.axes, "--axes") if args.axes else None
        desc = functional.reduce_desc(in_desc, args.function, axes, args.output_data_type)
    compiled = device.compile_operator(device.create_operator(desc))
    for i, source in enumerate(compiled.wgsl):
        print(f"// dispatch {i}: {compiled.plan.dispatches[i].invocations} invocations")
        print(source)
    return 0


def cmd_bench(args) -> int:
    import os

    from .bench import run_suite
    from .runtime.device import Device

    device = Device(adapter=args.adapter)
    os.makedirs(args.out, exist_ok=True)
    base = os.path.join(args.out, "bench")
    text = run_suite(device, quick=args.quick, only=args.only.split(",") if args.only else None,
                     json_path=base + ".json", md_path=base + ".md", png_path=base + ".png")
    print(text)
    print(f"\nwritten: {base}.md, {base}.json, {base}.png")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpudml", description="DirectML operators on any GPU")
    parser.add_argument("--adapter", default=None,
                        help='"vulkan", "gl" or an adapter-name substring (default: GPUDML_ADAPTER or auto)')
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="adapters, features, limits, feature level, data types").set_defaults(func=cmd_info)
    sub.add_parser("examples", help="run the DirectML documentation examples").set_defaults(func=cmd_examples)
    bench = sub.add_parser("bench", help="benchmark suite W1-W9 against numpy, onnxruntime and the adapter's ceilings")
    bench.add_argument("--quick", action="store_true", help="fewer repetitions (about a minute)")
    bench.add_argument("--only", default=None, help="comma-separated workload ids, e.g. W1,W6")
    bench.add_argument("--out", default="bench/results", help="folder for bench.md, bench.json, bench.png")
    bench.set_defaults(func=cmd_bench)
    shader = sub.add_parser("shader", help="print the WGSL a description compiles to")
    shader.set_defaults(func=cmd_shader)
    ops = shader.add_subparsers(dest="op", required=True)
    s1 = ops.add_parser("slice1", help="DML_SLICE1_OPERATOR_DESC")
    pad = ops.add_parser("pad", help="DML_PADDING_OPERATOR_DESC")
    rev = ops.add_parser("reverse_subsequences", help="DML_REVERSE_SUBSEQUENCES_OPERATOR_DESC")
    for p in (s1, pad, rev):
        p.add_argument("--dtype", default="FLOAT32", help="DataType name (default FLOAT32)")
        p.add_argument("--shape", default="1,1,4,4", help="input sizes, comma-separated")
        p.add_argument("--input-strides", default=None, help="input element strides (default packed)")
    s1.add_argument("--offsets", default=None)
    s1.add_argument("--sizes", default=None)
    s1.add_argument("--strides", default=None, help="window strides, may be negative")
    pad.add_argument("--mode", default="constant", help="constant | edge | reflection | symmetric")
    pad.add_argument("--start", default=None, help="start_padding, comma-separated (default 1 per axis)")
    pad.add_argument("--end", default=None, help="end_padding, comma-separated (default: --start)")
    pad.add_argument("--value", default="0", help="padding_value (CONSTANT)")
    rev.add_argument("--axis", default=None, help="axis to reverse along (default: the last)")
    rev.add_argument("--lengths-dtype", default="UINT32", help="sequence_lengths_tensor type: UINT32 or UINT64")
    red = ops.add_parser("reduce", help="DML_REDUCE_OPERATOR_DESC")
    red.add_argument("--dtype", default="FLOAT32", help="DataType name (default FLOAT32)")
    red.add_argument("--shape", default="3,3", help="input sizes, comma-separated")
    red.add_argument("--input-strides", default=None, help="input element strides (default packed)")
    red.add_argument("--function", default="SUM", help="ReduceFunction name, any case (default SUM)")
    red.add_argument("--axes", default=None, help="reduced axes, comma-separated (default all)")
    red.add_argument("--output-data-type", default=None, help="ARGMAX/ARGMIN index type (default UINT32)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except DMLError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
