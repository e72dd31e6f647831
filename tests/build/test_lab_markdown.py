"""The bundle's MyST -> JupyterLab converter (tools/lab_markdown.py), one role at a time."""

from __future__ import annotations

import re

import nbformat
import pytest

from tests.messages import raises
from tools.lab_markdown import (
    BIBLIOGRAPHY,
    MystConversionError,
    Reference,
    for_jupyterlab,
    load_bibliography,
)

BIB = {
    "solo2019": Reference("solo2019", "Solo", "2019", "Solo, A. (2019). One. *J*."),
    "pair1997": Reference(
        "pair1997", "Hochreiter and Schmidhuber", "1997", "Hochreiter, S. (1997)."
    ),
    "many2013": Reference("many2013", "Pascanu *et al.*", "2013", "Pascanu, R. (2013). Two."),
}


def _notebook(*cells: str | tuple[str, str]) -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook()
    for index, cell in enumerate(cells):
        kind, source = cell if isinstance(cell, tuple) else ("markdown", cell)
        new = nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell
        notebook.cells.append(new(source, id=f"c{index}"))
    return notebook


def _sources(notebook: nbformat.NotebookNode) -> list[str]:
    return [cell.source for cell in notebook.cells]


def test_labelled_equations_are_tagged_in_order_and_references_give_their_number():
    notebook = _notebook(
        "See {eq}`eq-b` below and {eq}`eq-a`.",
        "$$a = 1$$ (eq-a)\n\nand $$b = 2$$",
        "$$c =\n  3.$$ (eq-b)\n\nBy {eq}`eq-a`, done.",
    )
    converted = for_jupyterlab(notebook)
    assert _sources(converted) == [
        "See (2) below and (1).",
        "$$a = 1 \\tag{1}$$\n\nand $$b = 2$$",
        "$$c =\n  3. \\tag{2}$$\n\nBy (1), done.",
    ]


def test_an_unlabelled_display_before_a_labelled_one_is_left_alone():
    converted = for_jupyterlab(_notebook("$$x$$ text $$y$$ (eq-y) and {eq}`eq-y`"))
    assert converted.cells[0].source == "$$x$$ text $$y \\tag{1}$$ and (1)"


def test_parenthetical_citations_give_authors_and_years_and_a_references_cell():
    converted = for_jupyterlab(
        _notebook("LSTM {cite:p}`pair1997, many2013`.", "Again {cite}`solo2019`."), BIB
    )
    assert _sources(converted)[:2] == [
        "LSTM (Hochreiter and Schmidhuber, 1997; Pascanu *et al.*, 2013).",
        "Again (Solo, 2019).",
    ]
    references = converted.cells[-1]
    assert references.cell_type == "markdown" and references.id == "lab-references"
    assert references.source == (
        "## References\n\n"
        "- Hochreiter, S. (1997).\n"
        "- Pascanu, R. (2013). Two.\n"
        "- Solo, A. (2019). One. *J*."
    )


def test_textual_citations_put_the_year_in_brackets_and_each_work_is_listed_once():
    converted = for_jupyterlab(
        _notebook("As {cite:t}`many2013` showed, and {cite:p}`many2013`."), BIB
    )
    assert (
        converted.cells[0].source
        == "As Pascanu *et al.* (2013) showed, and (Pascanu *et al.*, 2013)."
    )
    assert converted.cells[-1].source.count("Pascanu") == 1


def test_a_notebook_that_cites_nothing_gets_no_references_cell():
    notebook = _notebook("No citations here.", ("code", "x = 1"))
    assert _sources(for_jupyterlab(notebook, BIB)) == _sources(notebook)


def test_targets_are_removed_and_ref_gives_the_heading_or_the_explicit_text():
    converted = for_jupyterlab(
        _notebook(
            "(sec-bptt)=\n## 2. Backpropagation through time\n\nText.",
            "Back to {ref}`sec-bptt`, or {ref}`that section <sec-bptt>`.",
        )
    )
    assert _sources(converted) == [
        "## 2. Backpropagation through time\n\nText.",
        "Back to 2. Backpropagation through time, or that section.",
    ]


def test_math_role_becomes_inline_dollars():
    assert for_jupyterlab(_notebook("Let {math}`h_t` be")).cells[0].source == "Let $h_t$ be"


def test_code_cells_and_the_input_notebook_are_untouched():
    notebook = _notebook(("code", "s = '{eq}`eq-a`'  # (eq-a)="), "$$a$$ (eq-a)")
    before = nbformat.writes(notebook)
    converted = for_jupyterlab(notebook)
    assert converted.cells[0].source == "s = '{eq}`eq-a`'  # (eq-a)="
    assert nbformat.writes(notebook) == before


@pytest.mark.parametrize(
    ("cells", "message"),
    [
        (["{numref}`fig-1`"], "markdown cell 0 (c0): uses the role {numref}"),
        (["{eq}`eq-missing`"], "refers to the equation 'eq-missing', which has no label here"),
        (["{cite:p}`solo2019,nobody2020`"], "cites nobody2020, not in references.bib"),
        (["{cite:ps}`solo2019`"], "uses the role {cite:ps}"),
        (
            ["$$a$$ (eq-a)", "$$b$$ (eq-a)"],
            "markdown cell 1 (c1): the equation label 'eq-a' is used twice",
        ),
        (["{ref}`nowhere`"], "refers to 'nowhere', which no `(label)=` target defines"),
        ([":::{note}\nHi\n:::"], "the MyST directive {note} is not supported"),
        (["```{figure} a.png\n```"], "the MyST directive {figure} is not supported"),
    ],
)
def test_markup_the_bundle_cannot_render_is_an_error_naming_the_cell(cells, message):
    with pytest.raises(MystConversionError, match=re.escape(message)):
        for_jupyterlab(_notebook(*cells), BIB)


def test_an_nbgrader_cell_with_markup_is_an_error_and_one_without_is_kept():
    notebook = _notebook("Task: {cite:p}`solo2019`.", "Plain task.")
    notebook.cells[1].metadata["nbgrader"] = {"locked": True, "grade_id": "task"}
    assert for_jupyterlab(notebook, BIB).cells[1] == notebook.cells[1]
    notebook.cells[0].metadata["nbgrader"] = {"locked": True, "grade_id": "intro"}
    with raises(MystConversionError, "c0", "nbgrader", "MyST"):
        for_jupyterlab(notebook, BIB)


def test_the_course_bibliography_reads_authors_years_and_accents(tmp_path):
    bibliography = load_bibliography()
    assert bibliography["hochreiter1997lstm"].authors == "Hochreiter and Schmidhuber"
    assert bibliography["pascanu2013difficulty"].authors == "Pascanu *et al.*"
    assert bibliography["pascanu2013difficulty"].year == "2013"
    entry = bibliography["hochreiter1997lstm"].entry
    assert entry.startswith("Hochreiter, S. and Schmidhuber, J. (1997). Long Short-Term Memory.")
    assert "*Neural Computation*, 9(8), 1735\u20131780." in entry
    assert "<https://doi.org/10.1162/neco.1997.9.8.1735>" in entry
    assert "van Merri\u00ebnboer, B." in bibliography["cho2014learning"].entry
    assert BIBLIOGRAPHY.name == "references.bib"


def test_a_broken_bibliography_is_a_clear_error(tmp_path):
    with pytest.raises(MystConversionError, match="no such bibliography"):
        load_bibliography(tmp_path / "missing.bib")
    broken = tmp_path / "broken.bib"
    broken.write_text("@article{x, title = {No author}, year = {2000}}\n")
    with raises(MystConversionError, "'x'", "no author"):
        load_bibliography(broken)
    broken.write_text("@article{x, author = {A, B}, title = {unclosed\n")
    with pytest.raises(MystConversionError, match="cannot be read as BibTeX"):
        load_bibliography(broken)
