"""The shape of the house (docs/architecture.md):
gpudml's import graph has no cycle and no import inside a function to dodge one (the CLI
alone imports its heavier subcommands, `lab`, `tune` and `bench`, when they run), and its
modules lie in layers (LAYERS, bottom first) where each imports only modules of its own
layer or of the layers below: the runtime knows no operator, template or compiler, kernels/
no operator, the compiler no device; the compiler's side never reaches the runtime, and only
runtime/ (and the bench, which measures the adapter itself) imports wgpu."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import gpudml

pytestmark = pytest.mark.any_class  # the source tree: the same under either adapter class

PACKAGE = Path(gpudml.__file__).resolve().parent


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _targets(module: str, node) -> list[str]:
    """The modules an import statement of `module` names: `from X import Y` is X.Y where that
    is a module, else X (Python imports a submodule's parent packages first anyway)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level:
        base = module.split(".")
        if not MODULES[module].name == "__init__.py":
            base = base[:-1]
        base = base[:len(base) - (node.level - 1)]
        package = ".".join(base + ([node.module] if node.module else []))
    else:
        package = node.module or ""
    return [f"{package}.{a.name}" if f"{package}.{a.name}" in MODULES else package for a in node.names]


def _type_checking(node) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imports(module: str) -> tuple[set[str], list[tuple[int, str]]]:
    """(what `module` imports when it is imported: every module, gpudml's or not, named by a
    statement at its top level; the gpudml modules it imports inside functions, with their
    line numbers). Imports under `if TYPE_CHECKING:` are for annotations only."""
    tree = ast.parse(MODULES[module].read_text())
    top, inner = set(), []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            top.update(_targets(module, node))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in ast.walk(node):
                if isinstance(sub, (ast.Import, ast.ImportFrom)):
                    inner += [(sub.lineno, t) for t in _targets(module, sub) if t.startswith("gpudml")]
    return top, inner


GRAPH = {m: {t for t in imports(m)[0] if t in MODULES and t != m} for m in MODULES}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_import_graph_has_no_cycle():
    assert _cycles(GRAPH) == []


def test_the_cycle_check_finds_a_cycle():
    """The check itself: a graph with a cycle is reported, one without is not."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_gpudml_import_inside_a_function_but_the_cli_subcommands():
    lazy = {m: inner for m in MODULES if (inner := imports(m)[1])}
    allowed = {"gpudml.cli": {"gpudml.lab", "gpudml.bench.suite", "gpudml.bench.workloads",
                              "gpudml.onnx.run"},  # gpudml run: the onnx package only when asked
               # W58 and W63 run a model through the ONNX session (W63 a decoding): the onnx package (the
               # bench extra's) only when such a row runs
               "gpudml.bench.workloads": {"gpudml.onnx", "gpudml.onnx.session"},
               # the package's public names, loaded on their first use (PEP 562): `import gpudml`
               # stays light (gpudml/__init__.py)
               "gpudml": {"gpudml.python_operators", "gpudml.tensor_methods", "gpudml.device", "gpudml.functional",
                          "gpudml.graph", "gpudml.kernel", "gpudml.ops", "gpudml.ops.elementwise", "gpudml.runtime",
                          "gpudml.tensor_desc", "gpudml.types",
                          "gpudml.ops.dequantize"}}  # (gpudml.unpack4)
    for module, inner in lazy.items():
        assert {t for _, t in inner} <= allowed.get(module, set()), (module, inner)


def _reach(module: str) -> set[str]:
    """Every gpudml module that importing `module` imports, itself included."""
    seen, todo = set(), [module]
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo += GRAPH[m]
    return seen


#: The layers, bottom first, as docs/architecture.md draws them: (name, the modules and
#: packages it holds). A module imports only modules of its own layer or of layers below.
LAYERS = [
    ("foundations", ("gpudml.types", "gpudml.errors", "gpudml.version", "gpudml.cache", "gpudml.compare",
                     "gpudml.tensor_desc", "gpudml.caps")),
    ("runtime", ("gpudml.runtime",)),
    ("kernels", ("gpudml.kernels",)),
    ("operators", ("gpudml.ops", "gpudml.reference")),
    ("compiler", ("gpudml.compiler", "gpudml.hlsl")),
    ("device", ("gpudml.device",)),
    ("graphs and the functional API", ("gpudml.fusion", "gpudml.fusion_operand", "gpudml.graph", "gpudml.functional",
                                       "gpudml.kernel", "gpudml.promotion", "gpudml.python_operators",
                                       "gpudml.tensor_methods", "gpudml.examples")),
    ("tools", ("gpudml", "gpudml.__main__", "gpudml.cli", "gpudml.lab", "gpudml.testing", "gpudml.onnx",
               "gpudml.bench")),
]


def _layer(module: str, layers=LAYERS) -> int:
    """The index in `layers` of the layer holding `module`: the one naming it or, the most
    specific, a package above it (the package gpudml itself holds only its __init__)."""
    found = sorted((len(name), i) for i, (_, names) in enumerate(layers) for name in names
                   if module == name or (name != "gpudml" and module.startswith(name + ".")))
    assert found, f"{module} lies in no layer: give it one in LAYERS (and in docs/architecture.md)"
    return found[-1][1]


def _upward(graph: dict[str, set[str]], layers=LAYERS) -> list[str]:
    """The imports of `graph` that go up: "importer (its layer) -> imported (its layer)"."""
    return [f"{m} ({layers[_layer(m, layers)][0]}) -> {t} ({layers[_layer(t, layers)][0]})"
            for m in sorted(graph) for t in sorted(graph[m]) if _layer(t, layers) > _layer(m, layers)]


def test_every_module_lies_in_a_layer():
    for module in MODULES:
        _layer(module)
    names = [name for _, names in LAYERS for name in names]
    assert len(names) == len(set(names))
    assert all(name in MODULES for name in names), [n for n in names if n not in MODULES]


def test_each_layer_imports_only_its_own_or_what_lies_below():
    assert _upward(GRAPH) == []


def test_the_layer_check_finds_an_upward_import():
    """The check itself: an import from a lower layer into a higher one is reported, one
    sideways or downward is not; a module of no layer fails."""
    layers = [("bottom", ("gpudml.a",)), ("middle", ("gpudml.b", "gpudml.c")), ("top", ("gpudml",))]
    graph = {"gpudml.a.x": {"gpudml.b"}, "gpudml.b": {"gpudml.c.y", "gpudml.a"}, "gpudml": {"gpudml.a.x"}}
    assert _upward(graph, layers) == ["gpudml.a.x (bottom) -> gpudml.b (middle)"]
    assert _upward({"gpudml.b": {"gpudml.a"}, "gpudml": {"gpudml.b", "gpudml.c"}}, layers) == []
    assert _layer("gpudml.c.y.z", layers) == 1
    with pytest.raises(AssertionError, match="gpudml.d lies in no layer"):
        _layer("gpudml.d", layers)
    # The real graph with one upward import added (the runtime reaching for the compiler).
    assert _upward({**GRAPH, "gpudml.runtime.context": GRAPH["gpudml.runtime.context"] | {"gpudml.compiler"}}) == [
        "gpudml.runtime.context (runtime) -> gpudml.compiler (compiler)"]


@pytest.mark.parametrize("layer", ["gpudml.kernels", "gpudml.ops", "gpudml.compiler", "gpudml.hlsl"])
def test_the_compiler_side_never_reaches_the_runtime(layer):
    """compile(desc, caps) is pure: nothing it imports opens a device (the runtime lies
    below the kernels in LAYERS, but no pure layer needs it)."""
    for module in [m for m in MODULES if m == layer or m.startswith(layer + ".")]:
        reached = _reach(module)
        bad = sorted(m for m in reached if m == "gpudml.runtime" or m.startswith("gpudml.runtime."))
        assert not bad, (module, bad)


def test_only_the_runtime_and_the_bench_import_wgpu():
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text())
        names = {t for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))
                 for t in (_targets(module, node) if module in MODULES else [])}
        if any(n == "wgpu" or n.startswith("wgpu.") for n in names):
            assert module.startswith(("gpudml.runtime", "gpudml.bench")), module


def test_operators_import_no_private_name_of_another_module():
    """What operators share is public (ops/precision.py, ops/activations.py, ...): no module under
    gpudml/ops imports a name starting with `_` from another gpudml module."""
    bad = []
    for module in [m for m in MODULES if m == "gpudml.ops" or m.startswith("gpudml.ops.")]:
        for node in ast.walk(ast.parse(MODULES[module].read_text())):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("gpudml")):
                bad += [(module, node.lineno, a.name) for a in node.names if a.name.startswith("_")]
            elif isinstance(node, ast.Import):
                bad += [(module, node.lineno, a.name) for a in node.names if a.name.startswith("gpudml")
                        and any(part.startswith("_") for part in a.name.split("."))]
    assert not bad, bad
