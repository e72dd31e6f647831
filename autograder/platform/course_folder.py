"""The nbgrader course folder a run grades in (``OUT/course``): the assignment's source and
release, made once per grading fingerprint and copied from the release cache when it can be."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from autograder import nbgrader_format as fmt
from autograder import nbgrading
from autograder.fingerprint import grading_fingerprint
from autograder.platform import markup
from autograder.platform.errors import GradingError


def prepare_course(out: Path, assignment: str) -> Path:
    """OUT/course with the assignment's source and release (rebuilt when a grading input changed)."""
    try:
        fmt.source_files(assignment)
    except FileNotFoundError as error:
        raise GradingError(str(error)) from None
    course = out / "course"
    stamp = course / ".source-fingerprint"
    fingerprint = grading_fingerprint(assignment)
    if stamp.exists() and stamp.read_text() == fingerprint:
        return course
    config = nbgrading.GRADING_CONFIG.format(root=str(course / nbgrading.JUDGED))
    config += markup.exporter_config()
    fresh = not (course / GRADEBOOK).exists()  # no student's record to keep in the gradebook
    fmt.make_course_dir(course, [assignment], extra_config=config)
    if not (fresh and _copy_release(course, assignment, fingerprint)):
        try:
            fmt.release(course, assignment)
        except fmt.NbgraderError as error:
            raise GradingError(str(error)) from None
        if fresh:
            _keep_release(course, assignment, fingerprint)
    stamp.write_text(fingerprint)
    return course


# What nbgrader's generate_assignment makes from the sources of one fingerprint is the same
# every time: the student version and a gradebook that knows the assignment's cells. Making it
# costs a process of its own, about 3 s of CPU, in every new output folder (a TA's first run,
# each test of the command). A new course folder takes a copy of it from the release cache
# (RELEASE_CACHE_VARIABLE, else the user's cache folder): folders named by assignment and
# fingerprint, written whole or not at all, never changed after; a cache that cannot be read
# or written is only slower. A course folder that has a gradebook already (a re-run after the
# sources changed) keeps it, students' records and all, and releases again as before.
RELEASE_CACHE_VARIABLE = "COURSE_RELEASE_CACHE"


GRADEBOOK = "gradebook.db"


KEPT_RELEASES = 4  # per assignment, the newest; the older ones are removed


def release_cache() -> Path:
    from platformdirs import user_cache_dir

    return Path(os.environ.get(RELEASE_CACHE_VARIABLE) or user_cache_dir("seqcourse")) / "releases"


def _cached_release(assignment: str, fingerprint: str) -> Path:
    return release_cache() / f"{assignment}-{fingerprint[:40]}"


def _copy_release(course: Path, assignment: str, fingerprint: str) -> bool:
    """The cached release of ``fingerprint`` copied into the new ``course``; False if none."""
    cached = _cached_release(assignment, fingerprint)
    target = course / "release" / assignment
    try:
        if not (cached / GRADEBOOK).is_file():
            return False
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(cached / "release", target)
        shutil.copyfile(cached / GRADEBOOK, course / GRADEBOOK)
    except OSError:
        shutil.rmtree(target, ignore_errors=True)
        (course / GRADEBOOK).unlink(missing_ok=True)
        return False
    return True


def _keep_release(course: Path, assignment: str, fingerprint: str) -> None:
    """Put the release just made in ``course`` into the cache (a copy made aside, then renamed
    into place: a reader sees all of it or nothing); drop this assignment's oldest entries."""
    cached = _cached_release(assignment, fingerprint)
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=cached.parent, prefix=".new-") as partial:
            shutil.copytree(course / "release" / assignment, Path(partial) / "entry" / "release")
            shutil.copyfile(course / GRADEBOOK, Path(partial) / "entry" / GRADEBOOK)
            with contextlib.suppress(OSError):  # another process has put it there first
                os.rename(Path(partial) / "entry", cached)
        entries = sorted(
            cached.parent.glob(f"{assignment}-*"), key=lambda p: p.stat().st_mtime, reverse=True
        )
        for old in entries[KEPT_RELEASES:]:
            shutil.rmtree(old, ignore_errors=True)
    except OSError:
        pass  # no cache: the next new folder releases again
