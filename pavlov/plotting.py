"""The book's figure style, in one place.

Computation never imports this module; chapters do. Every figure shows the measurement as points
with error bars and the theory as a line beside it, with labelled axes and a legend.
"""

from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt

THEORY = {"color": "black", "linestyle": "--", "linewidth": 1.2}
MEASURED = {"marker": "o", "markersize": 4, "capsize": 2, "linestyle": "none"}

STYLE = {
    "figure.figsize": (6.4, 3.6),
    "figure.dpi": 110,
    "savefig.dpi": 150,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.frameon": False,
    "font.size": 10,
}


def use_style() -> None:
    """Apply the book's matplotlib style (each chapter calls it once, after :func:`pavlov.setup`)."""
    mpl.rcParams.update(STYLE)


def subplots(*args, **kwargs):
    """``plt.subplots`` with the book's style and a constrained layout."""
    use_style()
    kwargs.setdefault("layout", "constrained")
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
