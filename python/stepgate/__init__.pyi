# Type stubs of the package: its names load lazily (__init__.py), their types are _api's.
from ._api import (
    analyze as analyze,
    capacity as capacity,
    diff as diff,
    doctor as doctor,
    export as export,
    floor as floor,
    gate as gate,
    history as history,
    steps as steps,
)
from ._errors import (
    EnvironmentMissingError as EnvironmentMissingError,
    InputError as InputError,
    InternalError as InternalError,
    InterruptedWhileWriting as InterruptedWhileWriting,
    OutputError as OutputError,
    StepgateError as StepgateError,
    StepgateWarning as StepgateWarning,
)
from ._results import (
    AnalyzeResult as AnalyzeResult,
    DoctorResult as DoctorResult,
    ExportResult as ExportResult,
    GateResult as GateResult,
    History as History,
    Result as Result,
    StepsResult as StepsResult,
)
from ._table import Table as Table

__version__: str
__all__: list[str]
