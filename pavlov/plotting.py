"""The book's figure style, in one place.

Computation never imports this module; chapters do. Every figure shows the measurement as points
with error bars and the theory as a line beside it, with labelled axes and a legend.
"""

from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt

# Okabe and Ito's palette, which readers with any common colour-vision deficiency tell apart (yellow
# last: it is faint on white); each series also gets its own marker and line style, so no figure
# depends on colour alone.
OKABE_ITO = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES = ("-", "--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)), (0, (1, 3)), (0, (8, 2, 2, 2)))

THEORY = {"color": "black", "linestyle": "--", "linewidth": 1.2}
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


def theory(ax, x, y, *, label: str = "theory", **kwargs):
    """Plot a closed-form prediction as a dashed line."""
    return ax.plot(x, y, label=label, **{**THEORY, **kwargs})


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


def explorer(draw, **controls) -> None:
    """Controls (ipywidgets, by parameter name) above a figure ``draw(**values)`` that they redraw in place.

    The first figure is an ordinary output, so the static HTML book shows the explorer's initial
    state; in a running notebook (Colab, Jupyter) moving a control replaces the figure. ``draw``
    returns a matplotlib figure and does not show it. Without ipywidgets (controls from
    :func:`widgets`) it shows the first figure and says how to get the controls. Works with
    ipywidgets 7 (Colab's) and 8. The explorer is kept in :data:`EXPLORERS`.
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
    display(ipywidgets.Box(list(controls.values()), layout=ipywidgets.Layout(flex_flow="row wrap")))
    handle = display(shown.redraw(), display_id=True)
    for control in controls.values():
        control.observe(lambda _: handle.update(shown.redraw()), names="value")


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
