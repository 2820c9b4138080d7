"""The benchmarks: `gpudml bench` (suite.py: the workloads of workloads.py against the
adapter's own ceilings, anchors.py, timed with GPU timestamps, timer.py; the results'
table and chart, report.py), and the scripts of GPU sessions and experiments, each run as
`python -m gpudml.bench.NAME` (docs/performance.md). Results live in the repository's
bench/results/."""
