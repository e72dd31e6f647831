"""Using a pretrained BERT (course.analysis.bert) and Unit 7's figures (course.viz.bert)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # headless; must come before pyplot is imported

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from course.analysis.bert import (  # noqa: E402
    LAYER_COMBINATIONS,
    WordClassifier,
    attention_weights,
    combine_layers,
    fill_mask_hits,
    heldout_batches,
    heldout_pretraining_figures,
    marked_word_states,
    read_nsp_pairs,
    train_word_classifier,
    word_task_accuracy,
    word_task_batch,
    word_task_batches,
)
from course.data.bert_inputs import IGNORE_INDEX, NspPair, frame_words  # noqa: E402
from course.data.english import Example  # noqa: E402
from course.data.wordpiece import SPECIAL_TOKENS, WordPiece  # noqa: E402
from course.models.bert import BertConfig, BertForPreTraining  # noqa: E402
from course.viz.bert import (  # noqa: E402
    interact_fill_mask,
    plot_anisotropy,
    plot_feature_choice,
    plot_fill_mask,
)

pytestmark = pytest.mark.usefixtures("one_thread")
WORDS = ["the", "dog", "##s", "run", "bark", "##ing", "cat", "sat", ".", "a"]
VOCAB = WordPiece([*SPECIAL_TOKENS, *WORDS])
LABELS = ("noun", "verb")


def example(tokens: str, target: int, label: str) -> Example:
    return Example(tuple(tokens.split()), target, label, "x", "0", label, label, False)


EXAMPLES = [
    example("the dogs run .", 1, "noun"),
    example("a cat sat", 2, "verb"),
    example("the cat barking", 2, "verb"),
    example("dogs bark .", 0, "noun"),
    example("a dog sat .", 1, "noun"),
]


@pytest.fixture(scope="module")
def bert() -> BertForPreTraining:
    torch.manual_seed(0)
    config = BertConfig(len(VOCAB), d_model=16, num_layers=4, num_heads=2, d_ff=32, max_len=16)
    return BertForPreTraining(config).eval()


def test_combine_layers_follows_the_papers_table():
    states = torch.arange(5 * 2 * 3, dtype=torch.float).reshape(5, 2, 3)  # (L+1, N, d), L = 4
    hidden = states[1:]
    expected = {
        "first": states[0],
        "last": states[4],
        "sum_all": hidden.sum(0),
        "second_to_last": states[3],
        "sum_last_four": states[1:].sum(0),
        "concat_last_four": torch.cat([states[1], states[2], states[3], states[4]], -1),
    }
    assert set(expected) == set(LAYER_COMBINATIONS)
    for how, value in expected.items():
        assert torch.equal(combine_layers(states, how), value), how
    six = torch.randn(7, 2, 3)  # L = 6: sum_all and sum_last_four differ
    assert not torch.allclose(combine_layers(six, "sum_all"), combine_layers(six, "sum_last_four"))
    assert combine_layers(six, "concat_last_four").shape == (2, 12)
    with pytest.raises(ValueError, match="how: expected one of"):
        combine_layers(states, "mean")
    with pytest.raises(ValueError, match="at least 4 hidden layers"):
        combine_layers(states[:3], "sum_last_four")
    with pytest.raises(ValueError, match="at least 2 hidden layers"):
        combine_layers(states[:2], "second_to_last")
    with pytest.raises(ValueError, match="states"):
        combine_layers(states[0], "last")


def test_marked_word_states_read_each_words_first_piece(bert):
    states = marked_word_states(bert, VOCAB, EXAMPLES, batch_size=2)
    assert states.shape == (5, len(EXAMPLES), 16)
    for n, e in enumerate(EXAMPLES):  # one sentence at a time, no padding
        ids, starts = frame_words(VOCAB, e.tokens)
        alone = bert.bert(torch.tensor([ids])).hidden_states
        for layer, h in enumerate(alone):
            torch.testing.assert_close(states[layer, n], h[0, starts[e.target]])
    assert torch.equal(marked_word_states(bert.bert, VOCAB, EXAMPLES), states)
    unknown = marked_word_states(bert, VOCAB, [example("the zebra", 1, "noun")])  # [UNK]
    assert unknown.shape == (5, 1, 16)
    empty = Example(("the", ""), 1, "noun", "x", "0", "noun", "noun", False)  # no piece at all
    with pytest.raises(ValueError, match="no piece"):
        marked_word_states(bert, VOCAB, [empty])


def test_word_task_batch_marks_positions_and_labels():
    batch = word_task_batch(VOCAB, EXAMPLES[:2], LABELS)
    assert batch["positions"].tolist() == [2, 3]  # "dog" after [CLS] the; "sat" after a cat
    assert batch["labels"].tolist() == [0, 1]
    assert batch["input_ids"].shape == batch["attention_mask"].shape == (2, 7)
    assert "labels" not in word_task_batch(VOCAB, EXAMPLES[:2])
    with pytest.raises(ValueError, match="no piece within max_len=4"):
        word_task_batch(VOCAB, [example("the cat sat a dog", 3, "noun")], max_len=4)
    with pytest.raises(ValueError, match="at least one"):
        word_task_batch(VOCAB, [])


def test_attention_weights_are_one_distribution_per_query(bert):
    ids = torch.tensor([[2, 5, 6, 3, 0, 0], [2, 7, 8, 9, 10, 3]])
    mask = (ids != 0).long()
    weights = attention_weights(bert.bert, ids, None, mask)
    assert len(weights) == 4 and all(w.shape == (2, 2, 6, 6) for w in weights)
    for w in weights:
        torch.testing.assert_close(w.sum(-1), torch.ones(2, 2, 6))
        assert (w[0, :, :, 4:] == 0).all()  # padded keys get nothing
    assert not bert.training


def test_fine_tuning_batches_accuracy_and_a_training_step(bert):
    stream = word_task_batches(VOCAB, EXAMPLES, LABELS, batch_size=2, seed=0)
    first_epoch = [next(stream) for _ in range(2)]  # 5 examples: 2 full batches an epoch
    assert all(b["input_ids"].shape[0] == 2 for b in first_epoch)
    with pytest.raises(ValueError, match="batch_size"):
        next(word_task_batches(VOCAB, EXAMPLES, LABELS, batch_size=6))
    torch.manual_seed(0)
    model = WordClassifier(BertForPreTraining(bert.config).bert, len(LABELS))
    whole = word_task_batch(VOCAB, EXAMPLES, LABELS)
    model.eval()
    expected = int((model(whole).argmax(-1) == whole["labels"]).sum()) / len(EXAMPLES)
    assert word_task_accuracy(model, VOCAB, EXAMPLES, LABELS, batch_size=2) == expected
    model.train()
    opt = torch.optim.Adam(model.parameters(), 1e-2)
    before = model.loss(whole).item()
    for _ in range(20):
        opt.zero_grad()
        model.loss(whole).backward()
        opt.step()
    assert model.loss(whole).item() < before
    assert model(whole).shape == (5, 2)


def test_train_word_classifier_starts_from_the_given_weights_or_the_seeds(bert):
    def run(start, seed, lr):
        classifier, history = train_word_classifier(
            bert.config, start, VOCAB, EXAMPLES, LABELS, seed=seed, steps=4, lr=lr,
            batch_size=2, progress=False,
        )  # fmt: skip
        assert history.steps == 4 and history.stopped_by == "steps"
        return classifier.bert.state_dict()

    given = bert.bert.state_dict()
    kept = run(given, seed=0, lr=0.0)  # no step moves a weight: the start is the given one
    assert all(torch.equal(kept[k], given[k]) for k in given)
    scratch = run(None, seed=1, lr=0.0)
    assert not all(torch.equal(scratch[k], given[k]) for k in given)
    again = run(None, seed=1, lr=1e-2)
    assert all(torch.equal(again[k], run(None, seed=1, lr=1e-2)[k]) for k in again)  # seeded
    assert not all(torch.equal(again[k], run(None, seed=2, lr=1e-2)[k]) for k in again)


def test_fill_mask_hits_names_each_sentences_top_tokens(bert):
    rows = fill_mask_hits(bert, VOCAB, [("the [MASK] sat .", "cat"), ("a [MASK]", "dog")], k=3)
    assert [(text, word) for text, word, _, _ in rows] == [("the [MASK] sat .", "cat"),
                                                           ("a [MASK]", "dog")]  # fmt: skip
    for _, word, top, hit in rows:
        assert len(top) == 3 and hit == (word in top)
        assert not set(top) & set(SPECIAL_TOKENS)
    with pytest.raises(ValueError, match="'zebra' is not one token"):
        fill_mask_hits(bert, VOCAB, [("a [MASK]", "zebra")])


def test_nsp_pair_lines_and_fixed_heldout_masks():
    text = "0\tthe dog sat .\ta cat sat .\n1\tthe cat\tdogs run"
    pairs = read_nsp_pairs(text)
    assert pairs == [
        NspPair("the dog sat .", "a cat sat .", 0, -1),
        NspPair("the cat", "dogs run", 1, -1),
    ]
    with pytest.raises(ValueError, match="line 2"):
        read_nsp_pairs("0\ta\tb\n2\ta\tb")
    with pytest.raises(ValueError, match="line 1"):
        read_nsp_pairs("0\tonly one sentence")
    one = heldout_batches(VOCAB, pairs * 20, batch_size=16, seed=3, max_len=16)
    two = heldout_batches(VOCAB, pairs * 20, batch_size=16, seed=3, max_len=16)
    assert [len(b["input_ids"]) for b in one] == [16, 16, 8]
    assert all(torch.equal(a["labels"], b["labels"]) for a, b in zip(one, two, strict=True))
    assert any((b["labels"] != IGNORE_INDEX).any() for b in one)


def test_heldout_pretraining_figures_are_evaluate_pretraining_s(bert, tmp_path):
    """The figures, and the same through the suite's record and replay (a function of its own
    for that): recorded once, then replayed, and computed afresh for other weights."""
    from course.models.bert import evaluate_pretraining
    from tools.fit_replay import Runs

    text = "0\tthe dog sat .\ta cat sat .\n1\tthe cat\tdogs run"
    batches = heldout_batches(VOCAB, read_nsp_pairs(text) * 8, batch_size=8, seed=0, max_len=16)
    expected = evaluate_pretraining(bert, batches)
    assert heldout_pretraining_figures(bert, batches) == expected
    assert Runs(record=tmp_path).remember(heldout_pretraining_figures)(bert, batches) == expected
    assert len(list(tmp_path.glob("call-*.pt"))) == 1
    replayed = Runs(replay=tmp_path).remember(heldout_pretraining_figures)
    kept = bert.mlm_bias.detach().clone()
    with torch.no_grad():
        bert.mlm_bias.add_(
            torch.linspace(0.0, 3.0, len(kept))
        )  # other weights: another key, computed afresh
    try:
        changed = evaluate_pretraining(bert, batches)
        assert changed != expected
        assert replayed(bert, batches) == changed
    finally:
        with torch.no_grad():
            bert.mlm_bias.copy_(kept)  # the module's model as it was
    assert len(list(tmp_path.iterdir())) == 1


def test_unit7_figures(bert):
    fig = plot_fill_mask(bert, VOCAB, "the [MASK] sat . [MASK]", k=4)
    assert len(fig.axes) == 2 and all(len(ax.patches) == 4 for ax in fig.axes)
    with pytest.raises(ValueError, match="k: expected"):
        plot_fill_mask(bert, VOCAB, "the [MASK]", k=0)
    ours = dict.fromkeys(LAYER_COMBINATIONS, 0.5)
    paper = dict.fromkeys(LAYER_COMBINATIONS, 95.0)
    fig2 = plot_feature_choice(ours, paper, baseline=0.4, baseline_name="majority")
    assert len(fig2.axes) == 2 and len(fig2.axes[0].patches) == len(LAYER_COMBINATIONS)
    with pytest.raises(ValueError, match="the same choices"):
        plot_feature_choice({"first": 0.5}, paper, baseline=0.4, baseline_name="majority")
    fig3 = plot_anisotropy({"a": [0.1, 0.5, 0.9], "b": [0.0, 0.0, 0.1]})
    assert len(fig3.axes[0].lines) == 3  # two models and the zero line
    with pytest.raises(ValueError, match="at least one model"):
        plot_anisotropy({})
    plt.close("all")


def test_interact_fill_mask_redraws_for_new_text_and_k(bert, capsys):
    plt.close("all")
    shown = interact_fill_mask(bert, VOCAB)
    (text,) = [c for c in shown.widget.children if type(c).__name__ == "Text"]
    (k,) = [c for c in shown.widget.children if type(c).__name__ == "IntSlider"]
    assert "[MASK]" in text.value and not text.continuous_update
    assert len(plt.get_fignums()) == 1  # drawn once with the defaults
    assert len(plt.gcf().axes[0].patches) == k.value
    k.value = 3
    assert len(plt.get_fignums()) == 2 and len(plt.gcf().axes[0].patches) == 3
    text.value = "the [MASK] sat . a [MASK]"
    assert len(plt.get_fignums()) == 3 and len(plt.gcf().axes) == 2  # one chart per [MASK]
    text.value = "no blank here"
    assert len(plt.get_fignums()) == 3 and "Put [MASK]" in capsys.readouterr().out
    plt.close("all")
