"""From an nsys SQLite export to a per-kernel DataFrame: stepgate against pandas, one run each.

    python python/bench/bench_kernels.py REPORT.sqlite [--kineto TRACE.json]

Rows, in one run on the same machine and input:
  stepgate   stepgate.analyze(p, no_steps=True).kernels into polars: per device and kernel
             name, instances, total, mean/median/min/max and *exclusive* time (overlap
             resolved), the strings joined
  pandas     pandas.read_sql of the same tables (kernels + StringIds), joined and grouped
             per device and name: instances and total only (no exclusive time: pandas has
             no interval sweep, so it does less work than stepgate here)
Then the ratio, and a check that both agree on instances and total per name.

HTA reads Kineto traces, not nsys exports, so it is compared on a Kineto trace, in the same
run, with `--kineto TRACE` (scripts/replicate_kineto.py builds a big one from a real
fixture; the file must be alone in its directory, which HTA reads whole):
  stepgate   stepgate.analyze(trace, no_steps=True).kernels into polars (as above)
  HTA        TraceAnalysis(trace_dir).get_gpu_kernel_breakdown(): per kernel name sum,
             mean, min, max and stddev (the top names, the rest folded into "others")
Then the ratio, and both sides' total kernel time (HTA counts kernels only, not copies,
and rounds each kernel down to whole µs).
"""

from __future__ import annotations

import sqlite3
import sys
import time


def main() -> None:
    import pandas as pd
    import polars as pl

    import stepgate

    path = sys.argv[1]
    kineto = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--kineto" else None

    # Wall and CPU seconds (all threads of this process) per side: on a shared machine
    # the CPU time is the stable figure.
    t0, c0 = time.perf_counter(), time.process_time()
    sg = pl.DataFrame(stepgate.analyze(path, no_steps=True).kernels)
    t_sg, c_sg = time.perf_counter() - t0, time.process_time() - c0

    t0, c0 = time.perf_counter(), time.process_time()
    con = sqlite3.connect(path)
    k = pd.read_sql(
        "SELECT start, end, deviceId, demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL", con
    )
    names = pd.read_sql("SELECT id, value FROM StringIds", con)
    con.close()
    k = k.merge(names, left_on="demangledName", right_on="id")
    k["dur"] = k["end"] - k["start"]
    pd_frame = (
        k.groupby(["deviceId", "value"])["dur"].agg(["count", "sum"]).reset_index()
    )
    t_pd, c_pd = time.perf_counter() - t0, time.process_time() - c0

    kernels = int(pd_frame["count"].sum())
    # Both sides agree on what they both compute (memcpy/memset rows are stepgate's only).
    mine = sg.group_by("name").agg(pl.col("total_ns").sum(), pl.col("instances").sum())
    mine = {n: (t, c) for n, t, c in mine.iter_rows()}
    per_name = pd_frame.groupby("value")[["sum", "count"]].sum()
    theirs = {n: (int(r["sum"]), int(r["count"])) for n, r in per_name.iterrows()}
    agree = all(mine.get(n) == v for n, v in theirs.items())
    print(f"input: {path}: {kernels:,} kernels, {len(theirs):,} names")
    print(f"stepgate.analyze(p).kernels -> polars: {t_sg:.2f} s wall, {c_sg:.2f} s CPU ({sg.height:,} rows)")
    print(f"pandas read_sql + merge + groupby:     {t_pd:.2f} s wall, {c_pd:.2f} s CPU ({len(pd_frame):,} rows)")
    print(f"ratio pandas/stepgate: {t_pd / t_sg:.2f}x wall, {c_pd / c_sg:.2f}x CPU; totals per name agree: {agree}")
    if kineto:
        versus_hta(kineto)


def versus_hta(trace: str) -> None:
    """stepgate against HTA's kernel breakdown on one Kineto trace."""
    import os

    import polars as pl
    from hta.trace_analysis import TraceAnalysis

    import stepgate

    t0, c0 = time.perf_counter(), time.process_time()
    sg = pl.DataFrame(stepgate.analyze(trace, no_steps=True).kernels)
    t_sg, c_sg = time.perf_counter() - t0, time.process_time() - c0

    t0, c0 = time.perf_counter(), time.process_time()
    analysis = TraceAnalysis(trace_dir=os.path.dirname(os.path.abspath(trace)))
    _, hta = analysis.get_gpu_kernel_breakdown(visualize=False)
    t_hta, c_hta = time.perf_counter() - t0, time.process_time() - c0

    ops = int(sg["instances"].sum())
    print(f"input: {trace}: {ops:,} GPU ops, {sg.height:,} names")
    print(f"stepgate.analyze(trace).kernels -> polars: {t_sg:.2f} s wall, {c_sg:.2f} s CPU ({sg.height:,} rows)")
    print(f"HTA get_gpu_kernel_breakdown:             {t_hta:.2f} s wall, {c_hta:.2f} s CPU ({len(hta):,} rows)")
    kernels = sg.filter(pl.col("category") != "memory")
    mine, theirs = int(kernels["total_ns"].sum()) / 1000, float(hta["sum (us)"].sum())
    print(f"ratio HTA/stepgate: {t_hta / t_sg:.1f}x wall, {c_hta / c_sg:.1f}x CPU; kernel time: "
          f"stepgate {mine:,.0f} us ({int(kernels['instances'].sum()):,} kernels), HTA {theirs:,.0f} us")


if __name__ == "__main__":
    main()
