#!/usr/bin/env bash
# The install step of the stepgate GitHub Action (action.yml): put `stepgate` on PATH for
# the steps after it, from a wheel, without a Rust toolchain.
#
# STEPGATE_VERSION (the action's `version` input) is one of:
#   0.1.0            the release of that version from the package index, distribution
#                    `stepgate-gpu` (`stepgate` there is another project) (wheels only:
#                    --only-binary, so pip never falls back to compiling the source); a
#                    PEP 440 release (1.2, 1.2.3rc1, 1.2.3.post1, 1.2.3.dev4), nothing else
#   ./dist/x.whl     a wheel file, e.g. built earlier in the same workflow (a path that
#                    does not start with '-' and ends in .whl)
#   https://…/x.whl  a wheel URL (https only)
# Anything else is refused before pip sees it: a value that starts with '-' would be an
# option to pip (`-rhttps://…` reads a requirements file from anywhere).
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
  pep440='^[0-9]+(\.[0-9]+)*((a|b|rc)[0-9]+)?(\.post[0-9]+)?(\.dev[0-9]+)?$'
  if [[ "$version" =~ $pep440 ]]; then
    spec="stepgate-gpu==$version"
  elif [[ "$version" == *.whl && "$version" != -* && "$version" != *$'\n'* ]] \
    && { [[ "$version" == https://* ]] || [[ "$version" != *://* ]]; }; then
    spec="$version"
  else
    shown="$(printf '%q' "$version")"
    shown="${shown//'%'/'%25'}"
    echo "::error title=stepgate::the 'version' input $shown is not a version (0.1.0), a .whl path, an https URL of a .whl, or 'preinstalled'"
    exit 2
  fi
  if ! command -v python3 > /dev/null; then
    echo "::error title=stepgate::python3 is needed to install the stepgate wheel (or use version: preinstalled)"
    exit 4
  fi
  venv="${STEPGATE_VENV:-${RUNNER_TEMP:-${TMPDIR:-/tmp}}/stepgate-venv}"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --only-binary=:all: -- "$spec"
  bin_dir="$venv/bin"
fi

"$bin_dir/stepgate" --version
if [ -n "${GITHUB_PATH:-}" ]; then
  echo "$bin_dir" >> "$GITHUB_PATH"
fi
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  echo "path=$bin_dir/stepgate" >> "$GITHUB_OUTPUT"
fi
