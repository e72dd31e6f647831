"""nbgrader's side of TA grading: the course directory, the gradebook, autograde and feedback.

nbgrader keeps its authoring side (source, release, grade cells, checksums), its gradebook,
its feedback and its export. Only its ``Execute`` step is replaced, by :class:`InjectResults`:
the outputs of every code cell were already produced by the judge (student cells in the
sandbox, test cells in the grader), so nbgrader's own sanitizing (ClearOutput,
DeduplicateIds, OverwriteKernelspec, OverwriteCells), SaveAutoGrades and feedback run on them
unchanged and no student code ever runs inside an nbgrader process.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode

JUDGED = "judged"

GRADING_CONFIG = """

# ---- added by `python -m autograder grade` -------------------------------------------------
# Student code never runs in nbgrader: the judge ran it in a sandbox and ran the tests in the
# grader; InjectResults puts those outputs where nbgrader's Execute would have.
c.Autograde.autograde_preprocessors = [
    "autograder.nbgrading.InjectResults",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "nbgrader.preprocessors.SaveAutoGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]
c.InjectResults.results_root = {root!r}
"""


class InjectResults(NbGraderPreprocessor):
    """Set each code cell's outputs from ``<results_root>/<student>/<assignment>/<nb>.json``."""

    results_root = Unicode("", help="folder of the judge's results").tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict):
        info = resources["nbgrader"]
        path = (
            Path(self.results_root)
            / info["student"]
            / info["assignment"]
            / f"{info['notebook']}.json"
        )
        if not path.is_file():
            raise FileNotFoundError(f"no judged results at {path}")
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            outputs = cells.get(cell.get("id", ""), [])
            cell.outputs = [nbformat.from_dict(output) for output in outputs]
            cell.execution_count = index + 1 if outputs or cell.source.strip() else None
        return nb, resources
