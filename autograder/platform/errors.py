"""What the grading command reports when it fails as a whole, and its exit codes (see
:mod:`autograder.platform.grade`)."""

from __future__ import annotations

EXIT_OK, EXIT_MANUAL, EXIT_LOOK, EXIT_FAILED, EXIT_NO_SPACE = 0, 1, 2, 3, 4


class GradingError(RuntimeError):
    """The command cannot run (bad arguments, nbgrader failing on the course itself)."""
