"""`gpudml run MODEL.onnx`: run an ONNX model once through gpudml.onnx.InferenceSession and
print its outputs' shapes and a summary; compare with onnxruntime's CPU provider, or print
each operator's GPU time."""

from __future__ import annotations

import numpy as np

from ..device import Device
from ..errors import InvalidArgumentError
from .session import TOLERANCE, InferenceSession


def feeds_for(session: InferenceSession, inputs: list[str], random: bool, seed: int = 0) -> dict:
    """{name: array} from NAME=FILE.npy arguments; with `random`, the inputs not given are
    random data of their dtype and shape (a dynamic dimension is 1)."""
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
    for arg in session.get_inputs():
        if arg.name in feeds:
            continue
        if not random:
            raise InvalidArgumentError(f"gpudml run: no value for input {arg.name!r} ({arg.type} {arg.shape}); give "
                                       f"--input {arg.name}=FILE.npy, or --random")
        shape = [d if isinstance(d, int) and d > 0 else 1 for d in arg.shape]
        dtype = session.input_dtype(arg.name)
        if dtype == np.bool_:
            feeds[arg.name] = rng.random(shape) < 0.5
        elif dtype.kind == "f":
            feeds[arg.name] = rng.standard_normal(shape).astype(dtype)
        else:
            feeds[arg.name] = rng.integers(0, 8, shape).astype(dtype)
    return feeds


def _summary(a: np.ndarray) -> str:
    if a.size == 0 or a.dtype == np.bool_:
        return f"{int(np.count_nonzero(a))} true" if a.dtype == np.bool_ else "empty"
    f = a.astype(np.float64)
    return f"min {f.min():.6g}  max {f.max():.6g}  mean {f.mean():.6g}"


def cmd_run(args) -> int:
    device = Device(adapter=args.adapter)
    session = InferenceSession(args.model, device=device)
    feeds = feeds_for(session, args.input, args.random)
    if args.profile:
        with device.profile() as prof:
            outputs = session.run(None, feeds)
    else:
        outputs = session.run(None, feeds)
    names = [o.name for o in session.get_outputs()]
    print(f"{args.model} on {device.adapter_name}: {session.dispatch_count} dispatches per run")
    for name, value in zip(names, outputs):
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
    for name, got, want in zip(names, outputs, ort.run(None, feeds)):
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


__all__ = ["cmd_run", "feeds_for"]
