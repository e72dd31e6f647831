"""No graded cell of a reference solution repeats a lecture or ``course/`` (``tools.copies``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import copies

HEADER = "# %% nbgrader={{{meta}}}\n"
GRADED = (
    '"grade": false, "grade_id": "{grade_id}", "locked": false, "schema_version": 3, '
    '"solution": true, "task": false'
)
GIVEN = (
    '"grade": false, "grade_id": "given", "locked": true, "schema_version": 3, '
    '"solution": false, "task": false'
)

# Lecture 6's layer_norm and the three lines after it, renamed and recommented, with two
# statements joined by a semicolon: the normalisation sees through all of it.
PLANTED_COPY = '''def my_norm(values, scale, shift, tiny=1e-5):
    """My own layer norm."""
    ### BEGIN SOLUTION
    centre = values.mean(-1, keepdim=True)
    spread = ((values - centre) ** 2).mean(-1,
                                           keepdim=True)  # wrapped differently
    return scale * (values - centre) / torch.sqrt(spread + tiny) + shift
    ### END SOLUTION


inputs = torch.tensor([[1.0, 2.0, 3.0, 4.0], [2.0, 2.0, 2.0, 2.0]])
print("x =", inputs.tolist()); centre, spread = inputs.mean(-1), inputs.var(-1, unbiased=False)
'''

# Five of those lines, then a line of its own: one short of a run.
SHORT_OF_A_RUN = """def my_norm(values, scale, shift, tiny=1e-5):
    centre = values.mean(-1, keepdim=True)
    spread = ((values - centre) ** 2).mean(-1, keepdim=True)
    return scale * (values - centre) / torch.sqrt(spread + tiny) + shift


inputs = torch.tensor([[1.0, 2.0, 3.0, 4.0], [2.0, 2.0, 2.0, 2.0]])
inputs = inputs.flip(-1)
print("x =", inputs.tolist())
"""


@pytest.fixture(scope="module")
def references():
    return copies.repository_runs()


def planted(tmp_path: Path, code: str, given: str = "") -> Path:
    folder = tmp_path / "solutions" / "a9_planted"
    folder.mkdir(parents=True)
    text = HEADER.format(meta=GRADED.format(grade_id="norm")) + code
    if given:  # a locked cell the instructor wrote: not graded, not checked
        text = HEADER.format(meta=GIVEN) + given + "\n" + text
    (folder / "a9_planted.py").write_text(text, encoding="utf-8")
    return tmp_path / "solutions"


def test_the_reference_solutions_copy_no_lecture_and_no_course_module(references):
    assert copies.find_copies(references=references) == []


def test_a_planted_copy_of_a_lecture_cell_is_found_and_fails_the_check(tmp_path, references):
    solutions = planted(tmp_path, PLANTED_COPY)
    found = copies.find_copies(solutions, references=references)
    assert [(c.assignment, c.grade_id, c.reference) for c in found] == [
        ("a9_planted", "norm", found[0].reference)
    ]
    assert found[0].reference.startswith("lectures/06_transformer.py, code cell ")
    assert len(found[0].lines) == copies.RUN
    with pytest.raises(copies.CopiedSolutionError, match="a9_planted, graded cell 'norm'"):
        copies.check(solutions, references=references)
    assert copies.main(["--solutions", str(solutions)]) == 1


def test_five_shared_lines_are_not_a_copy(tmp_path, references):
    assert copies.find_copies(planted(tmp_path, SHORT_OF_A_RUN), references=references) == []


def test_a_copy_in_a_cell_that_is_not_graded_is_not_listed(tmp_path, references):
    solutions = planted(tmp_path, "def norm(x):\n    return x\n", given=PLANTED_COPY)
    assert copies.find_copies(solutions, references=references) == []


def test_a_copy_of_a_course_module_is_found(tmp_path, references):
    module = Path(copies.REPO / "course" / "train.py").read_text(encoding="utf-8")
    body = module[module.index("def linear_warmup_decay") :]
    code = body[: body.index("\n\n\n")]  # the whole function, as the package writes it
    found = copies.find_copies(planted(tmp_path, code), references=references)
    assert {c.reference for c in found} == {"course/train.py"}
