#!/usr/bin/env bash
# Benchmark: stepgate vs Holistic Trace Analysis on a ~1 GB Kineto trace, in one run.
#
# Builds the big trace by replicating a real fixture in time (scripts/replicate_kineto.py),
# gzips a copy, then measures wall time and peak RSS (/usr/bin/time -v) of:
#   1. stepgate on the uncompressed trace      (target: < 1 GB peak, >= 10x faster than 3)
#   2. stepgate on the gzipped trace           (no target: decompression sets the floor)
#   3. HTA: TraceAnalysis(trace_dir) + get_gpu_kernel_breakdown(), the same analysis in Python
# and, in the same run, the scaling rows: `gzip -dc` of the gzipped trace to /dev/null (the
# single-threaded floor of inflating it) beside stepgate on it at --threads 1 (inflate and
# parse on one thread) and at every core (inflated on a second thread while it is parsed),
# each as a ratio to gzip -dc (target: <= 1.0x), and the plain trace at --threads 1 and
# at every core (byte ranges on every thread), RUNS times each (default 1, medians).
#
# usage: scripts/bench_kineto.sh [WORKDIR]          (default WORKDIR: a new temp dir)
# env:   STEPGATE_CMD  command that loads a trace and prints its kernel breakdown
#                      (default: "target/release/stepgate analyze")
#        FIXTURE       trace to replicate (default: the vLLM B200 eager prefill fixture)
#        TARGET_BYTES  uncompressed size to build (default 1000000000)
#        RUNS          runs of each scaling row (default 1)
#        SKIP_HTA=1    leave out the HTA row (HolisticTraceAnalysis not installed)
# needs: cargo build --release; pip install HolisticTraceAnalysis psutil; GNU time.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-$(mktemp -d)}"
cmd="${STEPGATE_CMD:-${CARGO_TARGET_DIR:-$root/target}/release/stepgate analyze}"
fixture="${FIXTURE:-$root/tests/fixtures/kineto/vllm_b200_eager_prefill_rank0.json.gz}"
target="${TARGET_BYTES:-1000000000}"
mkdir -p "$work/plain"
big="$work/plain/rank0.pt.trace.json"

if [ ! -s "$big" ]; then
  python3 "$root/scripts/replicate_kineto.py" "$fixture" "$big" --target-bytes "$target"
fi
if [ ! -s "$work/rank0.pt.trace.json.gz" ]; then
  gzip -6 -c "$big" > "$work/rank0.pt.trace.json.gz"
fi

# measure LABEL CMD...: run once under GNU time, keep wall seconds and peak RSS.
measure() {
  local label="$1"; shift
  /usr/bin/time -v "$@" > "$work/$label.out" 2> "$work/$label.time"
  local wall rss
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$work/$label.time" |
    awk -F: '{ if (NF == 3) print $1*3600 + $2*60 + $3; else print $1*60 + $2 }')
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/$label.time")
  printf '%-22s %9.2f s %9.0f MiB\n' "$label" "$wall" "$((rss / 1024))" | tee -a "$work/summary.txt"
  last_wall=$wall
}

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }

: > "$work/summary.txt"
echo "trace: $(du -b "$big" | cut -f1) bytes plain, $(du -b "$work/rank0.pt.trace.json.gz" | cut -f1) bytes gzip ($work)" | tee -a "$work/summary.txt"
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)" | tee -a "$work/summary.txt"
printf '%-22s %11s %13s\n' "run" "wall" "peak RSS" | tee -a "$work/summary.txt"
# shellcheck disable=SC2086  # $cmd is a command line on purpose
measure stepgate_plain $cmd "$big"
# shellcheck disable=SC2086
measure stepgate_gzip $cmd "$work/rank0.pt.trace.json.gz"
# Scaling rows: gzip -dc, then stepgate at 1 thread and at every core, back to back.
gz="$work/rank0.pt.trace.json.gz"
all=$(nproc)
r1=(); rn=()
for _ in $(seq "${RUNS:-1}"); do
  measure gzip_dc sh -c "gzip -dc '$gz' >/dev/null"; g=$last_wall
  # shellcheck disable=SC2086
  measure stepgate_gzip_t1 $cmd --threads 1 "$gz"; r1+=("$(echo "$last_wall / $g" | bc -l)")
  # shellcheck disable=SC2086
  measure "stepgate_gzip_t$all" $cmd --threads "$all" "$gz"; rn+=("$(echo "$last_wall / $g" | bc -l)")
done
printf 'stepgate on .json.gz / gzip -dc: --threads 1 %.2fx, --threads %s %.2fx (%s runs, medians)\n' \
  "$(printf '%s\n' "${r1[@]}" | median)" "$all" "$(printf '%s\n' "${rn[@]}" | median)" "${RUNS:-1}" |
  tee -a "$work/summary.txt"
# The plain trace at 1 thread and at every core: from 2 threads its events are read in
# byte ranges, one per thread (src/source/kineto/chunked.rs).
p1=(); pn=()
for _ in $(seq "${RUNS:-1}"); do
  # shellcheck disable=SC2086
  measure stepgate_plain_t1 $cmd --threads 1 "$big"; p1+=("$last_wall")
  # shellcheck disable=SC2086
  measure "stepgate_plain_t$all" $cmd --threads "$all" "$big"; pn+=("$last_wall")
done
t1=$(printf '%s\n' "${p1[@]}" | median); tn=$(printf '%s\n' "${pn[@]}" | median)
printf 'stepgate on the plain .json: --threads 1 %.2f s, --threads %s %.2f s, speed-up %.2fx (%s runs, medians)\n' \
  "$t1" "$all" "$tn" "$(echo "$t1 / $tn" | bc -l)" "${RUNS:-1}" | tee -a "$work/summary.txt"
[ -n "${SKIP_HTA:-}" ] && { echo "outputs and GNU time reports: $work"; exit 0; }
measure hta_plain python3 -c "
from hta.trace_analysis import TraceAnalysis
a = TraceAnalysis(trace_dir='$work/plain')
kinds, kernels = a.get_gpu_kernel_breakdown(visualize=False)
print(kernels.head(10).to_string())
"
echo "outputs and GNU time reports: $work"
