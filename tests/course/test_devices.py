"""Every model runs on any device (issue 24): the tensors a model makes follow its input's device.

No GPU is needed. ``simulated_device()`` simulates one: a tensor "on" it is a CPU tensor wrapped
in :class:`OnDevice`, a subclass that reports the device ``meta``, and a ``TorchDispatchMode``
(:class:`SecondDevice`) runs every aten op on the CPU data underneath (so data-dependent code, ``.item()``, ``bool()``,
``.tolist()``, works as on a real device). Like CUDA, it refuses an op that mixes a tensor on the
device with a plain CPU tensor (0-dimensional CPU scalars excepted, as CUDA allows them), a
draw on the device from a CPU generator, and device lengths for ``pack_padded_sequence``. A
factory call without ``device=`` (``torch.arange(T)``, ``torch.zeros(B, H)``) makes a plain CPU
tensor, exactly as it does on a machine with a GPU, so the first op that meets the model's
tensors fails with the error a student with a GPU would see:

    Expected all tensors to be on the same device, but found at least two devices, meta and cpu!

Each case below runs a model family's forward pass, loss and backward pass, and its decoding and
analysis helpers, with the model and its inputs on the simulated device, and checks that the
numbers are the CPU's. The cases are listed per class of ``course.models``: a class that no case
runs fails :func:`test_every_model_class_has_a_device_case`.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import math
import pkgutil
import re
from collections.abc import Callable, Iterator

import pytest
import torch
from torch import nn
from torch.nn import functional as F
from torch.nn.utils.rnn import pack_padded_sequence
from torch.overrides import TorchFunctionMode
from torch.utils import _pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

import course.models
from course.analysis import bert as bert_analysis
from course.analysis import elmo, generation, interpret, lm
from course.analysis import seq2seq as seq2seq_analysis
from course.analysis.transformer import attention_maps
from course.checkpoints import load_checkpoint, read_metadata
from course.data.chars import CharVocab
from course.data.english import Example
from course.data.numbers import NumberTask
from course.data.wordpiece import SPECIAL_TOKENS, WordPiece
from course.data.words import WordVocab, sentence_tokens
from course.decoding import beam_search, greedy_search, sample, state_device
from course.models import attention as attn
from course.models import model_device
from course.models.bert import BertConfig, BertForPreTraining, evaluate_pretraining, fill_mask
from course.models.bilm import BiLM, lengths_mask, reverse_padded
from course.models.gpt import GPT, GPTConfig
from course.models.recurrent import CharLSTM, CharRNN, SequenceTagger
from course.models.seq2seq import SCORES, Seq2Seq
from course.models.tiny_transformer import ENCODINGS, TinyCausalTransformer
from course.models.transformer import Seq2SeqTransformer, Transformer
from course.train import next_token_loss
from tests.messages import raises
from tools import make_checkpoints

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py

DEVICE = torch.device("meta")  # what a tensor on the simulated device reports
aten = torch.ops.aten
# Ops that legitimately take tensors of two devices: copies between devices, and the packing of
# padded sequences, whose lengths and batch sizes live on the CPU whatever the data's device.
CROSS_DEVICE = {
    aten.copy_.default,
    aten._to_copy.default,
    aten._pack_padded_sequence.default,
    aten._pad_packed_sequence.default,
}
PACKING_CPU_OUTPUTS = {aten._pack_padded_sequence.default, aten._pad_packed_sequence.default}
# Indexing a device tensor with CPU indices is allowed: CUDA moves the indices itself.
INDEXING = {
    aten.index.Tensor,
    aten.index_put.default,
    aten.index_put_.default,
    aten._index_put_impl_.default,
}


class OnDevice(torch.Tensor):
    """A CPU tensor (``.cpu_data``) that says it lives on the simulated device."""

    @staticmethod
    def __new__(cls, data: torch.Tensor) -> OnDevice:
        wrapper = torch.Tensor._make_wrapper_subclass(
            cls,
            data.size(),
            strides=data.stride(),
            storage_offset=data.storage_offset(),
            dtype=data.dtype,
            layout=data.layout,
            device=DEVICE,
            requires_grad=data.requires_grad,
        )
        wrapper.cpu_data = data
        return wrapper

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        raise RuntimeError(f"{func} on a simulated-device tensor outside SecondDevice()")


def _leaves(x) -> list:
    """The leaves of an op's arguments or results (lists, tuples and dicts): a fast
    torch.utils._pytree.tree_leaves for the one call per op."""
    if isinstance(x, (list, tuple)):
        return [leaf for value in x for leaf in _leaves(value)]
    if isinstance(x, dict):
        return [leaf for value in x.values() for leaf in _leaves(value)]
    return [x]


def _map(fn, x):
    if isinstance(x, (list, tuple)):
        return type(x)(_map(fn, value) for value in x)
    if isinstance(x, dict):
        return {key: _map(fn, value) for key, value in x.items()}
    return fn(x)


def _restride(wrapper: OnDevice, data: torch.Tensor) -> None:
    """Give a wrapper the sizes and strides an in-place op (``transpose_``) gave its data: the
    wrapper itself is a meta tensor below the Python key, where this is metadata only."""
    with torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(torch._C.DispatchKey.Python)):
        aten.as_strided_(wrapper, data.size(), data.stride(), data.storage_offset())


class SecondDevice(TorchDispatchMode):
    """Runs every op on the CPU data of :class:`OnDevice` tensors, with CUDA's device checks."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        leaves = _leaves((args, kwargs))
        on_device = [x for x in leaves if isinstance(x, OnDevice)]
        if any(type(x) is torch.Tensor and x.device == DEVICE for x in leaves):
            raise AssertionError(
                f"{func}: a real meta tensor, with no data, escaped the simulation"
            )
        if on_device and func not in CROSS_DEVICE:
            checked = leaves
            if func in INDEXING:  # CUDA moves CPU indices to the device itself
                checked = _leaves((args[0], args[2:], kwargs))
            on_cpu = [x for x in checked if type(x) is torch.Tensor and x.dim() > 0]
            if on_cpu:
                raise RuntimeError(
                    "Expected all tensors to be on the same device, but found at least two "
                    f"devices, meta and cpu! ({func}: a CPU tensor of shape "
                    f"{tuple(on_cpu[0].shape)} met the device's tensors)"
                )
            if any(isinstance(x, torch.Generator) and x.device.type == "cpu" for x in leaves):
                raise RuntimeError(
                    f"Expected a 'meta' device type for generator but found 'cpu' ({func})"
                )
        if func is aten._pack_padded_sequence.default and isinstance(args[1], OnDevice):
            raise RuntimeError(
                "'lengths' argument should be a 1D CPU int64 tensor, but got 1D meta Long tensor"
            )
        device = kwargs.get("device")
        to_device = torch.device(device) == DEVICE if device is not None else bool(on_device)
        args, kwargs = _map(lambda x: x.cpu_data if isinstance(x, OnDevice) else x, (args, kwargs))
        if device is not None and torch.device(device) == DEVICE:
            kwargs["device"] = torch.device("cpu")
        out = func(*args, **kwargs)
        inputs = {id(x.cpu_data): x for x in on_device}  # in-place ops return their input

        def wrap(x):
            if not isinstance(x, torch.Tensor):
                return x
            if id(x) in inputs:
                wrapper = inputs[id(x)]
                if (wrapper.shape, wrapper.stride()) != (x.shape, x.stride()):  # transpose_...
                    _restride(wrapper, x)
                return wrapper
            if to_device and func in PACKING_CPU_OUTPUTS:  # batch sizes and lengths: on the CPU
                return x if x.dtype == torch.long and x.dim() == 1 else OnDevice(x)
            return OnDevice(x) if to_device else x

        return _map(wrap, out)


class _BelowTheModes(TorchFunctionMode):
    """What torch does below the dispatch modes, done where SecondDevice sees it: a tensor from
    Python data (``torch.tensor(data, device=...)``, ``torch.as_tensor``, a list used as an
    index) is built on the CPU and then moved; ``.tolist()`` reads the CPU data."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        device = kwargs.get("device")
        if func in (torch.tensor, torch.as_tensor) and device is not None:
            if torch.device(device) == DEVICE:
                return func(*args, **{**kwargs, "device": "cpu"}).to(DEVICE)
        if func in (torch.Tensor.__getitem__, torch.Tensor.__setitem__):
            self_, index, *value = args
            lists = lambda i: torch.tensor(i) if isinstance(i, list) else i  # noqa: E731
            index = tuple(map(lists, index)) if isinstance(index, tuple) else lists(index)
            return func(self_, index, *value, **kwargs)
        if func is torch.Tensor.tolist and isinstance(args[0], OnDevice):
            return args[0].cpu_data.tolist()
        out = func(*args, **kwargs)
        if getattr(func, "__name__", "") in RNN_OPS and not _rnn_training(args):
            _refuse_backward(out)
        return out


# cuDNN computes an RNN's backward pass only in training mode: a backward pass through an
# nn.RNN, nn.LSTM or nn.GRU in eval mode fails on a GPU ("cudnn RNN backward can only be called
# in training mode") and works on the CPU. The simulated device fails it too.
RNN_OPS = {"lstm", "gru", "rnn_tanh", "rnn_relu"}


def _rnn_training(args: tuple) -> bool:
    """The ``train`` argument of ``_VF.lstm`` and its kin: the 7th, or the 8th for packed input
    (whose 4th argument is the list of weights, where the unpacked form has a bool)."""
    return bool(args[6] if isinstance(args[3], bool) else args[7])


def _refuse_backward(out) -> None:
    def refuse(grad):
        raise RuntimeError("cudnn RNN backward can only be called in training mode")

    for t in pytree.tree_leaves(out):
        if isinstance(t, OnDevice) and t.requires_grad:
            t.register_hook(refuse)


@contextlib.contextmanager
def simulated_device() -> Iterator[None]:
    """Inside, ``DEVICE`` is a second device (tensors made there are OnDevice tensors)."""
    with _BelowTheModes(), SecondDevice():
        yield


MOVED: list[type] = []  # the classes of the models on_device moved, for the coverage check


def move_(model: nn.Module, device: torch.device) -> nn.Module:
    """Move ``model``'s parameters and buffers to the simulated device or back to the CPU, in
    place, as ``Module.to`` does on a real device: tied parameters stay tied."""
    if device == DEVICE:
        convert = OnDevice
    else:
        convert = lambda t: t.cpu_data if isinstance(t, OnDevice) else t  # noqa: E731
    moved: dict[int, nn.Parameter] = {}
    for module in model.modules():
        for name, p in list(module._parameters.items()):
            if p is not None:
                if id(p) not in moved:
                    moved[id(p)] = nn.Parameter(convert(p.detach()), p.requires_grad)
                setattr(module, name, moved[id(p)])  # setattr: nn.LSTM updates _flat_weights
        for name, b in list(module._buffers.items()):
            if b is not None:
                module._buffers[name] = convert(b)
    return model


def on_device(model: nn.Module) -> nn.Module:
    """A copy of ``model`` on the simulated device. Call inside ``simulated_device()``."""
    MOVED.append(type(model))
    return move_(copy.deepcopy(model), DEVICE)


def dev(x):
    """Tensors (in any nesting of tuples, lists and dicts) moved to the simulated device."""
    return pytree.tree_map(lambda t: t.to(DEVICE) if isinstance(t, torch.Tensor) else t, x)


def same(on_dev, on_cpu, atol: float = 1e-5) -> None:
    """The device's result is on the device and equals the CPU's."""
    for a, b in zip(pytree.tree_leaves(on_dev), pytree.tree_leaves(on_cpu), strict=True):
        if isinstance(b, torch.Tensor):
            assert isinstance(a, OnDevice) and a.device == DEVICE, f"{type(a)} {a.device}"
            torch.testing.assert_close(a.cpu(), b, atol=atol, rtol=1e-4)
        else:
            assert a == pytest.approx(b, abs=atol), (a, b)


def same_hypotheses(got, want) -> None:
    """Decoded hypotheses: the same tokens, and the same scores up to rounding."""
    assert [h.tokens for h in got] == [h.tokens for h in want]
    assert [h.score for h in got] == pytest.approx([h.score for h in want], abs=1e-5)


def backward_reaches_the_device(model: nn.Module, loss: torch.Tensor) -> None:
    loss.backward()
    grads = [p.grad for p in model.parameters() if p.requires_grad]
    assert grads and all(isinstance(g, OnDevice) for g in grads if g is not None)


def test_the_simulated_device_catches_a_cpu_tensor_meeting_a_device_tensor():
    with simulated_device():
        x = dev(torch.ones(2, 3))
        assert isinstance(x, OnDevice) and x.device == DEVICE
        assert (x + 1).device == DEVICE and float(x.sum()) == 6.0  # data-dependent ops work
        assert (x * torch.tensor(2.0)).sum().item() == 12.0  # a CPU scalar is allowed, as in CUDA
        with pytest.raises(RuntimeError, match="same device"):
            x + torch.ones(3)  # made on the CPU: what `torch.ones(3)` does beside a GPU tensor
        assert (x + torch.ones(3, device=x.device)).device == DEVICE
        assert type(x.cpu()) is torch.Tensor and x.cpu().sum() == 6.0
        with pytest.raises(RuntimeError, match="generator"):
            torch.multinomial(dev(torch.ones(3)), 1, generator=torch.Generator())
        linear = on_device(nn.Linear(3, 2))
        with pytest.raises(RuntimeError, match="same device"):
            linear(torch.ones(2, 3))
        assert linear(x).device == DEVICE


@pytest.mark.parametrize("layer", [nn.LSTM, nn.GRU, nn.RNN])
@pytest.mark.parametrize("packed", [False, True])
def test_the_simulated_device_refuses_an_rnn_backward_in_eval_mode_as_cudnn_does(layer, packed):
    with simulated_device():
        rnn = on_device(layer(3, 4, batch_first=True))
        x = dev(torch.randn(2, 5, 3))
        inputs = pack_padded_sequence(x, torch.tensor([5, 3]), batch_first=True) if packed else x

        def output_sum():
            out = rnn(inputs)[0]
            return (out.data if packed else out).sum()

        output_sum().backward()  # training mode: fine
        rnn.eval()
        with torch.no_grad():
            output_sum()  # an evaluation without gradients: fine
        loss = output_sum()  # a forward pass with gradients in eval mode: fine, as on a GPU
        with raises(RuntimeError, "cudnn RNN backward", "training"):
            loss.backward()


def test_model_device_and_state_device_say_where_a_model_and_its_state_live():
    assert model_device(nn.Linear(2, 2)) == torch.device("cpu")
    assert model_device(nn.ReLU()) == torch.device("cpu")  # no parameter or buffer: the CPU
    assert state_device(None) == state_device({"t": [1, 2]}) == torch.device("cpu")
    with simulated_device():
        assert model_device(on_device(nn.BatchNorm1d(2, affine=False))) == DEVICE  # buffers
        assert state_device({"h": [dev(torch.zeros(2))], "step": 3}) == DEVICE


# ----------------------------------------------------------------------------------------------
# One case per model family: (the classes of course.models it runs, the check)


def case_attention() -> None:
    torch.manual_seed(0)
    B, n, d, h = 2, 5, 8, 2
    x, lengths = torch.randn(B, n, d), torch.tensor([5, 3])
    slopes = attn.alibi_slopes(h)
    plain, rotary = attn.MultiHeadAttention(d, h), attn.MultiHeadAttention(d, h, rope=True)
    want = [
        plain(x, mask=attn.causal_mask(n))[0],
        plain(x, mask=attn.padding_mask(lengths, n))[0],
        plain(x, mask=attn.causal_mask(n), bias=attn.alibi_bias(n, slopes))[0],
        rotary(x, mask=attn.causal_mask(n))[0],
        attn.sinusoidal_encoding(n, d),
    ]
    with simulated_device():
        x_, lengths_, slopes_ = dev((x, lengths, slopes))
        plain_, rotary_ = on_device(plain), on_device(rotary)
        got = [
            plain_(x_, mask=attn.causal_mask(n, device=x_.device))[0],
            plain_(x_, mask=attn.padding_mask(lengths_, n))[0],
            plain_(
                x_, mask=attn.causal_mask(n, device=x_.device), bias=attn.alibi_bias(n, slopes_)
            )[0],
            rotary_(x_, mask=attn.causal_mask(n, device=x_.device))[0],
            attn.sinusoidal_encoding(n, d, device=x_.device),
        ]
        same(got, want)
        assert attn.alibi_slopes(h, device=x_.device).device == DEVICE


def case_tiny_transformer() -> None:
    for positions in ENCODINGS:
        torch.manual_seed(0)
        model = TinyCausalTransformer(11, d=8, num_heads=2, num_layers=1, positions=positions)
        tokens = torch.randint(11, (2, 6))
        want = model(tokens)
        with simulated_device():
            model_, tokens_ = on_device(model), dev(tokens)
            logits = model_(tokens_)
            same(logits, want)
            backward_reaches_the_device(
                model_, F.cross_entropy(logits.flatten(0, 1), tokens_.flatten())
            )


def _numbers() -> tuple[NumberTask, list]:
    task = NumberTask()
    return task, task.sample(4, "test", seed=1)


def case_transformer() -> None:
    torch.manual_seed(0)
    body = Transformer(
        d_model=8, num_heads=2, num_encoder_layers=1, num_decoder_layers=1, d_ff=16, dropout=0.0
    )
    src, tgt, lengths = torch.randn(2, 4, 8), torch.randn(2, 3, 8), torch.tensor([4, 2])
    want = body(src, tgt, attn.padding_mask(lengths, 4), attn.causal_mask(3))
    task, pairs = _numbers()
    model = Seq2SeqTransformer(
        len(task.source_vocab),
        len(task.target_vocab),
        d_model=16,
        num_heads=2,
        num_layers=1,
        d_ff=32,
    ).eval()
    src_ids, src_len, tgt_ids = task.batch(pairs)
    want_logits = model(src_ids, src_len, tgt_ids[:, :-1])
    want_out = [
        seq2seq_analysis.translate(model, task, pairs, beam_size=k, max_len=8) for k in (1, 3)
    ]
    want_maps = attention_maps(model, src_ids, src_len, tgt_ids[:, :-1])
    with simulated_device():
        body_, model_ = on_device(body), on_device(model)
        src_, tgt_, lengths_ = dev((src, tgt, lengths))
        mask = attn.padding_mask(lengths_, 4)
        same(body_(src_, tgt_, mask, attn.causal_mask(3, device=src_.device)), want)
        batch = dev((src_ids, src_len, tgt_ids))
        same(model_(*batch[:2], batch[2][:, :-1]), want_logits)
        backward_reaches_the_device(model_, model_.loss(batch))
        for k, want_k in zip((1, 3), want_out, strict=True):
            same_hypotheses(
                seq2seq_analysis.translate(model_, task, pairs, beam_size=k, max_len=8), want_k
            )
        same(attention_maps(model_, *batch[:2], batch[2][:, :-1]), want_maps)


def case_seq2seq() -> None:
    task, pairs = _numbers()
    src, src_len, tgt = task.batch(pairs)
    for score in (*SCORES, None):
        torch.manual_seed(0)
        model = Seq2Seq(
            len(task.source_vocab), len(task.target_vocab), hidden=8, attention=score
        ).eval()
        want_logits = model(src, src_len, tgt[:, :-1])
        decode = score in ("additive", None)  # the decoding helpers: with and without attention
        if decode:
            want_out = [
                seq2seq_analysis.translate(model, task, pairs, beam_size=k, max_len=8)
                for k in (1, 3)
            ]
            want_bias = seq2seq_analysis.exposure_bias(model, task, pairs)
        with simulated_device():
            model_ = on_device(model)
            batch = dev((src, src_len, tgt))
            same(model_(*batch[:2], batch[2][:, :-1]), want_logits)
            model_.train()  # a backward pass through cuDNN's RNNs needs training mode
            backward_reaches_the_device(model_, model_.loss(batch))
            model_.eval()
            if not decode:
                continue
            model_.eval()
            for k, want_k in zip((1, 3), want_out, strict=True):
                same_hypotheses(
                    seq2seq_analysis.translate(model_, task, pairs, beam_size=k, max_len=8), want_k
                )
            assert seq2seq_analysis.exposure_bias(model_, task, pairs) == want_bias
            if score is not None:
                output = want_out[0][0]
                same(
                    seq2seq_analysis.attention_weights(model_, task, pairs[0], output),
                    seq2seq_analysis.attention_weights(model, task, pairs[0], output),
                )


def case_recurrent() -> None:
    text = "def f(x):\n    return x + 1  # one\n" * 2
    vocab = CharVocab.from_text(text)
    ids = vocab.encode(text)
    x, y = ids[:-2].view(3, -1), ids[1:-1].view(3, -1)  # (3, 22)
    for cls, embedding_dim in ((CharRNN, None), (CharLSTM, 4)):  # one-hot and embedded inputs
        torch.manual_seed(0)
        model = cls(len(vocab), 6, embedding_dim=embedding_dim, num_layers=2).eval()
        want = model(x)
        want_bits = lm.bits_per_char(model, ids, batch_size=3, seq_len=7)
        want_windowed = lm.windowed_bits_per_char(model, ids, window=9, batch_size=2)
        want_text = lm.sample(model, vocab, "def", 6, seed=3)
        with simulated_device():
            model_, x_, y_ = on_device(model), dev(x), dev(y)
            logits, state = model_(x_)
            same((logits, state), want)
            same(model_(x_[:, 3:], model_.init_hidden(3)), model(x[:, 3:]))
            same(model_(x_[:, 3:], state), model(x[:, 3:], want[1]))
            model_.train()  # a backward pass through cuDNN's RNNs needs training mode
            backward_reaches_the_device(model_, next_token_loss(model_, (x_, y_)))
            model_.eval()
            # The helpers move the ids they are given (here on the CPU) to the model's device.
            assert lm.bits_per_char(model_, ids, batch_size=3, seq_len=7) == (
                pytest.approx(want_bits, abs=1e-5)
            )
            assert lm.windowed_bits_per_char(model_, dev(ids), window=9, batch_size=2) == (
                pytest.approx(want_windowed, abs=1e-5)
            )
            assert lm.sample(model_, vocab, "def", 6, seed=3) == want_text
            if cls is CharLSTM:  # lstm_states, too, moves the ids to the model's device
                same(
                    interpret.lstm_states(model_, ids[:12]), interpret.lstm_states(model, ids[:12])
                )
    for cell in SequenceTagger.CELLS:
        torch.manual_seed(0)
        tagger = SequenceTagger(len(vocab), 6, 3, cell=cell)
        want = tagger(x)
        with simulated_device():
            tagger_ = on_device(tagger)
            logits = tagger_(dev(x))
            same(logits, want)
            backward_reaches_the_device(tagger_, logits.logsumexp(-1).mean())


SENTENCES = [
    sentence_tokens(s)
    for s in ("The dog ran to the river.", "A green tree stood by it.", "Read the file.")
]


def _word_example(tokens: str, target: int, label: str) -> Example:
    return Example(tuple(tokens.split()), target, label, "x", "0", label, label, False)


WORD_EXAMPLES = [
    _word_example("the dog ran .", 1, "noun"),
    _word_example("a tree stood", 2, "verb"),
    _word_example("read the file", 0, "verb"),
]


def case_bilm() -> None:
    vocab = WordVocab.build(SENTENCES, max_words=20)
    torch.manual_seed(0)
    model = BiLM(len(vocab), dim=6, num_layers=2).eval()
    words, lengths = elmo.encode_sentences(SENTENCES, vocab)
    assert int(lengths.min()) < words.shape[1]  # padded: the packed path runs
    want = [model.layers(words, lengths), model.layers(words), model.lm_logits(words, lengths)]
    want_ppl = elmo.heldout_perplexity(model, vocab, SENTENCES, batch_size=2)
    want_features = elmo.marked_word_features(model, vocab, WORD_EXAMPLES, batch_size=2)
    with simulated_device():
        model_, words_, lengths_ = on_device(model), dev(words), dev(lengths)
        same(reverse_padded(words_, lengths_), reverse_padded(words, lengths))
        same(lengths_mask(lengths_, 4), lengths_mask(lengths, 4))
        same(
            [
                model_.layers(words_, lengths_),
                model_.layers(words_),
                model_.lm_logits(words_, lengths_),
            ],
            want,
        )
        model_.train()
        backward_reaches_the_device(model_, model_.lm_loss(words_, lengths_)[0])
        model_.eval()
        assert elmo.heldout_perplexity(model_, vocab, SENTENCES, batch_size=2) == (
            pytest.approx(want_ppl, rel=1e-5)
        )
        same(elmo.marked_word_features(model_, vocab, WORD_EXAMPLES, batch_size=2), want_features)


BERT_WORDS = ["the", "dog", "ran", ".", "a", "tree", "stood", "read", "file", "##s"]
BERT_VOCAB = WordPiece([*SPECIAL_TOKENS, *BERT_WORDS])


def case_bert() -> None:
    torch.manual_seed(0)
    config = BertConfig(
        len(BERT_VOCAB), d_model=16, num_layers=2, num_heads=2, d_ff=32, max_len=16, dropout=0.0
    )
    model = BertForPreTraining(config).eval()
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(5, len(BERT_VOCAB), (2, 8), generator=g)
    ids[:, 0], ids[:, -1] = 2, 3
    mask, types = torch.ones_like(ids), torch.zeros_like(ids)
    mask[1, 6:] = 0
    types[:, 4:] = 1
    labels = torch.full_like(ids, -100)
    labels[:, 2] = ids[:, 2]
    batch = {
        "input_ids": ids,
        "token_type_ids": types,
        "attention_mask": mask,
        "labels": labels,
        "next_sentence_label": torch.tensor([0, 1]),
    }
    want = model(ids, types, mask)
    want_eval = evaluate_pretraining(model, [batch])
    want_fill = fill_mask(model, BERT_VOCAB, "the [MASK] ran .", k=3)
    want_states = bert_analysis.marked_word_states(model, BERT_VOCAB, WORD_EXAMPLES, 2)
    want_weights = bert_analysis.attention_weights(model.bert, ids, types, mask)
    classifier = bert_analysis.WordClassifier(model.bert, 2).eval()
    want_accuracy = bert_analysis.word_task_accuracy(
        classifier, BERT_VOCAB, WORD_EXAMPLES, ("noun", "verb")
    )
    word_batch = bert_analysis.word_task_batch(BERT_VOCAB, WORD_EXAMPLES, ("noun", "verb"))
    want_classes = classifier(word_batch)
    with simulated_device():
        model_, batch_ = on_device(model), dev(batch)
        out = model_(batch_["input_ids"], batch_["token_type_ids"], batch_["attention_mask"])
        same(
            (out.mlm_logits, out.nsp_logits, out.hidden_states),
            (want.mlm_logits, want.nsp_logits, want.hidden_states),
        )
        same(model_(batch_["input_ids"]).pooled, model(ids).pooled)  # default segments
        backward_reaches_the_device(model_, model_.loss(batch_)[0])
        assert evaluate_pretraining(model_, [batch]) == pytest.approx(want_eval, abs=1e-5)
        assert evaluate_pretraining(model_, [batch_]) == pytest.approx(want_eval, abs=1e-5)
        got_fill = fill_mask(model_, BERT_VOCAB, "the [MASK] ran .", k=3)
        assert [[t for t, _ in a] for a in got_fill] == [[t for t, _ in a] for a in want_fill]
        same(bert_analysis.marked_word_states(model_, BERT_VOCAB, WORD_EXAMPLES, 2), want_states)
        same(bert_analysis.attention_weights(model_.bert, *dev((ids, types, mask))), want_weights)
        classifier_ = on_device(classifier)
        same(classifier_(dev(word_batch)), want_classes)
        assert bert_analysis.word_task_accuracy(
            classifier_, BERT_VOCAB, WORD_EXAMPLES, ("noun", "verb")
        ) == pytest.approx(want_accuracy)


def case_gpt() -> None:
    torch.manual_seed(0)
    config = GPTConfig(vocab_size=20, max_len=16, d_model=16, num_layers=2, num_heads=2, d_ff=32)
    model = GPT(config).eval()
    ids = torch.randint(20, (2, 5), generator=torch.Generator().manual_seed(1))
    want = model(ids)
    want_cached = model.forward_with_cache(ids[:, 3:], model.forward_with_cache(ids[:, :3])[1])
    want_generated = [
        model.generate(ids, 4, use_cache=c, generator=torch.Generator().manual_seed(2))
        for c in (True, False)
    ]
    want_greedy = greedy_search(
        model.decode_step, model.start(2), batch_size=2, bos=1, eos=0, max_len=5
    )
    want_beam = beam_search(
        model.decode_step,
        model.start(2, use_cache=False),
        batch_size=2,
        bos=1,
        eos=0,
        beam_size=3,
        max_len=5,
    )
    want_sampled = sample(
        model.decode_step,
        ids,
        state=model.start(2),
        max_new_tokens=3,
        top_k=5,
        top_p=0.9,
        eos=0,
        generator=torch.Generator().manual_seed(4),
    )
    want_likelihood = generation.continuation_log_likelihood(model, ids[:, :2], ids[:, 2:])
    with simulated_device():
        model_, ids_ = on_device(model), dev(ids)
        same(model_(ids_), want)
        same(
            model_.forward_with_cache(ids_[:, 3:], model_.forward_with_cache(ids_[:, :3])[1]),
            want_cached,
        )
        model_.train()
        backward_reaches_the_device(model_, model_.loss((ids_[:, :-1], ids_[:, 1:])))
        model_.eval()
        for cache, want_ids in zip((True, False), want_generated, strict=True):
            got = model_.generate(
                ids_, 4, use_cache=cache, generator=torch.Generator().manual_seed(2)
            )
            same(got, want_ids)
            assert isinstance(model_.generate(ids_, 4, use_cache=cache), OnDevice)
        same_hypotheses(
            greedy_search(
                model_.decode_step, model_.start(2), batch_size=2, bos=1, eos=0, max_len=5
            ),
            want_greedy,
        )
        same_hypotheses(
            beam_search(
                model_.decode_step,
                model_.start(2, use_cache=False),
                batch_size=2,
                bos=1,
                eos=0,
                beam_size=3,
                max_len=5,
            ),
            want_beam,
        )
        got = sample(
            model_.decode_step,
            ids_,
            state=model_.start(2),
            max_new_tokens=3,
            top_k=5,
            top_p=0.9,
            eos=0,
            generator=torch.Generator().manual_seed(4),
        )
        same(got, want_sampled)
        same(
            generation.continuation_log_likelihood(model_, ids_[:, :2], ids_[:, 2:]),
            want_likelihood,
        )
        times = generation.generation_seconds(model_, [3], use_cache=True, prompt_length=2)
        assert [n for n, _ in times] == [3]


CASES: dict[str, tuple[Callable[[], None], set[str]]] = {
    "attention": (case_attention, {"attention.MultiHeadAttention"}),
    "tiny_transformer": (
        case_tiny_transformer,
        {"tiny_transformer.TinyCausalTransformer", "attention.LearnedPositions"},
    ),
    "transformer": (
        case_transformer,
        {
            "transformer.FeedForward",
            "transformer.EncoderLayer",
            "transformer.DecoderLayer",
            "transformer.Transformer",
            "transformer.Seq2SeqTransformer",
        },
    ),
    "seq2seq": (case_seq2seq, {"seq2seq.Attention", "seq2seq.Seq2Seq"}),
    "recurrent": (
        case_recurrent,
        {
            "recurrent._CharModel",
            "recurrent.CharRNN",
            "recurrent.CharLSTM",
            "recurrent.SequenceTagger",
        },
    ),
    "bilm": (case_bilm, {"bilm.BiLM"}),
    "bert": (
        case_bert,
        {"bert.BertEmbeddings", "bert.BertModel", "bert.BertForPreTraining"},
    ),
    "gpt": (case_gpt, {"gpt.GPT"}),
}


def model_classes() -> dict[str, type]:
    """Every nn.Module subclass defined in a module of course.models, as "module.Class"."""
    found = {}
    for info in pkgutil.iter_modules(course.models.__path__):
        module = importlib.import_module(f"course.models.{info.name}")
        for name, value in vars(module).items():
            if (
                isinstance(value, type)
                and issubclass(value, nn.Module)
                and value.__module__ == module.__name__
            ):
                found[f"{info.name}.{name}"] = value
    return found


def test_every_model_class_has_a_device_case():
    covered = set().union(*(classes for _, classes in CASES.values()))
    missing = sorted(set(model_classes()) - covered)
    assert not missing, f"add a case to CASES in tests/test_devices.py for {missing}"
    assert covered <= set(model_classes()), sorted(covered - set(model_classes()))


@pytest.mark.parametrize("family", sorted(CASES))
def test_a_model_family_runs_on_another_device(family):
    check, classes = CASES[family]
    wanted = {model_classes()[name]: name for name in classes}
    ran: set[str] = set()

    def record(module: nn.Module, _inputs: object, _output: object) -> None:
        ran.update(wanted[c] for c in type(module).__mro__ if c in wanted)

    hook = nn.modules.module.register_module_forward_hook(record)
    MOVED.clear()
    try:
        check()
    finally:
        hook.remove()
    for cls in MOVED:  # a model run through its own methods (BiLM has no forward)
        ran.update(wanted[c] for c in cls.__mro__ if c in wanted)
    assert ran == set(classes), f"declared but never run: {sorted(set(classes) - ran)}"


# ----------------------------------------------------------------------------------------------
# tools/make_checkpoints.py --device

PROSE = "In the beginning was the word, and the word was with God. Read the file. " * 20


@pytest.fixture
def short_recipes(monkeypatch):
    """The GPT and stdlib-LSTM recipes cut to 3 steps of 4 windows, smaller models and a short
    text, so that each runs in a second."""
    monkeypatch.setattr(make_checkpoints, "prose_text", lambda split, source="all": PROSE)
    monkeypatch.setattr(make_checkpoints, "load_python_source", lambda **_: PROSE)
    english, stdlib = make_checkpoints.CHAR_ENGLISH, make_checkpoints.CHAR_LSTM_STDLIB
    training = {**english["training"], "steps": 3, "warmup": 1, "batch_size": 4}
    monkeypatch.setitem(english, "training", training)
    monkeypatch.setitem(english, "heldout", {**english["heldout"], "characters": 400})
    gpt = english["models"]["char_gpt_english"]
    window = gpt["config"]["max_len"]  # the recipe's window, whatever it is
    small = {"max_len": window, "d_model": 32, "num_layers": 1, "num_heads": 2, "d_ff": 64}
    monkeypatch.setitem(english["models"], "char_gpt_english", {**gpt, "config": small})
    monkeypatch.setitem(stdlib, "model", {**stdlib["model"], "hidden_size": 32})
    monkeypatch.setitem(stdlib, "training", {**stdlib["training"], "batch_size": 4})
    phases = [{"steps": 2, "lr": 1e-2, "seed": 0}, {"steps": 1, "lr": 2e-3, "seed": 1}]
    monkeypatch.setitem(stdlib, "phases", phases)


def test_make_checkpoints_records_the_device_and_the_threads(tmp_path, short_recipes):
    names = ["char_gpt_english", "char_lstm_stdlib"]  # a fit recipe and a phased one
    argv = [arg for name in names for arg in ("--only", name)]
    runs = tmp_path / "runs"
    argv += ["--state-dir", str(runs), "--save-every", "2"]
    assert make_checkpoints.main([*argv, "--out", str(tmp_path), "--device", "cpu"]) == 0
    assert not list(runs.glob("*.pt"))  # a finished run's state is removed
    for name in names:
        meta = read_metadata(name, tmp_path)
        assert meta["training"]["device"] == "cpu" and meta["training"]["torch_threads"] == 1
        assert meta["training"]["steps"] == 3
        model, _ = load_checkpoint(name, tmp_path)
        assert model_device(model) == torch.device("cpu")


def test_make_checkpoints_says_how_long_each_recipe_takes_on_the_cpu():
    for name in make_checkpoints.RECIPES:
        assert re.search(rf"\b{name} +[\d,]+ s\b", make_checkpoints.__doc__), name


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA GPU")
def test_make_checkpoints_refuses_an_unavailable_device_before_training(
    tmp_path, monkeypatch, capsys
):
    def never(*_):
        raise AssertionError("a recipe started")

    monkeypatch.setitem(make_checkpoints.RECIPES, "char_rnn_english", never)
    for device, message in [
        ("cuda", "--device cuda: no CUDA GPU is available"),
        ("tpu", "--device 'tpu': expected one of cpu, cuda, mps"),
    ]:
        argv = ["--only", "char_rnn_english", "--out", str(tmp_path), "--device", device]
        with pytest.raises(SystemExit) as stopped:
            make_checkpoints.main(argv)
        assert stopped.value.code == 2 and message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_lecture_2s_seed_spread_trains_both_recipes_as_the_checkpoints_were(
    tmp_path, short_recipes, monkeypatch, capsys
):
    """stdlib_spread, on the short recipes: seed 0 is the checkpoint's own figure, another
    seed trains the same recipe afresh (another figure), and the printout gives the spread."""
    rnn = make_checkpoints.CHAR_RNN_STDLIB
    monkeypatch.setitem(rnn, "model", {**rnn["model"], "hidden_size": 32})
    monkeypatch.setitem(rnn, "training", make_checkpoints.CHAR_LSTM_STDLIB["training"])
    monkeypatch.setitem(rnn, "phases", make_checkpoints.CHAR_LSTM_STDLIB["phases"])
    for name in ("char_lstm_stdlib", "char_rnn_stdlib"):
        make_checkpoints.RECIPES[name](tmp_path, torch.device("cpu"))
    capsys.readouterr()
    figures = make_checkpoints.stdlib_spread(seeds=(1,), directory=tmp_path)
    printed = capsys.readouterr().out
    assert set(figures) == {(n, s) for n in ("char_lstm_stdlib", "char_rnn_stdlib") for s in (0, 1)}
    for name in ("char_lstm_stdlib", "char_rnn_stdlib"):
        recorded = read_metadata(name, tmp_path)["heldout"]["bits_per_char"]
        assert figures[(name, 0)] == recorded
        assert math.isfinite(figures[(name, 1)]) and figures[(name, 1)] != recorded
        spread = abs(figures[(name, 1)] - recorded)
        assert f"{name}: " in printed and f"spread {spread:.4f}" in printed, printed
    again = make_checkpoints.stdlib_spread(seeds=(1,), directory=tmp_path)
    assert again == figures  # a seed's run is reproducible


def test_make_checkpoints_trains_on_the_device_and_saves_on_the_cpu(
    tmp_path, short_recipes, monkeypatch
):
    """A recipe run with --device on the simulated device: every op of its training runs
    there, and the checkpoint is the CPU run's (same held-out figure), saved from the CPU."""
    real_to = nn.Module.to

    def to(self, *args, **kwargs):  # Module.to(DEVICE) keeps tied weights tied, as on a GPU
        if args and not kwargs and isinstance(args[0], torch.device) and args[0] == DEVICE:
            return move_(self, DEVICE)
        return real_to(self, *args, **kwargs)

    monkeypatch.setattr(nn.Module, "to", to)
    monkeypatch.setattr(nn.Module, "cpu", lambda self: move_(self, torch.device("cpu")))
    for name in ("char_gpt_english", "char_lstm_stdlib"):
        on_cpu = make_checkpoints.RECIPES[name](tmp_path / "cpu", torch.device("cpu"))
        with simulated_device():
            there = make_checkpoints.RECIPES[name](tmp_path / "device", DEVICE)
        assert there["training"]["device"] == "meta"
        figure = there["heldout"]["bits_per_char"]
        assert figure == pytest.approx(on_cpu["heldout"]["bits_per_char"], abs=1e-4), name
        model, _ = load_checkpoint(name, tmp_path / "device")
        assert all(type(p) is nn.Parameter for p in model.parameters())
