"""`gpudml run MODEL.onnx`: run an ONNX model once through gpudml.onnx.InferenceSession and
print its outputs' shapes and a summary (random inputs where asked, their dynamic dimensions
from --dim NAME=SIZE); compare with onnxruntime's CPU provider, or print each operator's GPU
time."""

from __future__ import annotations

import numpy as np

from ..device import Device
from ..errors import InvalidArgumentError
from .session import TOLERANCE, InferenceSession


def parse_dims(items: list[str]) -> dict[str, int]:
    """{name: size} from --dim NAME=SIZE arguments (NAME a dynamic dimension's dim_param)."""
    dims: dict[str, int] = {}
    for item in items:
        name, sep, size = item.partition("=")
        if not sep or not name:
            raise InvalidArgumentError(f"gpudml run: --dim takes NAME=SIZE (a dynamic dimension's name and its size), "
                                       f"got {item!r}")
        try:
            value = int(size)
        except ValueError:
            value = 0
        if value < 1:
            raise InvalidArgumentError(f"gpudml run: --dim {name}: the size must be an integer of at least 1 "
                                       f"(DirectML sizes are), got {size!r}")
        if dims.get(name, value) != value:
            raise InvalidArgumentError(f"gpudml run: --dim {name} is given twice, as {dims[name]} and {value}")
        dims[name] = value
    return dims


def feeds_for(session: InferenceSession, inputs: list[str], random: bool, seed: int = 0,
              dims: dict[str, int] | None = None) -> tuple[dict, list[str]]:
    """({name: array}, notes) from NAME=FILE.npy arguments; with `random`, the inputs not given
    are random data of their dtype and shape, a dynamic dimension the size `dims` gives its
    name (--dim NAME=SIZE), else 1. The notes say which size each dynamic dimension of the
    random inputs got and why. A name of `dims` that no input's dimension has is an error."""
    dims = dict(dims or {})
    if dims and not random:
        raise InvalidArgumentError(f"gpudml run: --dim sets the dynamic dimensions of the --random inputs; add "
                                   f"--random (given: {', '.join(f'{k}={v}' for k, v in dims.items())})")
    named = {d for arg in session.get_inputs() for d in arg.shape if isinstance(d, str)}
    for name in dims:
        if name not in named:
            known = ", ".join(sorted(map(repr, named))) or "none: every dimension is fixed or unnamed"
            raise InvalidArgumentError(f"gpudml run: --dim {name}: the model's inputs have no dynamic dimension "
                                       f"named {name!r} (their named dynamic dimensions: {known})")
    feeds = {}
    for item in inputs:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise InvalidArgumentError(f"gpudml run: --input takes NAME=FILE.npy, got {item!r}")
        try:
            feeds[name] = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise InvalidArgumentError(f"gpudml run: --input {name}: cannot read {path!r} as a .npy file ({exc})") \
                from exc
    rng = np.random.default_rng(seed)
    notes: dict[str, str] = {}
    for arg in session.get_inputs():
        if arg.name in feeds:
            continue
        if not random:
            raise InvalidArgumentError(f"gpudml run: no value for input {arg.name!r} ({arg.type} {arg.shape}); give "
                                       f"--input {arg.name}=FILE.npy, or --random")
        if not arg.type.startswith("tensor("):
            raise InvalidArgumentError(f"gpudml run: input {arg.name!r} is a {arg.type}: --random and --input make "
                                       f"tensors only; run the model from Python (InferenceSession.run takes a list)")
        shape = []
        for axis, d in enumerate(arg.shape):
            if isinstance(d, int) and d > 0:
                shape.append(d)
            elif isinstance(d, str) and d in dims:
                shape.append(dims[d])
                notes[d] = f"{d}={dims[d]} (--dim)"
            else:
                shape.append(1)
                notes[d if isinstance(d, str) else f"{arg.name}[{axis}]"] = (
                    f"{d}=1 (not given: --dim {d}=SIZE sets it)" if isinstance(d, str) else
                    f"{arg.name}'s axis {axis}=1 (unnamed: always 1)")
        dtype = session.input_dtype(arg.name)
        if dtype == np.bool_:
            feeds[arg.name] = rng.random(shape) < 0.5
        elif dtype.kind == "f":
            feeds[arg.name] = rng.standard_normal(shape).astype(dtype)
        else:
            feeds[arg.name] = rng.integers(0, 8, shape).astype(dtype)
    return feeds, list(notes.values())


def _summary(a: np.ndarray) -> str:
    if a.size == 0 or a.dtype == np.bool_:
        return f"{int(np.count_nonzero(a))} true" if a.dtype == np.bool_ else "empty"
    f = a.astype(np.float64)
    return f"min {f.min():.6g}  max {f.max():.6g}  mean {f.mean():.6g}"


def _flat(names: list[str], outputs: list) -> tuple[list[str], list]:
    """The outputs with each sequence's items in its place, named `name[k]`."""
    flat_names, flat = [], []
    for name, value in zip(names, outputs):
        if isinstance(value, list):
            flat_names += [f"{name}[{k}]" for k in range(len(value))]
            flat += value
        else:
            flat_names.append(name)
            flat.append(value)
    return flat_names, flat


def cmd_run(args) -> int:
    dims = parse_dims(args.dim)
    device = Device(adapter=args.adapter)
    session = InferenceSession(args.model, device=device)
    feeds, notes = feeds_for(session, args.input, args.random, dims=dims)
    if notes:
        print(f"dynamic dimensions of the random inputs: {', '.join(notes)}")
    if args.profile:
        with device.profile() as prof:
            outputs = session.run(None, feeds)
    else:
        outputs = session.run(None, feeds)
    names = [o.name for o in session.get_outputs()]
    print(f"{args.model} on {device.adapter_name}: {session.dispatch_count} dispatches per run")
    names, outputs = _flat(names, outputs)
    for name, value in zip(names, outputs):
        if value is None:
            print(f"  {name}: an empty optional")
            continue
        print(f"  {name}: {value.dtype} {list(value.shape)}  {_summary(value)}")
    if args.profile:
        print(prof.summary())
    if not args.compare_onnxruntime:
        return 0
    try:
        import onnxruntime
    except ImportError:
        print("error: --compare-onnxruntime: onnxruntime is missing (pip install 'gpudml[bench]')")
        return 2
    ort = onnxruntime.InferenceSession(session.model.SerializeToString(), providers=["CPUExecutionProvider"])
    status = 0
    print(f"against onnxruntime {onnxruntime.__version__} (CPU), tolerance {TOLERANCE:g} of the largest "
          f"magnitude for floats, exact otherwise:")
    theirs = _flat([o.name for o in session.get_outputs()], ort.run(None, feeds))[1]
    if len(theirs) != len(outputs):
        print(f"  MISMATCH: {len(outputs)} tensors out (sequences' items counted), onnxruntime {len(theirs)}")
        return 1
    for name, got, want in zip(names, outputs, theirs):
        if got is None or want is None:
            print(f"  {name}: {'ok' if got is want else 'MISMATCH'} (an empty optional)")
            status = status or int(got is not want)
            continue
        if got.shape != want.shape or got.dtype != want.dtype:
            print(f"  {name}: MISMATCH {got.dtype}{list(got.shape)} vs onnxruntime {want.dtype}{list(want.shape)}")
            status = 1
            continue
        diff = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))) if got.size else 0.0
        bound = TOLERANCE * float(np.max(np.abs(want))) if want.dtype.kind == "f" and want.size else 0.0
        ok = diff <= bound
        status = status or (0 if ok else 1)
        print(f"  {name}: largest difference {diff:.3g} (bound {bound:.3g}) {'ok' if ok else 'BEYOND TOLERANCE'}")
    return status


__all__ = ["cmd_run", "feeds_for", "parse_dims"]
