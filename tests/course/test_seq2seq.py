"""Tests for Unit 4's pieces: course.data.dates, course.data.numbers, course.data.translation,
course.models.seq2seq, course.decoding, course.analysis.seq2seq and course.viz.seq2seq."""

from __future__ import annotations

import datetime
import itertools
import math

import matplotlib
import matplotlib.pyplot as plt
import pytest
import torch

from course.analysis.seq2seq import (
    accuracy_by,
    attention_weights,
    exact_match,
    exposure_bias,
    translate,
)
from course.analysis.sorting import SORTERS, sorting_seeds, train_sorter
from course.checks import ShapeMismatch
from course.data.dates import (
    HELDOUT_TEMPLATES,
    ONES,
    TEMPLATES,
    DateTask,
    date_in_words,
    day_in_words,
    number_words,
    year_in_words,
)
from course.data.numbers import NumberTask, in_words
from course.data.sorting import SortTask
from course.data.translation import WordsToCharacters, stable_hash
from course.decoding import Hypothesis, beam_search, greedy_search, map_state
from course.models.seq2seq import SCORES, Attention, Seq2Seq, masked_softmax
from course.models.transformer import Seq2SeqTransformer
from course.viz.seq2seq import (
    interact_alignment,
    plot_accuracy_by_length,
    plot_alignment,
    plot_exposure_bias,
)
from tests.messages import raises

matplotlib.use("Agg")


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


# -- the dates task ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("year", "style", "words"),
    [
        (1914, 0, "nineteen fourteen"),
        (1905, 0, "nineteen oh five"),
        (1800, 0, "eighteen hundred"),
        (2000, 0, "two thousand"),
        (2000, 1, "two thousand"),
        (2007, 1, "two thousand and seven"),
        (2019, 2, "twenty nineteen"),
        (2019, 0, "two thousand nineteen"),
        (1700, 0, "seventeen hundred"),
    ],
)
def test_years_read_as_spoken(year, style, words):
    assert year_in_words(year, style) == words.split()


def test_days_are_ordinals_and_out_of_range_values_are_refused():
    assert [" ".join(day_in_words(d)) for d in (1, 2, 3, 13, 20, 21, 30, 31)] == [
        "first", "second", "third", "thirteenth", "twentieth", "twenty first", "thirtieth",
        "thirty first",
    ]  # fmt: skip
    with pytest.raises(ValueError, match="1 to 31"):
        day_in_words(32)
    with pytest.raises(ValueError, match="years run from 1700 to 2099"):
        year_in_words(2100)


def test_a_date_in_words_carries_its_true_weekday():
    words = date_in_words(datetime.date(1914, 7, 13), "w d m y")
    assert words == "monday thirteenth july nineteen fourteen".split()
    with pytest.raises(KeyError, match="unknown template"):
        date_in_words(datetime.date(1914, 7, 13), "y m d")


def test_splits_are_reproducible_and_disjoint():
    task = DateTask()
    train = task.sample(3000, "train", seed=0)
    assert train == task.sample(3000, "train", seed=0)
    assert train != task.sample(3000, "train", seed=1)
    test, forms = task.sample(500, "test"), task.sample(500, "forms")
    train_dates = {iso for _, iso in train}
    assert not train_dates & {iso for _, iso in test + forms}, "held-out dates leaked into train"
    # Held-out forms: neither the first words' order nor the length pattern of a seen form.
    seen = {TEMPLATES[t] for t in task.templates("train")}
    assert all(TEMPLATES[t] not in seen for t in HELDOUT_TEMPLATES)
    assert task.templates("forms") == list(HELDOUT_TEMPLATES)
    with pytest.raises(ValueError, match="split is one of"):
        task.sample(1, "valid")


def test_every_sample_decodes_to_its_own_date():
    task = DateTask()
    months = "january february march april may june july august september october november december"
    for words, iso in task.sample(300, "train", seed=3):
        date = datetime.date.fromisoformat(iso)
        assert months.split()[date.month - 1] in words
        assert " ".join(day_in_words(date.day)) in " ".join(words)


def test_number_words_stable_hash_and_the_shared_task_base():
    assert [" ".join(number_words(n)) for n in (0, 9, 13, 40, 42)] == [
        "zero", "nine", "thirteen", "forty", "forty two",
    ]  # fmt: skip
    assert stable_hash("1914-07-13") == stable_hash("1914-07-13") != stable_hash("1914-07-14")
    assert stable_hash("x") == 3274422879871479876  # the same on every machine and run
    assert isinstance(DateTask(), WordsToCharacters) and isinstance(NumberTask(), WordsToCharacters)
    with pytest.raises(NotImplementedError):
        WordsToCharacters(["a"], "b").sample(1)


def test_date_sources_vary_in_length():
    lengths = [len(w) for w, _ in DateTask().sample(2000)]
    assert min(lengths) <= 5 and max(lengths) >= 13


@pytest.mark.parametrize(
    ("n", "words"),
    [
        (7, "seven"),
        (15, "fifteen"),
        (100, "one hundred"),
        (101, "one hundred and one"),
        (1005, "one thousand and five"),
        (21000, "twenty one thousand"),
        (100100, "one hundred thousand one hundred"),
        (498055, "four hundred and ninety eight thousand and fifty five"),
        (999999, "nine hundred and ninety nine thousand nine hundred and ninety nine"),
    ],
)
def test_numbers_read_as_spoken(n, words):
    assert in_words(n) == words.split()


def test_numbers_task_holds_out_numbers_and_spreads_lengths():
    task = NumberTask()
    train, test = task.sample(3000, "train"), task.sample(1000, "test")
    assert not {t for _, t in train} & {t for _, t in test}
    assert {len(t) for _, t in train} == {1, 2, 3, 4, 5, 6}
    assert all(int(t) >= 1 and in_words(int(t)) == w for w, t in train[:200])
    assert max(len(w) for w, _ in train) == 11
    with raises(ValueError, "split", "'test'", "'forms'"):
        task.sample(1, "forms")
    with pytest.raises(ValueError, match="numbers run from 1 to 999,999"):
        in_words(0)


def test_sort_task_sorts_holds_out_sources_and_spreads_lengths():
    task = SortTask()
    train, test = task.sample(3000, "train"), task.sample(1000, "test")
    assert not {" ".join(w) for w, _ in train} & {" ".join(w) for w, _ in test}
    assert {len(w) for w, _ in train} == set(range(5, 31))
    for words, target in train[:200]:
        digits = "".join(str(ONES.index(word)) for word in words)
        assert target == "".join(sorted(digits)) and len(target) == len(words)
    assert task.sample(5, "test", seed=3) == task.sample(5, "test", seed=3)
    assert {len(w) for w, _ in SortTask(2, 3).sample(200)} == {2, 3}
    with pytest.raises(ValueError, match="shortest <= longest"):
        SortTask(6, 5)


def test_batches_pad_both_sides_and_encode_round_trip():
    for task in (DateTask(), NumberTask()):
        pairs = task.sample(16, seed=5)
        src, src_len, tgt = task.batch(pairs)
        assert src.shape == (16, int(src_len.max())) and src.dtype == torch.long
        for row, (words, target) in enumerate(pairs):
            assert src_len[row] == len(words)
            assert [task.source_vocab[i] for i in src[row, : len(words)]] == words
            assert (src[row, len(words) :] == task.pad_id).all()
            assert tgt[row, 0] == task.bos_id
            assert task.decode_target(tgt[row, 1:].tolist()) == target
            assert (tgt[row, len(target) + 2 :] == task.pad_id).all()
    task = DateTask()
    with pytest.raises(KeyError, match="outside the source vocabulary: \\['fortnight'\\]"):
        task.batch([(["fortnight"], "1914-07-13")])
    with pytest.raises(KeyError, match="outside the target vocabulary"):
        task.batch([(["first"], "1914/07/13")])
    with pytest.raises(ValueError, match="empty"):
        task.batch([])
    with pytest.raises(ValueError, match="n must be >= 0"):
        task.sample(-1)


# -- attention and the model ------------------------------------------------------------------


def test_masked_softmax_gives_padding_exactly_zero_and_rows_sum_to_one():
    scores = torch.tensor([[1000.0, 2.0, 50.0], [0.5, -1.0, 3.0]])
    mask = torch.tensor([[True, True, False], [True, False, False]])
    a = masked_softmax(scores, mask)
    assert a[0, 2] == 0 and a[1, 1] == 0 and a[1, 2] == 0
    torch.testing.assert_close(a.sum(-1), torch.ones(2))
    assert a[1, 0] == 1
    with pytest.raises(ValueError, match="at least one real position"):
        masked_softmax(scores, torch.zeros(2, 3, dtype=torch.bool))


@pytest.mark.parametrize("kind", SCORES)
def test_each_score_matches_its_formula_for_every_position(kind):
    torch.manual_seed(0)
    B, m, H = 3, 5, 4
    attn = Attention(kind, H, attn_dim=6, max_len=8).double()
    h, S = torch.randn(B, H, dtype=torch.float64), torch.randn(B, m, H, dtype=torch.float64)
    expected = torch.empty(B, m, dtype=torch.float64)
    for b, k in itertools.product(range(B), range(m)):
        hb, s = h[b], S[b, k]
        if kind == "dot":
            e = hb @ s
        elif kind == "scaled_dot":
            e = hb @ s / math.sqrt(H)
        elif kind == "bilinear":
            e = hb @ attn.W_a.weight @ s
        elif kind == "additive":
            e = attn.w_2.weight[0] @ torch.tanh(attn.W_1.weight @ torch.cat([hb, s]))
        elif kind == "cosine":
            e = hb @ s / (hb.norm() * s.norm())
        else:
            e = (attn.W_l.weight @ hb + attn.W_l.bias)[k]
        expected[b, k] = e
    torch.testing.assert_close(attn.scores(h, S), expected)
    lengths = torch.tensor([5, 2, 3])
    mask = torch.arange(m)[None] < lengths[:, None]
    c, a = attn(h, S, mask)
    torch.testing.assert_close(c, torch.einsum("bm,bmh->bh", a, S))
    assert (a[~mask] == 0).all()


def test_unknown_score_and_too_long_source_are_named():
    with pytest.raises(ValueError, match="unknown score 'luong'"):
        Attention("luong", 4)
    attn = Attention("location", 4, max_len=3)
    with pytest.raises(ValueError, match="addresses 3 positions, got 5"):
        attn.scores(torch.zeros(1, 4), torch.zeros(1, 5, 4))


@pytest.mark.parametrize("attention", [None, "dot", "additive"])
def test_padding_does_not_change_an_example(attention):
    """An example alone and the same example padded inside a batch decode to the same logits."""
    torch.manual_seed(1)
    task = DateTask()
    model = Seq2Seq(len(task.source_vocab), len(task.target_vocab), hidden=8, attention=attention)
    pairs = task.sample(4, seed=2)
    src, src_len, tgt = task.batch(pairs)
    logits, weights = model(src, src_len, tgt[:, :-1])
    assert logits.shape == (4, tgt.shape[1] - 1, len(task.target_vocab))
    for row in range(4):
        n = int(src_len[row])
        alone, _ = model(src[row : row + 1, :n], src_len[row : row + 1], tgt[row : row + 1, :-1])
        torch.testing.assert_close(alone[0], logits[row], atol=1e-6, rtol=1e-5)
        if attention is not None:
            assert (weights[row, :, n:] == 0).all()
    assert (weights is None) == (attention is None)


def test_model_rejects_bad_inputs_with_clear_errors():
    model = Seq2Seq(10, 6, hidden=4, attention="dot")
    src = torch.ones(2, 3, dtype=torch.long)
    with pytest.raises(ShapeMismatch, match="src_len"):
        model.encode(src, torch.tensor([3]))
    with pytest.raises(ValueError, match="src_len must be within 1..3"):
        model.encode(src, torch.tensor([3, 0]))
    with pytest.raises(ValueError, match="src"):
        model.encode(src * 10, torch.tensor([3, 3]))
    with pytest.raises(ValueError, match="unknown score"):
        Seq2Seq(10, 6, attention="cos")


def test_a_little_training_learns_dates_with_attention():
    torch.manual_seed(0)
    task = DateTask()
    model = Seq2Seq(len(task.source_vocab), len(task.target_vocab), hidden=32, attention="dot")
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    batches = task.batches(32, seed=0)
    first = None
    for _ in range(60):
        loss = model.loss(next(batches))
        first = first if first is not None else loss.item()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.5 * first


# -- decoding ---------------------------------------------------------------------------------


class TableModel:
    """A step function from a table: the log-probabilities depend on the whole prefix.

    The state is the prefix itself, one row per hypothesis (padded with -1), so beam search's
    reordering is exercised for real.
    """

    def __init__(self, vocab: int, seed: int, eos: int = 0, temperature: float = 1.0) -> None:
        self.vocab, self.eos, self.seed, self.temperature = vocab, eos, seed, temperature

    def log_probs(self, prefix: tuple[int, ...]) -> torch.Tensor:
        g = torch.Generator().manual_seed(hash((self.seed, prefix)) % 2**31)
        return (torch.randn(self.vocab, generator=g, dtype=torch.float64) * 2).log_softmax(-1)

    def step(self, tokens, state):
        prefixes = torch.cat([state, tokens[:, None]], 1)
        rows = [tuple(int(t) for t in row if t >= 0) for row in prefixes]
        return torch.stack([self.log_probs(r) for r in rows]), prefixes


def exhaustive(model: TableModel, bos: int, max_len: int, alpha: float) -> tuple[list[int], float]:
    """Every sequence of up to max_len tokens that ends at eos, or is cut at max_len."""
    best, best_score = None, -math.inf
    for n in range(1, max_len + 1):
        for seq in itertools.product(range(model.vocab), repeat=n):
            if model.eos in seq[:-1] or (n < max_len and seq[-1] != model.eos):
                continue
            lp = sum(float(model.log_probs((bos, *seq[:i]))[t]) for i, t in enumerate(seq))
            score = lp / n**alpha
            if score > best_score:
                best, best_score = list(seq), score
    return best, best_score


def start(batch: int) -> torch.Tensor:
    return torch.zeros(batch, 0, dtype=torch.long)


@pytest.mark.parametrize(("seed", "alpha"), [(0, 0.0), (1, 1.0), (2, 0.5), (3, 0.0)])
def test_a_wide_beam_finds_the_exhaustive_optimum(seed, alpha):
    model = TableModel(vocab=3, seed=seed)
    bos, max_len = 3, 4
    best, best_score = exhaustive(model, bos, max_len, alpha)
    (hyp,) = beam_search(
        model.step, start(1), batch_size=1, bos=bos, eos=0, beam_size=27, max_len=max_len,
        alpha=alpha,
    )  # fmt: skip
    assert hyp.tokens == best
    assert hyp.score == pytest.approx(best_score)


def test_beam_search_does_not_stop_when_unlikely_beams_finish_first():
    """A model sure of one long output: the other beams are unlikely prefixes that end at once.
    Stopping as soon as beam_size hypotheses have finished would return one of those."""
    eos, a = 0, 1  # token 2 is the unlikely alternative

    def step(tokens, prefixes):
        prefixes = torch.cat([prefixes, tokens[:, None]], 1)
        rows = []
        for row in prefixes.tolist():
            generated = row[1:]
            if all(t == a for t in generated):
                p = [0.97, 0.0, 0.03] if len(generated) == 5 else [0.01, 0.97, 0.02]
            else:
                p = [0.9, 0.05, 0.05]
            rows.append(p)
        return torch.tensor(rows, dtype=torch.float64).clamp_min(1e-12).log(), prefixes

    for alpha in (0.0, 1.0):
        (hyp,) = beam_search(step, start(1), batch_size=1, bos=3, eos=eos, beam_size=3,
                             max_len=10, alpha=alpha)  # fmt: skip
        assert hyp.tokens == [a] * 5 + [eos], alpha
        assert hyp.log_prob == pytest.approx(5 * math.log(0.97) + math.log(0.97))
    with pytest.raises(ValueError, match="alpha"):
        beam_search(step, start(1), batch_size=1, bos=3, eos=eos, beam_size=2, max_len=3, alpha=-1)


def test_beam_of_one_is_greedy_and_examples_are_independent_in_a_batch():
    models = [TableModel(vocab=4, seed=s) for s in range(3)]

    def step(tokens, state):  # example b uses model b; rows are b * k + j
        k = tokens.shape[0] // 3
        outs = [
            models[r // k].step(tokens[r : r + 1], state[r : r + 1])[0] for r in range(len(tokens))
        ]
        return torch.cat(outs), torch.cat([state, tokens[:, None]], 1)

    greedy = greedy_search(step, start(3), batch_size=3, bos=4, eos=0, max_len=6)
    beam1 = beam_search(step, start(3), batch_size=3, bos=4, eos=0, beam_size=1, max_len=6, alpha=0)
    assert [h.tokens for h in greedy] == [h.tokens for h in beam1]
    for h, g in zip(beam1, greedy, strict=True):
        assert h.log_prob == pytest.approx(g.log_prob)
    for b in range(3):
        (alone,) = beam_search(
            models[b].step, start(1), batch_size=1, bos=4, eos=0, beam_size=3, max_len=6
        )
        (together,) = [
            beam_search(step, start(3), batch_size=3, bos=4, eos=0, beam_size=3, max_len=6)[b]
        ]
        assert alone == together


def test_the_search_tree_where_greedy_misses_the_most_probable_output():
    # yes = 1, ok = 2, eos = 0: yes is likelier first, but "ok ok" is the likelier sentence.
    table = {
        (): [0.1, 0.5, 0.4],
        (1,): [0.3, 0.4, 0.3],
        (2,): [0.1, 0.2, 0.7],
        (1, 1): [1.0, 0.0, 0.0],
        (1, 2): [1.0, 0.0, 0.0],
        (2, 1): [1.0, 0.0, 0.0],
        (2, 2): [1.0, 0.0, 0.0],
    }

    def step(tokens, state):
        prefixes = torch.cat([state, tokens[:, None]], 1)
        rows = [tuple(int(t) for t in row[1:]) for row in prefixes]  # drop bos
        return torch.tensor([table[r] for r in rows]).log(), prefixes

    greedy = greedy_search(step, start(1), batch_size=1, bos=3, eos=0, max_len=3)[0]
    beam = beam_search(step, start(1), batch_size=1, bos=3, eos=0, beam_size=2, max_len=3, alpha=0)
    assert greedy.tokens == [1, 1, 0] and greedy.log_prob == pytest.approx(math.log(0.5 * 0.4))
    assert beam[0].tokens == [2, 2, 0] and beam[0].log_prob == pytest.approx(math.log(0.4 * 0.7))


def test_length_normalisation_changes_the_winner():
    # Stop now (p = .5) or go on: "1 1 1 </s>" has p = .5 * .8 * .8 = .32. Without
    # normalisation the short one wins (log .5 > log .32); per token, the long one does
    # (log .32 / 4 = -0.28 > log .5 / 1 = -0.69).
    table = {(): [0.5, 0.5], (1,): [0.2, 0.8], (1, 1): [0.2, 0.8], (1, 1, 1): [1.0, 0.0]}
    candidates = {(0,): 0.5, (1, 0): 0.1, (1, 1, 0): 0.08, (1, 1, 1, 0): 0.32}

    def step(tokens, state):
        prefixes = torch.cat([state, tokens[:, None]], 1)
        rows = [tuple(int(t) for t in row[1:]) for row in prefixes]
        return torch.tensor([table.get(r, [1.0, 0.0]) for r in rows]).log(), prefixes

    winners = {}
    for alpha in (0.0, 1.0):
        (hyp,) = beam_search(
            step, start(1), batch_size=1, bos=2, eos=0, beam_size=4, max_len=5, alpha=alpha
        )
        best = max(candidates, key=lambda s: math.log(candidates[s]) / len(s) ** alpha)
        assert tuple(hyp.tokens) == best
        assert hyp.score == pytest.approx(math.log(candidates[best]) / len(best) ** alpha)
        winners[alpha] = best
    assert winners == {0.0: (0,), 1.0: (1, 1, 1, 0)}


def test_max_len_cuts_unfinished_hypotheses_and_says_so():
    model = TableModel(vocab=3, seed=7, eos=99)  # eos never produced
    (hyp,) = beam_search(model.step, start(1), batch_size=1, bos=3, eos=99, beam_size=2, max_len=3)
    assert len(hyp.tokens) == 3 and not hyp.finished
    (g,) = greedy_search(model.step, start(1), batch_size=1, bos=3, eos=99, max_len=3)
    assert len(g.tokens) == 3 and not g.finished


def test_decoding_rejects_a_wrong_step_function_and_bad_sizes():
    def bad(tokens, state):
        return torch.zeros(len(tokens)), state

    with pytest.raises(ValueError, match="log-probabilities of shape \\(2, V\\)"):
        greedy_search(bad, start(2), batch_size=2, bos=0, eos=1, max_len=2)
    with raises(ValueError, "beam_size", ">= 1", "got 0"):
        beam_search(bad, start(1), batch_size=1, bos=0, eos=1, beam_size=0, max_len=2)
    with pytest.raises(TypeError, match="decoding state"):
        map_state({"h": 3}, lambda x: x)


def test_seq2seq_decodes_through_the_step_function_interface():
    torch.manual_seed(0)
    task = DateTask()
    model = Seq2Seq(len(task.source_vocab), len(task.target_vocab), hidden=8, attention="additive")
    src, src_len, _ = task.batch(task.sample(3, seed=1))
    hyps = beam_search(
        model.decode_step, model.start(src, src_len), batch_size=3, bos=task.bos_id,
        eos=task.eos_id, beam_size=3, max_len=12,
    )  # fmt: skip
    greedy = greedy_search(
        model.decode_step, model.start(src, src_len), batch_size=3, bos=task.bos_id,
        eos=task.eos_id, max_len=12,
    )  # fmt: skip
    assert all(isinstance(h, Hypothesis) for h in hyps)
    # The log-probability each search reports is the model's own: recompute it with teacher
    # forcing.
    for row, h in itertools.chain(enumerate(hyps), enumerate(greedy)):
        tgt = torch.tensor([[task.bos_id, *h.tokens]])
        logits, _ = model(
            src[row : row + 1, : int(src_len[row])], src_len[row : row + 1], tgt[:, :-1]
        )
        lp = logits.log_softmax(-1)[0].gather(1, tgt[0, 1:, None]).sum()
        assert lp.item() == pytest.approx(h.log_prob, abs=1e-4)


# -- measuring and drawing --------------------------------------------------------------------


class Oracle(Seq2Seq):
    """A "model" whose decode_step spells each source's true target (cheating on purpose), and
    gets one character wrong for sources of more than ``limit`` words."""

    def __init__(self, task, pairs, limit=100):
        super().__init__(len(task.source_vocab), len(task.target_vocab), hidden=4, attention="dot")
        self.answers = {tuple(w): task.encode_target(t)[1:] for w, t in pairs}
        self.task, self.limit = task, limit

    def start(self, src, src_len):
        rows = [
            tuple(self.task.source_vocab[i] for i in row[:n])
            for row, n in zip(src, src_len, strict=True)
        ]
        answers = [(self.answers[r] + [0] * 20)[:20] for r in rows]
        wrong = torch.tensor([len(r) > self.limit for r in rows])
        return {"answers": torch.tensor(answers), "t": torch.zeros(len(rows), dtype=torch.long),
                "wrong": wrong}  # fmt: skip

    def decode_step(self, y_prev, state):
        t = state["t"]
        token = state["answers"].gather(1, t[:, None])[:, 0]
        token = torch.where(state["wrong"] & (t == 0), (token - 3 + 1) % 10 + 3, token)
        log_probs = torch.full((len(t), len(self.task.target_vocab)), -30.0)
        log_probs[torch.arange(len(t)), token] = 0.0
        return log_probs, {**state, "t": t + 1}


def test_translate_and_exact_match_with_greedy_and_beam():
    task = NumberTask()
    pairs = task.sample(40, "test", seed=2)
    model = Oracle(task, pairs, limit=6)
    for beam in (1, 3):
        outputs = translate(model, task, pairs, beam_size=beam, batch_size=7)
        correct = exact_match(task, pairs, outputs)
        assert correct == [len(w) <= 6 for w, _ in pairs]
    by_length = accuracy_by(pairs, correct, key=lambda p: len(p[0]))
    assert all(acc == (1.0 if n <= 6 else 0.0) for n, (acc, _) in by_length.items())
    assert sum(count for _, count in by_length.values()) == 40
    with pytest.raises(ValueError, match="40 pairs but 39 outputs"):
        exact_match(task, pairs, outputs[:-1])


def test_exposure_bias_counts_first_errors_and_errors_after_errors():
    torch.manual_seed(0)
    task = NumberTask()
    model = Seq2Seq(len(task.source_vocab), len(task.target_vocab), hidden=8, attention=None)
    pairs = task.sample(50, "test", seed=1)
    report = exposure_bias(model, task, pairs)
    T = max(len(t) for _, t in pairs) + 1
    assert all(len(report[k]) == T for k in report)
    assert sum(report["first_error"]) <= 50
    # An untrained model is wrong almost everywhere: its first error is at position 0.
    outputs = translate(model, task, pairs, max_len=T)
    targets = [t for _, t in pairs]
    first_wrong = sum(
        task.decode_target(o.tokens)[:1] != t[:1] for o, t in zip(outputs, targets, strict=True)
    )
    assert report["first_error"][0] == first_wrong
    assert all(0 <= a <= 1 for a in report["teacher_forced"] + report["free_running"])
    assert report["error_after_error"][0] is None  # nothing comes before position 0


def test_attention_weights_of_an_output_and_the_figures():
    torch.manual_seed(0)
    task = DateTask()
    model = Seq2Seq(len(task.source_vocab), len(task.target_vocab), hidden=8, attention="additive")
    pair = task.sample(1, "test")[0]
    (out,) = translate(model, task, [pair])
    weights = attention_weights(model, task, pair, out)
    assert weights.shape == (len(out.tokens), len(pair[0]))
    torch.testing.assert_close(weights.sum(-1), torch.ones(len(out.tokens)))
    chars = [task.target_vocab[i] for i in out.tokens]
    fig = plot_alignment(pair[0], chars, weights.numpy())
    assert len(fig.axes[0].get_xticklabels()) == len(pair[0])
    with pytest.raises(ValueError, match="expected shape"):
        plot_alignment(pair[0], chars, weights.numpy().T)
    with pytest.raises(ValueError, match="has no attention"):
        attention_weights(Seq2Seq(90, 20, hidden=4, attention=None), task, pair, out)
    fig = plot_accuracy_by_length({"a": {3: (0.5, 30), 4: (1.0, 30), 5: (0.0, 2)}})
    assert list(fig.axes[0].lines[0].get_xdata()) == [
        3,
        4,
    ]  # the length with 2 examples is left out
    report = exposure_bias(model, task, task.sample(20, "test"))
    fig = plot_exposure_bias(report)
    assert len(fig.axes) == 2
    with pytest.raises(ValueError, match="missing 'free_running'"):
        plot_exposure_bias({"teacher_forced": [1.0]})
    widget = interact_alignment({"additive": [(pair[0], chars, weights.numpy())]})
    assert widget is not None
    with pytest.raises(ValueError, match="at least one scoring function"):
        interact_alignment({})
    plt.close("all")


def test_both_sorters_train_with_one_recipe_and_their_seeds_are_reproducible(capsys):
    task = SortTask()
    first, history = train_sorter("GRU + additive attention", task, seed=1, steps=3, progress=False)
    again, _ = train_sorter("GRU + additive attention", task, seed=1, steps=3, progress=False)
    assert history.steps == 3 and isinstance(first, Seq2Seq)
    for a, b in zip(first.parameters(), again.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)  # the same seed, the same weights
    tf, _ = train_sorter("Transformer (2+2 layers)", task, seed=1, steps=2, progress=False)
    assert isinstance(tf, Seq2SeqTransformer)
    figures = sorting_seeds((0, 1), steps=2, test_sources=8)
    assert set(figures) == set(SORTERS) and all(len(v) == 2 for v in figures.values())
    assert all(0.0 <= f <= 1.0 for v in figures.values() for f in v)
    assert "spread" in capsys.readouterr().out
