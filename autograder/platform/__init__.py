"""The grading platform: ``python -m autograder grade`` (:mod:`autograder.platform.grade`) and
what it runs on, for whoever runs or maintains the grading rather than writes an assignment.

- the command, by job: :mod:`~autograder.platform.grade` (its command line),
  :mod:`~autograder.platform.pipeline` (one run), :mod:`~autograder.platform.inputs` (collecting
  the input), :mod:`~autograder.platform.course_folder` (nbgrader's course folder),
  :mod:`~autograder.platform.judging` (one submission in its process),
  :mod:`~autograder.platform.record` (what the judging of a submission gives),
  :mod:`~autograder.platform.state` (the output folder's lock and state between runs),
  :mod:`~autograder.platform.results` (grades.csv, the summary, the exit code),
  :mod:`~autograder.platform.jobs` (cluster jobs), :mod:`~autograder.platform.errors`;
- :mod:`~autograder.platform.sandbox`: the sandboxed kernel and its limits;
  :mod:`~autograder.platform.kernel_runtime`: the grader's agent inside that kernel;
  :mod:`~autograder.platform.wire`: the protocol between them;
- :mod:`~autograder.platform.judge`: one submission, student cells in the sandbox and test
  cells in the grader;
- :mod:`~autograder.platform.recorder`: nbgrader's gradebook and feedback, written while
  kernels run; :mod:`~autograder.platform.report` and :mod:`~autograder.platform.markup`: the
  grading report and the sanitised HTML of submissions;
- :mod:`~autograder.platform.cluster`: shards and their merge (Slurm, Kubernetes);
  :mod:`~autograder.platform.policy`: the late policy; :mod:`~autograder.platform.exports`:
  Canvas and Moodle CSVs; :mod:`~autograder.platform.regrades`: the regrade log;
  :mod:`~autograder.platform.similarity`: similar solutions.

The per-assignment checks are ``autograder.hidden``; the platform imports them only by name,
when a test cell calls one.
"""
