"""Tests of grading: ``autograder`` (hidden checks, wire, sandbox, fingerprint, markup), the
TA command and its attack suite, submissions, and what every assignment must satisfy."""
