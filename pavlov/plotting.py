"""The book's figure style, in one place.

Computation never imports this module; chapters do. Every figure shows the measurement as points
with error bars and the theory as a line beside it, with labelled axes and a legend.
"""

from __future__ import annotations

import base64
import html
import io
import itertools
import json
import math
import os
import re

import matplotlib as mpl
import matplotlib.pyplot as plt

from . import runtime

# Okabe and Ito's palette, which readers with any common colour-vision deficiency tell apart (yellow
# last: it is faint on white); each series also gets its own marker and line style, so no figure
# depends on colour alone.
OKABE_ITO = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES = ("-", "--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)), (0, (1, 3)), (0, (8, 2, 2, 2)))

ENSEMBLE_COLORS = {"sphere": OKABE_ITO[0], "gaussian": OKABE_ITO[3], "gaussian_overlap": OKABE_ITO[2]}
"""One colour per key ensemble (``pavlov.theory.KEY_ENSEMBLES``), and for the Gaussian approximation of the overlaps,
the same in every figure that compares them: keys on the sphere blue, Gaussian keys reddish purple, the
approximation green."""

# a theory is a line, never a chain of markers over the measurement (the cycle would give it markers)
THEORY = {"color": "black", "linestyle": "--", "linewidth": 1.2, "marker": "none"}
MEASURED = {"markersize": 4, "capsize": 2, "linestyle": "none"}

SMALLEST_TEXT_PT = 9.0
"""No text in a figure is smaller than this, at the size the page shows it (tests/test_layout.py)."""
COLUMN_INCHES = 7.5
"""The widest figure, in inches: at the book's 96 px per inch it fits the text column at 1280 px."""

STYLE = {
    "figure.figsize": (6.4, 3.6),
    "figure.dpi": 100,
    "savefig.dpi": 200,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.prop_cycle": (mpl.cycler(color=OKABE_ITO) + mpl.cycler(marker=MARKERS)
                        + mpl.cycler(linestyle=LINESTYLES)),
    "legend.frameon": False,
    "font.size": 10,
    "axes.titlesize": 10,
    "axes.labelsize": 10,
    "xtick.labelsize": SMALLEST_TEXT_PT,
    "ytick.labelsize": SMALLEST_TEXT_PT,
    "legend.fontsize": SMALLEST_TEXT_PT,
    "legend.title_fontsize": SMALLEST_TEXT_PT,
    "figure.titlesize": 11,
    "svg.fonttype": "path",
}


def use_style() -> None:
    """Apply the book's matplotlib style, and show figures in notebooks as SVG (vector, sharp at any zoom).

    Every chapter's figures come through :func:`subplots`, which calls it.
    """
    mpl.rcParams.update(STYLE)
    try:
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:       # outside IPython there is no inline backend to configure
        return
    set_matplotlib_formats("svg")
    from IPython import get_ipython

    shell = get_ipython()
    if shell is not None:      # the book's HTML: each figure also drawn for a phone's column (narrow_html)
        shell.display_formatter.formatters["text/html"].for_type(mpl.figure.Figure, narrow_html)


_running_cell: str | None = None


def cell_key(source: str) -> str:
    """A short fingerprint of a code cell's source, by which a figure's record names the cell that showed it."""
    import hashlib

    return hashlib.sha1(source.strip().encode()).hexdigest()[:16]


def _note_cell(info) -> None:
    """Keep the fingerprint of the cell that runs now (IPython's ``pre_run_cell`` event), for :func:`_record_styles`."""
    global _running_cell
    _running_cell = cell_key(info.raw_cell or "")


def subplots(*args, **kwargs):
    """``plt.subplots`` with the book's style and a constrained layout, at most :data:`COLUMN_INCHES` wide.

    A wider ``figsize`` keeps its height and is narrowed to the column, so that the page never shrinks
    the figure and its text stays at least :data:`SMALLEST_TEXT_PT` points.
    """
    use_style()
    kwargs.setdefault("layout", "constrained")
    width, height = kwargs.get("figsize", STYLE["figure.figsize"])
    kwargs["figsize"] = (min(width, COLUMN_INCHES), height)
    return plt.subplots(*args, **kwargs)


def measured(ax, x, y, yerr=None, *, label: str = "measured", **kwargs):
    """Plot a measurement: points with ``yerr`` error bars (standard errors, unless stated)."""
    return ax.errorbar(x, y, yerr=yerr, label=label, **{**MEASURED, **kwargs})


def over_runs(ax, x, runs, *, label: str, color: str, **kwargs):
    """Plot one measurement per training run at each ``x``: every run a faint dot, and the runs' mean with its
    standard error (``runs``: one sequence of per-run values for each ``x``; an ``x`` with none is left out)."""
    pairs = [(float(at), [float(v) for v in values]) for at, values in zip(x, runs) if len(values)]
    for at, values in pairs:
        ax.plot([at] * len(values), values, ".", color=color, alpha=0.3)
    mean = [sum(values) / len(values) for _, values in pairs]
    se = [math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1) / len(values)) if len(values) > 1 else 0.0
          for (_, values), m in zip(pairs, mean)]
    return measured(ax, [at for at, _ in pairs], mean, se, label=label, color=color, linestyle="none", **kwargs)


def theory(ax, x, y, *, label: str = "theory", **kwargs):
    """Plot a closed-form prediction as a dashed line."""
    return ax.plot(x, y, label=label, **{**THEORY, **kwargs})


WORDS = {"hebbian": "Hebbian", "least_squares": "least squares", "relu": "ReLU", "relu2": "squared ReLU",
         "gated_delta": "gated delta", "oja": "Oja", "bcm": "BCM", "gaussian": "Gaussian"}
"""How a figure names the package's options (a store, a rule, a key ensemble) in words."""


PHONE_INCHES = 3.3
"""The width at which a figure is drawn again for a phone: within a 390 px screen's column (328 px), so that its text
shows at the size it was set (:data:`SMALLEST_TEXT_PT` at least)."""


def _wrapped(words: str, columns: int = 40) -> str:
    """``words`` broken into lines of at most about ``columns`` characters, at spaces, never inside ``$...$``."""
    lines = [""]
    for token in re.findall(r"(?:\S*\$[^$]*\$\S*)+|\S+", words):
        lines[-1:] = [f"{lines[-1]} {token}".strip()] if len(lines[-1]) + len(token) < columns else [lines[-1], token]
    return "\n".join(line for line in lines if line) if len(words) > columns else words


def stacked(figure, width: float = PHONE_INCHES):
    """Lay ``figure``'s panels out one above another, ``width`` inches wide; returns a function that restores it.

    Panels made by :func:`subplots` keep their order (row by row); a twin panel follows its own, and a colour
    bar its panel (the constrained layout places both). Each panel keeps the height it had per inch of width
    it had (at least three quarters of its width), so that nothing is squeezed. A legend below the panels lists
    one entry a row; a panel's legend placed outside it, or too large for the narrow panel, moves below the
    panel's label, and the panel grows by its height. A label longer than the column is wrapped, and tick labels that
    the narrow panel runs together are slanted.
    """
    panels = [ax for ax in figure.axes if ax.get_subplotspec() is not None and not hasattr(ax, "_colorbar")]
    originals = {ax: ax.get_subplotspec() for ax in panels}
    size = figure.get_size_inches().copy()
    grid = originals[panels[0]].get_gridspec() if panels else None
    rows, columns = grid.get_geometry() if grid is not None else (1, 1)
    owners = list(dict.fromkeys(originals[ax].get_topmost_subplotspec().num1 for ax in panels))
    owner = {ax: owners.index(originals[ax].get_topmost_subplotspec().num1) for ax in panels}
    per_panel = max(size[1] / rows * width / (size[0] / columns), 0.75 * width)      # no flatter than 4:3
    heights = [per_panel] * len(owners)

    texts = {text: text.get_text() for ax in panels for text in (ax.xaxis.label, ax.yaxis.label, ax.title)}
    texts.update({text: text.get_text() for legend in [*figure.legends, *(ax.get_legend() for ax in panels)]
                  if legend is not None for text in legend.texts})
    for text, words in texts.items():
        text.set_text(_wrapped(words))

    renderer, moved = figure.canvas.get_renderer(), {}
    for ax in panels:
        legend = ax.get_legend()
        if legend is None:
            continue
        box = legend.get_window_extent(renderer)
        if (legend._bbox_to_anchor is not None or box.width / figure.dpi > 0.55 * width
                or box.height / figure.dpi > 0.4 * per_panel):
            moved[legend] = (legend._bbox_to_anchor, legend._loc, legend.borderaxespad)
            legend.set_loc("upper center")
            legend.set_bbox_to_anchor((0.5, 0.0), transform=ax.transAxes)
            legend.borderaxespad = 4.0             # in font sizes: below the tick labels and the axis label
            heights[owner[ax]] += box.height / figure.dpi + 0.2

    # a legend below the panels, drawn again from its panels' own handles (its proxies lose markers and dashes)
    drawn = {label: handle for ax in panels for handle, label in zip(*ax.get_legend_handles_labels())}
    below = [legend for legend in figure.legends
             if all(texts.get(text, text.get_text()) in drawn for text in legend.texts)]
    for legend in below:          # one entry a row: the figure grows by the legend's height, the panels keep theirs
        legend.remove()
        redrawn = figure.legend([drawn[texts.get(text, text.get_text())] for text in legend.texts],
                                [text.get_text() for text in legend.texts], loc="outside lower center", ncols=1)
        heights[-1] += redrawn.get_window_extent(renderer).height / figure.dpi + 0.1
    figure.set_size_inches(width, sum(heights))
    column = figure.add_gridspec(len(owners), 1, height_ratios=heights)
    for ax in panels:
        ax.set_subplotspec(column[owner[ax]])
    # tick labels that the narrow panel runs together (names of categories) are turned to read at a slant
    figure.canvas.draw()
    slanted = []
    for ax in panels:
        boxes = [t.get_window_extent(renderer) for t in ax.get_xticklabels() if t.get_text() and t.get_visible()]
        if any(a.x1 > b.x0 for a, b in zip(boxes, boxes[1:])):
            slanted.append(ax)
            ax.tick_params(axis="x", labelrotation=35)
            plt.setp(ax.get_xticklabels(), ha="right", rotation_mode="anchor")

    def restore():
        for ax in slanted:
            ax.tick_params(axis="x", labelrotation=0)
            plt.setp(ax.get_xticklabels(), ha="center", rotation_mode="default")
        for ax, spec in originals.items():
            ax.set_subplotspec(spec)
        for legend in figure.legends[len(figure.legends) - len(below):]:
            legend.remove()
        figure.legends.extend(below)
        for text, words in texts.items():
            text.set_text(words)
        for legend, (anchor, loc, pad) in moved.items():
            legend._bbox_to_anchor, legend._loc, legend.borderaxespad = anchor, loc, pad
        figure.set_size_inches(size)
    return restore


def narrow_html(figure) -> str | None:
    """A figure as HTML for the book: as drawn, and again for a phone's column (:func:`phone_svg`).

    The page shows the first above 600 px and the second below (``_static/pavlov.css``), so a phone never shrinks
    a figure's text. A figure that is already narrow, or whose panels are not a plain grid, gives ``None`` and
    is shown as drawn; a diagram (one panel without axes, its text placed by hand) that has no phone version of its
    own (:func:`with_phone_version`) is shown as drawn, at its own size, in a box that a phone scrolls sideways.
    Elsewhere (Colab, Jupyter) the notebook shows the SVG alone.
    """
    _record_styles(figure)
    if not os.environ.get(STATIC) or figure.get_size_inches()[0] <= PHONE_INCHES * 1.1:
        return None
    alt = alt_text(figure)
    wide = svg_text(figure, close=False)
    narrow = phone_svg(figure)
    if narrow is None and _hand_placed(figure):
        return f'<div class="pavlov-diagram-box">{_img(wide, "diagram", alt)}</div>'
    return None if narrow is None else _img(wide, "wide", alt) + _img(narrow, "stacked", alt)


# --- what a figure draws, in the words a caption would use ------------------------------------------------------------

FIGURE_STYLES = "PAVLOV_FIGURE_STYLES"
"""The environment variable naming a file to which every figure a notebook shows appends, one JSON line each, the
fingerprint of the cell it was shown in (:func:`cell_key`) and the styles its artists draw (:func:`figure_styles`): the page tests read it to check captions
against the figures (:func:`caption_mismatches`)."""

LINESTYLE_WORDS = {"solid": "-", "dashed": "--", "dotted": ":", "dash-dotted": "-.", "dash-dot": "-."}
MARKER_WORDS = {"circle": "o", "dot": ".", "square": "s", "triangle": "^v<>", "diamond": "Dd", "cross": "xX+",
                "plus": "+P", "star": "*"}
COLOUR_WORDS = {"black": ("#000000",), "blue": ("#0072B2", "#56B4E9"), "sky-blue": ("#56B4E9",),
                "orange": ("#E69F00", "#D55E00"), "vermilion": ("#D55E00",), "red": ("#D55E00",),
                "green": ("#009E73",), "purple": ("#CC79A7",), "pink": ("#CC79A7",), "yellow": ("#F0E442",),
                "grey": (), "gray": ()}
"""The words a caption may use for a line style, a marker or a colour, and what each matches (a colour word: the
palette's colours it names; grey: any colour whose channels are equal, short of black and white)."""


def _word(token: str) -> str | None:
    """The style word a caption's token stands for, or None: a line style or a colour as written, a marker in the
    plural (``"circles"`` -> ``"circle"``; a "mean square" names no marker)."""
    token = token.lower().strip(",.;:()")
    if token in LINESTYLE_WORDS or token in COLOUR_WORDS:
        return token
    for form in (token[:-2], token[:-1]):
        if token.endswith("s") and form in MARKER_WORDS:
            return form
    return None


def _colour_words(colour) -> set[str]:
    """The colour words that ``colour`` (anything matplotlib reads) answers to."""
    r, g, b, a = mpl.colors.to_rgba(colour)
    if a == 0:
        return set()
    words = {w for w, hexes in COLOUR_WORDS.items()
             if any(max(abs(x - y) for x, y in zip((r, g, b), mpl.colors.to_rgb(h))) < 0.08 for h in hexes)}
    if max(r, g, b) - min(r, g, b) < 0.04:
        words |= {"black"} if max(r, g, b) < 0.15 else ({"grey", "gray"} if max(r, g, b) < 0.95 else set())
    return words


def _marker_of(path) -> str | None:
    """The marker whose path ``path`` is (a scatter's), or None."""
    from matplotlib.markers import MarkerStyle

    for code in "os^vDdxX+P*.<>":
        style = MarkerStyle(code)
        ref = style.get_path().transformed(style.get_transform())
        if len(ref.vertices) == len(path.vertices):
            scale = abs(path.vertices).max() / max(abs(ref.vertices).max(), 1e-12)
            if abs(path.vertices - ref.vertices * scale).max() < 1e-6 * max(scale, 1.0):
                return code
    return None


def figure_styles(figure) -> list[dict]:
    """Each visible artist of ``figure`` that a caption could describe, as a dict of the words it answers to: its line
    style, its marker and its colours (lines, scatters, filled regions and bars), e.g. ``{"dashed", "black"}``.

    >>> fig, ax = plt.subplots()
    >>> _ = ax.plot([0, 1], [0, 1], "k--"); _ = ax.plot([0, 1], [1, 0], "s", color="#0072B2")
    >>> sorted(map(sorted, figure_styles(fig)))
    [['black', 'dashed'], ['blue', 'square']]
    >>> plt.close(fig)
    """
    from matplotlib.collections import Collection, PolyCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle

    found = []
    for ax in figure.axes:
        for artist in ax.get_children():
            if not artist.get_visible() or artist is ax.patch:
                continue
            words = set()
            if isinstance(artist, Line2D):
                style, marker = artist.get_linestyle(), artist.get_marker()
                if style not in ("None", "", " ", None):
                    words |= {w for w, code in LINESTYLE_WORDS.items() if code == style}
                if marker not in ("None", "", " ", None):
                    words |= {w for w, codes in MARKER_WORDS.items() if str(marker) in codes}
                for colour in (artist.get_color(), artist.get_markerfacecolor(), artist.get_markeredgecolor()):
                    words |= _colour_words(colour)
            elif isinstance(artist, Collection) and not isinstance(artist, PolyCollection):
                paths = artist.get_paths()
                marker = _marker_of(paths[0]) if len(paths) == 1 and len(artist.get_offsets()) else None
                words |= {w for w, codes in MARKER_WORDS.items() if marker and marker in codes}
                for colour in (*artist.get_facecolors(), *artist.get_edgecolors()):
                    words |= _colour_words(colour)
            elif isinstance(artist, (PolyCollection, Rectangle)):
                colours = (*artist.get_facecolors(),) if isinstance(artist, PolyCollection) else (artist.get_facecolor(),)
                for colour in colours:
                    words |= _colour_words(colour)
            if words:
                found.append(words)
    return found


def caption_mismatches(caption: str, styles: list) -> list[str]:
    """The phrases of ``caption`` that name a line style, a marker or a colour (:data:`LINESTYLE_WORDS`,
    :data:`MARKER_WORDS`, :data:`COLOUR_WORDS`) which no artist of the figure draws (``styles``: its
    :func:`figure_styles`, each artist's words). Neighbouring words are one phrase, which one artist must draw whole:
    "dashed black" needs a line both dashed and black.

    >>> caption_mismatches("the theory, dashed black; the runs as squares", [{"dashed", "black"}, {"square", "blue"}])
    []
    >>> caption_mismatches("solid black: the mean", [{"dotted", "black", "diamond"}])
    ['solid black']
    >>> caption_mismatches("least squares and the mean squares of the errors", [])
    []
    """
    phrases, run, before = [], [], ""
    for token in re.split(r"\s+", caption.replace("(", " ").replace("-coloured", "")):
        # "least squares", "mean squares", "sum of squares": the method or the measure, not a marker
        word = None if before in ("least", "mean", "of") else _word(token)
        before = token.lower()
        if word:
            run.append((token.strip(",.;:()").lower(), word))
        if not word or token.endswith((",", ".", ";", ":", ")")):
            if run:
                phrases.append(run)
            run = []
    if run:
        phrases.append(run)
    artists = [set(words) for words in styles]
    return [" ".join(t for t, _ in phrase) for phrase in phrases
            if not any({w for _, w in phrase} <= words for words in artists)]


def _record_styles(figure) -> None:
    """Append ``figure``'s styles, with the cell that shows it, to the file :data:`FIGURE_STYLES` names, if it does."""
    target = os.environ.get(FIGURE_STYLES)
    if not target:
        return
    line = json.dumps({"cell": _running_cell, "styles": [sorted(words) for words in figure_styles(figure)]})
    with open(target, "a", encoding="utf-8") as out:
        out.write(line + "\n")


PHONE_VERSION = "pavlov_phone_version"
"""The attribute of a figure that holds the function drawing its own version for a phone (:func:`with_phone_version`)."""


def with_phone_version(figure, draw):
    """Give ``figure`` its own version for a phone's column: ``draw()`` returns that figure, at most
    :data:`PHONE_INCHES` wide, drawn by the same code laid out for the column (a hand-placed diagram whose parts
    stack or whose labels wrap). :func:`narrow_html` and the explorers show it below 600 px; returns ``figure``."""
    if not callable(draw):
        raise ValueError(f"draw must be a function that returns the figure drawn for a phone, got {draw!r}")
    setattr(figure, PHONE_VERSION, draw)
    return figure


def _hand_placed(figure) -> bool:
    """Whether ``figure`` is a diagram of one panel without axes (pavlov.diagrams), its text placed by hand."""
    panels = [ax for ax in figure.axes if not hasattr(ax, "_colorbar")]
    return len(panels) == 1 and not panels[0].axison


def phone_svg(figure) -> str | None:
    """``figure`` drawn as SVG for a phone's column: its panels :func:`stacked`, and drawn again narrower when its
    labels or a colour bar stick out, so that its text shows at its own size at 390 px. The figure is restored.

    A figure with its own phone version (:func:`with_phone_version`) is that version instead. ``None`` for a figure
    already that narrow, a hand-placed diagram without a phone version, or a layout :func:`stacked` cannot redo.
    """
    return _phone_svg(figure)[0]


def _phone_svg(figure, width: float = PHONE_INCHES) -> tuple[str | None, float]:
    """:func:`phone_svg`, its first try stacked ``width`` inches wide; also returns the width it was drawn at (an
    explorer's next frame starts there, so that frames alike are drawn once each)."""
    if figure.get_size_inches()[0] <= PHONE_INCHES * 1.1:
        return None, width
    draw = getattr(figure, PHONE_VERSION, None)
    if draw is not None:
        return svg_text(draw()), width
    if _hand_placed(figure):
        return None, width
    try:
        for _ in range(2):                     # once more, narrower, when labels or a colour bar stick out
            restore = stacked(figure, width)
            try:
                narrow = svg_text(figure, close=False)
            finally:
                restore()
            shown = float(re.search(r'width="([\d.]+)pt"', narrow).group(1)) / 72
            if shown <= PHONE_INCHES * 1.01:
                break
            width *= PHONE_INCHES / shown
    except (ValueError, AttributeError, IndexError):     # a layout stacked() cannot redo
        return None, PHONE_INCHES
    return narrow, width


def _img(svg: str, kind: str, alt: str = "") -> str:
    """An SVG as an ``<img>`` of class ``pavlov-<kind>`` (the page's style picks the version by the screen's width),
    with ``alt`` as its text for a reader who cannot see it (:func:`alt_text`)."""
    return (f'<img class="pavlov-{kind}" alt="{html.escape(alt, quote=True)}" '
            f'src="data:image/svg+xml;base64,{base64.b64encode(svg.encode()).decode()}">')


def alt_text(figure) -> str:
    """A figure in words, for a reader who cannot see it: each panel's title and what it plots against what, or a
    diagram's own words.

    >>> fig, ax = subplots()
    >>> _ = ax.set(title="recall falls", xlabel="pairs", ylabel="accuracy")
    >>> alt_text(fig)
    'recall falls: accuracy against pairs'
    >>> plt.close(fig)
    """
    panels = []
    for ax in figure.axes:
        if not ax.axison:  # a diagram: the words it places
            panels.append(", ".join(" ".join(t.get_text().split()) for t in ax.texts if t.get_text().strip()))
            continue
        title, x, y = (" ".join(text.split()) for text in (ax.get_title(), ax.get_xlabel(), ax.get_ylabel()))
        plotted = f"{y} against {x}" if x and y else x or y
        panels.append(": ".join(part for part in (title, plotted) if part))
    return "; ".join(panel for panel in panels if panel)



def hero(figure, name: str) -> None:
    """Show ``figure`` as the chapter's opening figure: in the book, glued under ``name`` for the chapter's first
    lines (``{glue:figure} name``, with the caption that states the chapter's answer), not again where it is
    drawn; in a running notebook (Colab, Jupyter), here, as any figure.
    """
    from IPython.display import display

    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be the glue name of the chapter's opening figure, got {name!r}")
    if os.environ.get(STATIC):
        from myst_nb import glue

        glue(name, figure, display=False)
    else:
        display(figure)
    plt.close(figure)


def words(name: str) -> str:
    """A package option's name as a figure writes it.

    >>> words("relu2"), words("least_squares"), words("softmax")
    ('squared ReLU', 'least squares', 'softmax')
    """
    return WORDS.get(name, str(name).replace("_", " "))


def legend_below(fig, ax=None, *, ncol: int = 3):
    """One legend for the whole figure, below its panels, so that it covers no data; its entries are
    ``ax``'s (default: the first panel's), or, for a list of panels, theirs in order, each label once."""
    entries = {}
    for panel in ax if isinstance(ax, (list, tuple)) else [ax if ax is not None else fig.axes[0]]:
        for handle, label in zip(*panel.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    return fig.legend(list(entries.values()), list(entries), loc="outside lower center", ncol=ncol)


def table(header, rows):
    """A result as a table in Markdown, which the page renders as a table that reads at a phone's width (a printout
    would be cut off there): ``header``, the columns' names; ``rows``, each a sequence of cells, written as given
    (format numbers before, with their units)."""
    from IPython.display import Markdown

    lines = [header, ["---"] * len(header), *rows]
    # a bar inside a cell (|z|) would split it: escaped, as Markdown's tables read it
    return Markdown("\n".join("| " + " | ".join(str(cell).replace("|", "\\|") for cell in line) + " |"
                               for line in lines))


class Explorer:
    """One explorer: its ``draw`` function, its controls by parameter name and the figure it shows now."""

    def __init__(self, draw, controls: dict):
        self.draw, self.controls, self.figure = draw, controls, None

    def redraw(self):
        """Draw the figure for the controls' current values (and keep it as :attr:`figure`)."""
        self.figure = self.draw(**{name: control.value for name, control in self.controls.items()})
        plt.close(self.figure)        # shown through a display handle only, not a second time by the backend
        return self.figure


EXPLORERS: list[Explorer] = []
"""Every explorer shown in this session, the latest last (tests move their controls through it)."""


STATIC = runtime.BOOK
"""The environment variable that ``make book`` sets: explorers then show precomputed frames (:func:`static_explorer`)."""
MAX_FRAMES = 36
"""The most frames one static explorer may precompute (each is an SVG of about 50 kB in the page)."""


def explorer(draw, grid: dict | None = None, **controls) -> None:
    """Controls (ipywidgets, by parameter name) above a figure ``draw(**values)`` that they redraw in place.

    In a running notebook (Colab, Jupyter) moving a control replaces the figure. ``draw`` returns a
    matplotlib figure and does not show it. Works with ipywidgets 7 (Colab's) and 8. When the book is
    built (``$PAVLOV_BOOK`` set, as ``make book`` does) there is no kernel behind the page, so the
    explorer is drawn instead at every setting of ``grid`` (see :func:`static_explorer`) and the page
    switches between those frames. Without ipywidgets (controls from :func:`widgets`) it shows the first
    figure and says how to get the controls. The explorer is kept in :data:`EXPLORERS`.
    """
    from IPython.display import display

    shown = Explorer(draw, controls)
    EXPLORERS.append(shown)
    ipywidgets = widgets()
    if isinstance(ipywidgets, _FixedControls):
        print("ipywidgets is not installed, so the controls are off and this is the first setting "
              "(pip install ipywidgets, then rerun the chapter)")
        display(shown.redraw())
        return
    for name, control in controls.items():
        control.description = control.description or name           # label each control, as interact would
    if os.environ.get(STATIC):
        display(static_explorer(draw, controls, grid), raw=True)
        return
    display(ipywidgets.Box(list(controls.values()), layout=ipywidgets.Layout(flex_flow="row wrap")))
    handle = display(shown.redraw(), display_id=True)
    for control in controls.values():
        control.observe(lambda _: handle.update(shown.redraw()), names="value")


def _options(control) -> list[tuple[str, object]] | None:
    """A menu's ``(label, value)`` pairs (ipywidgets takes values, pairs or a dict), or ``None`` for a slider."""
    options = getattr(control, "options", None)
    if options is None:
        return None
    items = options.items() if isinstance(options, dict) else options
    return [item if isinstance(item, tuple) else (_number(item), item) for item in items]


def _number(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _settings(name: str, control, values) -> list:
    """The values a static explorer draws ``control`` at: ``values`` when given, else every option of a
    menu, or a slider's two ends and its initial value."""
    if values is None:
        options = _options(control)
        if options is not None:
            values = [value for _, value in options]
        else:
            ends = (control.min, control.max)
            if hasattr(control, "base"):                        # a log slider's ends are exponents
                ends = tuple(control.base ** end for end in ends)
            values = sorted({*ends, control.value})
    values = list(values)
    if control.value not in values:
        raise ValueError(f"grid[{name!r}] must include the control's initial value {control.value!r}; "
                         f"got {values}")
    return values


def _label(control, value) -> str:
    """How a control shows ``value``: a menu's label for it, else the number (floats with %g)."""
    for label, option in _options(control) or ():
        if option == value:
            return label
    return _number(value)


def svg_text(figure, close: bool = True) -> str:
    """``figure`` as SVG text, the same bytes for the same figure (closed unless ``close`` is false)."""
    buffer = io.BytesIO()
    with mpl.rc_context({"svg.hashsalt": "pavlov"}):        # the same figure gives the same bytes
        figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    if close:
        plt.close(figure)
    return buffer.getvalue().decode()


def static_explorer(draw, controls: dict, grid: dict | None = None) -> dict[str, str]:
    """An explorer for a page with no kernel: HTML with one frame per setting and controls that switch them.

    Each control takes the values ``grid[name]`` (default: every option of a menu; a slider's ends and its
    initial value), which must include its initial value; ``draw`` runs once for every combination, at
    most :data:`MAX_FRAMES`. Menus become ``<select>``, sliders ``<input type="range">`` over their grid, a
    control with one value a fixed label; ``_static/explorer.js`` shows the frame of the current setting.
    Nothing is fetched: the frames are SVG in the page. Returns the output's mime bundle (for
    ``display(bundle, raw=True)``): that HTML, and the initial frame alone as ``image/svg+xml`` for the
    PDF, where nothing moves.
    """
    grid = dict(grid or {})
    unknown = set(grid) - set(controls)
    if unknown:
        raise ValueError(f"grid names {sorted(unknown)}, which are not controls (controls: {list(controls)})")
    axes = {name: _settings(name, control, grid.get(name)) for name, control in controls.items()}
    count = math.prod(len(values) for values in axes.values())
    if count > MAX_FRAMES:
        raise ValueError(f"grid gives {count} frames, more than MAX_FRAMES = {MAX_FRAMES}: "
                         f"give fewer values ({ {name: len(v) for name, v in axes.items()} })")
    parts = ['<div class="pavlov-explorer">', '<div class="pavlov-explorer-controls">']
    for name, control in controls.items():
        values, start = axes[name], axes[name].index(control.value)
        labels = [html.escape(_label(control, value)) for value in values]
        title = html.escape(control.description or name)
        if len(values) == 1:
            field = f'<span class="pavlov-explorer-fixed" title="fixed in this page">{labels[0]}</span>'
        elif hasattr(control, "options") and "Slider" not in type(control).__name__:
            field = "<select>" + "".join(f'<option value="{i}"{" selected" * (i == start)}>{label}</option>'
                                         for i, label in enumerate(labels)) + "</select>"
        else:
            field = (f'<input type="range" min="0" max="{len(values) - 1}" step="1" value="{start}" '
                     f"data-labels='{html.escape(json.dumps(labels), quote=True)}'><output>{labels[start]}</output>")
        parts.append(f'<label data-control="{html.escape(name)}">{title} {field}</label>')
    parts.append("</div>")
    initial = ",".join(str(axes[name].index(control.value)) for name, control in controls.items())
    frames: dict[str, tuple[str | None, list[str]]] = {}   # one image per distinct frame, with its settings
    width = PHONE_INCHES
    for index in itertools.product(*(range(len(values)) for values in axes.values())):
        figure = draw(**{name: axes[name][i] for name, i in zip(axes, index)})
        wide = svg_text(figure, close=False)
        if wide not in frames:                  # and its phone version (phone_svg), where it has one
            narrow, width = _phone_svg(figure, width)
            frames[wide] = (narrow, [])
        plt.close(figure)
        frames[wide][1].append(",".join(map(str, index)))
    for wide, (narrow, keys) in frames.items():
        hidden = "" if initial in keys else " hidden"
        for svg, kind in ((wide, " pavlov-wide" if narrow else ""), (narrow, " pavlov-stacked")):
            if svg is None:
                continue
            data = base64.b64encode(svg.encode()).decode("ascii")
            parts.append(f'<img class="pavlov-explorer-frame{kind}" data-keys="{" ".join(keys)}" alt="the figure at '
                         f'this setting"{hidden} src="data:image/svg+xml;base64,{data}">')
    parts.append(f'<p class="pavlov-explorer-note">Drawn in advance at {count} settings; in Colab or Jupyter '
                 "every control moves freely.</p></div>")
    first = next(svg for svg, (_, keys) in frames.items() if initial in keys)
    return {"text/html": "\n".join(parts), "image/svg+xml": first}


class _FixedControl:
    """A stand-in for an ipywidgets control that holds its initial value (``value=``, the first positional
    argument, or the first of ``options``)."""

    def __init__(self, *args, value=None, options=None, description="", **kwargs):
        if value is None:
            value = args[0] if args else None
        if value is None and options is not None:
            first = next(iter(options.values() if isinstance(options, dict) else options))
            value = first[1] if isinstance(first, tuple) else first
        self.value, self.description = value, description


class _FixedControls:
    """What :func:`widgets` returns without ipywidgets: every control class is :class:`_FixedControl`."""

    def __getattr__(self, name: str):
        return _FixedControl


def widgets():
    """The ``ipywidgets`` module, or stand-ins that keep each control at its initial value when it is missing.

    Chapters build their explorers' controls from it (``widgets = plotting.widgets()``), so a reader
    without ipywidgets still gets each explorer's first figure and a message instead of an error.

    >>> widgets().IntSlider(5, 0, 10).value
    5
    """
    try:
        import ipywidgets
    except ImportError:
        return _FixedControls()
    return ipywidgets


def _watch_cells() -> None:
    """In a notebook, note each cell as it starts (:func:`_note_cell`), from the package's import on, so that every
    figure's record names its cell."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is not None and _note_cell not in shell.events.callbacks["pre_run_cell"]:
        shell.events.register("pre_run_cell", _note_cell)


_watch_cells()
