"""The visible tests apply the rule of the hidden ones, from the same list.

An assignment whose visible test cells call its checks in ``course.checks.<assignment>`` runs
the student's functions under ``course.checks.rules.by_hand``: a function that calls a course
helper or a routine the part forbids fails its visible test with the rule, while the reference
passes (``test_assignments.py::test_reference_passes_every_test_cell``). The hidden module's
traps are built from the same rule, so the two cannot drift apart.
"""

from __future__ import annotations

import ast
import importlib
import re

import numpy as np
import pytest

import tests.grading.test_assignments as assignments
from course.checks import CheckFailed
from course.checks.rules import RULES, HelperForbidden, collect_targets
from tests.grading.solution_loader import run_cell

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def _is_one_call(source: str) -> bool:
    """True for a visible test cell that is one call of a check (and comments)."""
    body = ast.parse(source).body
    return len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Call)


SHORT_PARTS = [
    part
    for part in assignments.PARTS
    if _is_one_call(assignments.solution(part.assignment).test_cells[part.visible_id].source)
]


def test_short_visible_cells_are_found_and_their_assignments_have_a_rule():
    assert SHORT_PARTS, "no visible test cell calls a check of course.checks"
    assert {part.assignment for part in SHORT_PARTS} <= set(RULES)


@pytest.mark.parametrize("assignment", sorted({part.assignment for part in SHORT_PARTS}))
def test_the_hidden_traps_use_the_visible_rule(assignment):
    hidden = assignments.hidden_module(assignment)
    assert hidden.TRAPS.library == RULES[assignment].library
    assert [label for _, _, label in hidden.shortcut_targets()] == [
        label for _, _, label in collect_targets(RULES[assignment].library)
    ]


@pytest.mark.parametrize("part", SHORT_PARTS, ids=str)
def test_a_function_calling_a_helper_or_a_forbidden_routine_fails_the_visible_test(part):
    rule = RULES[part.assignment]
    targets = collect_targets(rule.library)
    library = next(t for t in targets if not t[2].startswith("course."))
    helper = next(t for t in targets if t[2].startswith("course."))
    visible = assignments.solution(part.assignment).test_cells[part.visible_id].source
    for name in part.functions:
        good = assignments.reference(part.assignment)
        for (owner, attribute, label), kind, hide in (
            (helper, "a course helper", False),
            (helper, "a course helper", True),
            (library, "a routine this part forbids", False),
        ):
            student = assignments._taking_shortcut(owner, attribute, name, good[name], hide)
            message = re.escape(
                f"{name} called {label} ({kind}): this part's hidden tests forbid the course's "
                f"helpers and {rule.summary}; write the computation by hand"
            )
            with pytest.raises(HelperForbidden, match=message):
                run_cell(visible, {**good, name: student}, part.visible_id)
            assert getattr(owner, attribute) is not None and "trapped" not in getattr(
                getattr(owner, attribute), "__name__", ""
            ), f"{label} is still trapped"


# Each assignment's module of visible checks: one check per autograded part.
CHECKS = {
    "a1_rnn_bptt": ("check_part_a", "check_part_b", "check_part_c"),
    **{
        assignment: ("check_part_a", "check_part_b", "check_part_c", "check_part_d")
        for assignment in (
            "a2_lstm_gru",
            "a3_bilstm_elmo",
            "a4_seq2seq_attention",
            "a5_self_attention",
            "a6_transformer",
            "a7_bert",
        )
    },
    "a8_gpt_decoding": (
        "check_part_a",
        "check_part_b",
        "check_part_c",
        "check_part_d",
        "check_part_e",
    ),
}


@pytest.mark.parametrize("assignment", sorted({part.assignment for part in SHORT_PARTS}))
def test_each_check_of_the_assignments_module_is_called_by_one_visible_cell(assignment):
    """``course.checks.<assignment>``'s checks are the calls of the visible cells, one each,
    with the part's functions among the arguments."""
    module = importlib.import_module(f"course.checks.{assignment}")
    called = []
    for part in (p for p in SHORT_PARTS if p.assignment == assignment):
        source = assignments.solution(assignment).test_cells[part.visible_id].source
        call = ast.parse(source).body[0].value
        arguments = [argument.id for argument in call.args]
        assert set(part.functions) <= set(arguments), (part, arguments)
        assert callable(getattr(module, call.func.id)), call.func.id
        called.append(call.func.id)
    assert sorted(called) == sorted(module.__all__) == sorted(CHECKS[assignment])


def test_an_attention_that_scales_its_queries_in_place_fails_with_the_mutation_named():
    """Assignment 5 Part A: right values, but the caller's Q rewritten."""
    part = next(
        p for p in SHORT_PARTS if p.assignment == "a5_self_attention" and "attention" in p.functions
    )
    good = assignments.reference(part.assignment)

    def attention(Q, K, V, mask=None):
        result = good["attention"](Q, K, V, mask)
        if isinstance(Q, np.ndarray):
            Q *= 2.0
        return result

    visible = assignments.solution(part.assignment).test_cells[part.visible_id].source
    with pytest.raises(CheckFailed, match=r"attention changed its input in place: Q at \[0, 0\]"):
        run_cell(visible, {**good, "attention": attention}, part.visible_id)
