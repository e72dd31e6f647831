"""Temperature, top-k and nucleus (top-p) filters and sampling (course.decoding), compared with
`transformers`' logits warpers on random logits, ties and the token that crosses p."""

from __future__ import annotations

import math

import pytest
import torch

from course.decoding import (
    filter_logits,
    greedy_search,
    sample,
    temperature_scale,
    top_k_filter,
    top_p_filter,
)
from tests.messages import raises

pytestmark = pytest.mark.usefixtures("one_thread")


def random_logits(seed: int, rows: int = 16, V: int = 40, scale: float = 3.0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return scale * torch.randn(rows, V, generator=g, dtype=torch.float64)


def kept(scores: torch.Tensor) -> torch.Tensor:
    return scores > float("-inf")


def test_temperature_matches_transformers_and_its_limits():
    from transformers import TemperatureLogitsWarper

    z = random_logits(0)
    for tau in (0.3, 1.0, 2.5):
        torch.testing.assert_close(temperature_scale(z, tau), TemperatureLogitsWarper(tau)(None, z))
    p_cold = temperature_scale(z, 1e-3).softmax(-1)
    assert torch.equal(p_cold.argmax(-1), z.argmax(-1)) and bool(
        (p_cold.max(-1).values > 0.99).all()
    )
    p_hot = temperature_scale(z, 1e4).softmax(-1)
    assert (p_hot - 1 / 40).abs().max().item() < 1e-3  # nearly uniform
    for bad in (0, -1.0, math.inf, math.nan, True, "1"):
        with pytest.raises(ValueError, match="temperature"):
            temperature_scale(z, bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", range(4))
def test_top_k_matches_transformers_with_ties_at_the_kth_value(seed):
    from transformers import TopKLogitsWarper

    smooth = random_logits(seed)
    tied = (random_logits(seed + 10) * 2).round() / 2  # many ties: values on a 0.5 grid
    for z in (smooth, tied):
        for k in (1, 3, 7, 40, 100):
            for keep in (1, 5):
                ours = top_k_filter(z, k, min_tokens_to_keep=keep)
                theirs = TopKLogitsWarper(k, min_tokens_to_keep=keep)(None, z)
                assert torch.equal(ours, theirs), (k, keep)
                # The rule: token i stays iff fewer than max(k, keep) tokens beat it.
                beaten_by = (z[:, None, :] > z[:, :, None]).sum(-1)  # (rows, V)
                assert torch.equal(kept(ours), beaten_by < max(k, keep))
    assert bool((kept(top_k_filter(tied, 3)).sum(-1) > 3).any())  # ties do keep more than k


@pytest.mark.parametrize("seed", range(4))
def test_top_p_matches_transformers_on_random_logits(seed):
    from transformers import TopPLogitsWarper

    z = random_logits(seed)
    for p in (0.05, 0.3, 0.5, 0.9, 0.99):
        for keep in (1, 3):
            ours = top_p_filter(z, p, min_tokens_to_keep=keep)
            theirs = TopPLogitsWarper(p, min_tokens_to_keep=keep)(None, z)
            assert torch.equal(ours, theirs), (p, keep)
            # The rule, by brute force: keep i iff the tokens more probable than i hold < p.
            probs = z.softmax(-1)
            above = (probs[:, None, :] * (probs[:, None, :] > probs[:, :, None])).sum(-1)
            beaten_by = (probs[:, None, :] > probs[:, :, None]).sum(-1)
            assert torch.equal(kept(ours), (above < p) | (beaten_by < keep))


def test_top_p_keeps_the_token_that_crosses_p():
    probs = torch.tensor([[0.1, 0.5, 0.15, 0.25]], dtype=torch.float64)
    z = probs.log()
    # Sorted: 0.5, 0.25, 0.15, 0.1. Cumulative before each: 0, 0.5, 0.75, 0.9.
    assert kept(top_p_filter(z, 0.4)).tolist() == [[False, True, False, False]]
    assert kept(top_p_filter(z, 0.6)).tolist() == [[False, True, False, True]]  # 0.25 crosses
    assert kept(top_p_filter(z, 0.8)).tolist() == [[False, True, True, True]]
    assert kept(top_p_filter(z, 0.95)).tolist() == [[True, True, True, True]]
    assert kept(top_p_filter(z, 0.4, min_tokens_to_keep=2)).tolist() == [[False, True, False, True]]
    assert torch.equal(top_p_filter(z, 1.0), z)  # p = 1 keeps all


def test_top_p_with_ties_at_the_crossing_is_where_the_course_differs():
    from transformers import TopPLogitsWarper

    z = torch.tensor([[0.4, 0.2, 0.2, 0.2]], dtype=torch.float64).log()
    ours, theirs = kept(top_p_filter(z, 0.5)), kept(TopPLogitsWarper(0.5)(None, z))
    assert ours.tolist() == [[True, True, True, True]]  # every token tied with the crossing one
    assert theirs.sum().item() == 2 and bool(theirs[0, 0])  # the 0.4 and one of the 0.2s
    # On a grid of tied logits, ours always contains theirs, and every extra token is tied
    # with a token that both keep.
    for seed in range(6):
        grid = random_logits(seed, scale=1.0).round()
        for p in (0.3, 0.6, 0.9):
            a, b = kept(top_p_filter(grid, p)), kept(TopPLogitsWarper(p)(None, grid))
            assert bool((a | ~b).all())
            for r, i in (a & ~b).nonzero().tolist():
                assert bool((grid[r][b[r]] == grid[r, i]).any())


def test_filters_compose_in_transformers_order():
    from transformers import (
        LogitsProcessorList,
        TemperatureLogitsWarper,
        TopKLogitsWarper,
        TopPLogitsWarper,
    )

    z = random_logits(5)
    theirs = LogitsProcessorList(
        [TemperatureLogitsWarper(0.7), TopKLogitsWarper(12), TopPLogitsWarper(0.8)]
    )(None, z)
    ours = filter_logits(z, temperature=0.7, top_k=12, top_p=0.8)
    assert torch.equal(kept(ours), kept(theirs))
    diff = (ours[kept(ours)] - theirs[kept(theirs)]).abs().max().item()
    assert diff < 1e-12, diff
    assert torch.equal(filter_logits(z), z)  # everything off: unchanged
    # Top-p after top-k renormalises over the k tokens kept: fewer survive than without top-k.
    assert kept(top_p_filter(top_k_filter(z, 5), 0.5)).sum() <= kept(top_p_filter(z, 0.5)).sum()


def test_filter_errors_are_clear():
    z = random_logits(0)
    for bad in (0, -2, 1.5, True, None):
        with pytest.raises(ValueError, match="k: expected an integer >= 1"):
            top_k_filter(z, bad)  # type: ignore[arg-type]
    for bad in (0, 0.0, -0.1, 1.01, math.nan, "0.5"):
        with pytest.raises(ValueError, match=r"p: expected a probability in \(0, 1\]"):
            top_p_filter(z, bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="min_tokens_to_keep"):
        top_p_filter(z, 0.5, min_tokens_to_keep=0)
    with pytest.raises(TypeError, match="floating-point"):
        top_k_filter(torch.ones(3, 4, dtype=torch.long), 2)
    with pytest.raises(ValueError, match="NaN"):
        top_p_filter(torch.tensor([[0.0, math.nan]]), 0.5)
    with pytest.raises(ValueError, match=r"\(\.\.\., V\)"):
        temperature_scale(torch.tensor(1.0), 1.0)


def table_step(table: torch.Tensor):
    """A bigram 'model': the next token's logits are row ``token`` of the table (V, V)."""

    def step(tokens: torch.Tensor, state: int) -> tuple[torch.Tensor, int]:
        return table[tokens].log_softmax(-1), state + 1

    return step


def test_sample_draws_from_the_filtered_distribution():
    table = random_logits(7, rows=12, V=12)
    prompt = torch.tensor([[3, 4], [5, 6], [7, 8]])
    out = sample(table_step(table), prompt, state=0, max_new_tokens=6, temperature=0.8,
                 top_k=5, top_p=0.9, generator=torch.Generator().manual_seed(1))  # fmt: skip
    assert out.shape == (3, 6) and out.dtype == torch.long
    # The same draws by hand, with the same generator.
    g, last, expected = torch.Generator().manual_seed(1), prompt[:, -1], []
    for _ in range(6):
        probs = filter_logits(table[last], temperature=0.8, top_k=5, top_p=0.9).softmax(-1)
        last = torch.multinomial(probs, 1, generator=g)[:, 0]
        expected.append(last)
        assert bool(kept(filter_logits(table[last], top_k=5)).any())
    assert torch.equal(out, torch.stack(expected, 1))
    # top_k=1 is greedy search.
    one = sample(table_step(table), torch.tensor([[3]]), state=0, max_new_tokens=5, top_k=1)
    greedy = greedy_search(table_step(table), 0, batch_size=1, bos=3, eos=99, max_len=5)
    assert one[0].tolist() == greedy[0].tokens


def test_sample_stops_rows_at_eos_and_checks_its_inputs():
    V = 5
    table = torch.full((V, V), -10.0, dtype=torch.float64)
    table[:, 0] = 10.0  # after anything, eos (0) is almost sure
    table[1, 0], table[1, 2] = -10.0, 10.0  # ...except after 1, which is followed by 2
    out = sample(table_step(table), torch.tensor([[1], [3]]), state=0, max_new_tokens=4, eos=0,
                 generator=torch.Generator().manual_seed(0))  # fmt: skip
    assert out.tolist() == [[2, 0, 0, 0], [0, 0, 0, 0]]
    calls = []

    def counting(tokens, state):
        calls.append(tokens.tolist())
        return table[tokens].log_softmax(-1), state

    sample(counting, torch.tensor([[3]]), state=0, max_new_tokens=4, eos=0)
    assert len(calls) == 1  # the prompt only: the row ended at once
    step = table_step(table)
    with raises(ValueError, "prompt", r"\(B, P\)", r"\(2,\)"):
        sample(step, torch.tensor([1, 2]), state=0, max_new_tokens=2)
    with raises(ValueError, "prompt", "P >= 1", r"\(2, 0\)"):
        sample(step, torch.zeros(2, 0, dtype=torch.long), state=0, max_new_tokens=2)
    with pytest.raises(TypeError, match="prompt: expected integer ids"):
        sample(step, torch.tensor([[1.0]]), state=0, max_new_tokens=2)
    with pytest.raises(ValueError, match="max_new_tokens"):
        sample(step, torch.tensor([[1]]), state=0, max_new_tokens=-1)
    with pytest.raises(ValueError, match="temperature"):
        sample(step, torch.tensor([[1]]), state=0, max_new_tokens=2, temperature=-1.0)
    with pytest.raises(ValueError, match="log-probabilities of shape"):
        sample(lambda t, s: (torch.zeros(7, V), s), torch.tensor([[1]]), max_new_tokens=2)
    assert sample(step, torch.tensor([[1]]), state=0, max_new_tokens=0).shape == (1, 0)
