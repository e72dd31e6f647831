"""One fingerprint of everything that can change a grade, for the build and the grading command.

A grade depends on:

- every file of ``autograder/`` (the judge, the sandbox, the hidden checks and their shared
  traps, the nbgrader format and its configuration ``autograder/nbgrader_config.py``);
- every file of ``course/`` (code and data: the hidden checks and the tests use it);
- the assignment's source, every file of ``solutions/<assignment>/``;
- ``requirements.txt`` and ``requirements-student.txt`` (the pinned libraries the checks
  compare against).

The build re-executes and re-releases an assignment when :func:`grading_fingerprint` changes
(``tools/build.py``), and ``python -m autograder grade`` judges every submission again
(``autograder/platform/course_folder.py`` and ``state.py``). Both call this function, so they
cannot disagree.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from autograder.nbgrader_format import REPO

SKIPPED_NAMES = {"__pycache__", ".ipynb_checkpoints", ".DS_Store"}
SKIPPED_SUFFIXES = {".pyc", ".pyo"}


def _files(path: Path) -> list[Path]:
    """``path`` itself, or every file below it except caches and editor leftovers."""
    if not path.is_dir():
        return [path]
    found = []
    for file in path.rglob("*"):
        parts = file.relative_to(path).parts
        if any(part in SKIPPED_NAMES or part.endswith(".egg-info") for part in parts):
            continue
        if file.is_file() and file.suffix not in SKIPPED_SUFFIXES:
            found.append(file)
    return sorted(found)


def files_digest(paths: Iterable[Path], root: Path) -> str:
    """A SHA-256 of the files at ``paths`` (folders: every file below them, recursively).

    Each file counts with its path relative to ``root`` (absolute when outside it) and its
    bytes, so adding, removing, renaming or editing any file changes the digest. A path that
    does not exist counts as missing (so creating it changes the digest too).
    """

    def name(path: Path) -> bytes:
        return (path.relative_to(root) if path.is_relative_to(root) else path).as_posix().encode()

    digest = hashlib.sha256()
    for path in paths:
        if not path.exists():
            digest.update(b"missing\0" + name(path) + b"\0")
            continue
        for file in _files(path):
            data = file.read_bytes()
            label = name(file)
            digest.update(b"%d:%s%d:" % (len(label), label, len(data)))
            digest.update(data)
    return digest.hexdigest()


def grading_inputs(assignment: str, root: Path = REPO) -> list[Path]:
    """The files and folders below ``root`` that can change a grade of ``assignment``."""
    return [
        root / "autograder",
        root / "course",
        root / "solutions" / assignment,
        root / "requirements.txt",
        root / "requirements-student.txt",  # requirements.txt includes it (-r)
    ]


def grading_fingerprint(assignment: str, root: Path = REPO) -> str:
    """The digest of :func:`grading_inputs`: equal fingerprints, equal grades."""
    return files_digest(grading_inputs(assignment, root), root)
