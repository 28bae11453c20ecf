#!/usr/bin/env python3
"""Exposed communication per step, computed apart from stepgate, for a Kineto trace.

For each step stepgate finds (its device and GPU window, from `stepgate steps --format
json`), take the trace's GPU ops (kernel, gpu_memcpy, gpu_memset) on that device inside
the window, straight from the JSON, and print the union of all of them minus the union of
those that are not NCCL/RCCL collectives: the time in which only communication runs. The
values in tests/it/gate_metrics.rs were printed by this script.

usage: scripts/exposed_comm_reference.py STEPGATE TRACE.json.gz
"""
import gzip
import json
import subprocess
import sys


def us_to_ns(x):
    # The integer and fractional microseconds apart, as Kineto writes three decimals.
    whole = int(x)
    return whole * 1000 + round((x - whole) * 1000)


def union(iv):
    total, cur = 0, None
    for s, e in sorted(iv):
        if cur and s <= cur[1]:
            cur = (cur[0], max(cur[1], e))
        else:
            if cur:
                total += cur[1] - cur[0]
            cur = (s, e)
    return total + (cur[1] - cur[0] if cur else 0)


def main():
    exe, trace = sys.argv[1], sys.argv[2]
    out = subprocess.run([exe, "steps", trace, "--format", "json"], capture_output=True, check=True)
    steps = json.loads(out.stdout)["steps"]
    t = json.load(gzip.open(trace))
    events = t["traceEvents"] if isinstance(t, dict) else t
    ops = []
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            s = us_to_ns(float(e["ts"]))
            n = e["name"].lower()
            ops.append((s, s + us_to_ns(float(e["dur"])), e.get("args", {}).get("device"),
                        "nccl" in n or "rccl" in n))
    for st in steps:
        a, b, dev = st["gpu_start_ns"], st["gpu_end_ns"], st["device"]
        mine = [o for o in ops if o[2] == dev and o[0] >= a and o[1] <= b]
        busy = union([(o[0], o[1]) for o in mine])
        rest = union([(o[0], o[1]) for o in mine if not o[3]])
        print(f"step {st['index']}: exposed communication {busy - rest} ns")


if __name__ == "__main__":
    main()
