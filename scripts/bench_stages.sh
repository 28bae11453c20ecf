#!/usr/bin/env bash
# Where the time of `stepgate steps` and `stepgate analyze` goes, stage by stage, at
# --threads 1 and at every core, against the sqlite3 CLI selecting the same rows, all in
# one run on the same machine.
#
#   scripts/bench_stages.sh [OUT_DIR]     (default target/bench-inputs; inputs made once by
#                                          scripts/make_nsys_bench_inputs.sh)
#   RUNS=5 scripts/bench_stages.sh        (triples per row, default 3; medians are printed)
#   SG=target/profiling/stepgate scripts/bench_stages.sh   (time another build)
#
# Per row and run: the sqlite3 select (scripts/bench_nsys.sh's reference), stepgate at
# --threads 1 and at --threads $(nproc), back to back, each with STEPGATE_PHASES=1 (each
# stage's end is a mark on stderr; a stage's time is the time since the mark before it).
# Printed: per stage the median seconds at 1 and N threads and the stage's speed-up; then
# the whole run's wall seconds, its ratio to the sqlite3 select (the median of the
# per-triple ratios: a triple shares the machine's load of its moment), peak RSS, and the
# serial fraction the two wall times imply (Karp-Flatt: (N/S - 1) / (N - 1) for speed-up
# S on N threads; 0 is perfect scaling, 1 none). In `analyze` the sweep runs beside the
# steps, so its marks interleave with theirs.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/bench-inputs}
command -v sqlite3 >/dev/null || { echo "needs the sqlite3 CLI (apt-get install sqlite3)" >&2; exit 4; }
tgt=${CARGO_TARGET_DIR:-target}
if [ -z "${SG:-}" ]; then
  scripts/make_nsys_bench_inputs.sh "$out" --release >/dev/null
  cargo build --release --bin stepgate >/dev/null 2>&1
fi
sg=${SG:-$tgt/release/stepgate}
runs=${RUNS:-3}
all=$(nproc)

# The rows stepgate reads, as scripts/bench_nsys.sh selects them.
ref_sql() {
  local f=$1
  local q="SELECT start,end,deviceId,streamId,correlationId,globalPid,demangledName,shortName,graphId FROM CUPTI_ACTIVITY_KIND_KERNEL;
SELECT start,end,eventClass,globalTid,correlationId,nameId FROM CUPTI_ACTIVITY_KIND_RUNTIME;
SELECT id,value FROM StringIds;"
  has() { sqlite3 "$f" "SELECT 1 FROM sqlite_master WHERE name='$1'" | grep -q 1; }
  has CUPTI_ACTIVITY_KIND_MEMCPY &&
    q="$q SELECT start,end,deviceId,streamId,correlationId,globalPid,copyKind,bytes FROM CUPTI_ACTIVITY_KIND_MEMCPY;"
  has CUPTI_ACTIVITY_KIND_MEMSET &&
    q="$q SELECT start,end,deviceId,streamId,correlationId,globalPid,bytes FROM CUPTI_ACTIVITY_KIND_MEMSET;"
  has NVTX_EVENTS && q="$q SELECT start,end,eventType,globalTid,text,textId,domainId FROM NVTX_EVENTS;"
  echo "$q"
}

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }

# One timed run: "wall_s peak_mib" on stdout, its phase marks in $2.
timed() {
  local phases=$1; shift
  local log; log=$(mktemp)
  STEPGATE_PHASES=1 /usr/bin/time -f '%e %M' -o "$log" "$@" >/dev/null 2>"$phases"
  awk '{printf "%s %.0f", $1, $2/1024}' "$log"; rm -f "$log"
}

# Stage times from a phase log: "name<TAB>seconds since the mark before" per line.
stages() {
  awk '/^phase/ {t=$2; name=""; for (i=6; i<=NF; i++) name = name (i>6 ? " " : "") $i;
       printf "%s\t%.4f\n", name, t - prev; prev = t}' "$1"
}

row() {
  local label=$1 file=$2; shift 2
  [ -f "$file" ] || { echo "$label: no $file (make it with scripts/make_nsys_bench_inputs.sh)"; return; }
  cat "$file" >/dev/null
  local dir; dir=$(mktemp -d)
  local refs=() ones=() alls=() r1=() rn=() peak1=0 peakn=0 ref_s mb s1 mb1 sn mbn
  for k in $(seq "$runs"); do
    read -r ref_s mb <<<"$(timed /dev/null sqlite3 "$file" "$(ref_sql "$file")")"
    read -r s1 mb1 <<<"$(timed "$dir/one.$k" "$sg" "$@" --threads 1 "$file")"
    read -r sn mbn <<<"$(timed "$dir/all.$k" "$sg" "$@" --threads "$all" "$file")"
    refs+=("$ref_s"); ones+=("$s1"); alls+=("$sn")
    r1+=("$(echo "$s1 / $ref_s" | bc -l)"); rn+=("$(echo "$sn / $ref_s" | bc -l)")
    [ "$mb1" -gt "$peak1" ] && peak1=$mb1
    [ "$mbn" -gt "$peakn" ] && peakn=$mbn
  done
  echo "== $label on $(basename "$file") ($runs runs; medians)"
  printf '  %-40s %9s %9s %8s\n' "stage (time since the mark before)" "t1 s" "t$all s" "speed-up"
  # Stage names in the order of the first --threads 1 run; a stage missing from a run
  # counts 0 there.
  stages "$dir/one.1" | cut -f1 | while IFS= read -r name; do
    local a b
    a=$(for k in $(seq "$runs"); do stages "$dir/one.$k" | awk -F'\t' -v n="$name" '$1==n {s+=$2} END {print s+0}'; done | median)
    b=$(for k in $(seq "$runs"); do stages "$dir/all.$k" | awk -F'\t' -v n="$name" '$1==n {s+=$2} END {print s+0}'; done | median)
    printf '  %-40s %9.3f %9.3f %8s\n' "$name" "$a" "$b" \
      "$(awk -v a="$a" -v b="$b" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "-"}')"
  done
  local m1 mn mref s f
  m1=$(printf '%s\n' "${ones[@]}" | median); mn=$(printf '%s\n' "${alls[@]}" | median)
  mref=$(printf '%s\n' "${refs[@]}" | median)
  s=$(echo "$m1 / $mn" | bc -l)
  f=$(awk -v s="$s" -v n="$all" 'BEGIN {if (n > 1) printf "%.2f", (n / s - 1) / (n - 1); else print "-"}')
  printf '  wall: sqlite3 select %.2f s | --threads 1 %.2f s (%s MiB), ratio %.2f | --threads %s %.2f s (%s MiB), ratio %.2f | speed-up %.2f, serial fraction %s\n' \
    "$mref" "$m1" "$peak1" "$(printf '%s\n' "${r1[@]}" | median)" "$all" "$mn" "$peakn" \
    "$(printf '%s\n' "${rn[@]}" | median)" "$s" "$f"
  rm -rf "$dir"
}

echo "machine: $all cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load average $(cut -d' ' -f1-3 /proc/loadavg)"
row "steps --format json" "$out/decode_10k_x400.sqlite" steps --format json
row "analyze --format json" "$out/bench_1m.sqlite" analyze --format json
