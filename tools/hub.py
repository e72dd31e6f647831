"""The course on a JupyterHub (``deploy/jupyterhub/``): ``python -m tools.hub course DIR``.

Makes ``DIR`` (``~/seqcourse`` in the hub's guide) the graders' nbgrader course directory:

* ``source/<assignment>/``: every assignment with its solutions and hidden tests, from
  ``solutions/``, as the build's own course directories have it;
* ``release/<assignment>/``: what students fetch, the notebook of ``assignments/`` with its
  MyST markup made readable in JupyterLab, exactly as the student bundle ships it;
* ``gradebook.db``: nbgrader's record of each assignment (what Formgrader lists);
* ``nbgrader_config.py``: the course's nbgrader settings (``autograder/nbgrader_config.py``),
  the course id and the hub's exchange directory.

Then ``nbgrader release_assignment a1_rnn_bptt`` in ``DIR`` (or Formgrader's release button)
puts an assignment in the exchange. Run it again after the course changes: the source and
release are made afresh, and the gradebook's students and submissions are kept.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from autograder import nbgrader_format as fmt
from tools import lab_markdown
from tools.notebooks import REPO

ASSIGNMENTS = REPO / "assignments"
EXCHANGE = "/srv/nbgrader/exchange"  # deploy/jupyterhub/setup.sh makes it
COURSE_ID = "seqcourse"  # autograder/nbgrader_config.py's, and the hub's settings'


def hub_config(exchange: str = EXCHANGE) -> str:
    """What the hub's course directory adds to the course's nbgrader settings."""
    return (
        "\n# ---- added by `python -m tools.hub course` ---------------------------------------------\n"
        f"c.CourseDirectory.course_id = {COURSE_ID!r}\n"
        f"c.Exchange.root = {exchange!r}\n"
    )


def make_course(
    root: Path, assignments: list[str] | None = None, exchange: str = EXCHANGE
) -> list[Path]:
    """Make (or refresh) the hub's course directory ``root``; return the released notebooks."""
    names = fmt.assignment_ids() if assignments is None else assignments
    for name in names:
        fmt.source_files(name)  # an unknown assignment: FileNotFoundError naming the known ones
        if not any((ASSIGNMENTS / name).glob("*.ipynb")):
            raise FileNotFoundError(
                f"{ASSIGNMENTS / name} has no student notebook: run `make` in {REPO} first"
            )
    fmt.make_course_dir(root, names, extra_config=hub_config(exchange))
    root.chmod(0o700)  # the solutions and hidden tests: the grader's alone
    bibliography = lab_markdown.load_bibliography()
    released = []
    for name in names:
        folder = fmt.release(root, name)  # nbgrader's release, and the gradebook's record
        for notebook in sorted(folder.glob("*.ipynb")):
            notebook.unlink()
        for notebook in sorted((ASSIGNMENTS / name).glob("*.ipynb")):
            target = folder / notebook.name
            lab_markdown.convert_file(notebook, target, bibliography)  # as the bundle ships it
            released.append(target)
        stray = [p for p in folder.iterdir() if p.suffix != ".ipynb"]
        for path in stray:  # nbgrader copies what sits beside a source; the bundle has none
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    return released


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    course = commands.add_parser("course", help="make the graders' nbgrader course directory")
    course.add_argument("root", type=Path, help="the course directory (~/seqcourse on the hub)")
    course.add_argument(
        "--assignment", action="append", help="only this assignment (repeatable); default all"
    )
    course.add_argument("--exchange", default=EXCHANGE, help=f"the exchange (default {EXCHANGE})")
    args = parser.parse_args(argv)
    try:
        released = make_course(args.root.expanduser().resolve(), args.assignment, args.exchange)
    except (FileNotFoundError, fmt.NbgraderError, lab_markdown.MystConversionError) as error:
        print(f"tools.hub: {error}", file=sys.stderr)
        return 1
    for path in released:
        print(f"released: {path}")
    print(
        f"course directory: {args.root} (exchange {args.exchange}); release an assignment with "
        f"`nbgrader release_assignment NAME` there, or in Formgrader"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
