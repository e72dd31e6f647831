"""Anisotropy (course.analysis.geometry) on vectors whose answer is known by construction."""

from __future__ import annotations

import math

import pytest
import torch

from course.analysis.geometry import anisotropy, layer_anisotropy, random_token_pairs
from course.models.bert import BertConfig, BertForPreTraining
from tests.messages import raises


def common_direction(a: float, n: int = 40) -> torch.Tensor:
    """(1, n, n + 1): x_i = √a e_0 + √(1 − a) e_{i+1}, so every pair has cosine exactly a."""
    x = torch.zeros(n, n + 1, dtype=torch.float64)
    x[:, 0] = math.sqrt(a)
    x[torch.arange(n), torch.arange(n) + 1] = math.sqrt(1 - a)
    return x[None]


@pytest.mark.parametrize("a", [0.0, 0.3, 0.9])
def test_constructed_cosines_are_recovered_exactly(a):
    states = common_direction(a) * torch.linspace(0.5, 3, 40)[None, :, None]  # lengths vary
    pairs = random_token_pairs(torch.ones(1, 40), 500, torch.Generator().manual_seed(0))
    assert anisotropy(states, pairs) == pytest.approx(a, abs=1e-12)
    assert (pairs[:, 0] != pairs[:, 1]).all()


def test_random_directions_are_near_zero_and_a_shared_offset_near_one():
    g = torch.Generator().manual_seed(0)
    noise = torch.randn(8, 50, 256, generator=g)
    mask = torch.ones(8, 50)
    pairs = random_token_pairs(mask, 4000, g)
    # The mean of 4000 cosines of random directions in 256 dimensions: sd 1/√(256·4000).
    assert abs(anisotropy(noise, pairs)) < 5 / math.sqrt(256 * 4000)
    assert anisotropy(noise + 10.0, pairs) > 0.98  # a common component of length 160 vs 16


def test_padding_is_never_paired_and_layers_share_the_pairs():
    mask = torch.zeros(3, 10, dtype=torch.long)
    mask[:, :4] = 1
    pairs = random_token_pairs(mask, 1000, torch.Generator().manual_seed(1))
    assert mask.reshape(-1)[pairs].bool().all()
    assert len(set(pairs.reshape(-1).tolist())) == 12  # every real position is used
    clean = common_direction(0.5, 30).reshape(3, 10, 31).float()
    spoiled = clean.clone()
    spoiled[:, 4:] = -1e3  # the padding positions point elsewhere: never seen
    values = layer_anisotropy([clean, spoiled, common_direction(0.2, 30).reshape(3, 10, 31)], mask)
    assert values[0] == pytest.approx(0.5) and values[1] == pytest.approx(0.5)
    assert values[2] == pytest.approx(0.2)


def test_on_a_bert_every_layer_gets_a_value():
    torch.manual_seed(0)
    model = BertForPreTraining(BertConfig(vocab_size=50, d_model=32, num_heads=2, max_len=16))
    ids = torch.randint(5, 50, (4, 16))
    ids[:, 0] = 2
    mask = torch.ones_like(ids)
    with torch.no_grad():
        out = model.eval()(ids, attention_mask=mask)
    values = layer_anisotropy(out.hidden_states, mask, num_pairs=300)
    assert len(values) == 3 and all(-1.0 <= v <= 1.0 for v in values)


def test_errors():
    g = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="at least 2 real tokens"):
        random_token_pairs(torch.tensor([[1, 0, 0]]), 5, g)
    with pytest.raises(ValueError, match="num_pairs"):
        random_token_pairs(torch.ones(1, 4), 0, g)
    with pytest.raises(ValueError, match="attention_mask: expected 2 dimensions"):
        random_token_pairs(torch.ones(4), 3, g)
    with pytest.raises(TypeError, match="states: expected a floating point"):
        anisotropy(torch.ones(1, 4, 3, dtype=torch.long), torch.tensor([[0, 1]]))
    with pytest.raises(ValueError, match="states: expected 3 dimensions"):
        anisotropy(torch.ones(4, 3), torch.tensor([[0, 1]]))
    with pytest.raises(ValueError, match=r"pairs: indices must be in \[0, 4\)"):
        anisotropy(torch.ones(1, 4, 3), torch.tensor([[0, 9]]))
    with raises(ValueError, "hidden_states", "at least one"):
        layer_anisotropy([], torch.ones(1, 4))
    with pytest.raises(ValueError, match=r"hidden_states\[1\]: expected shape"):
        layer_anisotropy([torch.ones(1, 4, 3), torch.ones(2, 4, 3)], torch.ones(1, 4))
