"""Large tensors: the segmented path (a tensor bound as several storage bindings) against
the unsegmented one, on tensors that fit either way, side by side in one run.

For each workload: one Device with the adapter's own limits and Devices whose binding
limit is forced below the tensor (`Device(max_binding_bytes=...)`: 2 and 8 segments), the
same description compiled on each, GPU time per call (device.profile(): timestamps where
the adapter has them) measured in interleaved rounds, the median of each, and the ratio
segmented / unsegmented (the issue's target: at most 1.1). Results are checked against
numpy first.

    python -m gpudml.bench.large [--adapter vulkan] [--class cpu|gpu] [--mib 64] [--rounds 7] [--json FILE]
    python -m gpudml.bench.large --real GIB    # slice, pad, reverse, reduce of a GIB-sized tensor vs numpy

`--real` is for adapters with room (a GPU): a tensor above the adapter's binding limit
(2 GiB on wgpu) and, from 4 GiB on, above its buffer limit, each result checked against
numpy, with wall-clock times of upload, each operator (Tensor in, Tensor out) and download.
"""

from __future__ import annotations

import argparse
import json
import statistics

import numpy as np

import gpudml as dml

WORKLOADS = {
    # name: (function of (x, device) -> result, numpy reference of x)
    "reduce sum, last axis": (lambda x, d: dml.reduce(x, "sum", [1], device=d), lambda x: x.sum(1, keepdims=True)),
    "reduce sum, first axis": (lambda x, d: dml.reduce(x, "sum", [0], device=d), lambda x: x.sum(0, keepdims=True)),
    "slice, strides -1,2": (lambda x, d: dml.slice(x, [0, 0], list(x.shape), [-1, 2], device=d),
                            lambda x: x[::-1, ::2]),
    "pad reflection 16": (lambda x, d: dml.pad(x, [16, 16], [16, 16], mode="reflection", device=d),
                          lambda x: np.pad(x, 16, mode="reflect")),
    "reverse subsequences": (lambda x, d: dml.reverse_subsequences(
        x, np.full([x.shape[0], 1], x.shape[1] // 2, np.uint32), axis=1, device=d),
        lambda x: np.concatenate([x[:, : x.shape[1] // 2][:, ::-1], x[:, x.shape[1] // 2:]], axis=1)),
}


def gpu_ms(device, fn, arg) -> float:
    device.synchronize()
    with device.profile() as prof:
        out = fn(arg, device)
        device.synchronize()
    del out
    return prof.gpu_ms


def real(gib: float, adapter, adapter_class, dtype: str = "float32") -> list[dict]:
    """Each workload once on a [rows, 4096] tensor of `gib` GiB, checked against numpy
    (int64: every bit; above 16 GiB its 2^31+ elements' word indices pass 32 bits)."""
    import time

    dev = dml.Device(adapter=adapter, adapter_class=adapter_class)
    rows_n = int(gib * (1 << 30)) // (np.dtype(dtype).itemsize * 4096)
    if dtype == "int64":  # every bit pattern's neighbourhood, cheaply: a wrapping multiplicative hash
        x = (np.arange(rows_n * 4096, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)).view(np.int64)
        x = x.reshape(rows_n, 4096)
    else:
        x = np.random.default_rng(1).random([rows_n, 4096], dtype=np.float32)
    print(f"# {dev.adapter_name}: {dtype} [{rows_n}, 4096] ({x.nbytes / 2**30:.2f} GiB); binding limit "
          f"{dev.caps.max_storage_binding_size}, buffer limit {dev.caps.max_buffer_size}")
    t0 = time.perf_counter()
    t = dev.tensor(x)
    dev.synchronize()
    parts = len(getattr(t.buffer, "parts", [t.buffer]))
    out = [{"workload": "upload", "s": round(time.perf_counter() - t0, 3), "buffers": parts}]
    print(out[0])
    for name, (fn, ref) in WORKLOADS.items():
        t0 = time.perf_counter()
        y = fn(t, dev)
        dev.synchronize()
        ran = time.perf_counter() - t0
        t0 = time.perf_counter()
        got = y.numpy()
        down = time.perf_counter() - t0
        del y
        want = ref(x)
        exact = "reduce" not in name or dtype == "int64"  # int64 sums wrap alike in numpy
        ok = bool(np.array_equal(got.reshape(want.shape), want)) if exact else \
            bool(np.allclose(got.reshape(want.shape), want, rtol=1e-4))
        del got, want
        row = {"workload": name, "run_s": round(ran, 3), "download_s": round(down, 3), "matches_numpy": ok}
        print(row)
        out.append(row)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adapter", default=None)
    parser.add_argument("--class", dest="adapter_class", default=None)
    parser.add_argument("--mib", type=int, default=64, help="tensor size in MiB (float32, [rows, 4096])")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", default=None)
    parser.add_argument("--real", type=float, default=None, help="GiB: one tensor that large, checked (see above)")
    parser.add_argument("--dtype", default="float32", choices=["float32", "int64"], help="--real's element type")
    args = parser.parse_args(argv)
    if args.real:
        rows = real(args.real, args.adapter, args.adapter_class, args.dtype)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(rows, f, indent=1)
        if not all(r.get("matches_numpy", True) for r in rows):
            raise SystemExit("a result differs from numpy")
        return

    rows_n = args.mib * (1 << 20) // (4 * 4096)
    x = np.random.default_rng(0).random([rows_n, 4096], dtype=np.float32)
    plain = dml.Device(adapter=args.adapter, adapter_class=args.adapter_class)
    devices = {"1 binding": plain}
    for segments in (2, 8):
        devices[f"{segments} segments"] = dml.Device(adapter=args.adapter, adapter_class=args.adapter_class,
                                                     max_binding_bytes=x.nbytes // segments)
    print(f"# {plain.adapter_name}, class {plain.adapter_class}: float32 [{rows_n}, 4096] ({x.nbytes >> 20} MiB)")
    table = []
    for name, (fn, ref) in WORKLOADS.items():
        t = plain.tensor(x)
        tensors = {k: (t if d is plain else d.tensor(x)) for k, d in devices.items()}
        want = ref(x)
        for k, d in devices.items():
            got = fn(tensors[k], d).numpy()
            if not np.allclose(got.reshape(want.shape), want, rtol=1e-4):
                raise SystemExit(f"{name} on {k}: result differs from numpy")
        samples = {k: [] for k in devices}
        for _ in range(args.rounds):  # interleaved: drift hits every variant alike
            for k, d in devices.items():
                samples[k].append(gpu_ms(d, fn, tensors[k]))
        med = {k: statistics.median(v) for k, v in samples.items()}
        row = {"workload": name, **{f"{k} ms": round(v, 4) for k, v in med.items()},
               **{f"{k} ratio": round(med[k] / med["1 binding"], 3) for k in devices if k != "1 binding"}}
        table.append(row)
        print(f"{name:24s} " + "  ".join(f"{k}: {v:8.3f} ms" for k, v in med.items()) + "  ratios "
              + ", ".join(f"{row[f'{k} ratio']:.3f}" for k in devices if k != "1 binding"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"adapter": plain.adapter_name, "adapter_class": plain.adapter_class,
                       "bytes": x.nbytes, "rows": table}, f, indent=1)


if __name__ == "__main__":
    main()
