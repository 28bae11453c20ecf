#!/usr/bin/env bash
# Nsight Systems 2022.4 from Debian bookworm's non-free archive, and the `nvtx` Python
# package the stand-in engine imports, for tests/it/real_nsys.rs (CPU-side tracing needs
# no GPU). Idempotent and quiet. Fails soft: when apt, the archive or PyPI cannot be used
# it says why and exits 0, and the real-nsys tests print that they skipped.
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

if ! python3 -c 'import nvtx' >/dev/null 2>&1; then
  # Debian's own python3 is externally managed: try a plain install first, then past it.
  python3 -m pip install -q nvtx >/dev/null 2>&1 \
    || python3 -m pip install -q --break-system-packages nvtx >/dev/null 2>&1 \
    || say "pip could not install nvtx (PyPI unreachable?); the real-nsys tests will skip"
fi
exit 0
