"""The anchor for GPU figures: `gpudml bench`'s workloads W1-W9 written the way a PyTorch
user would write them, timed on CUDA with CUDA events (median of --reps, after warm-up).

Run on a machine with PyTorch and a CUDA GPU (the device tool's H100):

    python -m gpudml.bench.torch_anchor --out /tmp/anchor   # writes torch_anchor.json and .md

Each row is one call's GPU time, data resident on the GPU, as gpudml's 'kernel ms' column
is (timestamps around the passes). W6 slices the rows it keeps and flips that view (one
copy of the output's size, as Slice1 does); W7 computes the source index and gathers (what
ReverseSubsequences does in one kernel); W9 is the 20-op chain on [16,16], one launch per op.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import statistics

import torch
import torch.nn.functional as tf


def _time(fn, reps: int) -> float:
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end))
    return statistics.median(samples)


def _chain(y, lengths, shape):
    k = torch.arange(shape[-1], device=y.device).view(1, -1)
    for _ in range(5):
        y = y.flip(-1).contiguous()
        y = tf.pad(y[None], (1, 1, 1, 1), mode="replicate")[0]
        y = y[1:-1, 1:-1].contiguous()
        src = torch.where(k < lengths, lengths - 1 - k, k)
        y = torch.gather(y, 1, src)
    return y


def workloads(dev):
    g = torch.Generator(device="cpu").manual_seed(0)
    big = torch.rand([4096, 4096], generator=g).to(dev)
    img = torch.rand([1, 3, 1024, 1024], generator=g).to(dev)
    img2 = torch.rand([1, 3, 2048, 2048], generator=g).to(dev)
    seq = torch.rand([64, 4096, 64], generator=g).to(dev)
    lengths = torch.randint(0, 4097, [64, 1, 64], generator=g).to(dev)
    k = torch.arange(4096, device=dev).view(1, -1, 1)
    tiny = torch.rand([8, 8], generator=g).to(dev)
    small = torch.rand([16, 16], generator=g).to(dev)
    small_len = torch.randint(0, 17, [16, 1], generator=g).to(dev)
    nbytes = 4 * big.numel()
    return {
        "W1": ("SUM last axis [4096,4096]", lambda: big.sum(dim=1, keepdim=True), nbytes),
        "W2": ("SUM axis 0 [4096,4096]", lambda: big.sum(dim=0, keepdim=True), nbytes),
        "W3": ("ARGMAX last axis [4096,4096]", lambda: big.argmax(dim=1, keepdim=True), nbytes),
        "W4": ("pad REFLECTION [1,3,1024,1024] +16",
               lambda: tf.pad(img, (16, 16, 16, 16), mode="reflect"), 4 * (img.numel() + 3 * 1056 * 1056)),
        "W5": ("pad CONSTANT [1,3,1024,1024] +16",
               lambda: tf.pad(img, (16, 16, 16, 16), mode="constant"), 4 * (img.numel() + 3 * 1056 * 1056)),
        "W6": ("slice [1,1,-2,2] of [1,3,2048,2048]",
               lambda: img2[:, :, 1::2, ::2].flip(2).contiguous(), 2 * 4 * 3 * 1024 * 1024),
        "W7": ("reverse_subsequences axis 1 [64,4096,64]",
               lambda: torch.gather(seq, 1, torch.where(k < lengths, lengths - 1 - k, k).expand_as(seq)),
               2 * 4 * seq.numel()),
        "W8": ("SUM last axis [8,8]", lambda: tiny.sum(dim=1, keepdim=True), 4 * 64),
        "W9": ("chain of 20 ops [16,16]", lambda: _chain(small, small_len, [16, 16]), 2 * 4 * 256),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=pathlib.Path, required=True)
    ap.add_argument("--reps", type=int, default=50)
    args = ap.parse_args(argv)
    dev = torch.device("cuda")
    rows = []
    copy_src = torch.rand([64 << 18], device=dev)  # 64 MiB, like gpudml's copy kernel yardstick
    copy_dst = torch.empty_like(copy_src)
    copy_ms = _time(lambda: copy_dst.copy_(copy_src), args.reps)
    copy_gbps = 2 * copy_src.numel() * 4 / copy_ms / 1e6
    for wid, (title, fn, nbytes) in workloads(dev).items():
        ms = _time(fn, args.reps)
        rows.append({"id": wid, "title": title, "torch_ms": ms, "gbps": nbytes / ms / 1e6,
                     "of_copy": nbytes / ms / 1e6 / copy_gbps})
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "copy_ms_64MiB": copy_ms, "copy_gbps": copy_gbps, "rows": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "torch_anchor.json").write_text(json.dumps(result, indent=1))
    lines = [f"# PyTorch anchor on {result['device']} (torch {torch.__version__})", "",
             f"copy 64 MiB: {copy_ms:.4f} ms = {copy_gbps:.0f} GB/s (read + write)", "",
             "| id | workload | torch ms | GB/s | of copy |", "|---|---|---|---|---|"]
    lines += [f"| {r['id']} | {r['title']} | {r['torch_ms']:.4f} | {r['gbps']:.0f} | {r['of_copy']:.2f} |"
              for r in rows]
    (args.out / "torch_anchor.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
