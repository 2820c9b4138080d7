#!/usr/bin/env bash
# What a session with a lent GPU runs (README, "Figures on a GPU"): the device tool's machine,
# after ../shared/tools/device_kit.sh's prefix. Writes into $1 (the tool's $OUT):
#   lab.log      `gpudml info`, then `gpudml lab` of W1-W7, two more reductions and two scans
#                (every eligible strategy, GPU timestamps, GB/s against the copy kernel)
#   torch_anchor.{md,json}   the same workloads in PyTorch on CUDA (bench/torch_anchor.py)
#   bench.{md,json,png}      `gpudml bench`
#   tune.log     bench/gpu_tune.py: the GPU-class strategies' plan options side by side (Reduce,
#                data movement, scans)
#   autotune.log, tuning.json  `gpudml tune` (a fresh cache): what the autotuner picks for W1-W11
#                on this GPU, and every variant's time
#   large.{log,json}  bench/bench_large.py: the segmented path (2 and 8 segments) against one
#                binding on a 256 MiB tensor, GPU class
#   pytest.log   the operators' tests on this GPU's Vulkan adapter, GPU class (needs pytest,
#                hypothesis and pytest-xdist among the carried wheels; skipped without)
#   session.log  the parts that failed
set -uo pipefail
# Parts (the second argument, comma-separated; default all, in this order): lab, tune, torch,
# bench, large, pytest. The device tool runs a command for at most 10 minutes, and what is
# under $OUT comes back even when it is cut short: the parts that choose defaults come first,
# and `bench/gpu_session.sh $OUT lab,tune,torch` then `... $OUT bench,large,pytest` splits it.
out=${1:?usage: bench/gpu_session.sh OUT_DIR [PARTS]}
parts=",${2:-lab,tune,torch,bench,large,pytest},"
want() { [[ $parts == *",$1,"* ]]; }
mkdir -p "$out"
lab() { timeout 120 python3 -m gpudml lab "$@" --reps 20; }
if want lab; then {
    python3 -m gpudml info
    lab reduce --function sum --axes 1 --shape 4096,4096                                   # W1
    lab reduce --function sum --axes 0 --shape 4096,4096                                   # W2
    lab reduce --function argmax --axes 1 --shape 4096,4096                                # W3
    lab padding --mode reflection --shape 1,3,1024,1024 --start 0,0,16,16                  # W4
    lab padding --mode constant --shape 1,3,1024,1024 --start 0,0,16,16                    # W5
    lab slice1 --shape 1,3,2048,2048 --sizes 1,3,2048,2048 --strides 1,1,-2,2              # W6
    lab reverse_subsequences --shape 64,4096,64 --axis 1                                   # W7
    lab reduce --function sum --axes 0 --shape 16777216                                    # whole tensor
    lab reduce --function max --axes 1 --shape 262144,64                                   # short rows
    lab cumulative_summation --axis 1 --shape 4096,4096                                    # scans
    lab cumulative_summation --axis 0 --shape 4096,4096
} > "$out/lab.log" 2>&1; fi
if want tune; then
    timeout 180 python3 bench/gpu_tune.py > "$out/tune.log" 2>&1
    GPUDML_TUNING_CACHE="$out/tuning.json" timeout 120 python3 -m gpudml tune > "$out/autotune.log" 2>&1 \
        || echo "gpudml tune failed" >> "$out/session.log"
fi
if want torch; then
    python3 bench/torch_anchor.py --out "$out" > /dev/null 2>&1 || echo "torch anchor failed" >> "$out/session.log"
fi
if want bench; then
    timeout 240 python3 -m gpudml bench --out "$out" > /dev/null 2>&1 || echo "bench failed" >> "$out/session.log"
fi
want large && timeout 120 python3 bench/bench_large.py --class gpu --mib 256 --rounds 9 --json "$out/large.json" \
    > "$out/large.log" 2>&1
if want pytest && python3 -c "import pytest, hypothesis, xdist" 2>/dev/null; then
    GPUDML_ADAPTER_CLASS=gpu GPUDML_TEST_ADAPTERS=vulkan timeout 200 python3 -m pytest -q -p no:cacheprovider -n 8 \
        tests/test_reduce.py tests/test_argmax.py tests/test_argmin.py tests/test_slice1.py tests/test_padding.py \
        tests/test_reverse_subsequences.py tests/test_fuzz.py tests/test_webnn_reduce.py tests/test_gather.py \
        tests/test_tile.py tests/test_join.py tests/test_split.py tests/test_cumulative_summation.py \
        tests/test_cumulative_product.py tests/test_padding1.py tests/test_slice_v1.py > "$out/pytest.log" 2>&1
fi
tail -5 "$out/pytest.log" 2>/dev/null; cat "$out/large.log" "$out/session.log" 2>/dev/null
grep -E "^  [a-z]+ .* (yes|NO)" "$out/lab.log" 2>/dev/null | head -40
exit 0
