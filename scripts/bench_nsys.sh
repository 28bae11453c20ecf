#!/usr/bin/env bash
# Benchmark `stepgate analyze` and `stepgate steps` on large nsys exports against the
# sqlite3 CLI printing the rows they read, measured in the same run on the same machine.
#
#   scripts/bench_nsys.sh [OUT_DIR]        (default target/bench-inputs)
#   RUNS=3 scripts/bench_nsys.sh ...       (pairs per row; medians are printed)
#   SG=old/stepgate scripts/bench_nsys.sh  (time another build instead of this one)
#   ROWS='class attribution' scripts/bench_nsys.sh  (only the rows whose label contains it)
#   ROWS=threads scripts/bench_nsys.sh     (the scaling rows: --threads 1 and all cores)
#   (builds go to $CARGO_TARGET_DIR when it is set, else target/)
#
# Inputs (made once by scripts/make_nsys_bench_inputs.sh, release build):
#   bench_1m / bench_4m   the real fastvideo_h100 export replicated in time to 1M / 4M kernels
#                         (~1.7 runtime and ~4.9 NVTX rows per kernel, the real mix)
#   decode_10k_x400       10,000 node-mode CUDA-graph decode steps x 400 kernels (4M kernels)
#   decode_200k_x10       200,000 decode steps x 10 kernels (made here): a step-heavy report
# Prints, per row, the median wall seconds of RUNS (default 3) sqlite3/stepgate pairs run
# back to back, stepgate's largest peak RSS, and the median of the per-pair ratios (each
# pair shares the machine's load of the moment, so the ratio is the stable number).
# The export rows pair `export` with `steps --format json` on the same input instead: what
# writing the Parquet dataset costs over finding the steps (target: within 1.5x in time and
# peak memory).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/bench-inputs}
command -v sqlite3 >/dev/null || { echo "needs the sqlite3 CLI (apt-get install sqlite3)" >&2; exit 4; }
scripts/make_nsys_bench_inputs.sh "$out" --release >/dev/null
tgt=${CARGO_TARGET_DIR:-target}
[ -f "$out/decode_200k_x10.sqlite" ] || "$tgt"/release/stepgate-synth workload --steps 200000 \
  --kernels 10 --mode node -o "$out/decode_200k_x10.sqlite" >/dev/null
# SG=/path/to/stepgate compares another build (e.g. an older release) on the same inputs.
sg=${SG:-$tgt/release/stepgate}
[ -n "${SG:-}" ] || cargo build --release --bin stepgate >/dev/null 2>&1

# The columns stepgate reads, printed by the sqlite3 CLI to /dev/null.
ref_sql() {
  local f=$1 nvtx=$2
  local q="SELECT start,end,deviceId,streamId,correlationId,globalPid,demangledName,shortName,graphId FROM CUPTI_ACTIVITY_KIND_KERNEL;
SELECT start,end,eventClass,globalTid,correlationId,nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME;
SELECT id,value FROM StringIds;"
  has() { sqlite3 "$f" "SELECT 1 FROM sqlite_master WHERE name='$1'" | grep -q 1; }
  if has CUPTI_ACTIVITY_KIND_MEMCPY; then
    q="$q SELECT start,end,deviceId,streamId,correlationId,globalPid,copyKind,bytes FROM CUPTI_ACTIVITY_KIND_MEMCPY;"
  fi
  if has CUPTI_ACTIVITY_KIND_MEMSET; then
    q="$q SELECT start,end,deviceId,streamId,correlationId,globalPid,bytes FROM CUPTI_ACTIVITY_KIND_MEMSET;"
  fi
  if [ "$nvtx" = 1 ]; then
    q="$q SELECT start,end,eventType,globalTid,text,textId,domainId FROM NVTX_EVENTS;"
  fi
  echo "$q"
}

# wall seconds and max RSS (MiB) of a command, its stdout discarded.
measure() {
  local log; log=$(mktemp)
  /usr/bin/time -f '%e %M' -o "$log" "$@" >/dev/null
  awk '{printf "%s %.0f", $1, $2/1024}' "$log"; rm -f "$log"
}

runs=${RUNS:-3}
only=${ROWS:-}
# Whether the row labelled $1 is selected by ROWS (every row when ROWS is unset).
wanted() { [ -z "$only" ] || [[ "$1" == *"$only"* ]]; }

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }

row() {
  local label=$1 file=$2 nvtx=$3; shift 3
  wanted "$label" || return 0
  # Warm the page cache so neither side pays for the first read from disk.
  cat "$file" >/dev/null
  local refs=() sgs=() ratios=() peak=0 ref_s ref_mb sg_s sg_mb
  for _ in $(seq "$runs"); do
    read -r ref_s ref_mb <<<"$(measure sqlite3 "$file" "$(ref_sql "$file" "$nvtx")")"
    read -r sg_s sg_mb <<<"$(measure "$sg" "$@" "$file")"
    refs+=("$ref_s"); sgs+=("$sg_s"); ratios+=("$(echo "$sg_s / $ref_s" | bc -l)")
    [ "$sg_mb" -gt "$peak" ] && peak=$sg_mb
  done
  printf '%-34s %-24s sqlite3 %6.2f s | stepgate %6.2f s, peak %5s MiB | ratio %.2f (%s pairs)\n' \
    "$label" "$(basename "$file")" "$(printf '%s\n' "${refs[@]}" | median)" \
    "$(printf '%s\n' "${sgs[@]}" | median)" "$peak" "$(printf '%s\n' "${ratios[@]}" | median)" "$runs"
}

# Same command with and without the per-class attribution (--model prices every step, splits
# it per kernel class, maps the median step's layers): the median of the per-pair ratios
# with / without, each pair run back to back.
row_ab() {
  local label=$1 file=$2; shift 2
  wanted "$label" || return 0
  cat "$file" >/dev/null
  local offs=() ons=() ratios=() peak=0 off_s on_s mb
  for _ in $(seq "$runs"); do
    read -r off_s mb <<<"$(measure "$sg" steps --format json "$file")"
    read -r on_s mb <<<"$(measure "$sg" steps --format json "$@" "$file")"
    offs+=("$off_s"); ons+=("$on_s"); ratios+=("$(echo "$on_s / $off_s" | bc -l)")
    [ "$mb" -gt "$peak" ] && peak=$mb
  done
  printf '%-34s %-24s without %6.2f s | with %6.2f s, peak %5s MiB | ratio %.2f (%s pairs)\n' \
    "$label" "$(basename "$file")" "$(printf '%s\n' "${offs[@]}" | median)" \
    "$(printf '%s\n' "${ons[@]}" | median)" "$peak" "$(printf '%s\n' "${ratios[@]}" | median)" "$runs"
}

# Scaling: per pair, the sqlite3 dump, stepgate at --threads 1 and at every core this
# process may use (nproc reads the same affinity mask as stepgate's default), back to
# back. Prints both ratios to the dump and the speed-up per added core, (t1 / tN - 1) /
# (N - 1): 1.00 is perfect scaling, 0 none.
row_threads() {
  local label=$1 file=$2 nvtx=$3; shift 3
  local all; all=$(nproc)
  wanted "$label --threads" || return 0
  cat "$file" >/dev/null
  local refs=() ones=() alls=() r1=() rn=() per=() peak1=0 peakn=0 ref_s mb s1 mb1 sn mbn
  for _ in $(seq "$runs"); do
    read -r ref_s mb <<<"$(measure sqlite3 "$file" "$(ref_sql "$file" "$nvtx")")"
    read -r s1 mb1 <<<"$(measure "$sg" "$@" --threads 1 "$file")"
    read -r sn mbn <<<"$(measure "$sg" "$@" --threads "$all" "$file")"
    refs+=("$ref_s"); ones+=("$s1"); alls+=("$sn")
    r1+=("$(echo "$s1 / $ref_s" | bc -l)"); rn+=("$(echo "$sn / $ref_s" | bc -l)")
    if [ "$all" -gt 1 ]; then per+=("$(echo "($s1 / $sn - 1) / ($all - 1)" | bc -l)"); else per+=(0); fi
    [ "$mb1" -gt "$peak1" ] && peak1=$mb1
    [ "$mbn" -gt "$peakn" ] && peakn=$mbn
  done
  printf '%-34s %-24s sqlite3 %6.2f s | --threads 1 %6.2f s (%5s MiB), ratio %.2f | --threads %s %6.2f s (%5s MiB), ratio %.2f | speed-up per added core %.2f (%s runs)\n' \
    "$label --threads 1/$all" "$(basename "$file")" "$(printf '%s\n' "${refs[@]}" | median)" \
    "$(printf '%s\n' "${ones[@]}" | median)" "$peak1" "$(printf '%s\n' "${r1[@]}" | median)" \
    "$all" "$(printf '%s\n' "${alls[@]}" | median)" "$peakn" "$(printf '%s\n' "${rn[@]}" | median)" \
    "$(printf '%s\n' "${per[@]}" | median)" "$runs"
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
row "analyze --format json" "$out/bench_1m.sqlite" 1 analyze --format json
row "analyze --format json" "$out/bench_4m.sqlite" 1 analyze --format json
row "analyze --no-steps (kernels only)" "$out/bench_4m.sqlite" 0 analyze --no-steps --format json
row "steps --format json" "$out/decode_10k_x400.sqlite" 1 steps --format json
row_ab "steps: class attribution on/off" "$out/decode_10k_x400.sqlite" --model llama-3-8b
row "steps --format json" "$out/bench_4m.sqlite" 1 steps --format json
row_threads "analyze" "$out/bench_1m.sqlite" 1 analyze --format json
row_threads "steps" "$out/decode_10k_x400.sqlite" 1 steps --format json

# export vs steps on one input, back to back per pair (each export into a fresh dataset).
export_row() {
  local file=$1 ds steps_s=() export_s=() time_r=() mem_r=() s_s s_mb e_s e_mb s_peak=0 e_peak=0
  wanted "export vs steps --format json" || return 0
  ds=$(mktemp -d)
  cat "$file" >/dev/null
  for _ in $(seq "$runs"); do
    read -r s_s s_mb <<<"$(measure "$sg" steps "$file" --format json)"
    rm -rf "$ds/d"
    read -r e_s e_mb <<<"$(measure "$sg" export "$file" -o "$ds/d")"
    steps_s+=("$s_s"); export_s+=("$e_s")
    time_r+=("$(echo "$e_s / $s_s" | bc -l)"); mem_r+=("$(echo "$e_mb / $s_mb" | bc -l)")
    [ "$s_mb" -gt "$s_peak" ] && s_peak=$s_mb
    [ "$e_mb" -gt "$e_peak" ] && e_peak=$e_mb
  done
  rm -rf "$ds"
  printf '%-34s %-24s steps %6.2f s, peak %5s MiB | export %6.2f s, peak %5s MiB | export/steps time %.2f, memory %.2f (%s pairs)\n' \
    "export vs steps --format json" "$(basename "$file")" "$(printf '%s\n' "${steps_s[@]}" | median)" \
    "$s_peak" "$(printf '%s\n' "${export_s[@]}" | median)" "$e_peak" \
    "$(printf '%s\n' "${time_r[@]}" | median)" "$(printf '%s\n' "${mem_r[@]}" | median)" "$runs"
}

export_row "$out/decode_10k_x400.sqlite"
export_row "$out/decode_200k_x10.sqlite"
