#!/usr/bin/env bash
# Nsight Systems 2022.4 from Debian bookworm's non-free archive, and the `nvtx` Python
# package the stand-in engine imports, for tests/it/real_nsys.rs (CPU-side tracing needs
# no GPU). Idempotent and quiet: it says what it did on stderr and prints one line on
# stdout, the python3 of the nvtx virtualenv (nothing when it has none). Fails soft: when
# apt, the archive or PyPI cannot be used it says why and exits 0; the real-nsys tests
# then skip, saying so, unless STEPGATE_REQUIRE_NSYS=1 makes that a failure (.ci/run).
set -u

say() { echo "install_nsys: $*" >&2; }
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; elif command -v sudo >/dev/null 2>&1; then sudo -n "$@"; else return 1; fi
}

if command -v nsys >/dev/null 2>&1; then
  :
elif ! command -v apt-get >/dev/null 2>&1; then
  say "no apt-get here: Nsight Systems not installed; the real-nsys tests will skip"
else
  # nsight-systems is in non-free (its target libraries pull from contrib): add both
  # components to the Debian stanzas that lack them.
  src=/etc/apt/sources.list.d/debian.sources
  if [ -f "$src" ] && grep -q '^Components:' "$src" && ! grep -q '^Components:.* non-free\( \|$\)' "$src"; then
    as_root sed -i -E '/^Components:/{s/ contrib( |$)/\1/; s/$/ contrib non-free/}' "$src" \
      || say "cannot edit $src (not root, no sudo)"
  fi
  if as_root timeout 300 apt-get update -qq >/dev/null 2>&1 \
    && as_root env DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq \
      --no-install-recommends nsight-systems nsight-systems-target >/dev/null 2>&1; then
    say "installed $(nsys --version 2>/dev/null | tail -n 1)"
  else
    say "apt-get could not install nsight-systems (archive unreachable, or no non-free component for this release); the real-nsys tests will skip"
  fi
fi

# The `nvtx` package goes into a virtualenv of its own that the tests are pointed at
# (STEPGATE_TEST_PYTHON), so a newer nvtx elsewhere on the machine cannot shadow it.
# Pinned below 0.2.12: from 0.2.12 nvtx creates a domain only when nvtxDomainIsEnabled
# returns non-zero, and nsys 2022.4's injection library answers 0, so push_range and
# pop_range become silent no-ops and the report holds no NVTX range at all (measured:
# 0.2.8, 0.2.10 and 0.2.11 record the stand-in's ranges under 2022.4; 0.2.12-0.2.17 none).
venv="${STEPGATE_CI_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/stepgate/nvtx-venv}"
nvtx_version() {
  "$venv/bin/python3" -c 'import importlib.metadata as m, nvtx; print(m.version("nvtx"))' 2>/dev/null
}
# True when the version printed is below 0.2.12 (the last that records under nsys 2022.4).
records_under_2022_4() {
  "$venv/bin/python3" -c '
import sys
v = tuple(int(x) for x in sys.argv[1].split(".")[:3])
sys.exit(0 if v < (0, 2, 12) else 1)' "$1" 2>/dev/null
}
have="$(nvtx_version || true)"
if [ -z "$have" ] || ! records_under_2022_4 "$have"; then
  { [ -x "$venv/bin/python3" ] || python3 -m venv "$venv"; } >/dev/null 2>&1 \
    && "$venv/bin/python3" -m pip install -q --disable-pip-version-check \
      --force-reinstall 'nvtx<0.2.12' >/dev/null 2>&1 \
    || say "could not install nvtx<0.2.12 into $venv (PyPI unreachable?)"
  have="$(nvtx_version || true)"
fi
if [ -n "$have" ] && records_under_2022_4 "$have"; then
  say "nvtx $have in $venv"
  # The one line a caller reads: the python the real-nsys tests must use.
  echo "$venv/bin/python3"
else
  say "no usable nvtx (have: ${have:-none}; need <0.2.12); the real-nsys tests will skip"
fi
exit 0
