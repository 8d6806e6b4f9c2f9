"""pavlov.plotting: the figure style and its two artists, smoke-tested on the Agg backend."""

from __future__ import annotations

import base64
import io
import re

import matplotlib

matplotlib.use("Agg")   # before pyplot is imported: no display is needed

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.container import ErrorbarContainer
from matplotlib.layout_engine import ConstrainedLayoutEngine

from pavlov import plotting

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
    assert line.get_marker() in ("none", "None", "")          # a line, not the cycle's markers
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


# The static explorer (what the HTML book shows in place of live controls).

def _line(a=1, kind="up", b=2.0):
    fig, ax = plotting.subplots()
    ax.plot([0, 1], [0, a if kind == "up" else -a])
    return fig


def _controls(**extra):
    ipywidgets = pytest.importorskip("ipywidgets")
    return {"a": ipywidgets.IntSlider(1, 0, 3, description="amplitude"),
            "kind": ipywidgets.Dropdown(options=[("rising", "up"), ("falling", "down")]),
            "b": ipywidgets.FloatLogSlider(2.0, base=2, min=-1, max=3), **extra}


def _frames(page: str) -> dict[str, bool]:
    """Each frame's settings (space-separated keys) and whether it is shown."""
    import re
    return {keys: "hidden" not in tag for tag, keys in
            ((m.group(0), m.group(1)) for m in
             re.finditer(r'<img class="pavlov-explorer-frame(?: pavlov-wide)?" data-keys="([^"]*)"[^>]*>', page))}


def test_static_explorer_draws_every_setting_once_and_shows_the_first():
    bundle = plotting.static_explorer(_line, _controls())
    page = bundle["text/html"]
    frames = _frames(page)
    keys = sorted(key for group in frames for key in group.split())
    # default grids: a slider's ends and initial value (0, 1, 3; log slider 0.5, 2, 8), every menu option
    assert keys == sorted(f"{a},{k},{b}" for a in range(3) for k in range(2) for b in range(3))
    assert [group for group, shown in frames.items() if shown] == [next(g for g in frames if "1,0,1" in g.split())]
    # b changes nothing, and a = 0 draws the same flat line rising or falling: one image each
    assert len(frames) == 5
    assert '<select><option value="0" selected>rising</option><option value="1">falling</option></select>' in page
    assert "amplitude <input type=\"range\"" in page and "[&quot;0.5&quot;, &quot;2&quot;, &quot;8&quot;]" in page
    assert "http" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")   # nothing is fetched
    # the PDF, where nothing moves, shows the frame the page starts on
    shown = re.search(r'<img class="pavlov-explorer-frame(?: pavlov-wide)?"[^>]*?(?<! hidden) src="data:image/svg\+xml;base64,([^"]+)"',
                      page)
    assert base64.b64decode(shown.group(1)).decode() == bundle["image/svg+xml"]
    assert bundle["image/svg+xml"].lstrip().startswith("<?xml")


def test_static_explorer_grid_overrides_and_fixes_a_control():
    page = plotting.static_explorer(_line, _controls(), grid={"a": [1, 2], "b": [2.0]})["text/html"]
    assert sorted(k for g in _frames(page) for k in g.split()) == ["0,0,0", "0,1,0", "1,0,0", "1,1,0"]
    assert '<span class="pavlov-explorer-fixed" title="fixed in this page">2</span>' in page


@pytest.mark.parametrize("grid, message", [
    ({"c": [1]}, "grid names \\['c'\\], which are not controls"),
    ({"a": [0, 2]}, "grid\\['a'\\] must include the control's initial value 1"),
    ({"a": list(range(1, 40))}, "grid gives 234 frames, more than MAX_FRAMES = 36"),
])
def test_static_explorer_rejects_a_bad_grid(grid, message):
    with pytest.raises(ValueError, match=message):
        plotting.static_explorer(_line, _controls(), grid=grid)


def test_explorer_is_static_when_the_book_is_built(monkeypatch, capsys):
    pytest.importorskip("IPython")
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda *objects, **kwargs: shown.extend(objects))
    monkeypatch.setenv(plotting.STATIC, "1")
    plotting.explorer(_line, **_controls())
    assert len(shown) == 1 and "pavlov-explorer" in shown[0]["text/html"] and "image/svg+xml" in shown[0]
    monkeypatch.delenv(plotting.STATIC)


def test_a_live_explorer_redraws_its_figure_when_a_control_moves(monkeypatch):
    # the book's pages are executed with the explorers static; here is the live one a reader of this
    # environment (ipywidgets 8) gets, moved as the Colab emulation moves Colab's (ipywidgets 7)
    pytest.importorskip("ipywidgets")
    shown, updates = [], []

    class Handle:
        def update(self, figure):
            updates.append(figure)

    def display(*objects, **kwargs):
        shown.extend(objects)
        return Handle() if kwargs.get("display_id") else None

    monkeypatch.setattr("IPython.display.display", display)
    monkeypatch.delenv(plotting.STATIC, raising=False)
    controls = _controls()
    plotting.explorer(_line, **controls)
    assert type(shown[0]).__name__ == "Box" and shown[1] is not None     # live controls, then the figure
    first = _png(shown[1])
    controls["a"].value = controls["a"].max
    assert len(updates) == 1 and _png(updates[0]) != first


def _png(figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def test_legend_below_sits_under_the_panels():
    fig, axes = plotting.subplots(1, 2)
    plotting.measured(axes[0], X, Y, YERR)
    plotting.theory(axes[0], X, X)
    legend = plotting.legend_below(fig)
    fig.canvas.draw()
    box, panels = legend.get_window_extent(), [ax.get_window_extent() for ax in axes]
    assert [t.get_text() for t in legend.get_texts()] == ["theory", "measured"]
    assert all(box.y1 <= panel.y0 for panel in panels)       # entirely below every panel


@pytest.mark.parametrize("chapter", sorted(__import__("pavlov.diagrams").diagrams.DIAGRAMS))
def test_each_concept_diagram_draws_in_the_book_style(chapter):
    from pavlov import diagrams

    fig = diagrams.DIAGRAMS[chapter]()
    fig.canvas.draw()
    texts = [t for t in fig.findobj(matplotlib.text.Text) if t.get_text().strip() and t.get_visible()]
    assert texts, f"{chapter}: the diagram has no labels"
    assert min(t.get_fontsize() for t in texts) >= plotting.SMALLEST_TEXT_PT
    assert fig.get_figwidth() <= plotting.COLUMN_INCHES


def test_every_chapter_shows_its_concept_diagram():
    import json
    from pathlib import Path

    from pavlov import diagrams

    for chapter, draw in diagrams.DIAGRAMS.items():
        path = next(Path(__file__).resolve().parents[1].glob(f"chapters/ch{int(chapter[2:]):02d}_*.ipynb"))
        sources = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]]
        assert any(f"diagrams.{draw.__name__}()" in s for s in sources), f"{path.name} does not show its diagram"


def _two_panels():
    fig, (left, right) = plotting.subplots(1, 2, figsize=(11, 4))
    x = np.linspace(1, 10, 20)
    plotting.measured(left, x, x, 0.1 * x, label="measured")
    plotting.theory(left, x, x, label="theory, a label long enough to crowd a phone's narrow panel of a figure")
    left.legend()
    right.plot(x, x**2, label="squares")
    right.set(xlabel="a plain axis label that is rather long for a phone's narrow column", title=r"$d$ = 16, $n$ = 64")
    plotting.legend_below(fig, right, ncol=3)
    return fig


def _svg_of(fig) -> bytes:
    buffer = io.BytesIO()
    with mpl.rc_context({"svg.hashsalt": "test"}):
        fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    return buffer.getvalue()


def test_stacked_lays_panels_in_one_column_and_restores_the_figure():
    fig = _two_panels()
    before = _svg_of(fig)
    restore = plotting.stacked(fig)
    assert fig.get_size_inches()[0] == plotting.PHONE_INCHES
    (top, bottom) = fig.axes[:2]
    assert top.get_subplotspec().rowspan.start == 0 and bottom.get_subplotspec().rowspan.start == 1
    assert "\n" in bottom.get_xlabel() and bottom.get_title() == r"$d$ = 16, $n$ = 64"      # wrapped; short kept
    narrow = _svg_of(fig)
    width_pt = float(re.search(rb'width="([\d.]+)pt"', narrow).group(1))
    assert width_pt / 72 < plotting.PHONE_INCHES * 1.1                  # labels and legends stay in the column
    restore()
    assert _svg_of(fig) == before
    plt.close(fig)


def test_narrow_html_gives_both_versions_only_for_the_book(monkeypatch):
    fig = _two_panels()
    monkeypatch.delenv(plotting.STATIC, raising=False)
    assert plotting.narrow_html(fig) is None                        # a running notebook shows the SVG alone
    monkeypatch.setenv(plotting.STATIC, "1")
    shown = plotting.narrow_html(fig)
    assert shown.count("<img") == 2 and 'class="pavlov-wide"' in shown and 'class="pavlov-stacked"' in shown
    small, _ = plotting.subplots(figsize=(3.0, 2.5))
    assert plotting.narrow_html(small) is None                      # already narrow: shown as drawn
    plt.close("all")


# A 390 px phone's text column: a figure no wider than this shows at its own size, so its text at the size it was set.
PHONE_COLUMN_PX = 328


def _shown_px(svg: str) -> float:
    """The width (px, at the browser's 96 px per inch) at which a page shows an SVG at its own size."""
    return float(re.search(r'width="([\d.]+)pt"', svg).group(1)) * 96 / 72


def test_a_static_explorers_frames_come_with_a_version_for_a_phone():
    controls = {"a": plotting.widgets().IntSlider(1, 1, 2)}

    def two_panels(a=1):
        fig = _two_panels()
        fig.axes[0].set_title(f"a = {a}")
        return fig

    page = plotting.static_explorer(two_panels, controls)["text/html"]
    wide = re.findall(r'<img class="pavlov-explorer-frame pavlov-wide" data-keys="([^"]*)"', page)
    narrow = re.findall(r'<img class="pavlov-explorer-frame pavlov-stacked" data-keys="([^"]*)"[^>]*base64,([^"]+)"', page)
    assert wide == ["0", "1"] and [keys for keys, _ in narrow] == wide          # each setting in both versions
    for _, data in narrow:
        svg = base64.b64decode(data).decode()
        assert _shown_px(svg) <= PHONE_COLUMN_PX, "a phone frame wider than a phone's column is shrunk, its text too"
    assert "hidden" not in re.search(r'<img class="pavlov-explorer-frame pavlov-stacked" data-keys="0"[^>]*>',
                                     page).group(0)                              # the first setting shows in both
    # a frame already as narrow as the column is drawn once
    def narrow(a=1):
        fig, ax = plotting.subplots(figsize=(3.0, 2.5))
        ax.set_title(f"a = {a}")
        return fig

    small = plotting.static_explorer(narrow, controls)["text/html"]
    assert "pavlov-stacked" not in small and small.count("<img") == 2


def test_the_page_hides_a_hidden_frame_in_either_version_and_scrolls_a_diagram_on_a_phone():
    from pathlib import Path

    css = (Path(__file__).resolve().parents[1] / "_static" / "pavlov.css").read_text()
    assert "img.pavlov-explorer-frame[hidden] { display: none; }" in css    # after img.pavlov-stacked's display
    assert css.index("img.pavlov-explorer-frame[hidden]") > css.index("img.pavlov-stacked { display: block; }")
    assert "div.pavlov-diagram-box { overflow-x: auto;" in css and "img.pavlov-diagram { max-width: none; }" in css


@pytest.mark.parametrize("chapter", sorted(__import__("pavlov.diagrams").diagrams.DIAGRAMS))
def test_each_diagram_reads_on_a_phone(chapter, monkeypatch):
    # every diagram comes twice: as drawn and, below 600 px, a version no wider than a phone's column, shown at its own
    # size, so that its text shows at the size it was set: a hand-placed diagram's own phone layout (narrow=True),
    # a diagram of panels stacked like any figure
    from pavlov import diagrams

    monkeypatch.setenv(plotting.STATIC, "1")
    draw = diagrams.DIAGRAMS[chapter]
    fig = draw()
    shown = plotting.narrow_html(fig)
    assert "pavlov-diagram-box" not in shown and 'class="pavlov-wide"' in shown
    narrow = re.search(r'class="pavlov-stacked" alt="[^"]+" src="data:image/svg\+xml;base64,([^"]+)"', shown).group(1)
    assert _shown_px(base64.b64decode(narrow).decode()) <= PHONE_COLUMN_PX
    if plotting._hand_placed(fig):
        phone = draw(narrow=True)
        assert phone.get_figwidth() <= plotting.PHONE_INCHES
        phone.canvas.draw()
        renderer = phone.canvas.get_renderer()
        texts = [t for t in phone.findobj(matplotlib.text.Text) if t.get_text().strip() and t.get_visible()]
        assert min(t.get_fontsize() for t in texts) >= plotting.SMALLEST_TEXT_PT
        boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts]
        crowded = [(a, b) for i, (a, box) in enumerate(boxes) for b, other in boxes[i + 1:] if box.overlaps(other)]
        assert not crowded, f"{chapter}: labels on top of one another on a phone: {crowded}"
    plt.close("all")


def test_a_figure_may_carry_its_own_phone_version(monkeypatch):
    monkeypatch.setenv(plotting.STATIC, "1")
    fig, ax = plotting.subplots(figsize=(7.5, 2.5))
    ax.axis("off")
    ax.text(0.5, 0.5, "a hand-placed label")
    assert plotting.narrow_html(fig).startswith('<div class="pavlov-diagram-box">')     # none: it scrolls
    plotting.with_phone_version(fig, lambda: plotting.subplots(figsize=(3.0, 2.5))[0])
    shown = plotting.narrow_html(fig)
    assert 'class="pavlov-wide"' in shown and 'class="pavlov-stacked"' in shown
    with pytest.raises(ValueError, match="draw"):
        plotting.with_phone_version(fig, "not a function")
    plt.close("all")


def test_a_legend_below_stacked_panels_leaves_the_panel_its_height():
    fig, ax = plotting.subplots(figsize=(7.5, 3.0))
    for i in range(6):
        ax.plot([0, 1], [i, i + 1], label=f"a series numbered {i}")
    plotting.legend_below(fig, ncol=2)
    restore = plotting.stacked(fig)
    fig.canvas.draw()
    panel = ax.get_window_extent()
    assert panel.height >= 0.4 * panel.width, "the legend, one entry a row, took the panel's height"
    restore()
    plt.close(fig)


def test_a_table_keeps_a_bar_inside_its_cell():
    from markdown_it import MarkdownIt

    text = plotting.table(["largest |z|", "d"], [("2.03", 16)]).data
    html = MarkdownIt("commonmark").enable("table").render(text)
    assert html.count("<th>") == 2 and html.count("<td>") == 2 and "<th>largest |z|</th>" in html
