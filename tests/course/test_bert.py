"""The course BERT (course.models.bert): its rules, its errors, equality with `transformers`,
and parameter counts of BERT-base and BERT-large."""

from __future__ import annotations

import json

import pytest
import torch
from torch.nn import functional as F

from course.analysis.parameters import BertCount, count_bert
from course.data import english
from course.data.bert_inputs import make_nsp_pairs, pretraining_batch
from course.data.wordpiece import count_words, learn_wordpiece
from course.models.bert import (
    BERT_BASE,
    BERT_LARGE,
    BertConfig,
    BertEmbeddings,
    BertForPreTraining,
    BertModel,
    BertOutput,
    evaluate_pretraining,
    fill_mask,
    save_for_transformers,
    transformers_state_dict,
)
from tests.messages import raises

pytestmark = pytest.mark.usefixtures("one_thread")
SMALL = BertConfig(vocab_size=60, d_model=32, num_layers=2, num_heads=4, d_ff=64, max_len=20)


def perturbed(config: BertConfig = SMALL, seed: int = 0) -> BertForPreTraining:
    """A model whose biases and LayerNorms are not at their initial 0 and 1 (a fair test)."""
    torch.manual_seed(seed)
    model = BertForPreTraining(config).double().eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return model


def inputs(seed: int = 1) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Three framed pairs, the second padded from position 8."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, SMALL.vocab_size, (3, 12), generator=g)
    ids[:, 0], ids[:, 5], ids[:, 11] = 2, 3, 3
    mask = torch.ones_like(ids)
    mask[1, 8:], ids[1, 8:], ids[1, 7] = 0, 0, 3
    types = torch.zeros_like(ids)
    types[:, 6:] = 1
    types[1, 8:] = 0
    return ids, types, mask


def test_outputs_follow_the_rules():
    model = perturbed()
    ids, types, mask = inputs()
    out = model(ids, types, mask)
    assert isinstance(out, BertOutput)
    assert out.mlm_logits.shape == (3, 12, 60) and out.nsp_logits.shape == (3, 2)
    assert out.pooled.shape == (3, 32) and len(out.hidden_states) == SMALL.num_layers + 1
    emb = model.bert.embeddings
    assert isinstance(emb, BertEmbeddings) and isinstance(model.bert, BertModel)
    e = emb.token(ids) + emb.segment(types) + emb.position.weight[:12]  # (BERT-1)
    torch.testing.assert_close(out.hidden_states[0], F.layer_norm(e, (32,), emb.norm.weight,
                                                                  emb.norm.bias, 1e-12))  # fmt: skip
    torch.testing.assert_close(out.hidden_states[-1], out.last_hidden_state)
    pooled = torch.tanh(model.bert.pooler(out.last_hidden_state[:, 0]))  # (BERT-3)
    torch.testing.assert_close(out.pooled, pooled)
    torch.testing.assert_close(out.nsp_logits, model.nsp(pooled))
    z = model.mlm_norm(F.gelu(model.mlm_dense(out.last_hidden_state)))  # (BERT-4), tied
    torch.testing.assert_close(out.mlm_logits, z @ emb.token.weight.T + model.mlm_bias)


def test_padding_is_invisible_to_real_positions():
    model = perturbed()
    ids, types, mask = inputs()
    out = model(ids, types, mask)
    other = ids.clone()
    other[1, 8:] = 17  # different content behind the mask
    again = model(other, types, mask)
    torch.testing.assert_close(again.mlm_logits[1, :8], out.mlm_logits[1, :8])
    torch.testing.assert_close(again.nsp_logits, out.nsp_logits)
    unmasked = model(other, types)  # without the mask, the padding is seen
    assert not torch.allclose(unmasked.mlm_logits[1, :8], out.mlm_logits[1, :8])


def test_input_errors_are_clear():
    model = BertForPreTraining(SMALL)
    ids, types, mask = inputs()
    with raises(TypeError, "input_ids", "integer", "float32"):
        model(ids.float())
    with pytest.raises(ValueError, match=r"input_ids: expected values in \[0, 60\)"):
        model(ids + 100)
    with pytest.raises(ValueError, match="input_ids: expected 2 dimensions"):
        model(ids[0])
    with pytest.raises(ValueError, match="token_type_ids: expected shape"):
        model(ids, types[:, :5])
    with raises(ValueError, "token_type_ids", r"\[0, 2\)"):
        model(ids, types + 2)
    with pytest.raises(ValueError, match="attention_mask: expected shape"):
        model(ids, types, mask[:2])
    with pytest.raises(ValueError, match=r"\[CLS\]\) must be real"):
        model(ids, types, torch.zeros_like(mask))
    with pytest.raises(ValueError, match="max_len=20"):
        model(torch.full((1, 21), 7))
    with pytest.raises(ValueError, match="divisible by num_heads"):
        BertConfig(d_model=30, num_heads=4)
    with pytest.raises(ValueError, match="sizes must be positive"):
        BertConfig(num_layers=0)


def test_initialisation_is_berts():
    torch.manual_seed(0)
    model = BertForPreTraining(BertConfig(vocab_size=3000, d_model=64, num_heads=2))
    table = model.bert.embeddings.token.weight
    assert abs(table[1:].std().item() - 0.02) < 0.001 and not table[0].any()  # [PAD] row 0
    assert not model.bert.layers[0].ffn.linear1.bias.any() and not model.mlm_bias.any()
    assert model.bert.layers[0].ffn.activation == "gelu"
    assert model.bert.layers[0].norm1.eps == 1e-12 and not model.bert.layers[0].norm_first


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_transformers_bert_for_pretraining_loads_and_agrees(tmp_path, dtype):
    from transformers import BertForPreTraining as HFBertForPreTraining

    model = perturbed().to(dtype)
    folder = save_for_transformers(model, tmp_path / "bert")
    assert json.loads((folder / "config.json").read_text())["layer_norm_eps"] == 1e-12
    assert json.loads((folder / "course_bert.json").read_text())["d_model"] == 32
    theirs, info = HFBertForPreTraining.from_pretrained(
        folder, local_files_only=True, output_loading_info=True, dtype=dtype
    )
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    assert not info["mismatched_keys"], info
    theirs.eval()
    ids, types, mask = inputs()
    ours = model(ids, types, mask)
    with torch.no_grad():
        out = theirs(input_ids=ids, token_type_ids=types, attention_mask=mask,
                     output_hidden_states=True)  # fmt: skip
    tolerance = 1e-12 if dtype == torch.float64 else 1e-5
    real = mask.bool()
    mlm_diff = (ours.mlm_logits - out.prediction_logits)[real].abs().max().item()
    nsp_diff = (ours.nsp_logits - out.seq_relationship_logits).abs().max().item()
    assert mlm_diff < tolerance and nsp_diff < tolerance, (mlm_diff, nsp_diff)
    for k, (a, b) in enumerate(zip(ours.hidden_states, out.hidden_states, strict=True)):
        assert (a - b)[real].abs().max().item() < tolerance, f"hidden state {k}"
    # The comparison is not vacuous: a change in one weight is seen.
    with torch.no_grad():
        model.bert.layers[1].ffn.linear2.bias[0] += 0.01
    assert (model(ids, types, mask).mlm_logits - out.prediction_logits).abs().max() > 1e-4


def test_transformers_bert_for_masked_lm_loads_and_agrees(tmp_path):
    from transformers import BertForMaskedLM

    model = perturbed(seed=3)
    folder = save_for_transformers(model, tmp_path / "mlm", architecture="BertForMaskedLM")
    theirs, info = BertForMaskedLM.from_pretrained(
        folder, local_files_only=True, output_loading_info=True, dtype=torch.float64
    )
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    ids, types, mask = inputs(seed=4)
    with torch.no_grad():
        logits = theirs.eval()(input_ids=ids, token_type_ids=types, attention_mask=mask).logits
    diff = (model(ids, types, mask).mlm_logits - logits)[mask.bool()].abs().max().item()
    assert diff < 1e-12, diff
    # Tied: the loaded decoder is the loaded token table.
    assert theirs.cls.predictions.decoder.weight.data_ptr() == (
        theirs.bert.embeddings.word_embeddings.weight.data_ptr()
    )


def test_saving_errors(tmp_path):
    with pytest.raises(TypeError, match="expected a BertForPreTraining"):
        save_for_transformers(BertModel(SMALL), tmp_path)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="architecture"):
        save_for_transformers(BertForPreTraining(SMALL), tmp_path, architecture="BertForQA")
    names = transformers_state_dict(BertForPreTraining(SMALL))
    assert "bert.encoder.layer.1.attention.self.query.weight" in names
    assert torch.equal(names["cls.predictions.decoder.weight"],
                       names["bert.embeddings.word_embeddings.weight"])  # fmt: skip
    assert SMALL.to_transformers().intermediate_size == 64


def test_pretraining_loss_trains_on_real_pairs():
    docs = [list(d.sentences) for d in english.load_prose("val", "web")[:30]]
    wp = learn_wordpiece(count_words(s for d in docs for s in d), 500)
    pairs = make_nsp_pairs(docs, seed=0)[:16]
    batch = pretraining_batch(wp, pairs, torch.Generator().manual_seed(0), max_len=48)
    torch.manual_seed(0)
    model = BertForPreTraining(BertConfig(vocab_size=len(wp), d_model=32, num_heads=2,
                                          d_ff=64, max_len=48, dropout=0.0))  # fmt: skip
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)
    loss, logs = model.loss(batch)
    first = loss.item()
    assert set(logs) == {"mlm", "nsp"} and abs(first - logs["mlm"] - logs["nsp"]) < 1e-5
    out = model(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"])
    on_all = F.cross_entropy(out.mlm_logits.flatten(0, 1), batch["labels"].flatten())
    assert abs(on_all.item() - logs["mlm"]) < 1e-5  # the head on selected positions only
    assert abs(logs["mlm"] - torch.log(torch.tensor(len(wp))).item()) < 0.5  # near uniform
    for _ in range(40):
        optimiser.zero_grad()
        loss, _ = model.loss(batch)
        loss.backward()
        optimiser.step()
    assert loss.item() < 0.5 * first  # it can fit one batch
    figures = evaluate_pretraining(model, [batch])
    assert figures["mlm_tokens"] == (batch["labels"] != -100).sum().item()
    assert figures["nsp_pairs"] == 16 and figures["nsp_accuracy"] > 0.9  # memorised
    assert figures["mlm_accuracy"] > 0.5 and figures["mlm_loss"] < logs["mlm"]
    assert model.training  # put back as it was
    with pytest.raises(ValueError, match="at least one batch"):
        evaluate_pretraining(model, [])
    none = {**batch, "labels": torch.full_like(batch["labels"], -100)}
    with pytest.raises(ValueError, match="no position is selected"):
        evaluate_pretraining(model, [none])


def test_fill_mask_ranks_the_tokens_at_each_mask():
    wp = learn_wordpiece({"the": 9, "cat": 5, "sat": 4, "on": 3, "mat": 2}, 40)
    model = perturbed(BertConfig(vocab_size=len(wp), d_model=32, num_heads=2, max_len=16))
    answers = fill_mask(model, wp, "The [MASK] sat on the [MASK].", k=3)
    assert len(answers) == 2 and all(len(a) == 3 for a in answers)
    for answer in answers:
        probs = [p for _, p in answer]
        assert probs == sorted(probs, reverse=True) and 0 < sum(probs) <= 1
        assert not {t for t, _ in answer} & {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
    # The first answer is the model's own top choice at that position, by hand.
    ids = [2, *wp.encode("the"), 4, *wp.encode("sat on the"), 4, *wp.encode("."), 3]
    logits = model(torch.tensor([ids])).mlm_logits[0, 2]
    logits[:5] = float("-inf")
    assert answers[0][0][0] == wp.vocab[int(logits.argmax())]
    with pytest.raises(ValueError, match="at least one \\[MASK\\]"):
        fill_mask(model, wp, "no mask here")
    with pytest.raises(ValueError, match="too long"):
        fill_mask(model, wp, "the " * 20 + "[MASK]")
    with pytest.raises(ValueError, match="tokens but the model"):
        fill_mask(perturbed(), wp, "the [MASK]")


@pytest.mark.parametrize(
    ("config", "paper", "encoder", "total"),
    [(BERT_BASE, 110e6, 109_482_240, 110_106_428), (BERT_LARGE, 340e6, 335_141_888, 336_226_108)],
)
def test_bert_base_and_large_counts_on_the_meta_device(config, paper, encoder, total):
    with torch.device("meta"):
        model = BertForPreTraining(config)  # no memory for the weights
    assert model.bert.embeddings.token.weight.is_meta
    counted_encoder = sum(p.numel() for p in model.bert.parameters())
    counted_total = sum(p.numel() for p in model.parameters())
    formula = count_bert(config.d_model, config.d_ff, config.num_layers, config.vocab_size)
    assert isinstance(formula, BertCount)
    assert (counted_encoder, counted_total) == (formula.encoder, formula.total)
    assert (counted_encoder, counted_total) == (encoder, total)  # the figures we report
    assert abs(counted_encoder - paper) / paper < 0.015  # the paper's rounded 110M and 340M


def test_count_formula_on_a_small_real_model_and_its_errors():
    config = BertConfig(vocab_size=97, d_model=24, num_layers=3, num_heads=3, d_ff=40, max_len=33)
    model = BertForPreTraining(config)
    count = count_bert(24, 40, 3, 97, max_len=33)
    assert count.embeddings == sum(p.numel() for p in model.bert.embeddings.parameters())
    assert count.layers == sum(p.numel() for p in model.bert.layers.parameters())
    assert count.total == sum(p.numel() for p in model.parameters())
    with pytest.raises(ValueError, match="sizes must be positive"):
        count_bert(0, 40, 3, 97)
