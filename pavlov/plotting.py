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


def explorer(draw, **controls) -> None:
    """Controls (ipywidgets, by parameter name) above a figure ``draw(**values)`` that they redraw in place.

    The first figure is an ordinary output, so the static HTML book shows the explorer's initial
    state; in a running notebook (Colab, Jupyter) moving a control replaces the figure. ``draw``
    returns a matplotlib figure and does not show it.
    """
    import ipywidgets
    from IPython.display import display

    def current():
        figure = draw(**{name: control.value for name, control in controls.items()})
        plt.close(figure)             # shown through the display handle only, not a second time by the backend
        return figure

    for name, control in controls.items():
        control.description = control.description or name           # label each control, as interact would
    display(ipywidgets.Box(list(controls.values()), layout=ipywidgets.Layout(flex_flow="row wrap")))
    handle = display(current(), display_id=True)
    for control in controls.values():
        control.observe(lambda _: handle.update(current()), names="value")
