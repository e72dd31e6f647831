"""WordPiece (course.data.wordpiece): the likelihood merges, greedy tokenisation, `tokenizers`."""

from __future__ import annotations

from collections import Counter
from itertools import pairwise

import pytest

from course.data import english
from course.data.wordpiece import (
    PREFIX,
    SPECIAL_TOKENS,
    VocabularyComparison,
    WordPiece,
    compare_with_tokenizers,
    count_words,
    learn_wordpiece,
    pre_tokenize,
    segmentation_rates,
    tokenizers_tokenize,
    train_tokenizers_wordpiece,
)
from tests.messages import raises


@pytest.fixture(scope="module")
def sentences() -> dict[str, list[str]]:
    """A few thousand sentences of each split (Bible and Python docs), enough to be real."""
    out = {}
    for split, n in [("train", 60), ("val", 20)]:
        docs = english.load_prose(split, "web")[:n] + english.load_prose(split, "pydocs")[:n]
        out[split] = [s for d in docs for s in d.sentences]
    return out


def naive_merges(counts: dict[str, int], steps: int, min_pair_count: int = 1) -> list:
    """Recount everything from scratch before every merge: slow, obviously right."""
    words = {w: [w[0]] + [PREFIX + c for c in w[1:]] for w in counts}
    merges = []
    for _ in range(steps):
        symbols, pairs = Counter(), Counter()
        for w, pieces in words.items():
            for s in pieces:
                symbols[s] += counts[w]
            for p in pairwise(pieces):
                pairs[p] += counts[w]
        scored = [
            (-(n / (symbols[p[0]] * symbols[p[1]])), -n, p)
            for p, n in pairs.items()
            if n >= min_pair_count
        ]
        if not scored:
            break
        neg_score, _, (a, b) = min(scored)
        merges.append((a, b, -neg_score))
        for w, pieces in words.items():
            out, k = [], 0
            while k < len(pieces):
                if k + 1 < len(pieces) and (pieces[k], pieces[k + 1]) == (a, b):
                    out.append(a + b[2:])
                    k += 2
                else:
                    out.append(pieces[k])
                    k += 1
            words[w] = out
    return merges


def test_pre_tokenize_splits_on_spaces_and_punctuation():
    assert pre_tokenize("Don't panic, 42_x!") == [
        "don",
        "'",
        "t",
        "panic",
        ",",
        "42",
        "_",
        "x",
        "!",
    ]
    assert pre_tokenize("Ünïcode  Words", lowercase=False) == ["Ünïcode", "Words"]
    with pytest.raises(TypeError, match="text: expected a str"):
        pre_tokenize(["a list"])  # type: ignore[arg-type]


def test_count_words_counts_and_rejects_a_single_string():
    assert count_words(["a b a.", "b"]) == Counter({"a": 2, "b": 2, ".": 1})
    with pytest.raises(TypeError, match="iterable of strings"):
        count_words("one string")


def test_incremental_learning_equals_recounting_from_scratch(sentences):
    counts = dict(count_words(sentences["train"][:400]))
    for min_pair_count in (1, 5):
        learned = learn_wordpiece(counts, 10_000, min_pair_count=min_pair_count)
        expected = naive_merges(counts, 60, min_pair_count)
        assert learned.merges[:60] == expected


def test_the_rule_is_likelihood_not_frequency():
    # "x y" is rare but its parts never occur apart (score 1/3); "a b" is frequent, but a and b
    # are common on their own (score 10/(40*40)). Frequency would merge a b first.
    counts = {"xy": 3, "ab": 10, "aa": 15, "bb": 15}
    wp = learn_wordpiece(counts, len(SPECIAL_TOKENS) + 7)  # alphabet of 6 + 1 merge
    assert wp.merges[0][:2] == ("x", "##y")
    assert wp.merges[0][2] == pytest.approx(3 / (3 * 3))
    assert wp.vocab[-1] == "xy"


def test_vocabulary_layout_and_size(sentences):
    counts = count_words(sentences["train"])
    wp = learn_wordpiece(counts, 700, progress=True)
    assert len(wp) == 700 and wp.vocab[: len(SPECIAL_TOKENS)] == list(SPECIAL_TOKENS)
    alphabet = {w[0] for w in counts} | {PREFIX + c for w in counts for c in w[1:]}
    assert alphabet <= set(wp.vocab)
    assert [wp.token_to_id[t] for t in SPECIAL_TOKENS] == [0, 1, 2, 3, 4]
    assert len(wp.merges) >= 700 - len(SPECIAL_TOKENS) - len(alphabet)


def test_learning_stops_early_when_no_pair_is_frequent_enough():
    counts = {"ab": 5, "cd": 2}
    wp = learn_wordpiece(counts, 100, min_pair_count=3)
    assert wp.vocab[len(SPECIAL_TOKENS) :] == ["##b", "##d", "a", "c", "ab"]
    assert [m[:2] for m in wp.merges] == [("a", "##b")]
    assert len(learn_wordpiece(counts, 100)) == len(SPECIAL_TOKENS) + 6  # both pairs merge


def test_learning_errors():
    with raises(ValueError, "vocab_size=6", "smaller", "alphabet"):
        learn_wordpiece({"abc": 2}, 6)
    with raises(ValueError, "vocab_size", "positive int", "got 0"):
        learn_wordpiece({"abc": 2}, 0)
    with pytest.raises(ValueError, match="no spaces and counts"):
        learn_wordpiece({"a b": 2}, 50)
    with pytest.raises(ValueError, match="no spaces and counts"):
        learn_wordpiece({"ab": 0}, 50)


def test_greedy_longest_match_first_and_unknown_words():
    wp = WordPiece(["[UNK]", "un", "una", "##aff", "##able", "##a", "##ble", "a"], max_chars=8)
    assert wp.tokenize_word("unaffable") == ["[UNK]"]  # 9 characters > max_chars
    wp.max_chars = 100
    # Longest first: "una" is taken, then "##ff..." has no piece, so the whole word is [UNK]
    # (BERT does not back off to "un" + "##aff").
    assert wp.tokenize_word("unaffable") == ["[UNK]"]
    wp2 = WordPiece(["[UNK]", "un", "##aff", "##able", "##a", "##ble"])
    assert wp2.tokenize_word("unaffable") == ["un", "##aff", "##able"]
    assert wp2.tokenize_word("unable") == ["un", "##able"]
    assert wp2.tokenize_word("xun") == ["[UNK]"]
    assert wp2.tokenize("Unable, un") == ["un", "##able", "[UNK]", "un"]
    assert wp2.encode("unable") == [1, 3]
    assert wp2.tokenize("unable unable") == ["un", "##able"] * 2  # the second from memory
    wp2.max_chars = 5
    assert wp2.tokenize("unable") == ["[UNK]"]  # the memory knows the option changed
    assert wp2.decode([1, 2, 3, 1]) == "unaffable un"


def test_vocabulary_errors_and_files(tmp_path):
    with pytest.raises(ValueError, match="appears twice"):
        WordPiece(["[UNK]", "a", "a"])
    with pytest.raises(ValueError, match="unknown token"):
        WordPiece(["a", "b"])
    with pytest.raises(FileNotFoundError, match="no such vocabulary file"):
        WordPiece.load(tmp_path / "missing.txt")
    (tmp_path / "bad.txt").write_text("[UNK]\n\nb\n")
    with raises(ValueError, "bad.txt", "non-empty token"):
        WordPiece.load(tmp_path / "bad.txt")
    wp = WordPiece(["[PAD]", "[UNK]", "ab", "##c"])
    again = WordPiece.load(wp.save(tmp_path / "vocab.txt"))
    assert again.vocab == wp.vocab and again.tokenize("abc") == ["ab", "##c"]


def test_greedy_tokenisation_agrees_with_tokenizers_on_heldout_text(sentences):
    wp = learn_wordpiece(count_words(sentences["train"]), 800, min_pair_count=20)
    words = [w for s in sentences["val"] for w in pre_tokenize(s)]
    words += ["x" * 101, "ǂunknownǂ"]  # too long; a character never seen
    assert len(words) > 20_000
    theirs = tokenizers_tokenize(wp, words)
    ours = [wp.tokenize_word(w) for w in words]
    disagree = [(w, a, b) for w, a, b in zip(words, ours, theirs, strict=True) if a != b]
    assert not disagree, f"{len(disagree)} words differ, e.g. {disagree[:3]}"
    assert ["[UNK]"] in ours and any(len(p) > 1 for p in ours)
    with pytest.raises(ValueError, match="no whitespace"):
        tokenizers_tokenize(wp, ["two words"])


def test_tokenizers_trainer_and_the_comparison(sentences):
    counts = count_words(sentences["train"])
    theirs = train_tokenizers_wordpiece(counts, 600)
    assert len(theirs) == 600 and theirs.vocab[:5] == list(SPECIAL_TOKENS)
    # Its alphabet has every character as a word start too; ours only the forms seen.
    toy = train_tokenizers_wordpiece({"ab": 5, "xy": 1}, 20)
    assert toy.vocab[5:11] == ["##b", "##y", "a", "b", "x", "y"]
    assert learn_wordpiece({"ab": 5, "xy": 1}, 20).vocab[5:] == ["##b", "##y", "a", "x", "xy", "ab"]
    result = compare_with_tokenizers(sentences["train"], sentences["val"], 600, min_pair_count=1)
    assert isinstance(result, VocabularyComparison)
    # The trainer orders pairs of equal count differently from run to run; the set is stable.
    assert set(result.theirs.vocab) == set(theirs.vocab)
    assert set(result.only_ours) == set(result.ours.vocab) - set(theirs.vocab)
    assert set(result.only_theirs) == set(theirs.vocab) - set(result.ours.vocab)
    assert result.only_ours and result.only_theirs  # the two rules pick different pieces
    assert 1.0 <= result.tokens_per_word_theirs and 1.0 <= result.tokens_per_word_ours
    assert 0.0 <= result.unknown_ours < 0.05 and 0.0 <= result.unknown_theirs < 0.05
    assert "tokens per held-out word" in result.summary()
    with pytest.raises(ValueError, match="no words to measure on"):
        compare_with_tokenizers(sentences["train"][:50], [], 100)


def test_segmentation_rates_count_each_word_by_its_pieces_and_its_unknowns():
    wordpiece = WordPiece([*SPECIAL_TOKENS, "a", "b", "##b", "##a"])
    # "ab" -> a ##b (2), "ba" -> b ##a (2), "a" (1), "c" -> [UNK] (1)
    tokens, unknown = segmentation_rates(wordpiece, Counter({"ab": 3, "ba": 1, "a": 2, "c": 4}))
    assert tokens == pytest.approx((3 * 2 + 1 * 2 + 2 * 1 + 4 * 1) / 10)
    assert unknown == pytest.approx(4 / 10)
    with pytest.raises(ValueError, match="no words to measure on"):
        segmentation_rates(wordpiece, Counter())


def test_learning_does_not_depend_on_python_hash_order():
    import os
    import subprocess
    import sys

    program = (
        "from course.data import english\n"
        "from course.data.wordpiece import count_words, learn_wordpiece\n"
        "docs = english.load_prose('val', 'pydocs')[:20]\n"
        "wp = learn_wordpiece(count_words(s for d in docs for s in d.sentences), 600)\n"
        "print(repr(wp.merges))\n"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", program],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2")
    ]
    assert runs[0] == runs[1] and runs[0].startswith("[(")
