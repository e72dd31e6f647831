"""Tests for course.analysis.gradients (the gradient-flow measurement) and the figures and widgets
of course.viz (gradients, training, recall)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # headless; must come before pyplot is imported

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from course.analysis.gradients import (  # noqa: E402
    NONLINEARITIES,
    get_nonlinearity,
    gradient_norms_by_distance,
)
from course.train import TrainingHistory  # noqa: E402
from course.viz._figure import running_mean  # noqa: E402
from course.viz.gradients import (  # noqa: E402
    interact_gradient_norms,
    plot_bptt_terms,
    plot_gradient_norms,
    plot_jacobian_norms,
    plot_truncation,
)
from course.viz.recall import plot_recall  # noqa: E402
from course.viz.training import plot_bits_per_char, plot_training_histories  # noqa: E402
from tests.messages import raises  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.mark.parametrize("nonlinearity", list(NONLINEARITIES))
def test_gradient_norms_have_one_entry_per_distance_starting_at_one(nonlinearity):
    norms = gradient_norms_by_distance(1.0, seq_len=12, nonlinearity=nonlinearity)
    assert isinstance(norms, np.ndarray) and norms.shape == (12,)
    assert norms[0] == pytest.approx(1.0)  # dL/dh_T = c, a unit vector
    assert np.all(np.isfinite(norms)) and np.all(norms >= 0)


@pytest.mark.parametrize("rho", [0.5, 1.0, 1.5])
def test_identity_rnn_with_scaled_orthogonal_w_changes_by_exactly_rho_per_step(rho):
    norms = gradient_norms_by_distance(rho, seq_len=40, nonlinearity="identity", hidden_size=16)
    np.testing.assert_allclose(norms[1:] / norms[:-1], rho, rtol=1e-9)


def test_gradients_vanish_for_small_radius_and_explode_for_large_radius():
    assert gradient_norms_by_distance(0.5, 50, "identity")[-1] < 1e-12
    assert gradient_norms_by_distance(1.5, 50, "identity")[-1] > 1e6
    assert gradient_norms_by_distance(0.5, 50, "tanh")[-1] < 1e-12
    assert gradient_norms_by_distance(3.0, 50, "tanh")[-1] > 1e3


@pytest.mark.parametrize("nonlinearity, slope", [("tanh", 1.0), ("sigmoid", 0.25), ("relu", 1.0)])
def test_a_nonlinearity_can_only_shrink_the_linear_bound(nonlinearity, slope):
    # ||dh_T/dh_t|| <= (max slope * ||W||)^k, and ||W|| = rho for a scaled orthogonal W
    rho = 1.3
    norms = gradient_norms_by_distance(rho, 30, nonlinearity)
    bound = (slope * rho) ** np.arange(30)
    assert np.all(norms <= bound * (1 + 1e-9))


def test_gradient_norms_are_reproducible_per_seed():
    first = gradient_norms_by_distance(1.1, 20, "tanh", seed=4)
    np.testing.assert_array_equal(first, gradient_norms_by_distance(1.1, 20, "tanh", seed=4))
    assert not np.allclose(first, gradient_norms_by_distance(1.1, 20, "tanh", seed=5))


def test_get_nonlinearity_returns_the_function_or_names_the_choices():
    x = torch.linspace(-2, 2, 5)
    assert torch.equal(get_nonlinearity("relu")(x), torch.relu(x))
    with raises(ValueError, "nonlinearity", "'relu'", "'gelu'"):
        get_nonlinearity("gelu")


def test_gradient_norms_reject_bad_arguments():
    with pytest.raises(ValueError) as error:
        gradient_norms_by_distance(1.0, 10, "softplus")
    message = str(error.value)
    assert "softplus" in message
    assert all(repr(name) in message for name in ("tanh", "relu", "sigmoid", "identity"))
    with raises(ValueError, "seq_len", ">= 1", "got 0"):
        gradient_norms_by_distance(1.0, 0)
    with raises(ValueError, "spectral_radius", "non-negative", "-0.5"):
        gradient_norms_by_distance(-0.5)


def test_plot_gradient_norms_draws_a_log_scale_figure():
    fig = plot_gradient_norms(1.2, seq_len=15, nonlinearity="relu", compare=(0.5, 1.2, 2.0))
    assert isinstance(fig, Figure)
    (ax,) = fig.axes
    assert ax.get_yscale() == "log"
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels == ["ρ = 0.5", "ρ = 2", "ρ = 1.2 (selected)", "1.2$^k$"]
    assert all(len(line.get_xdata()) == 15 for line in ax.get_lines())
    assert "distance" in ax.get_xlabel()


def test_plot_gradient_norms_uses_a_given_axes_and_checks_the_nonlinearity():
    fig, axes = plt.subplots(1, 2)
    assert plot_gradient_norms(compare=(), ax=axes[1]) is fig
    assert len(axes[1].get_lines()) == 2 and len(axes[0].get_lines()) == 0
    with pytest.raises(ValueError, match="nonlinearity: expected one of 'tanh'"):
        plot_gradient_norms(nonlinearity="Tanh")


def test_interact_gradient_norms_offers_the_three_controls():
    import ipywidgets as widgets

    figures_before = len(plt.get_fignums())
    shown = interact_gradient_norms()
    controls = {type(child).__name__: child for child in shown.widget.children}
    assert isinstance(controls["FloatSlider"], widgets.FloatSlider)
    assert controls["FloatSlider"].value == 1.0
    assert controls["IntSlider"].value == 50
    assert list(controls["Dropdown"].options) == list(NONLINEARITIES)
    assert len(plt.get_fignums()) == figures_before + 1  # drawn once with the defaults
    controls["Dropdown"].value = "identity"  # moving a control redraws
    assert len(plt.get_fignums()) == figures_before + 2


def test_plot_training_histories_draws_loss_and_gradient_norm():
    runs = {
        "a": TrainingHistory(losses=[3.0, 2.0, 1.0, 0.5], grad_norms=[10.0, 5.0, 1.0, 0.1]),
        "b": TrainingHistory(losses=[3.0, float("nan")], grad_norms=[1e6]),
    }
    fig = plot_training_histories(runs)
    loss_ax, norm_ax = fig.axes
    assert norm_ax.get_yscale() == "log"
    assert [line.get_label() for line in loss_ax.get_lines()] == ["a", "b"]
    np.testing.assert_array_equal(loss_ax.get_lines()[0].get_ydata(), [3.0, 2.0, 1.0, 0.5])
    smoothed = plot_training_histories({"a": runs["a"]}, smooth=2)
    np.testing.assert_allclose(smoothed.axes[0].get_lines()[0].get_ydata(), [2.5, 1.5, 0.75])
    np.testing.assert_array_equal(smoothed.axes[0].get_lines()[0].get_xdata(), [1, 2, 3])
    with raises(ValueError, "smooth", "at least 1", "got 0"):
        plot_training_histories(runs, smooth=0)
    assert loss_ax.get_ylabel() == "training loss (nats/char)"
    words = plot_training_histories({"a": runs["a"]}, loss_unit="nats/word")
    assert words.axes[0].get_ylabel() == "training loss (nats/word)"


def test_running_mean_ends_each_window_at_its_last_step():
    x, y = running_mean([1.0, 2.0, 3.0, 6.0], 2)
    np.testing.assert_array_equal(x, [1, 2, 3])
    np.testing.assert_allclose(y, [1.5, 2.5, 4.5])
    x, y = running_mean([1.0, 2.0], 5)  # too short to smooth: unchanged
    np.testing.assert_array_equal(x, [0, 1])
    np.testing.assert_array_equal(y, [1.0, 2.0])
    with raises(ValueError, "window", "at least 1", "got 0"):
        running_mean([1.0], 0)


def test_plot_bptt_terms_draws_two_bars_per_step():
    fig = plot_bptt_terms([(1, 0.5, 2.0), (2, 0.7, 1.0), (3, 0.9, 0.0)])
    (ax,) = fig.axes
    heights = [patch.get_height() for patch in ax.patches]
    assert heights == [0.5, 0.7, 0.9, 2.0, 1.0, 0.0]  # local bars, then carried bars
    assert list(ax.get_xticks()) == [1, 2, 3]


def test_plot_truncation_draws_errors_and_influence_with_chunk_borders():
    errors = {"a": [0.9, 0.5, 0.0], "b": [1.0, 0.8, 0.0]}
    fig = plot_truncation(errors, [1, 2, 4], np.linspace(1.0, 0.1, 100), chunk=32)
    left, right = fig.axes
    assert [line.get_label() for line in left.get_lines()] == ["a", "b"]
    assert left.get_xscale() == "log" and right.get_yscale() == "log"
    borders = [line for line in right.get_lines() if line.get_xdata()[0] == line.get_xdata()[-1]]
    assert sorted(line.get_xdata()[0] for line in borders) == [32, 64, 96]
    assert "32-step" in right.get_title()


def test_plot_jacobian_norms_draws_both_products_and_rho_to_the_k():
    fig = plot_jacobian_norms(0.9, [0.9, 0.81, 0.729], [0.5, 0.2, 0.1])
    (ax,) = fig.axes
    lines = ax.get_lines()
    assert len(lines) == 3 and ax.get_yscale() == "log"
    np.testing.assert_allclose(lines[2].get_ydata(), [0.9, 0.81, 0.729])
    np.testing.assert_array_equal(lines[0].get_xdata(), [1, 2, 3])


def test_plot_bits_per_char_converts_nats_and_draws_held_out_and_baselines():
    history = TrainingHistory(losses=[np.log(2) * v for v in (4.0, 3.0, 2.0, 1.0)], seconds=6.0)
    fig = plot_bits_per_char(
        {"lm": history}, {"lm": 2.5}, {"unigram": 4.5, "bigram": 3.5}, window=2
    )
    (ax,) = fig.axes
    curve, held_out, unigram, bigram = ax.get_lines()
    np.testing.assert_allclose(curve.get_ydata(), [3.5, 2.5, 1.5])  # bits, running mean
    np.testing.assert_array_equal(curve.get_xdata(), [1, 2, 3])
    assert held_out.get_color() == curve.get_color() and held_out.get_ydata()[0] == 2.5
    assert (unigram.get_label(), bigram.get_label()) == ("unigram, held-out", "bigram, held-out")
    by_time = plot_bits_per_char({"lm": history}, {}, x="seconds", window=2, ylim=(1, 5))
    np.testing.assert_allclose(by_time.axes[0].get_lines()[0].get_xdata(), [2.0, 4.0, 6.0])
    assert by_time.axes[0].get_ylim() == (1, 5)
    with pytest.raises(ValueError, match="x: expected 'step' or 'seconds'"):
        plot_bits_per_char({"lm": history}, {}, x="epoch")
    with raises(ValueError, "held_out", r"\['other'\]", "no training history"):
        plot_bits_per_char({"lm": history}, {"other": 1.0})


def test_plot_recall_draws_accuracy_against_distance_and_the_recall_loss():
    history = TrainingHistory(losses=[3.0] * 4, logs={"recall": [2.0, 1.0, 0.5, 0.1]})
    fig = plot_recall(
        {"LSTM": [1.0, 0.9], "RNN": [0.8, 0.2]},
        {"LSTM": history},
        [5, 80],
        train_max=40,
        num_keys=8,
        window=2,
    )
    left, right = fig.axes
    assert [line.get_label() for line in left.get_lines()][:2] == ["LSTM", "RNN"]
    assert left.get_xscale() == "log"
    np.testing.assert_allclose(right.get_lines()[0].get_ydata(), [1.5, 0.75, 0.3])
    assert right.get_lines()[1].get_ydata()[0] == pytest.approx(np.log(8))  # guessing


def test_every_slider_redraws_when_released_not_at_each_value_it_passes():
    """A slider of a course widget sends its value when the student lets go of it: with
    ipywidgets' default (continuous_update=True) a drag across a slider queues a redraw of the
    figure for each value it passes, seconds of work on a 2-core laptop for one move."""
    import ast
    from pathlib import Path

    import course.viz

    sliders, live = 0, []
    for path in sorted(Path(course.viz.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr.endswith("Slider")
            ):
                continue
            sliders += 1
            keywords = {k.arg: k.value for k in node.keywords}
            flag = keywords.get("continuous_update")
            if not (isinstance(flag, ast.Constant) and flag.value is False):
                live.append(f"{path.name}:{node.lineno}")
    assert sliders >= 10, f"found only {sliders} sliders in course.viz"
    assert not live, f"sliders that redraw while they move: {live}"
