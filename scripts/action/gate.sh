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
#   STEPGATE_POLICY, STEPGATE_GPU, STEPGATE_MODEL, STEPGATE_ARGS (extra flags: every line
#   split on whitespace; quotes refused), STEPGATE_INCONCLUSIVE_FAILS, STEPGATE_COMMENT,
#   STEPGATE_COMMENT_KEY, STEPGATE_OUT_DIR, STEPGATE_ARTIFACT_NAME (named in the accept
#   command a regression's comment carries); GH_TOKEN for the comment.
# Everything a pull request can set (kernel names in stepgate's output, file names, inputs)
# is printed between `::stop-commands::TOKEN` and `::TOKEN::` with a random TOKEN, so no
# line of it runs as a workflow command (docs/hostile-inputs.md, "Running on untrusted
# pull requests").
# GitHub's own: GITHUB_STEP_SUMMARY, GITHUB_OUTPUT, GITHUB_EVENT_NAME, GITHUB_EVENT_PATH,
# GITHUB_REPOSITORY, GITHUB_RUN_ID, RUNNER_TEMP. tests/it/action.rs runs this script with each pointed at
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

# Below the 1 MiB GitHub accepts per step summary, with room for the note.
SUMMARY_MAX=${STEPGATE_SUMMARY_MAX:-1000000}

# An unguessable token for ::stop-commands:: (a name in the output cannot end the pause).
token="stepgate-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
pause_commands() { echo "::stop-commands::$token"; }
resume_commands() { echo "::$token::"; }

# A comment key as a marker word, injectively: every byte outside [A-Za-z0-9._] as %XX,
# so `H100 SXM` and `H100/SXM` stay two keys.
encode_key() {
  local LC_ALL=C s="$1" out="" c i
  for ((i = 0; i < ${#s}; i++)); do
    c="${s:i:1}"
    case "$c" in
      [A-Za-z0-9._]) out+="$c" ;;
      *) out+="$(printf '%%%02X' "'$c")" ;;
    esac
  done
  printf '%s' "$out"
}

# A word for a shell command a reviewer pastes: printed as it is when it holds only
# characters no shell treats specially, else single-quoted (a ' as '\''). Returns 1 for a
# value with a control character or a non-ASCII byte: a pasted line must run exactly what
# it shows, so such a value is never put in a command (the caller says so instead); so is
# one with a backtick, which would end the markdown code span the word is shown in.
shell_word() {
  local LC_ALL=C s="$1"
  case "$s" in
    *[![:print:]]* | *'`'* | '') return 1 ;;
  esac
  if [[ "$s" =~ ^[A-Za-z0-9._/:@%+=,-]+$ ]]; then
    printf '%s' "$s"
  else
    printf "'%s'" "${s//\'/\'\\\'\'}"
  fi
}

# The "accept this regression" section of the comment: where the comparison JSON is (the
# artifact this run uploads) and the exact `stepgate accept` line, every word from an
# input quoted by shell_word; a value that cannot be quoted safely leaves the line out.
accept_section() {
  local artifact="${STEPGATE_ARTIFACT_NAME-stepgate-gate}" hist="" dl="" w
  echo
  echo "#### Accepting this regression"
  echo
  if [ -n "$artifact" ]; then
    if ! w="$(shell_word "$artifact")"; then
      echo "The comparison is \`gate.json\` in this run's artifact (its name holds characters that are not safe in a pasted command)."
      return
    fi
    if [[ "${GITHUB_RUN_ID:-}" =~ ^[0-9]+$ ]] && [[ "${GITHUB_REPOSITORY:-}" =~ ^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$ ]]; then
      dl="gh run download ${GITHUB_RUN_ID} --repo ${GITHUB_REPOSITORY} --name=$w --dir stepgate-gate && cd stepgate-gate"
    fi
    echo "If the change is intended, record it: the comparison is \`gate.json\` in the artifact \`$w\` of this run. A reason is mandatory; who decides is \`--by\`, else \`\$GITHUB_ACTOR\`, else \`\$USER\`."
  else
    w="$(shell_word "$out")" || w="the output directory"
    echo "If the change is intended, record it: the comparison is \`gate.json\` in \`$w\` on the runner (the \`artifact-name\` input is empty, so no artifact was uploaded). A reason is mandatory."
  fi
  if [ -n "${STEPGATE_HISTORY:-}" ]; then
    if ! w="$(shell_word "$STEPGATE_HISTORY")"; then
      echo
      echo "(The \`history\` input holds characters that are not safe in a pasted command: give it to \`stepgate accept gate.json --history=… --reason '…'\` yourself.)"
      return
    fi
    hist=" --history=$w"
  fi
  echo
  echo '```sh'
  [ -n "$dl" ] && echo "$dl"
  echo "stepgate accept gate.json${hist} --reason 'what the change buys, why it is intended'"
  echo '```'
  echo
  case "${STEPGATE_HISTORY:-}" in
    '' | *://*) ;;
    *) echo "(\`$w\` is a directory on the runner: run the command where that dataset is, or give its object-store URL.)" && echo ;;
  esac
  if [ -n "$hist" ]; then
    echo "Once accepted, this run becomes the reference of later gates against that history for the metrics the decision covers (its regressed ones; \`--metric NAME\` names a subset), and a re-run of this job passes them."
  else
    echo "The record is written beside the comparison (\`gate.decision.json\`): a gate against a baseline file does not read it, so keep it with the baseline and re-record the baseline (\`stepgate baseline record\`) to move the reference."
  fi
}

fail_input() {
  echo "::error title=stepgate::$(escape_data "$1")"
  exit 2
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
case "$STEPGATE_REPORT" in
  -*) fail_input "the 'report' input starts with '-': give a path (./$STEPGATE_REPORT), not a flag" ;;
esac
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
# `--flag=value`: a value that starts with '-' stays the flag's value.
[ -n "${STEPGATE_BASELINE:-}" ] && args+=("--baseline=$STEPGATE_BASELINE")
[ -n "${STEPGATE_HISTORY:-}" ] && args+=("--history=$STEPGATE_HISTORY")
[ -n "${STEPGATE_WHERE:-}" ] && args+=("--where=$STEPGATE_WHERE")
[ -n "${STEPGATE_POLICY:-}" ] && args+=("--policy=$STEPGATE_POLICY")
[ -n "${STEPGATE_GPU:-}" ] && args+=("--gpu=$STEPGATE_GPU")
[ -n "${STEPGATE_MODEL:-}" ] && args+=("--model=$STEPGATE_MODEL")
if [ -n "${STEPGATE_ARGS:-}" ]; then
  # Every line split on whitespace: no globbing, no expansion of what the input holds.
  # Quotes would need a shell to mean what the author meant: refused, never guessed.
  case "$STEPGATE_ARGS" in
    *[\"\'\\]*) fail_input "the 'args' input holds a quote or a backslash: give plain words, one flag or value each (values with spaces have their own inputs)" ;;
  esac
  while IFS= read -r l || [ -n "$l" ]; do
    read -r -a extra <<< "$l"
    args+=("${extra[@]}")
  done <<< "${STEPGATE_ARGS//$'\r'/}"
fi

pause_commands
printf 'stepgate'
printf ' %q' "${args[@]}"
printf '\n'
stepgate "${args[@]}" 2> "$out/stderr.txt"
code=$?
# On stdout, so it is read in order inside the pause (the runner reads both streams).
cat "$out/stderr.txt"
resume_commands

# A run that exits 0 must have written its verdict; anything else (help, a version line,
# a flag that ended the run early) is a failure, never a pass.
if [ "$code" = 0 ] && ! grep -Eq '"verdict": *"pass"' "$json" 2> /dev/null; then
  echo "stepgate: error: stepgate exited 0 but wrote no verdict (did an input or args print help?)" >> "$out/stderr.txt"
  code=2
fi

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
# A regression a reviewer may accept: the exact command, after the report (docs/gate.md,
# "In CI: the GitHub Action"). Kept apart so that a report cut to fit the summary or the
# comment never cuts it: it goes after the cut.
tail_md="$out/accept.md"
: > "$tail_md"
if [ "$code" = 1 ] && [ -s "$json" ]; then
  accept_section > "$tail_md"
fi
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  size=$(wc -c < "$body")
  tail_size=$(wc -c < "$tail_md")
  if [ "$((size + tail_size))" -le "$SUMMARY_MAX" ]; then
    cat "$body" "$tail_md" >> "$GITHUB_STEP_SUMMARY"
  else
    # GitHub refuses a step summary over 1 MiB: whole lines up to the cap, then a note.
    run_url="${GITHUB_SERVER_URL:-https://github.com}/${GITHUB_REPOSITORY:-}/actions/runs/${GITHUB_RUN_ID:-}"
    {
      head -c "$((SUMMARY_MAX - 400 - tail_size))" "$body" | sed '$d'
      printf '\n\n… the report (%s bytes) is cut here to stay under the 1 MiB GitHub accepts in a job summary: the whole report is gate.md in the workflow artifact of [this run](%s).\n' "$size" "$run_url"
      cat "$tail_md"
    } >> "$GITHUB_STEP_SUMMARY"
  fi
fi

marker="<!-- stepgate-gate -->"
if [ -n "${STEPGATE_COMMENT_KEY:-}" ]; then
  marker="<!-- stepgate-gate $(encode_key "$STEPGATE_COMMENT_KEY") -->"
fi
comment_id=""
if truthy "${STEPGATE_COMMENT:-true}"; then
  case "${GITHUB_EVENT_NAME:-}" in
    pull_request | pull_request_target)
      if ! command -v gh > /dev/null; then
        echo "::warning title=stepgate::gh is not installed: no pull-request comment (the job summary has the report)"
      elif ! comment_id="$(python3 "$here/comment.py" --marker "$marker" --body "$body" --tail "$tail_md")"; then
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
