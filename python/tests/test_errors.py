"""Errors carry the CLI's exit code and its one-line message; warnings go through `warnings`."""

from __future__ import annotations

import os
import warnings

import pytest

import stepgate
from conftest import EXAMPLE_BASELINE, EXAMPLE_SQLITE, KINETO_SGLANG, cli, error_line


def test_garbage_file_is_exit_2_with_the_cli_message(tmp_path):
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a profiler capture\n" * 40)
    with pytest.raises(stepgate.StepgateError) as e:
        stepgate.steps(junk)
    code, _, err = cli("steps", junk)
    assert code == 2
    assert isinstance(e.value, stepgate.InputError)
    assert e.value.exit_code == 2
    assert e.value.message == str(e.value) == error_line(err)


def test_missing_baseline_and_bad_flag_values(tmp_path):
    missing = tmp_path / "nope.json"
    with pytest.raises(stepgate.InputError) as e:
        stepgate.gate(EXAMPLE_SQLITE, baseline=missing)
    code, _, err = cli("gate", EXAMPLE_SQLITE, "--baseline", missing)
    assert (e.value.exit_code, e.value.message) == (code, error_line(err)) == (2, error_line(err))
    # A value the flag's own parser refuses, and a flag the command does not have.
    with pytest.raises(stepgate.InputError) as e:
        stepgate.steps(EXAMPLE_SQLITE, threads=0)
    code, _, err = cli("steps", EXAMPLE_SQLITE, "--threads", "0")
    assert (e.value.exit_code, e.value.message) == (code, error_line(err))
    with pytest.raises(stepgate.InputError) as e:
        stepgate.floor(no_such_flag=1)
    code, _, err = cli("floor", "--no-such-flag", "1")
    assert (e.value.exit_code, e.value.message) == (code, error_line(err))


def test_unwritable_output_is_the_cli_exit_code(tmp_path):
    # A --markdown file whose directory is a file: refused before any work, as the CLI does.
    blocker = tmp_path / "file"
    blocker.write_text("x")
    out = blocker / "gate.md"
    with pytest.raises(stepgate.StepgateError) as e:
        stepgate.gate(EXAMPLE_SQLITE, baseline=EXAMPLE_BASELINE, markdown=out)
    code, _, err = cli("gate", EXAMPLE_SQLITE, "--baseline", EXAMPLE_BASELINE, "--markdown", out)
    assert (e.value.exit_code, e.value.message) == (code, error_line(err))
    assert type(e.value) is stepgate._errors.error_for(code, "").__class__


def test_format_is_refused_and_paths_may_be_pathlike():
    with pytest.raises(TypeError, match="format"):
        stepgate.steps(EXAMPLE_SQLITE, format="csv")
    assert isinstance(os.fspath(EXAMPLE_SQLITE), str)
    a = stepgate.steps(EXAMPLE_SQLITE)
    b = stepgate.steps(str(EXAMPLE_SQLITE))
    assert a.report["steps"] == b.report["steps"]


def test_report_warnings_are_python_warnings():
    code, _, err = cli("steps", KINETO_SGLANG, "--format", "json")
    expected = [l[len("warning: "):] for l in err.splitlines() if l.startswith("warning: ")]
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        r = stepgate.steps(KINETO_SGLANG)
    mine = [str(w.message) for w in got if issubclass(w.category, stepgate.StepgateWarning)]
    assert code == 0
    assert mine == r.report.get("warnings", []) == expected


def test_version_matches_the_command():
    code, out, _ = cli("--version")
    assert code == 0
    assert out.split()[:2] == ["stepgate", stepgate.__version__]


def test_docstrings_are_the_help_text():
    code, out, _ = cli("gate", "--help")
    assert code == 0
    assert out.strip() in stepgate.gate.__doc__
