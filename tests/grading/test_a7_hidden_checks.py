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
import re
import string
import unicodedata

import numpy as np
import pytest

from autograder.hidden import a7_bert as hidden
from tests.grading.bug_injection import (
    Failure,
    expect_failure,
    expect_traps,
    reference_namespace,
    row_id,
    run_visible,
    shortcut_tests,
    solution,
    visible_mistake_tests,
)
from tests.grading.solution_loader import as_student, run_cell

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


def offsets_of(
    texts,
    vocab,
    max_input_chars=100,
    unk_token="[UNK]",
    prefix="##",
    *,
    backtrack=False,
    keep_partial=False,
    limit_inclusive=False,
    span_with_prefix=False,
    unk_from_failure=False,
    space_only=False,
    ascii_marks_only=False,
    unicode_marks_only=False,
    no_marks=False,
    byte_offsets=False,
    accept_one_string=False,
):
    if isinstance(texts, str) and not accept_one_string:
        raise ValueError("texts")
    if any(not isinstance(text, str) for text in texts):
        raise ValueError("text")
    if unk_token not in vocab or not isinstance(max_input_chars, int) or max_input_chars < 1:
        raise ValueError("vocab or limit")
    known = set(vocab)

    def mark(ch):
        if no_marks:
            return False
        ascii_mark = ch in string.punctuation
        unicode_mark = unicodedata.category(ch).startswith("P")
        if ascii_marks_only:
            return ascii_mark
        if unicode_marks_only:
            return unicode_mark
        return ascii_mark or unicode_mark

    def words(text):
        chunks = re.finditer(r"[^ ]+" if space_only else r"\S+", text)
        for chunk in chunks:
            start = chunk.start()
            for k, ch in enumerate(chunk.group()):
                if mark(ch):
                    if chunk.start() + k > start:
                        yield start, chunk.start() + k
                    yield chunk.start() + k, chunk.start() + k + 1
                    start = chunk.start() + k + 1
            if start < chunk.end():
                yield start, chunk.end()

    def split(word, at):  # the pieces of word[at:], as (piece, start in word, end in word)
        if at == len(word):
            return []
        for end in range(len(word), at, -1):
            piece = (prefix if at else "") + word[at:end]
            if piece in known:
                rest = split(word, end)
                if rest is not None or not backtrack:
                    return None if rest is None else [(piece, at, end), *rest]
        return None

    def tokens(text):
        out = []
        for first, last in words(text):
            word = text[first:last]
            size = len(word)
            if size >= max_input_chars if limit_inclusive else size > max_input_chars:
                out.append((unk_token, first, last))
                continue
            found = split(word, 0)
            if found is None and (keep_partial or unk_from_failure):
                found, at = [], 0
                while at < len(word):
                    step = next(
                        (end for end in range(len(word), at, -1)
                         if (prefix if at else "") + word[at:end] in known), None,
                    )  # fmt: skip
                    if step is None:
                        break
                    found.append(((prefix if at else "") + word[at:step], at, step))
                    at = step
                found = [*found, (unk_token, at, len(word))] if keep_partial else [
                    (unk_token, at, len(word))]  # fmt: skip
            elif found is None:
                found = [(unk_token, 0, len(word))]
            for piece, start, end in found:
                if span_with_prefix and piece != unk_token:
                    end = start + len(piece)  # the prefix counted as characters of the text
                out.append((piece, first + start, first + end))
        if byte_offsets:
            spot = [len(text[:k].encode()) for k in range(len(text) + 1)]
            out = [(piece, spot[start], spot[end]) for piece, start, end in out]
        return out

    return [tokens(text) for text in texts]


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


def mix_grads(
    hidden_states,
    w,
    gamma,
    attention_mask,
    grad_pooled,
    *,
    no_jacobian=False,
    no_centering=False,
    mean_over_all=False,
    mask_by_product=False,
    naive_softmax=False,
    gamma_by_division=False,
    accept_empty=False,
    keep_dtype=False,
    no_gamma_in_grad_w=False,
):
    layers = [np.asarray(h) for h in hidden_states]
    if len({h.shape for h in layers}) != 1 or layers[0].ndim != 3:
        raise ValueError("states")
    depth, (rows, width, size) = len(layers), layers[0].shape
    weights = np.asarray(w, dtype=float)
    if weights.shape != (depth,):
        raise ValueError("w")
    if isinstance(gamma, bool) or not isinstance(gamma, (int, float, np.floating, np.integer)):
        raise ValueError("gamma")
    mask = np.asarray(attention_mask)
    if mask.shape != (rows, width) or not set(np.unique(mask).tolist()) <= {0, 1}:
        raise ValueError("mask")
    upstream = np.asarray(grad_pooled, dtype=float)
    if upstream.shape != (rows, size):
        raise ValueError("G")
    if not accept_empty and any(sum(row) == 0 for row in mask.tolist()):
        raise ValueError("empty")
    if naive_softmax:
        with np.errstate(over="ignore", invalid="ignore"):
            share = np.exp(weights) / np.exp(weights).sum()
    else:
        share = np.exp(weights - np.max(weights))
        share = share / share.sum()
    dtype = layers[0].dtype if keep_dtype and layers[0].dtype.kind == "f" else np.float64
    means = np.zeros((depth, rows, size))  # the masked mean of each layer, row by row
    for j, layer in enumerate(layers):
        for b in range(rows):
            total, count = np.zeros(size), 0
            for t in range(width):
                if mask_by_product:
                    total = total + mask[b, t] * layer[b, t]
                elif mask[b, t]:
                    total = total + layer[b, t]
                count += 1 if mean_over_all else int(mask[b, t])
            with np.errstate(invalid="ignore", divide="ignore"):
                means[j, b] = total / count
    blend = sum(share[j] * means[j] for j in range(depth))
    pooled = (gamma * blend).astype(dtype)
    reach = np.array([np.sum(means[j] * upstream) for j in range(depth)])
    a = reach if no_gamma_in_grad_w else gamma * reach
    if no_jacobian:
        grad_w = a
    elif no_centering:
        grad_w = share * a
    else:
        grad_w = share * a - share * np.dot(share, a)
    with np.errstate(invalid="ignore", divide="ignore"):
        grad_gamma = (
            float(np.sum(pooled * upstream) / gamma) if gamma_by_division
            else float(np.sum(blend * upstream))
        )  # fmt: skip
    return pooled, grad_w.astype(np.float64), grad_gamma


# --------------------------------------------------------------------------------------------
# The independent implementations pass; the references agree with them
# --------------------------------------------------------------------------------------------


def test_the_independent_implementations_pass_too(capsys):
    hidden.check_mlm_mask(as_student(corrupt, "mlm_mask"))
    hidden.check_wordpiece_offsets(as_student(offsets_of, "wordpiece_offsets"))
    hidden.check_nsp_pairs(as_student(pairs_of, "nsp_pairs"))
    hidden.check_layer_mix_backward(as_student(mix_grads, "layer_mix_backward"))
    assert capsys.readouterr().out.count("hidden cases passed") == 4


def test_the_references_agree_with_the_independent_implementations():
    for case in hidden.offsets_cases():
        setting = (case.vocab, case.max_input_chars, case.unk_token, case.prefix)
        assert hidden.tokenizers_offsets(case.texts, *setting) == offsets_of(case.texts, *setting)
    for case in hidden.mix_cases():
        args = (case.hidden_states, case.w, case.gamma, case.attention_mask, case.grad_pooled)
        for theirs, ours in zip(hidden.autograd_mix(*args), mix_grads(*args), strict=True):
            np.testing.assert_allclose(theirs, ours, rtol=1e-9, atol=1e-10)


def test_the_cases_use_characters_on_which_python_and_tokenizers_agree():
    """The statement's rule (str.isspace, string.punctuation, Unicode category P) and the
    BertPreTokenizer differ on a few characters (U+001C to U+001F, punctuation newer than one
    of their Unicode tables): no case holds one."""
    from tokenizers import pre_tokenizers

    split = pre_tokenizers.BertPreTokenizer().pre_tokenize_str
    used = {ch for case in hidden.offsets_cases() for text in case.texts for ch in text}
    for ch in used:
        text = f"a{ch}b"
        theirs = [span for _, span in split(text)]
        ours = [(start, end) for _, start, end in offsets_of([text], ["[UNK]"])[0]]
        assert theirs == ours, repr(ch)


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
ENGLISH = "^wordpiece_offsets, an English vocabulary, sentences with punctuation"
ACCENTS = (
    r"^wordpiece_offsets, accented and Japanese characters, Unicode punctuation, '€' \(a symbol\)$"
)
DOCUMENTS = "^nsp_pairs, 32 documents "
BASE = r"^layer_mix_backward, L = 12 \(BERT-base\), B = 4, T = 9, H = 16, right padding$"


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
        ({"backtrack": True}, Failure("^wordpiece_offsets, greedy matching fails ", r"^text 0 \('abc, ab abbc'\), token 0 is \('a', 0, 1\), but the tokenizers library gives \('\[UNK\]', 0, 3\)")),
        ({"keep_partial": True}, Failure(ENGLISH + "$", r"^text 2 .*, token 0 is \('r', 0, 1\)", r"gives \('\[UNK\]', 0, 4\)")),
        ({"unk_from_failure": True}, Failure(ENGLISH + "$", r"^text 2 .*, token 0 is \('\[UNK\]', 1, 4\)", r"gives \('\[UNK\]', 0, 4\)")),
        ({"limit_inclusive": True}, Failure("^wordpiece_offsets, an English vocabulary, max_input_chars = 6 ", r"token 2 is \('\[UNK\]', 9, 15\)", r"gives \('un', 9, 11\)")),
        ({"span_with_prefix": True}, Failure(ENGLISH + "$", r"token 3 is \('##do', 11, 15\)", r"gives \('##do', 11, 13\)")),
        ({"space_only": True}, Failure(ENGLISH + "$", r"^text 2 .*, token 4 is \('\[UNK\]', 13, 25\)")),
        ({"ascii_marks_only": True}, Failure(ACCENTS, r"token 5 is \('\[UNK\]', 12, 17\), but the tokenizers library gives \('«', 12, 13\)")),
        ({"unicode_marks_only": True}, Failure(ENGLISH + "$", r"^text 4 \('\$5 5\$ re:do'\), token 0 is \('\[UNK\]', 0, 2\)", r"gives \('\$', 0, 1\)")),
        ({"no_marks": True}, Failure(ENGLISH + "$", r"^text 0 .*, token 0 is \('\[UNK\]', 0, 8\)")),
        ({"byte_offsets": True}, Failure(ACCENTS, r"token 1 is \('##é', 3, 5\), but the tokenizers library gives \('##é', 3, 4\)")),
        ({"accept_one_string": True}, Failure(None, "^wordpiece_offsets with texts given as one string", "should raise ValueError")),
    ],
    ids=row_id,
)  # fmt: skip
def test_check_wordpiece_offsets_rejects_bug(bugs, failure):
    student = as_student(offsets_of, "wordpiece_offsets", **bugs)
    expect_failure(lambda: hidden.check_wordpiece_offsets(student), failure)


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
        ({"no_jacobian": True}, Failure(BASE, r"^grad_w differs from torch.autograd by")),
        ({"no_centering": True}, Failure(BASE, r"^grad_w differs from torch.autograd by")),
        ({"no_gamma_in_grad_w": True}, Failure(BASE, r"^grad_w differs from torch.autograd by")),
        ({"mean_over_all": True}, Failure(BASE, r"^pooled differs from torch.autograd by")),
        ({"mask_by_product": True}, Failure(r"^layer_mix_backward, nan at the padding positions", r"^pooled is nan at \[1, 0\]", "where torch.autograd gives a finite value")),
        ({"naive_softmax": True}, Failure(r"^layer_mix_backward, weights of ±1000", r"^pooled is nan at \[0, 0\]")),
        ({"gamma_by_division": True}, Failure(r"^layer_mix_backward, gamma = 0 ", r"^grad_gamma is nan at \[0\]")),
        ({"keep_dtype": True}, Failure(r"^layer_mix_backward, float32 states", "^pooled should be float64, got dtype float32")),
        ({"accept_empty": True}, Failure(None, "^layer_mix_backward with a sentence with no real token", "should raise ValueError")),
    ],
    ids=row_id,
)  # fmt: skip
def test_check_layer_mix_backward_rejects_bug(bugs, failure):
    student = as_student(mix_grads, "layer_mix_backward", **bugs)
    expect_failure(lambda: hidden.check_layer_mix_backward(student), failure)


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
            Failure(
                r"shares \(0\.5, 0\.3\)",
                r"^the share of selected positions showing \[MASK\] is 0\.8",
            ),
        ),
        (
            "mlm_mask_visible",
            {"mlm_mask": as_student(corrupt, "mlm_mask", zero_labels=True)},
            Failure(
                "seed 7",
                "^labels at the selected positions differs"
                "|^corrupted at the positions that are not selected differs",
            ),
        ),
        (
            "wordpiece_offsets_visible",
            {"wordpiece_offsets": as_student(offsets_of, "wordpiece_offsets", backtrack=True)},
            Failure(
                "four texts, the default options",
                r"^text 1 .*, token 10 is \('a', 23, 24\), expected \('\[UNK\]', 23, 26\) \('abd' is one \[UNK\]",
            ),
        ),
        (
            "wordpiece_offsets_visible",
            {
                "wordpiece_offsets": as_student(
                    offsets_of, "wordpiece_offsets", span_with_prefix=True
                )
            },
            Failure(
                "four texts, the default options",
                r"^text 0 .*, token 1 is \('##able', 5, 11\), expected \('##able', 5, 9\)",
            ),
        ),
        (
            "wordpiece_offsets_visible",
            {
                "wordpiece_offsets": as_student(
                    offsets_of, "wordpiece_offsets", ascii_marks_only=True
                )
            },
            Failure(
                "four texts, the default options",
                r"^text 2 .*, token 0 is .*, expected \('¿', 2, 3\) \('¿' is punctuation",
            ),
        ),
        (
            "wordpiece_offsets_visible",
            {
                "wordpiece_offsets": as_student(
                    offsets_of, "wordpiece_offsets", limit_inclusive=True
                )
            },
            Failure(
                "max_input_chars = 6",
                r"^text 1 .*, token 2 is \('\[UNK\]', 3, 9\), expected \('play', 3, 7\)",
            ),
        ),
        (
            "nsp_pairs_visible",
            {"nsp_pairs": course_style_nsp},
            Failure("seed 3", "^pair 0: is_next should be a bool, got [01]"),
        ),
        (
            "nsp_pairs_visible",
            {"nsp_pairs": as_student(calling_the_course, "nsp_pairs")},
            Failure(
                "seed 3",
                r"^nsp_pairs called course\.data\.bert_inputs\.make_nsp_pairs \(a course "
                r"helper\): this part's hidden tests forbid the course's helpers and",
            ),
        ),
        (
            "layer_mix_backward_visible",
            {
                "layer_mix_backward": as_student(
                    mix_grads, "layer_mix_backward", mask_by_product=True
                )
            },
            Failure(
                "nan at the padding", "^pooled holds nan", "the padding positions .* were read"
            ),
        ),
        (
            "layer_mix_backward_visible",
            {"layer_mix_backward": as_student(mix_grads, "layer_mix_backward", no_centering=True)},
            Failure("nan at the padding", r"^grad_w differs from torch.autograd"),
        ),
        (
            "layer_mix_backward_visible",
            {"layer_mix_backward": as_student(mix_grads, "layer_mix_backward", naive_softmax=True)},
            Failure(
                r"w = \(1000, 0, -1000\)", r"^pooled holds (nan|inf)", r"exp\(1000\) overflows"
            ),
        ),
        (
            "layer_mix_backward_visible",
            {"layer_mix_backward": as_student(mix_grads, "layer_mix_backward", mean_over_all=True)},
            Failure("nan at the padding", r"^pooled differs from torch.autograd"),
        ),
    ],
)


def test_visible_tests_pass_with_the_independent_implementations():
    run_visible(ASSIGNMENT, "mlm_mask_visible", mlm_mask=as_student(corrupt, "mlm_mask"))
    run_visible(
        ASSIGNMENT,
        "wordpiece_offsets_visible",
        wordpiece_offsets=as_student(offsets_of, "wordpiece_offsets"),
    )
    run_visible(ASSIGNMENT, "nsp_pairs_visible", nsp_pairs=as_student(pairs_of, "nsp_pairs"))
    run_visible(
        ASSIGNMENT,
        "layer_mix_backward_visible",
        layer_mix_backward=as_student(mix_grads, "layer_mix_backward"),
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


def offsets_with_tokenizers(texts, vocab, max_input_chars=100, unk_token="[UNK]", prefix="##"):
    return hidden.tokenizers_offsets(texts, vocab, max_input_chars, unk_token, prefix)


def offsets_with_the_pre_tokenizer(
    texts, vocab, max_input_chars=100, unk_token="[UNK]", prefix="##"
):
    from tokenizers import pre_tokenizers

    pre_tokenizers.BertPreTokenizer().pre_tokenize_str(texts[0] if texts else "")
    return offsets_of(texts, vocab, max_input_chars, unk_token, prefix)


def offsets_with_course(texts, vocab, max_input_chars=100, unk_token="[UNK]", prefix="##"):
    from course.data.wordpiece import WordPiece

    WordPiece(list(vocab), unk_token=unk_token, max_chars=max_input_chars)
    return offsets_of(texts, vocab, max_input_chars, unk_token, prefix)


def mix_with_autograd(hidden_states, w, gamma, attention_mask, grad_pooled):
    import torch

    weights = torch.tensor(np.asarray(w, dtype=float), requires_grad=True)
    torch.softmax(weights, 0).sum().backward()
    return mix_grads(hidden_states, w, gamma, attention_mask, grad_pooled)


def mix_with_tensor_backward(hidden_states, w, gamma, attention_mask, grad_pooled):
    import torch

    weights = torch.tensor(np.asarray(w, dtype=float), requires_grad=True)
    (weights * 2).sum().backward()
    return mix_grads(hidden_states, w, gamma, attention_mask, grad_pooled)


def mix_with_torch_func(hidden_states, w, gamma, attention_mask, grad_pooled):
    import torch

    torch.func.grad(lambda v: (v**2).sum())(torch.ones(3, dtype=torch.float64))
    return mix_grads(hidden_states, w, gamma, attention_mask, grad_pooled)


def mix_with_the_lecture(hidden_states, w, gamma, attention_mask, grad_pooled):
    import torch

    from course.analysis.bert import combine_layers

    combine_layers(torch.zeros(2, 1, 3), "last")
    return mix_grads(hidden_states, w, gamma, attention_mask, grad_pooled)


def nsp_with_course(documents, seed, p_next=0.5):
    from course.data.bert_inputs import make_nsp_pairs

    make_nsp_pairs(documents, seed, p_next)
    return pairs_of(documents, seed, p_next)


test_checks_reject_the_helpers_being_rewritten = shortcut_tests(
    [
        (hidden.check_mlm_mask, mlm_with_course, "mlm_mask", "course.data.bert_inputs.mask_tokens"),
        (hidden.check_mlm_mask, mlm_with_collator, "mlm_mask", "transformers.DataCollatorForLanguageModeling"),
        (hidden.check_wordpiece_offsets, offsets_with_tokenizers, "wordpiece_offsets", "tokenizers.models.WordPiece"),
        (hidden.check_wordpiece_offsets, offsets_with_the_pre_tokenizer, "wordpiece_offsets", "tokenizers.pre_tokenizers.BertPreTokenizer"),
        (hidden.check_wordpiece_offsets, offsets_with_course, "wordpiece_offsets", "course.data.wordpiece.WordPiece"),
        (hidden.check_layer_mix_backward, mix_with_autograd, "layer_mix_backward", "torch.softmax"),
        (hidden.check_layer_mix_backward, mix_with_tensor_backward, "layer_mix_backward", "torch.Tensor.backward"),
        (hidden.check_layer_mix_backward, mix_with_torch_func, "layer_mix_backward", "torch.func.grad"),
        (hidden.check_layer_mix_backward, mix_with_the_lecture, "layer_mix_backward", "course.analysis.bert.combine_layers"),
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
    "tokenizers.pre_tokenizers.BertPreTokenizer",
    "torch.softmax",
    "torch.nn.functional.softmax",
    "torch.autograd.grad",
    "torch.Tensor.backward",
    "torch.func.grad",
    "course.data.bert_inputs.mask_tokens",
    "course.data.bert_inputs.make_nsp_pairs",
    "course.data.wordpiece.WordPiece",
    "course.models.bert.BertModel",
}


def test_traps_cover_the_routines_that_would_do_the_work():
    expect_traps(hidden, REQUIRED_TRAPS)


# --------------------------------------------------------------------------------------------
# The visible tests' expected values come from the libraries
# --------------------------------------------------------------------------------------------


def test_the_visible_expected_values_are_the_libraries():
    """Part B's hard-coded tokens and spans are the tokenizers library's, and Part D's values
    torch.autograd's, on the visible tests' inputs."""
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "un", "unaff", "##aff", "##able", "play",
             "##ing", "##ed", "##s", "a", "ab", "##c", "##bc", "##bd", "don", "'", "t", "!",
             "?", ",", "(", ")", "-", "re", "¿", "caf", "##é", "€5"]  # fmt: skip
    texts = ["unaffable (playing)!", "re-played plays, don't abd?", "  ¿café?\tab\nabc €5", ""]
    found = hidden.tokenizers_offsets(texts, vocab, 100, "[UNK]", "##")
    assert found[1][10] == ("[UNK]", 23, 26) and found[2][2] == ("##é", 6, 7)
    assert found[0] == [("unaff", 0, 5), ("##able", 5, 9), ("(", 10, 11), ("play", 11, 15),
                        ("##ing", 15, 18), (")", 18, 19), ("!", 19, 20)]  # fmt: skip
    limited = hidden.tokenizers_offsets(texts, vocab, 6, "[UNK]", "##")
    assert limited[0][0] == ("[UNK]", 0, 9) and limited[0][2] == ("[UNK]", 11, 18)
    twos = hidden.tokenizers_offsets(
        ["lowest newest. news lowly", "new@@s"],
        ["<unk>", "low", "@@er", "@@est", "new", "@@e", "@@s", "@@t", "."], 100, "<unk>", "@@",
    )  # fmt: skip
    assert twos[1] == [("new", 0, 3), ("<unk>", 3, 4), ("<unk>", 4, 5), ("<unk>", 5, 6)]
    mask = np.array([[1, 1, 0], [1, 0, 0]])
    states = 10.0 * np.arange(3)[:, None, None, None] ** 2 + np.arange(3)[:, None] + np.arange(2)
    states = states + np.zeros((3, 2, 3, 2))
    states[:, mask == 0] = np.nan
    grad = np.array([[1.0, 0.0], [0.0, 2.0]])
    pooled, grad_w, grad_gamma = hidden.autograd_mix(
        states, np.array([0.0, np.log(2.0), 0.0]), 2.0, mask, grad
    )
    np.testing.assert_allclose(pooled, [[31.0, 33.0], [30.0, 32.0]], atol=1e-12)
    np.testing.assert_allclose(grad_w, [-22.5, -15.0, 37.5], atol=1e-12)
    assert grad_gamma == pytest.approx(47.5, abs=1e-12)
    huge = hidden.autograd_mix(states, np.array([1000.0, 0.0, -1000.0]), 2.0, mask, grad)
    np.testing.assert_allclose(huge[0], [[1.0, 3.0], [0.0, 2.0]], atol=1e-12)
    np.testing.assert_allclose(huge[1], [0.0, 0.0, 0.0], atol=1e-12)
    assert huge[2] == pytest.approx(2.5, abs=1e-12)


# --------------------------------------------------------------------------------------------
# Part E: the model answer's numbers are those the exploration cell prints
# --------------------------------------------------------------------------------------------

# Numbers of the model answer that are the question's own settings, not results.
SETTINGS = {"0", "1", "8", "2019"}


def test_the_model_answer_quotes_the_numbers_the_exploration_cell_prints(capsys):
    """Every number of Part E's model answer appears in what the reference's cell prints."""
    notebook = solution(ASSIGNMENT).notebook
    cell = next(c.source for c in notebook.cells if "the numbers for Part E" in c.source)
    answer = next(c.source for c in notebook.cells if "**Model answer.**" in c.source)
    capsys.readouterr()
    run_cell(cell, dict(reference_namespace(ASSIGNMENT)), "Part E's exploration cell")
    printed = capsys.readouterr().out
    assert "the size shrinks by a factor of" in printed, printed
    said = answer.split("*Grading notes")[0]
    numbers = re.findall(r"(?<![\w.^])[-+]?\d+(?:,\d{3})*(?:\.\d+)?(?:e[-+]\d+)?(?![\w^])", said)
    assert len(numbers) >= 8, numbers
    missing = [n for n in numbers if n.lstrip("+-") not in SETTINGS and n not in printed]
    assert missing == [], f"numbers of the model answer that the cell does not print: {missing}"
