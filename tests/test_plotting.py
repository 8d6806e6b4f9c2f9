"""pavlov.plotting: the figure style and its two artists, smoke-tested on the Agg backend."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")   # before pyplot is imported: no display is needed

import matplotlib as mpl  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.container import ErrorbarContainer  # noqa: E402
from matplotlib.layout_engine import ConstrainedLayoutEngine  # noqa: E402

from pavlov import plotting  # noqa: E402

X = np.array([1.0, 2.0, 4.0, 8.0])
Y = np.array([0.9, 2.1, 3.8, 8.3])
YERR = np.array([0.1, 0.2, 0.2, 0.4])


@pytest.fixture(autouse=True)
def isolated_style():
    """Restore matplotlib's settings and close figures after each test."""
    with mpl.rc_context():
        yield
    plt.close("all")


def test_use_style_sets_the_book_style():
    plotting.use_style()
    for key, value in plotting.STYLE.items():
        got = mpl.rcParams[key]
        assert (list(got) == list(value)) if isinstance(value, tuple) else got == value, key


def test_subplots_styled_and_constrained():
    fig, ax = plotting.subplots()
    assert isinstance(fig.get_layout_engine(), ConstrainedLayoutEngine)
    assert tuple(fig.get_size_inches()) == plotting.STYLE["figure.figsize"]
    assert not ax.spines["top"].get_visible() and not ax.spines["right"].get_visible()
    fig, axes = plotting.subplots(1, 2, figsize=(6, 3))
    assert axes.shape == (2,) and tuple(fig.get_size_inches()) == (6, 3)


def test_subplots_never_wider_than_the_column():
    # a wider figure would be shrunk by the page, and its text with it
    fig, _ = plotting.subplots(1, 3, figsize=(11, 4))
    assert tuple(fig.get_size_inches()) == (plotting.COLUMN_INCHES, 4)


def test_palette_markers_and_line_styles_tell_series_apart():
    cycle = plotting.STYLE["axes.prop_cycle"].by_key()
    assert cycle["color"][:7] == list(plotting.OKABE_ITO[:7])
    for key in ("color", "marker", "linestyle"):      # no two series share a colour, a marker or a line style
        assert len(set(map(str, cycle[key]))) == len(cycle[key]) == 8, key


def test_measured_draws_labelled_error_bars():
    fig, ax = plotting.subplots()
    container = plotting.measured(ax, X, Y, YERR)
    assert isinstance(container, ErrorbarContainer) and container.get_label() == "measured"
    line, caplines, (bars,) = container.lines
    assert line.get_marker() == "o" and line.get_linestyle() == "None"
    np.testing.assert_array_equal(line.get_xdata(), X)
    np.testing.assert_array_equal(line.get_ydata(), Y)
    assert len(caplines) == 2 and len(bars.get_segments()) == len(X)
    # each bar spans y +- yerr
    for (x0, y0), (x1, y1) in (segment for segment in bars.get_segments()):
        assert x0 == x1 and (y1 - y0) == pytest.approx(2 * YERR[list(X).index(x0)])


def test_measured_without_error_bars_and_custom_label():
    fig, ax = plotting.subplots()
    container = plotting.measured(ax, X, Y, label="Hebbian store", color="tab:red")
    assert container.get_label() == "Hebbian store" and container.has_yerr is False
    assert mpl.colors.same_color(container.lines[0].get_color(), "tab:red")


def test_theory_draws_a_labelled_dashed_line():
    fig, ax = plotting.subplots()
    (line,) = plotting.theory(ax, X, 2 * X)
    assert line.get_label() == "theory" and line.get_linestyle() == "--"
    assert mpl.colors.same_color(line.get_color(), "black")
    np.testing.assert_array_equal(line.get_ydata(), 2 * X)
    (other,) = plotting.theory(ax, X, X, label="Gaussian approximation", color="tab:blue")
    assert other.get_label() == "Gaussian approximation" and mpl.colors.same_color(other.get_color(), "tab:blue")


def test_a_book_figure_renders_with_legend_and_labels():
    fig, ax = plotting.subplots()
    plotting.measured(ax, X, Y, YERR)
    plotting.theory(ax, X, X)
    ax.set(xlabel="number of pairings $M$", ylabel="ISR")
    legend = ax.legend()
    assert sorted(t.get_text() for t in legend.get_texts()) == ["measured", "theory"]
    _, labels = ax.get_legend_handles_labels()
    assert sorted(labels) == ["measured", "theory"]
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    assert buffer.getvalue()[:8] == b"\x89PNG\r\n\x1a\n"
