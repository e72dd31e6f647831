"""``python -m autograder grade ASSIGNMENT PATH``: grade a folder or zip of notebooks, in parallel.

Steps: an nbgrader course directory under ``OUT/course`` (source, release, gradebook); every
notebook in PATH becomes a student (named by the file, or by its folder when the file is named
like the assignment's notebook); each submission is judged in a separate process with its own
sandboxed kernel (``--workers`` at a time); nbgrader then records the judged outputs in its
gradebook and writes feedback; ``OUT/grades.csv`` gets one row per submission with its
per-part scores, total and status, and a summary is printed.

A re-run skips submissions whose file (and the grading settings) did not change, so running
twice on the same folder neither duplicates nor loses anything; ``--force`` judges all again.

On several machines: ``--shard I/N`` (I from 0) on each judges one shard of the batch and
records nothing; ``--merge`` then records every shard's results as one run would have
(:mod:`autograder.platform.cluster`). ``--slurm N`` and ``--kubernetes N`` grade nothing: they
write the jobs that run both on a Slurm or Kubernetes cluster.

Exit code: 0 all graded, nothing for a human; 1 only written answers wait for manual
grading; 2 some submission needs a look (see its status); 3 the command itself failed; 4 the
output folder's disk is full (what was graded before is kept: free space and run it again).

One command at a time on an output folder: a second one started on it refuses, naming the
first's process (``OUT/.grading.lock``). The command's workers and their kernels die with it,
also when it is killed (``kill -9``, the out-of-memory killer, a cancelled job).
"""

from __future__ import annotations

import argparse
import errno
import math
import os
import sys
from pathlib import Path

from autograder.platform import cluster, exports, policy, similarity
from autograder.platform.errors import EXIT_FAILED, EXIT_NO_SPACE, EXIT_OK, GradingError
from autograder.platform.jobs import write_kubernetes, write_slurm
from autograder.platform.pipeline import GradingOptions, grade
from autograder.platform.sandbox import Limits, SandboxUnavailable


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value > 0 or math.isinf(value):
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {text!r}")
    return value


def options_from(args: argparse.Namespace) -> GradingOptions:
    """The options of a run, from the parsed command line (:func:`command_parser`)."""
    limits = Limits(
        cell_timeout=args.timeout,
        memory_mb=args.memory_mb,
        kernel_memory_mb=args.kernel_memory_mb,
        kernel_cpus=args.kernel_cpus,
        reply_mb=args.max_reply_mb,
        processes=args.max_processes,
        files=args.max_files,
        submission_timeout=args.deadline,
        record_timeout=args.record_timeout,
        grader_memory_mb=args.grader_memory_mb,
    )
    return GradingOptions(
        workers=max(1, args.workers),
        limits=limits,
        force=args.force,
        quiet=args.quiet,
        similar_to=args.similar_to.resolve() if args.similar_to else None,
        similarity_threshold=args.similarity_threshold,
        policy_file=args.policy,
        submitted_at=args.submitted_at,
        roster_file=args.roster,
        shard=cluster.parse_shard(args.shard) if args.shard is not None else None,
        shards=args.shards.resolve() if args.shards else None,
        merge=args.merge,
        release_feedback=args.release_feedback,
    )


def command_line(assignment: str, path: Path, out: Path, *options: str) -> list[str]:
    """The command that grades the submissions in ``path`` into ``out``; run it in the repository."""
    return [
        sys.executable,
        "-m",
        "autograder",
        "grade",
        assignment,
        str(path),
        "--out",
        str(out),
    ] + [*options]


def command_parser() -> argparse.ArgumentParser:
    """The command line of ``python -m autograder``."""
    parser = argparse.ArgumentParser(
        prog="python -m autograder",
        description="Grade student notebooks with nbgrader, in parallel, safely.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    cmd = sub.add_parser("grade", help="grade a folder or zip of submissions")
    cmd.add_argument("assignment", help="assignment id, e.g. a1_rnn_bptt")
    cmd.add_argument("path", type=Path, help="folder or .zip of notebooks named by student id")
    cmd.add_argument("--workers", type=int, default=max(1, os.cpu_count() or 2))
    cmd.add_argument("--out", type=Path, default=Path("grading"), help="output folder")
    cmd.add_argument("--timeout", type=float, default=30.0, help="seconds per cell (30)")
    cmd.add_argument("--memory-mb", type=int, default=2048, help="address space per kernel")
    cmd.add_argument(
        "--kernel-memory-mb", type=int, default=4096, help="memory of a whole kernel (4096)"
    )
    cmd.add_argument(
        "--kernel-cpus",
        type=_positive_float,
        default=1.0,
        help="processor cores a whole kernel may use (1; root mode, cgroups)",
    )
    cmd.add_argument("--max-processes", type=int, default=64, help="processes per kernel")
    cmd.add_argument(
        "--max-reply-mb", type=int, default=128, help="largest message read from a kernel (128)"
    )
    cmd.add_argument(
        "--deadline", type=float, default=600.0, help="seconds for a whole submission (600)"
    )
    cmd.add_argument("--max-files", type=int, default=2000, help="files a kernel may create (2000)")
    cmd.add_argument(
        "--record-timeout",
        type=float,
        default=120.0,
        help="seconds to record one submission and render its feedback (120)",
    )
    cmd.add_argument(
        "--grader-memory-mb",
        type=int,
        default=4096,
        help="memory each grader process may allocate to read a submission (4096)",
    )
    cmd.add_argument(
        "--similar-to",
        type=Path,
        default=None,
        metavar="FOLDER",
        help="past or public solutions (.ipynb, .py) to compare every submission with",
    )
    cmd.add_argument(
        "--similarity-threshold",
        type=float,
        default=similarity.THRESHOLD,
        help=f"score from which two solutions are listed as similar ({similarity.THRESHOLD:g})",
    )
    cmd.add_argument(
        "--policy",
        type=Path,
        default=None,
        metavar="FILE",
        help="course policy (TOML): due dates, extensions, late days and the late penalty;"
        " applied to each total: grades.csv gains the columns 'raw total', 'late by',"
        " 'late days used', 'penalty', 'final total' and 'policy' (why they differ);"
        " the rules are in the TAs' guide and autograder/platform/policy.py",
    )
    cmd.add_argument(
        "--submitted-at",
        type=Path,
        default=None,
        metavar="FILE",
        help="CSV with the columns student,timestamp (ISO 8601 with a time zone), as a learning"
        " platform exports: when each student handed in (needs --policy; without a row, the"
        " time is nbgrader's timestamp.txt or the zip member's, else unknown)",
    )
    cmd.add_argument(
        "--roster",
        type=Path,
        default=None,
        metavar="FILE",
        help="CSV with a column 'student' (the id in grades.csv) and any of "
        + ", ".join(f for f in exports.ROSTER_FIELDS if f != "student")
        + ": the names and ids of canvas.csv and moodle.csv",
    )
    cmd.add_argument(
        "--shard",
        default=None,
        metavar="I/N",
        help="judge only shard I of N (counted from 0: 0/N ... N-1/N; every N-th submission by"
        " student id) into SHARDS/I-of-N, without recording; then run --merge once",
    )
    cmd.add_argument(
        "--release-feedback",
        action="store_true",
        help="PATH is nbgrader collect's COURSE/submitted: after grading, put each student's"
        " feedback in COURSE/feedback and run nbgrader release_feedback there, so that students"
        " fetch it in the Assignment List",
    )
    cmd.add_argument(
        "--merge",
        action="store_true",
        help="judge nothing: record every shard's results in the gradebook and write grades.csv,"
        " the report and the exports as one run would (all N shards must be done)",
    )
    cmd.add_argument(
        "--shards",
        type=Path,
        default=None,
        metavar="FOLDER",
        help="where --shard writes and --merge reads the shards (OUT/shards)",
    )
    cmd.add_argument(
        "--slurm",
        type=int,
        default=None,
        metavar="N",
        help="grade nothing: write OUT/slurm/ (shards.sbatch, a job array of N shards with this"
        " command's options; merge.sbatch; submit.sh, which submits both) and say how to run it",
    )
    cmd.add_argument(
        "--kubernetes",
        type=int,
        default=None,
        metavar="N",
        help="grade nothing: write OUT/kubernetes/ (shards.yaml, an Indexed Job of N pods, each"
        " a shard with this command's options; merge.yaml, the merge Job; submit.sh, which"
        " applies the first, waits until it has ended, then applies the second)",
    )
    cmd.add_argument(
        "--kubernetes-claim",
        default=None,
        metavar="NAME",
        help=f"with --kubernetes: the PersistentVolumeClaim that holds the folders"
        f" ({cluster.KUBERNETES_CLAIM})",
    )
    cmd.add_argument(
        "--kubernetes-mount",
        type=Path,
        default=None,
        metavar="FOLDER",
        help="with --kubernetes: where the claim is mounted here and in the pods; the current"
        " directory and every folder of the command lie in it (the current directory)",
    )
    cmd.add_argument(
        "--kubernetes-image",
        default=None,
        metavar="IMAGE",
        help="with --kubernetes: the pods' container image, the course's environment"
        f" (a placeholder: {cluster.KUBERNETES_IMAGE})",
    )
    cmd.add_argument("--force", action="store_true", help="judge unchanged submissions again")
    cmd.add_argument("--quiet", action="store_true")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = command_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:
        return EXIT_FAILED if stop.code else EXIT_OK
    try:
        given = sys.argv[1:] if argv is None else argv
        kubernetes_only = [
            option
            for option, value in (
                ("--kubernetes-claim", args.kubernetes_claim),
                ("--kubernetes-mount", args.kubernetes_mount),
                ("--kubernetes-image", args.kubernetes_image),
            )
            if value is not None
        ]
        if kubernetes_only and args.kubernetes is None:
            raise GradingError(f"{', '.join(kubernetes_only)}: only with --kubernetes N")
        if args.slurm is not None and args.kubernetes is not None:
            raise GradingError("--slurm and --kubernetes: one or the other")
        if args.slurm is not None:
            return write_slurm(args, given)
        if args.kubernetes is not None:
            return write_kubernetes(args, given)
        return grade(args.assignment, args.path.resolve(), args.out.resolve(), options_from(args))
    except OSError as error:
        if error.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        print(
            f"error: no space left on the device of {error.filename or args.out}: what was "
            f"graded before is kept in {args.out}; free some space and run the same command "
            "again, which goes on from there",
            file=sys.stderr,
        )
        return EXIT_NO_SPACE
    except (
        GradingError,
        cluster.ShardError,
        SandboxUnavailable,
        similarity.SimilarityError,
        policy.PolicyError,
        exports.RosterError,
    ) as error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_FAILED
