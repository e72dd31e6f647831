"""Unit tests of course.checks.rules: the visible tests run a student's function under the rule
of the part's hidden tests, and say which routine it called and what the rule is."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import course.metrics
from course.checks import CheckFailed
from course.checks.rules import (
    RULES,
    HelperForbidden,
    Rule,
    by_hand,
    collect_targets,
    expect_refused,
    trapped,
)
from tests.course.test_checks import kernel_errors
from tests.messages import raises

ASSIGNMENT = "a1_rnn_bptt"
SUMMARY = RULES[ASSIGNMENT].summary
HELPER = course.metrics.record


def _rule_message(name: str, label: str, kind: str) -> str:
    return re.escape(
        f"{name} called {label} ({kind}): this part's hidden tests forbid the course's helpers "
        f"and {SUMMARY}; write the computation by hand"
    )


def test_every_rule_names_existing_routines_and_summarises_them():
    assert RULES, "no rule"
    for assignment, rule in RULES.items():
        assert isinstance(rule, Rule) and rule.summary and rule.library, assignment
        labels = {label for _, _, label in collect_targets(rule.library)}
        named = [f"{owner}.{name.lstrip('_')}" for owner, names in rule.library for name in names]
        assert any(label in labels for label in named), f"{assignment}: no routine exists"


def test_an_honest_function_runs_and_its_errors_pass_through():
    def double(values, *, factor=2.0):
        if factor <= 0:
            raise ValueError("factor must be positive")
        return np.asarray(values) * factor

    assert by_hand(ASSIGNMENT, double, [1.0, 2.0]).tolist() == [2.0, 4.0]
    assert by_hand(ASSIGNMENT, double, [1.0], factor=3.0).tolist() == [3.0]
    with pytest.raises(ValueError, match="factor must be positive"):
        by_hand(ASSIGNMENT, double, [1.0], factor=0.0)


def test_a_course_helper_fails_with_the_rule_and_is_restored():
    def rnn_forward(xs):
        course.metrics.record("x", 1.0)
        return xs

    with pytest.raises(HelperForbidden, match=_rule_message(
        "rnn_forward", "course.metrics.record", "a course helper"
    )) as caught:  # fmt: skip
        by_hand(ASSIGNMENT, rnn_forward, np.zeros(2))
    assert isinstance(caught.value, CheckFailed) and isinstance(caught.value, AssertionError)
    assert course.metrics.record is HELPER


def test_a_forbidden_torch_routine_fails_with_the_rule_even_when_its_error_is_caught():
    def rnn_backward(value):
        leaf = torch.tensor(value, requires_grad=True)
        try:
            (leaf * leaf).backward()
        except Exception:  # noqa: BLE001 - a student hiding the trap
            pass
        return 2 * value

    original = torch.Tensor.backward
    message = _rule_message("rnn_backward", "torch.Tensor.backward", "a routine this part forbids")
    with pytest.raises(HelperForbidden, match=message + "$"):
        by_hand(ASSIGNMENT, rnn_backward, 1.5)
    assert torch.Tensor.backward is original, "the trap was not removed"
    leaf = torch.tensor(1.5, requires_grad=True)
    (leaf * leaf).backward()
    assert float(leaf.grad) == 3.0


def test_a_helper_bound_in_the_functions_globals_is_trapped_and_restored():
    namespace = {"record": HELPER}
    exec("def clip(value):\n    record('x', value)\n    return value\n", namespace)
    with pytest.raises(HelperForbidden, match="clip called course.metrics.record"):
        by_hand(ASSIGNMENT, namespace["clip"], 1.0)
    assert namespace["record"] is HELPER


def test_trapped_yields_the_calls_and_raises_the_given_refusal():
    class Refused(Exception):
        pass

    def student():
        return course.metrics.record("x", 1.0)

    targets = [(course.metrics, "record", "course.metrics.record")]
    with trapped(student, targets, lambda label: Refused(label)) as calls:
        with pytest.raises(Refused, match="course.metrics.record"):
            student()
    assert calls == ["course.metrics.record"]
    assert course.metrics.record is HELPER


def test_the_checks_themselves_are_not_trapped():
    labels = {label for _, _, label in collect_targets(RULES[ASSIGNMENT].library)}
    assert "course.metrics.record" in labels
    assert not any(label.startswith("course.checks") for label in labels)


def test_a_failing_assignment_check_in_a_jupyter_kernel_shows_its_message_first_and_briefly():
    """A visible test cell is one call of a check in course.checks.<assignment>: its failure,
    a wrong value or a forbidden helper, reads as the message and the cell's line."""
    cells = [
        "import numpy as np\nimport course.metrics\n"
        "from course.checks.a1_rnn_bptt import check_part_c",
        "def clip_by_global_norm(grads, max_norm):\n    return grads, 13.5\n\n"
        "check_part_c(clip_by_global_norm)",
        "def clip_by_global_norm(grads, max_norm):\n    course.metrics.record('x', 1.0)\n\n"
        "check_part_c(clip_by_global_norm)",
    ]
    errors = kernel_errors(cells)
    assert len(errors) == 2, errors
    value, helper = errors
    case = "AssertionError: [clip_by_global_norm, gradients of global norm 13, max_norm 6.5] "
    assert value == [
        f"{case}total_norm differs from the expected value by 5.0e-01 (got 13.5, "
        "expected 13; tolerance 1e-09)",
        "  at Cell In[2], line 4: check_part_c(clip_by_global_norm)",
    ]
    assert helper == [
        f"{case}clip_by_global_norm called course.metrics.record (a course helper): "
        f"this part's hidden tests forbid the course's helpers and {SUMMARY}; write the "
        "computation by hand",
        "  at Cell In[3], line 4: check_part_c(clip_by_global_norm)",
    ]


def test_a_students_own_error_in_a_check_shows_the_students_frames_and_not_the_checks():
    """The blank notebook's NotImplementedError (or any error of the student's code) reads as
    the cell's call and the student's lines: the check's and by_hand's frames are hidden."""
    cells = [
        "from course.checks.a1_rnn_bptt import check_part_c",
        "def clip_by_global_norm(grads, max_norm):\n    raise NotImplementedError\n\n"
        "check_part_c(clip_by_global_norm)",
    ]
    (error,) = kernel_errors(cells)
    text = "\n".join(error)
    assert "----> 4 check_part_c(clip_by_global_norm)" in text, text
    assert "----> 2     raise NotImplementedError" in text, text
    assert "course/checks" not in text and "by_hand" not in text, text
    assert error[-1].startswith("NotImplementedError"), error[-1]


def test_expect_refused_wants_a_value_error_from_every_call_under_the_rule():
    def positive(x):
        if x <= 0:
            raise ValueError(f"x must be positive, got {x}")
        return np.log(x)  # NumPy's warning for log(0) would be silenced, not raised

    def lax(x):
        return x

    def helper(x):
        return course.metrics.record("01_rnn_bptt", "x", x)

    expect_refused("a1_rnn_bptt", {"positive(0)": (positive, (0,), {}), "positive(x=-1)":
                                   (positive, (), {"x": -1})})  # fmt: skip
    with raises(CheckFailed, r"lax\(0\)", "should raise ValueError", "returned 0"):
        expect_refused(
            "a1_rnn_bptt", {"positive(0)": (positive, (0,), {}), "lax(0)": (lax, (0,), {})}
        )
    with raises(CheckFailed, r"helper\(0\)", "should raise ValueError", "HelperForbidden"):
        expect_refused("a1_rnn_bptt", {"helper(0)": (helper, (0,), {})})
