#!/usr/bin/env python3
"""Build a big Kineto trace by replicating a real fixture in time (for scripts/bench_kineto.sh).

Each copy of the fixture's traceEvents is shifted by the fixture's span plus a 1 ms gap;
correlation, External id and flow ids are offset per copy so that launches still pair with
their own kernels. ts/dur are written as Kineto writes them: microseconds with exactly
three decimals (libkineto output_json.cpp fmtTs), so the nanoseconds survive. The output is
streamed event by event (never held in memory) and gzipped when the name ends in .gz.

usage: replicate_kineto.py FIXTURE.json[.gz] OUT.json[.gz] [--target-bytes N]
"""

import argparse
import gzip
import json
import math
import sys



def us_to_ns(v):
    # Base-relative µs (< 2^43) round-trip exactly through a float at ns resolution.
    return int(round(float(v) * 1000))


def fmt_us(ns):
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    return f"{sign}{ns // 1000}.{ns % 1000:03d}"


def template(event):
    """The event serialised once, with placeholders for the per-copy fields."""
    e = dict(event)
    fields = {}
    if "ts" in e and isinstance(e["ts"], (int, float)):
        fields["ts"] = us_to_ns(e["ts"])
        e["ts"] = "@TS@"
    if "dur" in e and isinstance(e["dur"], (int, float)):
        e["dur"] = "@DUR@"
        fields["dur"] = us_to_ns(event["dur"])
    if isinstance(e.get("id"), int):
        fields["id"] = e["id"]
        e["id"] = "@ID@"
    args = e.get("args")
    if isinstance(args, dict):
        args = dict(args)
        for key, tag in (("correlation", "@CORR@"), ("External id", "@EXT@")):
            if isinstance(args.get(key), int):
                fields[key] = args[key]
                args[key] = tag
        e["args"] = args
    return json.dumps(e), fields


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("fixture")
    ap.add_argument("out")
    ap.add_argument("--target-bytes", type=int, default=1_000_000_000,
                    help="approximate uncompressed size (default 1e9)")
    a = ap.parse_args()

    opener = gzip.open if open(a.fixture, "rb").read(2) == b"\x1f\x8b" else open
    with opener(a.fixture, "rt") as f:
        doc = json.load(f)
    events = doc.pop("traceEvents")
    templates = [template(e) for e in events]
    starts = [f["ts"] for _, f in templates if "ts" in f]
    ends = [f["ts"] + f.get("dur", 0) for _, f in templates if "ts" in f]
    span_ns = max(ends) - min(starts) + 1_000_000
    id_stride = 10 ** (len(str(max(
        [v for _, f in templates for k, v in f.items() if k in ("correlation", "External id", "id")] + [1]
    ))) + 1)
    per_copy = sum(len(t) + 2 for t, _ in templates)
    copies = max(1, math.ceil(a.target_bytes / per_copy))

    out = gzip.open(a.out, "wt", compresslevel=6) if a.out.endswith(".gz") else open(a.out, "w")
    with out:
        out.write("{\n")
        for k, v in doc.items():
            if k != "traceName":
                out.write(f"  {json.dumps(k)}: {json.dumps(v)},\n")
        out.write('  "traceEvents": [\n')
        first = True
        for c in range(copies):
            shift = c * span_ns
            off = c * id_stride
            for text, f in templates:
                if "ts" in f:
                    text = text.replace('"@TS@"', fmt_us(f["ts"] + shift))
                if "dur" in f:
                    text = text.replace('"@DUR@"', fmt_us(f["dur"]))
                if "id" in f:
                    text = text.replace('"@ID@"', str(f["id"] + off))
                if "correlation" in f:
                    text = text.replace('"@CORR@"', str(f["correlation"] + off))
                if "External id" in f:
                    text = text.replace('"@EXT@"', str(f["External id"] + off))
                out.write(("  " if first else ",\n  ") + text)
                first = False
        out.write("\n  ],\n")
        out.write(f'  "traceName": {json.dumps(a.out)}\n}}\n')
    print(f"{a.out}: {copies} copies of {len(events)} events (~{copies * per_copy / 1e9:.2f} GB uncompressed)",
          file=sys.stderr)


if __name__ == "__main__":
    main()
