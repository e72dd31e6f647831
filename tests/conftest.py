"""Fixtures shared by the test files."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture
def one_thread():
    """One torch thread, as in the lectures: tiny tensors gain nothing from more, and two
    threads on a busy 2-core machine can be ten times slower."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
