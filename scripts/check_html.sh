#!/usr/bin/env bash
# Open every kind of HTML report stepgate writes (steps, analyze, gate, diff) in headless
# Chromium: take a screenshot of each at 1280 px, fail on any console message (the pages
# log nothing when healthy), and check that the SVG charts are there with non-empty marks.
#
# Usage: scripts/check_html.sh [--docs]
#   --docs   also copy the screenshots to docs/img/ (the README and docs/reports.md use them)
# Needs: a chromium binary (Debian: apt-get install -y chromium), python3, cargo.
# Exit: 0 ok · 1 a check failed · 4 no browser.
set -euo pipefail
cd "$(dirname "$0")/.."

BROWSER=${BROWSER:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}
if [ -z "$BROWSER" ]; then
  echo "check_html: no chromium on PATH (Debian: apt-get install -y chromium)" >&2
  exit 4
fi
DOCS=0
[ "${1:-}" = "--docs" ] && DOCS=1

export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-1}
cargo build --quiet --features synth --bin stepgate --bin stepgate-synth
BIN=target/debug/stepgate
SYNTH=target/debug/stepgate-synth
OUT=target/html-check
rm -rf "$OUT"
mkdir -p "$OUT"

# Inputs: two generated vLLM captures (the candidate has 10% more kernels per step and
# eager launches), and a real two-GPU nsys export for analyze.
"$SYNTH" workload --steps 60 --kernels 400 --ranks 2 -o "$OUT/base.sqlite" >/dev/null
"$SYNTH" workload --steps 60 --kernels 440 --ranks 2 --mode eager -o "$OUT/cand.sqlite" >/dev/null
"$BIN" steps "$OUT/base.sqlite" --model qwen3-0.6b --html "$OUT/steps.html" >/dev/null
"$BIN" analyze tests/fixtures/nsys/fastvideo_h100_2gpu_nsys2026.2.sqlite --html "$OUT/analyze.html" >/dev/null
"$BIN" baseline record "$OUT/base.sqlite" --model qwen3-0.6b -o "$OUT/base.json" >/dev/null
# A regression is the expected verdict here (exit 1); anything else is a failure.
set +e
"$BIN" gate "$OUT/cand.sqlite" --baseline "$OUT/base.json" --model qwen3-0.6b --html "$OUT/gate.html" >/dev/null
rc=$?
set -e
[ "$rc" = 1 ] || { echo "check_html: gate exited $rc, expected 1 (regression)" >&2; exit 1; }
"$BIN" diff "$OUT/base.sqlite" "$OUT/cand.sqlite" --html "$OUT/diff.html" >/dev/null

# The console check must be able to fail: a page with an error has to be caught.
printf '<!DOCTYPE html><p>x</p><script>nope();</script>' >"$OUT/broken.html"
"$BROWSER" --headless=new --no-sandbox --disable-gpu --no-first-run \
  --user-data-dir="$PWD/$OUT/profile-broken" --enable-logging=stderr --v=0 \
  --virtual-time-budget=2000 --dump-dom "file://$PWD/$OUT/broken.html" \
  >/dev/null 2>"$OUT/broken.console.log" || true
if ! grep -qE 'CONSOLE|Uncaught' "$OUT/broken.console.log"; then
  echo "check_html: this browser does not report console errors on stderr; cannot check" >&2
  exit 1
fi

fail=0
for kind in steps analyze gate diff; do
  page="$PWD/$OUT/$kind.html"
  # Headless Chromium as root needs --no-sandbox; a private profile keeps runs independent.
  flags=(--headless=new --no-sandbox --disable-gpu --hide-scrollbars --no-first-run
         --user-data-dir="$PWD/$OUT/profile-$kind" --enable-logging=stderr --v=0)
  "$BROWSER" "${flags[@]}" --window-size=1280,2400 --screenshot="$PWD/$OUT/$kind.png" \
    "file://$page" 2>"$OUT/$kind.shot.log" >/dev/null || true
  "$BROWSER" "${flags[@]}" --virtual-time-budget=2000 --dump-dom "file://$page" \
    >"$OUT/$kind.dom.html" 2>"$OUT/$kind.console.log" || true
  if grep -E 'CONSOLE|Uncaught' "$OUT/$kind.console.log" "$OUT/$kind.shot.log"; then
    echo "check_html: $kind: console messages (above)" >&2
    fail=1
  fi
  if [ ! -s "$OUT/$kind.png" ]; then
    echo "check_html: $kind: no screenshot" >&2
    fail=1
  fi
  python3 - "$OUT/$kind.dom.html" "$kind" <<'PY' || fail=1
import re, sys
from html.parser import HTMLParser

path, kind = sys.argv[1], sys.argv[2]
dom = open(path, encoding="utf-8").read()

class Charts(HTMLParser):
    """Per <svg>: marks with a visible extent, and non-empty text."""
    def __init__(self):
        super().__init__()
        self.charts = []
        self.depth = 0
        self.in_text = False
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg":
            self.depth += 1
            if self.depth == 1:
                self.charts.append({"marks": 0, "texts": 0})
            return
        if not self.depth:
            return
        c = self.charts[-1]
        num = lambda k: float(a.get(k, "0") or 0)
        if tag == "rect" and num("width") > 0 and num("height") > 0 and a.get("fill", "") not in ("#FFFFFF", "none"):
            c["marks"] += 1
        elif tag in ("polyline", "polygon") and len(a.get("points", "").split()) >= 2:
            c["marks"] += 1
        elif tag == "circle" and num("r") > 0:
            c["marks"] += 1
        elif tag == "path" and a.get("d"):
            c["marks"] += 1
        elif tag == "text":
            self.in_text = True
    def handle_endtag(self, tag):
        if tag == "svg":
            self.depth -= 1
        elif tag == "text":
            self.in_text = False
    def handle_data(self, data):
        if self.depth and self.in_text and data.strip():
            self.charts[-1]["texts"] += 1

p = Charts()
p.feed(dom)
if not p.charts:
    sys.exit(f"check_html: {kind}: no SVG chart in the page")
for i, c in enumerate(p.charts):
    if c["marks"] < 2 or c["texts"] < 3:
        sys.exit(f"check_html: {kind}: chart {i + 1} is empty ({c})")
if "<table" not in dom:
    sys.exit(f"check_html: {kind}: no table")
if re.search(r'(src|href)="https?://', dom):
    sys.exit(f"check_html: {kind}: the page fetches from the network")
print(f"check_html: {kind}: {len(p.charts)} chart(s), marks per chart "
      f"{[c['marks'] for c in p.charts]}, screenshot {kind}.png")
PY
done
if [ "$DOCS" = 1 ] && [ "$fail" = 0 ]; then
  mkdir -p docs/img
  for kind in steps analyze gate diff; do
    cp "$OUT/$kind.png" "docs/img/report-$kind.png"
  done
  echo "check_html: screenshots copied to docs/img/"
fi
[ "$fail" = 0 ] && echo "check_html: all pages ok" || { echo "check_html: FAILED" >&2; exit 1; }
