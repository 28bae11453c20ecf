"""stepgate from Python: the same library as the ``stepgate`` command, in-process.

Each function takes the command's long flags as keyword arguments (``-`` written ``_``):
``stepgate.steps("run.sqlite", model="llama-3-70b", gpu="h100-sxm", threads=4)``. A flag
without a value is ``True``; a repeatable flag takes a list; paths are ``str`` or
``os.PathLike``. Results carry ``.report`` (the command's ``--format json`` output as a
dict) and tables that implement the Arrow PyCapsule interface (``polars.DataFrame(t)``,
``pyarrow.table(t)``, ``t.to_pandas()``). Failures raise :class:`StepgateError` with the
CLI's exit code and one-line message; report warnings go through :mod:`warnings`.
The GIL is released while stepgate works. Install: ``pip install stepgate-gpu``.
Guide: docs/python.md.
"""

# Importing the package loads only the extension: the `stepgate` console command enters
# through `stepgate._cli`, which imports this file first, and must start as fast as the
# native binary (docs/performance.md, Python). The API (stepgate._api: typing, the result
# classes, docstrings rendered from --help) loads on first use of any of its names.

try:
    from . import _native
except ImportError as _e:
    raise ImportError(
        "stepgate: this `stepgate` module has no native part (stepgate._native): another "
        "package named `stepgate` shares the name; run `pip uninstall -y stepgate stepgate-gpu` "
        "then `pip install stepgate-gpu`"
    ) from _e

__all__ = [
    "steps", "analyze", "floor", "capacity", "gate", "diff", "doctor", "export", "history",
    "StepgateError", "InputError", "EnvironmentMissingError", "OutputError", "InternalError",
    "InterruptedWhileWriting", "StepgateWarning", "Table", "Result", "StepsResult",
    "AnalyzeResult", "GateResult", "DoctorResult", "ExportResult", "History", "__version__",
]

#: The package version (``stepgate --version`` prints it with the commit).
__version__ = _native.version().split(" ", 1)[0]


def __getattr__(name):
    if name in __all__:
        from . import _api

        value = getattr(_api, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'stepgate' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
