"""Fixtures shared by the test files."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest
import torch

from autograder.platform.course_folder import RELEASE_CACHE_VARIABLE

# Which xdist worker runs which tests under `make test` (-n N --dist loadgroup); inert otherwise.
pytest_plugins = ["tools.xdist_groups"]


def pytest_configure(config: pytest.Config) -> None:
    """The grading command's release cache (``autograder.platform.course_folder.release_cache``) in a
    folder of this test run, shared by its xdist workers (they inherit the variable) and removed
    after it: the suite neither reads nor leaves anything in the user's cache folder."""
    if RELEASE_CACHE_VARIABLE not in os.environ:
        folder = tempfile.mkdtemp(prefix="release-cache-")
        os.environ[RELEASE_CACHE_VARIABLE] = folder
        config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))


@contextlib.contextmanager
def _torch_threads(count: int) -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@pytest.fixture
def one_thread():
    """One torch thread, as in the lectures: tiny tensors gain nothing from more, and two
    threads on a busy 2-core machine can be ten times slower."""
    with _torch_threads(1):
        yield


@pytest.fixture(scope="module")
def one_thread_for_the_module():
    """One torch thread for a whole test module, its module-scoped fixtures included (a model
    trained once for the module)."""
    with _torch_threads(1):
        yield
