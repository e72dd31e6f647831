"""Tests for Unit 6's course.models.transformer: equal to torch.nn.Transformer, and usable as
a translation model with course.decoding."""

from __future__ import annotations

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
from course.models.attention import causal_mask
from course.models.transformer import (
    DecoderLayer,
    EncoderLayer,
    FeedForward,
    Seq2SeqTransformer,
    Transformer,
    copy_to_torch,
    key_mask,
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
    src_mask = key_mask(torch.tensor([7, 3, 5]), 7)
    tgt_keys = key_mask(torch.tensor([5, 2, 4]), 5)
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
