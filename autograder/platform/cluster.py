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

``--slurm N`` and ``--kubernetes N`` write the jobs that do both on a cluster: a Slurm job array
and a dependent merge job, or a Kubernetes Indexed Job and a merge Job (:func:`slurm_scripts`,
:func:`kubernetes_jobs`); the shard and merge command lines of both come from
:func:`job_commands`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
from dataclasses import dataclass
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


def job_commands(command: list[str], count: int, index: str) -> tuple[list[str], list[str]]:
    """(the command of shard ``index`` of ``count``, the merge's command): ``command`` with
    ``--shard index/count``, and with ``--merge``. ``index`` is how the scheduler names its task
    (``$SLURM_ARRAY_TASK_ID``, ``$(JOB_COMPLETION_INDEX)``), expanded in the task."""
    return [*command, "--shard", f"{index}/{count}"], [*command, "--merge"]


def _shell(command: list[str]) -> str:
    return " ".join(shlex.quote(part) for part in command)


@dataclass(frozen=True)
class Jobs:
    """What a cluster's jobs run, whatever the engine: ``command`` (the grade command without
    the cluster options) in ``count`` shards and a merge, each shard with ``workers`` cores,
    in ``workdir``, importing the autograder from ``pythonpath``."""

    command: list[str]
    assignment: str
    count: int
    workers: int
    workdir: Path
    pythonpath: Path


def slurm_scripts(target: Path, jobs: Jobs) -> list[Path]:
    """Write ``shards.sbatch`` (a job array, task I runs ``command --shard I/count``),
    ``merge.sbatch`` (``command --merge``) and ``submit.sh`` (submits the array, then the merge
    as a job that starts once every task has ended, whatever its exit) into ``target``."""
    command, assignment, count = jobs.command, jobs.assignment, jobs.count
    workers, workdir, pythonpath = jobs.workers, jobs.workdir, jobs.pythonpath
    target.mkdir(parents=True, exist_ok=True)
    shard, merge_command = job_commands(command, count, "$SLURM_ARRAY_TASK_ID")
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
        f'exec {_shell(shard[:-1])} "{shard[-1]}"',  # the shell expands the task id
    ]
    merge = [
        "#!/bin/bash",
        f"#SBATCH --job-name=grade-{assignment}-merge",
        "#SBATCH --ntasks=1",
        "#SBATCH --cpus-per-task=1",
        f"#SBATCH --output={target}/merge.log",
        f"# records the {count} shards' results; refuses, naming it, a shard that did not finish",
        *head,
        f"exec {_shell(merge_command)}",
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


# -- Kubernetes: an Indexed Job of the shards, then a merge Job ----------------------------------

KUBERNETES_IMAGE = "example.invalid/course-autograder:set-with--kubernetes-image"
KUBERNETES_CLAIM = "grading"
KUBERNETES_UID = 1000  # jovyan, the user of the Jupyter images (Zero to JupyterHub's included)
_INDEX = "$(JOB_COMPLETION_INDEX)"  # Kubernetes expands it in a container's command


def kubernetes_name(assignment: str) -> str:
    """``grade-<assignment>`` as a Kubernetes object name: lower case, digits and ``-`` only."""
    slug = re.sub(r"[^a-z0-9]+", "-", assignment.lower()).strip("-")[:40].strip("-")
    return f"grade-{slug or 'assignment'}"


def _yaml(value, indent: int = 0) -> list[str]:
    """``value`` (dicts, lists, strings, numbers, booleans) as block YAML; every scalar in JSON
    form, which YAML reads the same (strings always quoted: ``"1"`` stays a string)."""
    pad, lines = " " * indent, []
    for key, item in value.items() if isinstance(value, dict) else ((None, v) for v in value):
        lead = f"{pad}{key}:" if key is not None else f"{pad}-"
        if isinstance(item, (dict, list)) and item:
            nested = _yaml(item, indent + 2)
            if key is None:  # a list item: its first line on the dash's line
                lines += [f"{lead} {nested[0].lstrip()}", *nested[1:]]
            else:
                lines += [lead, *nested]
        else:
            lines.append(f"{lead} {json.dumps(item)}")
    return lines


def _job(name: str, component: str, spec: dict, pod: dict) -> dict:
    labels = {"app.kubernetes.io/name": "autograder", "app.kubernetes.io/component": component}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": labels},
        "spec": spec | {"template": {"metadata": {"labels": labels}, "spec": pod}},
    }


def kubernetes_jobs(target: Path, jobs: Jobs, claim: str, mount: Path, image: str) -> list[Path]:
    """Write ``shards.yaml`` (an Indexed Job: pod I runs ``command --shard I/count``),
    ``merge.yaml`` (a Job running ``command --merge``) and ``submit.sh`` (applies the first,
    waits until that Job has ended, complete or failed, then applies the second) into ``target``.

    The pods run ``image`` with the PersistentVolumeClaim ``claim`` mounted at ``mount`` (where
    it is mounted on the machine that wrote the files: the command's folders lie in it) and
    ``workdir`` as working directory. The shards build the sandbox in rootless mode: a user
    namespace of the pod's own (``hostUsers: false``), an unmasked /proc (to mount one in the
    kernel's pid namespace), no seccomp or AppArmor filter (they forbid ``unshare`` and
    ``mount``), no capability, never privileged. The merge runs no kernel and gets the
    restricted defaults."""
    command, assignment, count = jobs.command, jobs.assignment, jobs.count
    workers, workdir, pythonpath = jobs.workers, jobs.workdir, jobs.pythonpath
    target.mkdir(parents=True, exist_ok=True)
    name = kubernetes_name(assignment)
    escaped = [part.replace("$", "$$") for part in command]  # "$$" is Kubernetes' literal "$"
    shard, merge = job_commands(escaped, count, _INDEX)
    volume = {"name": "grading", "persistentVolumeClaim": {"claimName": claim}}
    user = {"runAsUser": KUBERNETES_UID, "runAsGroup": KUBERNETES_UID, "runAsNonRoot": True}
    no_privilege = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}

    def container(role: str, run: list[str], cpus: int, security: dict) -> dict:
        return {
            "name": role,
            "image": image,
            "command": run,
            "workingDir": str(workdir),
            "env": [{"name": "PYTHONPATH", "value": str(pythonpath)}],
            "resources": {"requests": {"cpu": str(cpus)}},
            "securityContext": no_privilege | security,
            "volumeMounts": [{"name": "grading", "mountPath": str(mount)}],
        }

    shards = _job(
        name,
        "shards",
        {
            "completionMode": "Indexed",
            "completions": count,
            "parallelism": count,
            "backoffLimitPerIndex": 1,  # a shard's pod lost with its node runs once more
            "podFailurePolicy": {  # exit code 3 (no sandbox, bad input) would fail again
                "rules": [
                    {
                        "action": "FailIndex",
                        "onExitCodes": {"containerName": "shard", "operator": "In", "values": [3]},
                    }
                ]
            },
        },
        {
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,  # the pods never call the API
            "hostUsers": False,
            "securityContext": user
            | {"seccompProfile": {"type": "Unconfined"}, "appArmorProfile": {"type": "Unconfined"}},
            "containers": [container("shard", shard, workers, {"procMount": "Unmasked"})],
            "volumes": [volume],
        },
    )
    merge_job = _job(
        f"{name}-merge",
        "merge",
        {"backoffLimit": 0},  # exit 1 and 2 are answers (manual grading, a look), not failures
        {
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "securityContext": user | {"seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [container("merge", merge, 1, {})],
            "volumes": [volume],
        },
    )
    how = [
        f"# Run with: sh {target}/submit.sh [kubectl options such as --namespace NAME], or by hand:",
        f"#   kubectl apply -f {target}/shards.yaml",
        f"#   kubectl wait --for=condition=complete --timeout=24h job/{name}",
        f"#     (a shard that failed leaves the Job Failed in `kubectl get job {name}`: apply the",
        "#     merge all the same, it names the shard)",
        f"#   kubectl apply -f {target}/merge.yaml",
        f"#   kubectl wait --for=condition=complete --timeout=1h job/{name}-merge;"
        f" kubectl logs job/{name}-merge",
    ]
    shards_text = [
        f"# Grades {assignment} in {count} shards: an Indexed Job whose pod I (0 to {count - 1},"
        f" {_INDEX}) runs the grade command with --shard I/{count}.",
        "# Apply merge.yaml only once this Job has ended (Complete, or Failed), as submit.sh does.",
        *how,
        f"# Image: {image}; claim {claim!r} mounted at {mount}, where the command's folders are.",
        "# Security: the shards build the grader's sandbox in rootless mode. It needs a user namespace",
        "# of the pod's own (hostUsers: false: Kubernetes 1.33 or later, a runtime and volumes with",
        "# idmapped mounts), an unmasked /proc (procMount: Unmasked, allowed only with hostUsers:",
        "# false) to mount /proc in each kernel's pid namespace, and no seccomp or AppArmor profile",
        "# (the runtime's defaults refuse unshare and mount). The pods run as uid"
        f" {KUBERNETES_UID}, not root,",
        "# with no capability and no privilege escalation, never privileged. The namespace's Pod",
        "# Security level must be 'privileged' (baseline and restricted refuse Unconfined profiles).",
        *_yaml(shards),
    ]
    merge_text = [
        f"# Records the {count} shards of {assignment} in the one gradebook: apply it only once the",
        f"# Job {name} (shards.yaml) has ended. It refuses, naming it, a shard that did not finish.",
        "# Exit code as the command's: 1 or 2 (some submission waits for a human) leave the Job",
        "# Failed too; its log says which. It runs no kernel: restricted defaults, no sandbox.",
        *how,
        *_yaml(merge_job),
    ]
    submit = [
        "#!/bin/sh",
        f"# apply the {count} shards' Indexed Job, wait until it has ended (complete, or failed), then",
        "# the merge Job; exits with the merge's exit code (0 to 3, as the grade command's). Its",
        "# arguments go to every kubectl call: sh submit.sh --namespace NAME --context CONTEXT",
        "set -eu",
        f"cd {shlex.quote(str(target))}",
        "ended() {  # ended JOB KUBECTL-OPTIONS...: wait until the Job is Complete or Failed, say which",
        "    job=$1",
        "    shift",
        "    while :; do",
        '        state=$(kubectl "$@" get job "$job"'
        " -o jsonpath='{.status.conditions[?(@.status==\"True\")].type}') || state=",
        '        case " $state " in',
        '        *" Complete "*) echo Complete; return ;;',
        '        *" Failed "*) echo Failed; return ;;',
        "        esac",
        "        sleep 15",
        "    done",
        "}",
        "# the Jobs of an earlier run of this command (same names) go first; the claim keeps its files",
        'kubectl "$@" delete --ignore-not-found --cascade=foreground -f merge.yaml -f shards.yaml',
        'kubectl "$@" apply -f shards.yaml',
        f'echo "shards: $(ended {name} "$@")"',
        'kubectl "$@" apply -f merge.yaml',
        f'merged=$(ended {name}-merge "$@")',
        f'kubectl "$@" logs job/{name}-merge',
        f'code=$(kubectl "$@" get pods -l batch.kubernetes.io/job-name={name}-merge'
        " -o jsonpath='{.items[-1:].status.containerStatuses[0].state.terminated.exitCode}')",
        'echo "merge: $merged (exit code ${code:-unknown})"',
        'exit "${code:-3}"',
    ]
    written = []
    for file, lines, mode in (
        ("shards.yaml", shards_text, 0o644),
        ("merge.yaml", merge_text, 0o644),
        ("submit.sh", submit, 0o755),
    ):
        path = target / file
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        path.chmod(mode)
        written.append(path)
    return written
