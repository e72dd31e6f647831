"""The options of a grading run: one frozen ``GradingOptions``, built once from the command line
(``autograder.platform.grade.options_from``) and passed whole to ``grade``."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from autograder.platform import errors, grade, pipeline, similarity
from autograder.platform.sandbox import Limits
from tests.messages import raises


def _options(*argv: str) -> pipeline.GradingOptions:
    args = grade.command_parser().parse_args(["grade", "a1_rnn_bptt", "in", *argv])
    return grade.options_from(args)


def test_the_defaults_of_the_command_line_are_the_defaults_of_the_options():
    options = _options("--workers", "1")
    assert options == pipeline.GradingOptions()
    assert options.limits == Limits()
    assert options.similarity_threshold == similarity.THRESHOLD
    assert options.shards_folder(Path("/o")) == Path("/o/shards")


def test_every_option_of_the_command_line_reaches_the_options(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    options = _options(
        *("--workers", "0", "--timeout", "5", "--memory-mb", "100", "--kernel-memory-mb", "300"),
        *("--kernel-cpus", "0.5"),
        *("--max-processes", "7", "--max-reply-mb", "9", "--deadline", "50", "--max-files", "11"),
        *("--record-timeout", "12", "--grader-memory-mb", "13", "--force", "--quiet"),
        *("--similar-to", "past", "--similarity-threshold", "0.5", "--policy", "p.toml"),
        *("--submitted-at", "t.csv", "--roster", "r.csv", "--shard", "1/3", "--shards", "s"),
    )
    limits = Limits(
        cell_timeout=5,
        memory_mb=100,
        kernel_memory_mb=300,
        kernel_cpus=0.5,
        processes=7,
        reply_mb=9,
        submission_timeout=50,
        files=11,
        record_timeout=12,
        grader_memory_mb=13,
    )
    assert options == pipeline.GradingOptions(
        workers=1,  # at least one
        limits=limits,
        force=True,
        quiet=True,
        similar_to=tmp_path / "past",  # resolved: the run's folders do not depend on its cwd
        similarity_threshold=0.5,
        policy_file=Path("p.toml"),
        submitted_at=Path("t.csv"),
        roster_file=Path("r.csv"),
        shard=(1, 3),
        shards=tmp_path / "s",
        merge=False,
    )
    assert options.shards_folder(Path("/o")) == tmp_path / "s"


def test_the_options_are_frozen_and_refuse_a_shard_that_merges():
    options = pipeline.GradingOptions()
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.force = True  # type: ignore[misc]
    with raises(errors.GradingError, "--shard", "--merge", "one or the other"):
        pipeline.GradingOptions(shard=(0, 2), merge=True)


@pytest.mark.parametrize("cores", ["0", "-1", "many", "inf", "nan"])
def test_kernel_cpus_must_be_a_number_above_zero(cores, capsys):
    with pytest.raises(SystemExit):
        _options("--kernel-cpus", cores)
    assert f"--kernel-cpus: expected a number above 0, got {cores!r}" in capsys.readouterr().err
