"""Assignment 7: the hidden checks reject plausible bugs and the course's and libraries' shortcuts.

What every assignment must satisfy (structure, reference, untouched version, hard-coded
answers, traps) is in ``test_assignments.py``. Here: independent implementations (masking
with Python's ``random`` one position at a time, WordPiece by slicing from the right end,
NSP pairs drawn with ``random.Random``, features through ``np.add.reduce``) with one switch
per plausible bug, each of which must fail its check with a message that names the case;
the visible tests name the typical mistakes; and shortcuts through the course's
``mask_tokens``, ``make_nsp_pairs`` and ``WordPiece`` and through ``tokenizers``, which are
caught inside the traps.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from autograder.hidden import a7_bert as hidden
from tests.grading.bug_injection import (
    Failure,
    expect_failure,
    expect_traps,
    row_id,
    run_visible,
    shortcut_tests,
    visible_mistake_tests,
)
from tests.grading.solution_loader import as_student

ASSIGNMENT = "a7_bert"

pytestmark = pytest.mark.usefixtures("one_thread")

# --------------------------------------------------------------------------------------------
# Independent implementations with bug switches
# --------------------------------------------------------------------------------------------


def corrupt(
    ids,
    special_ids,
    vocab_size,
    mask_id,
    seed,
    p=0.15,
    mask_share=0.8,
    random_share=0.1,
    *,
    fixed_count=False,
    specials_below_five=False,
    random_from_all=False,
    random_never_same=False,
    zero_labels=False,
    ignore_shares=False,
    accept_floats=False,
    keep_dtype=False,
):
    array = np.asarray(ids)
    dtype = array.dtype if keep_dtype else np.int64
    if array.dtype.kind not in "iu" and not (accept_floats and array.dtype.kind == "f"):
        raise ValueError("ids")
    array = array.astype(np.int64)
    if array.size and (array.min() < 0 or array.max() >= vocab_size):
        raise ValueError("range")
    if any(not 0 <= s < vocab_size for s in special_ids) or not 0 <= mask_id < vocab_size:
        raise ValueError("specials")
    if not (0 < p <= 1) or mask_share < 0 or random_share < 0 or mask_share + random_share > 1:
        raise ValueError("probabilities")
    if ignore_shares:
        mask_share, random_share = 0.8, 0.1
    special = set(range(5)) if specials_below_five else {int(s) for s in special_ids}
    ordinary = [i for i in range(vocab_size) if i not in {int(s) for s in special_ids}]
    if not ordinary:
        raise ValueError("no ordinary id")
    draw = random.Random(seed)
    flat = array.ravel().tolist()
    positions = [k for k, token in enumerate(flat) if token not in special]
    if fixed_count:  # round(p n) of each sequence's n ordinary positions, as "fixed" masking
        width = array.shape[-1] if array.ndim else 1
        rows = {}
        for k in positions:
            rows.setdefault(k // width, []).append(k)
        chosen = {k for row in rows.values() for k in draw.sample(row, round(p * len(row)))}
    else:
        chosen = {k for k in positions if draw.random() < p}
    out, labels = list(flat), [0 if zero_labels else -100] * len(flat)
    for k in sorted(chosen):
        labels[k] = flat[k]
        u = draw.random()
        if u < mask_share:
            out[k] = mask_id
        elif u < mask_share + random_share:
            pool = range(vocab_size) if random_from_all else ordinary
            if random_never_same:
                pool = [t for t in pool if t != flat[k]] or pool
            out[k] = draw.choice(pool)
    shape = array.shape
    return np.array(out, dtype=dtype).reshape(shape), np.array(labels, dtype).reshape(shape)


def pieces(
    word,
    vocab,
    max_input_chars=100,
    unk_token="[UNK]",
    prefix="##",
    *,
    backtrack=False,
    keep_partial=False,
    limit_inclusive=False,
    prefix_always_hash=False,
    count_bytes=False,
    accept_spaces=False,
):
    if not isinstance(word, str) or not word or (not accept_spaces and len(word.split()) != 1):
        raise ValueError("word")
    if unk_token not in vocab or not isinstance(max_input_chars, int) or max_input_chars < 1:
        raise ValueError("vocab or limit")
    if prefix_always_hash:
        prefix = "##"
    size = len(word.encode()) if count_bytes else len(word)
    if size >= max_input_chars if limit_inclusive else size > max_input_chars:
        return [unk_token]
    known = set(vocab)

    def split(start):
        if start == len(word):
            return []
        for end in range(len(word), start, -1):
            piece = (prefix if start else "") + word[start:end]
            if piece in known:
                rest = split(end)
                if rest is not None or not backtrack:
                    return None if rest is None else [piece, *rest]
        return None

    if keep_partial:
        out, start = [], 0
        while start < len(word):
            for end in range(len(word), start, -1):
                piece = (prefix if start else "") + word[start:end]
                if piece in known:
                    out.append(piece)
                    start = end
                    break
            else:
                return [*out, unk_token]
        return out
    found = split(0)
    return [unk_token] if found is None else found


def pairs_of(
    documents,
    seed,
    p_next=0.5,
    *,
    any_document=False,
    by_sentence=False,
    first_sentence=False,
    integer_labels=False,
    reversed_probability=False,
    accept_one_document=False,
):
    if isinstance(documents, str) or any(isinstance(d, str) for d in documents):
        raise ValueError("documents")
    if any(not isinstance(s, str) for d in documents for s in d):
        raise ValueError("sentences")
    filled = [k for k, d in enumerate(documents) if d]
    if len(filled) < 2 and not accept_one_document:
        raise ValueError("two documents")
    if not 0 <= p_next <= 1:
        raise ValueError("p_next")
    draw = random.Random(seed)
    out = []
    for home, doc in enumerate(documents):
        for i in range(len(doc) - 1):
            keep = draw.random() < p_next
            if reversed_probability:
                keep = not keep
            if keep:
                out.append((doc[i], doc[i + 1], 0 if integer_labels else True))
                continue
            others = filled if any_document else [k for k in filled if k != home]
            if by_sentence:
                sentence = draw.choice([s for k in others for s in documents[k]])
            else:
                chosen = documents[draw.choice(others)]
                sentence = chosen[0] if first_sentence else draw.choice(chosen)
            out.append((doc[i], sentence, 1 if integer_labels else False))
    return out


def combine(
    hidden_states,
    strategy,
    *,
    sum_with_embeddings=False,
    concat_newest_first=False,
    view=False,
    keep_dtype=False,
    wrap_around=False,
    name_strategies=True,
):
    needs = {"first": 1, "last": 1, "sum_all": 1, "second_to_last": 2, "sum_last_four": 4,
             "concat_last_four": 4}  # fmt: skip
    if strategy not in needs:
        raise ValueError(f"unknown strategy; use {sorted(needs)}" if name_strategies else "no")
    layers = [np.asarray(h) for h in hidden_states]
    if len(layers) < 2 or len({h.shape for h in layers}) != 1 or layers[0].ndim == 0:
        raise ValueError("states")
    L = len(layers) - 1
    if L < needs[strategy] and not wrap_around:
        raise ValueError(f"{strategy} needs {needs[strategy]} layers")
    stack = np.asarray(hidden_states) if view else np.stack(layers)
    if not keep_dtype:
        stack = stack.astype(np.float64, copy=False)
    if strategy == "first":
        return stack[0]
    if strategy == "last":
        return stack[-1]
    if strategy == "second_to_last":
        return stack[-2]
    if strategy == "sum_all":
        return np.add.reduce(stack[0 if sum_with_embeddings else 1 :], axis=0)
    if strategy == "sum_last_four":
        return np.add.reduce(stack[-4:], axis=0)
    last_four = list(stack[-4:])
    return np.concatenate(last_four[::-1] if concat_newest_first else last_four, axis=-1)


# --------------------------------------------------------------------------------------------
# The independent implementations pass; the references agree with them
# --------------------------------------------------------------------------------------------


def test_the_independent_implementations_pass_too(capsys):
    hidden.check_mlm_mask(as_student(corrupt, "mlm_mask"))
    hidden.check_wordpiece(as_student(pieces, "wordpiece"))
    hidden.check_nsp_pairs(as_student(pairs_of, "nsp_pairs"))
    hidden.check_layer_features(as_student(combine, "layer_features"))
    assert capsys.readouterr().out.count("hidden cases passed") == 4


def test_the_references_agree_with_the_independent_implementations():
    for case in hidden.wordpiece_cases():
        setting = (case.vocab, case.max_input_chars, case.unk_token, case.prefix)
        assert hidden.tokenizers_pieces(case.words, *setting) == [
            pieces(word, *setting) for word in case.words
        ]
    rng = np.random.default_rng(0)
    for depth in (1, 2, 4, 7):
        states = rng.normal(size=(depth + 1, 3, 5))
        for strategy in hidden.STRATEGIES:
            if hidden.NEEDS[strategy] <= depth:
                np.testing.assert_allclose(
                    hidden.layer_by_layer(states, strategy), combine(states, strategy), atol=1e-12
                )


def test_the_statistical_checks_have_power():
    """The cases that the statistics rely on are there, and the tolerances are about 5 sd."""
    labels = [case.label for case in hidden.mlm_cases()]
    assert any("[9, 0, 7]" in label for label in labels)
    assert hidden.chi_squared_limit(30) == pytest.approx(80.0, abs=3.0)  # chi2.isf(1e-6, 30)
    hidden.expect_share("a share", 1060, 10_000, 0.1)  # 2 standard deviations: accepted
    with pytest.raises(AssertionError, match=r"is 0.1200 \(1,200 of 10,000\), expected 0.1000"):
        hidden.expect_share("a share", 1200, 10_000, 0.1)  # 6.7 sd


# --------------------------------------------------------------------------------------------
# Plausible bugs
# --------------------------------------------------------------------------------------------

BERT = r"^mlm_mask, BERT's numbering \(specials 0, 100-103, \|V\| = 30522\), a padded batch"
SPECIALS = r"^mlm_mask, specials \[9, 0, 7\] not consecutive"
ENGLISH = "^wordpiece, an English vocabulary"
DOCUMENTS = "^nsp_pairs, 32 documents "
BASE = r"^layer_features, L = 12 \(BERT-base\), T = 7, H = 16, "


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        ({"fixed_count": True}, Failure(SPECIALS, "^the number of positions selected per sequence", "varies too little")),
        ({"specials_below_five": True}, Failure(BERT + r" \(200, 48\)$", "^a special id was selected")),
        ({"random_from_all": True}, Failure("^mlm_mask, ", r"^a random token is \d+", "not an ordinary id")),
        ({"random_never_same": True}, Failure(r"^mlm_mask, shares \(0, 1\)", "^the share of selected positions showing another token is 1.0000")),
        ({"zero_labels": True}, Failure(BERT, "^labels is 0 at")),
        ({"ignore_shares": True}, Failure(SPECIALS, r"^the share of selected positions showing \[MASK\]")),
        ({"accept_floats": True}, Failure(None, "^mlm_mask with float ids", "should raise ValueError")),
        ({"keep_dtype": True}, Failure(r"^mlm_mask, int32 ids \(80, 20\)", "^corrupted should hold int64", "got dtype int32")),
    ],
    ids=row_id,
)  # fmt: skip
def test_check_mlm_mask_rejects_bug(bugs, failure):
    student = as_student(corrupt, "mlm_mask", **bugs)
    expect_failure(lambda: hidden.check_mlm_mask(student), failure)


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        ({"backtrack": True}, Failure("^wordpiece, greedy matching fails ", r"^wordpiece\('abc'\) is \['a', '##bc'\]", r"gives \['\[UNK\]'\]")),
        ({"keep_partial": True}, Failure(ENGLISH + "$", r"^wordpiece\('rung'\) is \['r', '\[UNK\]'\]")),
        ({"limit_inclusive": True}, Failure(ENGLISH + ", max_input_chars = 6 ", r"^wordpiece\('undone'\) is \['\[UNK\]'\]")),
        ({"prefix_always_hash": True}, Failure("^wordpiece, a random vocabulary with the prefix '@@'", r"^wordpiece\('\w+'\) is ")),
        ({"count_bytes": True}, Failure("^wordpiece, accented characters, max_input_chars = 4$", r"^wordpiece\('café'\) is \['\[UNK\]'\]")),
        ({"accept_spaces": True}, Failure(None, "^wordpiece with two words 'ab ab'", "should raise ValueError")),
    ],
    ids=row_id,
)  # fmt: skip
def test_check_wordpiece_rejects_bug(bugs, failure):
    student = as_student(pieces, "wordpiece", **bugs)
    expect_failure(lambda: hidden.check_wordpiece(student), failure)


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        ({"any_document": True}, Failure("^nsp_pairs, ", r"^pair \d+ is marked not next", "from a's own document")),
        ({"by_sentence": True}, Failure(DOCUMENTS, "^the choice of the other document", "not as expected")),
        ({"first_sentence": True}, Failure(DOCUMENTS, "^the position of the random sentence in its document", "not as expected")),
        ({"integer_labels": True}, Failure(DOCUMENTS, "^pair 0: is_next should be a bool, got [01]")),
        ({"reversed_probability": True}, Failure("^nsp_pairs, 20 documents of 12 sentences, p_next = 0.2$", r"^the share of is_next pairs is 0\.[78]")),
        ({"accept_one_document": True}, Failure(None, "^nsp_pairs with a single document", "should raise ValueError")),
    ],
    ids=row_id,
)  # fmt: skip
def test_check_nsp_pairs_rejects_bug(bugs, failure):
    student = as_student(pairs_of, "nsp_pairs", **bugs)
    expect_failure(lambda: hidden.check_nsp_pairs(student), failure)


@pytest.mark.parametrize(
    ("bugs", "failure"),
    [
        ({"sum_with_embeddings": True}, Failure(BASE + "'sum_all'$", r"^layer_features\(\.\.\., 'sum_all'\) differs")),
        ({"concat_newest_first": True}, Failure(BASE + "'concat_last_four'$", r"^layer_features\(\.\.\., 'concat_last_four'\) differs")),
        ({"view": True}, Failure(BASE + "'first'$", "^the features are a view of the input")),
        ({"keep_dtype": True}, Failure("^layer_features, float32 states ", "^the features should be float64", "got float32")),
        ({"wrap_around": True}, Failure(None, "^layer_features with 'sum_last_four' and L = 3", "should raise ValueError")),
        ({"name_strategies": False}, Failure(None, "^layer_features with the unknown strategy 'middle'", r"raised ValueError\('no'\)", "six strategy names")),
    ],
    ids=row_id,
)  # fmt: skip
def test_check_layer_features_rejects_bug(bugs, failure):
    student = as_student(combine, "layer_features", **bugs)
    expect_failure(lambda: hidden.check_layer_features(student), failure)


# --------------------------------------------------------------------------------------------
# The visible tests name the typical mistakes
# --------------------------------------------------------------------------------------------


def course_style_nsp(documents, seed, p_next=0.5):
    """The course's make_nsp_pairs pasted in and adapted to the signature: its labels are
    0 = IsNext and 1 = NotNext, not booleans."""
    rng = random.Random(seed)
    others = [i for i, d in enumerate(documents) if d]
    pairs = []
    for i, sentences in enumerate(documents):
        for a, b in zip(sentences[:-1], sentences[1:], strict=True):
            if rng.random() < p_next:
                pairs.append((a, b, 0))
                continue
            j = i
            while j == i:
                j = rng.choice(others)
            pairs.append((a, rng.choice(documents[j]), 1))
    return pairs


def calling_the_course(documents, seed, p_next=0.5):
    """The course's make_nsp_pairs, called and adapted to the signature."""
    from course.data.bert_inputs import make_nsp_pairs

    return [(p.a, p.b, p.label == 0) for p in make_nsp_pairs(documents, seed, p_next)]


test_visible_tests_name_the_mistake = visible_mistake_tests(
    ASSIGNMENT,
    [
        (
            "mlm_mask_visible",
            {"mlm_mask": as_student(corrupt, "mlm_mask", ignore_shares=True)},
            Failure(None, r"^with shares \(0.5, 0.3\), the share showing \[MASK\] is 0.8"),
        ),
        (
            "mlm_mask_visible",
            {"mlm_mask": as_student(corrupt, "mlm_mask", zero_labels=True)},
            Failure(
                None,
                "^labels at the selected positions differs"
                "|^corrupted at the positions that are not selected differs",
            ),
        ),
        (
            "wordpiece_visible",
            {"wordpiece": as_student(pieces, "wordpiece", backtrack=True)},
            Failure(None, r"^wordpiece\('abd'\) is \['a', '##bd'\], expected \['\[UNK\]'\]"),
        ),
        (
            "wordpiece_visible",
            {"wordpiece": as_student(pieces, "wordpiece", limit_inclusive=True)},
            Failure(
                None, r"^wordpiece\('playing', 7\) is \['\[UNK\]'\], expected \['play', '##ing'\]"
            ),
        ),
        (
            "wordpiece_visible",
            {"wordpiece": as_student(pieces, "wordpiece", prefix_always_hash=True)},
            Failure(None, r"^with the prefix '@@': wordpiece\('lowest'\) is "),
        ),
        (
            "nsp_pairs_visible",
            {"nsp_pairs": course_style_nsp},
            Failure(None, "^pair 0: is_next should be a bool, got [01]"),
        ),
        (
            "nsp_pairs_visible",
            {"nsp_pairs": as_student(calling_the_course, "nsp_pairs")},
            Failure(
                None,
                r"^nsp_pairs called course\.data\.bert_inputs\.make_nsp_pairs \(a course "
                r"helper\): this part's hidden tests forbid the course's helpers and",
            ),
        ),
        (
            "layer_features_visible",
            {"layer_features": as_student(combine, "lf", sum_with_embeddings=True)},
            Failure(None, r"^layer_features\(states_d, 'sum_all'\) differs"),
        ),
        (
            "layer_features_visible",
            {"layer_features": as_student(combine, "lf", concat_newest_first=True)},
            Failure(None, r"^layer_features\(states_d, 'concat_last_four'\) differs"),
        ),
    ],
)


def test_visible_tests_pass_with_the_independent_implementations():
    run_visible(ASSIGNMENT, "mlm_mask_visible", mlm_mask=as_student(corrupt, "mlm_mask"))
    run_visible(ASSIGNMENT, "wordpiece_visible", wordpiece=as_student(pieces, "wordpiece"))
    run_visible(ASSIGNMENT, "nsp_pairs_visible", nsp_pairs=as_student(pairs_of, "nsp_pairs"))
    run_visible(
        ASSIGNMENT, "layer_features_visible", layer_features=as_student(combine, "layer_features")
    )


# --------------------------------------------------------------------------------------------
# Shortcuts: the course's helpers and the libraries are trapped
# --------------------------------------------------------------------------------------------


def mlm_with_course(ids, special_ids, vocab_size, mask_id, seed, p=0.15, m=0.8, r=0.1):
    """The course's mask_tokens where it applies, then the right answer."""
    import torch

    from course.data.bert_inputs import mask_tokens

    mask_tokens(torch.zeros(1, 4, dtype=torch.long) + 5, 10, torch.Generator().manual_seed(0))
    return corrupt(ids, special_ids, vocab_size, mask_id, seed, p, m, r)


def mlm_with_collator(ids, special_ids, vocab_size, mask_id, seed, p=0.15, m=0.8, r=0.1):
    from transformers import DataCollatorForLanguageModeling

    DataCollatorForLanguageModeling(tokenizer=None, mlm_probability=p)
    return corrupt(ids, special_ids, vocab_size, mask_id, seed, p, m, r)


def wordpiece_with_tokenizers(word, vocab, max_input_chars=100, unk_token="[UNK]", prefix="##"):
    return hidden.tokenizers_pieces([word], vocab, max_input_chars, unk_token, prefix)[0]


def wordpiece_with_course(word, vocab, max_input_chars=100, unk_token="[UNK]", prefix="##"):
    from course.data.wordpiece import WordPiece

    WordPiece(list(vocab), unk_token=unk_token, max_chars=max_input_chars)
    return pieces(word, vocab, max_input_chars, unk_token, prefix)


def nsp_with_course(documents, seed, p_next=0.5):
    from course.data.bert_inputs import make_nsp_pairs

    make_nsp_pairs(documents, seed, p_next)
    return pairs_of(documents, seed, p_next)


test_checks_reject_the_helpers_being_rewritten = shortcut_tests(
    [
        (hidden.check_mlm_mask, mlm_with_course, "mlm_mask", "course.data.bert_inputs.mask_tokens"),
        (hidden.check_mlm_mask, mlm_with_collator, "mlm_mask", "transformers.DataCollatorForLanguageModeling"),
        (hidden.check_wordpiece, wordpiece_with_tokenizers, "wordpiece", "tokenizers.models.WordPiece"),
        (hidden.check_wordpiece, wordpiece_with_course, "wordpiece", "course.data.wordpiece.WordPiece"),
        (hidden.check_nsp_pairs, nsp_with_course, "nsp_pairs", "course.data.bert_inputs.make_nsp_pairs"),
    ]
)  # fmt: skip


REQUIRED_TRAPS = {
    "torch.bernoulli",
    "transformers.DataCollatorForLanguageModeling",
    "transformers.BertTokenizer",
    "transformers.BertTokenizerFast",
    "tokenizers.Tokenizer",
    "tokenizers.models.WordPiece",
    "course.data.bert_inputs.mask_tokens",
    "course.data.bert_inputs.make_nsp_pairs",
    "course.data.wordpiece.WordPiece",
    "course.models.bert.BertModel",
}


def test_traps_cover_the_routines_that_would_do_the_work():
    expect_traps(hidden, REQUIRED_TRAPS)
