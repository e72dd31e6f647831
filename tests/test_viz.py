"""Tests for course.viz: the gradient-flow measurement, its plots and the widget wrapper."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")  # headless; must come before pyplot is imported

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from course.train import TrainingHistory  # noqa: E402
from course.viz import (  # noqa: E402
    NONLINEARITIES,
    gradient_norms_by_distance,
    interact_gradient_norms,
    plot_gradient_norms,
    plot_training_histories,
)


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


def test_gradient_norms_reject_bad_arguments():
    with pytest.raises(ValueError) as error:
        gradient_norms_by_distance(1.0, 10, "softplus")
    message = str(error.value)
    assert "softplus" in message
    assert all(repr(name) in message for name in ("tanh", "relu", "sigmoid", "identity"))
    with pytest.raises(ValueError, match="seq_len and hidden_size must be >= 1"):
        gradient_norms_by_distance(1.0, 0)
    with pytest.raises(ValueError, match="spectral_radius: expected a non-negative"):
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
    with pytest.raises(ValueError, match="smooth: expected a window of at least 1 step, got 0"):
        plot_training_histories(runs, smooth=0)
