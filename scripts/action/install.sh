#!/usr/bin/env bash
# The install step of the stepgate GitHub Action (action.yml): put `stepgate` on PATH for
# the steps after it, from a wheel, without a Rust toolchain.
#
# STEPGATE_VERSION (the action's `version` input) is one of:
#   0.1.0            the release of that version from the package index (wheels only:
#                    --only-binary, so pip never falls back to compiling the source)
#   ./dist/x.whl     a wheel file, e.g. built earlier in the same workflow
#   https://…/x.whl  a wheel URL
#   preinstalled     use the `stepgate` already on PATH (cargo install, a runner image)
# The wheel goes into its own virtual environment ($STEPGATE_VENV, default
# $RUNNER_TEMP/stepgate-venv), whose bin/ is appended to $GITHUB_PATH. Needs python3.
set -euo pipefail

version="${STEPGATE_VERSION:-}"
if [ -z "$version" ]; then
  echo "::error title=stepgate::the 'version' input is empty: give a version, a wheel path or URL, or 'preinstalled'"
  exit 2
fi

if [ "$version" = "preinstalled" ]; then
  if ! command -v stepgate > /dev/null; then
    echo "::error title=stepgate::version is 'preinstalled' but stepgate is not on PATH"
    exit 4
  fi
  bin_dir="$(dirname "$(command -v stepgate)")"
else
  case "$version" in
    *.whl | */*) spec="$version" ;;
    *[!0-9A-Za-z.+!-]*)
      echo "::error title=stepgate::version '$version' is not a version, a wheel path or a URL"
      exit 2
      ;;
    *) spec="stepgate==$version" ;;
  esac
  if ! command -v python3 > /dev/null; then
    echo "::error title=stepgate::python3 is needed to install the stepgate wheel (or use version: preinstalled)"
    exit 4
  fi
  venv="${STEPGATE_VENV:-${RUNNER_TEMP:-${TMPDIR:-/tmp}}/stepgate-venv}"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --only-binary=:all: "$spec"
  bin_dir="$venv/bin"
fi

"$bin_dir/stepgate" --version
if [ -n "${GITHUB_PATH:-}" ]; then
  echo "$bin_dir" >> "$GITHUB_PATH"
fi
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  echo "path=$bin_dir/stepgate" >> "$GITHUB_OUTPUT"
fi
