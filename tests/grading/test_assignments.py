"""What every assignment must satisfy, tested for each one found in ``solutions/``.

A new assignment gets these tests without a new test file. Its source must follow the
course's layout: each autograded part has a visible test cell ``<part>_visible`` and a hidden
one ``<part>_hidden`` whose hidden block imports one check from
``autograder.hidden.<assignment>`` and calls it with the student's functions, e.g.
``check_rnn_forward(rnn_forward, classification_loss)``. The tests run in this process, on the
reference solution read from the source; ``tests/grading/test_grading.py`` grades the same
submissions end to end with nbgrader.

- the notebook's structure (parts, hidden blocks that release as comments, written answers);
- the reference passes every test cell, the untouched student version fails every one;
- answers hard-coded from the visible tests pass them and fail every hidden check;
- no function that a lecture defines passes a part's visible test when pasted in place of
  one of the part's functions: assignments ask for a variation the lectures did not write;
- every check rejects a student function that calls a trapped torch routine or a ``course``
  helper, even one that catches the trap's error; every trap is removed afterwards.

Each assignment's own bugs are tested in its own file (``test_a1_hidden_checks.py``...).
"""

from __future__ import annotations

import ast
import copy
import functools
import importlib
import re
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from autograder import nbgrader_format as fmt
from autograder.hidden import shortcuts
from autograder.platform.judge import top_level_names
from tests.grading.solution_loader import ROOT, Solution, lecture_functions, load_solution, run_cell

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

ASSIGNMENTS = fmt.assignment_ids()


@dataclass(frozen=True)
class Part:
    """One autograded part: its visible and hidden test cells, its check and its functions."""

    assignment: str
    name: str
    check: str | None  # the check the hidden cell calls (None: it calls none)
    functions: tuple[str, ...]  # the student's functions it passes to the check

    @property
    def visible_id(self) -> str:
        return f"{self.name}_visible"

    @property
    def hidden_id(self) -> str:
        return f"{self.name}_hidden"

    def __str__(self) -> str:
        return f"{self.assignment}:{self.name}"


@functools.cache
def solution(assignment: str) -> Solution:
    return load_solution(assignment)


@functools.cache
def _reference(assignment: str) -> dict[str, Any]:
    return solution(assignment).namespace()


def reference(assignment: str) -> dict[str, Any]:
    """A fresh copy of the reference namespace (test cells may add names to it)."""
    return dict(_reference(assignment))


def hidden_module(assignment: str) -> types.ModuleType:
    return importlib.import_module(f"autograder.hidden.{assignment}")


def _check_call(source: str, assignment: str) -> tuple[str | None, tuple[str, ...]]:
    """The check that hidden test code calls, and the names it passes to it."""
    tree = ast.parse(source)
    checks = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module == f"autograder.hidden.{assignment}"
        for alias in node.names
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in checks:
                names = tuple(a.id if isinstance(a, ast.Name) else "?" for a in node.args)
                return node.func.id, names
    return None, ()


def parts(assignment: str) -> list[Part]:
    found = []
    for grade_id, cell in solution(assignment).test_cells.items():
        if grade_id.endswith("_hidden"):
            check, functions = _check_call(cell.hidden_source, assignment)
            found.append(Part(assignment, grade_id.removesuffix("_hidden"), check, functions))
    return found


PARTS = [part for assignment in ASSIGNMENTS for part in parts(assignment)]


def test_every_assignment_is_found():
    assert ASSIGNMENTS, "no solutions/<assignment>/*.py found"
    assert {part.assignment for part in PARTS} == set(ASSIGNMENTS), "an assignment has no part"


# -- the notebook's structure -------------------------------------------------------------------


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_part_has_a_visible_and_a_hidden_test_cell(assignment):
    cells = solution(assignment).test_cells
    found = parts(assignment)
    assert len(found) >= 3, f"only {len(found)} parts with a hidden test"
    assert set(cells) == {p.visible_id for p in found} | {p.hidden_id for p in found}, (
        "every test cell must be <part>_visible or <part>_hidden, in pairs"
    )
    defined = {
        name
        for cell in solution(assignment).notebook.cells
        if fmt.is_solution_code(cell)
        for name in top_level_names(cell.source)
    }
    for part in found:
        assert not cells[part.visible_id].is_hidden, part.visible_id
        assert cells[part.hidden_id].is_hidden, part.hidden_id
        # At release the hidden cell keeps comments only: nothing a student could read or run.
        source = cells[part.hidden_id].visible_source
        released = [line for line in source.splitlines() if line.strip()]
        assert released and all(line.lstrip().startswith("#") for line in released)
        assert part.check, f"{part.hidden_id} calls no check of autograder.hidden.{assignment}"
        assert callable(getattr(hidden_module(assignment), part.check)), part.check
        assert part.functions and set(part.functions) <= defined, (
            f"{part.check} gets {part.functions}; the solution cells define {sorted(defined)}"
        )
    assert sum(cell.points for cell in cells.values()) >= 10


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_written_answers_are_manually_graded_markdown_cells(assignment):
    answers = [
        fmt.nbgrader_meta(cell)
        for cell in solution(assignment).notebook.cells
        if fmt.cell_kind(cell) == "manual"
    ]
    assert answers, "no written answer"
    for meta in answers:
        assert meta["grade"] is True and meta["solution"] is True, meta
        assert meta["locked"] is False and meta["task"] is False, meta
        assert meta["points"] > 0 and meta["schema_version"] == 3, meta
        assert re.fullmatch(r"[a-z0-9_]+", meta["grade_id"]), meta


def _public_lines() -> set[str]:
    """Lines every student can read: the lectures and the ``course`` package, recursively."""
    files = [*(ROOT / "lectures").glob("*.py"), *(ROOT / "course").rglob("*.py")]
    return {line.strip() for path in files for line in path.read_text().splitlines()}


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_solution_lines_appear_nowhere_in_the_student_version_or_the_lectures(assignment):
    released, secret = set(), []
    for cell in solution(assignment).notebook.cells:
        if fmt.cell_kind(cell) == "manual":
            continue  # replaced as a whole by "YOUR ANSWER HERE"
        secret += [
            line.strip()
            for block in fmt.solution_blocks(cell.source)
            for line in block.splitlines()
            if line.strip()
        ]
        released |= {line.strip() for line in fmt.without_solutions(cell.source).splitlines()}
    assert len(secret) > 20
    assert sorted(set(secret) & released) == []
    given_away = sorted(line for line in set(secret) & _public_lines() if len(line) >= 12)
    assert given_away == [], "solution lines that a lecture or the course package shows"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_unchanged_student_version_fails_every_test_cell_with_not_implemented(assignment):
    released = solution(assignment).namespace(released=True)  # other cells must not crash
    for grade_id, cell in solution(assignment).test_cells.items():
        with pytest.raises(NotImplementedError):
            run_cell(cell.source, dict(released), grade_id)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_reference_passes_every_test_cell(assignment, capsys):
    cells = solution(assignment).test_cells
    for grade_id, cell in cells.items():
        run_cell(cell.source, reference(assignment), grade_id)
    hidden = sum(cell.is_hidden for cell in cells.values())
    assert capsys.readouterr().out.count("hidden cases passed") == hidden


# -- hard-coded answers pass the visible tests and lose every hidden point ----------------------


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return (
            isinstance(a, (list, tuple))
            and isinstance(b, (list, tuple))
            and len(a) == len(b)
            and all(_same(x, y) for x, y in zip(a, b, strict=True))
        )
    if isinstance(a, dict) or isinstance(b, dict):
        return (
            isinstance(a, dict)
            and isinstance(b, dict)
            and a.keys() == b.keys()
            and all(_same(a[k], b[k]) for k in a)
        )
    try:
        return np.shape(a) == np.shape(b) and bool(np.array_equal(a, b))
    except (TypeError, ValueError):
        return a == b


def hard_coded(part: Part) -> dict[str, Callable[..., Any]]:
    """For each function of a part: a cheat that answers the visible test's calls from a table.

    The table is recorded by running the visible test cell with the reference: what each call
    returned, or the error it raised (a visible test may ask for a ValueError). Unknown
    arguments get the first recorded return value: the best a hard-coding student can do.
    """
    good = reference(part.assignment)
    tables: dict[str, list[tuple[Any, str, Any]]] = {name: [] for name in part.functions}
    recording = dict(good)
    for name in part.functions:

        def recorder(*args, _name=name, **kwargs):
            call = copy.deepcopy((args, kwargs))
            try:
                result = good[_name](*args, **kwargs)
            except Exception as error:
                tables[_name].append((call, "raise", error))
                raise
            tables[_name].append((call, "return", copy.deepcopy(result)))
            return result

        recording[name] = recorder
    visible = solution(part.assignment).test_cells[part.visible_id]
    run_cell(visible.source, recording, part.visible_id)

    cheats = {}
    for name, table in tables.items():
        returned = [answer for _, kind, answer in table if kind == "return"]
        assert returned, f"the visible test never calls {name} with an answer to record"

        def cheat(*args, _table=table, _first=returned[0], **kwargs):
            for (known_args, known_kwargs), kind, answer in _table:
                if _same(known_args, args) and _same(known_kwargs, kwargs):
                    if kind == "raise":
                        raise answer
                    return copy.deepcopy(answer)
            return copy.deepcopy(_first)

        cheat.__name__ = name
        cheats[name] = cheat
    return cheats


@pytest.mark.parametrize("part", PARTS, ids=str)
def test_hard_coded_answers_pass_the_visible_test_but_fail_the_hidden_check(part):
    cheats = hard_coded(part)
    cells = solution(part.assignment).test_cells
    run_cell(cells[part.visible_id].source, {**reference(part.assignment), **cheats})
    with pytest.raises(AssertionError):
        run_cell(cells[part.hidden_id].source, {**reference(part.assignment), **cheats})


# -- a lecture's function, pasted into an assignment, does not pass ------------------------------


@functools.cache
def _lecture_functions() -> tuple[tuple[str, Callable[..., Any]], ...]:
    """(lecture.function, function) for every function that a lecture's cells define."""
    return tuple(
        (f"{path.stem}.{name}", function)
        for path in sorted((ROOT / "lectures").glob("*.py"))
        for name, function in lecture_functions(path).items()
    )


def test_the_lecture_functions_are_found():
    labels = {label for label, _ in _lecture_functions()}
    assert {"01_rnn_bptt.rnn_forward", "01_rnn_bptt.bptt_gradients"} <= labels
    assert {"02_lstm_gru.lstm_cell", "02_lstm_gru.gru_cell"} <= labels


@pytest.mark.parametrize("part", PARTS, ids=str)
def test_no_lecture_function_pasted_in_passes_the_visible_test(part):
    """Copying a lecture cell does not pass: each of the part's functions, replaced in turn by
    each function a lecture defines, fails the part's visible test. (A copy adapted to the
    assignment's signature is a different question; see, e.g., test_a1_hidden_checks.py.)"""
    visible = solution(part.assignment).test_cells[part.visible_id].source
    passed = []
    for name in part.functions:
        for label, function in _lecture_functions():
            try:
                run_cell(visible, {**reference(part.assignment), name: function})
            except Exception:  # noqa: BLE001 - any failure fails the part
                continue
            passed.append(f"{label} as {name}")
    assert passed == [], "a lecture's function passes the visible test"


# -- shortcuts: torch routines and course helpers are trapped while a student's function runs ---


def _originals(assignment: str) -> list[tuple[Any, str, Any]]:
    return [(o, a, getattr(o, a)) for o, a, _ in hidden_module(assignment).shortcut_targets()]


def _assert_restored(originals: list[tuple[Any, str, Any]]) -> None:
    for owner, attribute, original in originals:
        assert getattr(owner, attribute) is original, f"{attribute} is still trapped"


def _one_per_course_module(targets: list[shortcuts.Target]) -> list[shortcuts.Target]:
    """The library targets, and the first course callable of each course module."""
    chosen, modules = [], set()
    for owner, attribute, label in targets:
        module = getattr(owner, "__name__", "")
        if not label.startswith("course."):
            chosen.append((owner, attribute, label))
        elif module not in modules:
            modules.add(module)
            chosen.append((owner, attribute, label))
    return chosen


def _taking_shortcut(owner: Any, attribute: str, name: str, answer: Callable, hide: bool):
    """A student function ``name`` that calls ``owner.attribute`` (a trap, while trapped) and
    then returns the right answer; with ``hide``, it swallows the trap's error first."""

    def student(*args: Any, **kwargs: Any) -> Any:
        try:
            getattr(owner, attribute)()
        except Exception:
            if not hide:
                raise
        return answer(*args, **kwargs)

    student.__name__ = name
    return student


@pytest.mark.parametrize("part", PARTS, ids=str)
def test_checks_reject_torch_and_course_shortcuts_and_restore_everything(part):
    check = getattr(hidden_module(part.assignment), part.check)
    good = _reference(part.assignment)
    originals = _originals(part.assignment)
    targets = _one_per_course_module(hidden_module(part.assignment).shortcut_targets())
    assert any(label.startswith("course.") for _, _, label in targets)
    assert any(label.startswith("torch") for _, _, label in targets)
    for position, name in enumerate(part.functions):
        for index, (owner, attribute, label) in enumerate(targets):
            # the first target also in disguise: a student who swallows the trap's error
            for hidden_trap in (False, True) if index == 0 else (False,):
                functions = [good[f] for f in part.functions]
                functions[position] = _taking_shortcut(
                    owner, attribute, name, good[name], hidden_trap
                )
                called = re.escape(label) + (r" \(and caught the error\)" if hidden_trap else "")
                with pytest.raises(
                    shortcuts.ShortcutUsed, match=f"{re.escape(name)} must .*; it called {called}"
                ):
                    check(*functions)
                _assert_restored(originals)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_trap_raises_and_is_removed_afterwards(assignment):
    """Each target of the assignment, trapped: the trap is a new object that raises, naming the
    routine, and records its call; afterwards the original is back. The traps are set once for
    all targets (setting them walks ``course`` and patches every target); every target that
    fails is named."""
    hidden = hidden_module(assignment)
    targets = []
    for owner, attribute, label in hidden.shortcut_targets():
        # A module as the traps find it now: importing some `transformers` classes (Lecture 8's
        # `from transformers import GPT2LMHeadModel`) puts a new `transformers` module object
        # in sys.modules, so the one collected earlier may be stale.
        if isinstance(owner, types.ModuleType):
            owner = sys.modules.get(owner.__name__, owner)
        targets.append((owner, attribute, label, getattr(owner, attribute)))
    assert targets
    failed = []

    def some_function():
        pass

    with hidden.no_shortcuts(some_function, "do it by hand") as calls:
        if calls:
            failed.append(f"calls recorded before any trap was called: {calls}")
        for owner, attribute, label, original in targets:
            before = len(calls)
            trapped = getattr(owner, attribute)
            if trapped is original:
                failed.append(f"{label}: not trapped")
                continue
            expected = f"some_function must do it by hand; it called {label}"
            try:
                with pytest.raises(shortcuts.ShortcutUsed, match=re.escape(expected)):
                    trapped()
            except (Exception, pytest.fail.Exception) as error:  # no or another error
                failed.append(f"{label}: {error}")
            if calls[before:] != [label]:
                failed.append(f"{label}: the trap recorded {calls[before:]}")
    for owner, attribute, label, original in targets:
        if getattr(owner, attribute) is not original:
            failed.append(f"{label}: still trapped afterwards")
    assert not failed, f"{len(failed)} of {len(targets)} traps fail:\n" + "\n".join(failed)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_traps_replace_names_bound_in_the_students_namespace_and_restore_them(assignment):
    hidden = hidden_module(assignment)
    library = [t for t in hidden.shortcut_targets() if not t[2].startswith("course.")]
    namespace: dict[str, Any] = {"np": np}
    first_label: dict[int, str] = {}  # the first target of each object names the trap
    for index, (owner, attribute, label) in enumerate(library):
        namespace[f"alias_{index}"] = getattr(owner, attribute)  # `from torch.nn import RNN`
        first_label.setdefault(id(getattr(owner, attribute)), label)
    before = dict(namespace)
    exec("def student():\n    pass", namespace)
    with hidden.no_shortcuts(namespace["student"], "work") as calls:
        assert namespace["np"] is np
        for index, (_, attribute, _) in enumerate(library):
            alias = f"alias_{index}"
            assert namespace[alias] is not before[alias], f"{alias} ({attribute}) not trapped"
            label = first_label[id(before[alias])]
            with pytest.raises(shortcuts.ShortcutUsed, match=re.escape(f"it called {label}")):
                namespace[alias]()
    assert calls and set(calls) <= set(first_label.values())
    assert {k: namespace[k] for k in before} == before
    _assert_restored(_originals(assignment))


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_traps_are_removed_after_an_error(assignment):
    hidden = hidden_module(assignment)

    def student():
        raise RuntimeError("boom")

    originals = _originals(assignment)
    with pytest.raises(RuntimeError, match="boom"):
        with hidden.no_shortcuts(student, "work"):
            student()
    _assert_restored(originals)


def _course_callables() -> list[str]:
    """``module.name`` of every public callable defined in ``course``, found on disk."""
    found = []
    for path in sorted((ROOT / "course").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        module_name = ".".join(parts)
        if parts[:2] == ("course", "checks") or any(p.startswith("_") for p in parts):
            continue
        module = importlib.import_module(module_name)
        for name, value in vars(module).items():
            if not name.startswith("_") and callable(value):
                if getattr(value, "__module__", "") == module_name:
                    found.append(f"{module_name}.{name}")
    return found


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_traps_cover_every_public_course_callable_but_not_the_checks(assignment):
    labels = {label for _, _, label in hidden_module(assignment).shortcut_targets()}
    expected = _course_callables()
    assert len(expected) >= 10
    assert not [name for name in expected if name not in labels]
    assert not any(label.startswith("course.checks") for label in labels)


def test_traps_reach_modules_in_nested_course_subpackages(tmp_path, monkeypatch):
    """A helper deep in a subpackage is trapped; ``course.checks`` and private modules are not."""
    import course

    package = tmp_path / "zz_nested"
    (package / "deeper").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "deeper" / "__init__.py").write_text("")
    (package / "deeper" / "helpers.py").write_text("def shortcut():\n    return 1\n")
    (package / "_private.py").write_text("def hidden_helper():\n    return 2\n")
    monkeypatch.setattr(course, "__path__", [*course.__path__, str(tmp_path)])
    try:
        labels = {label for _, _, label in shortcuts.collect_targets([])}
        assert "course.zz_nested.deeper.helpers.shortcut" in labels
        assert not any("_private" in label or "course.checks" in label for label in labels)
    finally:
        for name in [m for m in sys.modules if m.startswith("course.zz_nested")]:
            del sys.modules[name]


def test_a_course_routine_named_and_found_by_the_walk_is_trapped_once():
    targets = shortcuts.collect_targets([("course.decoding", ("beam_search",))])
    keys = [(id(owner), attribute) for owner, attribute, _ in targets]
    assert len(keys) == len(set(keys))
    labels = [label for _, attribute, label in targets if attribute == "beam_search"]
    assert labels[0] == "course.decoding.beam_search"
