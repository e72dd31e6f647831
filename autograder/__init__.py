"""Grading code that students never see, in two parts for two audiences.

- ``autograder.hidden.<assignment>``: the per-assignment checks that an assignment's hidden
  test cells call at autograde time, with the traps they share in ``autograder.hidden.shortcuts``
  (written by whoever writes an assignment);
- ``autograder.platform``: the TA grading command (``python -m autograder grade``,
  ``autograder.platform.grade``) and what it runs on: the sandbox, the kernel's agent and the
  wire protocol, the judge, the recorder, the report and its markup sanitiser, the cluster
  jobs, the late policy, the exports, the regrade log and the similarity check;
- shared by the build and the platform, here: ``autograder.nbgrader_format`` (everything the
  course knows about nbgrader's format: cell metadata, solution and hidden-test markers, course
  directories, the nbgrader command line), ``autograder.nbgrader_config`` (its configuration),
  ``autograder.nbgrading`` (nbgrader's recording step fed with the judge's results) and
  ``autograder.fingerprint`` (the one fingerprint of everything that can change a grade).

The hidden checks and the shared modules import nothing from ``autograder.platform``. It all
imports ``course`` and nothing from ``tools`` or ``tests``. The kernel that grades a submission
needs the repository root on its ``PYTHONPATH`` so that ``import autograder.hidden`` works.
"""
