"""Tests for Unit 6's course.models.transformer: equal to torch.nn.Transformer, and usable as
a translation model with course.decoding."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from course.analysis.parameters import (
    TransformerCount,
    attention_parameters,
    count_transformer,
    feed_forward_parameters,
)
from course.data.dates import DateTask
from course.decoding import beam_search, greedy_search
from course.models.attention import causal_mask, padding_mask
from course.models.transformer import (
    DecoderLayer,
    EncoderLayer,
    FeedForward,
    Seq2SeqTransformer,
    Transformer,
    copy_to_torch,
)

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
@pytest.mark.parametrize("norm_first", [False, True])
def test_equal_to_torch_transformer_with_padding_and_causal_masks(norm_first):
    torch.manual_seed(0)
    ours = Transformer(16, 4, 2, 3, 32, dropout=0.0, norm_first=norm_first).double()
    theirs = nn.Transformer(
        16, 4, 2, 3, 32, dropout=0.0, batch_first=True, norm_first=norm_first
    ).double()
    copy_to_torch(ours, theirs)
    ours.train()
    theirs.train()  # train mode: torch's fast inference path is not taken
    src = torch.randn(3, 7, 16, dtype=torch.float64)
    tgt = torch.randn(3, 5, 16, dtype=torch.float64)
    src_mask = padding_mask(torch.tensor([7, 3, 5]), 7)
    tgt_keys = padding_mask(torch.tensor([5, 2, 4]), 5)
    ours_out = ours(src, tgt, src_mask, causal_mask(5) & tgt_keys)
    theirs_out = theirs(
        src, tgt, tgt_mask=~causal_mask(5), src_key_padding_mask=~src_mask[:, 0, 0],
        memory_key_padding_mask=~src_mask[:, 0, 0], tgt_key_padding_mask=~tgt_keys[:, 0, 0],
    )  # fmt: skip
    torch.testing.assert_close(ours_out, theirs_out)
    # a change in one weight is seen: the comparison is not vacuous
    with torch.no_grad():
        ours.decoder_layers[2].ffn.linear2.bias[0] += 0.1
    assert not torch.allclose(ours(src, tgt, src_mask, causal_mask(5) & tgt_keys), theirs_out)


def test_copy_refuses_different_depths_and_layers_keep_shapes():
    with pytest.raises(ValueError, match="different numbers of layers"):
        copy_to_torch(Transformer(8, 2, 1, 1, 16), nn.Transformer(8, 2, 2, 1, 16, batch_first=True))
    x = torch.randn(2, 5, 8)
    ffn = FeedForward(8, 16, dropout=0.0)
    torch.testing.assert_close(ffn(x), ffn.linear2(torch.relu(ffn.linear1(x))))
    torch.testing.assert_close(ffn(x)[:, 2], ffn(x[:, 2:3])[:, 0])  # the same at every position
    assert EncoderLayer(8, 2, 16)(x).shape == (2, 5, 8)
    assert DecoderLayer(8, 2, 16)(x[:, :3], x).shape == (2, 3, 8)


def test_gelu_activation_and_layer_norm_eps_options_keep_relu_as_the_default():
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    gelu = FeedForward(8, 16, dropout=0.0, activation="gelu").double()
    exact = 0.5 * (1 + torch.erf(gelu.linear1(x) / 2**0.5)) * gelu.linear1(x)  # x Φ(x)
    torch.testing.assert_close(gelu(x), gelu.linear2(exact))
    assert FeedForward(8, 16, 0.0).activation == "relu"
    torch.manual_seed(0)
    default = EncoderLayer(8, 2, 16, dropout=0.0)
    torch.manual_seed(0)
    explicit = EncoderLayer(8, 2, 16, dropout=0.0, activation="relu", layer_norm_eps=1e-5)
    torch.testing.assert_close(default(x.float()), explicit(x.float()))
    bert_like = EncoderLayer(8, 2, 16, activation="gelu", layer_norm_eps=1e-12)
    assert bert_like.norm1.eps == bert_like.norm2.eps == 1e-12
    assert bert_like.ffn.activation == "gelu" and default.norm1.eps == 1e-5
    with pytest.raises(ValueError, match="activation: expected one of"):
        FeedForward(8, 16, 0.0, activation="tanh")


def test_seq2seq_transformer_trains_and_decodes_through_course_decoding():
    torch.manual_seed(0)
    task = DateTask()
    model = Seq2SeqTransformer(len(task.source_vocab), len(task.target_vocab), d_model=32,
                               num_heads=4, num_layers=1, d_ff=64)  # fmt: skip
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)
    batches = task.batches(32)
    first = model.loss(next(batches)).item()
    for _ in range(60):
        loss = model.loss(next(batches))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    assert loss.item() < 0.6 * first
    model.eval()
    pairs = task.sample(3, "test")
    src, src_len, _ = task.batch(pairs)
    common = dict(batch_size=3, bos=task.bos_id, eos=task.eos_id, max_len=12)
    for hyp in greedy_search(model.decode_step, model.start(src, src_len), **common) + beam_search(
        model.decode_step, model.start(src, src_len), beam_size=3, **common
    ):
        assert 1 <= len(hyp.tokens) <= 12
    # the step function's log-probabilities are those of teacher forcing on the same prefix
    (hyp,) = greedy_search(
        model.decode_step, model.start(src[:1], src_len[:1]), **{**common, "batch_size": 1}
    )
    tgt = torch.tensor([[task.bos_id, *hyp.tokens]])
    with torch.no_grad():
        logits = model(src[:1], src_len[:1], tgt[:, :-1])
    teacher = logits.log_softmax(-1)[0].gather(1, tgt[0, 1:, None]).sum().item()
    assert teacher == pytest.approx(hyp.log_prob, abs=1e-4)
    with pytest.raises(ValueError, match="max_len=64"):
        model(torch.ones(1, 65, dtype=torch.long), torch.tensor([65]), tgt)


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
@pytest.mark.parametrize(
    ("d", "heads", "enc", "dec", "d_ff"), [(512, 8, 6, 6, 2048), (16, 4, 2, 3, 40)]
)
def test_the_parameter_formula_counts_every_weight_of_both_implementations(
    d, heads, enc, dec, d_ff
):
    count = count_transformer(d, d_ff, enc, dec)
    ours = Transformer(d, heads, enc, dec, d_ff)
    theirs = nn.Transformer(d, heads, enc, dec, d_ff, batch_first=True)
    assert count.total == sum(p.numel() for p in ours.parameters())
    assert count.total == sum(p.numel() for p in theirs.parameters())
    ffn = sum(p.numel() for layer in ours.encoder_layers for p in layer.ffn.parameters())
    assert ffn == enc * feed_forward_parameters(d, d_ff)
    assert attention_parameters(d) == sum(
        p.numel() for p in ours.encoder_layers[0].self_attn.parameters()
    )


def test_the_base_model_count_is_near_the_papers_65_million():
    base = count_transformer(512, 2048, 6, 6, vocab_size=37_000, embedding_tables=1)
    assert isinstance(base, TransformerCount)
    assert base.embeddings == 37_000 * 512
    assert base.total == 44_140_544 + 18_944_000 == 63_084_544  # the paper rounds to 65M
    assert count_transformer(512, 2048, 6, 6, 37_000, embedding_tables=3).total > 100_000_000
    assert base.without_embeddings == 44_140_544
    with pytest.raises(ValueError, match="sizes must be positive"):
        count_transformer(0, 2048, 6, 6)


# --- Lecture 6's measurements, schedules and figures ----------------------------------------


def test_linear_warmup_decay_rises_then_falls_to_zero():
    from course.train import linear_warmup_decay

    factor = linear_warmup_decay(10, 110)
    assert factor(0) == pytest.approx(0.1)
    assert factor(9) == pytest.approx(1.0)
    assert factor(60) == pytest.approx(0.5)
    assert factor(110) == 0.0
    with pytest.raises(ValueError, match="warmup < steps"):
        linear_warmup_decay(100, 100)


def test_transformer_schedule_is_the_papers_and_without_warm_up_starts_at_its_peak():
    from course.train import transformer_schedule

    warm = transformer_schedule(512, 4000)
    cold = transformer_schedule(512, 4000, warm_up=False)
    peak = 512**-0.5 * 4000**-0.5
    assert warm(3999) == pytest.approx(peak)  # step 4000 (1-based): the top of the ramp
    assert warm(0) == pytest.approx(512**-0.5 * 4000**-1.5)
    assert warm(15999) == pytest.approx(peak / 2)  # 1/√s: four times the steps, half the rate
    assert cold(0) == pytest.approx(peak) and cold(15999) == pytest.approx(warm(15999))
    assert transformer_schedule(64, 10, scale=2.0)(9) == pytest.approx(2 * 64**-0.5 * 10**-0.5)
    with pytest.raises(ValueError, match="scale > 0"):
        transformer_schedule(64, 10, scale=0.0)


def test_embeddings_start_at_the_papers_scale_so_positions_are_visible():
    model = Seq2SeqTransformer(20, 15, d_model=64)
    scaled = model.src_embed.weight.detach()[1:] * 8.0
    assert 6.0 < float(scaled.norm(dim=-1).mean()) < 10.0  # about √64, like a position vector
    assert float(model.tgt_embed.weight.detach()[0].abs().max()) == 0.0  # padding stays zero


def test_attention_maps_return_every_layers_weights_with_zero_on_padding():
    from course.analysis.transformer import attention_maps

    torch.manual_seed(0)
    task = DateTask()
    model = Seq2SeqTransformer(len(task.source_vocab), len(task.target_vocab), d_model=16,
                               num_heads=2, num_layers=3, d_ff=32)  # fmt: skip
    src, src_len, tgt = task.batch(task.sample(3, "test"))
    model.train()
    maps = attention_maps(model, src, src_len, tgt[:, :-1])
    assert model.training, "the model's mode is restored"
    B, m, T = src.shape[0], src.shape[1], tgt.shape[1] - 1
    assert [len(maps[p]) for p in ("encoder", "decoder", "cross")] == [3, 3, 3]
    assert maps["encoder"][0].shape == (B, 2, m, m)
    assert maps["decoder"][2].shape == (B, 2, T, T)
    assert maps["cross"][1].shape == (B, 2, T, m)
    torch.testing.assert_close(maps["cross"][0].sum(-1), torch.ones(B, 2, T))
    short = int(src_len.argmin())
    assert float(maps["cross"][2][short, :, :, int(src_len[short]) :].abs().max()) == 0.0
    assert float(maps["decoder"][0][0, 0].triu(1).abs().max()) == 0.0  # causal
    assert not model.transformer.encoder_layers[0].self_attn._forward_hooks  # hooks removed


def test_gradients_vanish_through_a_plain_deep_stack_and_not_with_residuals():
    from course.analysis.transformer import gradient_norms_by_depth

    plain = gradient_norms_by_depth(24, residual=False, norm="none")
    assert plain.shape == (25,)
    assert plain[0] < 1e-10 * plain[-1]
    for norm in ("post", "pre", "none"):
        residual = gradient_norms_by_depth(24, residual=True, norm=norm)
        assert 0.3 < residual[0] / residual[-1] < 3.0, norm
    np.testing.assert_array_equal(
        gradient_norms_by_depth(6, seed=1), gradient_norms_by_depth(6, seed=1)
    )
    with pytest.raises(ValueError, match="norm: expected one of"):
        gradient_norms_by_depth(4, norm="middle")
    with pytest.raises(ValueError, match="at least 1"):
        gradient_norms_by_depth(0)


def test_decoder_mask_figure_draws_causal_padding_and_combined_per_target():
    import matplotlib

    matplotlib.use("Agg")
    from course.viz.transformer import plot_decoder_masks

    fig = plot_decoder_masks((4, 2))
    images = [ax.images[0].get_array() for ax in fig.axes]
    assert len(images) == 6
    np.testing.assert_array_equal(images[5], np.tril(np.ones((4, 4))) * [1, 1, 0, 0])
    with pytest.raises(ValueError, match="lengths"):
        plot_decoder_masks(())
    with pytest.raises(ValueError, match="tokens: expected 4 labels"):
        plot_decoder_masks((4, 2), tokens=["a"])


def test_depth_gradient_figure_and_its_explorer():
    import ipywidgets as widgets
    import matplotlib

    matplotlib.use("Agg")
    from course.viz.transformer import interact_depth_gradients, plot_depth_gradients

    fig = plot_depth_gradients(8, residual=False, norm="none")
    lines = fig.axes[0].get_lines()
    assert len(lines) == 2 and len(lines[0].get_ydata()) == 9
    assert lines[0].get_ydata()[0] < lines[1].get_ydata()[0]  # without residuals: smaller
    controls = interact_depth_gradients().widget.children
    kinds = {type(c) for c in controls}
    assert {widgets.IntSlider, widgets.Checkbox, widgets.Dropdown} <= kinds


def test_head_figure_checks_its_arguments_and_the_explorer_has_four_controls():
    import ipywidgets as widgets
    import matplotlib

    matplotlib.use("Agg")
    from course.viz.transformer import HeadMaps, interact_heads, plot_head

    rng = np.random.default_rng(0)
    maps = {
        "encoder": [rng.dirichlet(np.ones(3), size=(2, 3))] * 2,
        "decoder": [rng.dirichlet(np.ones(4), size=(2, 4))] * 2,
        "cross": [rng.dirichlet(np.ones(3), size=(2, 4))] * 2,
    }
    example = HeadMaps(["a", "b", "c"], ["<s>", "1", "2", "3"], maps)
    fig = plot_head(example, "cross", layer=1, head=1)
    np.testing.assert_allclose(fig.axes[0].images[0].get_array(), maps["cross"][1][1])
    assert example.tokens("decoder") == (example.target, example.target)
    with pytest.raises(ValueError, match="part: expected one of"):
        plot_head(example, "memory")
    with pytest.raises(ValueError, match="layer: expected 0..1"):
        plot_head(example, layer=2)
    with pytest.raises(ValueError, match="head: expected 0..1"):
        plot_head(example, head=5)
    bad = HeadMaps(["a"], ["<s>"], maps)
    with pytest.raises(ValueError, match="expected weights of shape"):
        plot_head(bad, "encoder")
    controls = interact_heads([example, example]).widget.children
    assert sum(isinstance(c, widgets.IntSlider) for c in controls) == 3
    with pytest.raises(ValueError, match="at least one example"):
        interact_heads([])
