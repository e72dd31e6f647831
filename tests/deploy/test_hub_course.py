"""``python -m tools.hub course``: the graders' course directory on the hub, and nbgrader's
exchange between it and a student's server, each side with its role's settings from
``deploy/jupyterhub/jupyter-config/`` (as the hub gives them), on one machine without a hub."""

from __future__ import annotations

import nbformat
import pytest

from autograder import nbgrader_format as fmt
from tools import hub, lab_markdown
from tools.notebooks import REPO

ASSIGNMENT = "a1_rnn_bptt"
ROLES = REPO / "deploy" / "jupyterhub" / "jupyter-config"

pytestmark = pytest.mark.sandbox  # runs nbgrader


def _as_role(monkeypatch, role: str, home, exchange) -> None:
    """The environment the hub gives a user server of ``role`` (its pre-spawn hook)."""
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(ROLES / role))
    monkeypatch.setenv("SEQCOURSE_EXCHANGE", str(exchange))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(home / ".jupyter"))
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(home / ".local" / "share" / "jupyter"))


def test_the_course_directory_releases_what_the_bundle_ships_through_the_hubs_exchange(
    tmp_path, monkeypatch
):
    exchange, grader, student = tmp_path / "exchange", tmp_path / "ta", tmp_path / "s001"
    for folder in (exchange, grader, student):
        folder.mkdir()
    course = grader / "seqcourse"
    _as_role(monkeypatch, "grader", grader, exchange)
    released = hub.make_course(course, [ASSIGNMENT], exchange=str(exchange))

    name = f"{ASSIGNMENT}.ipynb"
    assert released == [course / "release" / ASSIGNMENT / name]
    bundled = tmp_path / "bundled.ipynb"  # what the student bundle ships
    lab_markdown.convert_file(REPO / "assignments" / ASSIGNMENT / name, bundled,
                              lab_markdown.load_bibliography())  # fmt: skip
    assert released[0].read_bytes() == bundled.read_bytes()
    assert (course / "source" / ASSIGNMENT / name).is_file()
    assert course.stat().st_mode & 0o777 == 0o700  # its solutions are the grader's alone
    with fmt.gradebook(course) as gradebook:  # what Formgrader lists
        assert [a.name for a in gradebook.assignments] == [ASSIGNMENT]
    settings = (course / "nbgrader_config.py").read_text()
    assert settings.startswith(fmt.CONFIG.read_text())  # the course's nbgrader settings, then
    assert f"c.Exchange.root = {str(exchange)!r}" in settings

    fmt.nbgrader(course, "release_assignment", ASSIGNMENT)  # as the grader, in a terminal
    outbound = exchange / hub.COURSE_ID / "outbound" / ASSIGNMENT / name
    assert outbound.read_bytes() == bundled.read_bytes()

    _as_role(monkeypatch, "student", student, exchange)  # the Assignment List's fetch
    fmt.nbgrader(student, "fetch_assignment", ASSIGNMENT)
    fetched = nbformat.read(student / ASSIGNMENT / name, as_version=4)
    assert fetched.metadata["course"]["assignment"] == ASSIGNMENT  # what `course handin` reads

    again = hub.make_course(course, [ASSIGNMENT], exchange=str(exchange))  # after a change
    assert again == released and released[0].read_bytes() == bundled.read_bytes()


def test_the_course_settings_keep_nbgrader_in_its_own_folder_whatever_the_user_settings_say(
    tmp_path, monkeypatch
):
    """A grader's server names ~/seqcourse as nbgrader's course directory (for Formgrader);
    the grading command's own course folders must still be theirs, not that one."""
    home, exchange = tmp_path / "ta", tmp_path / "exchange"
    home.mkdir()
    exchange.mkdir()
    _as_role(monkeypatch, "grader", home, exchange)
    course = fmt.make_course_dir(tmp_path / "grading" / "course", [ASSIGNMENT])
    fmt.nbgrader(course, "db", "assignment", "add", ASSIGNMENT)
    assert (course / "gradebook.db").is_file()
    assert not (home / "seqcourse").exists()


def test_an_unknown_assignment_is_refused_naming_the_known(tmp_path, capsys):
    assert hub.main(["course", str(tmp_path / "c"), "--assignment", "a9_nothing"]) == 1
    said = capsys.readouterr().err
    assert "unknown assignment 'a9_nothing'" in said and ASSIGNMENT in said
    assert not (tmp_path / "c").exists()
