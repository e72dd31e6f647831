"""The padding masks of the model files are one mask: Lecture 4's ``lengths_mask`` (seq2seq),
Lecture 3's (the biLM, whose file is pinned by its checkpoint) and Lecture 5's
``padding_mask``, which adds the axes that broadcast over heads and queries."""

from __future__ import annotations

import pytest
import torch

from course.models import attention, bilm, seq2seq


@pytest.mark.parametrize("lengths, m", [([3, 1, 5], 5), ([1], 1), ([2, 7, 4, 7], 9)])
def test_the_padding_masks_are_twins(lengths, m):
    lengths = torch.tensor(lengths)
    expected = torch.tensor([[k < n for k in range(m)] for n in lengths.tolist()])
    assert torch.equal(seq2seq.lengths_mask(lengths, m), expected)
    assert torch.equal(bilm.lengths_mask(lengths, m), expected)
    padding = attention.padding_mask(lengths, m)
    assert padding.shape == (len(lengths), 1, 1, m)
    assert torch.equal(padding[:, 0, 0], expected)
