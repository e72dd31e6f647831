"""The grading report's similar solutions: planted copies are found, independent solutions are not.

Submissions of Assignment 1 built from ``tests/grading/similarity/`` (text files: planted
copies are not the repository's code, and are neither linted nor formatted): five independent
solutions of three parts (the reference solution, ``ana``, ``ben``, ``cai`` and ``dee``, each
written differently), a public solution in ``similarity/past/`` (given as ``public.py``), and
planted copies: ``renamed`` (the reference, every variable renamed), ``reordered`` (ben's, its
functions and two statements reordered), ``commented`` (cai's, comments added and
reformatted), ``fay`` (the public solution, renamed and commented) and ``mallory`` (dee's, with
markup in a string). Every student's cell is the released skeleton (signature and docstring)
with the body filled in. No code of a submission runs: these tests read and compare text.
"""

from __future__ import annotations

import html
import itertools
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest

from autograder import nbgrader_format as fmt
from autograder.platform import errors, grade, judge, results, similarity
from autograder.platform.report import write_report
from tests.grading.solution_loader import ROOT

ASSIGNMENT = "a1_rnn_bptt"
CASES = Path(__file__).resolve().parent / "similarity"
PLANTED = {
    frozenset(pair)
    for pair in [
        ("reference", "renamed"),
        ("ben", "reordered"),
        ("cai", "commented"),
        ("fay", "past: public.py"),
        ("dee", "mallory"),
    ]
}
INDEPENDENT = ["reference", "ana", "ben", "cai", "dee", "past: public.py"]


@pytest.fixture(scope="module")
def release() -> nbformat.NotebookNode:
    return nbformat.read(ROOT / "assignments" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)


@pytest.fixture(scope="module")
def parts(release) -> list[similarity.Part]:
    return similarity.parts_of({ASSIGNMENT: release})


def _filled(part: similarity.Part, code: str) -> str:
    """The released cell with its stub replaced by ``code``'s function of the part's name."""
    header = part.skeleton.split("    # YOUR CODE HERE")[0]
    filled, count = re.subn(
        rf"^def {part.grade_id}\(.*\):\n", lambda _: header, code, count=1, flags=re.M
    )
    assert count == 1, f"no function {part.grade_id} in the case"
    return filled


def _student(path: Path, parts: list[similarity.Part]) -> dict[str, str]:
    sections = re.split(r"^# %% (\w+)\n", path.read_text(encoding="utf-8"), flags=re.M)
    code = dict(zip(sections[1::2], sections[2::2], strict=True))
    return {p.key: _filled(p, code[p.key]) for p in parts if p.key in code}


@pytest.fixture(scope="module")
def submissions(parts) -> dict[str, dict[str, str]]:
    found = {path.stem: _student(path, parts) for path in sorted(CASES.glob("*.txt"))}
    source = fmt.read_source(ROOT / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.py")
    keys = {p.key for p in parts}
    found["reference"] = {
        fmt.grade_id(cell): fmt.without_solution_markers(cell.source)
        for cell in source.cells
        if fmt.grade_id(cell) in keys and fmt.grade_id(cell) != "rnn_backward"
    }
    blank = {p.key: p.skeleton for p in parts}
    found["blank1"], found["blank2"] = blank, dict(blank)
    return found


@pytest.fixture(scope="module")
def past_folder(tmp_path_factory) -> Path:
    """The folder of past solutions: ``public.py``."""
    folder = tmp_path_factory.mktemp("past")
    shutil.copy(CASES / "past" / "public.txt", folder / "public.py")
    return folder


@pytest.fixture(scope="module")
def result(parts, submissions, past_folder) -> similarity.Result:
    past, skipped = similarity.past_solutions(past_folder, parts)
    assert not skipped
    return similarity.compare(parts, submissions, past, similarity.THRESHOLD, skipped)


def _scores(parts, submissions, past_folder) -> dict[frozenset, dict[str, float]]:
    """Every pair's score per part, whatever the threshold."""
    past, _ = similarity.past_solutions(past_folder, parts)
    low = similarity.compare(parts, submissions, past, threshold=1e-9)
    return {frozenset((p.a, p.b)): {m.part: m.score for m in p.matches} for p in low.pairs}


def test_every_planted_copy_is_found_and_no_independent_pair(result):
    listed = {frozenset((pair.a, pair.b)) for pair in result.pairs}
    assert listed == PLANTED
    for pair in result.pairs:
        assert pair.score >= 0.95, (pair.a, pair.b, pair.score)


def test_independent_solutions_stay_well_below_the_threshold(parts, submissions, past_folder):
    scores = _scores(parts, submissions, past_folder)
    independent = [frozenset(pair) for pair in itertools.combinations(INDEPENDENT, 2)]
    highest = max(max(scores.get(pair, {"": 0.0}).values()) for pair in independent)
    # measured 0.43 (the reference and the public solution's clipping, which share an idiom)
    assert 0.0 < highest <= similarity.THRESHOLD - 0.1
    # every planted pair is found in each part the copy has, not in one part only
    for pair in PLANTED:
        (copy,) = pair - set(INDEPENDENT)
        assert set(scores[pair]) == set(submissions[copy]), pair
        assert min(scores[pair].values()) >= 0.95, pair


def test_the_skeleton_does_not_count(parts, submissions, past_folder, result):
    scores = _scores(parts, submissions, past_folder)
    blanks = [name for name in submissions if name.startswith("blank")]
    assert not any(frozenset(pair) & set(blanks) for pair in scores)
    for part in parts:
        text, parsed = similarity.solution_text(part.skeleton, part.skeleton)
        assert text == "" and parsed
    # the skeleton's signature and docstring are not in what was compared
    shown = " ".join(t for pair in result.pairs for m in pair.matches for t in m.texts)
    assert "Args:" not in shown and "NotImplementedError" not in shown and "def " in shown


def test_normalising_ignores_names_comments_and_formatting():
    one = """
def total(values, scale=2):
    '''Sum and scale.'''
    result = 0  # start
    for v in values:
        result += v * scale
    return np.sqrt(result)
"""
    two = "def added(xs, k=2):\n    acc = 0\n\n    for x in xs:  acc += (x * k)\n    return np.sqrt(acc)\n"
    assert similarity.normalise(one) == similarity.normalise(two)
    lines, parsed = similarity.normalise(two)
    assert parsed and "np.sqrt(_v)" in lines[-1]  # the names it uses from elsewhere are kept
    other = two.replace("np.sqrt", "np.exp")
    assert similarity.normalise(other) != similarity.normalise(two)


def test_code_that_does_not_parse_is_compared_as_written(parts, submissions):
    broken = dict(submissions)
    cell = submissions["dee"]["rnn_forward"]
    broken["broken"] = {"rnn_forward": cell.replace("    return np.transpose", "    return (np.tr")}
    result = similarity.compare(parts, broken, {}, similarity.THRESHOLD)
    pair = next(p for p in result.pairs if {p.a, p.b} == {"broken", "dee"})
    assert sorted(pair.matches[0].parsed) == [False, True] and pair.score >= 0.9
    text, parsed = similarity.solution_text(broken["broken"]["rnn_forward"], parts[0].skeleton)
    assert not parsed and "Args:" not in text and "np.tanh(_v.dot(" in text
    # what cannot be salvaged is its raw text, comment lines dropped
    lines, parsed = similarity.normalise("  x = (\n# note\n\ty = 1\n  z = ]\n")
    assert lines == ["  x = (", "\ty = 1", "  z = ]"] and not parsed


def test_short_long_and_unreadable_code_is_listed_not_compared(parts, submissions, tmp_path):
    odd = {
        "short": {"classification_loss": "def classification_loss(p, y):\n    return 0.0\n"},
        "huge": {"rnn_forward": "x = 1\n" * 30_000},
        "deep": {"rnn_forward": "x = " + "(" * 30_000 + ")" * 30_000},
    }
    past = tmp_path / "past"
    past.mkdir()
    (past / "broken.ipynb").write_text("{not json", encoding="utf-8")
    (past / "other.py").write_text("def unrelated():\n    return 1\n", encoding="utf-8")
    found, skipped = similarity.past_solutions(past, parts)
    result = similarity.compare(parts, odd | {"dee": submissions["dee"]}, found, 0.6, skipped)
    why = {(s.owner, s.part): s.why for s in result.skipped}
    assert "too short" in why["short", "classification_loss"]
    assert "longer than" in why["huge", "rnn_forward"]
    assert "unreadable" in why["past: broken.ipynb", ""]
    assert "none of the assignment's parts" in why["past: other.py", ""]
    assert result.pairs == []  # the deep one is compared on its raw text, and matches nothing


def test_bad_options_are_refused(parts, tmp_path):
    with pytest.raises(similarity.SimilarityError, match="threshold"):
        similarity.compare(parts, {}, {}, threshold=1.5)
    with pytest.raises(similarity.SimilarityError, match="no such folder"):
        similarity.past_solutions(tmp_path / "missing", parts)


def test_past_solutions_are_found_by_cell_or_by_function_name(parts, tmp_path):
    shutil.copy(CASES / "past" / "public.txt", tmp_path / "public.py")
    shutil.copy(ROOT / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.py", tmp_path / "course.py")
    notebook = nbformat.read(ROOT / "assignments" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", 4)
    nbformat.write(notebook, tmp_path / "released.ipynb")
    found, skipped = similarity.past_solutions(tmp_path, parts)
    assert set(found["past: public.py"]) == {"rnn_forward", "clip_by_global_norm"}
    assert set(found["past: course.py"]) == {p.key for p in parts}
    assert "### BEGIN SOLUTION" not in found["past: course.py"]["rnn_backward"]
    assert set(found["past: released.ipynb"]) == {p.key for p in parts}  # only skeletons
    result = similarity.compare(parts, {}, found, similarity.THRESHOLD, skipped)
    assert result.pairs == []  # past solutions are not compared with each other


class _Inert(HTMLParser):
    """Every tag and attribute of a page, to check that nothing in it can run or fetch."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.attributes: set[str] = set()

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attributes |= {name for name, _ in attrs}


def test_the_report_shows_the_pairs_side_by_side_and_inert(result, tmp_path):
    target = write_report([], {}, set(), {}, tmp_path / "report.html", "a1", result)
    page = target.read_text(encoding="utf-8")
    parser = _Inert()
    parser.feed(page)
    assert "script" not in parser.tags and "img" not in parser.tags and "iframe" not in parser.tags
    assert (
        not {a for a in parser.attributes if a.startswith("on")} and "src" not in parser.attributes
    )
    assert html.escape("<script>alert('xss')</script>") in page
    section = page.split('<h2 id="similarity">')[1]
    assert section.count("<details>") == len(PLANTED)
    assert "past: public.py" in section and "<mark>" in section
    mallory = section.split("mallory: ")[1].split("</details>")[0]  # dee and mallory's view
    assert html.escape("<img src=x onerror=alert(1)>") in mallory and "<mark>" in mallory
    # what is marked is the code that matched, as similarity.json gives it
    pair = next(p for p in result.pairs if "mallory" in (p.a, p.b))
    marked = {html.unescape(m) for m in re.findall(r"<mark>(.*?)</mark>", mallory, re.S)}
    for match in pair.matches:
        for text, spans in zip(match.texts, match.spans, strict=True):
            assert {text[start:end] for start, end in spans} <= marked
    saved = similarity.write_json(result, tmp_path / "similarity.json")
    data = json.loads(saved.read_text(encoding="utf-8"))
    assert {frozenset((p["a"], p["b"])) for p in data["pairs"]} == PLANTED
    assert data["threshold"] == similarity.THRESHOLD and data["settings"]["k"] == similarity.K


def test_the_report_says_when_nothing_is_similar(parts, submissions, tmp_path):
    alone = {name: submissions[name] for name in ("ana", "ben", "blank1")}
    result = similarity.compare(parts, alone, {}, similarity.THRESHOLD)
    page = write_report([], {}, set(), {}, tmp_path / "r.html", "a1", result).read_text()
    assert "No pair is above the threshold." in page and result.compared == 3

    failed = write_report([], {}, set(), {}, tmp_path / "f.html", "a1", "OSError: <b>disk</b>")
    assert "The comparison failed: OSError: &lt;b&gt;disk&lt;/b&gt;" in failed.read_text()


def test_the_grade_command_compares_the_graded_notebooks(release, submissions, tmp_path):
    """What the grade command runs after grading: the canonical notebooks the judge wrote under
    ``course/submitted``, read as files; a student without one is listed as not compared."""
    course = tmp_path / "course"
    for student in ("ben", "reordered", "ana"):
        notebook = nbformat.from_dict(json.loads(json.dumps(release)))
        for cell in notebook.cells:
            if fmt.grade_id(cell) in submissions[student]:
                cell.source = submissions[student][fmt.grade_id(cell)]
        folder = course / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        nbformat.write(notebook, folder / f"{ASSIGNMENT}.ipynb")
    specs = {ASSIGNMENT: judge.NotebookSpec(ASSIGNMENT, release, release)}
    students = ["ana", "ben", "reordered", "invalid"]
    result = results.compare_solutions(course, ASSIGNMENT, specs, students, None, 0.6)
    assert [(p.a, p.b) for p in result.pairs] == [("ben", "reordered")]
    assert [(s.owner, s.why) for s in result.skipped] == [
        ("invalid", f"no graded copy of {ASSIGNMENT}.ipynb (its row in grades.csv says why)")
    ]


@pytest.mark.parametrize(
    "options, message",
    [
        (["--similarity-threshold", "1.5"], "threshold must be in (0, 1]"),
        (["--similarity-threshold", "0"], "threshold must be in (0, 1]"),
        (["--similar-to", "missing-folder"], "no such folder"),
    ],
)
def test_the_grade_command_refuses_bad_similarity_options(options, message, tmp_path, capsys):
    argv = ["grade", ASSIGNMENT, str(tmp_path), "--out", str(tmp_path / "out"), *options]
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path)
        assert grade.main(argv) == errors.EXIT_FAILED
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()  # refused before anything is graded or written
