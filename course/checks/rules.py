"""The rule of each assignment's hidden tests, stated and applied by its visible tests.

While an assignment's hidden tests run a student's function, every public callable of the
``course`` package (outside ``course.checks``) and the library routines that would do the
part's work (:data:`RULES`) are replaced by traps. The visible checks run the student's
functions under the same rule (:func:`by_hand`), so a function built on a course helper fails
its visible test with the rule, instead of passing it and losing every hidden point::

    attention called course.models.attention.attention (a course helper): this part's hidden
    tests forbid the course's helpers and torch.nn.functional.scaled_dot_product_attention...;
    write the computation by hand

The hidden tests build their traps from this module (the lists of :data:`RULES`,
:func:`collect_targets` and :func:`trapped`), so that the two sides apply one rule.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import pkgutil
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from course.checks import CheckFailed, expect_value_error

__all__ = ["Rule", "RULES", "HelperForbidden", "collect_targets", "trapped", "by_hand"]

Target = tuple[Any, str, str]  # (owner, attribute, label)
Library = tuple[tuple[str, tuple[str, ...]], ...]  # (dotted owner, attribute names)


@dataclass(frozen=True)
class Rule:
    """What an assignment's hidden tests forbid besides the course's helpers.

    ``library`` pairs a dotted owner (a module, or a class such as ``torch.Tensor``) with the
    names of the routines to trap; ``summary`` names them for a student, in a few words.
    """

    library: Library
    summary: str


_RECURRENT_LAYERS = ("LSTM", "LSTMCell", "GRU", "GRUCell", "RNN", "RNNCell", "RNNBase")
_TRANSFORMER_LAYERS = tuple(
    "Transformer TransformerEncoder TransformerDecoder TransformerEncoderLayer "
    "TransformerDecoderLayer".split()
)
_NORMS = ("LayerNorm", "GroupNorm", "RMSNorm")
_SOFTMAXES = ("softmax", "log_softmax", "softmin")

# The lectures' modules, trapped by name as well: the walk over the ``course`` package traps
# every public callable it finds, and these names are trapped even if a module is imported by
# a path that the walk skips. Names a module does not define are ignored.
# transformers' RoPE (Assignment 5, Part D): GPT-NeoX's partial rotation and Llama's copy of it.
_ROTARY_HELPERS = (
    "apply_rotary_pos_emb",
    "rotate_half",
    "GPTNeoXRotaryEmbedding",
    "LlamaRotaryEmbedding",
)
_COURSE_ATTENTION = tuple(
    "attention scaled_dot_product_attention causal_mask padding_mask MultiHeadAttention "
    "multi_head_attention sinusoidal_encoding LearnedPositions alibi_slopes alibi_bias rope "
    "apply_rope".split()
)
_COURSE_TRANSFORMER = tuple(
    "FeedForward EncoderLayer DecoderLayer Transformer Seq2SeqTransformer copy_to_torch "
    "layer_norm LayerNorm decoder_mask count_parameters".split()
)
_COURSE_PARAMETERS = tuple(
    "attention_parameters feed_forward_parameters count_transformer TransformerCount "
    "count_parameters layer_norm_parameters".split()
)

# Unit 7's course modules, trapped by name as well (the walk over ``course`` finds them too).
_A7_COURSE_BERT_INPUTS = tuple(
    "frame_pair frame_words pad_batch mask_tokens make_nsp_pairs pretraining_batch".split()
)
_A7_COURSE_WORDPIECE = tuple(
    "pre_tokenize count_words WordPiece learn_wordpiece tokenizers_tokenize "
    "train_tokenizers_wordpiece compare_with_tokenizers".split()
)
_A7_COURSE_BERT = tuple("BertEmbeddings BertModel BertForPreTraining fill_mask".split())
_A7_COLLATORS = ("DataCollatorForLanguageModeling", "DataCollatorForWholeWordMask")
_A7_PRE_TOKENIZERS = tuple(
    "BertPreTokenizer Whitespace WhitespaceSplit Punctuation Sequence Split".split()
)

# Unit 8's course modules, trapped by name as well (the walk over ``course`` finds them too).
_A8_COURSE_DECODING = tuple(
    "greedy_search beam_search map_state temperature_scale top_k_filter top_p_filter "
    "filter_logits sample".split()
)
_A8_COURSE_GPT = tuple(
    "GPT block_with_cache to_gpt2_state_dict load_gpt2_state_dict load_openai_gpt_state_dict "
    "save_for_transformers".split()
)
_A8_WARPERS = tuple(
    "TemperatureLogitsWarper TopKLogitsWarper TopPLogitsWarper MinPLogitsWarper "
    "TypicalLogitsWarper EpsilonLogitsWarper EtaLogitsWarper LogitsProcessorList".split()
)
_A8_TORCH_WORK = (
    "softmax",
    "log_softmax",
    "topk",
    "sort",
    "argsort",
    "multinomial",
    "searchsorted",
)

_A4_SOFTMAXES = ("softmax", "log_softmax", "logsumexp")

RULES: dict[str, Rule] = {
    "a1_rnn_bptt": Rule(
        library=(
            ("torch.autograd", ("backward", "grad")),
            ("torch.Tensor", ("backward",)),
            ("torch.nn", ("RNN",)),
            ("torch.nn.modules.rnn", ("RNN",)),
            (
                "torch.nn.utils",
                ("clip_grad_norm_", "clip_grad_norm", "get_total_norm", "clip_grads_with_norm_"),
            ),
            (
                "torch.nn.utils.clip_grad",
                ("clip_grad_norm_", "clip_grad_norm", "_get_total_norm", "_clip_grads_with_norm_"),
            ),
        ),
        summary="torch.autograd, Tensor.backward, torch.nn.RNN and torch.nn.utils.clip_grad_norm_",
    ),
    "a2_lstm_gru": Rule(
        library=(
            ("torch.nn", _RECURRENT_LAYERS),
            ("torch.nn.modules.rnn", _RECURRENT_LAYERS),
            ("torch", ("lstm", "lstm_cell", "gru", "gru_cell")),
            ("torch._VF", ("lstm", "lstm_cell", "gru", "gru_cell")),
            (
                "torch.nn.utils.rnn",
                (
                    "pack_padded_sequence",
                    "pad_packed_sequence",
                    "pack_sequence",
                    "unpack_sequence",
                ),
            ),
            ("torch.autograd", ("backward", "grad")),
            ("torch.Tensor", ("backward",)),
        ),
        summary=(
            "torch's recurrent layers and routines (torch.nn.LSTM, LSTMCell, GRU, GRUCell...), "
            "its packing of sequences and autograd"
        ),
    ),
    "a3_bilstm_elmo": Rule(
        library=(
            ("torch.nn", (*_RECURRENT_LAYERS, "LayerNorm", "Softmax", "CosineSimilarity")),
            ("torch.nn.modules.rnn", _RECURRENT_LAYERS),
            (
                "torch",
                (
                    "lstm",
                    "lstm_cell",
                    "gru",
                    "gru_cell",
                    "softmax",
                    "log_softmax",
                    "layer_norm",
                    "cosine_similarity",
                ),
            ),
            ("torch._VF", ("lstm", "lstm_cell", "gru", "gru_cell")),
            (
                "torch.nn.functional",
                ("softmax", "log_softmax", "layer_norm", "cosine_similarity", "normalize"),
            ),
            ("torch.nn.utils.rnn", ("pack_padded_sequence", "pad_packed_sequence")),
            ("torch.autograd", ("backward", "grad")),
            ("torch.Tensor", ("backward", "softmax")),
            ("torch", ("cov", "svd", "pca_lowrank", "svd_lowrank")),
            ("torch.linalg", ("svd", "svdvals", "eig", "eigh", "eigvals", "eigvalsh")),
        ),
        summary=(
            "torch's recurrent layers (torch.nn.GRU, LSTM, their cells and functions), its "
            "softmax, layer norm, cosine similarity, covariance, eigenvalue and singular "
            "value routines, and autograd"
        ),
    ),
    "a4_seq2seq_attention": Rule(
        library=(
            ("torch.nn", ("MultiheadAttention", "Softmax", "LogSoftmax", "Softmin", "Bilinear")),
            (
                "torch.nn.functional",
                (
                    "scaled_dot_product_attention",
                    "multi_head_attention_forward",
                    "softmax",
                    "log_softmax",
                    "softmin",
                    "bilinear",
                ),
            ),
            ("torch.nn", _RECURRENT_LAYERS),
            ("torch.nn.modules.rnn", _RECURRENT_LAYERS),
            ("torch", (*_A4_SOFTMAXES, "bilinear", "gru", "gru_cell")),
            ("torch._VF", ("gru", "gru_cell")),
            ("torch.special", _A4_SOFTMAXES),
            ("torch.Tensor", (*_A4_SOFTMAXES, "backward")),
            ("torch.autograd", ("backward", "grad")),
            ("scipy.special", _A4_SOFTMAXES),
            # Lecture 4's helpers, by name (every other public callable of `course` is trapped too).
            ("course.decoding", ("greedy_search", "beam_search")),
            (
                "course.models.seq2seq",
                (
                    "Encoder",
                    "Decoder",
                    "Attention",
                    "Seq2Seq",
                    "attention_scores",
                    "score",
                    "masked_softmax",
                    "lengths_mask",
                ),
            ),
        ),
        summary=(
            "torch's attention (torch.nn.functional.scaled_dot_product_attention, "
            "torch.nn.MultiheadAttention), its recurrent layers and cells (torch.nn.GRUCell, "
            "GRU...), the softmaxes and log-sum-exp of torch and SciPy, and autograd"
        ),
    ),
    "a5_self_attention": Rule(
        library=(
            (
                "torch.nn",
                ("MultiheadAttention", *_TRANSFORMER_LAYERS, "Softmax", "LogSoftmax", "Softmin"),
            ),
            ("torch.nn.modules.activation", ("MultiheadAttention",)),
            (
                "torch.nn.functional",
                ("scaled_dot_product_attention", "multi_head_attention_forward", *_SOFTMAXES),
            ),
            ("torch._C._nn", ("scaled_dot_product_attention",)),
            (
                "torch",
                ("softmax", "log_softmax", "_softmax", "_native_multi_head_attention"),
            ),
            ("torch.Tensor", ("softmax", "log_softmax", "logsumexp", "backward")),
            ("torch", ("logsumexp",)),
            ("torch.autograd", ("backward", "grad")),
            ("torch.special", ("softmax", "log_softmax", "logsumexp")),
            ("scipy.special", ("softmax", "log_softmax", "logsumexp")),
            ("transformers.models.gpt_neox.modeling_gpt_neox", _ROTARY_HELPERS),
            ("transformers.models.llama.modeling_llama", _ROTARY_HELPERS),
            ("course.models.attention", _COURSE_ATTENTION),
        ),
        summary=(
            "torch.nn.functional.scaled_dot_product_attention, torch.nn.MultiheadAttention and "
            "its kin, the softmaxes and log-sum-exps of torch and SciPy, transformers' rotary "
            "helpers, and autograd"
        ),
    ),
    "a6_transformer": Rule(
        library=(
            (
                "torch.nn",
                (*_TRANSFORMER_LAYERS, *_NORMS, "MultiheadAttention", "Linear", "Embedding")
                + ("Softmax", "LogSoftmax", "Softmin"),
            ),
            ("torch.nn.modules.transformer", _TRANSFORMER_LAYERS),
            ("torch.nn.modules.normalization", _NORMS),
            ("torch.nn.modules.activation", ("MultiheadAttention",)),
            ("torch.nn.modules.linear", ("Linear",)),
            ("torch.nn.modules.sparse", ("Embedding",)),
            (
                "torch.nn.functional",
                ("layer_norm", "group_norm", "rms_norm", "scaled_dot_product_attention")
                + ("multi_head_attention_forward", *_SOFTMAXES),
            ),
            ("torch._C._nn", ("scaled_dot_product_attention",)),
            (
                "torch",
                (
                    "layer_norm",
                    "native_layer_norm",
                    "rms_norm",
                    "group_norm",
                    "softmax",
                    "log_softmax",
                    "_softmax",
                )
                + ("_native_multi_head_attention", "_transformer_encoder_layer_fwd"),
            ),
            ("torch.Tensor", ("softmax", "log_softmax", "backward")),
            ("torch.autograd", ("backward", "grad")),
            ("torch.autograd.functional", ("vjp", "jvp", "jacobian", "hessian", "vhp", "hvp")),
            (
                "torch.func",
                ("grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian")
                + ("linearize",),
            ),
            ("torch.special", ("softmax", "log_softmax")),
            ("scipy.special", ("softmax", "log_softmax")),
            ("course.models.attention", _COURSE_ATTENTION),
            ("course.models.transformer", _COURSE_TRANSFORMER),
            ("course.analysis.parameters", _COURSE_PARAMETERS),
        ),
        summary=(
            "torch's Transformer layers and attention, its layer and RMS norms "
            "(torch.nn.LayerNorm, torch.nn.RMSNorm, F.layer_norm, F.rms_norm...), Linear and "
            "Embedding, the softmaxes of torch and SciPy, and autograd (torch.autograd, "
            "torch.func)"
        ),
    ),
    "a7_bert": Rule(
        library=(
            ("torch", ("bernoulli",)),
            ("torch.Tensor", ("bernoulli", "bernoulli_")),
            (
                "transformers",
                (*_A7_COLLATORS, "BertTokenizer", "BertTokenizerFast", "AutoTokenizer"),
            ),
            ("transformers.data.data_collator", _A7_COLLATORS),
            (
                "transformers.data.data_collator.DataCollatorForLanguageModeling",
                ("torch_mask_tokens", "numpy_mask_tokens"),
            ),
            (
                "transformers.models.bert.tokenization_bert",
                ("BertTokenizer", "WordpieceTokenizer", "BasicTokenizer"),
            ),
            ("tokenizers", ("Tokenizer", "BertWordPieceTokenizer")),
            ("tokenizers.models", ("WordPiece",)),
            ("tokenizers.pre_tokenizers", _A7_PRE_TOKENIZERS),
            ("torch", ("softmax", "log_softmax")),
            ("torch.Tensor", ("backward", "softmax", "log_softmax")),
            ("torch.nn.functional", ("softmax", "log_softmax")),
            ("torch.special", ("softmax", "log_softmax")),
            ("torch.autograd", ("backward", "grad")),
            ("torch.func", ("grad", "grad_and_value", "vjp", "jacrev", "jacfwd")),
            ("scipy.special", ("softmax", "log_softmax", "logsumexp")),
            ("course.data.bert_inputs", _A7_COURSE_BERT_INPUTS),
            ("course.data.wordpiece", _A7_COURSE_WORDPIECE),
            ("course.models.bert", _A7_COURSE_BERT),
        ),
        summary=(
            "transformers' DataCollatorForLanguageModeling and BERT tokenisers, the tokenizers "
            "library, torch.bernoulli, the softmaxes of torch and scipy, and autograd"
        ),
    ),
    "a8_gpt_decoding": Rule(
        library=(
            ("torch", (*_A8_TORCH_WORK, "_softmax", "kthvalue")),
            ("torch.Tensor", (*_A8_TORCH_WORK[:6], "kthvalue")),
            (
                "torch.nn.functional",
                ("softmax", "log_softmax", "softmin", "gumbel_softmax")
                + ("scaled_dot_product_attention", "multi_head_attention_forward"),
            ),
            ("torch.special", ("softmax", "log_softmax", "logsumexp")),
            ("torch._C._nn", ("scaled_dot_product_attention",)),
            ("torch.nn", ("Softmax", "LogSoftmax", "Softmin", "Softmax2d", "MultiheadAttention")),
            ("transformers", _A8_WARPERS),
            ("transformers.generation.logits_process", _A8_WARPERS),
            ("scipy.special", ("softmax", "log_softmax", "logsumexp")),
            ("course.decoding", _A8_COURSE_DECODING),
            ("course.models.gpt", _A8_COURSE_GPT),
        ),
        summary=(
            "transformers' logits warpers, torch's softmaxes, topk, sort, multinomial and "
            "attention, and scipy.special's softmaxes and logsumexp"
        ),
    ),
}


class HelperForbidden(CheckFailed):
    """A student's function called a routine that the part's hidden tests forbid."""


# -- the targets: named library routines, and every public callable of `course` ---------------


def _resolve(dotted: str) -> Any:
    """Import ``dotted`` as a module, or as an attribute of its parent module (torch.Tensor)."""
    try:
        return importlib.import_module(dotted)
    except ImportError:
        parent, _, attribute = dotted.rpartition(".")
        return getattr(importlib.import_module(parent), attribute)


def _allowed(module_name: str) -> bool:
    """True for ``course.checks`` (and anything below it) and for private modules."""
    parts = module_name.split(".")
    return parts[:2] == ["course", "checks"] or any(part.startswith("_") for part in parts)


def _course_modules() -> list[Any]:
    """``course`` and every module and subpackage below it, recursively, except the allowed
    ones (``course.checks``, private modules): their callables are off limits."""
    import course

    modules = [course]
    found = pkgutil.walk_packages(course.__path__, prefix="course.", onerror=lambda name: None)
    for name in sorted(info.name for info in found):
        if _allowed(name):
            continue
        try:
            modules.append(importlib.import_module(name))
        except Exception:  # noqa: BLE001 - a helper that does not import cannot be called either
            continue
    return modules


_COURSE_TARGETS: dict[tuple, list[Target]] = {}


def _course_key() -> tuple:
    """What the lists of targets are made from: the package's path and the loaded modules (a
    module imported, or replaced in ``sys.modules``, since the last list makes a new one)."""
    import course

    return (tuple(course.__path__), tuple(map(id, sys.modules.values())))


def _course_targets() -> tuple[tuple, list[Target]]:
    """Every public callable of the ``course`` package outside ``course.checks``, with the
    :func:`_course_key` it was made for.

    Walking the package and scanning its modules costs milliseconds, and a hidden check traps
    hundreds of calls: the list is made again only when the package's path or the set of loaded
    modules changed (a module imported since is then covered too).
    """
    key = _course_key()
    if key not in _COURSE_TARGETS:
        found = []
        for module in _course_modules():
            for attribute, value in sorted(vars(module).items()):
                origin = getattr(value, "__module__", None) or ""
                if (
                    not attribute.startswith("_")
                    and callable(value)
                    and origin.split(".")[0] == "course"
                    and not _allowed(origin)
                ):
                    found.append((module, attribute, f"{module.__name__}.{attribute}"))
        _COURSE_TARGETS.clear()
        key = _course_key()  # after the walk, which may import
        _COURSE_TARGETS[key] = found
    return key, list(_COURSE_TARGETS[key])


def collect_targets(library: Iterable[tuple[str, Iterable[str]]]) -> list[Target]:
    """(owner, attribute, label) for each named library routine that exists, then for every
    public callable of the ``course`` package outside ``course.checks``. Each (owner,
    attribute) is listed once, with its first label: a ``course`` routine named in ``library``
    is found again by the walk over the package.

    ``library`` pairs a dotted owner (a module, or a class such as ``torch.Tensor``) with the
    attribute names to trap. A leading underscore is dropped from labels, so messages name the
    public routine.
    """
    library = tuple((owner, tuple(attributes)) for owner, attributes in library)
    course_key, course_targets = _course_targets()  # first: the walk may import
    key = (library, course_key)
    if key not in _TARGETS:
        _TARGETS.clear()
        _TARGETS[key] = _collect(library, course_targets)
    return list(_TARGETS[key])


_TARGETS: dict[tuple, list[Target]] = {}  # the last list of targets, by what it was made from


def _collect(library: tuple[tuple[str, tuple[str, ...]], ...], course_targets: list[Target]):
    targets = []
    for owner_name, attributes in library:
        try:
            owner = _resolve(owner_name)
        except (ImportError, AttributeError):
            continue
        for attribute in attributes:
            if hasattr(owner, attribute):
                targets.append((owner, attribute, f"{owner_name}.{attribute.lstrip('_')}"))
    targets += course_targets
    seen: set[tuple[int, str]] = set()
    unique = []
    for owner, attribute, label in targets:
        if (id(owner), attribute) not in seen:
            seen.add((id(owner), attribute))
            unique.append((owner, attribute, label))
    return unique


# -- the traps --------------------------------------------------------------------------------


_ABSENT = object()


def _restore(owner: Any, attribute: str, own: Any) -> None:
    """Put back ``owner.attribute`` as it was: its own value, or, if it had none (a method a
    class inherits), no attribute of its own, so the inherited one shows again. (What
    ``mock.patch.object`` does, without its cost per target: hundreds of targets per call.)"""
    if own is _ABSENT:
        with contextlib.suppress(AttributeError):
            delattr(owner, attribute)
    else:
        setattr(owner, attribute, own)


def _undo(undo: list[tuple[str, Any, Any, Any]], namespace: Any) -> None:
    """Undo the traps, newest first; every one is undone even if one fails (its error is
    raised afterwards)."""
    failure = None
    for kind, first, second, third in reversed(undo):
        try:
            if kind == "attribute":
                _restore(first, second, third)
            else:
                namespace[first] = second
        except Exception as error:  # noqa: BLE001 - raised once everything else is back
            failure = failure or error
    if failure is not None:
        raise failure


@contextlib.contextmanager
def trapped(
    function: Callable[..., Any],
    targets: list[Target],
    refusal: Callable[[str], BaseException],
) -> Iterator[list[str]]:
    """Replace every target by a trap inside the ``with`` block; yield the list of trapped calls.

    Both the owners' attributes (``torch.autograd.grad``) and the names in ``function``'s
    globals bound to a target (``from torch.autograd import grad`` in a notebook) are replaced.
    A trap records its label and raises ``refusal(label)``. Everything is restored on exit,
    even after an error.
    """
    calls: list[str] = []

    def make_trap(label: str) -> Callable[..., Any]:
        def trap(*args: Any, **kwargs: Any) -> Any:
            calls.append(label)
            raise refusal(label)

        trap.__name__ = f"trapped_{label.rpartition('.')[2]}"
        return trap

    namespace = getattr(function, "__globals__", None)
    bound: dict[int, list[str]] = {}  # id of a value in the function's globals -> its names
    if isinstance(namespace, dict):
        for key, value in namespace.items():
            bound.setdefault(id(value), []).append(key)
    # What to undo, newest last: ("attribute", owner, name, own value) or ("global", name,
    # value). A plain list, not an ExitStack's callbacks: hundreds of targets per call, and
    # the visible and hidden checks set the traps for every call of a student's function.
    undo: list[tuple[str, Any, Any, Any]] = []
    try:
        for owner, attribute, label in targets:
            original = getattr(owner, attribute)
            trap = make_trap(label)
            undo.append(("attribute", owner, attribute, vars(owner).get(attribute, _ABSENT)))
            setattr(owner, attribute, trap)
            for key in bound.get(id(original), ()):
                if namespace[key] is original:
                    namespace[key] = trap
                    undo.append(("global", key, original, None))
        yield calls
    finally:
        _undo(undo, namespace)


# -- the visible checks' side -----------------------------------------------------------------


def _function_name(function: Any) -> str:
    return getattr(function, "__name__", None) or type(function).__name__


def by_hand(assignment: str, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)`` under the rule of ``assignment``'s hidden tests.

    A call to a course helper or to a routine of the rule's library, even one whose error the
    function catches, raises :class:`HelperForbidden` naming the routine and stating the rule.
    """
    __tracebackhide__ = True  # a student's own error shows their frames, not this one
    rule = RULES[assignment]
    name = _function_name(function)

    def refusal(label: str) -> HelperForbidden:
        kind = "a course helper" if label.startswith("course.") else "a routine this part forbids"
        return HelperForbidden(
            f"{name} called {label} ({kind}): this part's hidden tests forbid the course's "
            f"helpers and {rule.summary}; write the computation by hand"
        )

    with trapped(function, collect_targets(rule.library), refusal) as calls:
        try:
            returned = function(*args, **kwargs)
        except HelperForbidden:
            raise
        except Exception as error:
            if calls:
                raise refusal(calls[0]) from error
            raise
    if calls:
        raise refusal(calls[0])
    return returned


def expect_refused(
    assignment: str,
    calls: Mapping[str, tuple[Callable[..., Any], tuple[Any, ...], Mapping[str, Any]]],
) -> None:
    """Each call, ``label: (function, args, kwargs)``, run by :func:`by_hand` under
    ``assignment``'s rule with NumPy's warnings silenced, must raise ValueError: the visible
    checks' calls on bad input. A failure names the call's label
    (:func:`course.checks.expect_value_error`)."""
    __tracebackhide__ = True
    with np.errstate(all="ignore"):
        expect_value_error(
            {
                label: functools.partial(by_hand, assignment, function, *args, **kwargs)
                for label, (function, args, kwargs) in calls.items()
            }
        )
