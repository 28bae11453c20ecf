#!/usr/bin/env bash
# Reads a dataset written by `stepgate export` with DuckDB (installed from PyPI) and checks
# row counts and sums against stepgate's own `steps --format json` for the same reports,
# then runs the DuckDB queries of docs/dataset.md on it. Then the same counts with PySpark in
# local mode if it installs (it needs Java), else says it skipped.
#
# Usage: scripts/check_dataset.sh            (builds the debug binaries if missing)
# Env:   STEPGATE_BIN_DIR=target/release     to use other binaries
#        CHECK_DATASET_SPARK=0               to skip the PySpark part
set -euo pipefail
cd "$(dirname "$0")/.."

bin_dir="${STEPGATE_BIN_DIR:-target/debug}"
if [ ! -x "$bin_dir/stepgate" ] || [ ! -x "$bin_dir/stepgate-synth" ]; then
  cargo build --locked --bins --features synth
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# A plain install, else per user, else past a distribution's "externally managed" guard
# (PEP 668: Debian's own python3 refuses the first two).
python3 -m pip install --quiet --disable-pip-version-check duckdb >/dev/null 2>&1 ||
  python3 -m pip install --quiet --disable-pip-version-check --user duckdb >/dev/null 2>&1 ||
  python3 -m pip install --quiet --disable-pip-version-check --user --break-system-packages duckdb

# Two generated runs (different sizes, two TP ranks in the second), two labels.
"$bin_dir/stepgate-synth" workload --steps 40 --kernels 48 -o "$work/a.sqlite" >/dev/null 2>&1
"$bin_dir/stepgate-synth" workload --steps 25 --kernels 64 --ranks 2 -o "$work/b.sqlite" >/dev/null 2>&1
"$bin_dir/stepgate" export "$work/a.sqlite" -o "$work/ds" --label branch=main --label git_sha=aaa
"$bin_dir/stepgate" export "$work/b.sqlite" -o "$work/ds" --label branch=pr --label git_sha=bbb
# A GPU name longer than a file name allows: its partition is cut with a hash suffix. The
# name is the report's own (a copy of a.sqlite whose TARGET_INFO_GPU row names it): --gpu
# takes only the presets.
long_gpu="NVIDIA H100 $(printf 'very long part name %.0s' $(seq 20))"
cp "$work/a.sqlite" "$work/a_long.sqlite"
python3 - "$work/a_long.sqlite" "$long_gpu" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("UPDATE TARGET_INFO_GPU SET name = ?", (sys.argv[2],))
db.commit()
PY
"$bin_dir/stepgate" export "$work/a_long.sqlite" -o "$work/ds_long" >/dev/null
"$bin_dir/stepgate" steps "$work/a.sqlite" --format json >"$work/a.json"
"$bin_dir/stepgate" steps "$work/b.sqlite" --format json >"$work/b.json"

python3 - "$work" "$long_gpu" <<'EOF'
import json, sys
import duckdb

work = sys.argv[1]
ds = f"{work}/ds"
reports = [json.load(open(f"{work}/{n}.json")) for n in ("a", "b")]
steps = [s for r in reports for s in r["steps"]]
exp = {
    "runs": 2,
    "steps": len(steps),
    "busy_ns": sum(s["busy_ns"] for s in steps),
    "wall_ns": sum(s["wall_ns"] or 0 for s in steps),
    "gap_ns": sum(s["gap_ns"] or 0 for s in steps),
    "launches": sum(s["launches"] for s in steps),
    "excl_ns": sum(c["exclusive_ns"] for s in steps for c in s["categories"]),
    "instances": sum(c["instances"] for s in steps for c in s["categories"]),
    "devices": len({(i, s["device"]) for i, r in enumerate(reports) for s in r["steps"]}),
}
con = duckdb.connect()
for t in ["runs", "steps", "step_kernels", "kernels", "devices"]:
    con.execute(
        f"CREATE VIEW {t} AS SELECT * FROM read_parquet('{ds}/{t}/**/*.parquet', "
        "hive_partitioning = true, union_by_name = true)"
    )
one = lambda q: con.execute(q).fetchone()[0]
got = {
    "runs": one("SELECT count(*) FROM runs"),
    "steps": one("SELECT count(*) FROM steps"),
    "busy_ns": one("SELECT sum(busy_ns) FROM steps"),
    "wall_ns": one("SELECT sum(wall_ns) FROM steps"),
    "gap_ns": one("SELECT sum(gap_ns) FROM steps"),
    "launches": one("SELECT sum(launches) FROM steps"),
    "excl_ns": one("SELECT sum(exclusive_ns) FROM step_kernels"),
    "instances": one("SELECT sum(instances) FROM step_kernels"),
    "devices": one("SELECT count(*) FROM devices"),
}
got_k = one("SELECT sum(exclusive_ns) FROM kernels")
got_dev_busy = one("SELECT sum(step_busy_ns) FROM devices")
bad = [k for k in exp if exp[k] != got[k]]
if got_k != exp["excl_ns"]:
    bad.append("kernels.exclusive_ns")
if got_dev_busy != exp["busy_ns"]:
    bad.append("devices.step_busy_ns")
# Every table joins to runs, and the run ids of each table are the two runs.
for t in ["steps", "step_kernels", "kernels", "devices"]:
    n = one(f"SELECT count(DISTINCT run_id) FROM {t} WHERE run_id IN (SELECT run_id FROM runs)")
    if n != 2:
        bad.append(f"{t}.run_id")
# Hive partition columns come from the paths; per-step column types are integers.
types = dict(con.execute("SELECT column_name, column_type FROM (DESCRIBE steps)").fetchall())
for c in ["wall_ns", "busy_ns", "gap_ns", "launches", "index"]:
    if types.get(c) != "BIGINT":
        bad.append(f"steps.{c} is {types.get(c)}")
if "gpu" not in types or "model" not in types:
    bad.append("hive columns gpu/model")
print("duckdb", duckdb.__version__, "expected", exp)
print("duckdb", duckdb.__version__, "read    ", got)
if bad:
    sys.exit(f"check_dataset: DuckDB disagrees with stepgate's JSON on: {', '.join(bad)}")

# The docs' DuckDB queries run on this dataset (the kernel is one the generator writes).
cand = one("SELECT run_id FROM runs WHERE json_extract_string(labels, '$.branch') = 'pr'")
doc = open("docs/dataset.md").read().split("## The three questions in DuckDB")[1]
sql = doc.split("```sql")[1].split("```")[0]
sql = sql.replace("'history/", f"'{ds}/").replace("0123456789abcdef", cand)
sql = sql.replace("%fused_moe%", "%gemm%").replace("%h100%", "%")
stmts = []
for s in sql.split(";"):
    body = "\n".join(l for l in s.splitlines() if not l.strip().startswith("--")).strip()
    if body:
        stmts.append(body)
doc_con = duckdb.connect()
results = [doc_con.execute(s).fetchall() for s in stmts]
q1, q2, q3 = results[-3:]
if not (len(q1) == 2 and len(q2) == 1 and len(q3) >= 1):
    sys.exit(f"check_dataset: the docs' DuckDB queries gave {len(q1)}, {len(q2)}, {len(q3)} rows")
print("duckdb: docs/dataset.md queries ran:", len(q1), len(q2), len(q3), "rows")
print("check_dataset: DuckDB counts and sums equal stepgate's JSON")
# The hash-shortened partition reads as a hive column; the full name is in runs.gpu_name,
# and the per-step JSON text columns parse.
long_gpu = sys.argv[2]
row = con.execute(
    f"SELECT gpu, gpu_name FROM read_parquet('{work}/ds_long/runs/**/*.parquet', hive_partitioning = true)"
).fetchone()
if not (row[1] == long_gpu and len("gpu=" + row[0]) <= 255 and row[0].startswith("nvidia-h100-very-long")):
    sys.exit(f"check_dataset: long GPU partition read back as {row}")
n = one(f"SELECT count(*) FROM steps WHERE json_array_length(top_kernels) > 0 AND json_array_length(categories) > 0")
if n != exp["steps"]:
    sys.exit(f"check_dataset: {n} of {exp['steps']} steps have parseable top_kernels/categories JSON")
print("check_dataset: a 255-byte partition name and the JSON text columns read back")
json.dump(exp, open(f"{work}/expected.json", "w"))
EOF

# The same dataset on object storage: exported to a bucket on a local S3 server (moto's, on
# 127.0.0.1 only, explicit test keys and endpoint) and read back by polars and pyarrow, each
# joining the tables to `runs` on (run_id, export_id) as docs/dataset.md says a reader must.
# DuckDB's httpfs and Spark's s3a need downloads CI cannot make: they are checked above on a
# local path. Without moto this part skips, unless STEPGATE_REQUIRE_S3=1 (.ci/run).
check_s3() {
moto_venv="${STEPGATE_MOTO_VENV:-$HOME/.cache/stepgate/moto-venv}"
if [ ! -x "$moto_venv/bin/moto_server" ] || ! "$moto_venv/bin/python" -c 'import polars, pyarrow' 2>/dev/null; then
  if [ "${STEPGATE_REQUIRE_S3:-0}" = 1 ]; then
    echo "check_dataset: STEPGATE_REQUIRE_S3=1 but $moto_venv lacks moto_server, polars or pyarrow" >&2
    exit 1
  fi
  echo "check_dataset: object-storage readers skipped (no moto_server, polars and pyarrow in $moto_venv)"
  return 0
fi
port="$("$moto_venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
"$moto_venv/bin/moto_server" -H 127.0.0.1 -p "$port" >/dev/null 2>&1 &
moto_pid=$!
trap 'kill "$moto_pid" 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 100); do
  "$moto_venv/bin/python" -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null && break
  sleep 0.2
done
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 \
  AWS_ENDPOINT_URL="http://127.0.0.1:$port" AWS_ALLOW_HTTP=true AWS_EC2_METADATA_DISABLED=true
"$moto_venv/bin/python" -c "import urllib.request as u; u.urlopen(u.Request('http://127.0.0.1:$port/sg-check', method='PUT'))"
"$bin_dir/stepgate" export "$work/a.sqlite" -o s3://sg-check/ds --label branch=main >/dev/null
"$bin_dir/stepgate" export "$work/b.sqlite" -o s3://sg-check/ds --label branch=pr >/dev/null
"$moto_venv/bin/python" - "$work" "$port" <<'PY'
import json, sys
import polars as pl
import pyarrow.dataset as pads
import pyarrow.fs as pafs

work, port = sys.argv[1], sys.argv[2]
reports = [json.load(open(f"{work}/{n}.json")) for n in ("a", "b")]
steps = [s for r in reports for s in r["steps"]]
want = (2, len(steps), sum(s["busy_ns"] for s in steps))

opts = {"aws_access_key_id": "test", "aws_secret_access_key": "test", "aws_region": "us-east-1",
        "aws_endpoint_url": f"http://127.0.0.1:{port}", "aws_allow_http": "true"}
scan = lambda t: pl.scan_parquet(f"s3://sg-check/ds/{t}/**/*.parquet", storage_options=opts,
                                 hive_partitioning=True)
runs = scan("runs").select("run_id", "export_id").collect()
st = scan("steps").join(runs.lazy(), on=["run_id", "export_id"]).collect()
got = (runs.height, st.height, st["busy_ns"].sum())
assert got == want, f"polars: {got} != {want}"

fs = pafs.S3FileSystem(access_key="test", secret_key="test", region="us-east-1",
                       endpoint_override=f"127.0.0.1:{port}", scheme="http")
tab = lambda t: pads.dataset(f"sg-check/ds/{t}", filesystem=fs, format="parquet",
                             partitioning="hive").to_table()
# pyarrow reads these strings as string_view, which its join does not take: the semi
# join is a set of committed (run_id, export_id) pairs.
r = tab("runs")
committed = set(zip(r.column("run_id").to_pylist(), r.column("export_id").to_pylist()))
s = tab("steps")
keep = [k in committed for k in zip(s.column("run_id").to_pylist(), s.column("export_id").to_pylist())]
busy = s.column("busy_ns").to_pylist()
got = (r.num_rows, sum(keep), sum(b for b, k in zip(busy, keep) if k))
assert got == want, f"pyarrow: {got} != {want}"
print(f"check_dataset: polars and pyarrow read s3://sg-check/ds on a local S3 server: "
      f"{want[0]} runs, {want[1]} steps, busy_ns sum {want[2]} as `steps --format json` says")
PY
}
check_s3

if [ "${CHECK_DATASET_SPARK:-1}" = "0" ]; then
  echo "check_dataset: PySpark skipped (CHECK_DATASET_SPARK=0)"
  exit 0
fi
if ! command -v java >/dev/null 2>&1; then
  echo "check_dataset: PySpark skipped (no java on PATH)"
  exit 0
fi
if ! python3 -c 'import pyspark' 2>/dev/null; then
  if ! python3 -m pip install --quiet --disable-pip-version-check pyspark >/dev/null 2>&1; then
    echo "check_dataset: PySpark skipped (pip install pyspark failed)"
    exit 0
  fi
fi
python3 - "$work" <<'EOF' || { echo "check_dataset: PySpark check FAILED"; exit 1; }
import json, sys
from pyspark.sql import SparkSession

work = sys.argv[1]
ds = f"{work}/ds"
exp = json.load(open(f"{work}/expected.json"))
spark = (SparkSession.builder.master("local[1]").appName("check_dataset")
         .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
for t in ["runs", "steps", "step_kernels"]:
    (spark.read.option("basePath", f"{ds}/{t}").option("mergeSchema", "true")
        .parquet(f"{ds}/{t}").createOrReplaceTempView(t))
row = spark.sql("""SELECT (SELECT count(*) FROM runs) AS runs, count(*) AS steps,
                   sum(busy_ns) AS busy_ns, sum(wall_ns) AS wall_ns FROM steps""").first()
excl = spark.sql("SELECT sum(exclusive_ns) FROM step_kernels").first()[0]
got = {"runs": row.runs, "steps": row.steps, "busy_ns": row.busy_ns, "wall_ns": row.wall_ns,
       "excl_ns": excl}
bad = [k for k in got if got[k] != exp[k]]
print("pyspark", spark.version, "read", got)
# The docs' Spark SQL and PySpark examples run on this dataset.
doc = open("docs/dataset.md").read().split("## The same in Spark SQL / PySpark")[1]
sql = doc.split("```sql")[1].split("```")[0]
sql = sql.replace("%fused_moe%", "%gemm%").replace("%h100%", "%")
rows = []
for stmt in sql.split(";"):
    body = "\n".join(l for l in stmt.splitlines() if not l.strip().startswith("--")).strip()
    if body:
        rows.append(len(spark.sql(body).collect()))
cand = spark.sql("SELECT run_id FROM runs WHERE get_json_object(labels, '$.branch') = 'pr'").first()[0]
# The DataFrame-API example is the Python block that uses spark.table (not the polars one).
py3 = next(b.split("```")[0] for b in doc.split("```python")[1:] if "spark.table" in b)
py3 = py3.replace("0123456789abcdef", cand)
from pyspark.sql import functions as F, Window
exec(py3, {"spark": spark, "F": F, "Window": Window})
if rows != [2, 1]:
    bad.append(f"docs Spark SQL rows {rows}")
spark.stop()
if bad:
    sys.exit(f"check_dataset: Spark disagrees with stepgate's JSON on: {', '.join(bad)}")
print("check_dataset: Spark (local mode) counts and sums equal stepgate's JSON")
EOF

