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
import inspect
import re
from typing import Any

import numpy as np
import pytest
import torch

import tests.grading.test_assignments as assignments
from course.checks import CheckFailed
from course.checks.cases import Case
from course.checks.rules import RULES, HelperForbidden, collect_targets
from tests.grading.bug_injection import case_label, expect_new_tables
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


# -- a function that rewrites an input it must keep fails its visible test, naming it -----------


def _names(node: ast.expr, assigned: dict[str, list[ast.expr]]) -> list[str]:
    """The input names of the mapping that a hidden check gives ``_expect_unchanged``: the
    constant keys of its dicts and the keywords of ``_inputs(...)``, through the names the
    check assigns it to. (Keys made at run time, like a7's ``hidden_states[k]`` for a list of
    arrays, are left out: a list of arrays is one input of the visible test.)"""
    if isinstance(node, ast.Name):
        return [name for value in assigned.get(node.id, []) for name in _names(value, assigned)]
    names = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Dict):
            names += [key.value for key in sub.keys if isinstance(key, ast.Constant)]
        elif isinstance(sub, ast.Call) and getattr(sub.func, "id", None) == "_inputs":
            names += [keyword.arg for keyword in sub.keywords]
    return names


def _kept_inputs(assignment: str) -> list[tuple[str, str, str]]:
    """(hidden check, student's function, input) for each input that a hidden check of
    ``assignment`` expects its function to leave unchanged (``_expect_unchanged``)."""
    tree = ast.parse(inspect.getsource(assignments.hidden_module(assignment)))
    found = []
    for check in (node for node in tree.body if isinstance(node, ast.FunctionDef)):
        assigned: dict[str, list[ast.expr]] = {}
        for sub in ast.walk(check):
            if isinstance(sub, ast.Assign):
                for target in (t for t in sub.targets if isinstance(t, ast.Name)):
                    assigned.setdefault(target.id, []).append(sub.value)
        functions = [argument.arg for argument in check.args.args]
        for sub in ast.walk(check):
            if isinstance(sub, ast.Call) and getattr(sub.func, "id", None) == "_expect_unchanged":
                label = sub.args[0].value  # beam_search names beam_search_on_table
                function = label if label in functions else functions[0]
                found += [(check.name, function, name) for name in _names(sub.args[1], assigned)]
    return found


KEPT_INPUTS = [
    pytest.param(part, function, name, id=f"{part}:{function}:{name}")
    for assignment in sorted({part.assignment for part in SHORT_PARTS})
    for check, function, name in _kept_inputs(assignment)
    for part in SHORT_PARTS
    if part.assignment == assignment and part.check == check
]


def test_the_kept_inputs_of_every_assignment_are_found():
    assert {part.assignment for part, _, _ in (case.values for case in KEPT_INPUTS)} == {
        part.assignment for part in SHORT_PARTS
    }
    assert len(KEPT_INPUTS) == sum(
        len(_kept_inputs(assignment)) for assignment in {part.assignment for part in SHORT_PARTS}
    ), "a hidden check with _expect_unchanged has no visible part"


def _rewrite(value: Any) -> bool:
    """Change ``value`` in place (its first entry, a new item or key); False if it cannot be."""
    if isinstance(value, dict):
        value["rewritten in place"] = 0
        return True
    if isinstance(value, list):
        value.append(value[-1] if value else 0)
        return True
    if isinstance(value, tuple):
        return any(_rewrite(item) for item in value)
    if isinstance(value, torch.Tensor) and value.numel():
        with torch.no_grad():
            first = (0,) * value.dim()
            value[first] = ~value[first] if value.dtype == torch.bool else value[first] + 1
        return True
    if isinstance(value, np.ndarray) and value.size and value.flags.writeable:
        first = (0,) * value.ndim
        new = ~value[first] if value.dtype == bool else (12345 if value[first] != 12345 else 54321)
        value[first] = new
        return True
    return False


@pytest.mark.parametrize(("part", "function", "name"), KEPT_INPUTS)
def test_a_function_that_rewrites_an_input_fails_the_visible_test_naming_it(part, function, name):
    """The reference, rewriting one input after computing its (right) result: the visible test
    reports it as the hidden test would, not as a wrong value under another heading."""
    good = assignments.reference(part.assignment)
    signature = inspect.signature(good[function])
    rewritten = []

    def rewriting(*args, **kwargs):
        result = good[function](*args, **kwargs)
        given = signature.bind(*args, **kwargs).arguments
        rewritten.append(name in given and _rewrite(given[name]))
        return result

    rewriting.__name__ = function
    visible = assignments.solution(part.assignment).test_cells[part.visible_id].source
    with pytest.raises(CheckFailed) as caught:
        run_cell(visible, {**good, function: rewriting}, part.visible_id)
    label, message = case_label(str(caught.value))  # a check driven by cases names the case
    assert message.startswith(f"{function} changed its input in place: "), str(caught.value)
    assert label is None or label.startswith(f"{function}, "), str(caught.value)
    assert any(rewritten), f"the visible test never gives {function} an {name} it could change"


# -- checks driven by tables of cases -----------------------------------------------------------


def _tables(assignment: str) -> list[str]:
    """The functions of an assignment's module of visible checks that build a table of cases."""
    module = importlib.import_module(f"course.checks.{assignment}")
    return [
        name
        for name, member in inspect.getmembers(module, inspect.isfunction)
        if name.endswith("_cases")
        and member.__module__ == module.__name__
        and not inspect.signature(member).parameters  # a table built from nothing else
    ]


ALL_TABLES = [
    pytest.param(assignment, name, id=f"{assignment}:{name}")
    for assignment in sorted(CHECKS)
    for name in _tables(assignment)
]


def test_every_assignment_writes_its_visible_checks_as_tables_of_cases():
    assert {param.values[0] for param in ALL_TABLES} == set(CHECKS)


@pytest.mark.parametrize(("assignment", "name"), ALL_TABLES)
def test_a_table_of_cases_has_one_label_per_case_and_is_built_afresh(assignment, name):
    """Each call of the table builds new inputs, so that a function that writes into them
    cannot change the next call's (or the next student's, in one grading kernel)."""
    build = getattr(importlib.import_module(f"course.checks.{assignment}"), name)
    assert build() and all(isinstance(case, Case) for case in build()), name
    expect_new_tables(build)


# Where a part has one function, its table of cases (part_x_cases) and its check
# (check_part_x) go together: the cases name that function's parameters.
def _called(part: Any) -> str:
    """The name of the check that the part's visible cell calls."""
    source = assignments.solution(part.assignment).test_cells[part.visible_id].source
    return ast.parse(source).body[0].value.func.id


def _one_function_parts() -> list[Any]:
    found = []
    for assignment in sorted(CHECKS):
        tables = _tables(assignment)
        for x in "abcde":
            parts = [
                p
                for p in SHORT_PARTS
                if p.assignment == assignment and _called(p) == f"check_part_{x}"
            ]
            if f"part_{x}_cases" in tables and len(parts) == 1 and len(parts[0].functions) == 1:
                found.append(
                    pytest.param(assignment, f"part_{x}_cases", parts[0], id=f"{assignment}:{x}")
                )
    return found


TABLED = _one_function_parts()


def test_the_tables_of_one_function_parts_are_found():
    assert len({param.values[0] for param in TABLED}) >= 6, TABLED


@pytest.mark.parametrize(("assignment", "cases", "part"), TABLED)
def test_a_table_of_cases_names_the_inputs_as_the_parameters(assignment, cases, part):
    """Each case has, among its inputs, every parameter without a default of the student's
    function (the reference's signature), under the parameter's name."""
    module = importlib.import_module(f"course.checks.{assignment}")
    (function,) = part.functions
    signature = inspect.signature(assignments.reference(assignment)[function])
    required = [n for n, p in signature.parameters.items() if p.default is inspect.Parameter.empty]
    for case in getattr(module, cases)():
        assert set(required) <= set(case.inputs), (case, required)
