"""The visible tests of Assignment 7 (BERT's masking, WordPiece, next-sentence pairs, layer features).

Each test cell of the notebook calls one check with the student's functions, which run under
the rule of the part's hidden tests (:func:`course.checks.rules.by_hand`). Every function
here sets ``__tracebackhide__``: when a student's own code raises, IPython shows the cell's
call and the student's frames, not this module's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from course.checks import CheckFailed, assert_close, expect_value_error, inputs_kept
from course.checks.rules import by_hand

__all__ = ["check_part_a", "check_part_b", "check_part_c", "check_part_d"]

ASSIGNMENT = "a7_bert"


def check_part_a(mlm_mask: Callable[..., Any]) -> None:
    """Part A's visible test (mlm_mask)."""
    __tracebackhide__ = True

    def share_within_a(name: str, hits: int, trials: int, probability: float) -> None:
        """hits / trials must lie within 5 binomial standard deviations of probability."""
        __tracebackhide__ = True
        sd = np.sqrt(probability * (1 - probability) / trials)
        share = hits / trials
        if not (abs(share - probability) <= 5 * sd + 1e-12):
            raise CheckFailed(
                f"{name} is {share:.4f} ({hits:,} of {trials:,}), expected {probability:.4f} "
                f"± {5 * sd:.4f} (5 standard deviations): off by {share - probability:+.4f}"
            )

    rng_a = np.random.default_rng(2019)
    ids_a = np.zeros((300, 64), dtype=np.int64)  # [PAD] everywhere, then [CLS] text [SEP]
    for row_a, length_a in enumerate(rng_a.integers(10, 65, size=300)):
        ids_a[row_a, :length_a] = rng_a.integers(5, 1000, size=length_a)
        ids_a[row_a, 0], ids_a[row_a, length_a - 1] = 2, 3
    specials_a = [0, 1, 2, 3, 4]

    with inputs_kept("mlm_mask", ids=ids_a, special_ids=specials_a):
        result_a = by_hand(ASSIGNMENT, mlm_mask, ids_a, specials_a, 1000, 4, seed=7)
    if not (isinstance(result_a, tuple) and len(result_a) == 2):
        raise CheckFailed("mlm_mask should return the tuple (corrupted, labels)")
    corrupted_a, labels_a = result_a
    for name_a, array_a in (("corrupted", corrupted_a), ("labels", labels_a)):
        if not (isinstance(array_a, np.ndarray) and array_a.shape == ids_a.shape):
            raise CheckFailed(
                f"{name_a} should be a NumPy array of shape {ids_a.shape}, got {type(array_a).__name__} "
                f"of shape {np.shape(array_a)}"
            )
        if not (array_a.dtype == np.int64):
            raise CheckFailed(f"{name_a} should hold int64, got {array_a.dtype}")
    chosen_a = labels_a != -100
    assert_close(
        "labels at the selected positions", labels_a[chosen_a], ids_a[chosen_a], atol=0,
        against="the original ids",
    )  # fmt: skip
    assert_close(
        "corrupted at the positions that are not selected", corrupted_a[~chosen_a],
        ids_a[~chosen_a], atol=0, against="the original ids",
    )  # fmt: skip
    ordinary_a = ids_a >= 5
    wrong_a = np.argwhere(chosen_a & ~ordinary_a)
    if not (wrong_a.size == 0):
        raise CheckFailed(
            f"{len(wrong_a)} special or padding positions were selected, the first at "
            f"{wrong_a[0].tolist()} (id {ids_a[tuple(wrong_a[0])]})"
        )
    share_within_a(
        "the share of ordinary positions selected", chosen_a.sum(), ordinary_a.sum(), 0.15
    )
    n_chosen_a = int(chosen_a.sum())
    masked_a = chosen_a & (corrupted_a == 4)
    kept_a = chosen_a & (corrupted_a == ids_a)
    other_a = chosen_a & ~masked_a & ~kept_a
    share_within_a(
        "the share of selected positions showing [MASK]", masked_a.sum(), n_chosen_a, 0.8
    )
    share_within_a(
        "the share of selected positions showing another token", other_a.sum(), n_chosen_a,
        0.1 * (1 - 1 / 995),
    )  # fmt: skip
    share_within_a(
        "the share of selected positions unchanged", kept_a.sum(), n_chosen_a, 0.1 + 0.1 / 995
    )
    drawn_a = corrupted_a[other_a]
    if not (drawn_a.min() >= 5 and drawn_a.max() < 1000):
        raise CheckFailed(
            f"random tokens must be ordinary ids (5..999), got ids from {drawn_a.min()} to {drawn_a.max()}"
        )
    again_a = by_hand(ASSIGNMENT, mlm_mask, ids_a, specials_a, 1000, 4, seed=7)
    if not (np.array_equal(again_a[0], corrupted_a) and np.array_equal(again_a[1], labels_a)):
        raise CheckFailed("the same seed should give the same result")
    other_seed_a = by_hand(ASSIGNMENT, mlm_mask, ids_a, specials_a, 1000, 4, seed=8)
    if not (not np.array_equal(other_seed_a[1], labels_a)):
        raise CheckFailed("another seed should select other positions")

    # p = 0.4, half [MASK], 30% random tokens, 20% kept; a list as input
    corrupted_a2, labels_a2 = by_hand(
        ASSIGNMENT, mlm_mask, ids_a.tolist(), specials_a, 1000, 4, 11, 0.4, 0.5, 0.3
    )
    chosen_a2 = labels_a2 != -100
    n_chosen_a2 = int(chosen_a2.sum())
    share_within_a("with p = 0.4, the share selected", n_chosen_a2, ordinary_a.sum(), 0.4)
    share_within_a(
        "with shares (0.5, 0.3), the share showing [MASK]", (chosen_a2 & (corrupted_a2 == 4)).sum(),
        n_chosen_a2, 0.5,
    )  # fmt: skip
    share_within_a(
        "with shares (0.5, 0.3), the share unchanged", (chosen_a2 & (corrupted_a2 == ids_a)).sum(),
        n_chosen_a2, 0.2 + 0.3 / 995,
    )  # fmt: skip
    expect_value_error(
        {
            "mlm_mask(ids_a, specials_a, 500, 4, 0) (ids up to 999 in a vocabulary of 500)": lambda: (
                by_hand(ASSIGNMENT, mlm_mask, ids_a, specials_a, 500, 4, 0)
            ),
            "mlm_mask(ids_a, specials_a, 1000, 4, 0, p=0.0)": lambda: by_hand(
                ASSIGNMENT, mlm_mask, ids_a, specials_a, 1000, 4, 0, p=0.0
            ),
            "mlm_mask(ids_a, specials_a, 1000, 4, 0, mask_share=0.8, random_share=0.3)": lambda: (
                by_hand(
                    ASSIGNMENT,
                    mlm_mask,
                    ids_a,
                    specials_a,
                    1000,
                    4,
                    0,
                    mask_share=0.8,
                    random_share=0.3,
                )
            ),
            "mlm_mask(ids_a * 1.0, specials_a, 1000, 4, 0) (float ids)": lambda: by_hand(
                ASSIGNMENT, mlm_mask, ids_a * 1.0, specials_a, 1000, 4, 0
            ),
        }
    )
    print("Part A, visible test: passed.")


def check_part_b(wordpiece: Callable[..., Any]) -> None:
    """Part B's visible test (wordpiece)."""
    __tracebackhide__ = True
    vocab_b = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "unaff", "##aff", "##able",
               "##a", "##b", "##le", "play", "##ing", "##ed", "##s", "p", "##l", "##ay", "a",
               "ab", "##c", "##bc", "##bd"]  # fmt: skip

    def expect_pieces_b(word: str, expected: list[str], *options) -> None:
        """Compare wordpiece(word, vocab_b, *options) with the expected pieces."""
        __tracebackhide__ = True
        with inputs_kept("wordpiece", vocab=vocab_b):
            got = by_hand(ASSIGNMENT, wordpiece, word, vocab_b, *options)
        if not (isinstance(got, list)):
            raise CheckFailed(f"wordpiece should return a list, got {type(got).__name__}")
        said = f"wordpiece({word!r}{''.join(f', {o!r}' for o in options)})"
        if not (got == expected):
            raise CheckFailed(f"{said} is {got}, expected {expected}")

    expect_pieces_b("unaffable", ["unaff", "##able"])  # the longest first piece, "unaff"
    expect_pieces_b("playing", ["play", "##ing"])
    expect_pieces_b("plays", ["play", "##s"])
    expect_pieces_b("pl", ["p", "##l"])
    expect_pieces_b("play", ["play"])
    expect_pieces_b("abc", ["ab", "##c"])  # greedy: "ab" first, although "a" "##bc" also fits
    expect_pieces_b("abd", ["[UNK]"])  # "ab", then no "##d": although "a" "##bd" would fit
    expect_pieces_b("playx", ["[UNK]"])  # "x" is not covered: the whole word is unknown
    expect_pieces_b("xplay", ["[UNK]"])
    expect_pieces_b("playing", ["play", "##ing"], 7)  # 7 characters, at most 7: fine
    expect_pieces_b("playing", ["[UNK]"], 6)  # more than 6 characters
    vocab_b2 = ["<unk>", "low", "@@er", "@@est", "new", "@@e", "@@s", "@@t"]
    if not (
        by_hand(ASSIGNMENT, wordpiece, "lowest", vocab_b2, 100, "<unk>", "@@") == ["low", "@@est"]
    ):
        raise CheckFailed(
            f"with the prefix '@@': wordpiece('lowest') is {wordpiece('lowest', vocab_b2, 100, '<unk>', '@@')}, "
            "expected ['low', '@@est']"
        )
    if not (
        by_hand(ASSIGNMENT, wordpiece, "newest", vocab_b2, 100, "<unk>", "@@") == ["new", "@@est"]
    ):
        raise CheckFailed("with the prefix '@@': wordpiece('newest') should be ['new', '@@est']")
    if not (by_hand(ASSIGNMENT, wordpiece, "news", vocab_b2, 100, "<unk>", "@@") == ["new", "@@s"]):
        raise CheckFailed("with the prefix '@@': wordpiece('news') should be ['new', '@@s']")
    if not (by_hand(ASSIGNMENT, wordpiece, "lowly", vocab_b2, 100, "<unk>", "@@") == ["<unk>"]):
        raise CheckFailed("with the unknown token '<unk>': wordpiece('lowly') should be ['<unk>']")
    expect_value_error(
        {
            'wordpiece("two words", vocab_b)': lambda: by_hand(
                ASSIGNMENT, wordpiece, "two words", vocab_b
            ),
            'wordpiece("", vocab_b)': lambda: by_hand(ASSIGNMENT, wordpiece, "", vocab_b),
            'wordpiece("play", vocab_b2) (vocab_b2 has no "[UNK]")': lambda: by_hand(
                ASSIGNMENT, wordpiece, "play", vocab_b2
            ),
            'wordpiece("play", vocab_b, 0)': lambda: by_hand(
                ASSIGNMENT, wordpiece, "play", vocab_b, 0
            ),
        }
    )
    print("Part B, visible test: passed.")


def check_part_c(nsp_pairs: Callable[..., Any]) -> None:
    """Part C's visible test (nsp_pairs)."""
    __tracebackhide__ = True
    documents_c = [[f"doc {d}, sentence {s}." for s in range(5)] for d in range(40)]
    home_c = {s: (d, i) for d, doc in enumerate(documents_c) for i, s in enumerate(doc)}
    with inputs_kept("nsp_pairs", documents=documents_c) as before_c:
        pairs_c = by_hand(ASSIGNMENT, nsp_pairs, documents_c, seed=3)
    if not (isinstance(pairs_c, list)):
        raise CheckFailed(f"nsp_pairs should return a list, got {type(pairs_c).__name__}")
    if not (len(pairs_c) == 160):
        raise CheckFailed(f"expected 160 pairs (4 per document of 5 sentences), got {len(pairs_c)}")
    for k_c, pair_c in enumerate(pairs_c):
        if not (isinstance(pair_c, tuple) and len(pair_c) == 3):
            raise CheckFailed(f"pair {k_c} should be a tuple (a, b, is_next), got {pair_c!r}")
        a_c, b_c, next_c = pair_c
        if not (isinstance(next_c, (bool, np.bool_))):
            raise CheckFailed(f"pair {k_c}: is_next should be a bool, got {next_c!r}")
        expected_a_c = before_c["documents"][k_c // 4][k_c % 4]
        if not (a_c == expected_a_c):
            raise CheckFailed(f"pair {k_c}: a is {a_c!r}, expected {expected_a_c!r} (in order)")
        if b_c not in home_c:
            raise CheckFailed(f"pair {k_c}: b = {b_c!r} is no sentence of the documents")
        if next_c:
            if not (home_c[b_c] == (k_c // 4, k_c % 4 + 1)):
                raise CheckFailed(
                    f"pair {k_c} is marked is_next but b = {b_c!r} does not follow a = {a_c!r}"
                )
        else:
            if not (home_c[b_c][0] != k_c // 4):
                raise CheckFailed(
                    f"pair {k_c} is marked not next but b = {b_c!r} comes from a's own document"
                )
    share_c = np.mean([pair[2] for pair in pairs_c])
    if not (abs(share_c - 0.5) <= 5 * np.sqrt(0.25 / 160)):
        raise CheckFailed(
            f"the share of is_next pairs is {share_c:.3f}, expected 0.5 ± {5 * np.sqrt(0.25 / 160):.3f}"
        )
    if not (by_hand(ASSIGNMENT, nsp_pairs, documents_c, seed=3) == pairs_c):
        raise CheckFailed("the same seed should give the same pairs")
    if not (by_hand(ASSIGNMENT, nsp_pairs, documents_c, seed=4) != pairs_c):
        raise CheckFailed("another seed should give other pairs")
    all_next_c = by_hand(ASSIGNMENT, nsp_pairs, documents_c, 5, 1.0)
    if not (all(pair[2] for pair in all_next_c)):
        raise CheckFailed("with p_next = 1 every pair should be is_next")
    none_next_c = by_hand(
        ASSIGNMENT, nsp_pairs, documents_c[:2] + [[]], 5, 0.0
    )  # two documents and an empty one
    sources_c = [home_c[pair[1]][0] for pair in none_next_c]
    if not (sources_c == [1, 1, 1, 1, 0, 0, 0, 0] and not any(pair[2] for pair in none_next_c)):
        raise CheckFailed(
            "with p_next = 0 and documents 0 and 1 (and an empty one), every pair should be not next "
            f"with b from the other document: b came from documents {sources_c}"
        )
    expect_value_error(
        {
            'nsp_pairs("one long text", 0)': lambda: by_hand(
                ASSIGNMENT, nsp_pairs, "one long text", 0
            ),
            "nsp_pairs([documents_c[0], []], 0) (a single non-empty document)": lambda: by_hand(
                ASSIGNMENT, nsp_pairs, [documents_c[0], []], 0
            ),
            "nsp_pairs(documents_c, 0, p_next=1.5)": lambda: by_hand(
                ASSIGNMENT, nsp_pairs, documents_c, 0, p_next=1.5
            ),
        }
    )
    print("Part C, visible test: passed.")


def check_part_d(layer_features: Callable[..., Any]) -> None:
    """Part D's visible test (layer_features)."""
    __tracebackhide__ = True
    states_d = (
        100.0 * np.arange(6)[:, None, None] + 10.0 * np.arange(2)[:, None] + np.arange(3)
    )  # (L+1, T, H) = (6, 2, 3)
    expected_d = {
        "first": [[0, 1, 2], [10, 11, 12]],
        "last": [[500, 501, 502], [510, 511, 512]],
        "sum_all": [[1500, 1505, 1510], [1550, 1555, 1560]],  # layers 1..5, not the embeddings
        "second_to_last": [[400, 401, 402], [410, 411, 412]],
        "sum_last_four": [[1400, 1404, 1408], [1440, 1444, 1448]],
        "concat_last_four": [
            [200, 201, 202, 300, 301, 302, 400, 401, 402, 500, 501, 502],
            [210, 211, 212, 310, 311, 312, 410, 411, 412, 510, 511, 512],
        ],
    }
    for strategy_d, wanted_d in expected_d.items():
        with inputs_kept("layer_features", hidden_states=states_d):
            got_d = by_hand(ASSIGNMENT, layer_features, states_d, strategy_d)
        if not (isinstance(got_d, np.ndarray)):
            raise CheckFailed(
                f"layer_features(..., {strategy_d!r}) should return a NumPy array, got {type(got_d)}"
            )
        assert_close(
            f"layer_features(states_d, {strategy_d!r})",
            got_d,
            wanted_d,
            atol=0,
            against="the expected features",
        )
        if not (not np.shares_memory(got_d, states_d)):
            raise CheckFailed(
                f"the {strategy_d!r} features are a view of the input: return a new array"
            )
    layers_d = list(states_d[:3])  # a list of arrays, as transformers returns them
    with inputs_kept("layer_features", hidden_states=layers_d) as before_d:
        last_d = by_hand(ASSIGNMENT, layer_features, layers_d, "last")
    assert_close(
        "the 'last' features of a list of arrays (as transformers returns them)",
        last_d, before_d["hidden_states"][2], atol=0,
    )  # fmt: skip
    assert_close(
        "the 'sum_all' features of a batch (L+1, B, T, H) = (6, 1, 2, 3)",
        by_hand(ASSIGNMENT, layer_features, states_d[:, None], "sum_all"), np.array(expected_d["sum_all"])[None], atol=0,
    )  # fmt: skip
    expect_value_error(
        {
            'layer_features(states_d, "middle") (no such strategy)': lambda: by_hand(
                ASSIGNMENT, layer_features, states_d, "middle"
            ),
            'layer_features(states_d[:4], "sum_last_four") (L = 3 layers)': lambda: by_hand(
                ASSIGNMENT, layer_features, states_d[:4], "sum_last_four"
            ),
            'layer_features(states_d[:1], "first") (the embeddings alone)': lambda: by_hand(
                ASSIGNMENT, layer_features, states_d[:1], "first"
            ),
        }
    )
    print("Part D, visible test: passed.")
