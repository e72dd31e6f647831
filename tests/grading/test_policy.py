"""The course policy of the TA command (``--policy``, ``--submitted-at``), its exports
(``canvas.csv``, ``moodle.csv``, ``--roster``) and its regrade log (``regrades.csv``).

Unit tests of every rule of :mod:`autograder.platform.policy`, of where submission times come
from, of the exports' exact rows and of the regrade log's reasons; and one run of the real
command on two submissions of Assignment 1, re-run under a changed policy (marked ``sandbox``)."""

from __future__ import annotations

import csv
import io
import json
import struct
import subprocess
import zipfile
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from autograder.platform import course_folder, errors, exports, grade, policy, regrades, results
from autograder.platform.grade import command_line
from tests.grading.solution_loader import ROOT
from tools.submissions import honest_folder

ASSIGNMENT = "a1_rnn_bptt"
PLUS_ONE = timezone(timedelta(hours=1))
DUE = datetime(2026, 3, 6, 23, 59, tzinfo=PLUS_ONE)
POLICY = f"""
[assignments.{ASSIGNMENT}]
due = 2026-03-06T23:59:00+01:00

[extensions.{ASSIGNMENT}]
ext_days = 2
ext_date = "2026-03-10T12:00:00+01:00"

[penalty]
grace_minutes = 15
percent_per_day = 10
zero_after_days = 7

[late_days]
bank = 3
spent = {{ spender = 2, broke = 3 }}
"""


@pytest.fixture
def course_policy(tmp_path) -> policy.Policy:
    path = tmp_path / "policy.toml"
    path.write_text(POLICY)
    return policy.load(path)


def _at(**late) -> policy.SubmissionTime:
    return policy.SubmissionTime(DUE + timedelta(**late), "test")


# student, handed in, raw -> final, late by, late days used, penalty, words in the why
# fmt: off
RULES = {
    "early": ("s1", _at(hours=-5), 8.0, 8.0, "0:00:00", 0, 0.0, "on time"),
    "within grace": ("s1", _at(minutes=15), 8.0, 8.0, "0:15:00", 0, 0.0, "grace period of 15"),
    # 16 minutes: past the grace period, one (part of a) day, covered by a late day
    "just past grace": ("s1", _at(minutes=16), 8.0, 8.0, "0:16:00", 1, 0.0, "2 left"),
    # 3 days 1 minute late is 4 days; the bank's 3 cover 3; the 4th costs 10%
    "late, bank spent": ("s1", _at(days=3, minutes=1), 8.0, 7.2, "72:01:00", 3, 0.8, "4 day"),
    "bank partly spent": ("spender", _at(days=2), 10.0, 9.0, "48:00:00", 1, 1.0, "-10%"),
    "bank run out": ("broke", _at(hours=30), 10.0, 8.0, "30:00:00", 0, 2.0, "no late day left"),
    "at the zero point": ("broke", _at(days=7), 10.0, 3.0, "168:00:00", 0, 7.0, "-70%"),
    "beyond the zero point": ("s1", _at(days=7, seconds=1), 9.0, 0.0, "168:00:01", 0, 9.0,
                              "more than 7 day(s) late: score 0"),
    "extension in days": ("ext_days", _at(days=2), 6.0, 6.0, "0:00:00", 0, 0.0,
                          "on time (extension of 2 day(s))"),
    # 59 minutes past the extended date: one late day, from the bank
    "extension to a date": ("ext_date", _at(days=3, hours=13), 6.0, 6.0, "0:59:00", 1, 0.0,
                            "extension to 2026-03-10T12:00:00+01:00"),
    "no score": ("broke", _at(days=1), "", "", "24:00:00", 0, "", "no score to apply it to"),
}
# fmt: on


@pytest.mark.parametrize("case", RULES.values(), ids=RULES.keys())
def test_every_rule(course_policy, case):
    student, when, raw, final, late_by, used, penalty, words = case
    outcome = policy.apply(course_policy, ASSIGNMENT, student, raw, when)
    columns = outcome.columns(course_policy.due_for(ASSIGNMENT, student)[0], when)
    assert (columns["final total"], columns["late by"]) == (final, late_by), columns
    assert (columns["late days used"], columns["penalty"]) == (used, penalty), columns
    assert columns["raw total"] == raw and words in columns["policy"], columns
    assert columns["submitted at"] == when.when.isoformat() and columns["time from"] == "test"


def test_an_unknown_time_keeps_the_raw_score_and_says_so(course_policy):
    unknown = policy.SubmissionTime(None, "no timestamp anywhere")
    outcome = policy.apply(course_policy, ASSIGNMENT, "s1", 7.5, unknown)
    columns = outcome.columns(DUE, unknown)
    assert (columns["final total"], columns["late by"], columns["late days used"]) == (7.5, "", "")
    assert columns["policy"].startswith("submission time unknown (no timestamp anywhere)")
    assert columns["submitted at"] == "" and outcome.terms["submitted at"] == "unknown"


BAD_POLICIES = {
    "not TOML": ("due = ", "not valid TOML"),
    "unknown key": ("[penalty]\npercent_per_dya = 10", "penalty.percent_per_dya: unknown key"),
    "no zone": (
        f"[assignments.{ASSIGNMENT}]\ndue = 2026-03-06T23:59:00",
        f"assignments.{ASSIGNMENT}.due: 2026-03-06T23:59:00 has no time zone",
    ),  # fmt: skip
    "a date only": (
        f"[assignments.{ASSIGNMENT}]\ndue = 2026-03-06",
        f"assignments.{ASSIGNMENT}.due: must be a date-time",
    ),  # fmt: skip
    "no due": (f"[assignments.{ASSIGNMENT}]\n", f"assignments.{ASSIGNMENT}.due: missing"),
    "bad string": (
        f'[assignments.{ASSIGNMENT}]\ndue = "next friday"',
        "not an ISO 8601 date-time: 'next friday'",
    ),  # fmt: skip
    "negative percent": ("[penalty]\npercent_per_day = -5", "penalty.percent_per_day: must be"),
    "half a late day": ("[late_days]\nbank = 1.5", "late_days.bank: must be a whole number"),
    "spent not a table": ("[late_days]\nspent = 2", "late_days.spent: must be a table"),
    "extension without due": ("[extensions.a9]\ns1 = 1", "extensions.a9: no due date for 'a9'"),
    "bad zone": ('zip_time_zone = "Mars/Olympus"', "zip_time_zone: not a time zone"),
}


@pytest.mark.parametrize("text, message", BAD_POLICIES.values(), ids=BAD_POLICIES.keys())
def test_a_malformed_policy_names_the_file_and_the_key(tmp_path, text, message):
    path = tmp_path / "course policy.toml"
    path.write_text(text)
    with pytest.raises(policy.PolicyError) as caught:
        policy.load(path)
    assert str(caught.value).startswith(f"--policy {path}: ") and message in str(caught.value)


def _refused(tmp_path, capsys, *options: str) -> str:
    """Run the command with ``options``: it must exit 3 before grading or writing anything."""
    (tmp_path / "in").mkdir(exist_ok=True)
    argv = ["grade", ASSIGNMENT, str(tmp_path / "in"), "--out", str(tmp_path / "out"), *options]
    assert grade.main(argv) == errors.EXIT_FAILED
    assert not (tmp_path / "out").exists()
    return capsys.readouterr().err


def test_bad_policy_arguments_exit_3(tmp_path, capsys):
    (tmp_path / "p.toml").write_text("[penalty]\ngrace = 5\n")
    err = _refused(tmp_path, capsys, "--policy", str(tmp_path / "p.toml"))
    assert "p.toml: penalty.grace: unknown key" in err
    (tmp_path / "other.toml").write_text("[assignments.a2_lstm_gru]\ndue = 2026-01-01T00:00:00Z")
    err = _refused(tmp_path, capsys, "--policy", str(tmp_path / "other.toml"))
    assert f"assignments.{ASSIGNMENT}.due: missing" in err
    err = _refused(tmp_path, capsys, "--policy", str(tmp_path / "absent.toml"))
    assert "absent.toml: cannot be read" in err
    (tmp_path / "good.toml").write_text(POLICY)
    (tmp_path / "times.csv").write_text("student,timestamp\ns1,2026-03-06 23:00\n")
    err = _refused(tmp_path, capsys, "--policy", str(tmp_path / "good.toml"),
                   "--submitted-at", str(tmp_path / "times.csv"))  # fmt: skip
    assert "times.csv: line 2: '2026-03-06 23:00' is not an ISO 8601 date-time with a time" in err
    err = _refused(tmp_path, capsys, "--submitted-at", str(tmp_path / "times.csv"))
    assert "--submitted-at needs --policy" in err
    (tmp_path / "roster.csv").write_text("id,name\ns1,Ada\n")
    err = _refused(tmp_path, capsys, "--roster", str(tmp_path / "roster.csv"))
    assert "roster.csv: no column 'student'" in err


def test_submitted_at_reads_a_platform_export(tmp_path):
    path = tmp_path / "times.csv"
    path.write_text(
        "\ufeffstudent,timestamp,extra\n"
        "s1,2026-03-06T22:00:00+01:00,x\n"
        "s2,2026-03-07T01:00:00Z,\n"
        "s1,2026-03-07T00:30:00+01:00,resubmitted\n"
    )
    times = policy.read_submitted_at(path)
    assert times["s1"] == policy.SubmissionTime(DUE + timedelta(minutes=31), "times.csv line 4")
    assert times["s2"].when == datetime(2026, 3, 7, 1, tzinfo=UTC)
    path.write_text("name,time\ns1,2026-03-06T22:00:00Z\n")
    with pytest.raises(policy.PolicyError, match="no column student, timestamp"):
        policy.read_submitted_at(path)


def test_nbgrader_exchange_timestamps():
    parse = policy.parse_exchange_timestamp
    assert parse("2026-03-06 22:58:23.948203 UTC\n") == datetime(
        2026, 3, 6, 22, 58, 23, 948203, tzinfo=UTC
    )
    assert parse("2026-03-06 23:58:23 +0100") == datetime(2026, 3, 6, 22, 58, 23, tzinfo=UTC)
    assert parse("2026-03-06 23:58:23 Europe/Paris").utcoffset() == timedelta(hours=1)
    for bad in ("2026-03-06 23:58:23", "yesterday", "2026-03-06 23:58:23 Nowhere/Else"):
        with pytest.raises(ValueError):
            parse(bad)


def _zip_with_times(path: Path) -> None:
    """A zip with a member carrying the extended UTC time field, one with only its DOS time,
    and a folder with nbgrader's timestamp.txt."""
    with zipfile.ZipFile(path, "w") as archive:
        exact = zipfile.ZipInfo("exact.ipynb", date_time=(2026, 3, 1, 0, 0, 0))
        stamp = int(datetime(2026, 3, 7, 0, 30, tzinfo=UTC).timestamp())
        exact.extra = struct.pack("<HHBi", 0x5455, 5, 1, stamp)
        archive.writestr(exact, "{}")
        archive.writestr(zipfile.ZipInfo("local.ipynb", date_time=(2026, 3, 7, 0, 10, 0)), "{}")
        archive.writestr("s3/a1_rnn_bptt.ipynb", "{}")
        archive.writestr("s3/timestamp.txt", "2026-03-06 20:00:00.5 UTC")


def test_times_come_from_the_exchange_or_the_zip_never_a_file_time(tmp_path):
    _zip_with_times(tmp_path / "in.zip")
    origins = {"exact": "exact.ipynb", "local": "local.ipynb", "s3": "s3/a1_rnn_bptt.ipynb"}
    found = policy.input_times(tmp_path / "in.zip", origins, PLUS_ONE, "in the due date's zone")
    assert found["exact"].when == datetime(2026, 3, 7, 0, 30, tzinfo=UTC)
    assert "UTC, extended field" in found["exact"].source
    assert found["local"].when == datetime(2026, 3, 7, 0, 10, tzinfo=PLUS_ONE)
    assert found["local"].source.endswith("stores no zone), in the due date's zone")
    assert found["s3"] == policy.SubmissionTime(
        datetime(2026, 3, 6, 20, 0, 0, 500000, tzinfo=UTC), "nbgrader's s3/timestamp.txt"
    )
    folder = tmp_path / "in"
    (folder / "s3").mkdir(parents=True)
    (folder / "s3" / "a1_rnn_bptt.ipynb").write_text("{}")
    (folder / "s3" / "timestamp.txt").write_text("2026-03-06 20:00:00 UTC")
    (folder / "s4").mkdir()
    (folder / "s4" / "a1_rnn_bptt.ipynb").write_text("{}")  # a file time only: not used
    (folder / "s4" / "timestamp.txt").symlink_to(folder / "s3" / "timestamp.txt")
    (folder / "s5.ipynb").write_text("{}")
    (folder / "s6").mkdir()
    (folder / "s6" / "a1_rnn_bptt.ipynb").write_text("{}")
    (folder / "s6" / "timestamp.txt").write_text("soon")
    origins = {s: f"{s}/a1_rnn_bptt.ipynb" for s in ("s3", "s4", "s6")} | {"s5": "s5.ipynb"}
    found = policy.input_times(folder, origins, PLUS_ONE, "")
    assert found["s3"].when == datetime(2026, 3, 6, 20, tzinfo=UTC)
    assert set(found) == {"s3", "s6"}  # s4's link is not followed, s5 has no folder
    assert found["s6"] == policy.SubmissionTime(None, "s6/timestamp.txt is not a timestamp: 'soon'")


def _read(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))


def test_exports_with_a_roster(tmp_path):
    (tmp_path / "roster.csv").write_text(
        "student,name,first_name,last_name,email,id_number,canvas_id,sis_user_id,"
        "sis_login_id,section\n"
        's1,"Lovelace, Ada",Ada,Lovelace,ada@uni.example,1001,77,SIS1,ada,Lab A\n'
        's2,"Turing, Alan",Alan,Turing,alan@uni.example,1002,78,SIS2,alan,Lab B\n'
    )
    roster, fields = exports.load_roster(tmp_path / "roster.csv")
    scores = {"s1": 7.2, "zed": 10.0}
    exports.write_canvas(tmp_path / "canvas.csv", ASSIGNMENT, scores, roster)
    exports.write_moodle(tmp_path / "moodle.csv", ASSIGNMENT, scores, roster)
    assert _read(tmp_path / "canvas.csv") == [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", ASSIGNMENT],
        ["Lovelace, Ada", "77", "SIS1", "ada", "Lab A", "7.2"],
        ["Turing, Alan", "78", "SIS2", "alan", "Lab B", ""],
        ["zed", "", "", "", "", "10"],
    ]
    assert _read(tmp_path / "moodle.csv") == [
        ["Student", "First name", "Last name", "ID number", "Email address", ASSIGNMENT],
        ["s1", "Ada", "Lovelace", "1001", "ada@uni.example", "7.2"],
        ["s2", "Alan", "Turing", "1002", "alan@uni.example", ""],
        ["zed", "", "", "", "", "10"],
    ]
    assert exports.empty_columns(fields, roster, scores) == [
        "1 graded student(s) not on the roster, by id only: zed",
        "1 roster student(s) with no submission: score left empty",
    ]


def test_exports_without_a_roster_say_which_columns_are_empty(tmp_path):
    scores = {"s1": 0.0, "s2": ""}
    exports.write_canvas(tmp_path / "canvas.csv", ASSIGNMENT, scores, {})
    assert _read(tmp_path / "canvas.csv")[1:] == [["s1", "", "", "", "", "0"], ["s2"] + [""] * 5]
    assert exports.empty_columns(set(), {}, scores) == [
        "canvas.csv: Student holds the grading id (names: no --roster)",
        "canvas.csv: ID, SIS User ID, SIS Login ID, Section empty (no --roster)",
        "moodle.csv: First name, Last name, ID number, Email address empty (no --roster)",
    ]
    (tmp_path / "twice.csv").write_text("student,section\ns1,A\ns1,B\n")
    with pytest.raises(exports.RosterError, match="line 3: s1 is listed twice"):
        exports.load_roster(tmp_path / "twice.csv")


def test_a_grades_row_names_its_columns_by_one_rule():
    """grades.csv's header and each row's cells come from the one GradeRow: the policy's
    columns after max (only under a policy), the parts after them, and the final score that the
    exports carry is the policy's final total when there is one."""
    row = results.GradeRow("s1", file="s1.ipynb", status="graded", total=7.0, max=10.0,
                         parts={"p1": 3.0, "p2": 4.0}, feedback="f.html")  # fmt: skip
    plain = ["student", "file", "status", "total", "max", "p1", "p2", "flags", "message",
             "feedback"]  # fmt: skip
    assert results.GradeRow.columns(["p1", "p2"], late=False) == plain
    assert list(row.csv()) == plain and row.csv()["p2"] == 4.0 and row.final == 7.0
    row.late = dict.fromkeys(policy.COLUMNS, "") | {"raw total": 7.0, "final total": 6.3}
    with_policy = results.GradeRow.columns(["p1", "p2"], late=True)
    assert with_policy == [*plain[:5], *policy.COLUMNS, *plain[5:]]
    assert list(row.csv()) == with_policy and row.final == 6.3 == row.csv()["final total"]
    one, two = {"a1": None}, {"a1": None, "a1_extra": None}
    assert results.part_column(one, "a1", "p1") == "p1"
    assert results.part_column(two, "a1_extra", "p1") == "a1_extra:p1"


def _kept(score: float, final: float, digest: str = "d1", extension: str = "") -> dict:
    terms = {"due": "D", "extension": extension, "late days left": "3", "rule": "R"}
    return regrades.kept({"p1": score, "total": score, "final total": final}, ["p1"], digest, terms)


def test_the_regrade_log_says_why_and_adds_nothing_when_nothing_changed(tmp_path):
    before = {"s1": _kept(4.0, 3.6), "s2": _kept(5.0, 5.0), "s3": _kept(2.0, 2.0)}
    after = {
        "s1": _kept(4.0, 4.0, extension="extension of 2 day(s)"),
        "s2": _kept(6.0, 6.0, digest="d2"),
        "s3": _kept(1.0, 1.0),
        "new": _kept(1.0, 1.0),
    }
    rows = regrades.changes(
        before, after, {"s2": "submission changed", "s3": "judged again (--force)"}
    )
    assert [tuple(r.values()) for r in rows] == [
        ("s1", "final total", 3.6, 4.0,
         "policy changed: extension for s1 (none -> extension of 2 day(s))"),
        ("s2", "p1", 5.0, 6.0, "submission changed"),
        ("s2", "total", 5.0, 6.0, "submission changed"),
        ("s2", "final total", 5.0, 6.0, "submission changed"),
        ("s3", "p1", 2.0, 1.0, "judged again (--force)"),
        ("s3", "total", 2.0, 1.0, "judged again (--force)"),
        ("s3", "final total", 2.0, 1.0, "judged again (--force)"),
    ]  # fmt: skip
    regrades.append(rows, tmp_path / "regrades.csv")
    regrades.append(regrades.changes(after, after, {}), tmp_path / "regrades.csv")
    assert _read(tmp_path / "regrades.csv")[0] == regrades.COLUMNS
    assert len(_read(tmp_path / "regrades.csv")) == 1 + len(rows)


# -- the real command: two submissions, a policy, and a re-run under a changed policy ---------


@pytest.mark.sandbox
def test_the_command_applies_the_policy_exports_and_logs_regrades(tmp_path):
    out = tmp_path / "out"
    course = course_folder.prepare_course(out, ASSIGNMENT)
    folder = honest_folder(course, ASSIGNMENT, tmp_path / "in", ["ada", "bob"])
    (tmp_path / "times.csv").write_text(
        "student,timestamp\nada,2026-03-06T23:00:00+01:00\nbob,2026-03-09T00:30:00+01:00\n"
    )
    (tmp_path / "roster.csv").write_text('student,name,sis_user_id\nada,"Lovelace, Ada",S1\n')
    rule = "[penalty]\npercent_per_day = 25\n[late_days]\nbank = 1\n"
    (tmp_path / "policy.toml").write_text(
        f"[assignments.{ASSIGNMENT}]\ndue = 2026-03-06T23:59:00+01:00\n{rule}"
    )
    options = ("--workers", "1", "--policy", str(tmp_path / "policy.toml"), "--submitted-at",
               str(tmp_path / "times.csv"), "--roster", str(tmp_path / "roster.csv"))  # fmt: skip

    def run() -> dict[str, dict]:
        result = subprocess.run(command_line(ASSIGNMENT, folder, out, *options), cwd=ROOT,
                                capture_output=True, text=True, timeout=600)  # fmt: skip
        assert result.returncode in (0, 1), result.stdout[-3000:] + result.stderr[-3000:]
        with (out / "grades.csv").open(newline="") as handle:
            return {
                row["student"]: row | {"summary": result.stdout} for row in csv.DictReader(handle)
            }

    first = run()
    raw = float(first["ada"]["raw total"])
    assert raw > 0 and first["bob"]["raw total"] == first["ada"]["total"] == str(raw)
    assert first["ada"]["final total"] == str(raw) and first["ada"]["policy"] == "on time"
    # bob: 2 days and 31 minutes late is 3 days; 1 late day spent; 2 days at 25%
    assert (first["bob"]["late by"], first["bob"]["late days used"]) == ("48:31:00", "1")
    assert float(first["bob"]["final total"]) == pytest.approx(raw * 0.5)
    assert first["bob"]["time from"] == "times.csv line 3"
    assert (
        "-50%" in first["bob"]["policy"] and "1 submission(s) penalised" in first["bob"]["summary"]
    )
    assert (
        "canvas.csv: ID, SIS Login ID, Section empty (not in the roster)" in first["bob"]["summary"]
    )
    assert _read(out / "canvas.csv") == [
        ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", ASSIGNMENT],
        ["Lovelace, Ada", "", "S1", "", "", f"{raw:g}"],
        ["bob", "", "", "", "", f"{raw * 0.5:g}"],
    ]
    assert _read(out / "moodle.csv")[2] == ["bob", "", "", "", "", f"{raw * 0.5:g}"]
    report = (out / "report.html").read_text()
    assert '<h2 id="policy">' in report and "times.csv line 3" in report
    assert not (out / "regrades.csv").exists()

    extension = f"[extensions.{ASSIGNMENT}]\nbob = 3\n"
    (tmp_path / "policy.toml").write_text(
        f"[assignments.{ASSIGNMENT}]\ndue = 2026-03-06T23:59:00+01:00\n{extension}{rule}"
    )
    second = run()
    assert json.loads((out / "state.json").read_text())["timing"]["judged"] == 0
    assert second["bob"]["final total"] == str(raw) and second["bob"]["late days used"] == "0"
    assert _read(out / "regrades.csv") == [
        regrades.COLUMNS,
        ["bob", "final total", f"{raw * 0.5}", f"{raw}",
         "policy changed: extension for bob (none -> extension of 3 day(s))"],
    ]  # fmt: skip
    assert _read(out / "canvas.csv")[2][-1] == f"{raw:g}"
    run()  # nothing changed: nothing appended
    assert len(_read(out / "regrades.csv")) == 2
