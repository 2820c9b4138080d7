"""`gpudml lab OP ...`: one operator description under every kernel variant, side by side.

A variant is a strategy of the operator with a set of its plan options (Planner.options:
`--options lanes=64,subgroups=false`, each set its own variants; none by default), under the
packaged templates or under a folder of your own (`--templates DIR`: a template there
shadows the packaged one of the same name).
For each: is it correct (against the reference: bit-exact, or within the operator's
documented precision), how long its dispatches take on the GPU (timestamps; the wall clock,
submit to completion, where the adapter has none), its effective GB/s and the ratio to the
adapter's own copy kernel timed beside it (paired: variant, copy, variant, copy, ...;
medians), what compiling it cost, and which variant the operator would choose. A variant
that does not compile, or computes a wrong result, is reported as such (with the first
wrong element) and the others still run.

`--hlsl FILE.hlsl` adds the user's HLSL kernel as one more variant (gpudml/kernel.py): bound
as `gpudml shader OP ... --interface hlsl` prints (the description's inputs t0.., outputs
u0.., cbuffer b0 holding the uniforms of the operator's own first kernel), run over `grid`
workgroups (default: one invocation per output element), checked and timed like the rest;
one that does not compile or binds other tensors is a row saying so.
"""

from __future__ import annotations

import os
import statistics
import textwrap
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from . import compiler
from .bench import report
from .bench.anchors import Yardsticks
from .compare import first_wrong
from .device import Device, tuning
from .errors import DMLError, InvalidArgumentError
from .kernel import Kernel
from .ops import spec_for
from .runtime.tensor import logical_from_raw

#: Bytes the copy kernel (the yardstick) moves each way.
COPY_BYTES = 64 << 20


@dataclass
class Row:
    """One variant's figures (the keys of `gpudml lab --json`)."""

    strategy: str
    templates: str | None  # None: the packaged templates
    options: dict = field(default_factory=dict)  # the plan options it was compiled with
    correct: bool = False
    gpu_ms: float | None = None  # median over the repetitions, all dispatches of one execute
    gbps: float | None = None  # the operator's minimum traffic (OpSpec.traffic) over gpu_ms
    ratio_to_copy: float | None = None  # gbps over the copy kernel's (the run's one baseline, copy_ms)
    copy_ms: float | None = None  # the run's copy baseline: the median of every copy timed between the variants
    #: The same against the copy kernel moving the variant's own traffic (None where one
    #: binding cannot hold it): what a kernel of that size can reach.
    ratio_to_same_copy: float | None = None
    same_copy_ms: float | None = None
    compile_ms: float | None = None  # creating its pipelines (0 when the adapter's cache had them)
    dispatches: int = 0
    clock: str = "gpu"  # "gpu": timestamps; "wall": submit to completion (no timestamps)
    default: bool = False  # the variant the operator chooses by itself
    error: str | None = None  # why it did not compile or run
    first_wrong: str | None = None  # the first element that differs from the reference
    samples_ms: list = field(default_factory=list)
    copy_samples_ms: list = field(default_factory=list)  # the copies timed right after its samples
    same_copy_samples_ms: list = field(default_factory=list)
    eligible: bool = True  # False: named with --strategies but the description cannot use it
    hlsl: str | None = None  # the HLSL file of an --hlsl variant (strategy "hlsl")


def failures(rows: list[Row]) -> list[Row]:
    """The eligible variants that did not compile, did not run or computed a wrong result
    (`gpudml lab` exits with status 1 when there are any)."""
    return [r for r in rows if r.eligible and not r.correct]


def run(device, desc, *, strategies=None, templates: str | None = None, reps: int = 7, seed: int = 0,
        copy_bytes: int = COPY_BYTES, options=None, hlsl=(), grid=None, defines=None) -> list[Row]:
    """Every variant of `desc` on `device`: its eligible strategies (or those named in
    `strategies`), each with every set of plan options in `options` (a list of dicts; None:
    none), under the packaged templates and, with `templates`, under that folder.
    `strategies="tuned"`: the variants the autotuner would time (device/tuning.candidates:
    each eligible strategy with its own plan and with the options its planner offers).
    `hlsl`: (file name, HLSL source) pairs, each one more variant run over `grid`, compiled
    with `defines`."""
    spec = spec_for(desc)
    op = device.create_operator(desc)
    compiling = device.pipeline_cache_stats.compile_seconds
    default = device.compile_operator(op)
    default_compile_ms = (device.pipeline_cache_stats.compile_seconds - compiling) * 1e3
    eligible = default.strategies
    if strategies in ("tuned", ["tuned"]):
        if options:
            raise InvalidArgumentError("lab: plan options are for named strategies; the tuned variants bring their own")
        variants = list(tuning.candidates(op, device.caps, default.program, device.template_path).values())
    else:
        names = list(eligible) if strategies in (None, "all", ["all"]) else list(strategies)
        variants = [(name, opts) for name in names for opts in options or [{}]]
    devices = {None: device}
    if templates is not None:
        devices[templates] = Device(feature_level=device.feature_level, adapter=device.adapter_name,
                                    template_path=templates)
    rng = np.random.default_rng(seed)
    in_fields = [d for _, d in default.inputs]
    buffers = spec.sample_buffers(desc, rng)
    logical = [logical_from_raw(raw, d) for raw, d in zip(buffers, in_fields)]
    expected, tolerance = spec.expected_outputs(desc, logical)  # one of each per output
    traffic = spec.traffic(desc)
    yard = Yardsticks(device, 256, 16, copy_bytes)
    # The copy kernel moving the variant's own traffic: what a kernel of that size can reach
    # (a small kernel pays a fixed start and drain that a 64 MiB copy hides).
    # Each invocation copies up to 16 blocks, fewer where the copy is too small to keep
    # 2^18 invocations busy (as the 64 MiB one does with 16).
    same_bytes = max(16, -(-traffic // 32) * 16)
    per_invocation = 1 << min(4, max(0, (same_bytes // 16 >> 18).bit_length() - 1))
    same = (Yardsticks(device, 256, per_invocation, same_bytes) if same_bytes <= device.caps.binding_bytes
            else None)
    rows = []
    try:
        for template_dir, dev in devices.items():
            tensors = [dev.tensor(raw, desc=d) for raw, d in zip(buffers, in_fields)]
            out_descs = [d for _, d in default.outputs]
            for name, opts in variants:
                row = Row(name, template_dir, dict(opts),
                          default=(name == default.strategy and template_dir is None and not opts))
                rows.append(row)
                if name not in eligible:
                    row.eligible = False
                    row.error = f"not eligible for this description (eligible: {', '.join(eligible)})"
                    continue
                _run_variant(row, dev, op if dev is device else dev.create_operator(desc), name, tensors,
                             out_descs, expected, tolerance, reps, (yard, same), traffic)
                if row.default and row.compile_ms == 0:  # compiled above, to learn the default
                    row.compile_ms, default_compile_ms = default_compile_ms, 0.0
            if dev is device:
                for path, source in hlsl:
                    row = Row("hlsl", None, hlsl=path)
                    rows.append(row)
                    _run_hlsl(row, dev, default.program, source, defines, grid, tensors, out_descs, expected, tolerance,
                              reps, (yard, same), traffic)
    finally:
        for y in (yard, same):
            if y is not None:
                y.close()
    apply_baselines(rows, yard.copy_gbps_bytes, same.copy_gbps_bytes if same is not None else None)
    return rows


def apply_baselines(rows: list[Row], copy_bytes: int, same_bytes: int | None) -> None:
    """One copy baseline per run: every row's `copy_ms` becomes the median of all the copies
    timed between the variants (`same_copy_ms` likewise), and the ratios divide by it, so
    that they rank as the variants' times do (each variant divided by its own neighbouring
    copies could rank them the other way round). `copy_bytes` / `same_bytes`: the bytes each
    copy kernel reads and writes."""
    copy_ms, copy_gbps = report.copy_baseline([ms for r in rows for ms in r.copy_samples_ms], copy_bytes)
    same_ms, same_gbps = report.copy_baseline([ms for r in rows for ms in r.same_copy_samples_ms], same_bytes)
    for r in rows:
        if r.gpu_ms is None:
            continue
        r.copy_ms, r.same_copy_ms = copy_ms, same_ms
        if r.gbps and copy_gbps:
            r.ratio_to_copy = r.gbps / copy_gbps
        if r.gbps and same_gbps:
            r.ratio_to_same_copy = r.gbps / same_gbps


def _run_variant(row: Row, dev, op, strategy, tensors, out_descs, expected, tolerance, reps, yards, traffic) -> None:
    stats = dev.pipeline_cache_stats
    compiling = stats.compile_seconds
    try:
        compiled = dev.compile_operator(op, strategy, options=row.options)
    except DMLError as exc:
        row.error = _reason(exc)
        return
    row.compile_ms = (stats.compile_seconds - compiling) * 1e3
    row.dispatches = len(compiled.program.kernels)
    _check_and_time(row, dev, compiled.execute, tensors, out_descs, expected, tolerance, reps, yards, traffic)


def _run_hlsl(row: Row, dev, program, source: str, defines, grid, tensors, out_descs, expected, tolerance, reps, yards,
              traffic) -> None:
    """An --hlsl variant: compiled, bound to the description's tensors and its first kernel's
    uniforms, then checked and timed as _run_variant does an operator's."""
    try:
        t0 = time.perf_counter()
        kernel = Kernel.from_hlsl(source, defines=defines)
        size = kernel.interface.workgroup_size
        if grid is None:
            count = max(d.element_count for d in out_descs)
            grid = (max(1, -(-count // (size[0] * size[1] * size[2]))),)
            if grid[0] > dev.caps.max_workgroups_per_dimension:
                limit = dev.caps.max_workgroups_per_dimension
                grid = (limit, -(-grid[0] // limit))
        uniforms = program.kernels[0].uniform_bytes
        call = kernel.call(dev, [t.desc for t in tensors], out_descs, grid, uniform_bytes=uniforms)
    except DMLError as exc:
        row.error = _reason(exc)
        return
    row.compile_ms = (time.perf_counter() - t0) * 1e3
    row.dispatches = 1
    _check_and_time(row, dev, call.execute, tensors, out_descs, expected, tolerance, reps, yards, traffic)


def _check_and_time(row: Row, dev, execute, tensors, out_descs, expected, tolerance, reps, yards, traffic) -> None:
    """A compiled variant (`execute(tensors, outputs=...)`: an operator's or an --hlsl
    kernel's): run once into fresh outputs and checked against the reference, then timed
    (_time); a DMLError on the way is the row's error."""
    try:
        outs = [dev.empty(d) for d in out_descs]
        results = execute(tensors, outputs=outs)
        got = [logical_from_raw(r.raw(), d) for r, d in zip(results, out_descs, strict=True)]
    except DMLError as exc:
        row.error = _reason(exc)
        return
    row.first_wrong = first_wrong(got, expected, tolerance)
    row.correct = row.first_wrong is None
    _time(row, dev, lambda: execute(tensors, outputs=outs), reps, yards, traffic)


def _time(row: Row, dev, execute, reps, yards, traffic) -> None:
    """`reps` timed executes, each followed by the copy kernels (paired samples)."""
    yard, same = yards
    samples, copies, same_copies = [], [], []
    for _ in range(reps):  # paired: the variant, then the copy kernels
        with dev.profile() as prof:
            execute()
        samples.append(prof.gpu_ms)
        row.clock = prof.rows[0]["clock"] if prof.rows else row.clock
        copies.append(yard.copy_ms()[0])
        if same is not None:
            same_copies.append(same.copy_ms()[0])
    row.samples_ms = samples
    row.copy_samples_ms, row.same_copy_samples_ms = copies, same_copies
    row.gpu_ms = statistics.median(samples)
    if row.gpu_ms > 0:
        row.gbps = traffic / row.gpu_ms / 1e6  # (the ratios: apply_baselines, once every variant ran)


def _reason(exc: DMLError) -> str:
    """The error class and the line that says what went wrong (for a rejected shader: the
    compiler's diagnostic and where it points, not the numbered source)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    said = next((i for i, line in enumerate(lines) if "error" in line.lower() and i > 0), None)
    if said is None:
        return f"{type(exc).__name__}: {lines[0] if lines else ''}"
    where = lines[said + 1].lstrip("┌─ ").strip() if said + 1 < len(lines) else ""
    return f"{type(exc).__name__}: {lines[said]} ({where})"


#: The table's columns and what each says (`gpudml lab OP --help` and docs/experimenting.md).
COLUMNS = {
    "strategy": "the variant: a kernel strategy, with its plan options where --options gives some",
    "templates": "packaged, or the --templates folder it ran under (for an --hlsl variant: its file)",
    "correct": "yes: bit-exact against the reference, or within the operator's documented precision",
    "GPU ms": "the median time of one execute's dispatches, from GPU timestamps (wall ms where the adapter has "
              "none: submit to completion, and the header line says so)",
    "GB/s": "the bytes the description must read and write over that time",
    "x copy": "GB/s over the adapter's vec4 copy kernel's (64 MiB) on the same clock, one copy baseline per run "
              "(the median of the copies timed between the variants), so the ratios rank as the times do",
    "x same": "the same against a copy kernel moving the description's own bytes (what a kernel of that size "
              "can reach)",
    "compile ms": "creating its pipelines (0 where the adapter's pipeline cache had them)",
    "note": "the operator's default choice, or why a variant did not compile, run or match the reference",
}


def columns_help() -> str:
    """The columns explained, one per line (for --help)."""
    return report.columns_help(COLUMNS)


def table(rows: list[Row], title: str) -> str:
    """A readable table of the rows."""
    def fmt(v, spec):
        return format("-", f">{spec.split('.')[0]}") if v is None else format(v, spec)

    clocks = {r.clock for r in rows if r.gpu_ms is not None}
    gpu = clocks <= {"gpu"}
    width = max([10] + [len(variant_name(r)) for r in rows])
    baseline = next((r.copy_ms for r in rows if r.copy_ms), None)
    clock = ("GPU times from timestamps, the copy kernel's too" if gpu else
             "no GPU timestamps on this adapter: times are the wall clock, submit to completion, the copy "
             "kernel's too")
    copy = f"; one copy baseline for every row, {baseline:.4f} ms" if baseline else ""
    lines = [title,
             f"  ({clock}{copy}; the columns: gpudml lab --help)",
             f"  {'strategy':{width}s} {'templates':12s} {'correct':8s} {('GPU ms' if gpu else 'wall ms'):>9s} "
             f"{'GB/s':>8s} {'x copy':>7s} {'x same':>7s} {'compile ms':>10s}  note"]
    for r in rows:
        note = "default choice" if r.default else ""
        if r.error:
            note = r.error
        elif not r.correct:
            note = f"WRONG: {r.first_wrong}"
        templates = templates_name(r) or "packaged"
        correct = "yes" if r.correct else "NO"
        lines.append(f"  {variant_name(r):{width}s} {templates[:12]:12s} {correct:8s} {fmt(r.gpu_ms, '9.4f')} "
                     f"{fmt(r.gbps, '8.2f')} {fmt(r.ratio_to_copy, '7.2f')} "
                     f"{fmt(r.ratio_to_same_copy, '7.2f')} {fmt(r.compile_ms, '10.1f')}  {note}")
    return "\n".join(lines)


def variant_name(row: Row) -> str:
    """The strategy, and its plan options where it has any: "workgroup lanes=64"."""
    return tuning.variant_name(row.strategy, row.options)


def templates_name(row: Row) -> str:
    """The name of the row's templates folder ("" for the packaged templates), or of an
    --hlsl variant's file."""
    if row.hlsl is not None:
        return os.path.basename(row.hlsl)
    return "" if row.templates is None else os.path.basename(os.path.normpath(row.templates))


def parse_options(text: str) -> dict:
    """`--options` text: KEY=VALUE pairs, comma-separated; VALUE an integer, true, false or
    a name (letters, digits and underscores, kept as written: block=elements); the planner
    checks the values (InvalidArgumentError otherwise). Empty text: no options (the
    operator's own plan)."""
    options = {}
    if not text.strip():
        return options
    for item in (i.strip() for i in text.split(",")):
        key, eq, value = (part.strip() for part in item.partition("="))
        if not eq or not key or not value:
            raise InvalidArgumentError(f"--options: {item!r} is not KEY=VALUE (in {text!r})")
        if value.lower() in ("true", "false"):
            options[key] = value.lower() == "true"
        elif value.isidentifier():
            options[key] = value
        else:
            try:
                options[key] = int(value)
            except ValueError:
                raise InvalidArgumentError(
                    f"--options: {key} = {value!r} is not an integer, true, false or a name") from None
    return options


def as_dicts(rows: list[Row]) -> list[dict]:
    return [asdict(r) for r in rows]


def write_wgsl(device, desc, rows: list[Row], folder: str) -> list[str]:
    """Each variant's WGSL, one file per dispatch: STRATEGY[-TEMPLATES]-K.wgsl."""
    os.makedirs(folder, exist_ok=True)
    written = []
    for r in rows:
        if r.hlsl is not None:  # what the HLSL compiler made of it (WGSL from Slang)
            try:
                code = Kernel.from_hlsl(open(r.hlsl, encoding="utf-8").read()).code
            except (DMLError, OSError):
                continue
            path = os.path.join(folder, f"hlsl-{os.path.splitext(os.path.basename(r.hlsl))[0]}."
                                        f"{'wgsl' if isinstance(code, str) else 'spv'}")
            with open(path, "w" if isinstance(code, str) else "wb") as f:
                f.write(code)
            written.append(path)
            continue
        if r.error and "not eligible" in r.error:
            continue
        try:
            program = compiler.compile(desc, device.caps, strategy=r.strategy, options=r.options,
                                       template_path=r.templates)
        except DMLError:
            continue
        suffix = "".join(f"-{k}{v}" for k, v in r.options.items())
        suffix += "-" + templates_name(r) if r.templates is not None else ""
        for k, source in enumerate(program.wgsl):
            path = os.path.join(folder, f"{r.strategy}{suffix}-{k}.wgsl")
            with open(path, "w") as f:
                f.write(source)
            written.append(path)
    return written


#: The chart title's font size (points); a character of it is at most about 0.6 of that wide.
CHART_TITLE_POINTS = 8


def chart_title(title: str, width_inches: float) -> str:
    """`title` wrapped to lines that fit a figure `width_inches` wide (72 points an inch,
    a character at most 0.6 of the font size wide): never cut off at the figure's edges."""
    return textwrap.fill(title, max(20, int(width_inches * 72 / (CHART_TITLE_POINTS * 0.6)) - 2))


def chart(rows: list[Row], path: str, title: str) -> bool:
    """A bar chart of the ratios to the copy kernel; False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    labels = [variant_name(r).replace(" ", "\n") + ("\n" + templates_name(r) if r.templates is not None else "")
              for r in rows]
    values = [r.ratio_to_copy or 0.0 for r in rows]
    colors = ["tab:green" if r.correct else "tab:red" for r in rows]
    width = max(6.0, 1.2 * len(rows))
    fig, ax = plt.subplots(figsize=(width, 3.5))
    ax.bar(range(len(rows)), values, color=colors)
    ax.set_xticks(range(len(rows)), labels)
    ax.set_ylabel("x the copy kernel's GB/s (one copy baseline)")
    ax.set_title(chart_title(title, width), fontsize=CHART_TITLE_POINTS)
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")  # (whatever the wrap misjudges stays inside)
    plt.close(fig)
    return True
