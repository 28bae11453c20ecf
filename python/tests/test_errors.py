"""Errors carry the CLI's exit code and its one-line message; warnings go through `warnings`."""

from __future__ import annotations

import os
import warnings

import pytest

import stepgate
from conftest import (
    EXAMPLE_BASELINE,
    EXAMPLE_SQLITE,
    FIXTURES,
    KINETO_SGLANG,
    cli,
    error_line,
)

KINETO_WARNS = FIXTURES / "kineto" / "kineto2021_resnet50_nw4_v100_profilerstep_operator.pt.trace.json.gz"


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


def test_a_refused_output_is_the_cli_exit_code(tmp_path):
    # A --markdown file whose directory is a file: refused before any work, as the CLI does
    # (exit 2; exit 5 needs a write that fails, which root in CI cannot be denied).
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
    # A 2021 Kineto trace the loader warns about (the CLI's `warning: ` line on stderr).
    code, _, err = cli("steps", KINETO_WARNS, "--format", "json")
    expected = [l[len("warning: "):] for l in err.splitlines() if l.startswith("warning: ")]
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        r = stepgate.steps(KINETO_WARNS)
    mine = [str(w.message) for w in got if issubclass(w.category, stepgate.StepgateWarning)]
    assert code == 0 and len(expected) == 1
    assert mine == r.report["warnings"] == expected
    # A capture without any: no warning at all.
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        stepgate.steps(KINETO_SGLANG)
    assert [w for w in got if issubclass(w.category, stepgate.StepgateWarning)] == []


def test_version_matches_the_command():
    code, out, _ = cli("--version")
    assert code == 0
    assert out.split()[:2] == ["stepgate", stepgate.__version__]
    # The wheel's version (python/Cargo.toml) is the command's (the root crate's).
    from importlib.metadata import version

    assert version("stepgate-gpu") == stepgate.__version__


def test_docstrings_are_the_help_text():
    code, out, _ = cli("gate", "--help")
    assert code == 0
    assert out.strip() in stepgate.gate.__doc__
