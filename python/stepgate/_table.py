"""Result tables: Arrow data behind the PyCapsule stream interface, with lazy converters."""

from __future__ import annotations

from typing import Any, List, Optional


class Table:
    """One table of a result (rows of the report, or of a history dataset).

    It implements the Arrow PyCapsule interface (``__arrow_c_stream__``), so
    ``polars.DataFrame(t)``, ``pyarrow.table(t)`` and DuckDB read it without a copy through
    Python objects and without a pinned polars or pyarrow version.
    """

    __slots__ = ("_native", "name")

    def __init__(self, name: str, native: Any) -> None:
        self.name = name
        self._native = native

    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object:
        return self._native.__arrow_c_stream__(requested_schema)

    @property
    def num_rows(self) -> int:
        """Row count."""
        return self._native.num_rows

    @property
    def column_names(self) -> List[str]:
        """Column names, in order (a nested field is ``parent.child``)."""
        return self._native.column_names

    def __len__(self) -> int:
        return self._native.num_rows

    def __repr__(self) -> str:
        cols = ", ".join(self.column_names[:6])
        more = ", …" if len(self.column_names) > 6 else ""
        return f"<stepgate.Table {self.name}: {self.num_rows} rows [{cols}{more}]>"

    def to_polars(self) -> Any:
        """This table as a ``polars.DataFrame`` (needs polars >= 1.2: ``pip install polars``)."""
        try:
            import polars
        except ImportError:
            raise ImportError(
                "stepgate: Table.to_polars() needs polars: pip install 'stepgate-gpu[polars]' "
                "(or pip install polars)"
            ) from None
        return polars.DataFrame(self)

    def to_arrow(self) -> Any:
        """This table as a ``pyarrow.Table`` (needs pyarrow >= 14: ``pip install pyarrow``)."""
        try:
            import pyarrow
        except ImportError:
            raise ImportError(
                "stepgate: Table.to_arrow() needs pyarrow: pip install 'stepgate-gpu[pandas]' "
                "(or pip install pyarrow)"
            ) from None
        return pyarrow.table(self)

    def to_pandas(self) -> Any:
        """This table as a ``pandas.DataFrame`` (needs pandas and pyarrow >= 14)."""
        try:
            import pandas  # noqa: F401
            import pyarrow
        except ImportError:
            raise ImportError(
                "stepgate: Table.to_pandas() needs pandas and pyarrow: "
                "pip install 'stepgate-gpu[pandas]' (or pip install pandas pyarrow)"
            ) from None
        return pyarrow.table(self).to_pandas()
