"""Grading a batch on several machines: ``grade --shard I/N`` on each, then ``grade --merge``.

Shards are numbered from 0 (``--shard 0/2`` and ``--shard 1/2``), as Slurm's
``--array=0-(N-1)`` and Kubernetes' ``JOB_COMPLETION_INDEX`` number their tasks. Shard I of N
is every N-th student of the collected submissions sorted by student id, starting at the I-th:
whichever machine computes it, from the same input, gets the same partition, and the shards
differ in size by at most one submission.

A shard judges its submissions in a course folder of its own (``SHARDS/I-of-N/course``) and
writes ``SHARDS/I-of-N/shard.json`` (its records, the grading fingerprint and a digest of the
whole input) last, in one rename: a shard that stopped half-way has no ``shard.json`` and reads
as missing. It never opens the batch's gradebook. ``--merge`` checks that every shard of the
one N is there and was made with the same grading and the same input, copies each judged
submission into ``OUT/course`` and records it there, in the one recorder process, as a run on
one machine would.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
from pathlib import Path

from autograder.nbgrading import JUDGED

MANIFEST = "shard.json"
_SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")
_FOLDER = re.compile(r"^(\d+)-of-(\d+)$")


class ShardError(ValueError):
    """A shard is asked for wrongly, or the shards cannot be merged; the message says why."""


def parse_shard(text: str) -> tuple[int, int]:
    """``"I/N"`` -> (I, N): shard I (counted from 0) of N shards; ShardError if it is not that."""
    match = _SHARD.match(text)
    if match is None:
        raise ShardError(
            f"--shard {text!r}: expected I/N, shard I of N counted from 0 (e.g. 0/4 ... 3/4)"
        )
    index, count = int(match[1]), int(match[2])
    if count < 1:
        raise ShardError(f"--shard {text}: the number of shards must be at least 1")
    if not 0 <= index < count:
        raise ShardError(
            f"--shard {text}: shards are counted from 0, so I must be 0 to {count - 1}"
        )
    return index, count


def shard_of(students: list[str], index: int, count: int) -> list[str]:
    """The students of shard ``index`` of ``count``: every ``count``-th of the sorted ids."""
    return sorted(students)[index::count]


def inputs_digest(digests: dict[str, str]) -> str:
    """One digest of a whole input: every student id and its submission's digest."""
    digest = hashlib.sha256()
    for student in sorted(digests):
        digest.update(f"{student}\0{digests[student]}\n".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def shard_folder(shards: Path, index: int, count: int) -> Path:
    return shards / f"{index}-of-{count}"


def write_manifest(folder: Path, manifest: dict) -> Path:
    """Write ``folder/shard.json`` in one rename (a reader never sees half of it)."""
    target = folder / MANIFEST
    partial = folder / f".{MANIFEST}.partial"
    partial.write_text(json.dumps(manifest), encoding="utf-8")
    os.replace(partial, target)
    return target


def read_shards(shards: Path, assignment: str, fingerprint: str, inputs: str) -> list[dict]:
    """Every shard's manifest in ``shards``, each with its ``folder``; ShardError naming what is
    missing (a shard of the N, the folder) or mismatched (assignment, grading, input)."""
    if not shards.is_dir():
        raise ShardError(f"--merge: no shard folder {shards} (run --shard I/N first)")
    found: dict[int, set[int]] = {}
    for folder in sorted(shards.iterdir()):
        match = _FOLDER.match(folder.name)
        if match and folder.is_dir():
            found.setdefault(int(match[2]), set()).add(int(match[1]))
    if not found:
        raise ShardError(f"--merge: no shard in {shards} (folders named I-of-N)")
    if len(found) > 1:
        counts = ", ".join(f"{n} shards" for n in sorted(found))
        raise ShardError(
            f"--merge: {shards} holds shards of different splits ({counts}); remove the"
            " folders of the split that is not this batch's"
        )
    count = next(iter(found))
    manifests = []
    missing = []
    for index in range(count):
        folder = shard_folder(shards, index, count)
        path = folder / MANIFEST
        if not path.is_file():
            missing.append(f"{index}/{count}")
            continue
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise ShardError(f"--merge: {path} cannot be read: {error}") from None
        where = f"shard {index}/{count} ({folder})"
        if manifest.get("shard") != [index, count]:
            raise ShardError(f"--merge: {where} says it is shard {manifest.get('shard')}")
        if manifest.get("assignment") != assignment:
            raise ShardError(
                f"--merge: {where} graded {manifest.get('assignment')}, not {assignment}"
            )
        if manifest.get("fingerprint") != fingerprint:
            raise ShardError(
                f"--merge: {where} was graded with other grading settings (the assignment's"
                " tests or the limits differ from this command's); grade that shard again"
                " with the same options"
            )
        if manifest.get("inputs") != inputs:
            raise ShardError(
                f"--merge: {where} was made from other submissions than this command's input"
                " (a file was added, removed or changed since); grade that shard again"
            )
        manifests.append(manifest | {"folder": str(folder)})
    if missing:
        raise ShardError(
            f"--merge: shard(s) {', '.join(missing)} missing in {shards} (no {MANIFEST}: not"
            " run, still running, or stopped before the end)"
        )
    return manifests


def take_judged(shard_course: Path, course: Path, student: str, assignment: str) -> None:
    """Copy a student's judged submission (canonical notebooks and the judge's outputs) from a
    shard's course folder into the batch's, replacing what an earlier run left there."""
    for kind in ("submitted", JUDGED):
        source = shard_course / kind / student / assignment
        target = course / kind / student / assignment
        shutil.rmtree(target, ignore_errors=True)
        if source.is_dir():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(source, target)


# -- job scripts for a cluster ---------------------------------------------------------------------


def grading_argv(argv: list[str], drop: tuple[str, ...]) -> list[str]:
    """``argv`` (the grade command's arguments) without the options in ``drop`` and their values
    (``--slurm 4`` and ``--slurm=4`` alike): what every shard and the merge run with."""
    kept, skip = [], False
    for token in argv:
        if skip:
            skip = False
            continue
        name = token.split("=", 1)[0]
        if name in drop:
            skip = "=" not in token
            continue
        kept.append(token)
    return kept


def _shell(command: list[str]) -> str:
    return " ".join(shlex.quote(part) for part in command)


def slurm_scripts(
    target: Path,
    command: list[str],
    assignment: str,
    count: int,
    workers: int,
    workdir: Path,
    pythonpath: Path,
) -> list[Path]:
    """Write ``shards.sbatch`` (a job array, task I runs ``command --shard I/count``),
    ``merge.sbatch`` (``command --merge``) and ``submit.sh`` (submits the array, then the merge
    as a job that starts once every task has ended, whatever its exit) into ``target``."""
    target.mkdir(parents=True, exist_ok=True)
    head = [
        "set -eu",
        f"cd {shlex.quote(str(workdir))}",
        f'export PYTHONPATH={shlex.quote(str(pythonpath))}"${{PYTHONPATH:+:$PYTHONPATH}}"',
    ]
    shards = [
        "#!/bin/bash",
        f"#SBATCH --job-name=grade-{assignment}",
        f"#SBATCH --array=0-{count - 1}",
        "#SBATCH --ntasks=1",
        f"#SBATCH --cpus-per-task={workers}",
        f"#SBATCH --output={target}/shard-%a.log",
        f"# shard I of {count} (counted from 0) in array task I; then merge.sbatch",
        *head,
        f'exec {_shell(command)} --shard "$SLURM_ARRAY_TASK_ID/{count}"',
    ]
    merge = [
        "#!/bin/bash",
        f"#SBATCH --job-name=grade-{assignment}-merge",
        "#SBATCH --ntasks=1",
        "#SBATCH --cpus-per-task=1",
        f"#SBATCH --output={target}/merge.log",
        f"# records the {count} shards' results; refuses, naming it, a shard that did not finish",
        *head,
        f"exec {_shell(command)} --merge",
    ]
    submit = [
        "#!/bin/sh",
        f"# sbatch the {count} shards as a job array, then the merge once all of them have ended",
        "set -eu",
        f"cd {shlex.quote(str(target))}",
        'array=$(sbatch --parsable shards.sbatch | cut -d";" -f1)',
        'merge=$(sbatch --parsable --dependency="afterany:$array" merge.sbatch | cut -d";" -f1)',
        'echo "shards: job $array; merge: job $merge"',
    ]
    written = []
    for name, lines in (("shards.sbatch", shards), ("merge.sbatch", merge), ("submit.sh", submit)):
        path = target / name
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        path.chmod(0o755)
        written.append(path)
    return written
