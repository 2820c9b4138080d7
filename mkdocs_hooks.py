"""MkDocs hooks (mkdocs.yml `hooks:`): the pages generated from gpudml itself at build time.

- `index.md`: README.md, the front page, with its links into docs/ made site-relative.
- `operators/<key>.md`, one per operator of the registry (gpudml.ops.SPECS), and
  `operators/index.md`: DirectML's struct, feature levels, the functional form, the desc,
  the support tables, the planner's strategies and plan options, the page's worked
  examples and the reference, followed by the hand-written notes of
  docs/operators/<key>.md where they exist (included, their first heading dropped).
- `api/functional.md` and `api/reference.md`: the functional forms, the desc classes and
  the references, made from the registry at import time (argmax, cumulative_sum, ... are
  rows of tables: no static reader sees them). The rest of the API reference is
  mkdocstrings (docs/api/*.md).
- `benchmarks.md`: bench/results/, one section per folder (its README.md, its files, its plot).
- `assets/pygments.css`: the code highlighting's style (no CDN: the site works offline).

The nav's "Operators" entry is filled in from the registry too, so a new operator needs no
edit here. gpudml is imported from this checkout (what mkdocstrings reads), not from
whatever is installed.
"""

from __future__ import annotations

import dataclasses
import enum
import html
import inspect
import re
import sys
import textwrap
from pathlib import Path

import numpy as np
from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parent
NOTES = ROOT / "docs" / "operators"
RESULTS = ROOT / "bench" / "results"


def _gpudml():
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import gpudml
    import gpudml.caps
    import gpudml.ops
    return gpudml


# ---------------------------------------------------------------------------- text helpers
def _doc(obj) -> str:
    """obj's docstring, dedented, as Markdown: angle brackets outside code spans escaped
    (docstrings say `shaders/<key>.wgsl.j2` and "x < n" as plain text)."""
    text = inspect.getdoc(obj) or ""
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(p if p.startswith("`") else html.escape(p, quote=False) for p in parts)


def _value(v, prefix: str = "") -> str:
    if isinstance(v, enum.Enum):
        return f"{prefix}{type(v).__name__}.{v.name}"
    if isinstance(v, np.ndarray):
        return f"np.array({v.tolist()!r}, np.{v.dtype.name})" if v.ndim else repr(v.item())
    if isinstance(v, (list, tuple)) and any(isinstance(e, np.ndarray) for e in v):
        return "[" + ", ".join(_value(e, prefix) for e in v) + "]"
    return repr(v)


def _signature(fn) -> str:
    """fn's signature with enum defaults as `PaddingMode.CONSTANT`, not their repr."""
    sig = inspect.signature(fn)
    params = [p.replace(default=_Raw(_value(p.default))) if p.default is not p.empty else p
              for p in sig.parameters.values()]
    return str(sig.replace(parameters=params, return_annotation=sig.empty))


class _Raw:
    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


def _array(name: str, a) -> str:
    """`name = <a as numpy code>`, or just the code where `name` is empty; a list of arrays too."""
    lead = f"{name} = " if name else ""
    if isinstance(a, list):
        return lead + "[\n" + "".join(f"    {_array_expr(e, '    ')},\n" for e in a) + "]"
    return lead + _array_expr(a, " " * len(lead))


def _array_expr(a: np.ndarray, indent: str = "") -> str:
    """`np.array([...], np.float32)`, continuation lines aligned after `indent`."""
    body = np.array2string(a, separator=", ", threshold=10**6, prefix=indent + "np.array(")
    return f"np.array({body}, np.{a.dtype.name})"


def _demoted(markdown: str, levels: int = 1, drop_title: bool = True) -> str:
    """Markdown with every ATX heading `levels` deeper (outside code fences), its first
    level-1 heading dropped when `drop_title`."""
    out, fence, dropped = [], None, not drop_title
    for line in markdown.splitlines():
        stripped = line.lstrip()
        if stripped.startswith(("```", "~~~")):
            marker = stripped[:3]
            fence = None if fence == marker else (fence or marker)
        elif fence is None and re.match(r"#{1,6} ", line):
            if not dropped and line.startswith("# "):
                dropped = True
                continue
            line = "#" * levels + line
        out.append(line)
    return "\n".join(out).strip() + "\n"


# ---------------------------------------------------------------------------- operator pages
def _tables(spec) -> list[tuple[str, object]]:
    """(title, SupportTable) of a spec: one, or one per function (Reduce)."""
    if isinstance(spec.support, dict):
        return [(getattr(k, "name", str(k)), t) for k, t in spec.support.items()]
    return [("", spec.support)]


def _introduced(spec):
    return min(t.introduced for _, t in _tables(spec))


def _rows(table) -> tuple:
    return tuple((row.level, row.ranks, tuple(sorted(row.types.items()))) for row in table.rows)


def _support_markdown(spec) -> str:
    """One table per distinct support table (Reduce's functions that share one, together)."""
    from gpudml.types import type_list

    groups: dict[tuple, list] = {}
    for title, table in _tables(spec):
        groups.setdefault(_rows(table), []).append((title, table))
    lines = []
    for members in groups.values():
        titles = [t for t, _ in members if t]
        table = members[0][1]
        if titles:
            lines.append(f"**{', '.join(titles)}** (introduced at {table.introduced.name})\n")
        tensors = list(table.rows[0].types)
        lines.append("| from | ranks | " + " | ".join(f"`{t}`" for t in tensors) + " |")
        lines.append("|---|---|" + "---|" * len(tensors))
        for row in table.rows:
            lines.append(f"| {row.level.name} | {_ranks(row.ranks)} | "
                         + " | ".join(type_list(row.types[t]) for t in tensors) + " |")
        lines.append("")
    return "\n".join(lines)


def _ranks(ranks) -> str:
    r = sorted(ranks)
    return f"{r[0]}-{r[-1]}" if len(r) > 2 and r == list(range(r[0], r[-1] + 1)) else ", ".join(map(str, r))


def _example_desc(spec, example):
    """The desc the functional call of `example` runs (as gpudml.functional.call builds it)."""
    from gpudml.ops.spec import flat_tensors, per_argument
    from gpudml.runtime.tensor import checked_array
    from gpudml.tensor_desc import TensorDesc
    from gpudml.types import DataType

    call = spec.functional(*([] if example.input is None else [example.input]), **example.args)
    flat, counts = flat_tensors(spec, call.tensors)
    descs = []
    for item in flat:
        value = item[2](item[1]) if len(item) > 2 else item[1]
        value = checked_array(value, item[0])
        descs.append(TensorDesc(DataType.from_numpy(value.dtype), value.shape))
    return spec.infer_output(*per_argument(descs, counts), **call.attributes)


def _strategies_markdown(gpudml, spec) -> str:
    planner = spec.planner
    lines = [f"Planner: `{type(planner).__module__}.{type(planner).__name__}`; strategies "
             + ", ".join(f"`{s}`" for s in planner.strategies) + "; plan options "
             + (", ".join(f"`{o}`" for o in planner.options) or "none")
             + " (`device.compile_operator(op, strategy, options={...})`, `gpudml lab --options`).", ""]
    if spec.examples:
        desc = _example_desc(spec, spec.examples[0])
        lines += [f"The strategies that can run example `{spec.examples[0].name}`, in the order of choice, "
                  "per capability profile (`gpudml shader --caps NAME`):", "",
                  "| profile | strategies |", "|---|---|"]
        for name, caps in gpudml.caps.PROFILES.items():
            order = planner.strategies_for(desc, caps)
            lines.append(f"| `{name}` ({'CPU' if caps.is_software else 'GPU'} class) | "
                         + ", ".join(f"`{s}`" for s in order) + " |")
        lines.append("")
    # What each strategy does: the docstrings of the planner's classes and of its family's module.
    classes = [c for c in type(planner).__mro__ if c.__module__.startswith("gpudml.kernels")
               and c.__name__ != "Planner" and c.__doc__]
    modules = []
    for c in classes:
        module = sys.modules[c.__module__]
        if module not in modules and module.__doc__:
            modules.append(module)
    if classes or modules:
        lines.append('??? note "The kernel family (from its docstrings)"')
        body = [f"**`{c.__module__}.{c.__name__}`**: {_doc(c)}" for c in classes]
        body += [f"**`{m.__name__}`**\n\n{_doc(m)}" for m in reversed(modules)]
        lines.append(textwrap.indent("\n\n".join(body), "    "))
        lines.append("")
    return "\n".join(lines)


def _examples_markdown(gpudml, spec) -> str:
    if not spec.examples:
        return "The page has no worked example.\n"
    lines = ["From the DirectML page; `gpudml examples` runs each on the GPU and compares it with the "
             "expected output below.", ""]
    for e in spec.examples:
        first = spec.tensors[0] if e.input is not None else ""  # (none: a generator's call)
        args = ", ".join(f"{k}={_value(v, 'dml.')}" for k, v in e.args.items())
        call = f"dml.{spec.functional_name}({', '.join(filter(None, [first, args]))})"
        given = [_array(first, e.input)] if e.input is not None else []
        lines += [f"**`{e.name}`** (from `{e.source}`)", "", "```python", *given, call,
                  "# expected output:", _array("", e.expected), "```", ""]
    return "\n".join(lines)


def _tolerance_doc(spec) -> str:
    """The docstring of the spec's tolerance, or of the function that made it (a closure)."""
    tol = spec.tolerance
    if tol is None:
        return ""
    if tol.__doc__:
        return _doc(tol)
    outer = tol.__qualname__.split(".<locals>.")[0]
    maker = getattr(sys.modules[tol.__module__], outer, None)
    return _doc(maker) if maker is not None and maker is not tol else ""


def _desc_markdown(desc) -> str:
    lines = ["| field | type | default |", "|---|---|---|"]
    for f in dataclasses.fields(desc):
        if f.name.startswith("_"):
            continue
        default = "" if f.default is dataclasses.MISSING else f"`{f.default!r}`"
        lines.append(f"| `{f.name}` | `{f.type if isinstance(f.type, str) else f.type.__name__}` | {default} |")
    doc = inspect.getdoc(desc) or ""
    auto = doc.startswith(desc.__name__ + "(")  # a dataclass without a docstring of its own
    return ("" if auto else _doc(desc) + "\n\n") + "\n".join(lines) + "\n"


def operator_page(gpudml, spec) -> str:
    fn = gpudml.FUNCTIONS[spec.functional_name]
    levels = sorted({row.level for _, t in _tables(spec) for row in t.rows})
    aliases = ", ".join(f"`gpudml.{a.__name__}`" for a in spec.aliases)
    out = [
        f"# {spec.name} (`{spec.page}`)", "",
        "| | |", "|---|---|",
        f"| DirectML struct | `{spec.page}` (`DML_OPERATOR_{spec.page[4:-len('_OPERATOR_DESC')]}`) |",
        f"| introduced at | {_introduced(spec).name} |",
        "| levels of its support table | " + ", ".join(level.name for level in levels) + " |",
        f"| functional form | `gpudml.{spec.functional_name}`" + (f" (aliases {aliases})" if aliases else "") + " |",
        f"| desc class | `gpudml.{spec.desc.__name__}` |",
        f"| reference | `gpudml.reference.{spec.functional_name}` |",
        f"| key | `{spec.key}`: `gpudml shader {spec.key}`, `gpudml lab {spec.key}`, "
        f"module `{spec.desc.__module__}` |", "",
        "## Functional form", "",
        "```python", f"gpudml.{spec.functional_name}{_signature(fn)}", "```", "", _doc(fn), "",
    ]
    for alias in spec.aliases:
        out += ["```python", f"gpudml.{alias.__name__}{_signature(alias)}", "```", "", _doc(alias), ""]
    out += ["## Desc", "", f"`gpudml.{spec.desc.__name__}`: DirectML's fields in snake case.", "",
            _desc_markdown(spec.desc),
            "## Support by feature level", "",
            "A `Device` validates a desc against the row of the highest level at or below its own "
            "([Semantics](../semantics.md)).", "", _support_markdown(spec),
            "## Strategies and plan options", "", _strategies_markdown(gpudml, spec),
            "## Examples", "", _examples_markdown(gpudml, spec),
            "## Reference", "",
            "```python", f"gpudml.reference.{spec.functional_name}{_signature(spec.reference)}", "```", "",
            _doc(spec.reference), ""]
    tolerance = _tolerance_doc(spec)
    out += ["**Documented precision.** " + (tolerance or "Bit-exact: results equal the reference's bit for bit."), ""]
    notes = NOTES / f"{spec.key}.md"
    if notes.exists():
        out += ["## Notes", "", f"*Hand-written notes: `docs/operators/{spec.key}.md`.*", "",
                _demoted(notes.read_text(), 1)]
    return "\n".join(out)


def operators_index(gpudml) -> str:
    out = ["# Operators", "",
           "Every operator of the registry (`gpudml.ops.SPECS`), in documentation order. Each page is "
           "generated from the operator's spec when the site is built.", "",
           "| operator | DirectML struct | functional form | introduced | strategies |",
           "|---|---|---|---|---|"]
    for spec in gpudml.SPECS:
        out.append(f"| [{spec.name}]({spec.key}.md) | `{spec.page}` | `gpudml.{spec.functional_name}` | "
                   f"{_introduced(spec).name} | " + ", ".join(f"`{s}`" for s in spec.planner.strategies) + " |")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------- API pages
def functional_page(gpudml) -> str:
    out = ["# Functional forms and descs", "",
           "Generated from the operator registry: `gpudml.<name>` for each operator (numpy in, numpy "
           "out; Tensor in, Tensor out; an [Expression](gpudml.md) in records a graph node), and "
           "the desc classes that `Device.create_operator` takes.", "", "## Functions", ""]
    from gpudml.ops import EXTENSIONS

    every = (*gpudml.SPECS, *EXTENSIONS)
    by_name = {f.__name__: spec for spec in every for f in (spec.functional, *spec.aliases)}

    def page(spec) -> str:  # (an extension's notes are docs/extensions.md)
        return "../extensions.md" if spec in EXTENSIONS else f"../operators/{spec.key}.md"
    for name, fn in gpudml.FUNCTIONS.items():
        spec = by_name[name]
        out += [f"### `{name}`", "", "```python", f"gpudml.{name}{_signature(fn)}", "```", "", _doc(fn), "",
                f"Operator: [{spec.name}]({page(spec)}).", ""]
    out += ["## Desc classes", ""]
    for spec in every:
        out += [f"### `{spec.desc.__name__}`", "", f"`{spec.page}`; operator [{spec.name}]"
                f"({page(spec)}).", "", _desc_markdown(spec.desc)]
    return "\n".join(out)


def reference_page(gpudml) -> str:
    import gpudml.reference as reference
    out = ["# gpudml.reference", "", _doc(reference), ""]
    for spec in gpudml.SPECS:
        name = spec.functional_name
        out += [f"## `{name}`", "", "```python", f"gpudml.reference.{name}{_signature(getattr(reference, name))}",
                "```", "", _doc(spec.reference), ""]
        tolerance = _tolerance_doc(spec)
        if tolerance:
            out += [f"Documented precision of `gpudml.{name}` against it: {tolerance}", ""]
        out += [f"Operator: [{spec.name}](../operators/{spec.key}.md).", ""]
    return "\n".join(out)


# ---------------------------------------------------------------------------- README, results
_LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")


def _site_links(markdown: str, prefix: str = "docs/") -> str:
    """Links of a page outside docs/ made to work in the site: into docs/ stay links
    (without `prefix`), others to files of the repository become their path as code."""
    def fix(m):
        bang, text, target = m.groups()
        if re.match(r"[a-z]+:|#", target):
            return m.group(0)
        if target.startswith(prefix):
            target = target[len(prefix):]
            return f"{bang}[{text}]({target + 'index.md' if target.endswith('/') else target})"
        if text.strip("`") == target:
            return f"`{target}`"
        return text if text.startswith("`") else f"{text} (`{target}`)"
    return _LINK.sub(fix, markdown)


def benchmarks_page(config, files: list) -> str:
    out = ["# Benchmark results", "",
           "Measured results kept in the repository under `bench/results/`, newest first: each folder's "
           "README (what was run, on what, at which commit), its files and its plot. "
           "[Performance](performance.md) quotes and explains them.", ""]
    for folder in sorted((p for p in RESULTS.iterdir() if p.is_dir()), reverse=True):
        readme = folder / "README.md"
        title = f"`bench/results/{folder.name}/`"
        out += [f"## {title}", ""]
        if readme.exists():
            out += [_site_links(_demoted(readme.read_text(), 2, drop_title=False)), ""]
        names = sorted(p.name for p in folder.iterdir() if p.is_file())
        out += ["Files: " + ", ".join(f"`{n}`" for n in names) + ".", ""]
        if (folder / "bench.png").exists():
            uri = f"assets/results/{folder.name}/bench.png"
            files.append(File.generated(config, uri, abs_src_path=str(folder / "bench.png")))
            out += [f"![gpudml bench, {folder.name}]({uri})", ""]
    return "\n".join(out)


# ---------------------------------------------------------------------------- MkDocs events
def on_config(config):
    """Fill the nav's "Operators" section (a list holding `operators/index.md`) from the registry."""
    gpudml = _gpudml()
    for item in config["nav"] or []:
        if isinstance(item, dict) and "Operators" in item:
            item["Operators"] = ["operators/index.md"] + [{spec.name: f"operators/{spec.key}.md"}
                                                          for spec in gpudml.SPECS]
    return config


def on_files(files, config):
    gpudml = _gpudml()
    from pygments.formatters import HtmlFormatter

    generated = {
        "index.md": _site_links((ROOT / "README.md").read_text()),
        "operators/index.md": operators_index(gpudml),
        "api/functional.md": functional_page(gpudml),
        "api/reference.md": reference_page(gpudml),
        "assets/pygments.css": HtmlFormatter(style="default").get_style_defs(".highlight"),
    }
    keys = {spec.key for spec in gpudml.SPECS}
    for note in NOTES.glob("*.md"):
        if note.stem not in keys:
            raise ValueError(f"docs/operators/{note.name}: no operator has the key {note.stem!r} "
                             f"(keys: {', '.join(sorted(keys))})")
    for spec in gpudml.SPECS:
        generated[f"operators/{spec.key}.md"] = operator_page(gpudml, spec)
    extra: list = []
    generated["benchmarks.md"] = benchmarks_page(config, extra)
    for uri, content in generated.items():
        old = files.get_file_from_path(uri)
        if old is not None:  # the hand-written notes, now part of the generated page
            files.remove(old)
        files.append(File.generated(config, uri, content=content))
    for f in extra:
        files.append(f)
    return files
