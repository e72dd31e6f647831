"""One run of the grading command: collect, judge (here, or in shards merged later), record
in nbgrader's gradebook, export, report."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from autograder import nbgrader_format as fmt
from autograder.platform import cluster, exports, feedback, judge, policy, similarity
from autograder.platform.course_folder import prepare_course
from autograder.platform.errors import EXIT_OK, GradingError
from autograder.platform.inputs import Collection, Entry, collect
from autograder.platform.judging import Job, load_specs, run_parallel
from autograder.platform.record import GRADER_ERROR, SubmissionRecord
from autograder.platform.recorder import Recorder
from autograder.platform.report import write_report
from autograder.platform.results import (
    LateColumns,
    exit_code,
    export_csv,
    log_regrades,
    manual_columns,
    part_points,
    print_run_notes,
    print_summary,
    similar_solutions,
)
from autograder.platform.sandbox import (
    ROOT,
    ROOTLESS,
    Limits,
    check_sandbox_available,
    cpu_cap,
    memory_cap,
)
from autograder.platform.state import (
    inputs_digest,
    output_lock,
    read_state,
    state_path,
    to_judge,
    why_judged,
    write_state,
)

SANDBOX_WORDS = {
    ROOT: "root mode (namespaces, chroot, a uid per kernel)",
    ROOTLESS: "rootless mode (user namespaces; kernels run with your uid outside the sandbox)",
}


CPU_CAP_ROOTLESS = "no cap per kernel: no cpu cgroup in rootless mode (run as root for one)"


def memory_cap_rootless(limits: Limits) -> str:
    return (
        f"{limits.memory_mb} MB of address space per process only: no memory cgroup in"
        " rootless mode (run as root for a cap per kernel)"
    )


@dataclass(frozen=True)
class GradingOptions:
    """Everything a run of :func:`grade` takes besides the assignment, the submissions and the
    output folder: built once from the command line (:func:`options_from`)."""

    workers: int = 1
    limits: Limits = field(default_factory=Limits)
    force: bool = False  # judge unchanged submissions again
    quiet: bool = False
    # similarity: the folder of past or public solutions, and the score from which a pair is listed
    similar_to: Path | None = None
    similarity_threshold: float = similarity.THRESHOLD
    # the late policy's inputs, and the roster of the exports
    policy_file: Path | None = None
    submitted_at: Path | None = None
    roster_file: Path | None = None
    # the cluster role: judge shard (I, N) into ``shards``, or merge the shards (neither: a whole
    # run); ``shards`` is ``OUT/shards`` unless given
    shard: tuple[int, int] | None = None
    shards: Path | None = None
    merge: bool = False
    # put each student's feedback back through nbgrader's exchange (autograder.platform.feedback);
    # a shard records nothing and so releases nothing: the merge does
    release_feedback: bool = False

    def __post_init__(self) -> None:
        if self.shard is not None and self.merge:
            raise GradingError(
                "--shard and --merge: one or the other (judge a shard, or merge them)"
            )

    def shards_folder(self, out: Path) -> Path:
        return self.shards or out / "shards"


@dataclass
class Batch:
    """What a run and a shard both start from: the course folder, the assignment's notebooks,
    the submissions, the state of the last run and the submissions to judge."""

    course: Path
    specs: dict[str, judge.NotebookSpec]
    collection: Collection
    state: dict
    regrading: str  # why every submission is judged again, if the grading changed (else "")
    todo: list[Entry]


def open_batch(
    assignment: str, path: Path, folder: Path, out: Path, force: bool, limits: Limits
) -> Batch:
    """A course folder in ``folder``, the submissions in ``path`` collected into its inbox (and
    every input's fate in ``folder/inputs.csv``, written first: it stands whatever follows), the
    state of the last run in ``out`` and what to judge."""
    folder.mkdir(parents=True, exist_ok=True)
    course = prepare_course(folder, assignment)
    specs = load_specs(course, assignment)
    collection = collect(path, list(specs), folder / "inbox", assignment)
    collection.write_inputs(folder / "inputs.csv")
    if not collection.entries:
        raise GradingError(f"no notebooks (*.ipynb) found in {path}")
    state, regrading = read_state(state_path(out), assignment, limits)
    todo = to_judge(collection.entries, state["records"], force)
    return Batch(course, specs, collection, state, regrading, todo)


def judge_all(todo: list[Entry], assignment: str, course: Path, options: GradingOptions):
    """Judge ``todo`` in ``options.workers`` processes: (entry, record) as each finishes."""
    jobs = [Job(e, assignment, str(course), options.limits) for e in todo]
    import torch  # noqa: F401 - imported once here, inherited by every forked worker

    return run_parallel(jobs, options.workers)


def grade(assignment: str, path: Path, out: Path, options: GradingOptions) -> int:
    """Grade the submissions in ``path`` into ``out``; the exit code (module docstring).

    With ``options.shard`` (I, N): judge only shard I of N (:mod:`autograder.platform.cluster`) into
    ``SHARDS/I-of-N`` and record nothing. With ``options.merge``: judge nothing, take every
    shard's judged submissions from ``SHARDS`` and record them, as a run on one machine would
    have.
    """
    limits, merge, quiet = options.limits, options.merge, options.quiet
    shards = options.shards_folder(out)
    if options.shard is not None:
        return grade_shard(assignment, path, out, options)
    similarity.check_threshold(options.similarity_threshold)
    similar_to = options.similar_to
    if similar_to is not None and not similar_to.is_dir():
        raise GradingError(f"--similar-to {similar_to}: no such folder")
    course_policy, times = read_policy(assignment, options.policy_file, options.submitted_at)
    roster_file = options.roster_file
    roster, roster_fields = exports.load_roster(roster_file) if roster_file else ({}, set())
    if options.release_feedback:
        try:
            feedback.course_of(path)  # before anything is graded
        except feedback.FeedbackError as error:
            raise GradingError(str(error)) from error
    mode = "" if merge else check_sandbox_available()
    with output_lock(out):  # one command at a time on a folder (module docstring)
        batch = open_batch(assignment, path, out, out, options.force, limits)
        course, specs, collection, state = batch.course, batch.specs, batch.collection, batch.state
        entries, todo = collection.entries, batch.todo
        state_file = state_path(out)
        records: dict[str, SubmissionRecord] = state["records"]
        taken: dict[str, tuple[SubmissionRecord, Path]] = {}  # merged: record, shard's course
        if merge:
            manifests, mode, taken = _shards_judged(shards, assignment, state, entries, todo)

        with fmt.gradebook(course) as gradebook:
            for entry in entries:
                gradebook.update_or_create_student(entry.student)

        judged_why = {
            e.student: batch.regrading or why_judged(e, records, options.force) for e in todo
        }
        started = time.monotonic()
        if merge:
            judged = ((e, taken[e.student][0]) for e in todo)
        else:
            judged = judge_all(todo, assignment, course, options)
        # forked before the workers: records as they finish, each within its own deadline
        recorder = Recorder(course, assignment, limits.record_timeout, limits.grader_memory_mb)
        with tqdm(total=len(todo), desc="grading", unit="nb", disable=quiet or None) as bar:
            for entry, record in judged:
                if merge:
                    cluster.take_judged(taken[entry.student][1], course, entry.student, assignment)
                records[entry.student] = record
                write_state(state_file, state)
                keep = GRADER_ERROR in record.flags
                recorder.record(entry.student, record.gradable, keep=keep)
                bar.update(1)
        judge_seconds = time.monotonic() - started
        if merge:  # the shards judged in parallel: the longest of them is the judging's time
            judge_seconds = max(manifest["judge_seconds"] for manifest in manifests)
        record_seconds = finish_recording(course, assignment, recorder, records)
        write_state(state_file, state)
        late = None
        if course_policy is not None:
            origins = {e.student: e.origin for e in entries}
            late = LateColumns(course_policy, assignment, path, origins, times)
        resubmitted, resubmitted_lines = {}, []
        if path.name == "submitted" and path.is_dir():  # nbgrader collect's, maybe
            origins = {e.student: e.origin for e in entries}
            resubmitted, resubmitted_lines = feedback.resubmissions(path, assignment, origins)
        rows = export_csv(course, assignment, specs, records, out / "grades.csv", late, resubmitted)
        regraded = log_regrades(
            state, rows, list(part_points(specs)), records, judged_why, late, out
        )
        scores = {row.student: row.final for row in rows}
        exports.write_canvas(out / "canvas.csv", assignment, scores, roster)
        exports.write_moodle(out / "moodle.csv", assignment, scores, roster)
        released = None
        if options.release_feedback:
            released = _release_feedback(path, assignment, entries, rows, out)
        students = [r.student for r in rows]
        similar = similar_solutions(
            out, course, assignment, specs, students, similar_to, options.similarity_threshold
        )
        write_report(
            [row.csv() for row in rows],
            part_points(specs),
            manual_columns(specs),
            records,
            out / "report.html",
            f"{assignment}: grading report",
            similar,
            policy.COLUMNS if late else None,
        )
        state["sandbox"] = mode
        state["memory"] = memory_cap(limits) if mode == ROOT else memory_cap_rootless(limits)
        state["cpu"] = cpu_cap(limits) if mode == ROOT else CPU_CAP_ROOTLESS
        state["timing"] = {
            "judged": len(todo),
            "judge_seconds": judge_seconds,
            "record_seconds": record_seconds,
        }
        write_state(state_file, state)
        if not quiet:
            print_summary(rows, out, len(todo), judge_seconds + record_seconds)
            print_run_notes(
                rows,
                out,
                collection.skipped,
                late is not None,
                regraded,
                options.similarity_threshold,
                similar,
                [
                    *resubmitted_lines,
                    *(feedback.summary(released[0]) if released is not None else []),
                    *(released[1] if released is not None else []),
                ],
                exports.empty_columns(roster_fields, roster, scores),
            )
            print(f"sandbox: {SANDBOX_WORDS[mode]}")
            print(f"memory: {state['memory']}")
            print(f"cpu: {state['cpu']}")
        return exit_code(rows)


def _shards_judged(shards: Path, assignment: str, state: dict, entries, todo):
    """``--merge``: every shard's manifest, the weaker sandbox mode among them, and per student
    the record a shard judged and that shard's course folder. Refuses, naming them, if a
    submission this run must record was judged by no shard."""
    manifests = cluster.read_shards(
        shards, assignment, state["fingerprint"], inputs_digest(entries)
    )
    modes = {manifest["sandbox"] for manifest in manifests}
    mode = ROOTLESS if ROOTLESS in modes else ROOT  # the weaker one, if the nodes differ
    taken = {
        student: (SubmissionRecord.from_json(record), Path(manifest["folder"]) / "course")
        for manifest in manifests
        for student, record in manifest["records"].items()
    }
    lacking = [e.student for e in todo if e.student not in taken]
    if lacking:
        raise GradingError(
            f"--merge: no shard judged {', '.join(lacking[:5])}"
            f"{', ...' if len(lacking) > 5 else ''}, which this run must record (were the"
            " shards run with the same --force and state.json as this merge?)"
        )
    return manifests, mode, taken


def _release_feedback(path: Path, assignment: str, entries: list[Entry], rows, out: Path):
    """Each student's feedback back through nbgrader's exchange (``--release-feedback``), and
    their scores into that course directory's gradebook: (what became of each, summary lines)."""
    pages = {row.student: [Path(p) for p in row.feedback.split(";") if p] for row in rows}
    origins = {e.student: e.origin for e in entries}
    try:
        return feedback.release(path, assignment, origins, pages, out / "course")
    except feedback.FeedbackError as error:
        raise GradingError(f"{error} (the grades are written: {out})") from error


def grade_shard(assignment: str, path: Path, out: Path, options: GradingOptions) -> int:
    """Judge shard ``options.shard`` = (I, N) of the submissions in ``path`` into
    ``SHARDS/I-of-N`` (its own course folder and ``shard.json``); nothing is recorded. Reads
    ``out/state.json``, if there is one, only to skip what the last merged run recorded
    unchanged."""
    assert options.shard is not None
    index, count = options.shard
    mode = check_sandbox_available()
    folder = cluster.shard_folder(options.shards_folder(out), index, count)
    (folder / cluster.MANIFEST).unlink(missing_ok=True)  # an earlier run's is not this one's
    batch = open_batch(assignment, path, folder, out, options.force, options.limits)
    entries, state = batch.collection.entries, batch.state
    mine = set(cluster.shard_of([e.student for e in entries], index, count))
    todo = [e for e in batch.todo if e.student in mine]
    started = time.monotonic()
    records = {}
    with tqdm(total=len(todo), desc=f"shard {index}/{count}", unit="nb",
              disable=options.quiet or None) as bar:  # fmt: skip
        for entry, record in judge_all(todo, assignment, batch.course, options):
            records[entry.student] = record
            bar.update(1)
    seconds = time.monotonic() - started
    manifest = {
        "assignment": assignment,
        "shard": [index, count],
        "fingerprint": state["fingerprint"],
        "inputs": inputs_digest(entries),
        "students": sorted(mine),
        "records": {student: record.to_json() for student, record in records.items()},
        "sandbox": mode,
        "judge_seconds": seconds,
    }
    target = cluster.write_manifest(folder, manifest)
    if not options.quiet:
        print(
            f"shard {index}/{count}: judged {len(todo)} of its {len(mine)} submission(s)"
            f" ({len(entries)} in all) in {seconds:.0f} s; {target}"
        )
        print(f"sandbox: {SANDBOX_WORDS[mode]}")
        print("when every shard is done: the same command with --merge instead of --shard")
    return EXIT_OK


def read_policy(
    assignment: str, policy_file: Path | None, submitted_at: Path | None
) -> tuple[policy.Policy | None, dict[str, policy.SubmissionTime]]:
    """The course policy and the ``--submitted-at`` times (by the CSV's student names), read and
    checked before anything is graded."""
    if policy_file is None:
        if submitted_at is not None:
            raise GradingError("--submitted-at needs --policy: the times only serve the policy")
        return None, {}
    course_policy = policy.load(policy_file)
    if assignment not in course_policy.due:
        raise policy.PolicyError(
            f"--policy {policy_file}: assignments.{assignment}.due: missing (no due date for"
            " the assignment being graded)"
        )
    return course_policy, policy.read_submitted_at(submitted_at) if submitted_at else {}


def finish_recording(
    course: Path, assignment: str, recorder: Recorder, records: dict[str, SubmissionRecord]
) -> float:
    """Wait for the recorder (nbgrader's autograde and feedback per submission); write each
    record's ``recorded`` and, if nbgrader failed on it, ``recording`` and its message. Seconds
    spent waiting after the last submission was judged."""
    from nbgrader.api import MissingEntry

    started = time.monotonic()
    results = recorder.finish()
    with fmt.gradebook(course) as gradebook:
        for student, result in results.items():
            record = records[student]
            if not record.gradable:
                # nothing to record: its row says why; a grader error is judged again next run
                record.recorded = GRADER_ERROR not in record.flags
                continue
            try:
                gradebook.find_submission(assignment, student)
                ok = result["recorded"] and (course / "autograded" / student / assignment).is_dir()
            except MissingEntry:
                ok = False
            if not ok:
                record.recording = result["status"] or GRADER_ERROR
                record.recording_message = (
                    result["log"]
                    if result["status"]
                    else "nbgrader could not record this submission: " + _tail(result["log"])
                )
            record.recorded = ok
    return time.monotonic() - started


def _tail(log: str) -> str:
    lines = [line for line in log.splitlines() if "ERROR" in line or "Error" in line]
    return " | ".join(lines[-3:])[:400]
