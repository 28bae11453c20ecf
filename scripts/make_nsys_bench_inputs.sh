#!/usr/bin/env bash
# Make the nsys benchmark inputs (for `analyze` and `steps`) under OUT_DIR:
#   bench_1m.sqlite / bench_4m.sqlite  the real fastvideo_h100 export replicated in time to
#                                      >= 1M / 4M kernel rows (shifted timestamps, correlation
#                                      ids renumbered densely and offset per copy, so they stay
#                                      within CUPTI's 32 bits; same DDL, its real mix of ~1.7
#                                      runtime and ~4.9 NVTX rows per kernel). Inputs made by
#                                      an older replicator (ids past 2^31) read those ids as
#                                      unknown: delete them to remake.
#   decode_10k_x400.sqlite             10,000 node-mode CUDA-graph decode steps x 400 kernels
#                                      (+ decode_10k_x400.expected.json, the per-step truth)
# Usage: scripts/make_nsys_bench_inputs.sh [OUT_DIR] [CARGO_PROFILE_FLAG]
#   e.g. scripts/make_nsys_bench_inputs.sh /tmp/stepgate-bench --release
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/bench-inputs}
flag=${2:-}
mkdir -p "$out"
cargo build ${flag} --features synth --bin stepgate-synth
dir=debug; [ "$flag" = "--release" ] && dir=release
synth=${CARGO_TARGET_DIR:-target}/$dir/stepgate-synth
fixture=tests/fixtures/nsys/fastvideo_h100_2gpu_nsys2026.2.sqlite
[ -f "$out/bench_1m.sqlite" ] || "$synth" replicate "$fixture" --kernels 1000000 -o "$out/bench_1m.sqlite"
[ -f "$out/bench_4m.sqlite" ] || "$synth" replicate "$fixture" --kernels 4000000 -o "$out/bench_4m.sqlite"
[ -f "$out/decode_10k_x400.sqlite" ] || "$synth" workload --steps 10000 --kernels 400 \
  --mode node -o "$out/decode_10k_x400.sqlite" --expected "$out/decode_10k_x400.expected.json"
ls -la "$out"
