"""Autotuning (`Device(autotune=True)` or GPUDML_AUTOTUNE=1; off unless asked).

The first time a Device compiles a description of a given *kind*, without naming a
strategy, its *variants* are timed on the GPU (sample inputs from the operator's spec,
warm-up, then repetitions taken in turn, GPU timestamps or the wall clock, medians) and the
fastest is kept (the default, unless another beats it by more than MARGIN); later
descriptions of the same kind use that choice without timing. The variants
(`candidates`): each strategy that can run the description with its own plan, and with
each set of plan options its planner offers for it (Planner.variants: the knobs whose best
value depends on the adapter, such as a reduction's lanes and chunks), less those that
cannot plan the description and those that compile to the same kernels as an earlier one.
Each variant's warm-up run is checked against the operator's reference first (up to
CHECK_BYTES of tensors): one that the driver rejects or that computes a wrong result is
never chosen (a warning names it).
A kind is what the operator would compile to by default (its kernels' templates and
compile-time parameters: function or mode, element widths, merged layout, ...), the
strategies that could run it, and a size bucket (log2 of the largest tensor).

Choices persist in a JSON file (GPUDML_TUNING_CACHE; default tuning.json in gpudml's cache
folder, gpudml/cache.py) in sections keyed by adapter, driver, gpudml version and template
digest: another adapter's or version's section is never used, a file that cannot be read
is ignored with one warning (and replaced at the next save), a choice naming a strategy
the description cannot use is tuned again, and a description of the kind that cannot take
the choice's options gets its strategy's own plan (Device.compile_operator).
Two threads never tune the same kind twice: the second waits for the first's choice.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import statistics
import threading
import warnings
from pathlib import Path

import numpy as np

from .. import cache, compiler
from ..compare import first_wrong
from ..errors import DMLError, InvalidArgumentError, UnsupportedError
from ..ops.spec import element_bytes
from ..runtime.tensor import logical_from_raw
from ..version import __version__

FORMAT = 1
#: Timed repetitions per variant (after one warm-up run each, checked against the reference).
REPS = 5
#: Another strategy replaces the default only when it is faster by more than this
#: fraction: one tuning's medians drift a few percent on a busy or software adapter, and a
#: choice that flips with the noise gains nothing and costs reproducibility.
MARGIN = 0.03
#: Variants are checked against the reference where the description's tensors hold at most
#: this many bytes: above, the reference (numpy, with index arrays for data movement) and a
#: readback per variant would take several times that in host memory, so they are only
#: compiled and timed.
CHECK_BYTES = 1 << 30
_OFF = ("", "0", "off", "false", "no")


def enabled(flag) -> bool:
    """The Device's `autotune` argument, else GPUDML_AUTOTUNE."""
    if flag is not None:
        return bool(flag)
    return os.environ.get("GPUDML_AUTOTUNE", "").strip().lower() not in _OFF


def cache_file() -> Path | None:
    """GPUDML_TUNING_CACHE ("off": no file), else tuning.json in gpudml's cache folder."""
    value = os.environ.get("GPUDML_TUNING_CACHE")
    if value is not None:
        return None if value.strip().lower() in _OFF else Path(value)
    folder = cache.folder()
    return None if folder is None else folder / "tuning.json"


def kind_of(program) -> tuple[str, str]:
    """(key, readable description) of a description's kind, from its default Program."""
    sizes = [d.element_count for _, d in program.inputs + program.outputs]
    bucket = int(math.log2(max(sizes))) if sizes else 0
    kernels = [f"{k.template}{sorted(k.params.items())}" for k in program.kernels]
    text = f"{program.operator} [{', '.join(program.strategies)}] 2^{bucket} elements: {'; '.join(kernels)}"
    return hashlib.sha256(text.encode()).hexdigest()[:24], text


class TuningCache:
    """The choices of one identity (adapter, driver, gpudml version, template digest) in the
    file, read once and written back as choices are made."""

    def __init__(self, path: Path | None, identity: dict):
        self.path = path
        self.identity = identity
        self.section = "|".join(str(identity[k]) for k in ("adapter", "driver", "gpudml", "templates"))
        self.choices: dict[str, dict] = {}
        self.loaded = False

    def _read(self) -> dict:
        if self.path is None or not self.path.exists():
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("sections"), dict):
                raise ValueError("not a gpudml tuning cache of format 1")
            return data
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            _warn_once(f"gpudml: ignoring the tuning cache {self.path} ({exc}); it is replaced at the next save")
            return {}

    def load(self) -> None:
        if self.loaded:
            return
        self.loaded = True
        sections = self._read().get("sections", {})
        mine = sections.get(self.section)
        if isinstance(mine, dict) and isinstance(mine.get("choices"), dict):
            self.choices = {k: v for k, v in mine["choices"].items() if isinstance(v, dict)}
        elif any(s.split("|")[:2] == self.section.split("|")[:2] for s in sections):
            _warn_once(f"gpudml: the tuning cache {self.path} holds choices of this adapter for another gpudml "
                       f"version or other templates; they are not used")

    def get(self, key: str) -> dict | None:
        self.load()
        return self.choices.get(key)

    def put(self, key: str, choice: dict) -> None:
        self.load()
        self.choices[key] = choice
        if self.path is None:
            return
        data = self._read() or {"format": FORMAT, "sections": {}}
        data["sections"][self.section] = {**self.identity, "choices": self.choices}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError as exc:
            _warn_once(f"gpudml: cannot write the tuning cache {self.path} ({exc}); choices last this process only")


_WARNED: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _WARNED:
        _WARNED.add(message)
        warnings.warn(message, RuntimeWarning, stacklevel=3)


_TUNERS: dict[int, Tuner] = {}  # by id of the context (each Tuner holds its context: ids stay unique)
_TUNERS_LOCK = threading.Lock()


def tuner_for(ctx) -> Tuner:
    """The Tuner of the context (adapter) `ctx`, made on first use."""
    with _TUNERS_LOCK:
        tuner = _TUNERS.get(id(ctx))
        if tuner is None:
            tuner = _TUNERS[id(ctx)] = Tuner(ctx)
        return tuner


class Tuner:
    """The tuning of one context (adapter): its caches by identity, the kinds in progress."""

    def __init__(self, ctx):
        self.ctx = ctx
        self._lock = threading.Lock()
        self._caches: dict[str, TuningCache] = {}
        self._running: dict[tuple, threading.Event] = {}
        #: The choices this process used, by cache section and kind: {"section|key": (choice,
        #: timed here?)}, in order.
        self.used: dict[str, tuple[dict, bool]] = {}

    def cache_for(self, program) -> TuningCache:
        identity = {"adapter": self.ctx.caps.name, "driver": self.ctx.driver,
                    "gpudml": __version__, "templates": program.templates}
        path = cache_file()
        name = f"{path}|{identity}"
        with self._lock:
            if name not in self._caches:
                self._caches[name] = TuningCache(path, identity)
            return self._caches[name]

    def choose(self, device, operator, program) -> tuple[str, dict]:
        """(strategy, plan options) for `operator` (whose default Program is `program`): the
        cached choice, or the fastest variant after timing them."""
        if len(program.strategies) < 2 and not operator.spec.planner.variants(operator.desc, device.caps,
                                                                                program.strategy):
            return program.strategy, {}
        key, text = kind_of(program)
        tuning = self.cache_for(program)
        while True:
            with self._lock:
                choice = tuning.get(key)
                if choice is not None and choice.get("strategy") in program.strategies:
                    self.used.setdefault(f"{tuning.section}|{key}", (choice, False))
                    return choice["strategy"], _options(choice)
                event = self._running.get((tuning.section, key))
                if event is None:
                    event = self._running[(tuning.section, key)] = threading.Event()
                    break
            event.wait()  # another thread is timing this kind: take its choice
        try:
            found = candidates(operator, device.caps, program, device.template_path)
            if len(found) < 2:
                return program.strategy, {}
            times, failed = _time_variants(device, operator, found)
            for name, why in failed.items():
                _warn_once(f"gpudml: autotuning {text.split(' ', 1)[0]}: the variant {name} failed on "
                           f"{device.adapter_name} ({why}); it is never chosen (please report it)")
            best = pick(times, program.strategy) if times else program.strategy
            strategy, options = found[best]
            choice = {"strategy": strategy, "options": options, "variant": best, "default": program.strategy,
                      "ms": times, "failed": failed, "kind": text}
            with self._lock:
                tuning.put(key, choice)
                self.used[f"{tuning.section}|{key}"] = (choice, True)
            return strategy, options
        finally:
            with self._lock:
                self._running.pop((tuning.section, key)).set()


def variant_name(strategy: str, options: dict) -> str:
    """A variant's name: the strategy, and its plan options where it has any ("workgroup
    lanes=64")."""
    return " ".join([strategy] + [f"{k}={v}" for k, v in options.items()])


def _options(choice: dict) -> dict:
    """A cached choice's plan options ({} in a choice of strategy only, as earlier versions wrote)."""
    options = choice.get("options")
    return dict(options) if isinstance(options, dict) else {}


def candidates(operator, caps, program, template_path=None) -> dict[str, tuple[str, dict]]:
    """The variants worth timing for `operator` (default Program `program`), by name
    (variant_name), the default first: each eligible strategy with its own plan, then with
    each option set of its planner's `variants`; an option set the description cannot take is
    left out, and so is a variant that compiles to the same kernels (sources, grids,
    uniforms, scratch) as an earlier one."""
    operation, desc = operator.spec, operator.desc
    found: dict[str, tuple[str, dict]] = {}
    seen = set()
    for strategy in program.strategies:
        for options in ({}, *operation.planner.variants(desc, caps, strategy)):
            try:
                compiled = compiler.compile(desc, caps, strategy=strategy, options=options,
                                            template_path=template_path, operation=operation)
            except (InvalidArgumentError, UnsupportedError):
                continue
            kernels = (strategy, compiled.scratch_bytes,
                       tuple((k.source, k.buffers, k.workgroups, k.uniform_bytes) for k in compiled.kernels))
            if kernels not in seen:
                seen.add(kernels)
                found[variant_name(strategy, options)] = (strategy, dict(options))
    return found


def pick(times: dict[str, float], default: str) -> str:
    """The fastest variant, unless the default is within MARGIN of it (or was not timed:
    it computed a wrong result)."""
    best = min(times, key=times.get)
    return default if default in times and times[default] <= times[best] * (1 + MARGIN) else best


def _time_variants(device, operator, variants: dict[str, tuple[str, dict]]
                   ) -> tuple[dict[str, float], dict[str, str]]:
    """(median ms of each variant that works, {name: what went wrong} of the others): each
    variant (name: (strategy, options); the default first) is compiled (a shader the driver
    rejects fails it), runs once on sample inputs and is checked against the operator's
    reference within its documented precision (a fused graph kernel against its nodes'
    references composed: fusion.FusedSpec; above CHECK_BYTES, not checked),
    then those that work are timed, repetitions taken in turn. The default's own failure is
    raised."""
    desc, spec = operator.desc, operator.spec
    compiled, failed = {}, {}
    for n, (name, (strategy, options)) in enumerate(variants.items()):
        try:
            compiled[name] = device.compile_operator(operator, strategy, options=options or None)
        except DMLError as exc:
            if n == 0:
                raise
            failed[name] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
    first = next(iter(compiled.values()))
    raws = spec.sample_buffers(desc, np.random.default_rng(0))
    inputs = [device.tensor(raw, desc=d) for raw, (_, d) in zip(raws, first.inputs)]
    outputs = [device.empty(d) for _, d in first.outputs]
    expected, tolerance = None, None
    check = sum(element_bytes(d) for _, d in first.inputs + first.outputs) <= CHECK_BYTES
    if check:
        logical = [logical_from_raw(raw, d) for raw, (_, d) in zip(raws, first.inputs)]
        expected, tolerance = spec.expected_outputs(desc, logical)
    for name, c in compiled.items():  # the warm-up run, checked
        c.execute(inputs, outputs=outputs)
        if not check:
            continue
        got = [logical_from_raw(t.raw(), d) for t, (_, d) in zip(outputs, first.outputs)]
        wrong = first_wrong(got, expected, tolerance)
        if wrong is not None:
            failed[name] = "wrong result: " + wrong
    right = {name: c for name, c in compiled.items() if name not in failed}
    samples: dict[str, list[float]] = {name: [] for name in right}
    for _ in range(REPS):
        for name, c in right.items():
            with device.profile() as prof:
                c.execute(inputs, outputs=outputs)
            samples[name].append(prof.gpu_ms)
    return {s: statistics.median(v) for s, v in samples.items()}, failed
