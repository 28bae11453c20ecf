#!/usr/bin/env bash
# Run a fixed set of stepgate command lines over the bundled reports and save each one's
# stdout, stderr, exit code and written files, so two builds can be compared byte for byte:
#
#   SG=old/stepgate scripts/compare_outputs.sh /tmp/before     # (a binary named stepgate:
#                                                              # the name is in --help)
#   SG=target/debug/stepgate scripts/compare_outputs.sh /tmp/after
#   diff -r /tmp/before /tmp/after
#
# Parquet files are not compared (they carry the export time); what `trend` and
# `gate --history` read back from them is.
set -u
SG=${SG:-target/debug/stepgate}
OUT=${1:?usage: compare_outputs.sh OUTDIR}
SG=$(realpath "$SG")
cd "$(dirname "$0")/.."
rm -rf "$OUT"
mkdir -p "$OUT"
OUT=$(realpath "$OUT")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# c NAME ARGS…: run stepgate ARGS… with @F@ standing for this case's file directory.
c() {
    local name=$1
    shift
    local files="$WORK/$name"
    mkdir -p "$files"
    local args=()
    for a in "$@"; do args+=("${a//@F@/$files}"); done
    "$SG" "${args[@]}" >"$OUT/$name.stdout" 2>"$OUT/$name.stderr"
    echo $? >"$OUT/$name.rc"
    # Written files, minus parquet; their names are stable.
    (cd "$files" && find . -type f ! -name '*.parquet' ! -name '*.lock' | sort) | while read -r f; do
        mkdir -p "$OUT/$name.files/$(dirname "$f")"
        cp "$files/$f" "$OUT/$name.files/$f"
    done
    # The work directory's path and the export times differ from run to run.
    find "$OUT" -path "$OUT/$name.*" -type f -exec sed -i -E -e "s#$files#@F@#g" -e "s#$WORK#@W@#g" \
        -e 's/[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}/@TIME@/g' \
        -e 's/"exported_at_ns": [0-9]+/"exported_at_ns": @NS@/g' {} +
}

NSYS=tests/fixtures/nsys
KIN=tests/fixtures/kineto
EX=examples/vllm_decode_synthetic_h100.sqlite
BASE=baselines/example-h100-vllm-decode.json
REPORTS=(
    "$NSYS/fastvideo_h100_2gpu_nsys2026.2.sqlite"
    "$NSYS/fastvideo_train_2gpu_nsys2026.2.sqlite"
    "$NSYS/saxpy_mpi_a100_nsys2022.2.sqlite"
    "$NSYS/sglang_decode_mi300x_converted_nsys2026.2.sqlite"
    "$KIN/hf_qwen1.5-0.5b_h100_profilerstep.json.gz"
    "$KIN/hta_v100_ns_resolution_rank-0.pt.trace.json.gz"
    "$KIN/sglang_mi300x_qwen3-8b_decode_step.json.gz"
    "$KIN/vllm_b200_eager_prefill_rank0.json.gz"
    "$KIN/vllm_mi300x_decode_fullgraph_step.json.gz"
    "$EX"
)

for r in "${REPORTS[@]}"; do
    n=$(basename "$r" | sed 's/\..*//')
    for f in table json markdown csv; do
        c "analyze-$n-$f" analyze "$r" --format "$f"
        c "steps-$n-$f" steps "$r" --format "$f" --each
    done
    c "analyze-$n-nosteps" analyze "$r" --no-steps --format json
    c "analyze-$n-html" analyze "$r" --html @F@/a.html
    c "steps-$n-priced" steps "$r" --model qwen3-8b --gpu h100-sxm --each
    c "steps-$n-priced-json" steps "$r" --model llama-3-8b --gpu h100-sxm --context 1024 --batch 8 --format json
    c "steps-$n-files" steps "$r" --model qwen3-8b --gpu h100-sxm --html @F@/s.html --perfetto @F@/s.json
    c "steps-$n-gaps" steps "$r" --steps gaps --gap-us 50 --format json --top 2
    c "steps-$n-decode" steps "$r" --kind decode --launch-cost 4.1 --each
    c "baseline-$n" baseline record "$r" -o @F@/b.json --model llama-3-8b --gpu h100-sxm
    c "baseline-$n-nomodel" baseline record "$r" -o @F@/b.json
done

c steps-ex-auto-model steps "$EX" --model llama-3-8b --each --format markdown
c steps-ex-regex steps "$EX" --steps 'execute_.*' --format json
c steps-ex-sync steps "$EX" --steps sync
c steps-ex-graphs steps "$EX" --steps graphs --batch 32 --context 2048 --model llama-3-8b
c steps-ex-mixed steps "$EX" --kind mixed
c steps-ex-window steps "$EX" --perfetto @F@/p.json --perfetto-steps 2..5
c steps-ex-hbm steps "$EX" --model llama-3-8b --hbm-tb-s 3.0 --tp 2 --format json
c steps-ex-cats steps "$EX" --categories /dev/null
c steps-ex-badre steps "$EX" --steps 'exec(['
c steps-ex-badgap steps "$EX" --steps gaps --gap-us -1
c steps-missing steps /nonexistent.sqlite
c steps-ex-nogpu steps "$NSYS/saxpy_mpi_a100_nsys2022.2.sqlite" --model llama-3-8b
c analyze-ex-device analyze "$EX" --device 0 --top 3
c analyze-ex-baddevice analyze "$EX" --device 7

for f in table json markdown csv; do
    c "gate-ex-$f" gate "$EX" --baseline "$BASE" --format "$f"
    c "diff-ex-$f" diff "$BASE" "$EX" --format "$f"
done
c gate-ex-files gate "$EX" --baseline "$BASE" --policy examples/policy.toml --markdown @F@/g.md --json @F@/g.json --html @F@/g.html
c gate-ex-self gate "$BASE" --baseline "$BASE" --inconclusive-fails
c gate-ex-nobase gate "$EX"
c gate-ex-top gate "$EX" --baseline "$BASE" --top 2 --waterfall-top 1 --format markdown
c diff-ex-verdict diff "$EX" "$EX" --verdict --markdown @F@/d.md --html @F@/d.html
c diff-ex-nsys diff "$NSYS/sglang_decode_mi300x_converted_nsys2026.2.sqlite" "$KIN/sglang_mi300x_qwen3-8b_decode_step.json.gz"
c baseline-show baseline show "$BASE"
c baseline-ex-thin baseline record "$EX" -o @F@/sub/b.json --max-steps 5 --kind decode
c baseline-ex-model baseline record "$EX" -o @F@/b.json --model llama-3-8b --gpu h100-sxm --tp 2 --hbm-tb-s 3.1
c baseline-ex-noop baseline record "$NSYS/saxpy_mpi_a100_nsys2022.2.sqlite" -o @F@/b.json
c baseline-ex-selfout baseline record "$EX" -o "$EX"

# History: export, trend, gate --history, each against a dataset this build wrote.
DS="$WORK/ds"
c export-ex export "$EX" -o "$DS" --label branch=main --model llama-3-8b
c export-ex-again export "$EX" -o "$DS" --label branch=main --model llama-3-8b
c export-ex-2 export "$EX" -o "$DS" --label branch=pr --model llama-3-8b
c export-fv export "$NSYS/fastvideo_h100_2gpu_nsys2026.2.sqlite" -o "$DS" --label branch=main
c export-sg export "$KIN/sglang_mi300x_qwen3-8b_decode_step.json.gz" -o "$DS" --label branch=main
c baseline-ex-export baseline record "$EX" -o @F@/b.json --export "$DS" --label branch=rec --model llama-3-8b
c gate-ex-history gate "$EX" --history "$DS" --last 5 --model llama-3-8b --format json
c gate-ex-history-runs gate "$EX" --history "$DS" --history-mode runs --min-runs 1 --where label.branch=main
c gate-ex-export gate "$EX" --baseline "$BASE" --export "$DS" --label branch=gate
for f in table json markdown csv; do
    c "trend-$f" trend "$DS" --metric wall_ns --by label.branch --format "$f"
done
c trend-kernel trend "$DS" --metric category:attention --by gpu --window 2
c trend-html trend "$DS" --metric busy_ns --html @F@/t.html
c trend-bad trend "$DS" --metric nope
c trend-last0 trend "$DS" --last 0

# No trace.
for f in table json markdown csv; do
    c "floor-$f" floor --model llama-3-8b --gpu h100-sxm --batch 32 --context 2048 --format "$f"
    c "capacity-$f" capacity --model llama-3-8b --gpu h100-sxm --weights-gb 15.01 --params-b 7.5 --kv-pool-tokens 428569 --fleet-rps 240 --format "$f"
done
c floor-moe floor --model deepseek-v3 --gpu h200 --batch 1 --context 16384 --tp 8 --moe-routing spread
c floor-raw floor --weights-gb 15.01 --layers 32 --kv-heads 8 --head-dim 128 --hbm-tb-s 3.0 --launches 395
c floor-badhbm floor --hbm-tb-s 1e9
c floor-badtp floor --tp 0
c capacity-bad capacity --fleet-rps nan
c help --help
for s in analyze steps floor capacity gate diff capture launch-probe export trend; do
    c "help-$s" "$s" --help
    c "h-$s" "$s" -h
done
c help-baseline-record baseline record --help
c capture-then-steps capture --engine vllm --nsys-out @F@/r --then gate -- x
c badflag steps --bogus
# A standard output that cannot be written (a full disk).
"$SG" floor >/dev/full 2>"$OUT/stdout-full.stderr"
echo $? >"$OUT/stdout-full.rc"
echo "$(ls "$OUT" | grep -c '\.rc$') cases written to $OUT"
