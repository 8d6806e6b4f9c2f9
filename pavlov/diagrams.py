r"""The book's concept diagrams, one per chapter, drawn by the build from this code.

Each function returns a matplotlib figure in the book's style (:mod:`pavlov.plotting`): boxes and
arrows for a circuit or a task, and, where the idea is a function, the function itself. A diagram whose text is
placed by hand is drawn twice by the same function: across the text column, and with ``narrow=True`` laid out for a
phone's column (its parts stacked, its labels wrapped, its text the same size), which the figure carries as its
phone version (:func:`pavlov.plotting.with_phone_version`).
"""

from __future__ import annotations

import functools

import numpy as np
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from . import plotting

_BOX = {"boxstyle": "round,pad=0.02,rounding_size=0.03", "linewidth": 1.2}


def _canvas(height: float = 2.8, narrow: bool = False):
    """An empty 10 x 10 canvas without axes, across the text column or (``narrow``) a phone's."""
    fig, ax = plotting.subplots(figsize=(plotting.PHONE_INCHES if narrow else plotting.COLUMN_INCHES, height))
    ax.set(xlim=(0, 10), ylim=(0, 10))
    ax.axis("off")
    return fig, ax


def _for_a_phone(draw):
    """The diagram ``draw`` (which takes ``narrow``), its figure carrying its phone version: ``draw`` again with
    the same arguments and ``narrow=True``."""
    @functools.wraps(draw)
    def drawn(*args, narrow: bool = False, **kwargs):
        figure = draw(*args, narrow=narrow, **kwargs)
        if narrow:
            return figure
        return plotting.with_phone_version(figure, lambda: draw(*args, narrow=True, **kwargs))
    return drawn


def _box(ax, x: float, y: float, text: str, *, width: float = 2.0, height: float = 1.6, color: int = 0,
         filled: bool = True):
    """A labelled box centred at ``(x, y)`` in the 10 x 10 canvas, in the palette's ``color``."""
    edge = plotting.OKABE_ITO[color]
    ax.add_patch(FancyBboxPatch((x - width / 2, y - height / 2), width, height, **_BOX, edgecolor=edge,
                                facecolor=edge + "22" if filled else "white"))
    ax.text(x, y, text, ha="center", va="center", fontsize=10)


def _arrow(ax, start, end, *, text: str | None = None, style: str = "-|>", offset=(0.0, 0.3), ha: str = "center"):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=12, linewidth=1.2, color="black",
                                 shrinkA=2, shrinkB=2))
    if text:
        ax.text((start[0] + end[0]) / 2 + offset[0], (start[1] + end[1]) / 2 + offset[1], text, ha=ha,
                va="bottom", fontsize=9)


def _lines(ax, x: float, top: float, parts):
    """Texts ``(words, fontsize, colour)`` one under another from ``top`` down at ``x``, each as many lines as it has,
    half a line apart."""
    per_point = 10 / (ax.figure.get_figheight() * 72)           # canvas units per point of height
    for words, size, color in parts:
        ax.text(x, top, words, fontsize=size, color=color, va="top")
        top -= ((words.count("\n") + 1) * 1.2 + 0.6) * size * per_point


@_for_a_phone
def conditioning_circuit(*, narrow: bool = False):
    """Chapter 1: the key, value and query of attention as the bell, the food and the test (``narrow``: the bell
    and the food above the store, the test and the response below it)."""
    # each part: (x, y, width, height) on the 10 x 10 canvas; each arrow: start, end
    at = ({"bell": (2.2, 8.9, 3.8, 1.8), "food": (7.8, 8.9, 3.8, 1.8), "store": (5.0, 5.7, 6.4, 2.0),
           "test": (2.2, 2.2, 3.8, 1.8), "response": (7.8, 2.2, 3.8, 1.8),
           "pairing": ((2.6, 7.9), (3.6, 6.8)), "food to store": ((7.4, 7.9), (6.4, 6.8)),
           "query": ((2.6, 3.2), (3.6, 4.6)), "read": ((6.4, 4.6), (7.4, 3.2)), "salivation": (9.8, 1.0, "right"),
           "height": 4.0} if narrow else
          {"bell": (1.3, 7.6, 2.0, 1.6), "food": (1.3, 2.4, 2.0, 1.6), "store": (5.0, 5.0, 2.6, 2.0),
           "test": (5.0, 9.0, 2.6, 1.2), "response": (8.6, 5.0, 2.0, 1.6),
           "pairing": ((2.3, 7.0), (3.7, 5.8)), "food to store": ((2.3, 3.0), (3.7, 4.2)),
           "query": ((5.0, 8.4), (5.0, 6.0)), "read": ((6.3, 5.0), (7.6, 5.0)), "salivation": (8.6, 3.0, "center"),
           "height": 2.8})
    fig, ax = _canvas(at["height"], narrow)
    _box(ax, *at["bell"][:2], "bell: CS\nkey $k$", width=at["bell"][2], height=at["bell"][3], color=0)
    _box(ax, *at["food"][:2], "food: US\nvalue $v$", width=at["food"][2], height=at["food"][3], color=1)
    _box(ax, *at["store"][:2], "store\n$S \\leftarrow S + \\alpha\\, k^\\top v$", width=at["store"][2],
         height=at["store"][3], color=2)
    _box(ax, *at["test"][:2], "test:\nquery $q$" if narrow else "test: query $q$", width=at["test"][2],
         height=at["test"][3], color=3)
    _box(ax, *at["response"][:2], "response\n$r = q S$", width=at["response"][2], height=at["response"][3], color=4)
    _arrow(ax, *at["pairing"], text="pairing", offset=(-0.9, -0.2) if narrow else (-0.2, 0.2))
    _arrow(ax, *at["food to store"])
    _arrow(ax, *at["query"])
    _arrow(ax, *at["read"], text="read", offset=(0.9, -0.4) if narrow else (0.0, 0.3))
    x, y, ha = at["salivation"]
    ax.text(x, y, "salivation: $r \\cdot v / \\|v\\|^2$", ha=ha, va="top", fontsize=9)
    return fig


def linear_attention_forms(steps: int = 6, chunk: int = 3):
    """Chapter 2: the parallel, recurrent and chunkwise forms of causal linear attention."""
    fig, axes = plotting.subplots(1, 3, figsize=(plotting.COLUMN_INCHES, 2.8))
    masked = np.tril(np.ones((steps, steps)))
    axes[0].imshow(masked, cmap="Blues", vmin=0, vmax=1.6)
    axes[0].set_title("parallel: $(\\phi(Q)\\phi(K)^\\top \\odot M)\\, V$")
    axes[0].set(xlabel="key step $j$", ylabel="query step $i$")
    axes[1].axis("off")
    axes[1].set(xlim=(0, steps + 1), ylim=(0, 3))
    for t in range(1, steps + 1):
        axes[1].add_patch(FancyBboxPatch((t - 0.35, 1.1), 0.7, 0.8, **_BOX, edgecolor=plotting.OKABE_ITO[2],
                                         facecolor=plotting.OKABE_ITO[2] + "22"))
        axes[1].text(t, 1.5, f"$S_{t}$", ha="center", va="center", fontsize=9)
        if t > 1:
            _arrow(axes[1], (t - 0.65, 1.5), (t - 0.35, 1.5))
        _arrow(axes[1], (t, 0.3), (t, 1.1))
        _arrow(axes[1], (t, 1.9), (t, 2.7))
    axes[1].text(0.3, 0.1, "$k_t, v_t$ in", fontsize=9)
    axes[1].text(0.3, 2.75, "$o_t = \\phi(q_t) S_t$ out", fontsize=9)
    axes[1].set_title("recurrent: $S_t = S_{t-1} + \\phi(k_t)^\\top v_t$")
    blocks = np.zeros((steps, steps))
    for start in range(0, steps, chunk):
        stop = start + chunk
        blocks[start:stop, start:stop] = np.tril(np.ones((chunk, chunk)))
        blocks[stop:, start:stop] = 0.5
    axes[2].imshow(blocks, cmap="Blues", vmin=0, vmax=1.6)
    axes[2].set_title(f"chunkwise ($C = {chunk}$)")
    axes[2].set(xlabel="within a chunk: parallel;\nearlier chunks: through $S$")
    for ax in (axes[0], axes[2]):
        ax.set_xticks([])
        ax.set_yticks([])
        ax.grid(False)
    return fig


@_for_a_phone
def signal_and_crosstalk(n: int = 6, d: int = 16, seed: int = 3, *, narrow: bool = False):
    """Chapter 3: a read-out is its own value plus the crosstalk of every other memory, in two dimensions
    (``narrow``: the labels above and below the vectors instead of beside them)."""
    rng = np.random.default_rng(seed)
    keys = rng.standard_normal((n, d))
    keys /= np.linalg.norm(keys, axis=1, keepdims=True)
    overlaps = keys[1:] @ keys[0]                      # c_i = k_i . k_j for the other memories
    angles = rng.uniform(0, 2 * np.pi, n - 1)
    values = np.stack([np.cos(angles), np.sin(angles)], 1)   # the other values, seen in a plane
    fig, ax = plotting.subplots(figsize=(plotting.PHONE_INCHES, 2.4) if narrow else (plotting.COLUMN_INCHES, 2.9))
    ax.set_aspect("equal")
    ax.axis("off")
    end = np.array([1.0, 0.0])
    _arrow(ax, (0, 0), tuple(end))
    ax.text(0.4 if narrow else 0.5, -0.12, "signal $(k_j \\cdot k_j)\\, v_j$", ha="center", va="top", fontsize=10)
    for c, v in zip(overlaps, values):
        step = end + c * v
        ax.add_patch(FancyArrowPatch(tuple(end), tuple(step), arrowstyle="-|>", mutation_scale=9,
                                     color=plotting.OKABE_ITO[1], linewidth=1))
        end = step
    ax.add_patch(FancyArrowPatch((0, 0), tuple(end), arrowstyle="-|>", mutation_scale=12,
                                 color=plotting.OKABE_ITO[0], linewidth=1.6, linestyle="--"))
    if narrow:        # the read-out's label above its end, the crosstalk's below the chain, on the right
        ax.text(end[0], end[1] + 0.08, "read-out $r(k_j)$", ha="right", va="bottom", fontsize=10,
                color=plotting.OKABE_ITO[0])
        ax.text(1.55, -0.06, "crosstalk $c_i v_i$,\n$c_i = k_i \\cdot k_j$", ha="right", va="top", fontsize=10,
                color=plotting.OKABE_ITO[1])
        ax.set(xlim=(-0.05, 1.6), ylim=(-0.35, 0.7))
    else:
        ax.text(end[0] + 0.04, end[1], "read-out $r(k_j)$", va="center", fontsize=10, color=plotting.OKABE_ITO[0])
        ax.text(1.02, 0.1, "crosstalk $c_i v_i$, $c_i = k_i \\cdot k_j$", fontsize=10, color=plotting.OKABE_ITO[1])
        ax.set(xlim=(-0.1, 2.2), ylim=(-0.35, 0.55))
    ax.set_title("ISR = |crosstalk|$^2$ / |signal|$^2$")
    return fig


def store_kernels(d: int = 16, beta: float = 4.0):
    """Chapter 4: how each store weights a memory by its overlap with the query, the stores side by side."""
    c = np.linspace(-1, 1, 201)
    kernels = {"Hebbian: $c$": c, "ReLU: $\\max(0, c)$": np.maximum(c, 0),
               "squared ReLU: $\\max(0, c)^2$": np.maximum(c, 0) ** 2, "polynomial: $c^3$": c ** 3,
               f"softmax: $e^{{\\beta c}} / e^{{\\beta}}$, $\\beta = {beta:g}$": np.exp(beta * (c - 1))}
    fig, ax = plotting.subplots(figsize=(plotting.COLUMN_INCHES, 3.0))
    for label, weight in kernels.items():
        ax.plot(c, weight, label=label, markevery=25)
    spread = 1 / np.sqrt(d)
    ax.axvspan(-2 * spread, 2 * spread, color="grey", alpha=0.15, label=f"typical overlaps, $d = {d}$")
    ax.set(xlabel="overlap $c = q \\cdot k_i$ of the query with a stored key", ylabel="weight of memory $i$",
           ylim=(-1.05, 1.05))
    plotting.legend_below(fig, ncol=2)
    return fig


def softmax_crowd(n: int = 256, d: int = 16, betas=(1.0, 4.0, 16.0), seed: int = 0):
    """Chapter 5: one query's softmax weights over its n memories, the target against the crowd, at three
    inverse temperatures."""
    rng = np.random.default_rng(seed)
    keys = rng.standard_normal((n, d))
    keys /= np.linalg.norm(keys, axis=1, keepdims=True)
    overlaps = np.sort(keys[1:] @ keys[0])[::-1]               # the query is the target's key, keys[0]
    c = np.concatenate([[1.0], overlaps])
    fig, ax = plotting.subplots(figsize=(plotting.COLUMN_INCHES, 3.0))
    shown = np.arange(1, 65)                                   # the target and its 63 closest rivals
    for beta in betas:
        weight = np.exp(beta * (c - c.max()))
        weight /= weight.sum()
        line, = ax.plot(shown[1:], weight[1:64], label=f"$\\beta = {beta:g}$: the other memories", markevery=9)
        ax.plot(1, weight[0], marker="*", markersize=12, linestyle="none", color=line.get_color(),
                label=f"$\\beta = {beta:g}$: the target, weight {weight[0]:.2f}")
    ax.set(yscale="log", ylim=(1e-5, 1.5), xlim=(0, 65),
           xlabel=f"memory, by overlap with the query (the target first; n = {n}, d = {d})", ylabel="softmax weight")
    plotting.legend_below(fig, ncol=2)
    return fig


@_for_a_phone
def chain_task(items: int = 4, layers: int = 3, start: int = 1, failed_at: int = 2, *, narrow: bool = False):
    """Chapter 6: the chain task, items at levels, one hop per layer, a clean-up between layers (``narrow``: the
    same, its labels on more lines)."""
    fig, ax = _canvas(4.0 if narrow else 2.8, narrow)
    xs = np.linspace(1.2, 8.8, layers + 1)
    ys = np.linspace(8.1 if narrow else 8.2, 3.0 if narrow else 2.4, items)
    # the items the chain passes on: hop l maps item i to item i, except the failed hop
    taken = [start if level < failed_at else (start + 1) % items for level in range(layers + 1)]
    for level, x in enumerate(xs):
        for i, y in enumerate(ys):
            ax.plot(x, y, "o", markersize=11, markeredgecolor=plotting.OKABE_ITO[0],
                    color=plotting.OKABE_ITO[0] if taken[level] == i else "white")
        name = "start" if level == 0 else ("after\nlayer {}" if narrow else "after layer {}").format(level)
        ax.text(x, 8.8 if narrow else 9.4, name, ha="center", fontsize=9)
    for level in range(layers):
        for y in ys:
            ax.add_patch(FancyArrowPatch((xs[level] + 0.25, y), (xs[level + 1] - 0.25, y), arrowstyle="-|>",
                                         mutation_scale=8, color="grey", linewidth=0.8))
        hop = "hop {}:\n$n$ pairs\nin $H$ heads" if narrow else "hop {}: $n$ pairs\nin $H$ heads"
        ax.text((xs[level] + xs[level + 1]) / 2, 0.3, hop.format(level + 1), ha="center", fontsize=9)
    ax.add_patch(FancyArrowPatch((xs[failed_at - 1] + 0.25, ys[taken[failed_at - 1]]),
                                 (xs[failed_at] - 0.25, ys[taken[failed_at]]), arrowstyle="-|>",
                                 mutation_scale=10, color=plotting.OKABE_ITO[1], linewidth=1.4, linestyle="--"))
    gap = ys[taken[failed_at]] - (ys[0] - ys[1]) / 2                 # between the wrong item's row and the next
    ax.text((xs[failed_at - 1] + xs[failed_at]) / 2, gap,
            "a failed hop:\nthe chain fails" if narrow else "a failed hop: the chain fails", ha="center",
            va="center", fontsize=9, color=plotting.OKABE_ITO[1], backgroundcolor="white")
    return fig


@_for_a_phone
def write_rules(*, narrow: bool = False):
    """Chapter 7: every write rule is a conditioning trial: a CS and a US in, a change of the store out
    (``narrow``: the trial and the prediction above, the rules listed below them)."""
    fig, ax = _canvas(4.8 if narrow else 2.9, narrow)
    trial, prediction = ((2.4, 9.2), (2.4, 6.8)) if narrow else ((1.3, 5.0), (4.1, 5.0))
    _box(ax, *trial, "trial $t$:\nCS $k_t$, US $v_t$", width=4.4 if narrow else 2.2, height=1.5 if narrow else 2.0,
         color=0)
    _box(ax, *prediction, "prediction\n$k_t S_{t-1}$", width=4.4 if narrow else 2.0, height=1.5 if narrow else 2.0,
         color=3)
    _arrow(ax, (2.4, 8.4) if narrow else (2.4, 5.0), (2.4, 7.6) if narrow else (3.1, 5.0))
    rules = [("Hebbian", "$S_t = S_{t-1} + \\alpha\\, k_t^\\top v_t$"),
             ("decay", "$S_t = \\gamma S_{t-1} + k_t^\\top v_t$"),
             ("delta (Rescorla-Wagner)", "$S_t = S_{t-1} + \\eta\\, k_t^\\top (v_t - k_t S_{t-1})$"),
             ("gated delta", "$S_t = \\gamma S_{t-1} + \\eta\\, k_t^\\top (v_t - \\gamma k_t S_{t-1})$")]
    # the rules fan out from the prediction, one under another: (x, y) of the first, the step down, the fan's root
    x, top, step, root = (0.9, 5.0, 1.3, (0.25, 6.0)) if narrow else (5.6, 8.6, 2.4, (5.1, 5.0))
    for i, (name, update) in enumerate(rules):
        y = top - step * i
        ax.text(x, y, f"{name}:", fontsize=9, va="center", fontweight="bold")
        ax.text(x, y - (0.55 if narrow else 0.8), update, fontsize=10, va="center")
        _arrow(ax, root, (x - 0.1, y - 0.4), style="-")
    ax.text(*(7.4, 6.5) if narrow else (4.1, 2.5), "error-driven rules\nwrite the surprise", ha="center", fontsize=9)
    return fig


@_for_a_phone
def mqar_sequence(tokens=("k3", "v1", "k7", "v4", "k2", "v9", "k7", "k2", "k3"), pairs: int = 3, *,
                  narrow: bool = False):
    """Chapter 9: an MQAR sequence: key-value pairs, then the keys again as questions, each labelled (``narrow``:
    the same, its notes on two lines)."""
    fig, ax = _canvas(2.6 if narrow else 2.4, narrow)
    xs = np.linspace(1.9 if narrow else 0.7, 9.5 if narrow else 9.3, len(tokens))
    answers = {tokens[2 * i]: tokens[2 * i + 1] for i in range(pairs)}
    for i, (x, token) in enumerate(zip(xs, tokens)):
        question = i >= 2 * pairs
        color = 3 if question else (0 if token.startswith("k") else 1)
        _box(ax, x, 6.0, token, width=0.8, height=1.5, color=color, filled=not question)
        if question:
            ax.text(x, 3.2, answers[token], ha="center", fontsize=10, color=plotting.OKABE_ITO[1])
            source = xs[tokens.index(token) + 1]
            ax.add_patch(FancyArrowPatch((source, 6.9), (x, 6.9), connectionstyle="arc3,rad=-0.25",
                                         arrowstyle="-|>", mutation_scale=8, color="grey", linewidth=0.8))
        else:
            ax.text(x, 3.2, "-", ha="center", fontsize=10, color="grey")
    ax.text(1.3 if narrow else 0.1, 3.2, "label", ha="right", fontsize=9)
    notes = ("the pairs: a session\nof pairings", "the questions:\nthe tests") if narrow else \
        ("the pairs: a session of pairings", "the questions: the tests")
    ax.text((xs[0] + xs[2 * pairs - 1]) / 2, 0.4 if narrow else 1.2, notes[0], ha="center", fontsize=9)
    ax.text(xs[-1] + 0.4 if narrow else (xs[2 * pairs] + xs[-1]) / 2, 0.4 if narrow else 1.2, notes[1],
            ha="right" if narrow else "center", fontsize=9)
    return fig


@_for_a_phone
def regression_ladder(*, narrow: bool = False):
    """Chapter 8: the write rules as online regression of values on keys, one rung per use of the error
    (``narrow``: each rung's update, reading and attention layers under one another, beside its name)."""
    fig, ax = _canvas(4.8 if narrow else 3.4, narrow)
    rungs = [("Hebbian", r"$S \leftarrow S + k^\top v$", "ignores the prediction",
              "linear attention; decay: RetNet"),
             ("delta (LMS)", r"$S \leftarrow S + \eta\, k^\top (v - k S)$", "a gradient step on the error",
              "DeltaNet, Gated DeltaNet, Longhorn"),
             ("Kalman (RLS)", r"$S \leftarrow S + g\, (v - k S)$, $g = P k^\top / (\sigma^2 + k P k^\top)$",
              "the step scaled by the inverse curvature", "the Mesa layer")]
    # narrow: the name's box at the left, its update, reading and layers stacked to its right, on wrapped lines
    box_x, box_width, text_x, rung, first = (1.3, 2.4, 2.9, 3.0, 1.4) if narrow else (1.4, 2.6, 3.0, 3.0, 1.6)
    for i, (name, update, reading, layers) in enumerate(rungs):
        y = first + rung * i
        _box(ax, box_x, y, name.replace(" (", "\n(") if narrow else name, width=box_width, height=1.8,
             color=(0, 2, 3)[i])
        if narrow:
            _lines(ax, text_x, y + 1.2, [(update.replace(", $g", ",\n$g"), 10, "black"),
                                         (plotting._wrapped(reading, 30), 9, "grey"),
                                         (plotting._wrapped(f"as layers: {layers}", 30), 9, "black")])
        else:
            ax.text(text_x, y + 0.45, update, fontsize=10, va="center")
            ax.text(text_x, y - 0.55, reading, fontsize=9, va="center", color="grey")
            ax.text(9.95, y - 0.55, layers, fontsize=9, va="center", ha="right")
        if i:
            _arrow(ax, (box_x, y - rung + 0.9), (box_x, y - 0.95))
    if not narrow:
        ax.text(9.95, 9.6, "as attention layers", fontsize=9, ha="right", fontweight="bold")
    ax.text(0.1 if narrow else 3.0, 9.8 if narrow else 9.6, r"each write: a step on $\frac{1}{2} \| k S - v \|^2$",
            fontsize=9, va="top" if narrow else "baseline")
    return fig


@_for_a_phone
def noisy_channel(*, narrow: bool = False):
    """Chapter 12: a read as Shannon's channel: the value is the message, the other memories the noise
    (``narrow``: the channel from top to bottom, the noise coming in from the side)."""
    # each part: (x, y, width, height) on the 10 x 10 canvas
    at = ({"message": (3.0, 7.9, 5.2, 1.5), "channel": (3.0, 5.6, 5.2, 1.5), "sum": (3.0, 3.6, 0.9, 0.9),
           "decoder": (3.0, 1.2, 5.2, 1.7), "noise": (7.9, 3.6, 4.0, 2.6), "height": 5.0} if narrow else
          {"message": (1.1, 6.0, 2.0, 2.4), "channel": (3.9, 6.0, 2.2, 2.4), "sum": (6.2, 6.0, 0.8, 1.2),
           "decoder": (8.8, 6.0, 2.2, 2.4), "noise": (6.2, 1.6, 4.6, 1.8), "height": 2.8})
    fig, ax = _canvas(at["height"], narrow)
    (mx, my, mw, mh), (cx, cy, cw, ch), (sx, sy, sw, sh), (dx, dy, dw, dh), (nx, ny, nw, nh) = (
        at[part] for part in ("message", "channel", "sum", "decoder", "noise"))
    _box(ax, mx, my, "message: value $v_j$\n(the food)" if narrow else "message:\nvalue $v_j$\n(the food)",
         width=mw, height=mh, color=1)
    _box(ax, cx, cy, "write, then\nread by $k_j$", width=cw, height=ch, color=2)
    _box(ax, sx, sy, "+", width=sw, height=sh, color=5, filled=False)
    _box(ax, dx, dy, "decoder:\nestimate of $v_j$" if narrow else "decoder:\nestimate\nof $v_j$", width=dw,
         height=dh, color=4)
    _box(ax, nx, ny, ("noise: crosstalk\n$\\sum_{i \\ne j} W_{ji} v_i$\n(the other\npairings)" if narrow else
                      "noise: crosstalk $\\sum_{i \\ne j} W_{ji} v_i$\n(the other pairings)"),
         width=nw, height=nh, color=0, filled=False)
    if narrow:        # down the column, the noise from the right
        _arrow(ax, (mx, my - mh / 2), (cx, cy + ch / 2))
        _arrow(ax, (cx, cy - ch / 2), (sx, sy + sh / 2), text="$W_{jj} v_j$", offset=(0.3, -0.3), ha="left")
        _arrow(ax, (nx - nw / 2, ny), (sx + sw / 2, sy))
        _arrow(ax, (sx, sy - sh / 2), (dx, dy + dh / 2), text="read $r_j$", offset=(0.3, -0.3), ha="left")
    else:
        _arrow(ax, (2.1, 6.0), (2.8, 6.0))
        _arrow(ax, (5.0, 6.0), (5.8, 6.0), text="$W_{jj} v_j$", offset=(0.0, 0.5))
        _arrow(ax, (6.2, 2.5), (6.2, 5.4))
        _arrow(ax, (6.6, 6.0), (7.7, 6.0), text="read $r_j$", offset=(0.0, 0.5))
    ax.text(5.0, 10.0 if narrow else 9.6,
            "SNR $= 1/\\mathrm{ISR}_j$:" + ("\n" if narrow else "  ") + "$\\frac{d_v}{2} \\log_2(1 + \\mathrm{SNR})$ bits a read",
            ha="center", va="top" if narrow else "baseline", fontsize=10)
    return fig


@_for_a_phone
def facts_in_a_matrix(*, narrow: bool = False):
    """Chapter 14: a fact in a linear memory: the key times W, scored against every attribute, the best answers
    (``narrow``: from top to bottom, how W is written coming in from the side)."""
    fig, ax = _canvas(4.4 if narrow else 2.8, narrow)
    # each part: (x, y, width, height) on the 10 x 10 canvas
    key, matrix, scores, written = (((2.4, 8.6, 4.6, 2.4), (2.4, 5.3, 2.8, 1.8), (2.4, 1.5, 4.6, 2.6),
                                     (7.5, 5.3, 4.9, 4.4)) if narrow else
                                    ((1.2, 6.0, 2.2, 2.6), (4.0, 6.0, 1.9, 2.0), (8.4, 6.0, 2.9, 2.6),
                                     (4.0, 1.6, 7.6, 2.2)))
    _box(ax, *key[:2], "key $k$: subject +\nrelation (the bell)" if narrow else
         "key $k$\nsubject +\nrelation\n(the bell)", width=key[2], height=key[3], color=1)
    _box(ax, *matrix[:2], "matrix $W$\n$d \\times d$", width=matrix[2], height=matrix[3], color=2)
    _box(ax, *scores[:2], "scores $u_y \\cdot W k$\nbest = answer\n(the food)", width=scores[2], height=scores[3],
         color=4)
    _box(ax, *written[:2], ("written:\nHebbian $\\sum u_i k_i^\\top$,\nleast squares,\nor trained on the\ncross-entropy;"
                           "\none fact edited\nby a rank-one write" if narrow else
                           "written: Hebbian $\\sum u_i k_i^\\top$, least squares,\nor trained on the cross-entropy; "
                           "one fact\nedited by a rank-one write"), width=written[2], height=written[3], color=0,
         filled=False)
    if narrow:        # down the column, the writing from the right
        _arrow(ax, (key[0], key[1] - key[3] / 2), (matrix[0], matrix[1] + matrix[3] / 2))
        _arrow(ax, (matrix[0], matrix[1] - matrix[3] / 2), (scores[0], scores[1] + scores[3] / 2), text="read $W k$",
               offset=(0.3, -0.3), ha="left")
        _arrow(ax, (written[0] - written[2] / 2, written[1]), (matrix[0] + matrix[2] / 2, matrix[1]))
    else:
        _arrow(ax, (2.3, 6.0), (3.05, 6.0))
        _arrow(ax, (4.95, 6.0), (6.95, 6.0), text="read $W k$", offset=(0.0, 0.5))
        _arrow(ax, (4.0, 2.7), (4.0, 5.0))
    return fig


@_for_a_phone
def induction_circuit(tokens=("a", "q", "o", "b", "c", "q"), *, narrow: bool = False):
    """Chapter 13: the induction circuit. Layer 1's previous-token head pairs each token with the one before it
    (the trigger q with its output o: the bell with the food); at q's next occurrence layer 2's induction head
    finds the position that was paired with q and copies the token there, o (``narrow``: its notes on more
    lines)."""
    fig, ax = _canvas(3.2 if narrow else 3.0, narrow)
    xs = np.linspace(0.9, 9.1, len(tokens))
    for x, token in zip(xs, tokens):
        color = 0 if token == "q" else (1 if token == "o" else 7)
        _box(ax, x, 2.0, token, width=0.9, height=1.4, color=color)
    first, output, last = tokens.index("q"), tokens.index("o"), len(tokens) - 1
    ax.add_patch(FancyArrowPatch((xs[output], 2.8), (xs[first], 2.8), connectionstyle="arc3,rad=0.5",
                                 arrowstyle="-|>", mutation_scale=10, color=plotting.OKABE_ITO[2], linewidth=1.3))
    notes = (("layer 1: previous-token\nhead (o's position now\ncarries q: the pairing)",
              "layer 2: induction head\n(q asks for the position\npaired with q)") if narrow else
             ("layer 1: previous-token head\n(o's position now carries q: the pairing)",
              "layer 2: induction head\n(q asks for the position paired with q)"))
    ax.text(3.3 if narrow else (xs[first] + xs[output]) / 2, 4.3 if narrow else 4.6, notes[0], ha="center",
            fontsize=9)
    ax.add_patch(FancyArrowPatch((xs[last], 2.8), (xs[output], 2.8), connectionstyle="arc3,rad=0.35",
                                 arrowstyle="-|>", mutation_scale=10, color=plotting.OKABE_ITO[5], linewidth=1.3))
    ax.text(9.9 if narrow else (xs[output] + xs[last]) / 2 + 0.6, 6.6 if narrow else 7.4, notes[1],
            ha="right" if narrow else "center", fontsize=9)
    ax.text(xs[last], 0.2, "predicts o", ha="center" if not narrow else "right", fontsize=9,
            color=plotting.OKABE_ITO[1])
    return fig


@_for_a_phone
def token_sequence(tokens, labels, marked, *, narrow: bool = False):
    """One sequence of an in-context task, row by row (16 tokens a row, 8 on a phone): each token in a box, the
    ``marked`` ones (the bells) filled, and under each token its label where ``labels`` has one (``None``: no
    label there)."""
    per_row = 8 if narrow else 16
    rows = -(-len(tokens) // per_row)
    fig, ax = _canvas(0.9 * rows + 0.2, narrow)
    ax.set(ylim=(0, 10 * rows))
    width = 8 / per_row
    xs = np.linspace(width / 2 + 0.05, 9.95 - width / 2, per_row)
    for i, (token, label) in enumerate(zip(tokens, labels)):
        x, y = xs[i % per_row], 10 * (rows - i // per_row) - 3.2
        bell = token in marked
        _box(ax, x, y, str(token), width=width, height=4.0, color=0 if bell else 6, filled=bell)
        ax.text(x, y - 4.4, "·" if label is None else str(label), ha="center", va="center", fontsize=10,
                color=plotting.OKABE_ITO[1] if label is not None else "grey")
    return fig


DIAGRAMS = {"ch1": conditioning_circuit, "ch2": linear_attention_forms, "ch3": signal_and_crosstalk,
            "ch4": store_kernels, "ch5": softmax_crowd, "ch6": chain_task, "ch7": write_rules,
            "ch8": regression_ladder, "ch9": mqar_sequence, "ch12": noisy_channel,
            "ch13": induction_circuit, "ch14": facts_in_a_matrix}
"""Each chapter's concept diagram, by chapter."""
