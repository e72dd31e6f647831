"""The sources pass ruff's lint rules and are formatted (configuration: pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SOURCES = ["course", "tools", "tests", "autograder", "lectures", "solutions"]


def _ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args, *SOURCES], cwd=REPO, capture_output=True, text=True
    )


def test_ruff_lint_passes():
    result = _ruff("check", "--no-cache")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_clean():
    result = _ruff("format", "--check", "--no-cache")
    assert result.returncode == 0, result.stdout + result.stderr
