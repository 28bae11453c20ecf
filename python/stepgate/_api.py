"""The Python API behind `stepgate` (loaded on first use: see __init__.py)."""

from __future__ import annotations

import os
import warnings as _warnings
from typing import Any, List, Mapping, Sequence, Union

from . import _native

from ._errors import (
    EnvironmentMissingError,
    InputError,
    InternalError,
    InterruptedWhileWriting,
    OutputError,
    StepgateError,
    StepgateWarning,
    error_for,
)
from ._results import (
    AnalyzeResult,
    DoctorResult,
    ExportResult,
    GateResult,
    History,
    Result,
    StepsResult,
)
from ._table import Table

Path = Union[str, "os.PathLike[str]"]


def _value(v: Any) -> str:
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    return str(v)


def _argv(command: str, positional: Sequence[Any], flags: Mapping[str, Any]) -> List[str]:
    argv = ["stepgate", command]
    argv += [_value(p) for p in positional]
    for key, v in flags.items():
        if key == "format":
            raise TypeError(
                "stepgate: format= is not an option here: results carry the JSON report "
                "(.report), the tables and, for gate/diff, .markdown"
            )
        flag = "--" + key.replace("_", "-")
        if v is None or v is False:
            continue
        if v is True:
            argv.append(flag)
        elif isinstance(v, Mapping):
            for k, x in v.items():
                argv += [flag, f"{k}={_value(x)}"]
        elif isinstance(v, (list, tuple)):
            for x in v:
                argv += [flag, _value(x)]
        else:
            argv += [flag, _value(v)]
    return argv


def _call(command: str, positional: Sequence[Any], flags: Mapping[str, Any]) -> Any:
    try:
        out = _native.run(_argv(command, positional, flags))
    except _native.NativeError as e:
        code, message = e.args
        raise error_for(code, message) from None
    return out


def _warn(result: Result, notes: Sequence[str]) -> None:
    for w in result.report.get("warnings", []) or []:
        _warnings.warn(str(w), StepgateWarning, stacklevel=3)
    for n in notes:
        _warnings.warn(n, StepgateWarning, stacklevel=3)


def steps(report: Path, **flags: Any) -> StepsResult:
    out = _call("steps", [report], flags)
    r = StepsResult("steps", out)
    _warn(r, out.notes)
    return r


def analyze(report: Path, **flags: Any) -> AnalyzeResult:
    out = _call("analyze", [report], flags)
    r = AnalyzeResult("analyze", out)
    _warn(r, out.notes)
    return r


def floor(**flags: Any) -> Result:
    out = _call("floor", [], flags)
    r = Result("floor", out)
    _warn(r, out.notes)
    return r


def capacity(**flags: Any) -> Result:
    out = _call("capacity", [], flags)
    r = Result("capacity", out)
    _warn(r, out.notes)
    return r


def gate(report: Path, **flags: Any) -> GateResult:
    out = _call("gate", [report], flags)
    r = GateResult("gate", out)
    _warn(r, out.notes)
    return r


def diff(a: Path, b: Path, **flags: Any) -> GateResult:
    out = _call("diff", [a, b], flags)
    r = GateResult("diff", out)
    _warn(r, out.notes)
    return r


def doctor(report: Path, **flags: Any) -> DoctorResult:
    out = _call("doctor", [report], flags)
    r = DoctorResult("doctor", out)
    _warn(r, out.notes)
    return r


def export(report: Path, **flags: Any) -> ExportResult:
    out = _call("export", [report], flags)
    r = ExportResult("export", out)
    _warn(r, out.notes)
    return r


def history(
    dataset: Path, storage_option: Sequence[str] = (), io_timeout: int = 30
) -> History:
    """The tables of a run-history dataset written by ``stepgate export``: ``runs``,
    ``steps``, ``step_kernels``, ``kernels``, ``devices`` (committed runs only).
    ``storage_option`` (``KEY=VALUE`` items) and ``io_timeout`` (seconds) reach a remote
    dataset as the CLI's ``--storage-option`` and ``--io-timeout`` do."""
    if isinstance(storage_option, str):
        storage_option = [storage_option]
    try:
        tables, warns = _native.history(
            _value(dataset), [str(o) for o in storage_option], str(io_timeout)
        )
    except _native.NativeError as e:
        code, message = e.args
        raise error_for(code, message) from None
    for w in warns:
        _warnings.warn(w, StepgateWarning, stacklevel=2)
    return History(_value(dataset), tables)


def _document() -> None:
    # The docstrings are the commands' --help text, from the same clap definitions.
    calls = {
        "steps": "steps(report, **flags)",
        "analyze": "analyze(report, **flags)",
        "floor": "floor(**flags)",
        "capacity": "capacity(**flags)",
        "gate": "gate(report, **flags)",
        "diff": "diff(a, b, **flags)",
        "doctor": "doctor(report, **flags)",
        "export": "export(report, output=DATASET, **flags)",
    }
    texts = _native.help_all(list(calls))
    for (name, call), text in zip(calls.items(), texts):
        globals()[name].__doc__ = (
            f"stepgate.{call}: the `stepgate {name}` command; flags as keyword arguments "
            f"(--flag-name → flag_name=...; format= is fixed to the JSON report).\n\n{text}"
        )


_document()
