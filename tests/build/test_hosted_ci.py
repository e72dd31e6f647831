"""The hosted CI's workflow, ``.github/workflows/student-install.yml``: it passes GitHub's
workflow schema and zizmor's audits, offline, and each system's job installs the student
bundle with that system's recipe from the bundle README, then runs the doctor, a lecture and
a hand-in of files that exist."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml

from course import doctor
from course.handin import Report, find_notebook
from tools import build
from tools.notebooks import REPO
from tools.student_lab import README_SYSTEMS, readme_recipes

WORKFLOW = REPO / ".github" / "workflows" / "student-install.yml"
RUNNERS = {"Linux": "ubuntu-latest", "macOS": "macos-latest", "Windows": "windows-latest"}
SCHEMAS = ("vendor.github-workflows", "custom.github-workflows-require-timeout")


def _workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def _steps(job: str) -> list[dict]:
    return _workflow()["jobs"][job]["steps"]


def _runs(job: str) -> str:
    return "\n".join(step.get("run", "") for step in _steps(job))


def _check_jsonschema(schema: str, path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, str(path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def _zizmor(path: Path) -> subprocess.CompletedProcess:
    program = shutil.which("zizmor", path=sysconfig.get_path("scripts"))
    assert program, "zizmor is not installed in this environment: install requirements-dev.txt"
    return subprocess.run(
        [program, "--offline", "--no-config", "--persona", "pedantic", "--color", "never",
         "--no-progress", str(path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.mark.parametrize("schema", SCHEMAS)
def test_the_workflow_passes_githubs_schema(schema):
    """GitHub's workflow schema, and check-jsonschema's own that every job has a timeout."""
    result = _check_jsonschema(schema, WORKFLOW)
    assert result.returncode == 0, result.stdout + result.stderr


def test_zizmor_finds_nothing_in_the_workflow():
    result = _zizmor(WORKFLOW)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_linters_reject_a_broken_workflow(tmp_path):
    text = WORKFLOW.read_text()
    checkout = re.search(r"actions/checkout@[0-9a-f]{40}.*", text).group(0)
    unsafe = tmp_path / "unsafe.yml"  # a moving tag, and the token left in .git/config
    unsafe.write_text(
        text.replace(checkout, "actions/checkout@v4").replace(
            "persist-credentials: false", "fetch-depth: 1"
        )
    )
    result = _zizmor(unsafe)
    assert result.returncode != 0 and "unpinned-uses" in result.stdout, result.stdout
    assert "artipacked" in result.stdout, result.stdout
    invalid = tmp_path / "invalid.yml"
    invalid.write_text(text.replace("runs-on: ubuntu-latest", "run-on: ubuntu-latest"))
    result = _check_jsonschema(SCHEMAS[0], invalid)
    assert result.returncode != 0 and "runs-on" in result.stdout, result.stdout


def test_the_workflow_reads_and_pins_what_it_uses():
    workflow = _workflow()
    assert workflow["permissions"] == {"contents": "read"}
    assert "secrets." not in WORKFLOW.read_text()
    for job in workflow["jobs"].values():
        for step in job["steps"]:
            if "uses" in step:  # a full commit, not a tag that can be moved
                assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", step["uses"]), step
            if step.get("uses", "").startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False, step


def test_the_matrix_runs_each_readme_system_on_the_tested_python():
    job = _workflow()["jobs"]["student"]
    recipes = readme_recipes(build.STUDENT_README.read_text())
    assert sorted(recipes) == sorted(README_SYSTEMS) == sorted(RUNNERS)
    assert job["runs-on"] == "${{ matrix.os }}" and job["needs"] == "bundle"
    bins = {entry["os"]: entry["bin"] for entry in job["strategy"]["matrix"]["include"]}
    assert sorted(bins) == sorted(RUNNERS.values())
    for system, runner in RUNNERS.items():
        # the folder of the recipe's python: the later steps run the environment's programs
        python = next(line.split()[0] for line in recipes[system] if "pip install" in line)
        assert bins[runner] == python.replace("\\", "/").rsplit("/", 1)[0], system
    tested = f"{doctor.TESTED[0]}.{doctor.TESTED[1]}"
    for name in ("bundle", "student"):
        setups = [s for s in _steps(name) if "setup-python" in s.get("uses", "")]
        versions = [s["with"]["python-version"] for s in setups]
        assert versions == [tested], (name, versions)


def test_each_system_installs_with_its_readme_recipe():
    """The recipe's lines, in order, one step each, on that system only; `jupyter lab`, the
    last, is left out (it serves until stopped). No other step installs anything."""
    recipes = readme_recipes(build.STUDENT_README.read_text())
    steps = _steps("student")
    for system in README_SYSTEMS:
        recipe = recipes[system]
        assert "jupyter lab" in recipe[-1], recipe
        mine = [s for s in steps if s.get("if") == f"runner.os == '{system}'"]
        assert [s["run"] for s in mine] == recipe[:-1], system
        shells = {s.get("shell", "bash") for s in mine}
        assert shells == ({"pwsh"} if system == "Windows" else {"bash"}), (system, shells)
    others = [s.get("run", "") for s in steps if not s.get("if")]
    assert not [run for run in others if re.search(r"pip install|-m venv", run)], others


def test_the_bundle_job_hands_its_zip_to_each_system():
    upload = next(s for s in _steps("bundle") if "upload-artifact" in s.get("uses", ""))
    download = next(s for s in _steps("student") if "download-artifact" in s.get("uses", ""))
    zip_path = build.DIST.parent / build.BUNDLE_ZIP_NAME
    assert upload["with"]["path"] == zip_path.relative_to(REPO).as_posix()
    assert upload["with"]["name"] == download["with"]["name"]
    stages = re.findall(r"python -m tools\.build (\w+)", _runs("bundle"))
    assert stages == ["lectures", "bundle"] and set(stages) <= set(build.STAGES), stages
    # the zip unpacks to one folder, where the student's steps run
    job = _workflow()["jobs"]["student"]
    assert job["defaults"]["run"]["working-directory"] == build.DIST.name
    assert f"-m zipfile -e {build.BUNDLE_ZIP_NAME} ." in _runs("student")


def test_the_lecture_and_the_assignment_it_runs_are_the_courses():
    steps = _steps("student")
    runs = _runs("student")
    lecture = re.search(r"--execute\b.*?lectures/(\w+)\.ipynb", runs, re.S)
    assert lecture and (REPO / "lectures" / f"{lecture.group(1)}.py").is_file(), runs
    executes = next(s for s in steps if "--execute" in s.get("run", ""))
    assert executes["timeout-minutes"] and "--ExecutePreprocessor.timeout=" in executes["run"]
    handin = re.search(r"-m course handin (\w+) --student (\S+)", runs)
    assert handin, runs
    name, _ = find_notebook(handin.group(1), REPO)  # the assignment's folder name
    assert f"handin/{name}/{handin.group(2)}.ipynb" in runs


def test_the_handin_steps_patterns_read_what_handin_prints():
    """The step greps `course handin`'s report: its patterns must pick out the lines they mean."""
    run = next(s["run"] for s in _steps("student") if "-m course handin" in s.get("run", ""))
    damaged, failing = re.findall(r"grep -E '([^']+)'", run)
    (other,) = re.findall(r"grep -v '([^']+)'", run)
    failures = [
        ("test_a", "NotImplementedError"),
        ("test_b", "NameError: name 'np' is not defined"),
    ]
    report = Report(
        Path("a1.ipynb"), "a1", missing=["cell_m"], edited=["cell_e"], unanswered=["part_a"],
        failing=failures, ran=True, written=Path("handin/a1/ci.ipynb"),
    )  # fmt: skip
    lines = report.lines()
    assert [line for line in lines if re.search(damaged, line)] == lines[1:3], lines
    found = [line for line in lines if re.search(failing, line)]
    assert found == [f"    {test}: {message}" for test, message in failures], lines
    # grep -v prints the tests that failed for another reason: the step fails on them
    assert [line for line in found if not re.search(other, line)] == [found[1]]
