"""Grading code that students never see.

- ``autograder.hidden.<assignment>``: the functions that an assignment's hidden test cells call
  at autograde time, with the traps they share in ``autograder.hidden.shortcuts``;
- ``autograder.nbgrader_format``: everything the course knows about nbgrader's format (cell
  metadata, solution and hidden-test markers, course directories, the nbgrader command line);
- ``autograder.fingerprint``: the one fingerprint of everything that can change a grade;
- ``autograder.grade`` (``python -m autograder grade``): the TA grading command, with the judge,
  the sandbox and the wire protocol it uses.

It imports ``course`` and nothing from ``tools`` or ``tests``. The kernel that grades a
submission needs the repository root on its ``PYTHONPATH`` so that ``import autograder.hidden``
works.
"""
