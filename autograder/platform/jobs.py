"""``--slurm N`` and ``--kubernetes N``: the jobs that grade a batch in N shards on a cluster
and merge them (the files themselves: :mod:`autograder.platform.cluster`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from autograder import nbgrader_format as fmt
from autograder.platform import cluster
from autograder.platform.errors import EXIT_OK, GradingError

# the options that write a cluster's jobs: every shard and the merge run the command without them
JOB_OPTIONS = (
    "--slurm",
    "--kubernetes",
    "--kubernetes-claim",
    "--kubernetes-mount",
    "--kubernetes-image",
)


def job_command(argv: list[str], python: str) -> list[str]:
    """The grade command each shard and the merge of a cluster run: ``argv`` (this command's
    arguments, ``grade`` first) without :data:`JOB_OPTIONS`, run by ``python``."""
    return [python, "-m", "autograder", "grade", *cluster.grading_argv(argv[1:], JOB_OPTIONS)]


def _check_jobs(args: argparse.Namespace, option: str, count: int, what: str) -> None:
    if count < 1:
        raise cluster.ShardError(f"{option} {count}: the number of shards must be at least 1")
    if args.shard is not None or args.merge:
        raise GradingError(
            f"{option} writes the {what} that run --shard and --merge: not with them"
        )


def write_slurm(args: argparse.Namespace, argv: list[str]) -> int:
    """``--slurm N``: write the Slurm scripts that grade in N shards and merge; grade nothing."""
    _check_jobs(args, "--slurm", args.slurm, "scripts")
    out = args.out.resolve()
    jobs = cluster.Jobs(
        job_command(argv, sys.executable),
        args.assignment,
        args.slurm,
        max(1, args.workers),
        Path.cwd(),
        fmt.REPO,
    )
    written = cluster.slurm_scripts(out / "slurm", jobs)
    print(f"Slurm: {len(written)} files in {out / 'slurm'}; submit with")
    print(f"  sh {written[-1]}")
    print(
        f"({args.slurm} array tasks of --shard I/{args.slurm}, then --merge once all have ended;"
        " the nodes need this checkout, its venv and the folders at the same paths, and the"
        " sandbox: root, or user namespaces for an ordinary user)"
    )
    return EXIT_OK


def write_kubernetes(args: argparse.Namespace, argv: list[str]) -> int:
    """``--kubernetes N``: write the Kubernetes Jobs that grade in N shards and merge; grade
    nothing. Every folder the command names must lie in the claim's mount."""
    _check_jobs(args, "--kubernetes", args.kubernetes, "Jobs")
    workdir = Path.cwd()
    mount = (args.kubernetes_mount or workdir).resolve()
    claim = args.kubernetes_claim or cluster.KUBERNETES_CLAIM
    image = args.kubernetes_image or cluster.KUBERNETES_IMAGE
    named = [
        ("the current directory", workdir),
        ("the submissions", args.path),
        ("--out", args.out),
        ("--shards", args.shards),
        ("--similar-to", args.similar_to),
        ("--policy", args.policy),
        ("--submitted-at", args.submitted_at),
        ("--roster", args.roster),
    ]
    for what, path in named:
        if path is not None and not path.resolve().is_relative_to(mount):
            raise GradingError(
                f"--kubernetes: {what} ({path}) is not in {mount}, where the pods mount the claim"
                f" {claim!r}: run the command from inside the claim's folder, with every folder in"
                " it, and give --kubernetes-mount the folder where the claim is mounted here"
            )
    out = args.out.resolve()
    checkout = fmt.REPO
    jobs = cluster.Jobs(
        job_command(argv, "python"),
        args.assignment,
        args.kubernetes,
        max(1, args.workers),
        workdir,
        checkout,
    )
    written = cluster.kubernetes_jobs(out / "kubernetes", jobs, claim, mount, image)
    print(f"Kubernetes: {len(written)} files in {out / 'kubernetes'}; run with")
    print(f"  sh {written[-1]}    (kubectl options after it, e.g. --namespace NAME)")
    print(
        f"(an Indexed Job of {args.kubernetes} pods, --shard I/{args.kubernetes}, then the merge"
        f" Job once it has ended; the claim {claim!r} mounted at {mount}; the pods need user"
        " namespaces: hostUsers false, procMount Unmasked, no seccomp or AppArmor profile, the"
        " namespace's Pod Security level 'privileged'; the TAs' guide, Kubernetes)"
    )
    if not checkout.is_relative_to(mount):
        print(f"note: the pods import autograder from {checkout}: the image must hold it there")
    if image == cluster.KUBERNETES_IMAGE:
        print(
            f"note: the image is the placeholder {image}: give --kubernetes-image with an image"
            " of this course's environment (python, its packages, util-linux)"
        )
    return EXIT_OK
