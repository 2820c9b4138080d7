"""`gpudml info | examples | shader OP | lab OP | tune | bench`. The operator subcommands of
`shader` and `lab` come from the operator specs (gpudml/ops/). The subcommands `lab`,
`tune` and `bench` import their modules when they run."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile

import numpy as np

from . import caps, compiler, examples, hlsl, lab
from .bench.report import EXTRA_INSTALL, columns_help
from .bench.workloads import WORKLOADS
from .caps import FEATURE_NAMES
from .device import Device, tuning
from .errors import DMLError, InvalidArgumentError, UnsupportedError
from .kernels import templates
from .ops import EXTENSIONS, SPECS, spec_named, tensor_fields
from .runtime import adapters
from .tensor_desc import TensorDesc
from .types import HIGHEST_FEATURE_LEVEL, DataType, FeatureLevel
from .version import __version__

#: The capability profile `gpudml shader` compiles for when no adapter can be opened.
FALLBACK_PROFILE = "gpu"


#: DirectML's operators through FL_6_4 (DML_OPERATOR_TYPE's values, API.md section 15).
DIRECTML_OPERATORS = 177


def cmd_info(args) -> int:
    try:
        found = adapters.enumerate_adapters()
    except DMLError as exc:
        print(f"error: {exc}")
        return 1
    print("Adapters found:")
    for line in adapters.listing(found):
        print(f"  - {line}")
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
    print(f"Backend:         {caps.backend} ({'software' if caps.detected_class == 'cpu' else 'hardware'}, "
          f"{caps.adapter_type})")
    how = "GPUDML_ADAPTER_CLASS" if caps.class_override else "detected"
    print(f"Adapter class:   {caps.adapter_class} ({how}; its {caps.adapter_class.upper()}-class strategies first)")
    print(f"Native features: {', '.join(native) or 'none'}")
    print("Limits:")
    print(f"  max-storage-buffer-binding-size      {caps.max_storage_binding_size}")
    print(f"  max-buffer-size                      {caps.max_buffer_size}")
    print(f"  max-compute-workgroups-per-dimension {caps.max_workgroups_per_dimension}")
    print(f"  max-compute-invocations-per-workgroup {caps.max_invocations_per_workgroup}")
    print(f"  max-compute-workgroup-storage-size   {caps.max_workgroup_storage_size}")
    print(f"  max-storage-buffers-per-shader-stage {caps.max_storage_buffers_per_shader_stage}")
    print(f"  min-storage-buffer-offset-alignment  {caps.min_storage_offset_alignment}")
    forced = " (lowered: GPUDML_MAX_BINDING_BYTES / GPUDML_MAX_BUFFER_BYTES)" if (
        caps.forced_binding_bytes or caps.forced_buffer_bytes) else ""
    print(f"Large tensors:   bindings of at most {caps.binding_bytes} bytes, buffers of at most "
          f"{caps.buffer_bytes}{forced}; larger tensors are bound in segments and kept in several buffers")
    print(f"Feature level:   {dev.feature_level.name}")
    print(f"Operators:       {len(SPECS)} of DirectML's {DIRECTML_OPERATORS} (through FL_6_4; `gpudml examples`, "
          f"docs/operators/), and {len(EXTENSIONS)} extension: {', '.join(s.functional_name for s in EXTENSIONS)}")
    supported = [dt.name for dt in DataType if dev.supports_data_type(dt)]
    print(f"Data types:      {', '.join(supported)}")
    print(f"Templates:       {os.pathsep.join(templates.search_path())}  (first match wins; GPUDML_TEMPLATE_PATH)")
    print(f"Autotuning:      {'on' if dev.autotune else 'off'} (GPUDML_AUTOTUNE); cache "
          f"{tuning.cache_file() or 'off'} (GPUDML_TUNING_CACHE)")
    return 0


def cmd_examples(args) -> int:
    chosen, without = examples.select(args.operators)
    device = Device(adapter=args.adapter)
    if not args.quiet:
        print(f"Adapter: {device.adapter_name}\n")
    failures = 0
    for ex in chosen:
        spec = spec_named(ex.operator)
        try:
            got = examples.run_on(device, ex)
            ok = examples.matches(got, ex.expected)
        except DMLError as exc:
            got, ok = f"error: {exc}", False
        failures += not ok
        if ok and args.quiet:
            continue
        number = spec.examples.index(ex) + 1
        print(f"== {ex.name}: {spec.name} example {number} of {len(spec.examples)} (the {spec.page} page)")
        shown = spec.tensors[0] if ex.input is not None else ""
        print(f"{spec.functional_name}({', '.join(filter(None, [shown, _arguments(ex.args)]))})")
        for label, array in examples.labelled(shown, ex.input):
            print(f"{label} {list(array.shape)} {array.dtype}:\n{array}")
        for label, array in examples.labelled("output", got):
            print(f"{label}:\n{array}")
        if not ok:
            for label, array in examples.labelled("expected", ex.expected):
                print(f"{label}:\n{array}")
        print("PASS\n" if ok else "FAIL\n")
    none = f"; no worked example on the page of {', '.join(s.name for s in without)}" if without else ""
    print(f"{len(chosen) - failures} passed, {failures} failed{none}")
    return 1 if failures else 0


def _arguments(args: dict) -> str:
    """Keyword arguments as a reader would write them: enums by name, arrays as lists."""
    def show(v):
        if isinstance(v, np.ndarray):
            return f"np.array({v.tolist()}, np.{v.dtype})"
        return repr(v.name.lower()) if hasattr(v, "name") and hasattr(v, "value") else repr(v)
    return ", ".join(f"{k}={show(v)}" for k, v in args.items())


# ---------------------------------------------------------------------------- shader
def _ints(text: str, what: str = "value") -> tuple[int, ...]:
    try:
        return tuple(int(v) for v in text.replace(" ", "").split(",") if v)
    except ValueError:
        raise InvalidArgumentError(f"{what}: {text!r} is not a comma-separated list of integers") from None


def _number(text: str, what: str) -> int | float:
    """An int when the text is one (int64 values stay exact), else a float."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    raise InvalidArgumentError(f"{what}: {text!r} is not a number")


_PARSERS = {"ints": _ints, "number": _number, "str": lambda text, what: text}


def description(spec, args):
    """The (validated) desc that `gpudml shader OP` options describe, and its feature level."""
    dt = DataType.coerce(args.dtype, "--dtype")
    in_strides = _ints(args.input_strides, "--input-strides") if args.input_strides else None
    x = TensorDesc(dt, _ints(args.shape, "--shape"), in_strides)
    values = {}
    for arg in spec.cli.args:
        text = getattr(args, arg.dest)
        values[arg.dest] = None if text is None else _PARSERS[arg.kind](text, arg.flag)
    desc = spec.cli.desc(x, values)
    level = HIGHEST_FEATURE_LEVEL if args.feature_level is None else FeatureLevel.coerce(
        args.feature_level, "--feature-level")
    spec.validate(desc, level)
    return desc, level


def shader_caps(args):
    """(Caps, why they were chosen where it needs saying: ""): the named profile, else the
    adapter's, else the fallback profile when no adapter can be opened (and none was asked
    for; the reason says why). A profile
    takes GPUDML_MAX_BINDING_BYTES / GPUDML_MAX_BUFFER_BYTES as a Device does, so that
    the segmented kernels of a large tensor can be read with no adapter."""
    if args.caps is not None:
        return caps.profile(args.caps).with_limits(*caps.limits_from_env()), ""
    try:
        return Device(adapter=args.adapter).caps, ""
    except UnsupportedError as exc:
        if args.adapter is not None:
            raise
        reason = str(exc).split(";")[0].split("\n")[0].removeprefix("gpudml: ")
        return (caps.profile(FALLBACK_PROFILE).with_limits(*caps.limits_from_env()),
                f"no adapter could be opened: {reason}")


def header(operator: str, level, compiled_for, why: str = "") -> str:
    """The first line of `gpudml shader`'s output: `// Reduce at FL_6_4 for NAME`, NAME
    the adapter's or the profile's (`profile gpu (a discrete GPU via Vulkan)`), and why
    where it needs saying (the fallback profile)."""
    return f"// {operator} at {level.name} for {compiled_for.name}" + (f"; {why}" if why else "")


def cmd_shader(args) -> int:
    spec = spec_named(args.op)
    desc, level = description(spec, args)
    caps, source = shader_caps(args)
    program = compiler.compile(desc, caps, strategy=args.strategy)
    print(header(spec.name, level, caps, source))
    if args.interface == "hlsl":
        print(hlsl_interface(program))
        return 0
    print(f"// strategy {program.strategy} (eligible: {', '.join(program.strategies)})")
    for i, kernel in enumerate(program.kernels):
        print(f"// dispatch {i}: {kernel.invocations} invocations, {kernel.workgroups[0]} x {kernel.workgroups[1]} "
              f"workgroups of {kernel.workgroup_size}")
        print(kernel.source)
    return 0


def hlsl_interface(program) -> str:
    """What `gpudml shader OP ... --interface hlsl` prints: the registers and cbuffer b0 an HLSL
    kernel of the description gets (`gpudml lab OP ... --hlsl FILE.hlsl` binds them so)."""
    first = program.kernels[0]
    more = len(program.kernels) - 1
    note = (f"; the cbuffer holds the uniforms of its dispatch 0 of {more + 1}" if more else "")
    title = (f"an HLSL kernel of this description (gpudml lab ... --hlsl FILE.hlsl): inputs t0.., outputs u0.., "
             f"cbuffer b0 filled as strategy {program.strategy}'s kernel reads it{note}")
    tensors = [[(f, d.data_type.name, d.element_count) for f, d in side] for side in (program.inputs, program.outputs)]
    return hlsl.interface_text(title, *tensors, first.uniforms)


def cmd_lab(args) -> int:
    spec = spec_named(args.op)
    desc, level = description(spec, args)
    if args.reps < 1:
        raise InvalidArgumentError(f"--reps: {args.reps} must be at least 1")
    strategies = args.strategies.strip()
    strategies = None if strategies == "all" else strategies if strategies == "tuned" else [
        s for s in strategies.split(",") if s]
    unknown = [s for s in strategies or () if s not in spec.planner.strategies] if strategies != "tuned" else []
    if unknown:
        raise InvalidArgumentError(f"--strategies: {', '.join(unknown)} not a strategy of {spec.name} "
                                   f"({', '.join(spec.planner.strategies)})")
    for flag, path, folder in (("--json", args.json, False), ("--png", args.png, False), ("--wgsl", args.wgsl, True)):
        _output_path(path, flag, folder)
    options = [lab.parse_options(text) for text in args.options] or None
    if options and strategies == "tuned":
        raise InvalidArgumentError("--options: not with --strategies tuned (the autotuner's variants bring their own)")
    unknown = sorted({k for o in options or () for k in o} - set(spec.planner.options))
    if unknown:
        raise InvalidArgumentError(f"--options: {', '.join(unknown)} not a plan option of {spec.name} "
                                   f"({', '.join(spec.planner.options) or 'none'})")
    device = Device(feature_level=level, adapter=args.adapter)
    grid = _ints(args.grid, "--grid") if args.grid else None
    hlsl_files = []
    for path in args.hlsl:
        try:
            with open(path, encoding="utf-8") as f:
                hlsl_files.append((path, f.read()))
        except OSError as exc:
            raise InvalidArgumentError(f"--hlsl: cannot read {path}: {exc.strerror}") from None
    defines = {}
    for item in args.define:
        name, eq, value = item.partition("=")
        defines[name.strip()] = value.strip() if eq else "1"
    rows = lab.run(device, desc, strategies=strategies, templates=args.templates, reps=args.reps, options=options,
                   hlsl=hlsl_files, grid=grid, defines=defines or None)
    in_fields, out_fields = tensor_fields(desc)
    (_, x), *more = in_fields or out_fields  # (a generator has no input: its output)
    inputs = f"{x.data_type.name} {list(x.sizes)}" + "".join(f", {list(d.sizes)}" for _, d in more)
    inputs += "" if in_fields else " (output)"
    title = (f"{spec.name} of {inputs} ({_arguments(spec.arguments(desc))}) "
             f"on {device.adapter_name}")
    print(lab.table(rows, title))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(lab.as_dicts(rows), f, indent=1)
    if args.png and not lab.chart(rows, args.png, title):
        print(f"(matplotlib is not installed: no chart; {EXTRA_INSTALL})")
    if args.wgsl:
        lab.write_wgsl(device, desc, rows, args.wgsl)
    return 1 if lab.failures(rows) else 0


#: Variants `gpudml tune` names per kind, the fastest first (the cache holds every time).
TUNE_SHOWN = 4


def cmd_tune(args) -> int:
    """Autotune the bench workloads' kinds of description and say what was chosen."""
    only = _only(args.only)
    device = Device(adapter=args.adapter, autotune=True)
    tuner = tuning.tuner_for(device._ctx)
    print(f"Tuning on {device.adapter_name}; cache: {tuning.cache_file() or 'off (GPUDML_TUNING_CACHE=off)'}")
    for w in WORKLOADS:
        if only and w.id not in only:
            continue
        before = set(tuner.used)
        case = w.setup(device, np.random.default_rng(int(w.id[1:])), True)
        case.device_fn()
        device.synchronize()
        for key in [k for k in tuner.used if k not in before]:
            choice, timed = tuner.used[key]
            ms, chosen = choice["ms"], choice.get("variant", choice["strategy"])
            gain = ms[choice["default"]] / ms[chosen] if ms[chosen] else float("nan")
            ranked = sorted(ms.items(), key=lambda kv: kv[1])
            times = ", ".join(f"{s} {v:.4f} ms" for s, v in ranked[:TUNE_SHOWN])
            times += f" and {len(ranked) - TUNE_SHOWN} more" if len(ranked) > TUNE_SHOWN else ""
            how = "timed now" if timed else "from the cache"
            operator = choice.get("kind", "?").split(" ", 1)[0]
            print(f"  {w.id} {w.title}, {operator}: {chosen} ({how}; {times}; {gain:.2f}x the default "
                  f"{choice['default']})")
            for name, why in (choice.get("failed") or {}).items():
                print(f"    {name} failed, never chosen: {why}")
    return 0


def _only(text: str | None) -> list[str] | None:
    """--only's workload ids (None: every workload); InvalidArgumentError naming the unknown."""
    if not text:
        return None
    only = [w.strip() for w in text.split(",") if w.strip()]
    unknown = [w for w in only if w not in {w.id for w in WORKLOADS}]
    if unknown:
        raise InvalidArgumentError(f"--only: {', '.join(unknown)} not a workload ({_workload_ids()})")
    return only


def _workload_ids() -> str:
    return f"{WORKLOADS[0].id}-{WORKLOADS[-1].id}"


def _workloads_help() -> str:
    return "\n".join(f"  {w.id:4s} {w.title}" for w in WORKLOADS)


def cmd_run(args) -> int:
    from .onnx.run import cmd_run as run

    return run(args)


def cmd_bench(args) -> int:
    from .bench.suite import run_suite

    only = _only(args.only)
    _output_path(args.out, "--out", folder=True)
    device = Device(adapter=args.adapter)
    if args.out is None:  # never a path inside the user's project: a new temporary folder, named below
        out = tempfile.mkdtemp(prefix="gpudml-bench-")
    else:
        out = args.out
        try:
            os.makedirs(out, exist_ok=True)
        except OSError as exc:
            raise InvalidArgumentError(f"--out: cannot create the folder {out!r}: {exc.strerror or exc}") from None
    print(f"gpudml bench on {device.adapter_name}; results go to {out}", flush=True)
    base = os.path.join(out, "bench")
    files = [base + ".md", base + ".json", base + ".png"]
    if os.path.exists(files[2]):
        os.remove(files[2])  # an earlier run's chart: without matplotlib this run draws none
    text = run_suite(device, quick=args.quick, only=only, json_path=files[1], md_path=files[0], png_path=files[2])
    print(text)
    print(f"\nwritten: {', '.join(f for f in files if os.path.exists(f))}")
    return 0


ADAPTER_HELP = '"vulkan", "gl" or an adapter-name substring (default: GPUDML_ADAPTER or auto)'


def _subparser(sub, name: str, help: str, example: str, details: str = "", **kwargs) -> argparse.ArgumentParser:
    """A subcommand with an example in its --help (after `details`, where given), taking
    --adapter here too."""
    epilog = (f"{details}\n\n" if details else "") + f"example:\n  {example}"
    parser = sub.add_parser(name, help=help, description=help, epilog=epilog,
                            formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs)
    parser.add_argument("--adapter", default=argparse.SUPPRESS, help=ADAPTER_HELP)
    return parser


#: The operators of `gpudml shader OP` and `gpudml lab OP`: DirectML's and gpudml's extensions.
COMMAND_SPECS = (*SPECS, *EXTENSIONS)


def _per_operator(parser, command: str, details: str = "", specs=COMMAND_SPECS):
    """A subcommand per operator of `specs` under `parser` (`gpudml COMMAND OP`), with the
    options that describe one of its descriptions: yields (spec, its parser)."""
    ops = parser.add_subparsers(dest="op", required=True, metavar="OP")
    for spec in specs:
        p = _subparser(ops, spec.key, spec.page, f"gpudml {command} {spec.key} {spec.cli.example}", details,
                       aliases=_aliases(spec))
        _description_options(p, spec)
        yield spec, p


def _positionals(argv: list[str]):
    """The words of `argv` that are not options nor --adapter's value, in order."""
    words = iter(argv)
    for word in words:
        if word == "--adapter":
            next(words, None)
        elif not word.startswith("-"):
            yield word


def _operators_built(argv: list[str] | None, command: str) -> tuple:
    """The specs whose `gpudml COMMAND OP` parsers are built for `argv`: only the one it
    names (121 operators' parsers cost ~0.3 s a call), none when it runs another command,
    all when it names none or an unknown one (for --help and the error's list of choices), or
    when there is no argv (build_parser() for tests and docs)."""
    if argv is None:
        return COMMAND_SPECS
    words = list(_positionals(argv))[:2]
    if words and words[0] != command:
        return ()
    if len(words) < 2:
        return COMMAND_SPECS
    return tuple(s for s in COMMAND_SPECS if words[1] == s.key or words[1] in _aliases(s)) or COMMAND_SPECS


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The command line's parser; given `argv`, only the operator subcommand it names is
    built in full."""
    parser = argparse.ArgumentParser(
        prog="gpudml", description="DirectML operators on any GPU",
        epilog="examples:\n  gpudml info\n  gpudml --adapter gl examples\n"
               "  gpudml shader reduce --function sum --axes 1 --shape 4096,4096 --caps gpu",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--adapter", default=None, help=ADAPTER_HELP)
    parser.add_argument("--version", action="version", version=f"gpudml {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    _subparser(sub, "info", "adapters, features, limits, feature level, data types",
               "gpudml info --adapter gl").set_defaults(func=cmd_info)
    ex = _subparser(sub, "examples", "run the DirectML documentation examples",
                    "gpudml examples --quiet ELEMENT_WISE_ADD1 reduce pad",
                    details="an operator is named by DirectML's operator type (ELEMENT_WISE_ADD1 or "
                            "DML_OPERATOR_ELEMENT_WISE_ADD1),\nits name (ElementWiseAdd1) or its function "
                            "(add), in any case; exit status 1 if an example fails,\n2 for an unknown name")
    ex.add_argument("operators", nargs="*", metavar="OPERATOR",
                    help="run only these operators' examples (default: every operator's)")
    ex.add_argument("--quiet", "-q", action="store_true", help="print only the failures and the summary line")
    ex.set_defaults(func=cmd_examples)
    bench = _subparser(
        sub, "bench", f"benchmark suite {_workload_ids()} against numpy, onnxruntime and the adapter's ceilings",
        "gpudml bench --quick --only W1,W6 --out /tmp/bench",
        details=f"workloads:\n{_workloads_help()}\n\ncolumns of the table (bench.md):\n{columns_help()}\n\n"
                f"GB/s and x copy use GPU timestamps where the adapter has them (the header line says which "
                f"clock);\nthe ratios divide by one copy and one empty-dispatch baseline per run. onnxruntime "
                f"and the chart\nneed the bench extra: {EXTRA_INSTALL}.")
    bench.add_argument("--quick", action="store_true", help="fewer repetitions (about a minute)")
    bench.add_argument("--only", default=None, help="comma-separated workload ids, e.g. W1,W6 (default: all)")
    bench.add_argument("--out", default=None, metavar="DIR",
                       help="folder for bench.md, bench.json, bench.png (default: a new temporary folder, "
                            "printed when the run starts)")
    bench.set_defaults(func=cmd_bench)
    run = _subparser(sub, "run", "run an ONNX model through DirectML semantics (gpudml.onnx.InferenceSession)",
                     "gpudml run model.onnx --random --compare-onnxruntime --profile",
                     details="prints each output's dtype, shape and a summary; --compare-onnxruntime exits 1 "
                             "beyond tolerance\n(1e-4 of the largest magnitude for floats, exact otherwise), "
                             f"2 without onnxruntime ({EXTRA_INSTALL})")
    run.add_argument("model", metavar="MODEL.onnx")
    run.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy", help="an input's value "
                     "(repeat for several)")
    run.add_argument("--random", action="store_true", help="random values for the inputs not given")
    run.add_argument("--dim", action="append", default=[], metavar="NAME=SIZE",
                     help="the size of the random inputs' dynamic dimension NAME (its dim_param; repeat for "
                          "several; default 1)")
    run.add_argument("--compare-onnxruntime", action="store_true",
                     help="the largest difference per output against onnxruntime's CPU provider")
    run.add_argument("--profile", action="store_true", help="print each operator's GPU time")
    run.set_defaults(func=cmd_run)
    tune = _subparser(sub, "tune", "autotune the bench workloads' descriptions on this adapter (fills the "
                                   "tuning cache)", "gpudml tune --only W1,W2",
                      details=f"workloads (gpudml bench's):\n{_workloads_help()}")
    tune.add_argument("--only", default=None, help="comma-separated workload ids, e.g. W1,W6 (default: all)")
    tune.set_defaults(func=cmd_tune)
    shader = _subparser(sub, "shader", "print the WGSL a description compiles to (needs no adapter)",
                        "gpudml shader reduce --function sum --axes 1 --shape 64,64 --caps gl-cpu")
    shader.set_defaults(func=cmd_shader)
    for spec, p in _per_operator(shader, "shader", specs=_operators_built(argv, "shader")):
        p.add_argument("--strategy", default=None, choices=spec.planner.strategies,
                       help="force a kernel strategy (default: the operator's choice)")
        p.add_argument("--caps", default=None, choices=sorted(caps.PROFILES),
                       help="compile for a capability profile, with no adapter (default: the adapter, or "
                            f"profile {FALLBACK_PROFILE} when none can be opened)")
        p.add_argument("--interface", default="wgsl", choices=("wgsl", "hlsl"),
                       help="wgsl: the kernels' WGSL (default); hlsl: the bindings and cbuffer b0 that an HLSL "
                            "kernel of this description gets (for gpudml lab ... --hlsl FILE.hlsl)")
    lab_columns = f"columns of the table:\n{lab.columns_help()}"
    lab_parser = _subparser(sub, "lab", "run one description under every kernel variant: correctness, GPU time, "
                                        "GB/s against the copy kernel",
                            "gpudml lab reduce --function sum --axes 0 --shape 4096,1024 --json /tmp/lab.json",
                            details=lab_columns)
    lab_parser.set_defaults(func=cmd_lab)
    for spec, p in _per_operator(lab_parser, "lab", lab_columns, specs=_operators_built(argv, "lab")):
        p.add_argument("--strategies", default="all",
                       help="all, tuned (the variants the autotuner times: strategies and plan options), or "
                            f"strategy names, comma-separated ({', '.join(spec.planner.strategies)})")
        p.add_argument("--templates", default=None, metavar="DIR",
                       help="also run every variant under this folder's templates (they shadow the packaged ones)")
        p.add_argument("--options", action="append", default=[], metavar="K=V,...",
                       help="plan options, e.g. lanes=64,subgroups=false: each --options makes its own "
                            f"variants of every strategy ({', '.join(spec.planner.options) or 'none'})")
        p.add_argument("--hlsl", action="append", default=[], metavar="FILE.hlsl",
                       help="also run this HLSL kernel as a variant (its bindings and cbuffer: gpudml shader "
                            f"{spec.key} ... --interface hlsl; repeat for several)")
        p.add_argument("--define", action="append", default=[], metavar="NAME[=VALUE]",
                       help="a macro for the --hlsl kernels (repeat for several), e.g. USE_WAVE=1")
        p.add_argument("--grid", default=None, metavar="X,Y,Z",
                       help="the --hlsl kernels' workgroups (default: one invocation per output element, "
                            "by the kernel's [numthreads])")
        p.add_argument("--reps", type=int, default=7, help="timed repetitions per variant (default 7)")
        p.add_argument("--json", default=None, metavar="FILE", help="write the rows as JSON")
        p.add_argument("--png", default=None, metavar="FILE", help="a bar chart of the ratios to the copy kernel")
        p.add_argument("--wgsl", default=None, metavar="DIR", help="write each variant's WGSL here")
    return parser


def _aliases(spec) -> list[str]:
    return [spec.functional_name] if spec.functional_name != spec.key else []


def _description_options(p: argparse.ArgumentParser, spec) -> None:
    """The options that describe one operator (`shader` and `lab` share them)."""
    p.add_argument("--dtype", default="FLOAT32", help="input DataType name (default FLOAT32)")
    p.add_argument("--shape", default="1,1,4,4", help="input sizes, comma-separated (default 1,1,4,4)")
    p.add_argument("--input-strides", default=None, help="input element strides (default packed)")
    for arg in spec.cli.args:
        p.add_argument(arg.flag, default=arg.default, help=arg.help)
    p.add_argument("--feature-level", default=None, help="validate at this level (default: the highest)")


#: A value that starts like a negative number ("-1", "-1,2", "-0.5"): argparse would take
#: it for an option.
_NEGATIVE = re.compile(r"^-\.?\d")
#: Options that take no value.
_FLAGS = {"-h", "--help", "--quick", "--random", "--compare-onnxruntime", "--profile", "--quiet", "-q"}


def _attach_negative_values(argv: list[str]) -> list[str]:
    """`--strides -1,1` as `--strides=-1,1`, so that list options may start negative."""
    out: list[str] = []
    for token in argv:
        prev = out[-1] if out else ""
        if _NEGATIVE.match(token) and prev.startswith("--") and "=" not in prev and prev not in _FLAGS:
            out[-1] = f"{prev}={token}"
        else:
            out.append(token)
    return out


def main(argv: list[str] | None = None) -> int:
    argv = _attach_negative_values(sys.argv[1:] if argv is None else list(argv))
    args = build_parser(argv).parse_args(argv)
    try:
        status = args.func(args)
        sys.stdout.flush()
        return status
    except DMLError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (`gpudml info | head -2`): stop quietly, with the status a shell
        # gives a program that SIGPIPE ended. Later writes (the interpreter's final flush of
        # stdout) go to /dev/null instead of raising again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as exc:  # a path given that cannot be read or written: one line, no traceback
        where = f"{exc.filename!r}: " if exc.filename else ""
        print(f"error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2


def _output_path(path: str | None, flag: str, folder: bool = False) -> None:
    """Refuse, before any work, an output path that cannot be written: its folder missing
    or not writable, or (a file) a directory (InvalidArgumentError naming the option)."""
    if path is None:
        return
    parent = os.path.dirname(os.path.abspath(path))
    if folder and os.path.isdir(path):
        parent = path
    elif not folder and os.path.isdir(path):
        raise InvalidArgumentError(f"{flag}: {path!r} is a directory; give a file name")
    if not os.path.isdir(parent) and not (folder and _creatable(parent)):
        raise InvalidArgumentError(f"{flag}: cannot write {path!r}: no folder {parent!r}")
    if os.path.isdir(parent) and not os.access(parent, os.W_OK):
        raise InvalidArgumentError(f"{flag}: cannot write {path!r}: the folder {parent!r} is not writable")


def _creatable(folder: str) -> bool:
    """Could os.makedirs make `folder` (its nearest existing ancestor a writable folder)?"""
    while not os.path.exists(folder):
        folder = os.path.dirname(folder)
    return os.path.isdir(folder) and os.access(folder, os.W_OK)


if __name__ == "__main__":
    sys.exit(main())
