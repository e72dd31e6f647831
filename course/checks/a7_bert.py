"""The visible tests of Assignment 7 (BERT's masking, WordPiece with offsets, next-sentence pairs, a layer mix's gradient).

The expected values are hard-coded (the tokenizers library's tokens, torch.autograd's gradients)
or, for the random draws, the expected shares, each checked within five binomial standard
deviations; ``options`` holds the optional arguments, given by position.

Written as every module of visible tests is (the package's docstring, :mod:`course.checks`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from course.checks import CheckFailed, assert_close, inputs_kept
from course.checks.cases import Case, describe, expect_array, expect_tuple
from course.checks.rules import by_hand, expect_refused

__all__ = ["check_part_a", "check_part_b", "check_part_c", "check_part_d"]

ASSIGNMENT = "a7_bert"


# -- what the checks share -------------------------------------------------------------------


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


def _share_within(name: str, hits: int, trials: int, probability: float) -> None:
    """hits / trials lies within 5 binomial standard deviations of probability."""
    __tracebackhide__ = True
    sd = np.sqrt(probability * (1 - probability) / trials)
    share = hits / trials
    if not (abs(share - probability) <= 5 * sd + 1e-12):
        raise CheckFailed(
            f"{name} is {share:.4f} ({hits:,} of {trials:,}), expected {probability:.4f} "
            f"± {5 * sd:.4f} (5 standard deviations): off by {share - probability:+.4f}"
        )


def _args(*args: Any, **kwargs: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The arguments of one call, for a table of bad inputs."""
    return args, kwargs


def _expect_rejected(function: Callable[..., Any], calls: dict[str, tuple]) -> None:
    """``function`` on each call's arguments (under the part's rule) raises ValueError."""
    __tracebackhide__ = True
    expect_refused(ASSIGNMENT, {said: (function, *call) for said, call in calls.items()})


# -- Part A: mlm_mask ------------------------------------------------------------------------


def part_a_cases() -> list[Case]:
    """Part A's cases: 300 rows of ids ([CLS] text [SEP], then [PAD]), specials 0 to 4 with
    [MASK] = 4, ordinary ids 5 to 999; ``options`` are p, mask_share and random_share. Expected:
    the share of ordinary positions selected, and the shares of the selected ones that show
    [MASK], another token or their own (a random token is the original with probability 1/995)."""
    rng = np.random.default_rng(2019)
    ids = np.zeros((300, 64), dtype=np.int64)  # [PAD] everywhere, then [CLS] text [SEP]
    for row, length in enumerate(rng.integers(10, 65, size=300)):
        ids[row, :length] = rng.integers(5, 1000, size=length)
        ids[row, 0], ids[row, length - 1] = 2, 3
    return [
        Case("300 rows, seed 7, the default p = 0.15 and shares (0.8, 0.1)", ids=ids,
             special_ids=[0, 1, 2, 3, 4], vocab_size=1000, mask_id=4, seed=7, options=(),
             expected_selected=0.15, expected_masked=0.8, expected_replaced=0.1 * (1 - 1 / 995),
             expected_unchanged=0.1 + 0.1 / 995),
        Case("the same rows as lists, seed 11, p = 0.4 and shares (0.5, 0.3)", ids=ids.tolist(),
             special_ids=[0, 1, 2, 3, 4], vocab_size=1000, mask_id=4, seed=11,
             options=(0.4, 0.5, 0.3), expected_selected=0.4, expected_masked=0.5,
             expected_replaced=0.3 * (1 - 1 / 995), expected_unchanged=0.2 + 0.3 / 995),
    ]  # fmt: skip


def part_a_bad_inputs() -> dict[str, tuple]:
    """Calls of mlm_mask that must raise ValueError."""
    ids, specials = part_a_cases()[0].ids, [0, 1, 2, 3, 4]
    return {
        "mlm_mask(ids, special_ids, 500, 4, 0) (ids up to 999 in a vocabulary of 500)":
            _args(ids, specials, 500, 4, 0),
        "mlm_mask(ids, special_ids, 1000, 4, 0, p=0.0)": _args(ids, specials, 1000, 4, 0, p=0.0),
        "mlm_mask(ids, special_ids, 1000, 4, 0, mask_share=0.8, random_share=0.3)":
            _args(ids, specials, 1000, 4, 0, mask_share=0.8, random_share=0.3),
        "mlm_mask(ids * 1.0, special_ids, 1000, 4, 0) (float ids)":
            _args(ids * 1.0, specials, 1000, 4, 0),
    }  # fmt: skip


def _expect_mlm_shares(case: Case, ids: np.ndarray, corrupted: np.ndarray, chosen: Any) -> None:
    """Only ordinary positions are selected, each share is within 5 standard deviations of the
    case's, and the random tokens are ordinary ids."""
    __tracebackhide__ = True
    ordinary = ~np.isin(ids, case.special_ids)
    wrong = np.argwhere(chosen & ~ordinary)
    if wrong.size:
        raise CheckFailed(
            f"{len(wrong)} special or padding positions were selected, the first at "
            f"{wrong[0].tolist()} (id {ids[tuple(wrong[0])]})"
        )
    n_chosen = int(chosen.sum())
    masked, kept = chosen & (corrupted == case.mask_id), chosen & (corrupted == ids)
    replaced = chosen & ~masked & ~kept
    selected = "the share of selected positions"
    _share_within("the share of ordinary positions selected", n_chosen, ordinary.sum(),
                  case.expected_selected)  # fmt: skip
    _share_within(f"{selected} showing [MASK]", masked.sum(), n_chosen, case.expected_masked)
    _share_within(f"{selected} showing another token", replaced.sum(), n_chosen,
                  case.expected_replaced)  # fmt: skip
    _share_within(f"{selected} unchanged", kept.sum(), n_chosen, case.expected_unchanged)
    drawn = corrupted[replaced]
    if np.isin(drawn, case.special_ids).any() or (drawn >= case.vocab_size).any():
        raise CheckFailed(
            f"random tokens must be ordinary ids ({max(case.special_ids) + 1}.."
            f"{case.vocab_size - 1}), got ids from {drawn.min()} to {drawn.max()}"
        )


def check_part_a(mlm_mask: Callable[..., Any]) -> None:
    """Part A's visible test (mlm_mask)."""
    __tracebackhide__ = True
    for case in part_a_cases():
        masking = functools.partial(
            by_hand, ASSIGNMENT, mlm_mask, case.ids, case.special_ids, case.vocab_size, case.mask_id
        )  # (seed, *options)
        with case.named("mlm_mask"):
            with inputs_kept("mlm_mask", ids=case.ids, special_ids=case.special_ids) as before:
                result = masking(case.seed, *case.options)
            corrupted, labels = expect_tuple(result, "mlm_mask", ("corrupted", "labels"))
            ids = np.asarray(before["ids"])
            for name, array in (("corrupted", corrupted), ("labels", labels)):
                expect_array(name, array, ids.shape, np.int64)
            chosen = labels != -100
            assert_close("labels at the selected positions", labels[chosen], ids[chosen], atol=0,
                         against="the original ids")  # fmt: skip
            assert_close("corrupted at the positions that are not selected", corrupted[~chosen],
                         ids[~chosen], atol=0, against="the original ids")  # fmt: skip
            _expect_mlm_shares(case, ids, corrupted, chosen)
            again = masking(case.seed, *case.options)
            if not (np.array_equal(again[0], corrupted) and np.array_equal(again[1], labels)):
                raise CheckFailed("the same seed should give the same result")
            if np.array_equal(masking(case.seed + 1, *case.options)[1], labels):
                raise CheckFailed("another seed should select other positions")
    _expect_rejected(mlm_mask, part_a_bad_inputs())
    print("Part A, visible test: passed.")


# -- Part B: wordpiece_offsets ---------------------------------------------------------------


def part_b_cases() -> list[Case]:
    """Part B's cases: texts, vocab and ``options`` (max_input_chars, unk_token, prefix), and
    the tokens with their character spans, the tokenizers library's (tokens and
    Encoding.offsets); ``hints`` say why, by (text, token)."""
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "un", "unaff", "##aff", "##able", "play",
             "##ing", "##ed", "##s", "a", "ab", "##c", "##bc", "##bd", "don", "'", "t", "!",
             "?", ",", "(", ")", "-", "re", "¿", "caf", "##é", "€5"]  # fmt: skip
    texts = ["unaffable (playing)!", "re-played plays, don't abd?", "  ¿café?\tab\nabc €5", ""]
    expected = [
        [("unaff", 0, 5), ("##able", 5, 9), ("(", 10, 11), ("play", 11, 15), ("##ing", 15, 18),
         (")", 18, 19), ("!", 19, 20)],
        [("re", 0, 2), ("-", 2, 3), ("play", 3, 7), ("##ed", 7, 9), ("play", 10, 14),
         ("##s", 14, 15), (",", 15, 16), ("don", 17, 20), ("'", 20, 21), ("t", 21, 22),
         ("[UNK]", 23, 26), ("?", 26, 27)],
        [("¿", 2, 3), ("caf", 3, 6), ("##é", 6, 7), ("?", 7, 8), ("ab", 9, 11), ("ab", 12, 14),
         ("##c", 14, 15), ("€5", 16, 18)],
        [],
    ]  # fmt: skip
    why = {
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
    limited = [
        [("[UNK]", 0, 9), ("(", 10, 11), ("[UNK]", 11, 18), (")", 18, 19), ("!", 19, 20)],
        *expected[1:],
    ]
    return [
        Case("four texts, the default options", texts=texts, vocab=vocab, options=(),
             expected_tokens=expected, hints=why),
        Case("max_input_chars = 6 ('unaffable' and 'playing' are longer)", texts=texts,
             vocab=vocab, options=(6,), expected_tokens=limited, hints={}),
        Case("the prefix '@@' and the unknown token '<unk>'",
             texts=["lowest newest. news lowly", "new@@s"],
             vocab=["<unk>", "low", "@@er", "@@est", "new", "@@e", "@@s", "@@t", "."],
             options=(100, "<unk>", "@@"), hints={}, expected_tokens=[
                 [("low", 0, 3), ("@@est", 3, 6), ("new", 7, 10), ("@@est", 10, 13), (".", 13, 14),
                  ("new", 15, 18), ("@@s", 18, 19), ("<unk>", 20, 25)],
                 [("new", 0, 3), ("<unk>", 3, 4), ("<unk>", 4, 5), ("<unk>", 5, 6)],  # '@' is punctuation
             ]),
    ]  # fmt: skip


def part_b_bad_inputs() -> dict[str, tuple]:
    """Calls of wordpiece_offsets that must raise ValueError."""
    cases = part_b_cases()
    vocab, vocab_at = cases[0].vocab, cases[2].vocab
    return {
        'wordpiece_offsets("one text", vocab) (a string, not a list of texts)':
            _args("one text", vocab),
        'wordpiece_offsets(["play", 7], vocab)': _args(["play", 7], vocab),
        'wordpiece_offsets(["play"], vocab_at) (vocab_at, the one with "@@", has no "[UNK]")':
            _args(["play"], vocab_at),
        'wordpiece_offsets(["play"], vocab, 0)': _args(["play"], vocab, 0),
    }  # fmt: skip


def _expect_tokens(mine: list, theirs: list, where: str, hints: dict[int, str]) -> None:
    """The tokens of one text are the expected ones; the first that is not is named."""
    __tracebackhide__ = True
    for place in range(max(len(mine), len(theirs))):
        one = mine[place] if place < len(mine) else "nothing"
        other = theirs[place] if place < len(theirs) else "nothing"
        if one != other:
            hint = f" ({hints[place]})" if place in hints else ""
            raise CheckFailed(f"{where}, token {place} is {one!r}, expected {other!r}{hint}")


def check_part_b(wordpiece_offsets: Callable[..., Any]) -> None:
    """Part B's visible test (wordpiece_offsets)."""
    __tracebackhide__ = True
    for case in part_b_cases():
        with case.named("wordpiece_offsets"):
            with inputs_kept("wordpiece_offsets", texts=case.texts, vocab=case.vocab):
                got = by_hand(ASSIGNMENT, wordpiece_offsets, case.texts, case.vocab, *case.options)
            if not (isinstance(got, list) and len(got) == len(case.texts)):
                raise CheckFailed(
                    f"wordpiece_offsets should return a list of {len(case.texts)} lists (one per "
                    f"text), got {describe(got)}"
                )
            for row, (mine, theirs) in enumerate(zip(got, case.expected_tokens, strict=True)):
                expect_token_spans(mine, f"text {row}")
                hints = {place: why for (text, place), why in case.hints.items() if text == row}
                _expect_tokens(mine, theirs, f"text {row} ({case.texts[row]!r})", hints)
    _expect_rejected(wordpiece_offsets, part_b_bad_inputs())
    print("Part B, visible test: passed.")


# -- Part C: nsp_pairs -----------------------------------------------------------------------


def part_c_cases() -> list[Case]:
    """Part C's cases: documents, seed and ``options`` (p_next), and the share of is_next
    pairs expected, within 5 binomial standard deviations."""
    documents = [[f"doc {d}, sentence {s}." for s in range(5)] for d in range(40)]
    return [
        Case("40 documents of 5 sentences, seed 3", documents=documents, seed=3, options=(),
             expected_next_share=0.5),
        Case("p_next = 1, seed 5", documents=documents, seed=5, options=(1.0,),
             expected_next_share=1.0),
        Case("p_next = 0, seed 5, documents 0 and 1 and an empty one",
             documents=documents[:2] + [[]], seed=5, options=(0.0,), expected_next_share=0.0),
    ]  # fmt: skip


def part_c_bad_inputs() -> dict[str, tuple]:
    """Calls of nsp_pairs that must raise ValueError."""
    documents = part_c_cases()[0].documents
    return {
        'nsp_pairs("one long text", 0)': _args("one long text", 0),
        "nsp_pairs([documents[0], []], 0) (a single non-empty document)":
            _args([documents[0], []], 0),
        "nsp_pairs(documents, 0, p_next=1.5)": _args(documents, 0, p_next=1.5),
    }  # fmt: skip


def _expect_pairs(pairs: Any, documents: list[list[str]]) -> None:
    """One pair (a, b, is_next) per sentence that has a next one, in order; b the next
    sentence when is_next, else a sentence of another document."""
    __tracebackhide__ = True
    if not isinstance(pairs, list):
        raise CheckFailed(f"nsp_pairs should return a list, got {type(pairs).__name__}")
    home = {s: (d, i) for d, doc in enumerate(documents) for i, s in enumerate(doc)}
    firsts = [(d, i) for d, doc in enumerate(documents) for i in range(len(doc) - 1)]
    if len(pairs) != len(firsts):
        raise CheckFailed(
            f"expected {len(firsts)} pairs (one per sentence that another follows in its "
            f"document), got {len(pairs)}"
        )
    for k, ((d, i), pair) in enumerate(zip(firsts, pairs, strict=True)):
        if not (isinstance(pair, tuple) and len(pair) == 3):
            raise CheckFailed(f"pair {k} should be a tuple (a, b, is_next), got {pair!r}")
        a, b, is_next = pair
        if not isinstance(is_next, (bool, np.bool_)):
            raise CheckFailed(f"pair {k}: is_next should be a bool, got {is_next!r}")
        if a != documents[d][i]:
            raise CheckFailed(f"pair {k}: a is {a!r}, expected {documents[d][i]!r} (in order)")
        if b not in home:
            raise CheckFailed(f"pair {k}: b = {b!r} is no sentence of the documents")
        if is_next and home[b] != (d, i + 1):
            raise CheckFailed(f"pair {k} is marked is_next but b = {b!r} does not follow a = {a!r}")
        if not is_next and home[b][0] == d:
            raise CheckFailed(
                f"pair {k} is marked not next but b = {b!r} comes from a's own document"
            )


def check_part_c(nsp_pairs: Callable[..., Any]) -> None:
    """Part C's visible test (nsp_pairs)."""
    __tracebackhide__ = True
    for case in part_c_cases():
        pairing = functools.partial(by_hand, ASSIGNMENT, nsp_pairs, case.documents)
        with case.named("nsp_pairs"):
            with inputs_kept("nsp_pairs", documents=case.documents) as before:
                pairs = pairing(case.seed, *case.options)
            _expect_pairs(pairs, before["documents"])
            p, share = case.expected_next_share, np.mean([pair[2] for pair in pairs])
            within = 5 * np.sqrt(p * (1 - p) / len(pairs))
            if not (abs(share - p) <= within):
                raise CheckFailed(
                    f"the share of is_next pairs is {share:.3f}, expected {p:g}"
                    + (f" ± {within:.3f}" if within else " exactly")
                )
            if pairing(case.seed, *case.options) != pairs:
                raise CheckFailed("the same seed should give the same pairs")
            if 0 < p < 1 and pairing(case.seed + 1, *case.options) == pairs:
                raise CheckFailed("another seed should give other pairs")
    _expect_rejected(nsp_pairs, part_c_bad_inputs())
    print("Part C, visible test: passed.")


# -- Part D: layer_mix_backward --------------------------------------------------------------


def part_d_cases() -> list[Case]:
    """Part D's cases: hidden_states, w, gamma, attention_mask and grad_pooled; torch.autograd's
    pooled, grad_w and grad_gamma (float64), and what a result that is not finite means. The
    random case has no expected values: its grad_w must add up to 0, as every case's must."""
    mask = np.array([[1, 1, 0], [1, 0, 0]])  # (B, T): two real tokens, then one
    clean = (
        10.0 * np.arange(3)[:, None, None, None] ** 2
        + np.arange(3)[:, None]
        + np.arange(2)
        + np.zeros((3, 2, 3, 2))
    )  # (L+1, B, T, H) = (3, 2, 3, 2): h^(j)_{b,t,k} = 10 j^2 + t + k
    states = clean.copy()
    states[:, mask == 0] = np.nan  # padding: must not be read
    w = np.array([0.0, np.log(2.0), 0.0])  # s = (1/4, 1/2, 1/4)
    grad = np.array([[1.0, 0.0], [0.0, 2.0]])  # G, (B, H)
    expected = {  # gamma = 2
        "expected_pooled": np.array([[31.0, 33.0], [30.0, 32.0]]),
        "expected_grad_w": np.array([-22.5, -15.0, 37.5]),
        "expected_grad_gamma": 47.5,
    }
    padding_read = (
        "the padding positions (nan in hidden_states) were read; leave them out of "
        "the mean (multiplying by a mask of 0 keeps nan: 0 * nan is nan)"
    )
    rng = np.random.default_rng(7)
    return [
        Case("nan at the padding positions", hidden_states=states, w=w, gamma=2.0,
             attention_mask=mask, grad_pooled=grad, **expected, if_not_finite=padding_read),
        Case("a list of 3 arrays (B, T, H) and a boolean mask", hidden_states=list(states), w=w,
             gamma=2.0, attention_mask=mask == 1, grad_pooled=grad, **expected,
             if_not_finite=padding_read),
        Case("w = (1000, 0, -1000): s = (1, 0, 0), a saturated softmax", hidden_states=clean,
             w=np.array([1000.0, 0.0, -1000.0]), gamma=2.0, attention_mask=mask,
             grad_pooled=grad, expected_pooled=np.array([[1.0, 3.0], [0.0, 2.0]]),
             expected_grad_w=np.zeros(3), expected_grad_gamma=2.5,
             if_not_finite="exp(1000) overflows; subtract max(w) before exponentiating"),
        Case("random inputs (L+1, B, T, H) = (5, 3, 4, 6), gamma = -0.7",
             hidden_states=rng.normal(size=(5, 3, 4, 6)), w=rng.normal(size=5), gamma=-0.7,
             attention_mask=np.ones((3, 4), dtype=int), grad_pooled=rng.normal(size=(3, 6)),
             if_not_finite=""),
    ]  # fmt: skip


def part_d_bad_inputs() -> dict[str, tuple]:
    """Calls of layer_mix_backward that must raise ValueError."""
    first, saturated = part_d_cases()[0], part_d_cases()[2]
    clean, w, mask, grad = saturated.hidden_states, first.w, first.attention_mask, first.grad_pooled
    return {
        "layer_mix_backward(clean, w, 2.0, [[1, 0, 0], [0, 0, 0]], grad) (a sentence with no "
        "real token)": _args(clean, w, 2.0, np.array([[1, 0, 0], [0, 0, 0]]), grad),
        "layer_mix_backward(clean, w[:2], 2.0, mask, grad) (2 weights for 3 layers)":
            _args(clean, w[:2], 2.0, mask, grad),
        "layer_mix_backward(clean, w, True, mask, grad)": _args(clean, w, True, mask, grad),
        "layer_mix_backward(clean, w, 2.0, mask * 2, grad) (a mask of 0 and 2)":
            _args(clean, w, 2.0, mask * 2, grad),
        "layer_mix_backward(clean, w, 2.0, mask, grad[:1]) (G of shape (1, 2))":
            _args(clean, w, 2.0, mask, grad[:1]),
    }  # fmt: skip


def _expect_mix_results(result: Any, case: Case) -> tuple[np.ndarray, np.ndarray, float]:
    """(pooled, grad_w, grad_gamma): float64 arrays of the shapes of grad_pooled and w, a Python
    float, all finite."""
    __tracebackhide__ = True
    names = ("pooled", "grad_w", "grad_gamma")
    pooled, grad_w, grad_gamma = expect_tuple(result, "layer_mix_backward", names)
    expect_array("pooled", pooled, np.shape(case.grad_pooled), np.float64)
    expect_array("grad_w", grad_w, np.shape(case.w), np.float64)
    if not isinstance(grad_gamma, float):
        raise CheckFailed(f"grad_gamma should be a Python float, got {type(grad_gamma).__name__}")
    for name, value in zip(names, (pooled, grad_w, np.asarray(grad_gamma)), strict=True):
        bad = np.argwhere(~np.isfinite(value))
        if bad.size:
            at = f" at {bad[0].tolist()}" if value.ndim else ""
            hint = f": {case.if_not_finite}" if case.if_not_finite else ""
            raise CheckFailed(f"{name} holds {value[tuple(bad[0])]}{at}{hint}")
    return pooled, grad_w, grad_gamma


def check_part_d(layer_mix_backward: Callable[..., Any]) -> None:
    """Part D's visible test (layer_mix_backward)."""
    __tracebackhide__ = True
    for case in part_d_cases():
        with case.named("layer_mix_backward"):
            with inputs_kept("layer_mix_backward", hidden_states=case.hidden_states, w=case.w,
                             attention_mask=case.attention_mask, grad_pooled=case.grad_pooled):  # fmt: skip
                result = by_hand(ASSIGNMENT, layer_mix_backward, case.hidden_states, case.w,
                                 case.gamma, case.attention_mask, case.grad_pooled)  # fmt: skip
            pooled, grad_w, grad_gamma = _expect_mix_results(result, case)
            for name, got in (("pooled", pooled), ("grad_w", grad_w), ("grad_gamma", grad_gamma)):
                if f"expected_{name}" in case.inputs:
                    assert_close(name, got, case.inputs[f"expected_{name}"], atol=1e-9,
                                 against="torch.autograd")  # fmt: skip
            if np.shares_memory(pooled, case.hidden_states):
                raise CheckFailed("pooled is a view of the input: return a new array")
            if not (abs(grad_w.sum()) < 1e-9):
                raise CheckFailed(
                    f"the entries of grad_w add up to {grad_w.sum():.3g}; they should add up "
                    "to 0 (Part E asks why)"
                )
    _expect_rejected(layer_mix_backward, part_d_bad_inputs())
    print("Part D, visible test: passed.")
