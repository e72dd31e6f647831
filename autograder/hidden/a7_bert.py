"""Hidden checks of Assignment 7: MLM masking, WordPiece with offsets, NSP pairs, a layer mix's gradient.

The hidden test cells of ``a7_bert`` call, at autograde time::

    check_mlm_mask(mlm_mask)
    check_wordpiece_offsets(wordpiece_offsets)
    check_nsp_pairs(nsp_pairs)
    check_layer_mix_backward(layer_mix_backward)

Random procedures (Parts A and C) are judged by statistics, never by one exact sequence of
random numbers, since a student may draw in any order: shares within ``Z`` binomial standard
deviations of their probabilities (the probability of a "random token" being the original
is accounted for), chi-squared tests at a level of about 1e-6 for uniform draws, the spread
of the number selected per sequence (a binomial count, not a fixed one), and exact
properties that hold whatever the draws (labels, special positions, consecutive pairs,
documents). Part B is compared with the ``tokenizers`` library (its WordPiece model behind
the BertPreTokenizer, and the Encoding's offsets), Part D with ``torch.autograd`` in float64,
both run *before* the student's function. Then each check makes sure that bad input raises
ValueError.

While a student's function runs, the routines that would do its work (``course.data.
bert_inputs``, ``course.data.wordpiece`` and ``course.models.bert`` by name, every public
callable of the ``course`` package except ``course.checks``, ``transformers``' MLM data
collators and BERT tokenisers, the ``tokenizers`` library's Tokenizer, WordPiece model and
pre-tokenisers, ``torch.bernoulli``, the softmaxes of torch and scipy, and autograd) are
replaced by traps that raise :class:`ShortcutUsed`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from autograder.hidden import shortcuts
from autograder.hidden.shortcuts import ShortcutUsed
from course.checks import assert_close
from course.checks import snapshot_inputs as _snapshot
from course.checks.a7_bert import expect_token_spans
from course.checks.cases import Case, expect_array
from course.checks.cases import describe as _describe
from course.checks.cases import expect_unchanged as _expect_unchanged
from course.checks.cases import strided as _strided
from course.checks.cases import unpack as _unpack
from course.checks.rules import RULES

__all__ = [
    "ShortcutUsed",
    "no_shortcuts",
    "shortcut_targets",
    "check_mlm_mask",
    "check_wordpiece_offsets",
    "check_nsp_pairs",
    "check_layer_mix_backward",
]

MASK_BY_HAND = "select and corrupt the positions by hand with NumPy"
SPLIT_BY_HAND = "match the longest pieces by hand"
PAIR_BY_HAND = "draw the pairs by hand with NumPy"
MIX_BY_HAND = "derive the gradient by hand with NumPy"
Z = 5.0  # binomial tolerances: a correct function fails one of them with odds below 1e-6
IGNORED = -100

# --------------------------------------------------------------------------------------------
# Traps
# --------------------------------------------------------------------------------------------

TRAPS = shortcuts.Traps(RULES["a7_bert"].library)
shortcut_targets, no_shortcuts, _call_by_hand = TRAPS.methods()


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


_expect_value_error = shortcuts.value_error_checker(_call_by_hand)


_call_valid = shortcuts.valid_caller(_call_by_hand)


def expect_share(name: str, hits: int, trials: int, probability: float) -> None:
    """hits of trials within Z binomial standard deviations of probability (exact at 0, 1)."""
    hits, trials = int(hits), int(trials)
    if trials == 0:
        return
    if probability in (0.0, 1.0):
        if hits != round(probability * trials):
            raise AssertionError(
                f"{name} is {hits:,} of {trials:,}, expected {round(probability * trials):,} "
                f"(probability {probability:g})"
            )
        return
    spread = Z * np.sqrt(probability * (1.0 - probability) / trials)
    fraction = hits / trials
    if abs(fraction - probability) > spread:
        raise AssertionError(
            f"{name} is {fraction:.4f} ({hits:,} of {trials:,}), expected {probability:.4f} ± "
            f"{spread:.4f} ({Z:g} standard deviations): off by {fraction - probability:+.4f}"
        )


def chi_squared_limit(dof: int) -> float:
    """The chi-squared value exceeded with probability about 1e-6 (Wilson–Hilferty)."""
    z = 4.75  # the standard normal's upper 1e-6 point
    return dof * (1.0 - 2.0 / (9.0 * dof) + z * np.sqrt(2.0 / (9.0 * dof))) ** 3


def expect_fit(name: str, observed: np.ndarray, expected: np.ndarray) -> None:
    """A chi-squared test of observed counts against expected counts (all expected > 0)."""
    observed, expected = np.asarray(observed, float), np.asarray(expected, float)
    statistic = float(np.sum((observed - expected) ** 2 / expected))
    limit = chi_squared_limit(len(expected) - 1)
    if statistic > limit:
        worst = int(np.argmax(np.abs(observed - expected) / np.sqrt(expected)))
        raise AssertionError(
            f"{name} is not as expected: chi-squared {statistic:.1f} over {len(expected) - 1} "
            f"degrees of freedom, above {limit:.1f} (probability about 1e-6); the largest gap "
            f"is at {worst}: {observed[worst]:.0f} observed, {expected[worst]:.1f} expected"
        )


# --------------------------------------------------------------------------------------------
# Part A: mlm_mask
# --------------------------------------------------------------------------------------------

BERT_SPECIALS = [0, 100, 101, 102, 103]  # [PAD], [UNK], [CLS], [SEP], [MASK] of bert-base


def _ordinary(vocab_size: int, specials: Sequence[int]) -> np.ndarray:
    return np.array(sorted(set(range(vocab_size)) - {int(s) for s in specials}))


def _framed_batch(
    rng: np.random.Generator, rows: int, width: int, ordinary: np.ndarray, frame: tuple
) -> np.ndarray:
    """Rows of [CLS] ordinary tokens [SEP] then [PAD], of random lengths 3..width."""
    pad, cls, sep = frame
    batch = np.full((rows, width), pad, dtype=np.int64)
    for row, size in enumerate(rng.integers(3, width + 1, size=rows)):
        batch[row, :size] = rng.choice(ordinary, size=size)
        batch[row, 0], batch[row, size - 1] = cls, sep
    return batch  # (rows, width)


def mlm_cases() -> list[Case]:
    """The hidden cases of mlm_mask: its arguments ids, special_ids, vocab_size, mask_id, seed,
    p, mask_share and random_share."""
    rng = np.random.default_rng(7101)
    bert = _framed_batch(rng, 200, 48, _ordinary(30522, BERT_SPECIALS), (0, 101, 102))
    bert[::7, 5] = 100  # a few [UNK] and [MASK] in the input: special, never selected
    bert[::11, 6] = 103
    odd_specials = [9, 0, 7]
    odd = rng.choice(_ordinary(50, odd_specials), size=(400, 40))
    odd[:, -3:] = 0  # padding
    odd[::3, 10] = 7
    small = _framed_batch(rng, 200, 30, _ordinary(20, [0, 1, 2, 3]), (0, 2, 3))
    one = np.where(rng.random((40, 25)) < 0.7, 5, rng.integers(0, 5, size=(40, 25)))
    only_special = rng.choice([0, 101, 102, 103], size=(5, 12))
    framed = _framed_batch(rng, 80, 20, _ordinary(300, [0, 1, 2, 3, 4]), (0, 2, 3))
    return [
        Case("BERT's numbering (specials 0, 100-103, |V| = 30522), a padded batch (200, 48)",
             ids=bert, special_ids=BERT_SPECIALS, vocab_size=30522, mask_id=103, seed=11, p=0.15,
             mask_share=0.8, random_share=0.1),
        Case("specials [9, 0, 7] not consecutive, |V| = 50, mask 9, p = 0.5, shares (0.6, 0.3)",
             ids=odd, special_ids=odd_specials, vocab_size=50, mask_id=9, seed=12, p=0.5,
             mask_share=0.6, random_share=0.3),
        Case("one long sequence (20,000 ids), p = 0.05",
             ids=rng.integers(5, 1000, size=20_000), special_ids=[0, 1, 2, 3, 4], vocab_size=1000,
             mask_id=4, seed=13, p=0.05, mask_share=0.8, random_share=0.1),
        Case("p = 1: every ordinary position is selected",
             ids=small, special_ids=[0, 1, 2, 3], vocab_size=20, mask_id=1, seed=14, p=1.0,
             mask_share=0.8, random_share=0.1),
        Case("shares (1, 0): every selected position shows [MASK]",
             ids=small, special_ids=[0, 1, 2, 3], vocab_size=20, mask_id=1, seed=15, p=0.3,
             mask_share=1.0, random_share=0.0),
        Case("shares (0, 1): every selected position shows a random token (|V| = 20, 16 ordinary)",
             ids=small, special_ids=[0, 1, 2, 3], vocab_size=20, mask_id=1, seed=16, p=0.6,
             mask_share=0.0, random_share=1.0),
        Case("shares (0, 0): selected positions keep their token",
             ids=small, special_ids=[0, 1, 2, 3], vocab_size=20, mask_id=1, seed=17, p=0.4,
             mask_share=0.0, random_share=0.0),
        Case("a vocabulary with one ordinary id (|V| = 6), shares (0.5, 0.5)",
             ids=one, special_ids=[0, 1, 2, 3, 4], vocab_size=6, mask_id=4, seed=18, p=0.5,
             mask_share=0.5, random_share=0.5),
        Case("only special tokens: nothing to select",
             ids=only_special, special_ids=BERT_SPECIALS, vocab_size=30522, mask_id=103, seed=19,
             p=0.15, mask_share=0.8, random_share=0.1),
        Case("int32 ids (80, 20), |V| = 300, the special ids listed in decreasing order",
             ids=framed.astype(np.int32), special_ids=[4, 3, 2, 1, 0], vocab_size=300, mask_id=4,
             seed=20, p=0.25, mask_share=0.7, random_share=0.2),
        Case("ids given as a list of lists, |V| = 300",
             ids=framed[:40].tolist(), special_ids=[0, 1, 2, 3, 4], vocab_size=300, mask_id=4,
             seed=21, p=0.3, mask_share=0.8, random_share=0.1),
    ]  # fmt: skip


def _judge_mlm(
    result: Any, ids: np.ndarray, specials: list[int], vocab_size: int, mask_id: int,
    p: float, mask_share: float, random_share: float,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Every property that holds whatever the draws, and every share within Z deviations."""
    corrupted, labels = _unpack(result, "mlm_mask", ("corrupted", "labels"))
    for name, array in (("corrupted", corrupted), ("labels", labels)):
        if not isinstance(array, np.ndarray) or array.shape != ids.shape:
            raise AssertionError(
                f"{name} should be a NumPy array of shape {ids.shape}, got {_describe(array)}"
            )
        if array.dtype != np.int64:
            raise AssertionError(f"{name} should hold int64, got dtype {array.dtype}")
    special = np.isin(ids, specials)
    chosen = labels != IGNORED
    if np.any(labels[chosen] != ids[chosen]):
        where = np.argwhere(chosen & (labels != ids))[0].tolist()
        raise AssertionError(
            f"labels is {labels[tuple(where)]} at {where}: a selected position's label must be "
            f"its original id {ids[tuple(where)]} (and {IGNORED} where not selected)"
        )
    if np.any(chosen & special):
        where = np.argwhere(chosen & special)[0].tolist()
        raise AssertionError(
            f"a special id was selected at {where} (id {ids[tuple(where)]}, specials {specials})"
        )
    if np.any(corrupted[~chosen] != ids[~chosen]):
        where = np.argwhere(~chosen & (corrupted != ids))[0].tolist()
        raise AssertionError(
            f"corrupted is {corrupted[tuple(where)]} at {where}, which is not selected (label "
            f"{IGNORED}): it must keep its id {ids[tuple(where)]}"
        )
    eligible = ~special
    expect_share("the share of ordinary positions selected", chosen.sum(), eligible.sum(), p)
    pool = _ordinary(vocab_size, specials)
    n = len(pool)
    masked = chosen & (corrupted == mask_id)
    kept = chosen & (corrupted == ids)
    other = chosen & ~masked & ~kept
    drawn = corrupted[other]
    if drawn.size and not np.isin(drawn, pool).all():
        bad = drawn[~np.isin(drawn, pool)][0]
        raise AssertionError(
            f"a random token is {bad}, which is not an ordinary id (0..{vocab_size - 1} "
            f"without the specials {specials})"
        )
    selected = int(chosen.sum())
    expect_share("the share of selected positions showing [MASK]", masked.sum(), selected,
                 mask_share)  # fmt: skip
    expect_share(
        "the share of selected positions showing another token", other.sum(), selected,
        random_share * (1 - 1 / n),
    )  # fmt: skip
    expect_share(
        "the share of selected positions unchanged", kept.sum(), selected,
        1 - mask_share - random_share + random_share / n,
    )  # fmt: skip
    return corrupted, labels


def _expect_uniform_draws(ids: np.ndarray, corrupted: np.ndarray, labels: np.ndarray,
                          pool: np.ndarray, mask_id: int) -> None:  # fmt: skip
    """Random tokens that differ from the original: uniform over the other ordinary ids."""
    other = (labels != IGNORED) & (corrupted != ids) & (corrupted != mask_id)
    originals, drawn = ids[other], corrupted[other]
    index = {int(t): k for k, t in enumerate(pool)}
    observed = np.bincount([index[int(t)] for t in drawn], minlength=len(pool))
    excluded = np.bincount([index[int(t)] for t in originals], minlength=len(pool))
    expected = (len(drawn) - excluded) / (len(pool) - 1)  # each draw avoids its own original
    expect_fit("the distribution of the random tokens over the ordinary ids", observed, expected)


def _expect_binomial_rows(ids: np.ndarray, labels: np.ndarray, specials: list, p: float) -> None:
    """The number selected per row is binomial (n_row, p): standardised, its variance is 1."""
    eligible = (~np.isin(ids, specials)).sum(axis=1)
    chosen = (labels != IGNORED).sum(axis=1)
    scores = (chosen - eligible * p) / np.sqrt(eligible * p * (1 - p))
    variance = float(np.mean(scores**2))
    if not 0.6 < variance < 1.6:
        raise AssertionError(
            f"the number of positions selected per sequence varies too {'little' if variance < 1 else 'much'}: "
            f"its variance is {variance:.2f} times the binomial one (n p (1 - p)); select each "
            "ordinary position independently with probability p"
        )


def check_mlm_mask(mlm_mask: Callable[..., Any]) -> None:
    """Hidden test of Part A: properties and statistics on unseen batches."""
    cases = mlm_cases()
    for case in cases:
        ids, specials, vocab_size, mask_id = (
            case.ids,
            case.special_ids,
            case.vocab_size,
            case.mask_id,
        )
        seed, p, m, r = case.seed, case.p, case.mask_share, case.random_share
        array = np.asarray(ids)
        args = (ids, specials, vocab_size, mask_id, seed, p, m, r)
        inputs = {"ids": array if isinstance(ids, np.ndarray) else ids, "special_ids": specials}
        before = _snapshot(inputs)
        with case.named("mlm_mask"):
            result = _call_valid(mlm_mask, MASK_BY_HAND, *args)
            _expect_unchanged("mlm_mask", inputs, before)
            corrupted, labels = _judge_mlm(result, array, specials, vocab_size, mask_id, p, m, r)
            again = _unpack(_call_valid(mlm_mask, MASK_BY_HAND, *args), "mlm_mask", ("c", "l"))
            if not (np.array_equal(again[0], corrupted) and np.array_equal(again[1], labels)):
                raise AssertionError("the same seed gave another result")
            if case.label.startswith("specials [9, 0, 7]"):
                pool = _ordinary(vocab_size, specials)
                _expect_uniform_draws(array, corrupted, labels, pool, mask_id)
                _expect_binomial_rows(array, labels, specials, p)
                other = _call_valid(mlm_mask, MASK_BY_HAND, ids, specials, vocab_size, mask_id,
                                    seed + 1, p, m, r)  # fmt: skip
                if np.array_equal(_unpack(other, "mlm_mask", ("c", "l"))[1], labels):
                    raise AssertionError(f"seeds {seed} and {seed + 1} selected the same positions")

    rng = np.random.default_rng(7102)
    ids = rng.integers(5, 40, size=(3, 8))
    base = ([0, 1, 2, 3, 4], 40, 4, 0)
    bad_calls = [
        ("float ids", ids * 1.0, *base),
        ("boolean ids", ids > 20, *base),
        ("an id of -1", np.where(ids == ids[0, 0], -1, ids), *base),
        ("an id equal to vocab_size (40)", np.where(ids == ids[0, 0], 40, ids), *base),
        ("a special id of 40 = vocab_size", ids, [0, 1, 40], 40, 0, 0),
        ("mask_id = 40 = vocab_size", ids, [0, 1, 2], 40, 40, 0),
        ("mask_id = -1", ids, [0, 1, 2], 40, -1, 0),
        ("p = 0", ids, *base, 0.0),
        ("p = -0.1", ids, *base, -0.1),
        ("p = 1.2", ids, *base, 1.2),
        ("mask_share = -0.1", ids, *base, 0.15, -0.1, 0.1),
        ("random_share = -0.2", ids, *base, 0.15, 0.8, -0.2),
        ("shares 0.7 + 0.4 > 1", ids, *base, 0.15, 0.7, 0.4),
        ("every id special (|V| = 3, specials [0, 1, 2])", np.array([[0, 1, 2]]), [0, 1, 2], 3, 2, 0),
    ]  # fmt: skip
    for description, *args in bad_calls:
        _expect_value_error(mlm_mask, MASK_BY_HAND, f"mlm_mask with {description}", *args)
    print(f"check_mlm_mask: all {len(cases) + len(bad_calls)} hidden cases passed.")


# --------------------------------------------------------------------------------------------
# Part B: wordpiece_offsets
# --------------------------------------------------------------------------------------------


def tokenizers_offsets(
    texts: Sequence[str], vocab: Sequence[str], max_chars: int, unk: str, prefix: str
) -> list[list[tuple[str, int, int]]]:
    """The tokenizers library: a Tokenizer with the WordPiece model and the BertPreTokenizer;
    each text's tokens with its Encoding.offsets (in characters)."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    tokenizer = Tokenizer(
        models.WordPiece(
            {token: i for i, token in enumerate(vocab)},
            unk_token=unk,
            max_input_chars_per_word=max_chars,
            continuing_subword_prefix=prefix,
        )
    )
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return [
        [(token, start, end) for token, (start, end) in zip(code.tokens, code.offsets, strict=True)]
        for code in tokenizer.encode_batch(list(texts))
    ]


def _random_vocabulary(
    rng: np.random.Generator, alphabet: str, size: int, prefix: str, unk: str
) -> list[str]:
    """unk, most single characters (with and without the prefix), then random pieces."""
    tokens = [unk] + [ch for ch in alphabet if rng.random() < 0.9]
    tokens += [prefix + ch for ch in alphabet if rng.random() < 0.8]
    while len(tokens) < size:
        piece = "".join(rng.choice(list(alphabet), size=rng.integers(2, 6)))
        candidate = prefix + piece if rng.random() < 0.5 else piece
        if candidate not in tokens:
            tokens.append(candidate)
    return tokens  # unk first, then the alphabet and the pieces


def _random_texts(
    rng: np.random.Generator, letters: str, marks: str, count: int, longest: int
) -> list[str]:
    """Texts of letters, with spaces, tabs, newlines and punctuation marks among them."""
    spaces = "    \t\n"
    weights = [0.75] * len(letters) + [0.15] * len(spaces) + [0.1] * len(marks)
    weights = np.array(weights) / sum(weights)
    every = list(letters + spaces + marks)
    return ["".join(rng.choice(every, size=rng.integers(0, longest + 1), p=weights))
            for _ in range(count)]  # fmt: skip


def offsets_cases() -> list[Case]:
    """The hidden cases of wordpiece_offsets: texts, vocab, max_input_chars, unk_token and
    prefix."""
    rng = np.random.default_rng(7201)
    english = ["[PAD]", "[UNK]", "[CLS]", "re", "un", "do", "##do", "##ing", "##ne", "##able",
               "read", "##er", "##s", "##ers", "r", "##e", "##a", "##d", "u", "##n", "d",
               "##o", "b", "##r", "bread", "##i", "##g", ",", ".", "'", "!", "(", ")", ":", "-",
               "$", "5"]  # fmt: skip
    english_texts = ["Redoing, undone: readers' breads!", "unread (redone) doing?",
                     "rung bread-x x\tr\nundoable dread.", "redoing   undone", "$5 5$ re:do",
                     "readers", "unreadable readers"]  # fmt: skip
    greedy = ["[UNK]", "ab", "a", "##bc", "##b", "xyz", "x", "##yz", "##y", "##z", ","]
    greedy_texts = ["abc, ab abbc", "xyz xyzz,xyy abz", "a xbc"]
    accents = ["[UNK]", "caf", "##é", "naï", "##ve", "日本", "##語", "über", "##all", "c", "##a",
               "##f", "«", "»", "—", "¿", "?", "5", "##€", "€"]  # fmt: skip
    accent_texts = ["café, naïve «日本語» überall—cafés", "¿caf? 日本 語", "5€ € 5 €5",
                    "naïve—naïve»"]  # fmt: skip
    free = _random_vocabulary(rng, "abc", 40, "", "[UNK]") + [".", "!", "-"]
    return [
        Case("an English vocabulary, sentences with punctuation",
             texts=english_texts, vocab=english, max_input_chars=100, unk_token="[UNK]",
             prefix="##"),
        Case("an English vocabulary, max_input_chars = 6 (words of 6 and of 7 characters)",
             texts=english_texts, vocab=english, max_input_chars=6, unk_token="[UNK]",
             prefix="##"),
        Case("greedy matching fails although another split exists",
             texts=greedy_texts, vocab=greedy, max_input_chars=100, unk_token="[UNK]",
             prefix="##"),
        Case("a random vocabulary of 60 pieces over 'abc', 60 texts over 'abcd' with spaces, "
             "tabs, newlines and '.,!-', max 10",
             texts=_random_texts(rng, "abcd", ".,!-", 60, 40),
             vocab=_random_vocabulary(rng, "abc", 60, "##", "[UNK]") + [".", ","],
             max_input_chars=10, unk_token="[UNK]", prefix="##"),
        Case("a random vocabulary with the prefix '@@' and '<unk>', max 8",
             texts=_random_texts(rng, "xyz", "?;@", 40, 30),
             vocab=_random_vocabulary(rng, "xyz", 50, "@@", "<unk>") + ["?", "@"],
             max_input_chars=8, unk_token="<unk>", prefix="@@"),
        Case("no continuation prefix at all ('')",
             texts=_random_texts(rng, "abc", ".!-", 30, 30), vocab=free, max_input_chars=100,
             unk_token="[UNK]", prefix=""),
        Case("accented and Japanese characters, Unicode punctuation, '€' (a symbol)",
             texts=accent_texts, vocab=accents, max_input_chars=100, unk_token="[UNK]",
             prefix="##"),
        Case("accented characters, max_input_chars = 4",
             texts=accent_texts, vocab=accents, max_input_chars=4, unk_token="[UNK]",
             prefix="##"),
        Case("empty texts and texts of whitespace only",
             texts=["", "   ", "\t\n", "re", " \n re \t"], vocab=english, max_input_chars=100,
             unk_token="[UNK]", prefix="##"),
        Case("a vocabulary given as a tuple",
             texts=["undone readers z."], vocab=tuple(english), max_input_chars=100,
             unk_token="[UNK]", prefix="##"),
        Case("max_input_chars = 1",
             texts=["r b re d, r.."], vocab=english, max_input_chars=1, unk_token="[UNK]",
             prefix="##"),
    ]  # fmt: skip


def _judge_offsets(
    got: Any, texts: Sequence[str], expected: list[list[tuple[str, int, int]]], setting: str
) -> None:
    """The student's tokens and spans, text by text, against the tokenizers library's."""
    if not isinstance(got, list) or len(got) != len(texts):
        raise AssertionError(
            f"wordpiece_offsets should return a list of {len(texts)} lists, one per text, got "
            f"{_describe(got)}"
        )
    for row, (text, mine, theirs) in enumerate(zip(texts, got, expected, strict=True)):
        expect_token_spans(mine, f"text {row}")  # a CheckFailed is an AssertionError
        if mine != theirs:
            place = next(
                k for k in range(max(len(mine), len(theirs)))
                if k >= min(len(mine), len(theirs)) or mine[k] != theirs[k]
            )  # fmt: skip
            one = mine[place] if place < len(mine) else "nothing"
            other = theirs[place] if place < len(theirs) else "nothing"
            raise AssertionError(
                f"text {row} ({text!r}), token {place} is {one!r}, but the tokenizers library "
                f"gives {other!r} ({setting})"
            )


def check_wordpiece_offsets(wordpiece_offsets: Callable[..., Any]) -> None:
    """Hidden test of Part B: against the tokenizers library, batch by batch."""
    cases = offsets_cases()
    for case in cases:
        texts, vocab, prefix = case.texts, case.vocab, case.prefix
        max_chars, unk = case.max_input_chars, case.unk_token
        expected = tokenizers_offsets(texts, vocab, max_chars, unk, prefix)
        before = _snapshot({"texts": texts, "vocab": vocab})
        with case.named("wordpiece_offsets"):
            got = _call_valid(wordpiece_offsets, SPLIT_BY_HAND, texts, vocab, max_chars, unk,
                              prefix)  # fmt: skip
            _expect_unchanged("wordpiece_offsets", {"texts": texts, "vocab": vocab}, before)
            setting = f"max_input_chars={max_chars}, unk_token={unk!r}, prefix={prefix!r}"
            _judge_offsets(got, texts, expected, setting)

    vocab = ["[UNK]", "a", "##b", "."]
    bad_calls = [
        ("texts given as one string", "ab. ab", vocab, 100, "[UNK]", "##"),
        ("a text that is a number (12)", ["ab", 12], vocab, 100, "[UNK]", "##"),
        ("a text that is None", [None], vocab, 100, "[UNK]", "##"),
        ("a vocabulary without the unknown token '<unk>'", ["ab"], vocab, 100, "<unk>", "##"),
        ("max_input_chars = 0", ["ab"], vocab, 0, "[UNK]", "##"),
        ("max_input_chars = 2.5", ["ab"], vocab, 2.5, "[UNK]", "##"),
    ]
    for description, *args in bad_calls:
        _expect_value_error(
            wordpiece_offsets, SPLIT_BY_HAND, f"wordpiece_offsets with {description}", *args
        )
    print(f"check_wordpiece_offsets: all {len(cases) + len(bad_calls)} hidden cases passed.")


# --------------------------------------------------------------------------------------------
# Part C: nsp_pairs
# --------------------------------------------------------------------------------------------


def _documents(lengths: Sequence[int], tag: str) -> list[list[str]]:
    return [[f"{tag} {d}, line {s}." for s in range(n)] for d, n in enumerate(lengths)]


def nsp_cases() -> list[Case]:
    """The hidden cases of nsp_pairs: documents, seed and p_next."""
    rng = np.random.default_rng(7301)
    uneven = [int(n) for n in rng.integers(1, 90, size=30)] + [0, 0]
    uneven[3], uneven[17] = 1, 250  # a single sentence; one long document
    return [
        Case("32 documents of 0 to 250 sentences, p_next = 0.5",
             documents=_documents(uneven, "Text"), seed=21, p_next=0.5),
        Case("20 documents of 12 sentences, p_next = 0.2",
             documents=_documents([12] * 20, "Page"), seed=22, p_next=0.2),
        Case("p_next = 0: every pair random",
             documents=_documents([5, 1, 9, 0, 3], "Note"), seed=23, p_next=0.0),
        Case("p_next = 1: every pair consecutive",
             documents=_documents([6, 2, 7], "Item"), seed=24, p_next=1.0),
        Case("two documents, the other of one sentence, p_next = 0.5",
             documents=_documents([40, 1], "Part"), seed=25, p_next=0.5),
    ]  # fmt: skip


def _judge_pairs(result: Any, documents: list[list[str]], p_next: float) -> list[tuple]:
    """Pairs in order, is_next true to the documents, NotNext from elsewhere, the share."""
    home = {s: (d, i) for d, doc in enumerate(documents) for i, s in enumerate(doc)}
    wanted = [(d, i) for d, doc in enumerate(documents) for i in range(len(doc) - 1)]
    if not isinstance(result, list) or len(result) != len(wanted):
        raise AssertionError(
            f"nsp_pairs should return a list of {len(wanted)} pairs (one per sentence with a "
            f"successor), got {_describe(result)}"
        )
    for k, (pair, (d, i)) in enumerate(zip(result, wanted, strict=True)):
        if not isinstance(pair, tuple) or len(pair) != 3:
            raise AssertionError(f"pair {k} should be a tuple (a, b, is_next), got {pair!r}")
        a, b, is_next = pair
        if not isinstance(is_next, (bool, np.bool_)):
            raise AssertionError(f"pair {k}: is_next should be a bool, got {is_next!r}")
        if a != documents[d][i]:
            raise AssertionError(
                f"pair {k}: a is {a!r}, expected {documents[d][i]!r} (sentence {i} of document "
                f"{d}: pairs go document by document, sentence by sentence)"
            )
        if b not in home:
            raise AssertionError(f"pair {k}: b = {b!r} is no sentence of the documents")
        if is_next and home[b] != (d, i + 1):
            raise AssertionError(
                f"pair {k} is marked is_next, but b = {b!r} is not the sentence after a = {a!r}"
            )
        if not is_next and home[b][0] == d:
            raise AssertionError(
                f"pair {k} is marked not next, but b = {b!r} comes from a's own document {d}"
            )
    expect_share("the share of is_next pairs", sum(bool(t[2]) for t in result), len(result), p_next)
    return result


def _expect_uniform_choices(pairs: list[tuple], documents: list[list[str]]) -> None:
    """NotNext: the other document uniform among the non-empty others, then the sentence."""
    home = {s: (d, i) for d, doc in enumerate(documents) for i, s in enumerate(doc)}
    filled = [d for d, doc in enumerate(documents) if doc]
    column = {d: k for k, d in enumerate(filled)}
    observed, expected = np.zeros(len(filled)), np.zeros(len(filled))
    quarters_seen, quarters_expected = np.zeros(4), np.zeros(4)
    for a, b, is_next in pairs:
        if is_next:
            continue
        source, (target, index) = home[a][0], home[b]
        observed[column[target]] += 1
        for d in filled:
            if d != source:
                expected[column[d]] += 1 / (len(filled) - 1)
        size = len(documents[target])
        quarters_seen[4 * index // size] += 1
        quarters_expected += np.bincount(4 * np.arange(size) // size, minlength=4) / size
    expect_fit("the choice of the other document (uniform over the non-empty others)",
               observed, expected)  # fmt: skip
    kept = quarters_expected > 0
    expect_fit("the position of the random sentence in its document (quarters, uniform)",
               quarters_seen[kept], quarters_expected[kept])  # fmt: skip


def check_nsp_pairs(nsp_pairs: Callable[..., Any]) -> None:
    """Hidden test of Part C: the pairs' properties and the statistics of the draws."""
    cases = nsp_cases()
    for case in cases:
        documents, seed, p_next = case.documents, case.seed, case.p_next
        before = _snapshot({"documents": documents})
        with case.named("nsp_pairs"):
            result = _call_valid(nsp_pairs, PAIR_BY_HAND, documents, seed, p_next)
            _expect_unchanged("nsp_pairs", {"documents": documents}, before)
            pairs = _judge_pairs(result, documents, p_next)
            if _call_valid(nsp_pairs, PAIR_BY_HAND, documents, seed, p_next) != pairs:
                raise AssertionError("the same seed gave other pairs")
            if case.label.startswith("32 documents"):
                _expect_uniform_choices(pairs, documents)
                if _call_valid(nsp_pairs, PAIR_BY_HAND, documents, seed + 1, p_next) == pairs:
                    raise AssertionError(f"seeds {seed} and {seed + 1} gave the same pairs")

    two = _documents([3, 2], "Bad")
    bad_calls = [
        ("documents given as one string", "One text. Another sentence.", 0, 0.5),
        ("a document that is a string", [two[0], "Bad 1, line 0. Bad 1, line 1."], 0, 0.5),
        ("a sentence that is a number", [two[0], ["Bad 1, line 0.", 7]], 0, 0.5),
        ("a single document", two[:1], 0, 0.5),
        ("one non-empty document and two empty ones", [[], two[0], []], 0, 0.5),
        ("p_next = -0.1", two, 0, -0.1),
        ("p_next = 1.01", two, 0, 1.01),
    ]
    for description, *args in bad_calls:
        _expect_value_error(nsp_pairs, PAIR_BY_HAND, f"nsp_pairs with {description}", *args)
    print(f"check_nsp_pairs: all {len(cases) + len(bad_calls)} hidden cases passed.")


# --------------------------------------------------------------------------------------------
# Part D: layer_mix_backward
# --------------------------------------------------------------------------------------------


def autograd_mix(
    hidden_states: Any, w: Any, gamma: float, attention_mask: Any, grad_pooled: Any
) -> tuple[np.ndarray, np.ndarray, float]:
    """torch.autograd's (pooled, grad_w, grad_gamma), in float64: the mix and the masked mean
    written in torch, and loss = sum(G * pooled) pulled back by backward()."""
    import torch

    states = torch.tensor(np.array([np.asarray(h) for h in hidden_states], dtype=np.float64))
    real = torch.tensor(np.asarray(attention_mask)).bool()  # (B, T)
    weights = torch.tensor(np.asarray(w, dtype=np.float64), requires_grad=True)
    scale = torch.tensor(float(gamma), dtype=torch.float64, requires_grad=True)
    states = torch.where(real[None, :, :, None], states, torch.zeros((), dtype=torch.float64))
    mixed = scale * torch.einsum("j,jbth->bth", torch.softmax(weights, dim=0), states)
    pooled = (mixed * real[..., None]).sum(dim=1) / real.sum(dim=1, keepdim=True)  # (B, H)
    (pooled * torch.tensor(np.asarray(grad_pooled, dtype=np.float64))).sum().backward()
    return pooled.detach().numpy(), weights.grad.numpy(), float(scale.grad)


def _padded_mask(lengths: Sequence[int], width: int, left: bool = False) -> np.ndarray:
    """(B, T) of 0 and 1: each row's first (or, with left, last) `length` positions real."""
    positions = np.arange(width)[None, :]
    sizes = np.asarray(lengths)[:, None]
    return (positions >= width - sizes if left else positions < sizes).astype(np.int64)


def mix_cases() -> list[Case]:
    """The hidden cases of layer_mix_backward: hidden_states, w, gamma, attention_mask and
    grad_pooled."""
    rng = np.random.default_rng(7401)

    def case(label: str, depth: int, lengths: Sequence[int], width: int, size: int, **given):
        mask = given.pop("attention_mask", _padded_mask(lengths, width))
        states = given.pop("hidden_states", rng.normal(size=(depth, len(lengths), width, size)))
        return Case(
            label, hidden_states=states, w=given.pop("w", rng.normal(size=depth)),
            gamma=given.pop("gamma", float(rng.uniform(0.5, 2.0))), attention_mask=mask,
            grad_pooled=given.pop("grad_pooled", rng.normal(size=(len(lengths), size))),
        )  # fmt: skip

    nan_states = rng.normal(size=(5, 3, 6, 4))
    nan_states[:, _padded_mask([6, 2, 4], 6) == 0] = np.nan
    inf_states = rng.normal(size=(3, 2, 5, 3))
    inf_states[:, _padded_mask([3, 1], 5, left=True) == 0] = np.inf
    layers = [rng.normal(size=(2, 4, 3)) for _ in range(6)]
    return [
        case("L = 12 (BERT-base), B = 4, T = 9, H = 16, right padding", 13, [9, 5, 1, 7], 9, 16),
        case("L = 4, left padding (B, T, H) = (3, 6, 5)", 5, [2, 6, 4], 6, 5,
             attention_mask=_padded_mask([2, 6, 4], 6, left=True)),
        case("L = 1, one sentence without padding (1, 7, 3)", 2, [7], 7, 3),
        case("a single array of states (L = 0): s = (1,)", 1, [3, 2], 4, 3),
        case("sentences of one real token each (B, T, H) = (4, 5, 2)", 4, [1, 1, 1, 1], 5, 2,
             attention_mask=np.eye(4, 5, k=1, dtype=np.int64)),
        case("nan at the padding positions (5, 3, 6, 4)", 5, [6, 2, 4], 6, 4,
             hidden_states=nan_states),
        case("inf at the padding positions, left padding (3, 2, 5, 3)", 3, [3, 1], 5, 3,
             hidden_states=inf_states, attention_mask=_padded_mask([3, 1], 5, left=True)),
        case("weights of ±1000 (w = (1000, -1000, 999, 0))", 4, [4, 3], 4, 3,
             w=np.array([1000.0, -1000.0, 999.0, 0.0])),
        case("gamma = 0 (grad_w is 0, grad_gamma is not)", 4, [3, 5], 5, 4, gamma=0.0),
        case("gamma = -2.5", 3, [2, 3], 3, 2, gamma=-2.5),
        case("gamma given as the Python int 3", 3, [2, 3], 3, 2, gamma=3),
        case("a mask of booleans", 4, [5, 2, 3], 5, 3,
             attention_mask=_padded_mask([5, 2, 3], 5).astype(bool)),
        Case("a list of 6 arrays (B, T, H) = (2, 4, 3)", hidden_states=layers,
             w=rng.normal(size=6), gamma=1.1, attention_mask=_padded_mask([4, 2], 4),
             grad_pooled=rng.normal(size=(2, 3))),
        Case("a tuple of 6 arrays (2, 4, 3)", hidden_states=tuple(layers),
             w=rng.normal(size=6), gamma=0.9, attention_mask=_padded_mask([1, 3], 4),
             grad_pooled=rng.normal(size=(2, 3))),
        case("float32 states, weights and G", 4, [3, 4], 4, 3,
             hidden_states=rng.normal(size=(4, 2, 4, 3)).astype(np.float32),
             w=rng.normal(size=4).astype(np.float32),
             grad_pooled=rng.normal(size=(2, 3)).astype(np.float32)),
        case("integer states (4, 2, 3, 2)", 4, [3, 2], 3, 2,
             hidden_states=rng.integers(-9, 10, size=(4, 2, 3, 2))),
        case("non-contiguous states, weights and mask", 5, [4, 2], 4, 3,
             hidden_states=_strided(rng.normal(size=(5, 2, 4, 3))), w=_strided(rng.normal(size=5)),
             attention_mask=_strided(_padded_mask([4, 2], 4))),
    ]  # fmt: skip


def _mix_inputs(case: Case) -> dict[str, Any]:
    """The inputs that layer_mix_backward must leave unchanged, by name."""
    states = case.hidden_states
    named = {"hidden_states": states} if isinstance(states, np.ndarray) else {
        f"hidden_states[{k}]": h for k, h in enumerate(states)}  # fmt: skip
    return {**named, "w": case.w, "attention_mask": case.attention_mask,
            "grad_pooled": case.grad_pooled}  # fmt: skip


def check_layer_mix_backward(layer_mix_backward: Callable[..., Any]) -> None:
    """Hidden test of Part D: against torch.autograd, case by case."""
    cases = mix_cases()
    for case in cases:
        args = (case.hidden_states, case.w, case.gamma, case.attention_mask, case.grad_pooled)
        pooled, grad_w, grad_gamma = autograd_mix(*args)
        inputs = _mix_inputs(case)
        before = _snapshot(inputs)
        with case.named("layer_mix_backward"):
            result = _call_valid(layer_mix_backward, MIX_BY_HAND, *args)
            _expect_unchanged("layer_mix_backward", inputs, before)
            got_pooled, got_w, got_gamma = _unpack(
                result, "layer_mix_backward", ("pooled", "grad_w", "grad_gamma")
            )
            expect_array("pooled", got_pooled, pooled.shape, np.float64)
            expect_array("grad_w", got_w, grad_w.shape, np.float64)
            if not isinstance(got_gamma, float):
                raise AssertionError(f"grad_gamma should be a float, got {_describe(got_gamma)}")
            arrays = [h for h in inputs.values() if isinstance(h, np.ndarray)]
            if any(np.shares_memory(got_pooled, h) for h in arrays):
                raise AssertionError("pooled is a view of an input: return a new array")
            for name, got, wanted in (("pooled", got_pooled, pooled), ("grad_w", got_w, grad_w),
                                      ("grad_gamma", got_gamma, grad_gamma)):  # fmt: skip
                if not np.all(np.isfinite(got)):
                    where = np.argwhere(~np.isfinite(np.atleast_1d(got)))[0].tolist()
                    raise AssertionError(
                        f"{name} is {np.atleast_1d(got)[tuple(where)]} at {where}, where "
                        "torch.autograd gives a finite value (padding read, or exp overflowing?)"
                    )
                assert_close(name, got, wanted, atol=1e-8, rtol=1e-9, against="torch.autograd")

    rng = np.random.default_rng(7402)
    states, w, mask, grad = rng.normal(size=(3, 2, 4, 5)), rng.normal(size=3), _padded_mask(
        [4, 2], 4), rng.normal(size=(2, 5))  # fmt: skip
    uneven = [states[0], states[1][:, :3], states[2]]
    bad_calls = [
        ("states of shape (3, 4, 5) (no batch axis)", states[:, 0], w, 1.0, mask[:1], grad[:1]),
        ("a list of arrays of different shapes", uneven, w, 1.0, mask, grad),
        ("2 weights for 3 layers", states, w[:2], 1.0, mask, grad),
        ("weights of shape (3, 1)", states, w[:, None], 1.0, mask, grad),
        ("gamma = True", states, w, True, mask, grad),
        ("gamma = '1.0' (a string)", states, w, "1.0", mask, grad),
        ("gamma = [1.0] (a list)", states, w, [1.0], mask, grad),
        ("a mask of shape (2, 5)", states, w, 1.0, np.ones((2, 5), dtype=int), grad),
        ("a mask holding 2", states, w, 1.0, mask * 2, grad),
        ("a mask holding -1", states, w, 1.0, mask - (mask == 0), grad),
        ("a sentence with no real token", states, w, 1.0, np.array([[1, 1, 0, 0], [0] * 4]), grad),
        ("G of shape (2, 4)", states, w, 1.0, mask, grad[:, :4]),
        ("G of shape (5,)", states, w, 1.0, mask, grad[0]),
    ]  # fmt: skip
    for description, *args in bad_calls:
        _expect_value_error(
            layer_mix_backward, MIX_BY_HAND, f"layer_mix_backward with {description}", *args
        )
    print(f"check_layer_mix_backward: all {len(cases) + len(bad_calls)} hidden cases passed.")
