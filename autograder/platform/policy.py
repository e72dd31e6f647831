"""The course's late policy (``grade ... --policy FILE``): due dates, extensions, a bank of late
days and a penalty, applied to a submission's raw score and the time it was handed in.

The policy file is TOML (read with :mod:`tomllib`)::

    zip_time_zone = "Europe/Paris"      # the zone of a zip member's local time (see below)

    [assignments.a1_rnn_bptt]
    due = 2026-03-06T23:59:00+01:00     # ISO 8601 with a time zone (a TOML date-time or a string)

    [extensions.a1_rnn_bptt]
    s123 = 2                            # days added to the due date
    s456 = 2026-03-10T12:00:00+01:00    # or the student's own due date

    [penalty]
    grace_minutes = 15                  # up to this late counts as on time (default 0)
    percent_per_day = 10                # of the raw score, per late day not covered (default 0)
    zero_after_days = 7                 # more than this many days late: score 0 (default: never)

    [late_days]
    bank = 3                            # late days each student has for the whole course
    spent = { s789 = 2 }                # days already spent on earlier assignments

The rule, for a student whose due date (the extension's, else the assignment's) is ``D`` and who
handed in at ``T``, with ``L = T - D``:

1. ``L <= 0``: on time. ``0 < L <= grace``: on time, within the grace period; nothing is spent.
2. ``L`` more than ``zero_after_days`` days: the final score is 0, and no late day is spent.
3. Otherwise the submission is ``n = ceil(L / 24 h)`` days late (a part of a day is a day; the
   grace period does not shorten ``L``). Late days are spent automatically, as many as cover
   ``n`` and as the bank has left (``bank`` minus ``spent``); each of the ``n`` days not covered
   costs ``percent_per_day`` percent of the raw score, at most 100 percent.
4. A submission whose time is unknown keeps its raw score, and its row says so: no rule is
   guessed for it.

Submission times come, in this order, from the ``--submitted-at`` CSV (a learning platform's
export), from the ``timestamp.txt`` that nbgrader's exchange writes beside a collected notebook,
or from a zip member's time (exact where the zip has its extended UTC time field; otherwise the
zip's local time, read in ``zip_time_zone``, or in the due date's offset, and the row says so).
A file's modification time is never used: anyone who copies a folder can change it.
"""

from __future__ import annotations

import csv
import math
import os
import re
import struct
import tomllib
import zipfile
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, timezone, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

DAY = timedelta(days=1)
TIMESTAMP_FILE = "timestamp.txt"  # what nbgrader's exchange writes beside a submission
TIMESTAMP_BYTES = 200  # more than that is not a timestamp nbgrader wrote
COLUMNS = [
    "submitted at",
    "time from",
    "due",
    "raw total",
    "late by",
    "late days used",
    "penalty",
    "final total",
    "policy",
]


class PolicyError(ValueError):
    """A policy file, or a file of submission times, that cannot be used: says which and why."""


@dataclass(frozen=True)
class Rule:
    """The penalty and the bank (see the module's docstring for their meaning)."""

    grace_minutes: float = 0.0
    percent_per_day: float = 0.0
    zero_after_days: float | None = None
    bank: int = 0


@dataclass(frozen=True)
class Policy:
    path: Path
    due: dict[str, datetime]  # assignment -> due date
    extensions: dict[str, dict[str, datetime | float]]  # assignment -> student -> date or days
    spent: dict[str, int]  # student -> late days spent before
    rule: Rule
    zip_time_zone: tzinfo | None = None

    def due_for(self, assignment: str, student: str) -> tuple[datetime, str]:
        """The student's due date, and the extension that set it in words ('' if none)."""
        due = self.due[assignment]
        extension = self.extensions.get(assignment, {}).get(student)
        if extension is None:
            return due, ""
        if isinstance(extension, datetime):
            return extension, f"extension to {extension.isoformat()}"
        return due + extension * DAY, f"extension of {extension:g} day(s)"

    def bank_left(self, student: str) -> int:
        return max(0, self.rule.bank - self.spent.get(student, 0))


@dataclass(frozen=True)
class SubmissionTime:
    """When a submission was handed in (None: unknown), and where that came from, in words."""

    when: datetime | None
    source: str


@dataclass
class Outcome:
    """What the policy made of one submission: the columns :data:`COLUMNS` of its row."""

    raw: float | str
    final: float | str
    late: timedelta | None = None
    days_used: int | str = ""
    penalty: float | str = ""
    why: str = ""
    terms: dict[str, str] = field(default_factory=dict)  # what decided it, for the regrade log

    def columns(self, due: datetime, time: SubmissionTime) -> dict[str, object]:
        return {
            "submitted at": time.when.isoformat() if time.when else "",
            "time from": time.source,
            "due": due.isoformat(),
            "raw total": self.raw,
            "late by": format_late(self.late),
            "late days used": self.days_used,
            "penalty": self.penalty,
            "final total": self.final,
            "policy": self.why,
        }


def format_late(late: timedelta | None) -> str:
    """``h:mm:ss`` of lateness (0:00:00 on time or early); '' when the time is unknown."""
    if late is None:
        return ""
    seconds = max(0, round(late.total_seconds()))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def apply(
    policy: Policy, assignment: str, student: str, raw: float | str, time: SubmissionTime
) -> Outcome:
    """The final score of ``student``'s submission of ``raw`` points handed in at ``time``."""
    rule = policy.rule
    due, extension = policy.due_for(assignment, student)
    terms = {
        "due": due.isoformat(),
        "extension": extension,
        "submitted at": time.when.isoformat() if time.when else "unknown",
        "late days left": str(policy.bank_left(student)),
        "rule": repr(rule),
    }
    if time.when is None:
        why = f"submission time unknown ({time.source}): no late rule applied; check by hand"
        return Outcome(raw, raw, why=why, terms=terms)
    late = time.when - due
    outcome = Outcome(raw, raw, late, 0, 0.0, terms=terms)
    said = f" ({extension})" if extension else ""
    if late <= timedelta(0):
        outcome.why = f"on time{said}"
    elif late <= timedelta(minutes=rule.grace_minutes):
        outcome.why = f"on time: within the grace period of {rule.grace_minutes:g} min{said}"
    elif rule.zero_after_days is not None and late > rule.zero_after_days * DAY:
        outcome.final = 0.0 if raw != "" else ""
        outcome.penalty = raw
        outcome.why = f"more than {rule.zero_after_days:g} day(s) late{said}: score 0"
    else:
        days = math.ceil(late / DAY)
        used = min(days, policy.bank_left(student))
        percent = min(100.0, (days - used) * rule.percent_per_day)
        outcome.days_used = used
        if raw != "":
            outcome.final = round(raw * (1 - percent / 100), 4)
            outcome.penalty = round(raw - outcome.final, 4)
        words = [f"{days} day(s) late{said}"]
        if used:
            words.append(f"{used} late day(s) spent, {policy.bank_left(student) - used} left")
        elif rule.bank:
            words.append("no late day left")
        if days > used:
            words.append(f"{days - used} day(s) at {rule.percent_per_day:g}%: -{percent:g}%")
        outcome.why = "; ".join(words)
    if raw == "":
        outcome.penalty = ""
        outcome.why += " (no score to apply it to)"
    return outcome


# -- reading the policy file ---------------------------------------------------------------------


def load(path: Path) -> Policy:
    """The policy in ``path``; a :class:`PolicyError` naming the file and the key if it is wrong."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise PolicyError(f"--policy {path}: cannot be read ({error.strerror})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise PolicyError(f"--policy {path}: not valid TOML ({error})") from None

    def fail(key: str, problem: str) -> PolicyError:
        return PolicyError(f"--policy {path}: {key}: {problem}")

    _known(data, {"assignments", "extensions", "penalty", "late_days", "zip_time_zone"}, "", fail)
    due = {}
    for assignment, table in _table(data, "assignments", fail).items():
        key = f"assignments.{assignment}"
        if not isinstance(table, dict):
            raise fail(key, "must be a table with a key 'due'")
        _known(table, {"due"}, key, fail)
        if "due" not in table:
            raise fail(f"{key}.due", "missing")
        due[assignment] = _moment(table["due"], f"{key}.due", fail)
    extensions: dict[str, dict[str, datetime | float]] = {}
    for assignment, table in _table(data, "extensions", fail).items():
        key = f"extensions.{assignment}"
        if assignment not in due:
            raise fail(key, f"no due date for {assignment!r} under [assignments]")
        if not isinstance(table, dict):
            raise fail(key, "must be a table of student = days or student = date-time")
        extensions[assignment] = {}
        for student, value in table.items():
            if _number(value):
                if value <= 0:
                    raise fail(f"{key}.{student}", "a number of days must be positive")
                extensions[assignment][student] = float(value)
            else:
                extensions[assignment][student] = _moment(value, f"{key}.{student}", fail)
    penalty = _table(data, "penalty", fail)
    _known(penalty, {"grace_minutes", "percent_per_day", "zero_after_days"}, "penalty", fail)
    late_days = _table(data, "late_days", fail)
    _known(late_days, {"bank", "spent"}, "late_days", fail)
    rule = Rule(
        grace_minutes=_amount(penalty, "grace_minutes", "penalty", fail, 0.0),
        percent_per_day=_amount(penalty, "percent_per_day", "penalty", fail, 0.0),
        zero_after_days=_amount(penalty, "zero_after_days", "penalty", fail, None),
        bank=int(_amount(late_days, "bank", "late_days", fail, 0, whole=True)),
    )
    spent = {
        student: int(_amount({student: days}, student, "late_days.spent", fail, 0, whole=True))
        for student, days in _table(late_days, "spent", fail, "late_days.").items()
    }
    zone = None
    if "zip_time_zone" in data:
        try:
            zone = _zone(data["zip_time_zone"])
        except ValueError as error:
            raise fail("zip_time_zone", str(error)) from None
    return Policy(path, due, extensions, spent, rule, zone)


def _known(table: dict, keys: set[str], where: str, fail) -> None:
    for key in table:
        if key not in keys:
            name = f"{where}.{key}" if where else key
            raise fail(name, f"unknown key (expected one of: {', '.join(sorted(keys))})")


def _table(data: dict, key: str, fail, prefix: str = "") -> dict:
    value = data.get(key, {})
    if not isinstance(value, dict):
        raise fail(prefix + key, "must be a table")
    return value


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _amount(table: dict, key: str, where: str, fail, default, whole: bool = False):
    if key not in table:
        return default
    value = table[key]
    if not _number(value) or value < 0 or not math.isfinite(value):
        raise fail(f"{where}.{key}", f"must be a number >= 0, not {value!r}")
    if whole and value != int(value):
        raise fail(f"{where}.{key}", f"must be a whole number of days, not {value!r}")
    return value


def _moment(value: object, key: str, fail) -> datetime:
    """A date-time with a time zone: a TOML offset date-time, or an ISO 8601 string."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise fail(key, f"not an ISO 8601 date-time: {value!r}") from None
    if not isinstance(value, datetime):
        kind = "a date without a time" if isinstance(value, date) else repr(value)
        raise fail(key, f"must be a date-time with a time zone, not {kind}")
    if value.tzinfo is None:
        raise fail(key, f"{value.isoformat()} has no time zone (add Z or an offset like +01:00)")
    return value


def _zone(value: object) -> tzinfo:
    """``+01:00``-style offsets, ``UTC``, or an IANA name such as ``Europe/Paris``; ValueError
    for anything else."""
    if isinstance(value, str):
        offset = re.fullmatch(r"([+-])(\d\d):?(\d\d)", value)
        if offset:
            minutes = int(offset[2]) * 60 + int(offset[3])
            return timezone((-1 if offset[1] == "-" else 1) * timedelta(minutes=minutes))
        try:
            return ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            pass
    raise ValueError(
        f"not a time zone (an offset like +01:00, or a name like Europe/Paris): {value!r}"
    )


# -- where submission times come from ------------------------------------------------------------


def read_submitted_at(path: Path) -> dict[str, SubmissionTime]:
    """``--submitted-at FILE``: student name -> time, from a CSV with the columns ``student`` and
    ``timestamp`` (ISO 8601 with a time zone). A student listed twice keeps the later time."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise PolicyError(f"--submitted-at {path}: cannot be read ({error})") from None
    reader = csv.DictReader(text.splitlines())
    missing = {"student", "timestamp"} - set(reader.fieldnames or [])
    if missing:
        raise PolicyError(
            f"--submitted-at {path}: no column {', '.join(sorted(missing))} in the header row"
            " (expected the columns student,timestamp)"
        )
    times: dict[str, SubmissionTime] = {}
    for line, row in enumerate(reader, start=2):
        student, stamp = (row["student"] or "").strip(), (row["timestamp"] or "").strip()
        if not student:
            raise PolicyError(f"--submitted-at {path}: line {line}: no student")
        try:
            when = datetime.fromisoformat(stamp)
        except ValueError:
            when = None
        if when is None or when.tzinfo is None:
            raise PolicyError(
                f"--submitted-at {path}: line {line}: {stamp!r} is not an ISO 8601 date-time"
                " with a time zone"
            )
        if student not in times or when > times[student].when:
            times[student] = SubmissionTime(when, f"{path.name} line {line}")
    return times


def parse_exchange_timestamp(text: str) -> datetime:
    """A ``timestamp.txt`` of nbgrader's exchange: ``2026-03-06 21:14:03.123456 UTC`` (its default
    format: date, time and zone name or offset), or ISO 8601 with a zone. ValueError otherwise."""
    text = text.strip()
    match = re.fullmatch(r"(\d{4}-\d\d-\d\d[ T][\d:.]+)\s+(\S+)", text)
    if match is None:
        when = datetime.fromisoformat(text)
        if when.tzinfo is None:
            raise ValueError(f"{text!r} has no time zone")
        return when
    zone = match[2]
    if zone in ("UTC", "GMT", "Z"):
        return datetime.fromisoformat(match[1]).replace(tzinfo=UTC)
    return datetime.fromisoformat(match[1]).replace(tzinfo=_zone(zone))


def input_times(
    path: Path, origins: dict[str, str], zone: tzinfo, zone_words: str
) -> dict[str, SubmissionTime]:
    """Student -> the time its input gives: nbgrader's ``timestamp.txt`` beside the notebook (in a
    folder or a zip), else (zip) the member's time; students with neither are left out.

    ``origins``: student -> where its notebook is in the input (grades.csv's ``file``). A zip's
    local time is read in ``zone``, which ``zone_words`` names for the row."""
    found: dict[str, SubmissionTime] = {}
    if path.is_dir():
        for student, origin in origins.items():
            parts = _parts(origin)
            if len(parts) < 2:
                continue
            stamp = path.joinpath(*parts[:-1], TIMESTAMP_FILE)
            text = read_small(stamp)
            if text is not None:
                found[student] = _from_exchange(text, "/".join((*parts[:-1], TIMESTAMP_FILE)))
        return found
    with zipfile.ZipFile(path) as archive:
        members = {_parts(info.filename): info for info in archive.infolist()}
        for student, origin in origins.items():
            parts = _parts(origin)
            stamp = members.get((*parts[:-1], TIMESTAMP_FILE))
            if stamp is not None and len(parts) > 1 and stamp.file_size <= TIMESTAMP_BYTES:
                text = archive.read(stamp).decode("utf-8", "replace")
                found[student] = _from_exchange(text, stamp.filename)
            elif parts in members:
                found[student] = zip_member_time(members[parts], zone, zone_words)
    return found


def _parts(name: str) -> tuple[str, ...]:
    return tuple(p for p in re.split(r"[/\\]", name) if p not in ("", "."))


def read_small(path: Path) -> str | None:
    """A regular file's text (not through a link), if it is at most TIMESTAMP_BYTES long."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not (info.st_mode & 0o170000 == 0o100000) or info.st_size > TIMESTAMP_BYTES:
            return None
        return handle.read(TIMESTAMP_BYTES).decode("utf-8", "replace")


def _from_exchange(text: str, where: str) -> SubmissionTime:
    try:
        return SubmissionTime(parse_exchange_timestamp(text), f"nbgrader's {where}")
    except ValueError:
        return SubmissionTime(None, f"{where} is not a timestamp: {text.strip()[:60]!r}")


def zip_member_time(info: zipfile.ZipInfo, zone: tzinfo, zone_words: str) -> SubmissionTime:
    """A zip member's time: its extended UTC time field (0x5455) if present, else its local
    (DOS) time, which has no zone, read in ``zone`` (named by ``zone_words``)."""
    extra = info.extra
    while len(extra) >= 4:
        kind, size = struct.unpack("<HH", extra[:4])
        body = extra[4 : 4 + size]
        if kind == 0x5455 and len(body) >= 5 and body[0] & 1:
            seconds = struct.unpack("<i", body[1:5])[0]
            return SubmissionTime(
                datetime.fromtimestamp(seconds, UTC), "zip member time (UTC, extended field)"
            )
        extra = extra[4 + size :]
    local = datetime(*info.date_time, tzinfo=zone)
    return SubmissionTime(local, f"zip member local time (the zip stores no zone), {zone_words}")
