"""The visible tests of Assignment 7 (BERT's masking, WordPiece with offsets, next-sentence pairs, a layer mix's gradient).

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


def expect_token_spans(mine: Any, where: str) -> None:
    """One text's answer to Part B is a list of ``(token, start, end)`` tuples, the token a
    string and the span Python ints; ``where`` names the text. (The hidden checks use it too.)"""
    __tracebackhide__ = True
    if not isinstance(mine, list):
        raise CheckFailed(f"{where} should give a list, got {type(mine).__name__}")
    for place, token in enumerate(mine):
        if not (isinstance(token, tuple) and len(token) == 3 and isinstance(token[0], str)):
            raise CheckFailed(
                f"{where}, token {place} should be a tuple (token, start, end), got {token!r}"
            )
        if type(token[1]) is not int or type(token[2]) is not int:
            raise CheckFailed(
                f"{where}, token {place}: start and end should be Python ints, got "
                f"{type(token[1]).__name__} and {type(token[2]).__name__}"
            )


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


def check_part_b(wordpiece_offsets: Callable[..., Any]) -> None:
    """Part B's visible test (wordpiece_offsets)."""
    __tracebackhide__ = True
    vocab_b = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "un", "unaff", "##aff", "##able", "play",
               "##ing", "##ed", "##s", "a", "ab", "##c", "##bc", "##bd", "don", "'", "t", "!",
               "?", ",", "(", ")", "-", "re", "¿", "caf", "##é", "€5"]  # fmt: skip
    texts_b = ["unaffable (playing)!", "re-played plays, don't abd?", "  ¿café?\tab\nabc €5", ""]
    # the tokenizers library's tokens and Encoding.offsets on texts_b and vocab_b
    expected_b = [
        [("unaff", 0, 5), ("##able", 5, 9), ("(", 10, 11), ("play", 11, 15), ("##ing", 15, 18),
         (")", 18, 19), ("!", 19, 20)],
        [("re", 0, 2), ("-", 2, 3), ("play", 3, 7), ("##ed", 7, 9), ("play", 10, 14),
         ("##s", 14, 15), (",", 15, 16), ("don", 17, 20), ("'", 20, 21), ("t", 21, 22),
         ("[UNK]", 23, 26), ("?", 26, 27)],
        [("¿", 2, 3), ("caf", 3, 6), ("##é", 6, 7), ("?", 7, 8), ("ab", 9, 11), ("ab", 12, 14),
         ("##c", 14, 15), ("€5", 16, 18)],
        [],
    ]  # fmt: skip
    why_b = {
        (0, 0): "the longest first piece of 'unaffable' is 'unaff'",
        (0, 2): "'(' is punctuation: a word of its own",
        (1, 1): "'-' is punctuation: a word of its own",
        (1, 8): 'the apostrophe of "don\'t" is punctuation',
        (1, 10): "'abd' is one [UNK] over its whole word: 'ab', then no '##d' (greedy: no "
        "going back to 'a' '##bd')",
        (2, 0): "'¿' is punctuation (Unicode category Po), and leading spaces are dropped",
        (2, 2): "'##é' spans one character: the prefix is not in the text",
        (2, 4): "a tab separates words",
        (2, 7): "'€' is a symbol, not punctuation: '€5' is one word",
    }

    def expect_tokens_b(texts, vocab, expected, said, *options) -> None:
        """Compare wordpiece_offsets(texts, vocab, *options) with the expected tokens."""
        __tracebackhide__ = True
        with inputs_kept("wordpiece_offsets", texts=texts, vocab=vocab):
            got = by_hand(ASSIGNMENT, wordpiece_offsets, texts, vocab, *options)
        if not (isinstance(got, list) and len(got) == len(texts)):
            raise CheckFailed(
                f"wordpiece_offsets should return a list of {len(texts)} lists (one per text), "
                f"got {type(got).__name__} of length {len(got) if hasattr(got, '__len__') else '?'}"
            )
        for row, (mine, theirs) in enumerate(zip(got, expected, strict=True)):
            expect_token_spans(mine, f"{said}: text {row}")
            for place in range(max(len(mine), len(theirs))):
                one = mine[place] if place < len(mine) else "nothing"
                other = theirs[place] if place < len(theirs) else "nothing"
                if one != other:
                    hint = why_b.get((row, place), "") if not options else ""
                    raise CheckFailed(
                        f"{said}: text {row} ({texts[row]!r}), token {place} is {one!r}, "
                        f"expected {other!r}" + (f" ({hint})" if hint else "")
                    )

    expect_tokens_b(texts_b, vocab_b, expected_b, "wordpiece_offsets(texts_b, vocab_b)")
    limited_b = [list(row) for row in expected_b]
    limited_b[0] = [("[UNK]", 0, 9), ("(", 10, 11), ("[UNK]", 11, 18), (")", 18, 19), ("!", 19, 20)]
    expect_tokens_b(
        texts_b, vocab_b, limited_b, "with max_input_chars = 6 ('unaffable' and 'playing' are longer)", 6
    )  # fmt: skip
    vocab_b2 = ["<unk>", "low", "@@er", "@@est", "new", "@@e", "@@s", "@@t", "."]
    texts_b2 = ["lowest newest. news lowly", "new@@s"]
    expected_b2 = [
        [("low", 0, 3), ("@@est", 3, 6), ("new", 7, 10), ("@@est", 10, 13), (".", 13, 14),
         ("new", 15, 18), ("@@s", 18, 19), ("<unk>", 20, 25)],
        [("new", 0, 3), ("<unk>", 3, 4), ("<unk>", 4, 5), ("<unk>", 5, 6)],  # '@' is punctuation
    ]  # fmt: skip
    expect_tokens_b(
        texts_b2, vocab_b2, expected_b2, "with the prefix '@@' and the unknown token '<unk>'",
        100, "<unk>", "@@",
    )  # fmt: skip
    expect_value_error(
        {
            'wordpiece_offsets("one text", vocab_b) (a string, not a list of texts)': lambda: (
                by_hand(ASSIGNMENT, wordpiece_offsets, "one text", vocab_b)
            ),
            'wordpiece_offsets(["play", 7], vocab_b)': lambda: by_hand(
                ASSIGNMENT, wordpiece_offsets, ["play", 7], vocab_b
            ),
            'wordpiece_offsets(["play"], vocab_b2) (vocab_b2 has no "[UNK]")': lambda: by_hand(
                ASSIGNMENT, wordpiece_offsets, ["play"], vocab_b2
            ),
            'wordpiece_offsets(["play"], vocab_b, 0)': lambda: by_hand(
                ASSIGNMENT, wordpiece_offsets, ["play"], vocab_b, 0
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


def check_part_d(layer_mix_backward: Callable[..., Any]) -> None:
    """Part D's visible test (layer_mix_backward)."""
    __tracebackhide__ = True
    mask_d = np.array([[1, 1, 0], [1, 0, 0]])  # (B, T): two real tokens, then one
    states_d = (
        10.0 * np.arange(3)[:, None, None, None] ** 2
        + np.arange(3)[:, None]
        + np.arange(2)
        + np.zeros((3, 2, 3, 2))
    )  # (L+1, B, T, H) = (3, 2, 3, 2): h^(j)_{b,t,k} = 10 j^2 + t + k
    clean_d = states_d.copy()  # the same states with numbers at the padding positions
    states_d[:, mask_d == 0] = np.nan  # padding: must not be read
    w_d = np.array([0.0, np.log(2.0), 0.0])  # s = (1/4, 1/2, 1/4)
    grad_d = np.array([[1.0, 0.0], [0.0, 2.0]])  # G, (B, H)
    # torch.autograd's answers (float64) for these inputs and gamma = 2:
    expected_d = {
        "pooled": [[31.0, 33.0], [30.0, 32.0]],
        "grad_w": [-22.5, -15.0, 37.5],
        "grad_gamma": 47.5,
    }

    def unpack_d(result: Any, said: str) -> tuple[np.ndarray, np.ndarray, float]:
        __tracebackhide__ = True
        if not (isinstance(result, tuple) and len(result) == 3):
            raise CheckFailed(f"{said} should return the tuple (pooled, grad_w, grad_gamma)")
        pooled, grad_w, grad_gamma = result
        for name, array, shape in (("pooled", pooled, (2, 2)), ("grad_w", grad_w, (3,))):
            if not (isinstance(array, np.ndarray) and array.shape == shape):
                raise CheckFailed(
                    f"{said}: {name} should be a NumPy array of shape {shape}, got "
                    f"{type(array).__name__} of shape {np.shape(array)}"
                )
            if not (array.dtype == np.float64):
                raise CheckFailed(f"{said}: {name} should be float64, got {array.dtype}")
        if not (isinstance(grad_gamma, float)):
            raise CheckFailed(
                f"{said}: grad_gamma should be a Python float, got {type(grad_gamma).__name__}"
            )
        return pooled, grad_w, grad_gamma

    with inputs_kept(
        "layer_mix_backward", hidden_states=states_d, w=w_d, attention_mask=mask_d,
        grad_pooled=grad_d,
    ):  # fmt: skip
        result_d = by_hand(ASSIGNMENT, layer_mix_backward, states_d, w_d, 2.0, mask_d, grad_d)
    pooled_d, grad_w_d, grad_gamma_d = unpack_d(result_d, "layer_mix_backward(states_d, ...)")
    if not (np.isfinite(pooled_d).all()):
        raise CheckFailed(
            "pooled holds nan: the padding positions (nan in states_d) were read; leave them out "
            "of the mean (multiplying by a mask of 0 keeps nan: 0 * nan is nan)"
        )
    assert_close("pooled", pooled_d, expected_d["pooled"], atol=1e-9, against="torch.autograd")
    assert_close("grad_w", grad_w_d, expected_d["grad_w"], atol=1e-9, against="torch.autograd")
    assert_close(
        "grad_gamma", grad_gamma_d, expected_d["grad_gamma"], atol=1e-9, against="torch.autograd"
    )
    if not (not np.shares_memory(pooled_d, states_d)):
        raise CheckFailed("pooled is a view of the input: return a new array")
    assert_close(
        "pooled for a list of 3 arrays (B, T, H)",
        by_hand(ASSIGNMENT, layer_mix_backward, list(states_d), w_d, 2.0, mask_d == 1, grad_d)[0],
        expected_d["pooled"], atol=1e-9, against="torch.autograd",
    )  # fmt: skip
    huge_d = by_hand(
        ASSIGNMENT, layer_mix_backward, clean_d, np.array([1000.0, 0.0, -1000.0]), 2.0, mask_d,
        grad_d,
    )  # fmt: skip
    huge_pooled_d, huge_grad_w_d, huge_gamma_d = unpack_d(huge_d, "with w = (1000, 0, -1000)")
    if not (np.isfinite(huge_pooled_d).all() and np.isfinite(huge_grad_w_d).all()):
        raise CheckFailed(
            "with w = (1000, 0, -1000) the results are not finite: exp(1000) overflows; "
            "subtract max(w) before exponentiating"
        )
    assert_close(
        "pooled with w = (1000, 0, -1000) (s = (1, 0, 0): the embeddings alone)", huge_pooled_d,
        [[1.0, 3.0], [0.0, 2.0]], atol=1e-9, against="torch.autograd",
    )  # fmt: skip
    assert_close(
        "grad_w with w = (1000, 0, -1000) (a saturated softmax)", huge_grad_w_d, [0.0, 0.0, 0.0],
        atol=1e-9, against="torch.autograd",
    )  # fmt: skip
    assert_close("grad_gamma with w = (1000, 0, -1000)", huge_gamma_d, 2.5, atol=1e-9,
                 against="torch.autograd")  # fmt: skip
    rng_d = np.random.default_rng(7)
    total_d = by_hand(
        ASSIGNMENT, layer_mix_backward, rng_d.normal(size=(5, 3, 4, 6)), rng_d.normal(size=5),
        -0.7, np.ones((3, 4), dtype=int), rng_d.normal(size=(3, 6)),
    )[1].sum()  # fmt: skip
    if not (abs(total_d) < 1e-9):
        raise CheckFailed(
            f"the entries of grad_w add up to {total_d:.3g} on random inputs; they should add up "
            "to 0 (Part E asks why)"
        )
    expect_value_error(
        {
            "layer_mix_backward(clean_d, w_d, 2.0, [[1, 0, 0], [0, 0, 0]], grad_d) (a sentence "
            "with no real token)": lambda: by_hand(
                ASSIGNMENT,
                layer_mix_backward,
                clean_d,
                w_d,
                2.0,
                np.array([[1, 0, 0], [0, 0, 0]]),
                grad_d,
            ),
            "layer_mix_backward(clean_d, w_d[:2], 2.0, mask_d, grad_d) (2 weights for 3 layers)": (
                lambda: by_hand(
                    ASSIGNMENT, layer_mix_backward, clean_d, w_d[:2], 2.0, mask_d, grad_d
                )
            ),
            "layer_mix_backward(clean_d, w_d, True, mask_d, grad_d)": lambda: by_hand(
                ASSIGNMENT, layer_mix_backward, clean_d, w_d, True, mask_d, grad_d
            ),
            "layer_mix_backward(clean_d, w_d, 2.0, mask_d * 2, grad_d) (a mask of 0 and 2)": (
                lambda: by_hand(
                    ASSIGNMENT, layer_mix_backward, clean_d, w_d, 2.0, mask_d * 2, grad_d
                )
            ),
            "layer_mix_backward(clean_d, w_d, 2.0, mask_d, grad_d[:1]) (G of shape (1, 2))": (
                lambda: by_hand(
                    ASSIGNMENT, layer_mix_backward, clean_d, w_d, 2.0, mask_d, grad_d[:1]
                )  # fmt: skip
            ),
        }
    )
    print("Part D, visible test: passed.")
