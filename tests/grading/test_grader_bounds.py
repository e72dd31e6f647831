"""The grader's own processes have memory bounds: what a submission makes them read can cost
that submission a status, never the machine's memory (autograder/platform/recorder.py, judging.py)."""

from __future__ import annotations

import multiprocessing
import os

from autograder.platform import inputs, judging
from autograder.platform.sandbox import Limits, set_memory_bound


def _allocate(megabytes: int, bound: int, connection) -> None:
    set_memory_bound(bound)
    try:
        block = bytearray(megabytes << 20)
        connection.send(f"allocated {len(block) >> 20} MB")
    except MemoryError:
        connection.send("MemoryError")


def _in_child(megabytes: int, bound: int) -> str:
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_allocate, args=(megabytes, bound, sender))
    child.start()
    answer = receiver.recv()
    child.join()
    return answer


def test_the_bound_stops_an_allocation_over_it_and_allows_one_under():
    """The bound is on what the process allocates after it is set, whatever it held before."""
    assert _in_child(768, bound=512) == "MemoryError"
    assert _in_child(256, bound=512) == "allocated 256 MB"


def test_a_worker_out_of_memory_gives_its_submission_a_resource_limit(monkeypatch, tmp_path):
    def greedy(job):
        raise MemoryError

    monkeypatch.setattr(judging, "judge_entry", greedy)
    monkeypatch.setattr(judging, "set_memory_bound", lambda megabytes: None)
    monkeypatch.setattr(judging, "die_with_parent", lambda parent: None)  # run here, not forked
    entry = inputs.Entry("s1", {}, "s1.ipynb")
    job = judging.Job(entry, "a1_rnn_bptt", str(tmp_path), Limits(grader_memory_mb=512))
    receiver, sender = multiprocessing.Pipe(duplex=False)
    judging._child(job, sender, os.getppid())
    record = receiver.recv()
    assert record.flags == ["resource limit"] and not record.gradable
    assert "more than 512 MB of the grader's memory" in record.messages[0]
