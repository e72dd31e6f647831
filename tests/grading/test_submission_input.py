"""Whatever bytes a student hands in: a notebook (upgraded if old), or "invalid notebook" with a
message. Never an exception, which the grading command would report as a grader error.

These run the grader's reading and rebuilding steps (``judge.read_submission`` and
``judge.canonicalize``) directly on the released Assignment 1, with no kernel; the attack
suite (tests/grading/test_ta_grading.py) grades an nbformat 3 notebook and a deeply nested one end to
end.
"""

from __future__ import annotations

import copy
import json

import nbformat
import pytest

from autograder import nbgrader_format as fmt
from autograder.platform import judge
from tools.build import ASSIGNMENTS
from tools.submissions import honest_submission

ASSIGNMENT = "a1_rnn_bptt"


@pytest.fixture(scope="module")
def spec(tmp_path_factory) -> judge.NotebookSpec:
    source = tmp_path_factory.mktemp("source") / f"{ASSIGNMENT}.ipynb"
    fmt.write_notebook(fmt.read_source(fmt.source_files(ASSIGNMENT)[0]), source)
    return judge.NotebookSpec.load(source, ASSIGNMENTS / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")


@pytest.fixture(scope="module")
def honest(spec) -> nbformat.NotebookNode:
    return honest_submission(spec.source, spec.release)


def _read(raw: bytes, spec) -> tuple[nbformat.NotebookNode, list[tuple[str, str]], list[str]]:
    notebook, notes = judge.read_submission(raw, spec)
    canonical, repairs = judge.canonicalize(notebook, spec)
    nbformat.validate(canonical)
    return canonical, notes, repairs


def _solutions(notebook) -> dict[str, str]:
    return {fmt.grade_id(c): c.source for c in notebook.cells if fmt.cell_kind(c) == "solution"}


@pytest.mark.parametrize("version", [3, 2])
def test_old_nbformat_versions_are_upgraded_and_read_like_nbgrader_does(spec, honest, version):
    old = nbformat.convert(copy.deepcopy(honest), 3)  # it converts in place
    if version == 2:
        old = nbformat.v3.convert.downgrade(old)
    raw = json.dumps(old).encode()
    canonical, notes, repairs = _read(raw, spec)
    assert notes == [("", f"nbformat {version} notebook upgraded to version 4")]
    assert repairs == []
    expected = _solutions(honest)
    assert _solutions(canonical) == expected
    assert all("raise NotImplementedError" not in code for code in expected.values())


def _deep(depth: int, open_: str = "[", close: str = "]") -> str:
    return open_ * depth + close * depth


def _with(notebook, **changes) -> bytes:
    return json.dumps({**notebook, **changes}).encode()


def _unreadable_cases(release) -> dict[str, bytes]:
    cells = release["cells"]
    code = next(c for c in cells if c["cell_type"] == "code")
    text = json.dumps(release)
    return {
        "deep array as cells": f'{{"cells": {_deep(100_000)}}}'.encode(),
        "deep object": ('{"a":' * 100_000 + "1" + "}" * 100_000).encode(),
        "deep notebook metadata": text.replace(
            '"metadata": {', '"metadata": {"deep": ' + _deep(5_000) + ", ", 1
        ).encode(),
        "deep metadata, under the JSON limit": text.replace(
            '"metadata": {', '"metadata": {"deep": ' + _deep(900) + ", ", 1
        ).encode(),
        "an integer of 10,000 digits": text.replace(
            '"metadata": {', '"metadata": {"n": ' + "9" * 10_000 + ", ", 1
        ).encode(),
        "cells are numbers": _with(release, cells=[1, 2]),
        "a cell is a list": _with(release, cells=[[code]]),
        "a cell without a type": _with(release, cells=[{"source": "x", "metadata": {}}, *cells]),
        "a cell of an unknown type": _with(release, cells=[{**code, "cell_type": "graph"}]),
        "a source that is a number": _with(release, cells=[{**code, "source": 5}, *cells]),
        "a source list holding a number": _with(release, cells=[{**code, "source": ["a", 1]}]),
        "cell metadata that is a list": _with(release, cells=[{**code, "metadata": []}]),
        "notebook metadata that is a list": _with(release, metadata=[]),
        "outputs that are a string": _with(release, cells=[{**code, "outputs": "x"}]),
        "nbformat 5": _with(release, nbformat=5),
        "nbformat as a string": _with(release, nbformat="4"),
        "worksheets that are not a list": _with(
            {"nbformat": 3, "nbformat_minor": 0, "metadata": {}}, worksheets={"cells": []}
        ),
        "a v3 notebook whose worksheet holds numbers": _with(
            {"nbformat": 3, "nbformat_minor": 0, "metadata": {}}, worksheets=[{"cells": [1]}]
        ),
        "not UTF-8": b"\xff\xfe{\x00}\x00",
        "truncated": text[: len(text) // 2].encode(),
        "a JSON list": b"[1, 2, 3]",
        "a JSON string": b'"cells"',
        "empty": b"  \n",
    }


def test_every_unparsable_notebook_is_an_invalid_notebook_with_a_message(spec):
    release = json.loads((ASSIGNMENTS / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text())
    for name, raw in _unreadable_cases(release).items():
        with pytest.raises(judge.Unreadable) as raised:
            _read(raw, spec)
        assert raised.value.status == "invalid notebook", name
        assert len(str(raised.value)) > 10, (name, str(raised.value))


def test_a_byte_order_mark_is_no_reason_to_refuse(spec, honest):
    canonical, notes, repairs = _read(b"\xef\xbb\xbf" + json.dumps(honest).encode(), spec)
    assert notes == [] and repairs == [] and _solutions(canonical) == _solutions(honest)
