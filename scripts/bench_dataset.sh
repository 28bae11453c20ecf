#!/usr/bin/env bash
# Benchmark rows for the run history on object storage: `export` (one run),
# `gate --history --where label.branch=main --last 20` and the same gate when no run matches
# (`--where label.branch=feature`) against N runs, on a local S3 server (moto, 127.0.0.1
# only, explicit test keys and endpoint) beside the same on a local directory.
#
# Usage: scripts/bench_dataset.sh [N]         (N runs in each history; default 100)
# Env:   STEPGATE_BIN_DIR=target/release     the binaries to time (default target/debug)
#        STEPGATE_MOTO_VENV=…                where moto_server lives (.ci/run makes it)
#        STEPGATE_BENCH_TARGETS="local s3"   which stores to fill and time (default both)
#        STEPGATE_BENCH_SEED=export|clone    how the N runs are made (default export)
# `export`: every run is a real `stepgate export` of a generated report under its own label,
# so N costs N exports to set up (10,000: 40 min on a local disk, over an hour on moto).
# `clone`: one real export, cloned N times by scripts/seed_dataset.py under the run ids and
# names stepgate gives them, then uploaded to moto with the names kept (minutes). It also
# times a second local history of the same runs under the names stepgate wrote before the
# label digests (`run-<id>.parquet`, "plain names"): the no-match gate before and after.
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-100}"
bin_dir="${STEPGATE_BIN_DIR:-target/debug}"
venv="${STEPGATE_MOTO_VENV:-$HOME/.cache/stepgate/moto-venv}"
[ -x "$venv/bin/moto_server" ] || { echo "bench_dataset: no $venv/bin/moto_server" >&2; exit 1; }
work="$(mktemp -d)"
port="$("$venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
"$venv/bin/moto_server" -H 127.0.0.1 -p "$port" >/dev/null 2>&1 &
moto=$!
trap 'kill "$moto" 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 100); do
  "$venv/bin/python" -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null && break
  sleep 0.2
done
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 \
  AWS_ENDPOINT_URL="http://127.0.0.1:$port" AWS_ALLOW_HTTP=true AWS_EC2_METADATA_DISABLED=true
"$venv/bin/python" -c "import urllib.request as u; u.urlopen(u.Request('http://127.0.0.1:$port/bench', method='PUT'))"
"$bin_dir/stepgate-synth" workload --steps 40 --kernels 48 -o "$work/r.sqlite" >/dev/null 2>&1
# The gated capture is another report (one step more): a history of the candidate's own
# exports would leave every run out ("never part of its own history") and read them all.
"$bin_dir/stepgate-synth" workload --steps 41 --kernels 48 -o "$work/c.sqlite" >/dev/null 2>&1
now() { date +%s.%N; }
targets=()
for t in ${STEPGATE_BENCH_TARGETS:-local s3}; do
  case "$t" in
    local)
      targets+=("$work/local")
      if [ "${STEPGATE_BENCH_SEED:-export}" = clone ]; then targets+=("$work/plain"); fi ;;
    s3) targets+=("s3://bench/history") ;;
    *) echo "bench_dataset: unknown target $t (local or s3)" >&2; exit 2 ;;
  esac
done
seed="${STEPGATE_BENCH_SEED:-export}"
py="$venv/bin/python"
if [ "$seed" = clone ]; then
  "$bin_dir/stepgate" export "$work/r.sqlite" -o "$work/template" --label i=0 --label branch=main >/dev/null
  "$py" scripts/seed_dataset.py clone "$work/template" "$work/local" "$n"
  "$py" scripts/seed_dataset.py clone "$work/template" "$work/plain" "$n" --plain-names
  # Uploaded before any target is timed (each adds one exported run).
  case " ${targets[*]} " in
    *" s3://bench/history "*)
      "$py" scripts/seed_dataset.py upload "$work/local" bench history "$AWS_ENDPOINT_URL" ;;
  esac
fi
label() {
  case "$1" in
    s3://*) echo "s3 (moto, loopback)" ;;
    "$work/plain") echo "local, plain names" ;;
    *) echo "local directory" ;;
  esac
}
for target in "${targets[@]}"; do
  if [ "$seed" != clone ]; then
    for i in $(seq "$n"); do
      "$bin_dir/stepgate" export "$work/r.sqlite" -o "$target" --label "i=$i" --label branch=main >/dev/null
    done
  fi
  t0=$(now)
  "$bin_dir/stepgate" export "$work/r.sqlite" -o "$target" --label i=extra >/dev/null
  t1=$(now)
  "$bin_dir/stepgate" gate "$work/c.sqlite" --history "$target" --where label.branch=main --last 20 \
    --format json >"$work/gate.json" || true
  t2=$(now)
  # A gate that compared nothing measured the wrong thing: say so instead of a time.
  grep -q '"baseline_steps": [1-9]' "$work/gate.json" \
    || { echo "bench_dataset: the gate compared no history steps" >&2; exit 1; }
  # No run carries branch=feature: the gate is inconclusive (exit 3), having read what?
  rc=0
  STEPGATE_DEBUG_READS=1 "$bin_dir/stepgate" gate "$work/c.sqlite" --history "$target" \
    --where label.branch=feature --last 20 >/dev/null 2>"$work/nomatch.err" || rc=$?
  t3=$(now)
  [ "$rc" = 3 ] || { echo "bench_dataset: the no-match gate exited $rc, not 3" >&2; exit 1; }
  read_runs="$( (grep -o ' runs=[0-9]*' "$work/nomatch.err" || true) | head -1 | cut -d= -f2)"
  printf 'bench_dataset: %-20s %6d runs  export %6.2f s  gate --last 20 %6.2f s  no-match gate %6.2f s (%s runs objects read)\n' \
    "$(label "$target")" "$n" "$(echo "$t1 - $t0" | bc)" "$(echo "$t2 - $t1" | bc)" \
    "$(echo "$t3 - $t2" | bc)" "${read_runs:-0}"
done
