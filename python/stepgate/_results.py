"""What the functions return: the report as a dict, its tables as attributes."""

from __future__ import annotations

import json
from typing import Any, Dict, Iterator, List, Mapping, Optional

from ._table import Table


class Result:
    """A command's result: ``report`` is its ``--format json`` document, parsed."""

    def __init__(self, command: str, outcome: Any) -> None:
        self.command = command
        self._json: str = outcome.json
        self._report: Optional[Dict[str, Any]] = None
        self.exit_code: int = outcome.exit_code
        self._tables: Dict[str, Table] = {n: Table(n, t) for n, t in outcome.tables}

    @property
    def report(self) -> Dict[str, Any]:
        """The command's ``--format json`` output as a dict (equal to the CLI's)."""
        if self._report is None:
            self._report = json.loads(self._json)
        return self._report

    @property
    def json(self) -> str:
        """The command's ``--format json`` output, as the CLI prints it."""
        return self._json

    @property
    def tables(self) -> Dict[str, Table]:
        """Every table of this result by name."""
        return dict(self._tables)

    def __repr__(self) -> str:
        tables = ", ".join(f"{n}={len(t)}" for n, t in self._tables.items())
        return f"<stepgate {self.command} result: exit {self.exit_code}; tables {tables or 'none'}>"


class StepsResult(Result):
    """``stepgate.steps``: every step, its top kernels and the kernel classes."""

    @property
    def steps(self) -> Table:
        """One row per step (the report's ``steps``; nested fields as ``a.b``)."""
        return self._tables["steps"]

    @property
    def kernels(self) -> Table:
        """Each step's top kernels (``top=`` per step), with ``step``, ``series``, ``kind``."""
        return self._tables["kernels"]

    @property
    def classes(self) -> Table:
        """Kernel classes per step group (``groups[].classes``, with ``group``)."""
        return self._tables["classes"]


class AnalyzeResult(Result):
    """``stepgate.analyze``: per-GPU busy and idle time, kernels by exclusive time."""

    @property
    def devices(self) -> Table:
        """One row per device."""
        return self._tables["devices"]

    @property
    def kernels(self) -> Table:
        """Every kernel name per device (``devices[].kernels_by_name``, with ``device``)."""
        return self._tables["kernels"]


class GateResult(Result):
    """``stepgate.gate`` / ``stepgate.diff``: the comparison, its verdict and PR comment."""

    def __init__(self, command: str, outcome: Any) -> None:
        super().__init__(command, outcome)
        self.markdown: str = outcome.markdown
        """The markdown report (the PR comment), equal to the CLI's ``--markdown`` file."""

    @property
    def verdict(self) -> str:
        """``pass``, ``regression``, ``inconclusive`` or ``incomparable`` (the report's)."""
        return str(self.report["verdict"])

    @property
    def passed(self) -> bool:
        """Whether the CLI would exit 0."""
        return self.exit_code == 0

    @property
    def rows(self) -> Table:
        """One row per step group and metric (``groups[].metrics``, with ``group``)."""
        return self._tables["rows"]

    @property
    def kernels(self) -> Table:
        """Kernel rows per group (``groups[].kernels``, with ``group``)."""
        return self._tables["kernels"]

    @property
    def waterfall(self) -> Table:
        """The wall-time waterfall per group (``groups[].waterfall``, with ``group``)."""
        return self._tables["waterfall"]


class DoctorResult(Result):
    """``stepgate.doctor``: the capture's findings."""

    @property
    def passed(self) -> bool:
        """No finding at the failing severity (the CLI exits 0)."""
        return bool(self.report["passed"])

    @property
    def findings(self) -> Table:
        """One row per finding."""
        return self._tables["findings"]


class ExportResult(Result):
    """``stepgate.export``: the run appended to a dataset."""

    @property
    def run_id(self) -> str:
        return str(self.report["run_id"])

    @property
    def replaced(self) -> bool:
        return bool(self.report["replaced"])

    @property
    def rows(self) -> Dict[str, int]:
        """Rows written per table."""
        return dict(self.report["rows"])


class History(Mapping[str, Table]):
    """A run-history dataset: table name (``runs``, ``steps``, ``step_kernels``, ``kernels``,
    ``devices``) to table, committed runs only."""

    def __init__(self, dataset: str, tables: List[Any]) -> None:
        self.dataset = dataset
        self._tables: Dict[str, Table] = {n: Table(n, t) for n, t in tables}

    def __getitem__(self, name: str) -> Table:
        return self._tables[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tables)

    def __len__(self) -> int:
        return len(self._tables)

    def __repr__(self) -> str:
        tables = ", ".join(f"{n}={len(t)}" for n, t in self._tables.items())
        return f"<stepgate history {self.dataset}: {tables}>"
