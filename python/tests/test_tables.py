"""The tables through the Arrow PyCapsule interface: polars, pyarrow, pandas read the same rows."""

from __future__ import annotations

import pytest

import stepgate
from conftest import EXAMPLE_SQLITE, NSYS_FASTVIDEO

pl = pytest.importorskip("polars")
pa = pytest.importorskip("pyarrow")


def test_polars_pyarrow_and_pandas_agree():
    r = stepgate.steps(EXAMPLE_SQLITE)
    via_polars = pl.DataFrame(r.steps)
    via_arrow = pa.table(r.steps)
    via_pandas = r.steps.to_pandas()
    n = len(r.report["steps"])
    assert via_polars.height == via_arrow.num_rows == len(via_pandas) == len(r.steps) == n
    assert via_polars.columns == via_arrow.column_names == list(via_pandas.columns)
    assert via_polars.columns == r.steps.column_names
    busy = [s["busy_ns"] for s in r.report["steps"]]
    assert via_polars["busy_ns"].to_list() == via_arrow["busy_ns"].to_pylist() == busy
    assert via_pandas["busy_ns"].tolist() == busy
    assert r.steps.to_polars().equals(via_polars)


def test_types_follow_the_json():
    r = stepgate.analyze(NSYS_FASTVIDEO)
    k = pl.DataFrame(r.kernels)
    assert k.schema["name"] == pl.String
    assert k.schema["instances"] == pl.Int64
    assert k.schema["mean_ns"] == pl.Float64
    assert k.schema["device"] == pl.Int64
    # A nested object is flattened to parent.child columns; arrays stay in .report.
    d = pl.DataFrame(r.devices)
    assert "kernels_by_name" not in d.columns and "processes" not in d.columns


def test_a_stream_is_read_once_per_capsule_and_tables_can_be_read_again():
    r = stepgate.analyze(NSYS_FASTVIDEO)
    first = pl.DataFrame(r.kernels)
    second = pl.DataFrame(r.kernels)
    assert first.equals(second)


def test_steps_of_several_captures_into_one_frame():
    frames = []
    for p in [EXAMPLE_SQLITE, NSYS_FASTVIDEO]:
        frames.append(pl.DataFrame(stepgate.steps(p).steps).with_columns(capture=pl.lit(p.name)))
    all_steps = pl.concat(frames, how="diagonal_relaxed")
    assert all_steps.height == sum(f.height for f in frames)
    assert all_steps["capture"].n_unique() == 2


def test_the_gil_is_released_while_stepgate_works():
    # With a switch interval of 1000 s this thread runs again only when the worker gives
    # the GIL up by itself: if the Rust call kept it, the worker would be done by then.
    import sys
    import threading

    state = {"done": False}
    started = threading.Event()

    def work():
        started.set()
        stepgate.analyze(NSYS_FASTVIDEO)
        state["done"] = True

    old = sys.getswitchinterval()
    sys.setswitchinterval(1000)
    try:
        t = threading.Thread(target=work)
        t.start()
        started.wait()
        seen_while_running = not state["done"]
        t.join()
    finally:
        sys.setswitchinterval(old)
    assert seen_while_running and state["done"]
