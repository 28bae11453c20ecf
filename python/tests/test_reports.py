"""Every function's `.report` equals the CLI's `--format json` on the same input, and its
tables hold the report's rows: row counts, sums, and the identities the report states."""

from __future__ import annotations

import pytest

import stepgate
from conftest import (
    EXAMPLE_BASELINE,
    EXAMPLE_SQLITE,
    KINETO_SGLANG,
    NSYS_FASTVIDEO,
    NSYS_SAXPY,
    cli,
    cli_json,
)

pl = pytest.importorskip("polars")


@pytest.mark.parametrize(
    "report, flags, argv",
    [
        (KINETO_SGLANG, {"model": "qwen3-8b", "gpu": "mi300x"}, ["--model", "qwen3-8b", "--gpu", "mi300x"]),
        (EXAMPLE_SQLITE, {"top": 3}, ["--top", "3"]),
        (NSYS_SAXPY, {"threads": 2}, ["--threads", "2"]),
    ],
)
def test_steps_report_and_tables(report, flags, argv):
    r = stepgate.steps(report, **flags)
    assert r.report == cli_json("steps", report, *argv)
    steps = pl.DataFrame(r.steps)
    assert steps.height == len(r.report["steps"]) > 0
    assert steps["busy_ns"].sum() == sum(s["busy_ns"] for s in r.report["steps"])
    assert steps["index"].to_list() == [s["index"] for s in r.report["steps"]]
    kernels = pl.DataFrame(r.kernels)
    assert kernels.height == sum(len(s["top_kernels"]) for s in r.report["steps"])
    # A step's top kernels never take more exclusive time than the step's GPU busy time.
    per_step = kernels.group_by("step").agg(pl.col("exclusive_ns").sum())
    busy = dict(zip(steps["index"].to_list(), steps["busy_ns"].to_list()))
    for step, excl in per_step.iter_rows():
        assert excl <= busy[step]
    classes = pl.DataFrame(r.classes) if r.classes.num_rows else None
    n_classes = sum(len(g["classes"]) for g in r.report.get("groups", []))
    assert r.classes.num_rows == n_classes
    if classes is not None:
        assert classes["group"].n_unique() == len(r.report["groups"])


@pytest.mark.parametrize("report", [NSYS_FASTVIDEO, NSYS_SAXPY, KINETO_SGLANG])
def test_analyze_report_and_tables(report):
    r = stepgate.analyze(report)
    assert r.report == cli_json("analyze", report)
    devices = pl.DataFrame(r.devices)
    kernels = pl.DataFrame(r.kernels)
    assert devices.height == len(r.report["devices"]) > 0
    assert kernels.height == sum(len(d["kernels_by_name"]) for d in r.report["devices"])
    for d in r.report["devices"]:
        mine = kernels.filter(pl.col("device") == d["device"])
        # Every GPU op (kernel, memcpy, memset) is one instance of a name: they add up to ops.
        assert mine["instances"].sum() == d["ops"]
        # Exclusive time is the busy time split between names: it adds up to busy_ns, and
        # the plain total (overlap counted twice) is never below it.
        assert mine["exclusive_ns"].sum() == d["busy_ns"]
        assert mine["total_ns"].sum() >= d["busy_ns"]


def test_floor_and_capacity_equal_the_cli():
    f = stepgate.floor(model="llama-3-8b", gpu="h100-sxm", batch=32, context=2048)
    assert f.report == cli_json("floor", "--model", "llama-3-8b", "--gpu", "h100-sxm",
                                "--batch", "32", "--context", "2048")
    c = stepgate.capacity(model="llama-3-8b", gpu="h100-sxm", weights_gb=15.01, params_b=7.5,
                          kv_pool_tokens=428569, fleet_rps=240)
    assert c.report == cli_json("capacity", "--model", "llama-3-8b", "--gpu", "h100-sxm",
                                "--weights-gb", "15.01", "--params-b", "7.5",
                                "--kv-pool-tokens", "428569", "--fleet-rps", "240")


def test_gate_pass_markdown_and_tables(tmp_path):
    r = stepgate.gate(EXAMPLE_SQLITE, baseline=EXAMPLE_BASELINE)
    md = tmp_path / "gate.md"
    code, _, err = cli("gate", EXAMPLE_SQLITE, "--baseline", EXAMPLE_BASELINE, "--markdown", md)
    assert (r.exit_code, r.passed) == (code, True) == (0, True), err
    assert r.markdown == md.read_text()
    assert r.markdown.startswith("### ✅ Pass")
    assert r.report == cli_json("gate", EXAMPLE_SQLITE, "--baseline", EXAMPLE_BASELINE)
    assert r.verdict == r.report["verdict"]
    groups = r.report["groups"]
    assert r.rows.num_rows == sum(len(g["metrics"]) for g in groups) > 0
    assert r.kernels.num_rows == sum(len(g["kernels"]) for g in groups)
    wf = pl.DataFrame(r.waterfall)
    assert wf.height == sum(len(g["waterfall"]) for g in groups)
    assert set(wf["group"].unique()) <= {g["label"] for g in groups}


def test_gate_incomparable_exit_code_equals_the_cli():
    # A Kineto MI300X capture against an H100 baseline: the CLI's incomparable, exit 6.
    r = stepgate.gate(KINETO_SGLANG, baseline=EXAMPLE_BASELINE)
    code, out, _ = cli("gate", KINETO_SGLANG, "--baseline", EXAMPLE_BASELINE, "--format", "json")
    assert r.exit_code == code == 6
    assert r.verdict == "incomparable"
    import json

    assert r.report == json.loads(out)


def test_diff_equals_the_cli(tmp_path):
    md = tmp_path / "diff.md"
    r = stepgate.diff(EXAMPLE_BASELINE, EXAMPLE_SQLITE, verdict=True)
    code, _, err = cli("diff", EXAMPLE_BASELINE, EXAMPLE_SQLITE, "--verdict", "--markdown", md)
    assert r.exit_code == code, err
    assert r.markdown == md.read_text()
    assert r.report == cli_json("diff", EXAMPLE_BASELINE, EXAMPLE_SQLITE, "--verdict", expect=code)


def test_doctor_equals_the_cli():
    r = stepgate.doctor(EXAMPLE_SQLITE)
    code, out, _ = cli("doctor", EXAMPLE_SQLITE, "--format", "json")
    import json

    assert (r.exit_code, r.report) == (code, json.loads(out))
    assert r.passed == (code == 0)
    assert r.findings.num_rows == len(r.report["findings"])


def test_export_then_history_tables(tmp_path):
    ds = tmp_path / "history"
    e = stepgate.export(EXAMPLE_SQLITE, output=ds, label={"branch": "main"})
    s = stepgate.steps(EXAMPLE_SQLITE)
    h = stepgate.history(ds)
    assert set(h) == {"runs", "steps", "step_kernels", "kernels", "devices"}
    runs = pl.DataFrame(h["runs"])
    assert runs.height == 1 and runs["run_id"].to_list() == [e.run_id]
    for table, n in e.rows.items():
        assert h[table].num_rows == n, table
    # The dataset's steps are the steps `steps` finds on the same report.
    assert h["steps"].num_rows == s.steps.num_rows
    hs = pl.DataFrame(h["steps"])
    assert hs["busy_ns"].sum() == pl.DataFrame(s.steps)["busy_ns"].sum()
    # A second export of another run: two runs, the CLI's export refuses a duplicate.
    stepgate.export(EXAMPLE_SQLITE, output=ds, label={"branch": "pr"})
    assert stepgate.history(ds)["runs"].num_rows == 2
    with pytest.raises(stepgate.StepgateError) as dup:
        stepgate.export(EXAMPLE_SQLITE, output=ds, label={"branch": "pr"})
    code, _, _ = cli("export", EXAMPLE_SQLITE, "-o", ds, "--label", "branch=pr")
    assert dup.value.exit_code == code != 0
