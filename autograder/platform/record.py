"""What grading one submission gives: a :class:`SubmissionRecord`.

One record per student, the one type that every step of a run passes on: the judge
(:mod:`autograder.platform.judging`) makes it in the submission's own process and fills what
it finds; the recording step (:func:`autograder.platform.pipeline.finish_recording`) says
whether nbgrader recorded it; ``state.json`` and the shards' manifests keep it as JSON
(:meth:`SubmissionRecord.to_json`, :meth:`SubmissionRecord.from_json`); ``grades.csv`` and the
report read it. Each field has one step that writes it, named beside it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

GRADER_ERROR = "grader error"


@dataclass
class SubmissionRecord:
    # from the input (autograder.platform.inputs.Entry)
    student: str
    origin: str  # the file or zip member it came from
    digest: str  # of its files: an unchanged submission is not judged again
    # written by the judge
    flags: list[str] = field(default_factory=list)  # statuses (judge.STATUSES), each once
    messages: list[str] = field(default_factory=list)  # what the TA reads, in order
    tests: dict[str, bool] = field(default_factory=dict)  # grade id -> passed
    failures: dict[str, str] = field(default_factory=dict)  # grades.csv column -> why it failed
    seconds: dict[str, float] = field(default_factory=dict)  # where the judging's time went
    gradable: bool = False  # judged whole: nbgrader may record it
    # written by the recording step
    recorded: bool = False  # in nbgrader's gradebook, with its feedback (or nothing to record)
    recording: str = ""  # the status nbgrader's failure to record it gives ("" if none)
    recording_message: str = ""  # and what it said

    @classmethod
    def failed(cls, entry: Any, status: str, message: str) -> SubmissionRecord:
        """The record of a submission whose judging did not end: ``status`` and ``message``."""
        return cls(entry.student, entry.origin, entry.digest, [status], [message])

    def flag(self, status: str, message: str = "") -> None:
        """Give the submission ``status`` (once), and say why (``message``, if any)."""
        if status not in self.flags:
            self.flags.append(status)
        if message:
            self.messages.append(message)

    def note(self, message: str) -> None:
        """Say something the TA should read, with no status."""
        self.messages.append(message)

    @property
    def all_flags(self) -> list[str]:
        """The statuses of the judging and of the recording."""
        return ([self.recording] if self.recording else []) + self.flags

    @property
    def all_messages(self) -> list[str]:
        """The messages of the judging and of the recording."""
        return self.messages + ([self.recording_message] if self.recording_message else [])

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SubmissionRecord:
        """The record that :meth:`to_json` gave; a key it does not know is an error."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"a submission record has no field {', '.join(map(repr, unknown))}")
        return cls(**data)
