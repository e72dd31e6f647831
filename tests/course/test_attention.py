"""Tests for Unit 5's pieces: course.models.attention, course.models.tiny_transformer,
course.data.copying and course.viz.attention."""

from __future__ import annotations

import math

import matplotlib
import matplotlib.pyplot as plt
import pytest
import torch
from torch.nn import functional as F

from course.data.copying import IGNORE, delayed_copy_batch, delayed_copy_batches
from course.models.attention import (
    LearnedPositions,
    MultiHeadAttention,
    alibi_bias,
    alibi_slopes,
    attention,
    causal_mask,
    fused_attention,
    padding_mask,
    rope,
    sinusoidal_encoding,
)
from course.models.tiny_transformer import ENCODINGS, TinyCausalTransformer
from course.viz.attention import (
    attention_explorer,
    head_weights,
    interact_attention,
    interact_positions,
    plot_attention,
    plot_positions,
    word_vectors,
)
from tests.messages import raises

matplotlib.use("Agg")


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def test_attention_matches_torch_with_every_mask():
    torch.manual_seed(0)
    q = torch.randn(2, 3, 5, 4, dtype=torch.float64)
    k, v = (
        torch.randn(2, 3, 7, 4, dtype=torch.float64),
        torch.randn(2, 3, 7, 6, dtype=torch.float64),
    )
    pad = padding_mask(torch.tensor([7, 2]), 7)
    for mask in (None, pad, torch.ones(5, 7, dtype=torch.bool).tril(2)):
        z, a = attention(q, k, v, mask)
        torch.testing.assert_close(z, F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
        torch.testing.assert_close(a.sum(-1), torch.ones(2, 3, 5, dtype=torch.float64))
        if mask is not None:
            assert (a.masked_select(~mask.expand_as(a)) == 0).all()
    assert pad.shape == (2, 1, 1, 7) and pad[1, 0, 0].tolist() == [True] * 2 + [False] * 5


def test_attention_adds_a_bias_and_refuses_bad_inputs():
    q = torch.zeros(1, 3, 2)
    bias = torch.tensor([[0.0, math.log(3.0), -math.inf]] * 3)
    _, a = attention(q, q, torch.zeros(1, 3, 2), bias=bias)
    torch.testing.assert_close(a[0, 0], torch.tensor([0.25, 0.75, 0.0]))
    with pytest.raises(ValueError, match="do not fit"):
        attention(torch.zeros(3, 4), torch.zeros(3, 5), torch.zeros(3, 5))
    empty_row = torch.tensor([[True, False], [False, False]])
    with raises(ValueError, "no key", "mask"):
        attention(torch.zeros(2, 2), torch.zeros(2, 2), torch.zeros(2, 2), empty_row)


def test_fused_attention_gives_the_same_heads_and_gradients_as_attention():
    torch.manual_seed(1)
    shapes = ((2, 3, 5, 4), (2, 3, 7, 4), (2, 3, 7, 6))
    bias = alibi_bias(5, alibi_slopes(3), 7)
    masks = (
        None,
        padding_mask(torch.tensor([7, 3]), 7),
        torch.ones(5, 7, dtype=torch.bool).tril(2),
    )
    for mask in masks:
        for extra in (None, bias):
            q, k, v = (torch.randn(s, dtype=torch.float64, requires_grad=True) for s in shapes)
            z, _ = attention(q, k, v, mask, extra)
            grads = torch.autograd.grad(z.square().sum(), (q, k, v))
            fused = fused_attention(q, k, v, mask, extra)
            torch.testing.assert_close(fused, z)
            for ours, theirs in zip(
                torch.autograd.grad(fused.square().sum(), (q, k, v)), grads, strict=True
            ):
                torch.testing.assert_close(ours, theirs)
    empty_row = torch.tensor([[True, False], [False, False]])
    with raises(ValueError, "no key", "mask"):
        fused_attention(torch.zeros(2, 2), torch.zeros(2, 2), torch.zeros(2, 2), empty_row)
    with pytest.raises(ValueError, match="do not fit"):
        fused_attention(torch.zeros(3, 4), torch.zeros(3, 5), torch.zeros(3, 5))


def test_fuse_attention_switches_the_layers_to_the_fused_kernel_only_while_training():
    from course.models.transformer import DecoderLayer, EncoderLayer, fuse_attention

    torch.manual_seed(2)
    encoder, decoder = EncoderLayer(8, 2, 16, dropout=0.0), DecoderLayer(8, 2, 16, dropout=0.0)
    model = torch.nn.ModuleList([encoder, decoder])
    x, memory = torch.randn(2, 5, 8), torch.randn(2, 4, 8)
    fused = []  # per attention call: whether it returned no weights (the fused kernel)
    for attn in (encoder.self_attn, decoder.self_attn, decoder.cross_attn):
        attn.register_forward_hook(lambda _m, _i, out: fused.append(out[1] is None))
    outputs = []
    for on, training in ((False, True), (True, True), (True, False)):
        fuse_attention(model, on).train(training)
        outputs.append((encoder(x, causal_mask(5)), decoder(x, memory, causal_mask(5))))
    assert fused == [False] * 3 + [True] * 3 + [False] * 3
    for plain, other in ((outputs[0], outputs[1]), (outputs[0], outputs[2])):
        for a, b in zip(plain, other, strict=True):
            torch.testing.assert_close(a, b)


def test_causal_mask_hides_the_future():
    assert causal_mask(3).tolist() == [
        [True, False, False],
        [True, True, False],
        [True, True, True],
    ]
    torch.manual_seed(0)
    layer = MultiHeadAttention(8, 2)
    x = torch.randn(1, 6, 8)
    y = x.clone()
    y[0, 4:] += 1.0
    out_x, _ = layer(x, mask=causal_mask(6))
    out_y, _ = layer(y, mask=causal_mask(6))
    torch.testing.assert_close(out_x[0, :4], out_y[0, :4])
    assert not torch.allclose(out_x[0, 4:], out_y[0, 4:])


def test_multi_head_attention_equals_torch_with_copied_weights_and_cross_attention():
    torch.manual_seed(3)
    ours = MultiHeadAttention(12, 3).double()
    library = torch.nn.MultiheadAttention(12, 3, batch_first=True).double()
    with torch.no_grad():
        library.in_proj_weight.copy_(torch.cat([ours.W_q.weight, ours.W_k.weight, ours.W_v.weight]))
        library.in_proj_bias.copy_(torch.cat([ours.W_q.bias, ours.W_k.bias, ours.W_v.bias]))
        library.out_proj.weight.copy_(ours.W_o.weight)
        library.out_proj.bias.copy_(ours.W_o.bias)
    x, memory = (
        torch.randn(2, 4, 12, dtype=torch.float64),
        torch.randn(2, 6, 12, dtype=torch.float64),
    )
    out, weights = ours(x, memory)
    expected, expected_weights = library(x, memory, memory, average_attn_weights=False)
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(weights, expected_weights)
    assert weights.shape == (2, 3, 4, 6)
    with pytest.raises(ValueError, match="divisible by num_heads"):
        MultiHeadAttention(10, 3)
    with pytest.raises(ValueError, match="expected \\(B, n, 12\\)"):
        ours(torch.zeros(4, 12, dtype=torch.float64))


def test_sinusoidal_dot_products_depend_on_the_offset_only():
    p = sinusoidal_encoding(50, 16).double()
    assert p.shape == (50, 16)
    torch.testing.assert_close(p[7, 4], torch.tensor(math.sin(7 * 10000 ** (-4 / 16))).double())
    torch.testing.assert_close(p[7, 5], torch.tensor(math.cos(7 * 10000 ** (-4 / 16))).double())
    dots = p @ p.T
    for offset in (-20, 0, 3, 33):
        diagonal = torch.diagonal(dots, offset)
        assert (diagonal.max() - diagonal.min()).item() < 1e-5
    with pytest.raises(ValueError, match="must be even"):
        sinusoidal_encoding(4, 5)


def test_rope_scores_depend_on_the_offset_and_norms_are_kept():
    torch.manual_seed(0)
    q, k = torch.randn(1, 8, dtype=torch.float64), torch.randn(1, 8, dtype=torch.float64)

    def score(i, j):
        return (rope(q, torch.tensor([i])) @ rope(k, torch.tensor([j])).T).item()

    assert score(9, 4) == pytest.approx(score(105, 100)) == pytest.approx(score(5, 0))
    assert score(9, 4) != pytest.approx(score(9, 5))
    x = torch.randn(3, 5, 8, dtype=torch.float64)
    rotated = rope(x, torch.arange(5))
    torch.testing.assert_close(rotated.norm(dim=-1), x.norm(dim=-1))
    torch.testing.assert_close(rotated[:, 0], x[:, 0])  # position 0 is not rotated
    # the first pair turns by angle 1 per position (theta_0 = 1)
    expected = torch.stack(
        [
            x[:, 2, 0] * math.cos(2) - x[:, 2, 1] * math.sin(2),
            x[:, 2, 0] * math.sin(2) + x[:, 2, 1] * math.cos(2),
        ],
        -1,
    )
    torch.testing.assert_close(rotated[:, 2, :2], expected)
    with pytest.raises(ValueError, match="must be even"):
        rope(torch.zeros(2, 3), torch.arange(2))


def test_alibi_slopes_and_bias_and_learned_positions():
    torch.testing.assert_close(alibi_slopes(4), torch.tensor([0.25, 0.0625, 0.015625, 0.00390625]))
    bias = alibi_bias(3, torch.tensor([0.5, 1.0]))
    assert bias.shape == (2, 3, 3)
    torch.testing.assert_close(bias[1], -torch.tensor([[0.0, 1, 2], [1, 0, 1], [2, 1, 0]]))
    table = LearnedPositions(4, 3)
    assert table(2).shape == (2, 3)
    with pytest.raises(ValueError, match="learned positions go up to 4"):
        table(5)


def test_delayed_copy_targets_are_the_tokens_three_back():
    x, y = delayed_copy_batch(
        5, 10, vocab_size=7, delay=3, generator=torch.Generator().manual_seed(0)
    )
    assert x.shape == y.shape == (5, 10) and int(x.max()) < 7
    assert (y[:, :3] == IGNORE).all() and (y[:, 3:] == x[:, :-3]).all()
    first, second = (
        next(delayed_copy_batches(4, 8, seed=1)),
        next(delayed_copy_batches(4, 8, seed=1)),
    )
    assert torch.equal(first[0], second[0])
    with raises(ValueError, "delay", "length - 1", "3"):
        delayed_copy_batch(2, 3, delay=3)


@pytest.mark.parametrize("positions", ENCODINGS)
def test_tiny_transformer_is_causal_for_every_encoding(positions):
    torch.manual_seed(0)
    model = TinyCausalTransformer(
        10, d=16, num_heads=2, num_layers=2, positions=positions, max_len=20
    )
    x = torch.randint(0, 10, (2, 9))
    y = x.clone()
    y[:, 6] = (y[:, 6] + 1) % 10
    out_x, out_y = model(x), model(y)
    assert out_x.shape == (2, 9, 10)
    torch.testing.assert_close(out_x[:, :6], out_y[:, :6])
    assert not torch.allclose(out_x[:, 6:], out_y[:, 6:])


def test_tiny_transformer_returns_each_layers_causal_weights():
    torch.manual_seed(0)
    model = TinyCausalTransformer(10, d=16, num_heads=2, num_layers=3, positions="alibi")
    x = torch.randint(0, 10, (2, 7))
    logits, weights = model(x, return_weights=True)
    torch.testing.assert_close(logits, model(x))  # the same forward pass
    assert len(weights) == 3 and all(w.shape == (2, 2, 7, 7) for w in weights)
    for w in weights:
        torch.testing.assert_close(w.sum(-1), torch.ones(2, 2, 7))  # each row a distribution
        assert torch.all(w.triu(diagonal=1) == 0)  # no query sees a later key


def test_tiny_transformer_rejects_bad_inputs_and_learns_the_delayed_copy():
    with pytest.raises(ValueError, match="unknown positions 'relative'"):
        TinyCausalTransformer(10, positions="relative")
    model = TinyCausalTransformer(16, d=32, positions="rope", max_len=16)
    with pytest.raises(ValueError, match="max_len=16"):
        model(torch.zeros(1, 17, dtype=torch.long))
    torch.manual_seed(0)
    optimiser = torch.optim.Adam(model.parameters(), lr=1e-2)
    batches = delayed_copy_batches(64, 16)
    for _ in range(150):
        x, y = next(batches)
        loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten(), ignore_index=IGNORE)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    x, y = delayed_copy_batch(100, 16, generator=torch.Generator().manual_seed(5))
    accuracy = (model(x).argmax(-1) == y)[y != IGNORE].float().mean().item()
    assert accuracy > 0.9, accuracy


def test_figures_and_explorers():
    words = "a b c a".split()
    vectors = word_vectors(words, 8)
    torch.testing.assert_close(vectors[0], vectors[3])  # the same word, the same vector
    assert not torch.allclose(vectors[0], vectors[1])
    w = head_weights(words, 0, d_k=8)
    torch.testing.assert_close(w.sum(-1), torch.ones(4))
    unscaled = head_weights(words, 0, scaled=False, d_k=8)
    entropy = lambda a: -(a * a.log()).sum(-1).mean()  # noqa: E731
    assert entropy(unscaled) < entropy(w)
    fig = plot_attention(w, words, words)
    assert len(fig.axes[0].get_yticklabels()) == 4
    with pytest.raises(ValueError, match="expected shape \\(4, 3\\)"):
        plot_attention(w, words, words[:3])
    assert "entropy" in attention_explorer("one two three").axes[0].get_title()
    with pytest.raises(ValueError, match="head: expected 0..3"):
        attention_explorer(head=4)
    for kind in ("sinusoidal", "alibi", "rope"):
        assert len(plot_positions(kind, n=16, d=8).axes) >= 2
    with pytest.raises(ValueError, match="kind: expected one of"):
        plot_positions("learned")
    assert interact_attention() is not None and interact_positions() is not None
    plt.close("all")
