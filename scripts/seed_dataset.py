#!/usr/bin/env python3
"""Seed a large run history fast, for scripts/bench_dataset.sh: clone the one run a real
`stepgate export` wrote into N runs, each under its own labels (branch=main, i=1..N), with
the run id, export id and object names stepgate would give them (docs/dataset.md), then
optionally upload the directory to an S3 server with the object names kept.

  seed_dataset.py clone TEMPLATE_DS OUT_DS N [--plain-names]
  seed_dataset.py upload DS BUCKET PREFIX ENDPOINT

`--plain-names` names the runs objects `run-<id>.parquet`, as stepgate did before the label
digests, so one binary can be timed on both layouts. Needs pyarrow (and boto3 to upload):
the moto virtualenv `.ci/run` makes has both. A benchmark tool, not a writer of histories.
"""

import concurrent.futures
import glob
import hashlib
import json
import os
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq

TABLES = ["steps", "step_kernels", "kernels", "devices"]


def run_id(report_sha, labels):
    h = hashlib.sha256(report_sha.encode())
    for k in sorted(labels):
        h.update(b"\0" + f"{k}={labels[k]}".encode())
    return h.hexdigest()[:16]


def digests(labels):
    if len(labels) > 8:
        return None
    return "".join(hashlib.sha256(f"{k}={labels[k]}".encode()).hexdigest()[:8] for k in sorted(labels))


def with_ids(table, rid, eid, extra=None):
    cols = {"run_id": rid, "export_id": eid, **(extra or {})}
    for name, value in cols.items():
        i = table.schema.get_field_index(name)
        table = table.set_column(i, table.schema.field(i), pa.array([value] * table.num_rows, table.schema.field(i).type))
    return table


def clone(template, out, n, plain):
    runs = glob.glob(f"{template}/runs/*/*/run-*.parquet")
    if len(runs) != 1:
        sys.exit(f"seed_dataset: {template} must hold exactly one run, holds {len(runs)}")
    part = os.path.relpath(os.path.dirname(runs[0]), f"{template}/runs")
    run = pq.read_table(runs[0])
    eid0 = run.column("export_id")[0].as_py()
    data = {t: pq.read_table(glob.glob(f"{template}/{t}/{part}/run-*-{eid0}.parquet")[0]) for t in TABLES}
    sha = run.column("report_sha256")[0].as_py()
    t0 = run.column("exported_at_ns")[0].as_py()
    for t in TABLES + ["runs"]:
        os.makedirs(f"{out}/{t}/{part}", exist_ok=True)
    for i in range(1, n + 1):
        labels = {"branch": "main", "i": str(i)}
        rid = run_id(sha, labels)
        eid = hashlib.sha256(f"seed {i}".encode()).hexdigest()[:16]
        for t in TABLES:
            pq.write_table(with_ids(data[t], rid, eid), f"{out}/{t}/{part}/run-{rid}-{eid}.parquet", compression="zstd")
        d = digests(labels)
        name = f"run-{rid}.parquet" if plain or d is None else f"run-{rid}.l{d}.parquet"
        row = with_ids(run, rid, eid, {"labels": json.dumps(labels, separators=(",", ":")), "exported_at_ns": t0 + i})
        pq.write_table(row, f"{out}/runs/{part}/{name}", compression="zstd")


def upload(ds, bucket, prefix, endpoint):
    import boto3

    s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    keys = []
    for root, _, files in os.walk(ds):
        for f in files:
            keys.append(os.path.relpath(os.path.join(root, f), ds))
    # The runs objects last, in commit order, so the store's last-modified times order them
    # as exports would.
    keys.sort(key=lambda k: (k.startswith("runs/"), k))
    data = [k for k in keys if not k.startswith("runs/")]
    runs = [k for k in keys if k.startswith("runs/")]

    def put(k):
        with open(os.path.join(ds, k), "rb") as fh:
            s3.put_object(Bucket=bucket, Key=f"{prefix}/{k}", Body=fh.read())

    t = time.time()
    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        list(ex.map(put, data))
        list(ex.map(put, runs))
    print(f"seed_dataset: uploaded {len(keys)} objects in {time.time() - t:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[:1] == ["clone"] and len(a) >= 4:
        clone(a[1], a[2], int(a[3]), "--plain-names" in a[4:])
    elif a[:1] == ["upload"] and len(a) == 5:
        upload(*a[1:])
    else:
        sys.exit(__doc__)
