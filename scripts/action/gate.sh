#!/usr/bin/env bash
# The gate step of the stepgate GitHub Action (action.yml): run `stepgate gate`, append its
# markdown to the job summary, create or update ONE pull-request comment (found by a hidden
# marker), set the step outputs, and turn the exit code into the job result:
#   0 pass                      → success
#   1 regression                → failure (::error::)
#   3 inconclusive (too few steps) → ::warning::, success; failure when INCONCLUSIVE_FAILS
#   2 input error, 4 environment missing, anything else → failure, the error line as ::error::
#
# Inputs come as environment variables (action.yml passes each `inputs.*` through `env:`, so
# no input is ever expanded inside the script's text):
#   STEPGATE_REPORT (required), STEPGATE_BASELINE or STEPGATE_HISTORY (+ STEPGATE_WHERE),
#   STEPGATE_POLICY, STEPGATE_GPU, STEPGATE_MODEL, STEPGATE_ARGS (extra flags, split on
#   whitespace), STEPGATE_INCONCLUSIVE_FAILS, STEPGATE_COMMENT, STEPGATE_COMMENT_KEY,
#   STEPGATE_OUT_DIR; GH_TOKEN for the comment.
# GitHub's own: GITHUB_STEP_SUMMARY, GITHUB_OUTPUT, GITHUB_EVENT_NAME, GITHUB_EVENT_PATH,
# GITHUB_REPOSITORY, RUNNER_TEMP. tests/it/action.rs runs this script with each pointed at
# temporary files and a fake `gh` on PATH.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

truthy() {
  case "${1,,}" in true | 1 | yes | on) return 0 ;; *) return 1 ;; esac
}

# Workflow-command escaping (the runner decodes %25, %0D, %0A in a message).
escape_data() {
  local s="$1"
  s="${s//'%'/'%25'}"
  s="${s//$'\r'/'%0D'}"
  s="${s//$'\n'/'%0A'}"
  printf '%s' "$s"
}

# `name=value` into $GITHUB_OUTPUT (single-line values only).
set_output() {
  if [ -n "${GITHUB_OUTPUT:-}" ]; then
    printf '%s=%s\n' "$1" "${2//$'\n'/ }" >> "$GITHUB_OUTPUT"
  fi
}

if [ -z "${STEPGATE_REPORT:-}" ]; then
  echo "::error title=stepgate::the 'report' input is empty: pass the capture to gate (an nsys .sqlite export or a Kineto trace)"
  exit 2
fi
if ! command -v stepgate > /dev/null; then
  echo "::error title=stepgate::stepgate is not on PATH: the install step did not run or failed"
  exit 4
fi

out="${STEPGATE_OUT_DIR:-${RUNNER_TEMP:-.}/stepgate}"
mkdir -p "$out"
md="$out/gate.md"
json="$out/gate.json"
html="$out/gate.html"
rm -f "$md" "$json" "$html"

args=(gate "$STEPGATE_REPORT" --markdown "$md" --json "$json" --html "$html")
[ -n "${STEPGATE_BASELINE:-}" ] && args+=(--baseline "$STEPGATE_BASELINE")
[ -n "${STEPGATE_HISTORY:-}" ] && args+=(--history "$STEPGATE_HISTORY")
[ -n "${STEPGATE_WHERE:-}" ] && args+=(--where "$STEPGATE_WHERE")
[ -n "${STEPGATE_POLICY:-}" ] && args+=(--policy "$STEPGATE_POLICY")
[ -n "${STEPGATE_GPU:-}" ] && args+=(--gpu "$STEPGATE_GPU")
[ -n "${STEPGATE_MODEL:-}" ] && args+=(--model "$STEPGATE_MODEL")
if [ -n "${STEPGATE_ARGS:-}" ]; then
  # Split on whitespace only: no globbing, no quotes, no expansion of what the input holds.
  read -r -a extra <<< "$STEPGATE_ARGS"
  args+=("${extra[@]}")
fi

echo "stepgate ${args[*]}"
stepgate "${args[@]}" 2> "$out/stderr.txt"
code=$?
cat "$out/stderr.txt" >&2

case "$code" in
  0) verdict=pass ;;
  1) verdict=regression ;;
  3) verdict=inconclusive ;;
  6) verdict=incomparable ;;
  *) verdict=error ;;
esac

# The line that says what went wrong: stepgate's own error line, else the last stderr line.
error_line="$(grep -E '^stepgate: error:' "$out/stderr.txt" | tail -n 1)"
[ -n "$error_line" ] || error_line="$(grep -v '^[[:space:]]*$' "$out/stderr.txt" | tail -n 1)"
[ -n "$error_line" ] || error_line="stepgate exited with code $code"

# What the summary and the comment show: the gate's markdown, or the error when none was written.
body="$out/body.md"
if [ -s "$md" ]; then
  cp "$md" "$body"
else
  {
    echo "### ❌ stepgate gate: error (exit $code)"
    echo
    echo '```'
    echo "$error_line"
    echo '```'
  } > "$body"
fi
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  cat "$body" >> "$GITHUB_STEP_SUMMARY"
fi

marker="<!-- stepgate-gate -->"
if [ -n "${STEPGATE_COMMENT_KEY:-}" ]; then
  marker="<!-- stepgate-gate ${STEPGATE_COMMENT_KEY//[^A-Za-z0-9._-]/_} -->"
fi
comment_id=""
if truthy "${STEPGATE_COMMENT:-true}"; then
  case "${GITHUB_EVENT_NAME:-}" in
    pull_request | pull_request_target)
      if ! command -v gh > /dev/null; then
        echo "::warning title=stepgate::gh is not installed: no pull-request comment (the job summary has the report)"
      elif ! comment_id="$(python3 "$here/comment.py" --marker "$marker" --body "$body")"; then
        comment_id=""
        echo "::warning title=stepgate::could not create or update the pull-request comment (a fork's read-only token?); the job summary has the report"
      fi
      ;;
    *) echo "stepgate: not a pull_request event (${GITHUB_EVENT_NAME:-none}): no comment" ;;
  esac
fi

set_output verdict "$verdict"
set_output exit-code "$code"
set_output markdown "$([ -s "$md" ] && echo "$md")"
set_output json "$([ -s "$json" ] && echo "$json")"
set_output html "$([ -s "$html" ] && echo "$html")"
set_output out-dir "$out"
set_output comment-id "$comment_id"

headline="$(head -n 1 "$body" | sed -E 's/^#+ *//')"
case "$code" in
  0)
    echo "stepgate: $headline"
    exit 0
    ;;
  1)
    echo "::error title=stepgate regression::$(escape_data "$headline")"
    exit 1
    ;;
  3)
    if truthy "${STEPGATE_INCONCLUSIVE_FAILS:-false}"; then
      echo "::error title=stepgate inconclusive::$(escape_data "$headline") (inconclusive-fails is set)"
      exit 1
    fi
    echo "::warning title=stepgate inconclusive::$(escape_data "$headline")"
    exit 0
    ;;
  6)
    echo "::error title=stepgate incomparable::$(escape_data "$headline")"
    exit 6
    ;;
  *)
    echo "::error title=stepgate exit $code::$(escape_data "$error_line")"
    exit "$code"
    ;;
esac
