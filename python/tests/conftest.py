"""Shared helpers: the repository's fixtures and the installed `stepgate` command to compare with.

The tests run against an installed wheel (scripts/check_wheel.sh), never the source tree:
`stepgate` must be importable from site-packages and the command on PATH.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any, List, Tuple

import pytest

ROOT = Path(os.environ.get("STEPGATE_REPO", Path(__file__).resolve().parents[2]))
FIXTURES = ROOT / "tests" / "fixtures"
EXAMPLE_SQLITE = ROOT / "examples" / "vllm_decode_synthetic_h100.sqlite"
EXAMPLE_BASELINE = ROOT / "baselines" / "example-h100-vllm-decode.json"
KINETO_SGLANG = FIXTURES / "kineto" / "sglang_mi300x_qwen3-8b_decode_step.json.gz"
NSYS_SAXPY = FIXTURES / "nsys" / "saxpy_mpi_a100_nsys2022.2.sqlite"
NSYS_FASTVIDEO = FIXTURES / "nsys" / "fastvideo_h100_2gpu_nsys2026.2.sqlite"


@pytest.fixture(autouse=True, scope="session")
def _installed_wheel() -> None:
    """The module under test is the installed one, never python/stepgate of the checkout."""
    import stepgate

    here = Path(stepgate.__file__).resolve()
    assert "site-packages" in here.parts, f"stepgate imported from {here}, not an installed wheel"


def cli_path() -> str:
    """The command to compare with: $STEPGATE_CLI, else the wheel's `stepgate` on PATH."""
    exe = os.environ.get("STEPGATE_CLI") or shutil.which("stepgate")
    if not exe:
        pytest.fail("no `stepgate` command on PATH: install the wheel first")
    return exe


def cli(*args: Any) -> Tuple[int, str, str]:
    """Run the command line; (exit code, stdout, stderr)."""
    p = subprocess.run(
        [cli_path(), *[os.fspath(a) for a in args]],
        capture_output=True,
        text=True,
        check=False,
    )
    return p.returncode, p.stdout, p.stderr


def cli_json(*args: Any, expect: int = 0) -> Any:
    code, out, err = cli(*args, "--format", "json")
    assert code == expect, f"exit {code}: {err}"
    return json.loads(out)


def error_line(stderr: str) -> str:
    """The CLI's one error line, without its `stepgate: error: ` prefix."""
    lines: List[str] = [l for l in stderr.splitlines() if l.startswith("stepgate: error: ")]
    assert len(lines) == 1, stderr
    return lines[0][len("stepgate: error: "):]
