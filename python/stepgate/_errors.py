"""stepgate's errors and warnings: one exception class per documented exit code (src/exit.rs)."""

from __future__ import annotations

from typing import Dict, Type


class StepgateError(Exception):
    """A stepgate command failed: ``exit_code`` is the CLI's, ``message`` its one line."""

    exit_code: int = 0

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


class InputError(StepgateError):
    """Exit 2: bad arguments, an unreadable or malformed report, baseline or dataset."""


class EnvironmentMissingError(StepgateError):
    """Exit 4: something outside stepgate is missing (CUDA driver, nsys, the engine)."""


class OutputError(StepgateError):
    """Exit 5: an output file could not be written (none was)."""


class InternalError(StepgateError):
    """Exit 70: a bug in stepgate; please report it with the call that raised it."""


class InterruptedWhileWriting(StepgateError):
    """Exit 130: interrupted while writing output files (they were removed)."""


class StepgateWarning(UserWarning):
    """A warning a report carries (the CLI prints it on stderr as ``warning: ...``)."""


_BY_CODE: Dict[int, Type[StepgateError]] = {
    2: InputError,
    4: EnvironmentMissingError,
    5: OutputError,
    70: InternalError,
    130: InterruptedWhileWriting,
}


def error_for(exit_code: int, message: str) -> StepgateError:
    """The exception for an exit code (StepgateError itself for an undocumented one)."""
    return _BY_CODE.get(exit_code, StepgateError)(message, exit_code)
