#!/usr/bin/env bash
# Open every kind of HTML report stepgate writes (steps, analyze, gate, diff, trend) in
# headless Chromium: take a screenshot of each at 1280 px, fail on any console message (the
# pages log nothing when healthy), check that the SVG charts are there with non-empty
# marks, and measure each page in the browser (a small script added to a copy of it):
#   - page height within a bound, and no table row taller than a few lines (a squeezed
#     column wraps one character per line);
#   - no chart card or table box wider than the page (nothing runs out of its card);
#   - every SVG text inside its chart (no legend entry or label clipped);
#   - no axis with two equal tick labels;
#   - no two legend entries of one chart with the same colour.
#
# Usage: scripts/check_html.sh [--docs] [--pages DIR]
#   --docs        also copy the screenshots to docs/img/ (the README and docs/reports.md
#                 use them)
#   --pages DIR   check the pages already in DIR (steps.html, analyze.html, …; those
#                 present) instead of building and writing them: e.g. pages an older
#                 build wrote, to see that the checks catch what it got wrong
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
PAGES=""
while [ $# -gt 0 ]; do
  case "$1" in
    --docs) DOCS=1 ;;
    --pages) PAGES=${2:?--pages needs a directory}; shift ;;
    *) echo "check_html: unknown argument $1" >&2; exit 1 ;;
  esac
  shift
done

# Page kinds, each with the height (px at 1280 px wide) it must stay under.
KINDS="steps steps-series analyze gate diff diff-same trend"
# (steps-series: the answer block — verdict, next, waterfall, ranked actions — opens the
# page above the tables it summarises.)
declare -A MAX_HEIGHT=([steps]=4000 [steps-series]=4700 [analyze]=5000 [gate]=5500 [diff]=5500
  [diff-same]=4500 [trend]=3000)
OUT=target/html-check

if [ -n "$PAGES" ]; then
  rm -rf "$OUT"
  mkdir -p "$OUT"
  for kind in $KINDS; do
    [ -f "$PAGES/$kind.html" ] && cp "$PAGES/$kind.html" "$OUT/$kind.html"
  done
else
  export CARGO_BUILD_JOBS=${CARGO_BUILD_JOBS:-1}
  # Through `cargo test`, not `cargo build`: a plain build resolves features without the
  # dev-dependencies and so recompiles polars (8 minutes of a 2-core CI run); this reuses
  # the graph `cargo test` built (3.5 minutes: the binaries and the test crate with synth).
  cargo test --locked --quiet --features synth --no-run
  BIN=target/debug/stepgate
  SYNTH=target/debug/stepgate-synth
  rm -rf "$OUT"
  mkdir -p "$OUT"
  # Real captures where a page can show one: an SGLang server decoding Qwen3-8B at batch 32
  # on an MI300X (Kineto; the step's annotation carries its batch, so the floor and the
  # roofline are priced for it) for steps, a two-GPU nsys export for analyze.
  "$BIN" steps tests/fixtures/kineto/sglang_mi300x_qwen3-8b_decode_step.json.gz \
    --model qwen3-8b --gpu mi300x --html "$OUT/steps.html" >/dev/null
  "$BIN" analyze tests/fixtures/nsys/fastvideo_h100_2gpu_nsys2026.2.sqlite --html "$OUT/analyze.html" >/dev/null
  # Generated captures where a page needs many steps: two vLLM workloads (the candidate
  # has 10% more kernels per step and eager launches) for gate and diff, a diff of one
  # capture with itself (equal walls: the narrowest axis), and a dataset of six runs for
  # trend.
  "$SYNTH" workload --steps 60 --kernels 400 --ranks 2 -o "$OUT/base.sqlite" >/dev/null
  "$SYNTH" workload --steps 60 --kernels 440 --ranks 2 --mode eager -o "$OUT/cand.sqlite" >/dev/null
  "$BIN" steps "$OUT/base.sqlite" --model qwen3-0.6b --html "$OUT/steps-series.html" >/dev/null
  "$BIN" baseline record "$OUT/base.sqlite" --model qwen3-0.6b -o "$OUT/base.json" >/dev/null
  # A regression is the expected verdict here (exit 1); anything else is a failure.
  set +e
  "$BIN" gate "$OUT/cand.sqlite" --baseline "$OUT/base.json" --model qwen3-0.6b --html "$OUT/gate.html" >/dev/null
  rc=$?
  set -e
  [ "$rc" = 1 ] || { echo "check_html: gate exited $rc, expected 1 (regression)" >&2; exit 1; }
  "$BIN" diff "$OUT/base.sqlite" "$OUT/cand.sqlite" --html "$OUT/diff.html" >/dev/null
  "$BIN" diff "$OUT/base.sqlite" "$OUT/base.sqlite" --html "$OUT/diff-same.html" >/dev/null
  for i in 1 2 3 4 5 6; do
    run="$OUT/base.sqlite"
    [ "$i" -ge 5 ] && run="$OUT/cand.sqlite"
    "$BIN" export "$run" -o "$OUT/dataset" --label "run=$i" >/dev/null 2>&1
  done
  "$BIN" trend "$OUT/dataset" --metric wall_ns --html "$OUT/trend.html" >/dev/null
fi

# The console check must be able to fail: a page with an error has to be caught.
printf '<!DOCTYPE html><p>x</p><script>nope();</script>' >"$OUT/broken.html"
"$BROWSER" --headless=new --no-sandbox --disable-gpu --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$PWD/$OUT/profile-broken" --enable-logging=stderr --v=0 \
  --virtual-time-budget=2000 --dump-dom "file://$PWD/$OUT/broken.html" \
  >/dev/null 2>"$OUT/broken.console.log" || true
if ! grep -qE 'CONSOLE|Uncaught' "$OUT/broken.console.log"; then
  echo "check_html: this browser does not report console errors on stderr; cannot check" >&2
  exit 1
fi

# Measured in the browser, on a copy of the page: the results go into a <pre> the DOM
# dump carries.
MEASURE=$(cat <<'JS'
<script>
(function () {
  var out = {height: document.documentElement.scrollHeight, overflow: [], tallRows: [],
             clipped: [], ticks: [], colours: []};
  var body = document.body, bs = getComputedStyle(body);
  var right = body.getBoundingClientRect().right - parseFloat(bs.paddingRight);
  var what = function (el) {
    var c = el.querySelector('caption, figcaption, text');
    return el.tagName.toLowerCase() + (c ? ' "' + c.textContent.trim().slice(0, 60) + '"' : '');
  };
  document.querySelectorAll('figure.chart, div.table, table').forEach(function (el) {
    var r = el.getBoundingClientRect();
    if (el.scrollWidth > el.clientWidth + 1 && el.tagName !== 'TABLE')
      out.overflow.push(what(el) + ': content ' + el.scrollWidth + ' px in a ' + el.clientWidth + ' px box');
    if (r.right > right + 1)
      out.overflow.push(what(el) + ': ends at ' + Math.round(r.right) + ' px, the page at ' + Math.round(right));
  });
  document.querySelectorAll('tr').forEach(function (tr) {
    var h = tr.getBoundingClientRect().height;
    if (h > 160) out.tallRows.push(Math.round(h) + ' px: ' + tr.textContent.trim().slice(0, 60));
  });
  document.querySelectorAll('svg').forEach(function (svg, i) {
    // Text boxes as the browser lays them out (rotated axis titles included), in the
    // chart's own units.
    var vb = svg.viewBox.baseVal, W = vb.width, H = vb.height, name = 'chart ' + (i + 1);
    var sr = svg.getBoundingClientRect(), k = W / sr.width;
    var title = svg.querySelector('text');
    if (title) name += ' "' + title.textContent.trim().slice(0, 50) + '"';
    var axes = {};
    svg.querySelectorAll('text').forEach(function (t) {
      var b = t.getBoundingClientRect(), s = t.textContent.trim();
      var x0 = (b.left - sr.left) * k, x1 = (b.right - sr.left) * k;
      var y0 = (b.top - sr.top) * k, y1 = (b.bottom - sr.top) * k;
      if (s && (x0 < -0.5 || y0 < -0.5 || x1 > W + 0.5 || y1 > H + 0.5))
        out.clipped.push(name + ': "' + s.slice(0, 50) + '" at x ' + Math.round(x0) + '…' + Math.round(x1) + ', y ' + Math.round(y0) + '…' + Math.round(y1) + ' of ' + W + '×' + H);
      if (/^[\u2212-]?[0-9][0-9,]*(\.[0-9]+)?$/.test(s)) {
        var a = t.getAttribute('text-anchor');
        var key = a === 'middle' ? 'x axis at y ' + t.getAttribute('y') : a === 'end' ? 'y axis at x ' + t.getAttribute('x') : null;
        if (key) (axes[key] = axes[key] || []).push(s);
      }
    });
    Object.keys(axes).forEach(function (k) {
      var l = axes[k];
      if (l.length >= 3 && new Set(l).size < l.length) out.ticks.push(name + ', ' + k + ': ' + l.join(' '));
    });
    var fills = [];
    svg.querySelectorAll('rect').forEach(function (r) {
      if (r.getAttribute('width') === '14' && r.getAttribute('height') === '14') fills.push(r.getAttribute('fill'));
    });
    if (new Set(fills).size < fills.length) out.colours.push(name + ': legend colours ' + fills.join(' '));
  });
  // The answer first: the verdict's top against the first table's and the window's.
  var a = document.querySelector('p.answer'), t = document.querySelector('table');
  out.answerTop = a ? Math.round(a.getBoundingClientRect().top) : null;
  out.tableTop = t ? Math.round(t.getBoundingClientRect().top) : null;
  var pre = document.createElement('pre');
  pre.id = 'stepgate-check';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
JS
)

fail=0
checked=""
for kind in $KINDS; do
  [ -f "$OUT/$kind.html" ] || continue
  checked="$checked $kind"
  page="$PWD/$OUT/$kind.html"
  python3 - "$page" "$OUT/$kind.measure.html" "$MEASURE" <<'PY'
import sys
page, out, script = sys.argv[1], sys.argv[2], sys.argv[3]
html = open(page, encoding="utf-8").read()
i = html.rfind("</body>")
open(out, "w", encoding="utf-8").write(html[:i] + script + html[i:])
PY
  # Headless Chromium as root needs --no-sandbox; a private profile keeps runs independent.
  flags=(--headless=new --no-sandbox --disable-gpu --hide-scrollbars --no-first-run
         --disable-background-networking --disable-component-update --disable-sync
         --user-data-dir="$PWD/$OUT/profile-$kind" --enable-logging=stderr --v=0)
  "$BROWSER" "${flags[@]}" --window-size=1280,2400 --screenshot="$PWD/$OUT/$kind.png" \
    "file://$page" 2>"$OUT/$kind.shot.log" >/dev/null || true
  "$BROWSER" "${flags[@]}" --window-size=1280,2400 --virtual-time-budget=2000 --dump-dom \
    "file://$PWD/$OUT/$kind.measure.html" >"$OUT/$kind.dom.html" 2>"$OUT/$kind.console.log" || true
  if grep -E 'CONSOLE|Uncaught' "$OUT/$kind.console.log" "$OUT/$kind.shot.log"; then
    echo "check_html: $kind: console messages (above)" >&2
    fail=1
  fi
  if [ ! -s "$OUT/$kind.png" ]; then
    echo "check_html: $kind: no screenshot" >&2
    fail=1
  fi
  python3 - "$OUT/$kind.dom.html" "$kind" "${MAX_HEIGHT[$kind]}" <<'PY' || fail=1
import html as htmllib, json, re, sys
from html.parser import HTMLParser

path, kind, max_height = sys.argv[1], sys.argv[2], int(sys.argv[3])
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

problems = []
p = Charts()
p.feed(dom)
if not p.charts:
    problems.append("no SVG chart in the page")
for i, c in enumerate(p.charts):
    if c["marks"] < 2 or c["texts"] < 3:
        problems.append(f"chart {i + 1} is empty ({c})")
if "<table" not in dom:
    problems.append("no table")
if re.search(r'(src|href)="https?://', dom):
    problems.append("the page fetches from the network")
m = re.search(r'<pre id="stepgate-check">(.*?)</pre>', dom, re.S)
if not m:
    problems.append("the measuring script did not run")
    r = {}
else:
    r = json.loads(htmllib.unescape(m.group(1)))
    if r["height"] > max_height:
        problems.append(f"page is {r['height']} px tall (at most {max_height})")
    # A steps page opens with its verdict: above the first table, in the first screen.
    if kind.startswith("steps") and 'class="answer"' in dom:
        at, tt = r.get("answerTop"), r.get("tableTop")
        if at is None or at > 700:
            problems.append(f"the verdict is not in the first screen (top {at} px)")
        elif tt is not None and at > tt:
            problems.append(f"the verdict ({at} px) comes after the first table ({tt} px)")
    for key, what in [("tallRows", "table row too tall"), ("overflow", "runs out of its card"),
                      ("clipped", "text clipped"), ("ticks", "repeated tick labels"),
                      ("colours", "two series share a colour")]:
        for x in r[key][:5]:
            problems.append(f"{what}: {x}")
        if len(r[key]) > 5:
            problems.append(f"{what}: … {len(r[key]) - 5} more")
for x in problems:
    print(f"check_html: {kind}: {x}", file=sys.stderr)
if problems:
    sys.exit(1)
print(f"check_html: {kind}: {len(p.charts)} chart(s), marks per chart "
      f"{[c['marks'] for c in p.charts]}, {r['height']} px tall, screenshot {kind}.png")
PY
done
[ -n "$checked" ] || { echo "check_html: no page to check" >&2; exit 1; }
if [ "$DOCS" = 1 ] && [ "$fail" = 0 ]; then
  mkdir -p docs/img
  for kind in steps analyze gate diff trend; do
    [ -f "$OUT/$kind.png" ] && cp "$OUT/$kind.png" "docs/img/report-$kind.png"
  done
  echo "check_html: screenshots copied to docs/img/"
fi
[ "$fail" = 0 ] && echo "check_html: all pages ok" || { echo "check_html: FAILED" >&2; exit 1; }
