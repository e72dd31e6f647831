"""The one record a submission's grading passes on (``autograder.platform.record``)."""

from __future__ import annotations

import json

import pytest

from autograder.platform.inputs import Entry
from autograder.platform.record import GRADER_ERROR, SubmissionRecord


def test_a_record_goes_through_json_unchanged():
    record = SubmissionRecord("ada", "ada.ipynb", "0f" * 32)
    record.flag("needs manual grading")
    record.flag("needs manual grading", "p3 is a written answer")
    record.note("cell p1 was restored")
    record.tests, record.failures = {"p1": True, "p2": False}, {"p2": "expected (3,) got (2,)"}
    record.seconds, record.gradable, record.recorded = {"kernel": 1.5}, True, True
    again = SubmissionRecord.from_json(json.loads(json.dumps(record.to_json())))
    assert again == record
    assert again.flags == ["needs manual grading"]  # a status once, each reason kept
    assert again.messages == ["p3 is a written answer", "cell p1 was restored"]


def test_an_unknown_field_is_refused_by_name():
    data = SubmissionRecord("ada", "ada.ipynb", "d").to_json() | {"score": 10}
    with pytest.raises(ValueError, match="'score'"):
        SubmissionRecord.from_json(data)


def test_what_the_recording_found_comes_after_the_judging():
    entry = Entry("bo", {}, "bo.ipynb")
    record = SubmissionRecord.failed(entry, GRADER_ERROR, "the grader failed: KeyError")
    assert (record.student, record.origin, record.digest) == ("bo", "bo.ipynb", entry.digest)
    assert not record.gradable and not record.recorded
    record.recording, record.recording_message = "timed out", "nbgrader took over 60 s"
    assert record.all_flags == ["timed out", GRADER_ERROR]
    assert record.all_messages == ["the grader failed: KeyError", "nbgrader took over 60 s"]
    assert record.flags == [GRADER_ERROR]  # the judge's own fields are left as they were
