"""BERT inputs (course.data.bert_inputs): framing, MLM masking statistics, NSP pairs."""

from __future__ import annotations

import math

import pytest
import torch

from course.data import english
from course.data.bert_inputs import (
    CLS_ID,
    IGNORE_INDEX,
    MASK_ID,
    NUM_SPECIAL,
    PAD_ID,
    SEP_ID,
    UNK_ID,
    NspPair,
    frame_pair,
    frame_words,
    make_nsp_pairs,
    mask_tokens,
    pad_batch,
    pretraining_batch,
    pretraining_batches,
)
from course.data.wordpiece import SPECIAL_TOKENS, WordPiece, count_words, learn_wordpiece
from tests.messages import raises

pytestmark = pytest.mark.usefixtures("one_thread")
VOCAB = 50  # a small vocabulary makes "random token equals the original" visible


def tolerance(n: int, p: float, sigmas: float = 5.0) -> float:
    """sigmas standard deviations of a proportion of n Bernoulli(p) draws."""
    return sigmas * math.sqrt(p * (1 - p) / n)


def sample_batch(seed: int = 0, rows: int = 3000, vocab: int = VOCAB) -> torch.Tensor:
    """Framed pairs of random ordinary ids (some [UNK]) with ragged lengths, padded."""
    g = torch.Generator().manual_seed(seed)
    framed = []
    for _ in range(rows):
        n_a, n_b = torch.randint(1, 30, (2,), generator=g).tolist()
        a = torch.randint(NUM_SPECIAL, vocab, (n_a,), generator=g)
        a[torch.rand(n_a, generator=g) < 0.02] = UNK_ID
        b = torch.randint(NUM_SPECIAL, vocab, (n_b,), generator=g)
        framed.append(frame_pair(a.tolist(), b.tolist(), max_len=64))
    return pad_batch(framed)["input_ids"]


def outcome_rates(original: torch.Tensor, masked: torch.Tensor, labels: torch.Tensor) -> dict:
    eligible = original >= NUM_SPECIAL
    selected = labels != IGNORE_INDEX
    chosen_in, chosen_out = original[selected], masked[selected]
    return {
        "eligible": int(eligible.sum()),
        "selected": int(selected.sum()),
        "rate": float(selected.sum() / eligible.sum()),
        "mask": float((chosen_out == MASK_ID).float().mean()),
        "same": float((chosen_out == chosen_in).float().mean()),
        "random": float(((chosen_out != MASK_ID) & (chosen_out != chosen_in)).float().mean()),
    }


def test_special_ids_are_fixed():
    assert (PAD_ID, UNK_ID, CLS_ID, SEP_ID, MASK_ID) == (0, 1, 2, 3, 4)
    assert [SPECIAL_TOKENS[i] for i in (PAD_ID, UNK_ID, CLS_ID, SEP_ID, MASK_ID)] == [
        "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    ]  # fmt: skip


def test_frame_pair_and_longest_first_truncation():
    assert frame_pair([7, 8], [9]) == ([2, 7, 8, 3, 9, 3], [0, 0, 0, 0, 1, 1])
    assert frame_pair([7, 8]) == ([2, 7, 8, 3], [0, 0, 0, 0])
    ids, types = frame_pair(list(range(10, 20)), [30, 31, 32], max_len=9)
    assert ids == [2, 10, 11, 12, 3, 30, 31, 32, 3] and types == [0] * 5 + [1] * 4
    # B is longer and loses tokens until the two are equal; then A (ties) and B alternate.
    ids, _ = frame_pair([10, 11], [30, 31, 32, 33], max_len=6)
    assert ids == [2, 10, 3, 30, 31, 3]
    with pytest.raises(ValueError, match="leaves no room"):
        frame_pair([7], [8], max_len=3)


def test_pad_batch_shapes_dtypes_and_errors():
    batch = pad_batch([frame_pair([7, 8], [9]), frame_pair([7])])
    assert batch["input_ids"].tolist() == [[2, 7, 8, 3, 9, 3], [2, 7, 3, 0, 0, 0]]
    assert batch["attention_mask"].tolist() == [[1] * 6, [1, 1, 1, 0, 0, 0]]
    assert batch["token_type_ids"].tolist() == [[0, 0, 0, 0, 1, 1], [0] * 6]
    assert all(t.dtype == torch.long for t in batch.values())
    assert pad_batch([frame_pair([7])], length=5)["input_ids"].shape == (1, 5)
    with pytest.raises(ValueError, match="at least one"):
        pad_batch([])
    with pytest.raises(ValueError, match="shorter than the longest"):
        pad_batch([frame_pair([7, 8, 9])], length=3)
    with pytest.raises(ValueError, match="token type ids"):
        pad_batch([([2, 7, 3], [0, 0])])


@pytest.mark.parametrize("mode", ["bernoulli", "fixed"])
def test_masking_statistics_match_the_stated_rates(mode):
    ids = sample_batch()
    masked, labels = mask_tokens(ids, VOCAB, torch.Generator().manual_seed(1), mode=mode)
    r = outcome_rates(ids, masked, labels)
    assert r["eligible"] > 80_000
    # Selection: 15% of the eligible positions; "fixed" rounds per sequence, so its rate is
    # the mean of round(0.15 n)/n, not 0.15: compare with that.
    n = (ids >= NUM_SPECIAL).sum(1).double()
    expected_rate = (
        0.15
        if mode == "bernoulli"
        else float((torch.floor(0.15 * n + 0.5).clamp(min=1)).sum() / n.sum())
    )
    assert abs(r["rate"] - expected_rate) < tolerance(r["eligible"], 0.15), r
    # Of the selected: 80% [MASK], 10% random (equal to the original 1 time in VOCAB - 5),
    # 10% unchanged.
    p_same = 0.1 + 0.1 / (VOCAB - NUM_SPECIAL)
    assert abs(r["mask"] - 0.8) < tolerance(r["selected"], 0.8), r
    assert abs(r["same"] - p_same) < tolerance(r["selected"], p_same), r
    assert abs(r["random"] - (0.2 - p_same)) < tolerance(r["selected"], 0.1), r
    # Specials and padding are never selected and never changed; random ids are ordinary.
    special = ids < NUM_SPECIAL
    assert (labels[special] == IGNORE_INDEX).all() and (masked[special] == ids[special]).all()
    assert (labels[~special & (labels != IGNORE_INDEX)] == ids[labels != IGNORE_INDEX]).all()
    changed = (masked != ids) & (masked != MASK_ID)
    assert (masked[changed] >= NUM_SPECIAL).all()
    assert changed.any()


def test_fixed_mode_selects_exactly_k_per_sequence_and_bernoulli_varies():
    ids = sample_batch(rows=400)
    g = torch.Generator().manual_seed(3)
    n = (ids >= NUM_SPECIAL).sum(1)
    _, fixed = mask_tokens(ids, VOCAB, g, mode="fixed")
    k = torch.floor(0.15 * n + 0.5).clamp(min=1)
    assert ((fixed != IGNORE_INDEX).sum(1) == k).all()
    _, bern = mask_tokens(ids, VOCAB, g, mode="bernoulli")
    counts = (bern != IGNORE_INDEX).sum(1)
    assert (counts != k).any() and (counts == 0).any()  # short sequences can get none


def test_masking_is_seeded_and_leaves_the_input_alone():
    ids = sample_batch(rows=50)
    before = ids.clone()
    one = mask_tokens(ids, VOCAB, torch.Generator().manual_seed(5))
    two = mask_tokens(ids, VOCAB, torch.Generator().manual_seed(5))
    assert torch.equal(one[0], two[0]) and torch.equal(one[1], two[1])
    assert torch.equal(ids, before)


def test_masking_errors():
    g = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="dimensions"):
        mask_tokens(torch.tensor([5, 6]), VOCAB, g)
    with pytest.raises(TypeError, match="integer"):
        mask_tokens(torch.ones(2, 3), VOCAB, g)
    with pytest.raises(ValueError, match=r"values in \[0, 50\)"):
        mask_tokens(torch.tensor([[5, 60]]), VOCAB, g)
    with pytest.raises(ValueError, match="mode"):
        mask_tokens(torch.tensor([[5, 6]]), VOCAB, g, mode="word")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="rate"):
        mask_tokens(torch.tensor([[5, 6]]), VOCAB, g, rate=1.5)
    with pytest.raises(ValueError, match="no ordinary tokens"):
        mask_tokens(torch.tensor([[1, 2]]), NUM_SPECIAL, g)


def test_bernoulli_masking_matches_transformers_data_collator(tmp_path):
    from transformers import BertTokenizer, DataCollatorForLanguageModeling

    vocab = SPECIAL_TOKENS + tuple(f"w{i}" for i in range(VOCAB - NUM_SPECIAL))
    WordPiece(list(vocab)).save(tmp_path / "vocab.txt")
    tokenizer = BertTokenizer.from_pretrained(tmp_path, local_files_only=True)
    assert len(tokenizer) == VOCAB
    assert [tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS] == [0, 1, 2, 3, 4]
    ids = sample_batch(seed=7)
    rows = [{"input_ids": row[row != PAD_ID].tolist()} for row in ids]
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.15, seed=0)
    theirs = collator(rows)
    assert theirs["input_ids"].shape == ids.shape  # padded to the same length
    masked, labels = mask_tokens(ids, VOCAB, torch.Generator().manual_seed(0))
    ours_r = outcome_rates(ids, masked, labels)
    theirs_r = outcome_rates(ids, theirs["input_ids"], theirs["labels"])
    assert theirs_r["eligible"] == ours_r["eligible"]  # the same positions are eligible
    two = math.sqrt(2)  # the difference of two independent proportions
    for key, p in [("rate", 0.15), ("mask", 0.8), ("same", 0.1), ("random", 0.1)]:
        n = ours_r["eligible"] if key == "rate" else ours_r["selected"]
        assert abs(ours_r[key] - theirs_r[key]) < two * tolerance(n, p), (key, ours_r, theirs_r)
    # The collator's specials are never selected either (its random draw may give a special).
    special = ids < NUM_SPECIAL
    assert (theirs["labels"][special] == IGNORE_INDEX).all()


@pytest.fixture(scope="module")
def documents() -> list[list[str]]:
    return [list(d.sentences) for d in english.load_prose("val")[:80]]


def test_nsp_pairs_are_consecutive_or_from_another_document(documents):
    pairs = make_nsp_pairs(documents, seed=0)
    assert all(isinstance(p, NspPair) for p in pairs)
    assert len(pairs) == sum(len(d) - 1 for d in documents if d)
    rate = sum(p.label == 0 for p in pairs) / len(pairs)
    assert abs(rate - 0.5) < tolerance(len(pairs), 0.5), rate
    places = [(i, k) for i, d in enumerate(documents) for k in range(len(d) - 1)]
    for p, (i, k) in zip(pairs, places, strict=True):  # one pair per place, in order
        assert (p.document, p.a) == (i, documents[i][k])
        if p.label == 0:
            assert p.b == documents[i][k + 1]
        else:
            assert any(p.b in d for j, d in enumerate(documents) if j != i)
    assert make_nsp_pairs(documents, seed=0) == pairs
    assert make_nsp_pairs(documents, seed=1) != pairs
    assert all(p.label == 0 for p in make_nsp_pairs(documents, p_next=1.0))


def test_nsp_errors():
    with raises(ValueError, "documents", "at least two"):
        make_nsp_pairs([["One.", "Two."]])
    with pytest.raises(TypeError, match="each a list of sentences"):
        make_nsp_pairs(["One. Two.", "Three."])
    with pytest.raises(ValueError, match="p_next"):
        make_nsp_pairs([["a", "b"], ["c"]], p_next=2.0)


def test_pretraining_batch(documents):
    wp = learn_wordpiece(count_words(s for d in documents for s in d), 400)
    pairs = make_nsp_pairs(documents, seed=0)[:32]
    batch = pretraining_batch(wp, pairs, torch.Generator().manual_seed(0), max_len=40)
    B, T = batch["input_ids"].shape
    assert B == 32 and T <= 40
    assert set(batch) == {"input_ids", "token_type_ids", "attention_mask", "labels",
                          "next_sentence_label"}  # fmt: skip
    assert batch["next_sentence_label"].tolist() == [p.label for p in pairs]
    assert (batch["input_ids"][:, 0] == CLS_ID).all()
    assert (batch["labels"] != IGNORE_INDEX).any()
    assert ((batch["input_ids"] == SEP_ID).sum(1) == 2).all()  # [SEP] is never masked
    with pytest.raises(ValueError, match="first tokens must be"):
        pretraining_batch(WordPiece(["[UNK]", "a"]), pairs, torch.Generator())


def test_pretraining_batches_cover_every_pair_once_an_epoch_and_repeat_by_seed(documents):
    wp = learn_wordpiece(count_words(s for d in documents for s in d), 300)
    pairs = make_nsp_pairs(documents, seed=0)[:40]
    stream = pretraining_batches(wp, pairs, batch_size=8, seed=1, max_len=32)
    epoch = [next(stream) for _ in range(5)]  # 40 pairs in batches of 8: one epoch
    labels = sorted(x for b in epoch for x in b["next_sentence_label"].tolist())
    assert labels == sorted(p.label for p in pairs)
    again = pretraining_batches(wp, pairs, batch_size=8, seed=1, max_len=32)
    assert all(torch.equal(next(again)["input_ids"], b["input_ids"]) for b in epoch)
    other = next(pretraining_batches(wp, pairs, batch_size=8, seed=2, max_len=32))
    assert not torch.equal(other["input_ids"], epoch[0]["input_ids"])
    assert next(stream)["input_ids"].shape[0] == 8  # the next epoch goes on
    with pytest.raises(ValueError, match="batch_size"):
        next(pretraining_batches(wp, pairs, batch_size=41))


def test_frame_words_finds_each_words_first_piece():
    wp = WordPiece(list(SPECIAL_TOKENS) + ["the", "dog", "##s", "run", "bark", "##ing", "."])
    ids, starts = frame_words(wp, ["The", "dogs", "", "barking", "."])
    assert ids == [2, 5, 6, 7, 9, 10, 11, 3]
    assert starts == [1, 2, -1, 4, 6]
    assert [wp.vocab[ids[s]] for s in starts if s >= 0] == ["the", "dog", "bark", "."]
    ids, starts = frame_words(wp, ["The", "dogs", "barking"], max_len=5)
    assert ids == [2, 5, 6, 7, 3] and starts == [1, 2, -1]  # "barking" was cut off
    example = english.load_tagging_task("pos", "val")[0]
    wp = learn_wordpiece(count_words([" ".join(example.tokens)]), 80)
    ids, starts = frame_words(wp, example.tokens)
    assert len(starts) == len(example.tokens) and starts[example.target] > 0
    assert wp.decode(ids[starts[example.target] :]).startswith(example.word.lower())
    with pytest.raises(TypeError, match="sequence of words"):
        frame_words(wp, "one string")
    with pytest.raises(ValueError, match="no room"):
        frame_words(wp, ["a"], max_len=2)
