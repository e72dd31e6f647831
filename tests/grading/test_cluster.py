"""Grading on several machines: ``grade --shard I/N`` then ``grade --merge``
(autograder.platform.cluster).

The partition, the merge's checks and the job files are pure and fast: the Kubernetes Jobs are
checked against the Kubernetes schema offline (kubernetes-validate, strict), not run. One run of the real command (marked
``sandbox``) grades three Assignment 1 submissions (two honest, one blank) on one machine, then
as a Slurm job array of two shards and a merge on a one-node Slurm cluster, and finds every
score, status and record the same; the merge then refuses a missing shard and other settings.
"""

from __future__ import annotations

import csv
import json
import os
import random
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from autograder.platform import cluster, course_folder, errors, grade
from autograder.platform.grade import command_line
from tests.grading.solution_loader import ROOT
from tools import slurm
from tools.submissions import honest_folder

ASSIGNMENT = "a1_rnn_bptt"


# -- the partition -----------------------------------------------------------------------------


@pytest.mark.parametrize("count", [1, 2, 3, 7])
@pytest.mark.parametrize("size", [0, 1, 5, 23])
def test_shards_partition_the_students_whatever_their_order(count, size):
    students = [f"s{n:03d}" for n in range(size)]
    shards = [cluster.shard_of(students, index, count) for index in range(count)]
    assert sorted(s for shard in shards for s in shard) == students  # all of them, once each
    assert max(map(len, shards)) - min(map(len, shards)) <= 1
    shuffled = list(students)
    random.Random(size * 10 + count).shuffle(shuffled)
    assert [cluster.shard_of(shuffled, index, count) for index in range(count)] == shards


def test_a_shard_is_every_nth_student_by_sorted_id():
    assert cluster.shard_of(["dan", "ada", "cy", "bob", "eve"], 0, 2) == ["ada", "cy", "eve"]
    assert cluster.shard_of(["dan", "ada", "cy", "bob", "eve"], 1, 2) == ["bob", "dan"]


@pytest.mark.parametrize("text, expected", [("0/1", (0, 1)), ("3/4", (3, 4)), (" 1 / 2 ", (1, 2))])
def test_a_shard_is_i_of_n_counted_from_zero(text, expected):
    assert cluster.parse_shard(text) == expected


@pytest.mark.parametrize(
    "text, words",
    [
        ("2/2", "counted from 0, so I must be 0 to 1"),
        ("0/0", "at least 1"),
        ("1", "expected I/N"),
        ("-1/2", "expected I/N"),
        ("a/b", "expected I/N"),
    ],
)
def test_a_wrong_shard_is_refused_with_why(text, words):
    with pytest.raises(cluster.ShardError, match=words):
        cluster.parse_shard(text)


def test_the_command_refuses_a_wrong_shard_before_grading(tmp_path, capsys):
    code = grade.main(["grade", ASSIGNMENT, str(tmp_path), "--out", str(tmp_path / "o"),
                       "--shard", "2/2"])  # fmt: skip
    assert code == errors.EXIT_FAILED
    assert "must be 0 to 1" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_the_inputs_digest_depends_on_every_submission_not_on_order():
    digest = cluster.inputs_digest({"ada": "1", "bob": "2"})
    assert cluster.inputs_digest({"bob": "2", "ada": "1"}) == digest
    assert cluster.inputs_digest({"ada": "1", "bob": "3"}) != digest
    assert cluster.inputs_digest({"ada": "1"}) != digest


# -- the Slurm scripts ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, kept",
    [
        (["a1", "in", "--slurm", "4", "--workers", "2"], ["a1", "in", "--workers", "2"]),
        (["a1", "--slurm=4", "in", "--force"], ["a1", "in", "--force"]),
        (["a1", "in"], ["a1", "in"]),
    ],
)
def test_the_scripts_run_the_command_without_the_slurm_option(argv, kept):
    assert cluster.grading_argv(argv, ("--slurm",)) == kept


def test_the_command_writes_a_job_array_and_a_dependent_merge(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = ["grade", ASSIGNMENT, "in", "--out", "o", "--workers", "3", "--timeout", "20",
            "--slurm", "4"]  # fmt: skip
    assert grade.main(argv) == errors.EXIT_OK
    folder = tmp_path / "o" / "slurm"
    assert f"sh {folder / 'submit.sh'}" in capsys.readouterr().out
    assert sorted(p.name for p in folder.iterdir()) == [
        "merge.sbatch",
        "shards.sbatch",
        "submit.sh",
    ]
    shards, merge, submit = (
        (folder / name).read_text() for name in ("shards.sbatch", "merge.sbatch", "submit.sh")
    )
    options = f"grade {ASSIGNMENT} in --out o --workers 3 --timeout 20"
    assert "#SBATCH --array=0-3\n" in shards and "#SBATCH --cpus-per-task=3\n" in shards
    assert f'{options} --shard "$SLURM_ARRAY_TASK_ID/4"\n' in shards
    assert merge.endswith(f"{options} --merge\n") and "--slurm" not in shards + merge
    for script in (shards, merge):
        assert f"cd {tmp_path}\n" in script and f"export PYTHONPATH={ROOT}" in script
    assert '--dependency="afterany:$array" merge.sbatch' in submit
    for path in folder.iterdir():
        assert subprocess.run(["bash", "-n", str(path)]).returncode == 0
        assert os.access(path, os.X_OK)


@pytest.mark.parametrize(
    "options, words",
    [
        (["--slurm", "0"], "--slurm 0: the number of shards must be at least 1"),
        (["--slurm", "2", "--merge"], "--slurm writes the scripts that run --shard and --merge"),
        (["--shard", "0/2", "--merge"], "--shard and --merge: one or the other"),
        (["--kubernetes", "0"], "--kubernetes 0: the number of shards must be at least 1"),
        (["--kubernetes", "-2"], "--kubernetes -2: the number of shards must be at least 1"),
        (["--kubernetes", "2", "--shard", "0/2"], "--kubernetes writes the Jobs that run --shard"),
        (["--kubernetes", "2", "--slurm", "2"], "--slurm and --kubernetes: one or the other"),
        (["--kubernetes-claim", "c", "--slurm", "2"], "--kubernetes-claim: only with --kubernetes"),
        (["--kubernetes-image", "i"], "--kubernetes-image: only with --kubernetes N"),
    ],
)
def test_contradictory_cluster_options_are_refused(tmp_path, capsys, options, words):
    code = grade.main(["grade", ASSIGNMENT, str(tmp_path), "--out", str(tmp_path / "o"), *options])
    assert code == errors.EXIT_FAILED
    assert words in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


# -- the Kubernetes Jobs ---------------------------------------------------------------------

# The first release where user namespaces for pods (hostUsers: false) and procMount: Unmasked
# are on by default, which the shards' sandbox needs; and the newest the package knows.
KUBERNETES_VERSIONS = ("1.33.0", "1.37.0")


def _kubernetes_validate():
    try:
        import kubernetes_validate
    except ImportError:
        pytest.fail("kubernetes-validate is not installed here: install requirements-dev.txt")
    return kubernetes_validate


def schema_check(document: dict, version: str = KUBERNETES_VERSIONS[0]) -> None:
    """The Kubernetes schema of ``version``, offline and strict (an unknown field is an error)."""
    _kubernetes_validate().validate(document, version, strict=True)


def _write_jobs(tmp_path: Path, *options: str) -> tuple[dict, dict, Path]:
    argv = ["grade", ASSIGNMENT, "in", "--out", "o", "--workers", "3", "--kubernetes", "4",
            *options]  # fmt: skip
    assert grade.main(argv) == errors.EXIT_OK
    folder = tmp_path / "o" / "kubernetes"
    assert sorted(p.name for p in folder.iterdir()) == ["merge.yaml", "shards.yaml", "submit.sh"]
    (shards,) = yaml.safe_load_all((folder / "shards.yaml").read_text())
    (merge,) = yaml.safe_load_all((folder / "merge.yaml").read_text())
    return shards, merge, folder


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_the_command_writes_an_indexed_job_and_a_merge_job_that_the_schema_accepts(
    tmp_path, capsys, monkeypatch, version
):
    monkeypatch.chdir(tmp_path)
    shards, merge, folder = _write_jobs(tmp_path)
    said = capsys.readouterr().out
    assert f"sh {folder / 'submit.sh'}" in said and "placeholder" in said
    schema_check(shards, version)
    schema_check(merge, version)
    assert shards["kind"] == merge["kind"] == "Job"
    spec = shards["spec"]
    assert (spec["completionMode"], spec["completions"], spec["parallelism"]) == ("Indexed", 4, 4)
    assert shards["metadata"]["name"] == "grade-a1-rnn-bptt"  # a DNS label: no "_"
    assert merge["metadata"]["name"] == "grade-a1-rnn-bptt-merge"
    for job, role in ((shards, "shard"), (merge, "merge")):
        pod = job["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        assert container["name"] == role and container["image"] == cluster.KUBERNETES_IMAGE
        assert pod["volumes"] == [{"name": "grading",
                                   "persistentVolumeClaim": {"claimName": "grading"}}]  # fmt: skip
        assert container["volumeMounts"] == [{"name": "grading", "mountPath": str(tmp_path)}]
        assert container["workingDir"] == str(tmp_path)
        assert pod["restartPolicy"] == "Never" and pod["securityContext"]["runAsNonRoot"]
        security = container["securityContext"]
        assert security["capabilities"] == {"drop": ["ALL"]}
        assert security["allowPrivilegeEscalation"] is False and "privileged" not in security
    # the shards' sandbox in rootless mode: a user namespace of the pod's own, an unmasked /proc
    shard_pod = spec["template"]["spec"]
    assert shard_pod["hostUsers"] is False
    assert shard_pod["containers"][0]["securityContext"]["procMount"] == "Unmasked"
    assert shard_pod["containers"][0]["resources"] == {"requests": {"cpu": "3"}}
    assert shard_pod["containers"][0]["command"][-2:] == ["--shard", "$(JOB_COMPLETION_INDEX)/4"]
    assert "hostUsers" not in merge["spec"]["template"]["spec"]  # the merge runs no kernel
    assert merge["spec"]["template"]["spec"]["containers"][0]["command"][-1] == "--merge"
    text = (folder / "shards.yaml").read_text() + (folder / "merge.yaml").read_text()
    assert "kubectl apply -f" in text and "privileged" in text
    for job in (shards, merge):  # the shards and the merge write no jobs of their own
        assert not any(p.startswith("--kubernetes") for p in job["spec"]["template"]["spec"][
            "containers"][0]["command"])  # fmt: skip
    assert subprocess.run(["sh", "-n", str(folder / "submit.sh")]).returncode == 0
    assert os.access(folder / "submit.sh", os.X_OK)


def test_the_claim_the_mount_and_the_image_are_options(tmp_path, capsys, monkeypatch):
    (tmp_path / "claim" / "course").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "claim" / "course")
    shards, merge, _ = _write_jobs(tmp_path / "claim" / "course", "--kubernetes-claim",
                                   "claim-ta", "--kubernetes-mount", "..", "--kubernetes-image",
                                   "registry.example.org/course:1.0")  # fmt: skip
    assert "placeholder" not in capsys.readouterr().out
    for job in (shards, merge):
        schema_check(job)
        pod = job["spec"]["template"]["spec"]
        assert pod["volumes"][0]["persistentVolumeClaim"] == {"claimName": "claim-ta"}
        (container,) = pod["containers"]
        assert container["volumeMounts"][0]["mountPath"] == str(tmp_path / "claim")
        assert container["workingDir"] == str(tmp_path / "claim" / "course")
        assert container["image"] == "registry.example.org/course:1.0"
        assert "--kubernetes-claim" not in container["command"]


@pytest.mark.parametrize(
    "where, value",
    [
        (["spec"], {"completionMod": "Indexed"}),  # a misspelt key
        (["spec"], {"completions": "4"}),  # a count as a string
        (["spec", "template", "spec"], {"hostUser": False}),
        (
            ["spec", "template", "spec", "containers", 0, "securityContext"],
            {"procMont": "Unmasked"},
        ),
        (["spec", "template", "spec", "containers", 0], {"command": "python -m autograder"}),
    ],
)
def test_the_schema_check_refuses_a_wrong_field(tmp_path, monkeypatch, where, value):
    """The check the Jobs pass is not vacuous: the same document with one field wrong fails."""
    monkeypatch.chdir(tmp_path)
    shards, _, _ = _write_jobs(tmp_path)
    schema_check(shards)
    part = shards
    for key in where:
        part = part[key]
    part.update(value)
    with pytest.raises(_kubernetes_validate().ValidationError):
        schema_check(shards)


def _kubernetes_expanded(part: str, index: int) -> str:
    """A container's command argument as Kubernetes runs it: "$$" a "$", $(VAR) its value."""
    values = {"JOB_COMPLETION_INDEX": str(index)}
    return re.sub(r"\$\$|\$\((\w+)\)", lambda m: values[m[1]] if m[1] else "$", part)


def test_the_jobs_run_the_commands_of_the_slurm_scripts(tmp_path, monkeypatch):
    """Shard I of the Indexed Job and array task I of Slurm run the same grade command, and the
    two merges too: the same arguments once the command line is parsed ("$", quotes and
    non-ASCII kept as they are)."""
    monkeypatch.chdir(tmp_path)
    options = ["grade", ASSIGNMENT, "in", "--out", 'o$HOME "é"', "--workers", "2", "--timeout",
               "20", "--force", "--policy", "p.toml"]  # fmt: skip
    assert grade.main([*options, "--slurm", "3"]) == errors.EXIT_OK
    assert grade.main([*options, "--kubernetes", "3", "--kubernetes-claim", "c"]) == 0
    slurm, kubernetes = tmp_path / 'o$HOME "é"' / "slurm", tmp_path / 'o$HOME "é"' / "kubernetes"

    def exec_line(script: Path) -> list[str]:
        (line,) = [x for x in script.read_text().splitlines() if x.startswith("exec ")]
        return shlex.split(line)[4:]  # from "grade" on: without exec, python, -m, autograder

    def container_command(file: Path) -> list[str]:
        (job,) = yaml.safe_load_all(file.read_text())
        return job["spec"]["template"]["spec"]["containers"][0]["command"][3:]

    parse = grade.command_parser().parse_args
    shard_task, shard_pod = (
        exec_line(slurm / "shards.sbatch"),
        container_command(kubernetes / "shards.yaml"),
    )
    for index in range(3):
        from_slurm = [x.replace("$SLURM_ARRAY_TASK_ID", str(index)) for x in shard_task]
        from_kubernetes = [_kubernetes_expanded(x, index) for x in shard_pod]
        expected = parse([*options, "--shard", f"{index}/3"])
        assert parse(from_slurm) == parse(from_kubernetes) == expected
    merge_slurm = exec_line(slurm / "merge.sbatch")
    merge_kubernetes = [_kubernetes_expanded(x, 0) for x in container_command(
        kubernetes / "merge.yaml")]  # fmt: skip
    assert parse(merge_slurm) == parse(merge_kubernetes) == parse([*options, "--merge"])
    assert parse(merge_kubernetes).out == Path('o$HOME "é"')


def test_the_kubernetes_folders_must_lie_in_the_claim(tmp_path, capsys, monkeypatch):
    (tmp_path / "claim").mkdir()
    monkeypatch.chdir(tmp_path / "claim")
    argv = ["grade", ASSIGNMENT, str(tmp_path / "elsewhere"), "--out", "o", "--kubernetes", "2"]
    assert grade.main(argv) == errors.EXIT_FAILED
    assert f"the submissions ({tmp_path / 'elsewhere'}) is not in {tmp_path / 'claim'}" in (
        capsys.readouterr().err
    )
    assert not (tmp_path / "claim" / "o").exists()
    inside = ["grade", ASSIGNMENT, "in", "--out", "o", "--kubernetes", "2"]
    assert grade.main([*inside, "--roster", "../r.csv"]) == errors.EXIT_FAILED
    assert "--roster (../r.csv) is not in" in capsys.readouterr().err
    assert grade.main([*argv, "--kubernetes-mount", str(tmp_path)]) == errors.EXIT_OK
    assert (tmp_path / "claim" / "o" / "kubernetes" / "shards.yaml").exists()


def test_submit_applies_the_shards_waits_for_their_end_then_merges(tmp_path, monkeypatch):
    """submit.sh against a stand-in kubectl: the shards' Job ends Failed (a shard failed), the
    merge still runs, and the script exits with the merge pod's exit code."""
    monkeypatch.chdir(tmp_path)
    _, _, folder = _write_jobs(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    kubectl = bin_dir / "kubectl"
    kubectl.write_text(
        "#!/bin/sh\n"
        'echo "$*" >> "$KUBECTL_LOG"\n'
        'case "$*" in\n'
        '*"get job grade-a1-rnn-bptt-merge "*) echo Complete ;;\n'
        '*"get job grade-a1-rnn-bptt "*) echo "FailureTarget Failed" ;;\n'
        '*"get pods"*) printf 2 ;;\n'
        '*"logs job/"*) echo "merge: 3 graded" ;;\n'
        "esac\n"
    )
    kubectl.chmod(0o755)
    log = tmp_path / "kubectl.log"
    env = os.environ | {"PATH": f"{bin_dir}:{os.environ['PATH']}", "KUBECTL_LOG": str(log)}
    result = subprocess.run(["sh", str(folder / "submit.sh"), "--namespace", "course"], env=env,
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "shards: Failed" in result.stdout and "merge: Complete (exit code 2)" in result.stdout
    calls = [line.split(" ", 3)[2:] for line in log.read_text().splitlines()]
    assert all(line.startswith("--namespace course ") for line in log.read_text().splitlines())
    assert [c[0] for c in calls] == ["delete", "apply", "get", "apply", "get", "logs", "get"]
    assert calls[1] == ["apply", "-f shards.yaml"] and calls[3] == ["apply", "-f merge.yaml"]
    assert calls[2][1].startswith("job grade-a1-rnn-bptt ")
    assert calls[4][1].startswith("job grade-a1-rnn-bptt-merge ")


# -- the merge's checks ----------------------------------------------------------------------


def _shards(tmp_path: Path, count: int, **changes) -> Path:
    folder = tmp_path / "shards"
    for index in range(count):
        manifest = {"assignment": ASSIGNMENT, "shard": [index, count], "fingerprint": "F",
                    "inputs": "I", "records": {}, "sandbox": "root", "judge_seconds": 1.0}  # fmt: skip
        manifest |= changes.get(str(index), {})
        target = cluster.shard_folder(folder, index, count)
        target.mkdir(parents=True)
        cluster.write_manifest(target, manifest)
    return folder


def test_complete_shards_are_read_in_order(tmp_path):
    manifests = cluster.read_shards(_shards(tmp_path, 3), ASSIGNMENT, "F", "I")
    assert [m["shard"] for m in manifests] == [[0, 3], [1, 3], [2, 3]]
    assert manifests[2]["folder"].endswith("2-of-3")


def test_the_merge_names_a_missing_shard(tmp_path):
    folder = _shards(tmp_path, 3)
    (cluster.shard_folder(folder, 1, 3) / cluster.MANIFEST).unlink()
    with pytest.raises(cluster.ShardError, match=r"shard\(s\) 1/3 missing"):
        cluster.read_shards(folder, ASSIGNMENT, "F", "I")
    shutil.rmtree(cluster.shard_folder(folder, 1, 3))
    with pytest.raises(cluster.ShardError, match=r"shard\(s\) 1/3 missing"):
        cluster.read_shards(folder, ASSIGNMENT, "F", "I")


@pytest.mark.parametrize(
    "changes, words",
    [
        ({"fingerprint": "G"}, "shard 1/2 .* other grading settings"),
        ({"inputs": "J"}, "shard 1/2 .* other submissions"),
        ({"assignment": "a2_lstm"}, "shard 1/2 .* graded a2_lstm, not a1_rnn_bptt"),
    ],
)
def test_the_merge_refuses_a_shard_made_otherwise(tmp_path, changes, words):
    with pytest.raises(cluster.ShardError, match=words):
        cluster.read_shards(_shards(tmp_path, 2, **{"1": changes}), ASSIGNMENT, "F", "I")


def test_the_merge_refuses_shards_of_two_splits_and_an_empty_folder(tmp_path):
    folder = _shards(tmp_path, 2)
    (folder / "0-of-3").mkdir()
    with pytest.raises(cluster.ShardError, match=r"different splits \(2 shards, 3 shards\)"):
        cluster.read_shards(folder, ASSIGNMENT, "F", "I")
    with pytest.raises(cluster.ShardError, match="no shard folder"):
        cluster.read_shards(tmp_path / "none", ASSIGNMENT, "F", "I")
    (tmp_path / "empty").mkdir()
    with pytest.raises(cluster.ShardError, match="no shard in"):
        cluster.read_shards(tmp_path / "empty", ASSIGNMENT, "F", "I")


# -- the real command: one machine against a Slurm job array of two shards and a merge ----


def _grades(out: Path) -> dict[str, dict]:
    """grades.csv by student, without the feedback files' paths (they name the output folder)."""
    with (out / "grades.csv").open(newline="") as handle:
        return {row["student"]: row | {"feedback": ""} for row in csv.DictReader(handle)}


def _timeless(records: dict[str, dict]) -> dict[str, dict]:
    return {s: {k: v for k, v in r.items() if k != "seconds"} for s, r in records.items()}


def _run(folder: Path, out: Path, *options: str) -> subprocess.CompletedProcess:
    result = subprocess.run(command_line(ASSIGNMENT, folder, out, "--workers", "1", *options),
                            cwd=ROOT, capture_output=True, text=True, timeout=600)  # fmt: skip
    assert result.returncode in (0, 1, 2), result.stdout[-3000:] + result.stderr[-3000:]
    return result


def three_submissions(tmp_path: Path) -> Path:
    """Two honest submissions of Assignment 1 and a blank one (its release), in a folder."""
    course = course_folder.prepare_course(tmp_path / "release", ASSIGNMENT)
    return honest_folder(course, ASSIGNMENT, tmp_path / "in", ["ada", "bob"], blank=["cy"])


@pytest.fixture(scope="module")
def one_machine(tmp_path_factory) -> tuple[Path, Path, int]:
    """The three submissions, graded by one run on this machine: (input, output, exit code)."""
    tmp_path = tmp_path_factory.mktemp("one-machine")
    folder = three_submissions(tmp_path)
    return folder, tmp_path / "whole", _run(folder, tmp_path / "whole").returncode


@pytest.mark.sandbox
def test_the_slurm_job_array_on_one_node_grades_as_one_machine_does(tmp_path, one_machine):
    folder, whole, code = one_machine
    out = tmp_path / "out"
    written = subprocess.run(command_line(ASSIGNMENT, folder, out, "--workers", "1", "--slurm",
                                          "2"), cwd=ROOT, capture_output=True, text=True,
                             timeout=120)  # fmt: skip
    assert written.returncode == 0, written.stderr
    assert not (out / "course").exists()  # nothing graded yet
    with slurm.one_node(tmp_path / "slurm") as node:
        submitted = subprocess.run(["sh", str(out / "slurm" / "submit.sh")], env=node.env,
                                   capture_output=True, text=True, timeout=60)  # fmt: skip
        assert submitted.returncode == 0, submitted.stderr + node.logs()
        node.wait_idle(600)
        logs = node.logs() + "".join(
            f"\n--- {p.name}\n{p.read_text()[-2000:]}"
            for p in sorted((out / "slurm").glob("*.log"))
        )
    assert (out / "grades.csv").exists(), logs
    expected = _grades(whole)
    assert set(expected) == {"ada", "bob", "cy"}
    assert (
        float(expected["ada"]["total"]) > 0 and expected["ada"]["status"] == "needs manual grading"
    )
    assert expected["cy"]["total"] != expected["ada"]["total"]
    assert _grades(out) == expected, logs  # every score, status, flag and message
    for name in ("canvas.csv", "moodle.csv", "inputs.csv"):
        assert (out / name).read_text() == (whole / name).read_text()
    assert sorted(p.name for p in (out / "course" / "feedback").iterdir()) == ["ada", "bob", "cy"]
    assert sorted(p.name for p in (out / "shards").iterdir()) == ["0-of-2", "1-of-2"]
    state = json.loads((out / "state.json").read_text())
    assert state["timing"]["judged"] == 3 and state["sandbox"] == "root"
    one_state = json.loads((whole / "state.json").read_text())
    assert _timeless(state["records"]) == _timeless(one_state["records"])

    again = _run(folder, out)  # a plain run after the merge judges nothing twice
    assert json.loads((out / "state.json").read_text())["timing"]["judged"] == 0
    assert _grades(out) == expected and again.returncode == code

    # the merge again, with a shard missing, and with other grading settings: refused by name
    shards = out / "shards"
    (shards / "1-of-2" / cluster.MANIFEST).rename(tmp_path / "kept.json")
    result = subprocess.run(command_line(ASSIGNMENT, folder, out, "--merge"), cwd=ROOT,
                            capture_output=True, text=True, timeout=300)  # fmt: skip
    assert result.returncode == errors.EXIT_FAILED
    assert "shard(s) 1/2 missing" in result.stderr
    (tmp_path / "kept.json").rename(shards / "1-of-2" / cluster.MANIFEST)
    result = subprocess.run(command_line(ASSIGNMENT, folder, out, "--merge", "--timeout", "31"),
                            cwd=ROOT, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert result.returncode == errors.EXIT_FAILED
    assert "shard 0/2" in result.stderr and "other grading settings" in result.stderr
