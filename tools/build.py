"""Build the whole course: ``python -m tools.build [all|lectures|assignments|book|bundle]``.

Stages, each incremental (a unit whose inputs did not change is not executed again):

1. lectures     ``lectures/*.py`` -> executed ``build/lectures/*.ipynb``
2. assignments  ``solutions/<a>/*.py`` -> executed reference ``build/solutions``, student version
                (nbgrader release) -> ``assignments/<a>/``; the reference and three test students
                autograded -> ``build/grades`` (``tests/test_grading.py`` reads them)
3. bundle       ``dist/sequence-models/`` and ``dist/student.zip`` (that one folder): lectures,
                assignments, the ``course`` package, environment, README
4. book         ``jupyter_book/`` + the above -> ``jupyter_book/_build/html`` (offline, -W);
                the site offers the bundle for download

Lectures and assignments are independent units: stages 1 and 2 run them in parallel, each in
its own process and kernel, as many at once as there are cores (``COURSE_BUILD_JOBS=N``
overrides). Each unit writes only its own files, so the products do not depend on the order
in which units finish. A failing unit does not stop the others; the build then names every
failed unit with its notebook and failing cell, and exits 1.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import nbformat

from autograder import nbgrader_format as nbg
from autograder.fingerprint import files_digest, grading_fingerprint
from course.doctor import CPU_INDEX  # PyTorch's index of CPU-only wheels
from course.metrics import load_all
from tools import copies, lab_markdown
from tools.fit_replay import THREADS_FILE, write_startup
from tools.metrics_table import describe_machine, figures_page
from tools.notebooks import (
    REPO,
    NotebookBuildError,
    execute,
    read_source,
    write_notebook,
)

BUILD = REPO / "build"
LECTURES = REPO / "lectures"
ASSIGNMENTS = REPO / "assignments"
BOOK = REPO / "jupyter_book"
DIST = REPO / "dist" / "sequence-models"  # the bundle; dist/student.zip holds this one folder
METRICS = BUILD / "metrics"
FIGURES_PAGE = "figures.md"  # in the book's _generated/: the figures of the build, by the build
FITS = BUILD / "fits"  # each lecture's training runs, recorded for its JupyterLab run to replay
TIMINGS = BUILD / "timings.json"
COMMON_INPUTS = (REPO / "course", REPO / "requirements.txt", REPO / "requirements-student.txt")
# what else a lecture's outputs depend on: how it is executed (the kernel's figure format)
LECTURE_INPUTS = (*COMMON_INPUTS, REPO / "tools" / "notebooks.py")
JOBS_VARIABLE = "COURSE_BUILD_JOBS"
# the thread pools of torch (OpenMP, MKL) and of numpy (OpenBLAS)
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
FAILURES = (NotebookBuildError, nbg.NbgraderError, FileNotFoundError, copies.CopiedSolutionError)


class BuildFailed(RuntimeError):
    """One or more units failed; the message names each with its error."""


def log(message: str) -> None:
    print(f"[build] {message}", flush=True)


def lecture_sources() -> list[Path]:
    return sorted(LECTURES.glob("[0-9]*.py"))


def build_jobs() -> int:
    """How many units run at once: ``$COURSE_BUILD_JOBS``, else the number of cores."""
    value = os.environ.get(JOBS_VARIABLE, "").strip()
    if not value:
        return os.cpu_count() or 1
    if not value.isdigit() or int(value) < 1:
        raise BuildFailed(f"{JOBS_VARIABLE} must be a whole number of at least 1, got {value!r}")
    return int(value)


# -- incremental bookkeeping -------------------------------------------------------------


def _up_to_date(key: str, digest: str, *outputs: Path) -> bool:
    stamp = BUILD / "stamps" / f"{key}.sha256"
    return stamp.exists() and stamp.read_text() == digest and all(p.exists() for p in outputs)


def _mark_done(key: str, digest: str) -> None:
    stamp = BUILD / "stamps" / f"{key}.sha256"
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(digest)


def _record_timings(seconds: dict[str, float]) -> None:
    """Merge per-notebook execution times into ``build/timings.json``."""
    timings = json.loads(TIMINGS.read_text()) if TIMINGS.exists() else {}
    timings.update({name: round(value, 1) for name, value in seconds.items()})
    TIMINGS.parent.mkdir(parents=True, exist_ok=True)
    TIMINGS.write_text(json.dumps(timings, indent=2, sort_keys=True) + "\n")


def kernel_threads() -> dict[str, str]:
    """The thread counts of the build's kernels: ``$OMP_NUM_THREADS`` where it is set, else
    each of the :func:`build_jobs` units that run side by side gets its share of the cores (at
    least one thread). More threads than cores only wait on each other: two lectures executed
    side by side on 2 cores took about 12% less time and CPU with one thread each than with
    two (the lectures pin torch's own pool to one thread, not numpy's BLAS)."""
    count = os.environ.get("OMP_NUM_THREADS", "").strip()
    if not count:
        count = str(max(1, (os.cpu_count() or 1) // build_jobs()))
    return dict.fromkeys(THREAD_VARIABLES, count)


def _kernel_env() -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    return {"COURSE_METRICS_DIR": str(METRICS), "PYTHONPATH": path, **kernel_threads()}


# -- units: what one worker process does --------------------------------------------------
# Workers are started with "spawn" on every OS (Windows has no fork; forking a process with
# threads is unsafe), so a unit gets everything it needs as arguments, never from globals.


def exit_with_parent(parent: int, every: float = 1.0) -> None:
    """A worker's initializer: end the worker as soon as the build that started it is gone.

    A build killed outright (``kill``, a CI step's timeout, a closed terminal) runs no clean-up
    of its own, and its workers would go on executing notebooks that nobody waits for. A thread
    checks every ``every`` seconds whether the worker's parent is still ``parent``; when it is
    not (on POSIX an orphan is adopted by another process), the worker ends the nbgrader
    commands it is running (``nbgrader_format.RUNNING``) and exits; the Jupyter kernels they and
    the worker started follow (ipykernel ends when its own parent does).
    """

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every)
        for process in list(nbg.RUNNING):
            process.kill()
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def run_lecture(source: Path, build: Path, env: dict[str, str]) -> dict[str, float]:
    """Execute one lecture into ``build/lectures``; its execution time.

    The lecture's recorded figures are cleared first, so a figure it no longer records (a
    renamed model, say) does not linger in the benchmark table.
    """
    if env.get("COURSE_METRICS_DIR"):
        Path(env["COURSE_METRICS_DIR"], f"{source.stem}.json").unlink(missing_ok=True)
    fits = build / FITS.name / source.stem
    shutil.rmtree(fits, ignore_errors=True)
    threads = {name: env[name] for name in THREAD_VARIABLES if name in env}
    record = build / FITS.name / THREADS_FILE  # the same for every lecture of a build
    record.parent.mkdir(parents=True, exist_ok=True)
    partial = record.with_suffix(f".{os.getpid()}.part")
    partial.write_text(json.dumps(threads, sort_keys=True) + "\n")
    partial.replace(record)
    ipython = build / "ipython" / source.stem  # its kernel's startup records the runs
    shutil.rmtree(ipython, ignore_errors=True)
    write_startup(ipython, record=fits)
    result = execute(
        read_source(source),
        name=source.name,
        cwd=build / "run" / source.stem,
        env={**env, "IPYTHONDIR": str(ipython)},
    )
    write_notebook(result.notebook, build / "lectures" / f"{source.stem}.ipynb")
    return {f"lectures/{source.stem}": result.seconds}


# Who the build's nbgrader run grades, besides the reference: what tests/test_grading.py checks.
TEST_STUDENTS = ("blank", "cheat", "deleted_test")
GRADED_STUDENTS = ("reference", *TEST_STUDENTS)


def grades_path(build: Path, assignment: str, *, students: bool = False) -> Path:
    """``build/grades/<assignment>.json`` (the reference's grades), or with ``students`` the
    grades of every student the build graded, ``build/grades/<assignment>.students.json``."""
    return build / "grades" / f"{assignment}{'.students' if students else ''}.json"


def _test_submissions(
    staged: dict[str, Path], released: dict[str, Path], scratch: Path
) -> dict[str, dict[str, Path]]:
    """{student: {notebook: path}} for :data:`TEST_STUDENTS`: the untouched student version,
    the hard-coded cheat (``tools.submissions``, which runs the reference in this process on
    the visible tests' inputs) and the reference without its first visible test cell."""
    import contextlib
    import io

    from tools.submissions import hardcoded_submission, without_first_visible_test, write

    made: dict[str, dict[str, Path]] = {"blank": dict(released), "cheat": {}, "deleted_test": {}}
    for name, path in staged.items():
        source = nbformat.read(path, as_version=4)
        release = nbformat.read(released[name], as_version=4)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            cheat = hardcoded_submission(source, release)  # its prints are not the build's log
        made["cheat"][name] = write(cheat, scratch / "cheat" / f"{name}.ipynb")
        deleted = without_first_visible_test(source)
        made["deleted_test"][name] = write(deleted, scratch / "deleted" / f"{name}.ipynb")
    return made


def run_assignment(
    assignment: str, build: Path, released_to: Path, env: dict[str, str]
) -> dict[str, float]:
    """Execute the reference solution, release the student version, autograde the reference
    and the test students (:data:`TEST_STUDENTS`) in one nbgrader run.

    Each assignment has its own nbgrader course directory (``build/nbgrader/<assignment>``),
    so assignments can be built at the same time; it is kept, with the release and the
    gradebook. The times: each reference notebook's execution, and
    ``assignments/<assignment>``, the whole unit (release and autograde too).
    """
    started = time.perf_counter()
    # nbgrader's kernels inherit this worker's environment: the units' share of the cores too
    os.environ.update({name: env[name] for name in THREAD_VARIABLES if name in env})
    seconds = {}
    sources = nbg.source_files(assignment)
    for source in sources:
        result = execute(
            read_source(source), name=source.name, cwd=build / "run" / assignment, env=env
        )
        write_notebook(result.notebook, build / "solutions" / assignment / f"{source.stem}.ipynb")
        seconds[f"solutions/{assignment}/{source.stem}"] = result.seconds

    course_dir = build / "nbgrader" / assignment
    # Start afresh, or nbgrader refuses a source whose graded cells changed since the
    # submissions it holds ("Cannot add or remove cells").
    if course_dir.exists():
        shutil.rmtree(course_dir)
    nbg.make_course_dir(course_dir, [assignment])
    release_dir = nbg.release(course_dir, assignment)
    target = released_to / assignment
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(release_dir, target)

    staged = {s.stem: course_dir / "source" / assignment / f"{s.stem}.ipynb" for s in sources}
    released = {stem: release_dir / f"{stem}.ipynb" for stem in staged}
    nbg.submit(course_dir, assignment, "reference", staged)
    submissions = _test_submissions(staged, released, course_dir / "scratch")
    for student, notebooks in submissions.items():
        nbg.submit(course_dir, assignment, student, notebooks)
    nbg.autograde(course_dir, assignment)  # every submitted student, in one nbgrader run
    grades = {s: nbg.read_grades(course_dir, assignment, s) for s in GRADED_STUDENTS}
    grades_file = grades_path(build, assignment)
    grades_file.parent.mkdir(parents=True, exist_ok=True)
    grades_file.write_text(json.dumps(grades["reference"].as_dict(), indent=2) + "\n")
    everyone = {student: g.as_dict() for student, g in grades.items()}
    grades_path(build, assignment, students=True).write_text(json.dumps(everyone, indent=2) + "\n")
    seconds[f"assignments/{assignment}"] = time.perf_counter() - started
    return seconds


@dataclass(frozen=True)
class Unit:
    """One independent piece of the build: a lecture or an assignment."""

    label: str  # "lecture 01_rnn_bptt", "assignment a1_rnn_bptt"
    key: str  # its stamp
    digest: str  # of its inputs
    outputs: tuple[Path, ...]
    work: Callable[..., dict[str, float]]
    args: tuple
    # the digest of inputs that change the unit's products without being inputs of the
    # digest's kind (the cheat generator of the test students); stamped beside the digest
    also: str = ""

    @property
    def stamp(self) -> str:
        return f"{self.digest} {self.also}" if self.also else self.digest


def lecture_units() -> list[Unit]:
    return [
        Unit(
            label=f"lecture {source.stem}",
            key=f"lecture-{source.stem}",
            digest=files_digest([source, *LECTURE_INPUTS], REPO),
            outputs=(BUILD / "lectures" / f"{source.stem}.ipynb",),
            work=run_lecture,
            args=(source, BUILD, _kernel_env()),
        )
        for source in lecture_sources()
    ]


def assignment_units() -> list[Unit]:
    units = []
    for assignment in nbg.assignment_ids():
        released = [
            ASSIGNMENTS / assignment / f"{s.stem}.ipynb" for s in nbg.source_files(assignment)
        ]
        units.append(
            Unit(
                label=f"assignment {assignment}",
                key=f"assignment-{assignment}",
                digest=grading_fingerprint(assignment),
                outputs=(
                    grades_path(BUILD, assignment),
                    grades_path(BUILD, assignment, students=True),
                    *released,
                ),
                work=run_assignment,
                args=(assignment, BUILD, ASSIGNMENTS, _kernel_env()),
                also=files_digest([REPO / "tools" / "submissions.py"], REPO),
            )
        )
    return units


def assignment_is_built(assignment: str) -> bool:
    """True when ``build/`` holds the products of the assignment's current inputs: its
    release, and the grades of the reference and the test students."""
    unit = next(u for u in assignment_units() if u.args[0] == assignment)
    return _up_to_date(unit.key, unit.stamp, *unit.outputs)


def _report(unit: Unit, seconds: dict[str, float]) -> None:
    if unit.work is run_lecture:
        log(f"{unit.label}: executed in {sum(seconds.values()):.1f} s")
        return
    whole = seconds.pop(f"assignments/{unit.args[0]}")
    times = ", ".join(f"{name} in {value:.1f} s" for name, value in sorted(seconds.items()))
    grades = json.loads(unit.outputs[1].read_text())
    scores = ", ".join(f"{s} {grades[s]['autograded_score']:g}" for s in GRADED_STUDENTS)
    log(
        f"{unit.label}: executed {times}; released and autograded, {whole:.1f} s in all; "
        f"scored {scores} of {grades['reference']['autograded_max']:g}"
    )


def run_units(units: list[Unit], jobs: int | None = None) -> None:
    """Run the units that are not up to date, ``jobs`` at a time; raise BuildFailed naming
    every unit that failed (the others are finished and stamped)."""
    todo = []
    for unit in units:
        if _up_to_date(unit.key, unit.stamp, *unit.outputs):
            log(f"{unit.label}: up to date")
        else:
            todo.append(unit)
    if not todo:
        return
    jobs = min(jobs or build_jobs(), len(todo))
    log(f"executing {len(todo)} unit(s), {jobs} at a time: {', '.join(u.label for u in todo)}")
    failures: list[str] = []
    started = time.perf_counter()
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(
        max_workers=jobs,
        mp_context=context,
        initializer=exit_with_parent,
        initargs=(os.getpid(),),
    ) as pool:
        running: dict[Future, Unit] = {pool.submit(u.work, *u.args): u for u in todo}
        try:
            while running:
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    unit = running.pop(future)
                    try:
                        seconds = future.result()
                    except FAILURES as error:
                        failures.append(f"{unit.label}: {error}")
                        log(f"{unit.label}: FAILED")
                        continue
                    except BrokenProcessPool as error:
                        failures.append(f"{unit.label}: its worker process died ({error})")
                        continue
                    _record_timings(seconds)
                    _mark_done(unit.key, unit.stamp)
                    _report(unit, dict(seconds))
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    log(
        f"{len(todo) - len(failures)} of {len(todo)} unit(s) built in {time.perf_counter() - started:.1f} s"
    )
    if failures:
        raise BuildFailed(
            f"{len(failures)} of {len(todo)} unit(s) failed:\n" + "\n\n".join(failures)
        )


# -- stages -----------------------------------------------------------------------------


def build_lectures() -> None:
    """Execute every lecture whose source (or the course package) changed."""
    run_units(lecture_units())


def build_assignments() -> None:
    """Execute each reference solution, release the student version, autograde the reference.

    An assignment is rebuilt when its grading fingerprint changed: its source, any file of
    ``autograder/`` or ``course/``, the nbgrader configuration, the pinned requirements.
    First, no graded cell may repeat a lecture or ``course/`` (:mod:`tools.copies`).
    """
    copies.check()
    run_units(assignment_units())


def build_notebooks() -> None:
    """Lectures and assignments together, so that all of them share the workers (after the
    check of :mod:`tools.copies`)."""
    copies.check()
    run_units([*lecture_units(), *assignment_units()])


GUIDES = ("students", "tas", "instructors")
LIVE_WIDGET = re.compile(r"\binteract\w*\(")


def write_toc() -> Path:
    """Generate the book's table of contents from the lectures and assignments present.

    Lists the executed lectures and released assignments copied into ``_generated/`` (a unit
    whose notebook is not built yet is left out; the tests require a page for every unit),
    then the guides, the notation page, the measurements (``make bench``) and the references.
    """
    generated = BOOK / "_generated"
    lines = [
        "# Generated by tools/build.py from lectures/ and solutions/: do not edit.",
        "format: jb-book",
        "root: intro",
        "parts:",
    ]
    lectures = [
        f"_generated/lectures/{s.stem}"
        for s in lecture_sources()
        if (generated / "lectures" / f"{s.stem}.ipynb").exists()
    ]
    assignments = [
        f"_generated/assignments/{assignment}/{s.stem}"
        for assignment in nbg.assignment_ids()
        for s in nbg.source_files(assignment)
        if (generated / "assignments" / assignment / f"{s.stem}.ipynb").exists()
    ]
    guides = [f"guides/{name}" for name in GUIDES if (BOOK / "guides" / f"{name}.md").exists()]

    def unit(path: str) -> int:  # 01_rnn_bptt and a1_rnn_bptt are both unit 1
        return int(re.match(r"a?0?(\d+)_", path.rsplit("/", 1)[-1]).group(1))

    # by unit, each lecture followed by its assignment: the order a student works in
    units = sorted(lectures + assignments, key=lambda path: (unit(path), "assignments" in path))
    parts = [
        ("Units (each lecture, then its assignment)", units),
        ("Guides", guides),
        ("Reading", ["notation", "measurements", "references"]),
    ]
    for caption, files in parts:
        if files:
            lines += [f"  - caption: {caption}", "    chapters:"]
            lines += [f"      - file: {file}" for file in files]
    toc = BOOK / "_generated" / "_toc.yml"
    toc.parent.mkdir(parents=True, exist_ok=True)
    toc.write_text("\n".join(lines) + "\n")
    return toc


def _markdown_cell(source: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_markdown_cell(source)
    cell.pop("id", None)  # ids are added below, derived from the neighbour
    return cell


def _insert_after_title(
    notebook: nbformat.NotebookNode, source: str, cell_id: str, *, right_under: bool = False
) -> None:
    """Insert a markdown cell after the first cell, or right under its ``# title`` line."""
    cell = _markdown_cell(source)
    cell["id"] = cell_id
    first = notebook.cells[0]
    title, _, rest = first.source.partition("\n")
    if right_under and first.cell_type == "markdown" and title.startswith("# ") and rest.strip():
        first.source = title
        remainder = _markdown_cell(rest.strip("\n"))
        remainder["id"] = f"{cell_id}-intro"
        notebook.cells[1:1] = [cell, remainder]
    else:
        notebook.cells.insert(1, cell)


def _page_for_lecture(source: Path, target: Path, download: str) -> None:
    """Copy an executed lecture into the book, with a download box and live-widget notes."""
    notebook = nbformat.read(source, as_version=4)
    _insert_after_title(
        notebook,
        ":::{admonition} Run this lecture yourself\n:class: tip\n"
        "This page is the lecture notebook, executed by the course build. To run it and "
        "play with its widgets, get the student bundle, "
        f"{{download}}`student.zip <{_bundle_link(download)}>`, install it as its README says "
        f"and open `lectures/{source.name}` in JupyterLab. The notebook alone, "
        f"{{download}}`{source.name} <{download}>`, needs the bundle's `course` package "
        "installed.\n:::",
        "site-run-yourself",
    )
    cells = []
    for cell in notebook.cells:
        cells.append(cell)
        if cell.cell_type == "code" and LIVE_WIDGET.search(cell.source):
            note = _markdown_cell(
                ":::{admonition} Live widget\n:class: note\n"
                "In JupyterLab this cell shows sliders and menus that redraw the figure. The "
                "static page shows the figure at the widget's default settings, just above. "
                "Run the notebook in JupyterLab (`make lab`) to use the controls.\n:::"
            )
            note["id"] = f"site-widget-{len(cells)}"
            cells.append(note)
    notebook.cells = cells
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)


def _page_for_assignment(source: Path, target: Path, download: str) -> None:
    """Copy a student version into the book, with a download link for the notebook."""
    notebook = nbformat.read(source, as_version=4)
    _insert_after_title(
        notebook,
        ":::{admonition} Get the notebook\n:class: tip\n"
        f"Take it from `assignments/{source.parent.name}/` in the student bundle, "
        f"{{download}}`student.zip <{_bundle_link(download)}>` (or download "
        f"{{download}}`{source.name} <{download}>` alone, which needs the bundle's `course` "
        "package installed). Work in JupyterLab, run the visible tests as you go, and hand it "
        f"in with `python -m course handin {source.parent.name.split('_')[0]} --student "
        "YOUR_ID`; hidden tests add the rest of the points at grading. This page shows the "
        "notebook as you receive it.\n:::",
        "site-get-notebook",
        right_under=True,
    )
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)


def _bundle_link(download: str) -> str:
    """The bundle's path relative to a page whose notebook download is ``download``: both lie
    in ``_generated/downloads/``."""
    return download.split("downloads/", 1)[0] + "downloads/" + BUNDLE_ZIP_NAME


BUNDLE_ZIP_NAME = "student.zip"
REPOSITORY_VARIABLE = "COURSE_REPOSITORY_URL"
PYPROJECT = REPO / "pyproject.toml"
# the hosts whose addresses sphinx-book-theme's repository button takes (and has an icon for)
REPOSITORY_PROVIDERS = ("github", "gitlab", "bitbucket")


def repository_url(pyproject: Path | None = None) -> str | None:
    """The course repository's web address, which the website links to, or None if unset.

    ``$COURSE_REPOSITORY_URL`` if set (not empty), else ``Repository`` in ``[project.urls]`` of
    ``pyproject`` (the repository's pyproject.toml). Only an http(s) address is accepted (no
    space, quote or angle bracket in it): anything else raises ``BuildFailed`` naming the
    setting it came from.
    """
    import tomllib

    pyproject = pyproject or PYPROJECT
    value = os.environ.get(REPOSITORY_VARIABLE, "").strip()
    setting = REPOSITORY_VARIABLE
    if not value:
        urls = tomllib.loads(pyproject.read_text()).get("project", {}).get("urls", {})
        value = str(urls.get("Repository", "")).strip()
        setting = f"[project.urls] Repository in {pyproject.name}"
    if not value:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname or re.search(r'[\s"<>]', value):
        raise BuildFailed(
            f"{setting} must be an http(s) address, such as "
            f"https://github.com/ORGANISATION/REPOSITORY, got {value!r}"
        )
    return value.rstrip("/")


def book_config_overrides(url: str) -> dict:
    """What the book's configuration gets when the repository's address is ``url``: Jupyter
    Book's ``repository: url`` and the theme's repository button in the header, and the
    address for the course's extension (``_ext/repository_link.py``), whose
    ``{repository-link}`` shows it on the landing page. The theme makes that button only for
    GitHub, GitLab and Bitbucket (a host named so); for another host it is told the provider
    is plain Git, and the course's extension adds the same button with Git's icon."""
    host = urlsplit(url).hostname or ""
    provider = next((name for name in REPOSITORY_PROVIDERS if name in host), None)
    sphinx = {"course_repository_url": url}
    if provider is None:
        sphinx["html_theme_options"] = {"repository_provider": "git"}  # else it is refused
    return {
        "repository": {"url": url},
        "html": {"use_repository_button": bool(provider)},
        "sphinx": {"config": sphinx},
    }


def write_book_config(book: Path, overrides: dict, target: Path) -> Path:
    """Write ``book``'s ``_config.yml`` with ``overrides`` merged in to ``target``, for
    ``jupyter-book build --config``. Jupyter Book finds local extensions relative to the
    configuration file, so their folders are written as absolute paths."""
    import yaml  # Jupyter Book's dependency, as the book is

    def merge(into: dict, update: dict) -> None:
        for key, value in update.items():
            if isinstance(value, dict) and isinstance(into.get(key), dict):
                merge(into[key], value)
            else:
                into[key] = value

    config = yaml.safe_load((book / "_config.yml").read_text())
    merge(config, overrides)
    extensions = config.get("sphinx", {}).get("local_extensions") or {}
    for name, folder in extensions.items():
        extensions[name] = str((book / folder).resolve())
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(
        f"# Generated by tools/build.py from {book.name}/_config.yml: do not edit.\n"
        + yaml.safe_dump(config, sort_keys=False, allow_unicode=True)
    )
    return target


def build_book() -> Path:
    """Copy the executed lectures and the student versions into the book and build it offline.

    The build starts from scratch (no stale pages). Each page gets a box with a download link for its notebook; the files behind the links
    are unmodified copies in ``_generated/downloads/`` (not pages themselves). Only student
    versions from ``assignments/`` are copied: no solution or hidden test reaches the site.
    With a repository address (``repository_url``), the header shows a repository button and
    the landing page a "Source" link to it.
    """
    url = repository_url()  # a bad address fails before anything is copied
    if url:
        log(f"book: the site links the repository {url}")
    else:
        log(
            "book: the site has no repository link; set Repository under [project.urls] in "
            f"pyproject.toml, or {REPOSITORY_VARIABLE}, to add one"
        )
    generated = BOOK / "_generated"
    for stale in (generated, BOOK / "_build"):
        if stale.exists():
            shutil.rmtree(stale)
    downloads = generated / "downloads"
    bundle = DIST.parent / BUNDLE_ZIP_NAME  # the bundle is built before the book
    if not bundle.is_file():
        raise NotebookBuildError(f"book: {bundle} is missing; build the bundle first")
    downloads.mkdir(parents=True)
    shutil.copyfile(bundle, downloads / BUNDLE_ZIP_NAME)
    for notebook in sorted((BUILD / "lectures").glob("*.ipynb")):
        (downloads / "lectures").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(notebook, downloads / "lectures" / notebook.name)
        _page_for_lecture(
            notebook,
            generated / "lectures" / notebook.name,
            f"../downloads/lectures/{notebook.name}",
        )
    shutil.copytree(ASSIGNMENTS, generated / "assignments", ignore=shutil.ignore_patterns(".*"))
    for notebook in sorted(ASSIGNMENTS.glob("*/*.ipynb")):
        assignment = notebook.parent.name
        (downloads / "assignments" / assignment).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(notebook, downloads / "assignments" / assignment / notebook.name)
        _page_for_assignment(
            notebook,
            generated / "assignments" / assignment / notebook.name,
            f"../../downloads/assignments/{assignment}/{notebook.name}",
        )
    # every figure the lectures recorded in this build, which the measurements page includes
    figures = load_all(METRICS) if METRICS.is_dir() else []
    (generated / FIGURES_PAGE).write_text(figures_page(figures, describe_machine(None, None)))
    toc = write_toc()
    log("book: building the website (offline, warnings are errors)")
    command = [
        str(Path(sys.executable).with_name("jupyter-book")),
        "build",
        str(BOOK),
        "--toc",
        str(toc),
        "-W",
        "--keep-going",
        "-q",
    ]
    if url:
        config = write_book_config(BOOK, book_config_overrides(url), generated / "_config.yml")
        command += ["--config", str(config)]
    started = time.perf_counter()
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    if result.returncode != 0:
        raise NotebookBuildError(f"the website build failed:\n{result.stdout}\n{result.stderr}")
    log(f"book: built in {time.perf_counter() - started:.1f} s -> {BOOK / '_build' / 'html'}")
    return BOOK / "_build" / "html"


TEMPLATES = REPO / "tools" / "templates"
STUDENT_README = TEMPLATES / "STUDENT_README.md"
STUDENT_REQUIREMENTS = "requirements-student.txt"
# JupyterLab settings installed into the student's environment with the bundle, laid out as
# in the environment's prefix: nbgrader's instructor panels (Formgrader, Course List, Create
# Assignment) and its assignment list (no exchange in the bundle) are off, its Validate button
# stays; JupyterLab does not ask to fetch news or check for updates (the course is offline).
STUDENT_JUPYTER_CONFIG = TEMPLATES / "jupyter-config"


def _student_pyproject() -> str:
    """The bundle's pyproject.toml: the course package (with its subpackages and data files)
    and the JupyterLab settings for students, installed by ``pip install ... .``.

    The project table comes from the repository's pyproject.toml. The settings are shared data
    that pip copies into the environment (``etc/jupyter/``, ``share/jupyter/lab/settings/``),
    where JupyterLab reads them at start-up (they need a regular install, not ``-e``). The
    backend is hatchling, which builds the wheel without leaving a ``build/`` or
    ``course.egg-info/`` folder in the student's course folder (setuptools leaves both).
    """
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    lines = [
        "# The student bundle's package: the `course` helpers and the JupyterLab settings for",
        "# students. Install with `pip install -r requirements-student.txt .` (see README.md).",
        "# Generated by tools/build.py from the course repository's pyproject.toml.",
        "[build-system]",
        'requires = ["hatchling>=1.21"]',
        'build-backend = "hatchling.build"',
        "",
        "[project]",
    ]
    for key in ("name", "version", "description", "requires-python", "dependencies"):
        if key in project:
            lines.append(f"{key} = {json.dumps(project[key], ensure_ascii=False)}")
    lines += [
        "",
        "[tool.hatch.build.targets.wheel]",
        'packages = ["course"]',
        "",
        "[tool.hatch.build.targets.wheel.shared-data]",
    ]
    for path in sorted(STUDENT_JUPYTER_CONFIG.rglob("*.json")):
        # jupyter-config/<prefix path> -> <environment>/<prefix path>
        source = path.relative_to(STUDENT_JUPYTER_CONFIG.parent).as_posix()
        target = path.relative_to(STUDENT_JUPYTER_CONFIG).as_posix()
        lines.append(f"{json.dumps(source)} = {json.dumps(target)}")
    return "\n".join(lines) + "\n"


def _student_environment() -> str:
    """The bundle's environment.yml: the repository's, installing only the student's packages."""
    text = (REPO / "environment.yml").read_text()
    pip_lines = re.findall(r"^\s*- (-r \S+|-e \.)\s*$", text, re.M)
    if sorted(pip_lines) != ["-e .", "-r requirements-dev.txt"]:
        raise NotebookBuildError(
            f"environment.yml: expected pip lines `-r requirements-dev.txt` and `-e .`, got {pip_lines}"
        )
    # PyTorch's CPU index: from PyPI alone, Linux gets the multi-GB CUDA build of the pin
    text = re.sub(
        r"^(\s*)- -r requirements-dev\.txt$",
        rf"\1- --extra-index-url {CPU_INDEX}\n\1- -r {STUDENT_REQUIREMENTS}",
        text,
        flags=re.M,
    )
    text = re.sub(r"- -e \.$", "- .", text, flags=re.M)
    header = [
        "# conda users: `conda env create -f environment.yml && conda activate seqcourse`",
        f"# The student environment: {STUDENT_REQUIREMENTS} and the course package.",
    ]
    body = [line for line in text.splitlines() if not line.startswith("#")]
    return "\n".join(header + body) + "\n"


def _bundle_notebook(source: Path, target: Path, bibliography: dict) -> None:
    """Copy a notebook into the bundle with its MyST markup made readable in JupyterLab."""
    try:
        lab_markdown.convert_file(source, target, bibliography)
    except lab_markdown.MystConversionError as error:
        raise NotebookBuildError(f"bundle: {error}") from error


def build_bundle() -> Path:
    """Assemble ``dist/sequence-models/``: everything a student needs, nothing instructor-only.

    Lectures and assignments go through :mod:`tools.lab_markdown` (numbered equations,
    author-year citations and a References list instead of MyST roles JupyterLab cannot
    render); the website keeps the MyST originals.
    """
    if DIST.exists():
        shutil.rmtree(DIST)
    bibliography = lab_markdown.load_bibliography()
    for notebook in sorted((BUILD / "lectures").glob("*.ipynb")):
        _bundle_notebook(notebook, DIST / "lectures" / notebook.name, bibliography)
    for notebook in sorted(ASSIGNMENTS.glob("*/*.ipynb")):
        target = DIST / "assignments" / notebook.parent.name / notebook.name
        _bundle_notebook(notebook, target, bibliography)
    shutil.copytree(
        REPO / "course", DIST / "course", ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )
    shutil.copytree(STUDENT_JUPYTER_CONFIG, DIST / STUDENT_JUPYTER_CONFIG.name)
    shutil.copyfile(REPO / STUDENT_REQUIREMENTS, DIST / STUDENT_REQUIREMENTS)
    (DIST / "pyproject.toml").write_text(_student_pyproject())
    (DIST / "environment.yml").write_text(_student_environment())
    shutil.copyfile(STUDENT_README, DIST / "README.md")
    for name in LICENCE_FILES:  # the code's, the prose's, and where third-party notices are
        shutil.copyfile(REPO / name, DIST / name)
    # one top-level folder in the zip, so unpacking it never scatters files into Downloads/
    archive = shutil.make_archive(
        str(DIST.parent / Path(BUNDLE_ZIP_NAME).stem),
        "zip",
        root_dir=DIST.parent,
        base_dir=DIST.name,
    )
    log(f"bundle: {DIST} and {archive}")
    return DIST


LICENCE_FILES = ("LICENSE", "LICENSE-prose.txt", "NOTICE.md")


STAGES = {
    "lectures": build_lectures,
    "assignments": build_assignments,
    "book": build_book,
    "bundle": build_bundle,
}
ALL = (build_notebooks, build_bundle, build_book)  # the website offers the bundle


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("stage", nargs="?", default="all", choices=["all", *STAGES])
    args = parser.parse_args(argv)
    stages = ALL if args.stage == "all" else (STAGES[args.stage],)
    try:
        for stage in stages:
            stage()
    except (BuildFailed, *FAILURES) as error:
        print(f"[build] FAILED: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
