r"""The book's concept diagrams, one per chapter, drawn by the build from this code.

Each function returns a matplotlib figure in the book's style (:mod:`pavlov.plotting`): boxes and
arrows for a circuit or a task, and, where the idea is a function, the function itself.
"""

from __future__ import annotations

import numpy as np
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from . import plotting

_BOX = {"boxstyle": "round,pad=0.02,rounding_size=0.03", "linewidth": 1.2}


def _canvas(height: float = 2.8, width: float = plotting.COLUMN_INCHES):
    fig, ax = plotting.subplots(figsize=(width, height))
    ax.set(xlim=(0, 10), ylim=(0, 10))
    ax.axis("off")
    return fig, ax


def _box(ax, x: float, y: float, text: str, *, width: float = 2.0, height: float = 1.6, color: int = 0,
         filled: bool = True):
    """A labelled box centred at ``(x, y)`` in the 10 x 10 canvas, in the palette's ``color``."""
    edge = plotting.OKABE_ITO[color]
    ax.add_patch(FancyBboxPatch((x - width / 2, y - height / 2), width, height, **_BOX, edgecolor=edge,
                                facecolor=edge + "22" if filled else "white"))
    ax.text(x, y, text, ha="center", va="center", fontsize=10)


def _arrow(ax, start, end, *, text: str | None = None, style: str = "-|>", offset=(0.0, 0.3)):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=12, linewidth=1.2, color="black",
                                 shrinkA=2, shrinkB=2))
    if text:
        ax.text((start[0] + end[0]) / 2 + offset[0], (start[1] + end[1]) / 2 + offset[1], text, ha="center",
                va="bottom", fontsize=9)


def conditioning_circuit():
    """Chapter 1: the key, value and query of attention as the bell, the food and the test."""
    fig, ax = _canvas(2.8)
    _box(ax, 1.3, 7.6, "bell: CS\nkey $k$", color=0)
    _box(ax, 1.3, 2.4, "food: US\nvalue $v$", color=1)
    _box(ax, 5.0, 5.0, "store\n$S \\leftarrow S + \\alpha\\, k^\\top v$", width=2.6, height=2.0, color=2)
    _box(ax, 5.0, 9.0, "test: query $q$", width=2.6, height=1.2, color=3)
    _box(ax, 8.6, 5.0, "response\n$r = q S$", color=4)
    _arrow(ax, (2.3, 7.0), (3.7, 5.8), text="pairing", offset=(-0.2, 0.2))
    _arrow(ax, (2.3, 3.0), (3.7, 4.2))
    _arrow(ax, (5.0, 8.4), (5.0, 6.0))
    _arrow(ax, (6.3, 5.0), (7.6, 5.0), text="read")
    ax.text(8.6, 3.0, "salivation: $r \\cdot v / \\|v\\|^2$", ha="center", va="top", fontsize=9)
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


def signal_and_crosstalk(n: int = 6, d: int = 16, seed: int = 3):
    """Chapter 3: a read-out is its own value plus the crosstalk of every other memory, in two dimensions."""
    rng = np.random.default_rng(seed)
    keys = rng.standard_normal((n, d))
    keys /= np.linalg.norm(keys, axis=1, keepdims=True)
    overlaps = keys[1:] @ keys[0]                      # c_i = k_i . k_j for the other memories
    angles = rng.uniform(0, 2 * np.pi, n - 1)
    values = np.stack([np.cos(angles), np.sin(angles)], 1)   # the other values, seen in a plane
    fig, ax = plotting.subplots(figsize=(plotting.COLUMN_INCHES, 2.9))
    ax.set_aspect("equal")
    ax.axis("off")
    end = np.array([1.0, 0.0])
    _arrow(ax, (0, 0), tuple(end))
    ax.text(0.5, -0.12, "signal $(k_j \\cdot k_j)\\, v_j$", ha="center", va="top", fontsize=10)
    for c, v in zip(overlaps, values):
        step = end + c * v
        ax.add_patch(FancyArrowPatch(tuple(end), tuple(step), arrowstyle="-|>", mutation_scale=9,
                                     color=plotting.OKABE_ITO[1], linewidth=1))
        end = step
    ax.add_patch(FancyArrowPatch((0, 0), tuple(end), arrowstyle="-|>", mutation_scale=12,
                                 color=plotting.OKABE_ITO[0], linewidth=1.6, linestyle="--"))
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


def chain_task(items: int = 4, layers: int = 3, start: int = 1, failed_at: int = 2):
    """Chapter 6: the chain task, items at levels, one hop per layer, a clean-up between layers."""
    fig, ax = _canvas(2.8)
    xs = np.linspace(1.2, 8.8, layers + 1)
    ys = np.linspace(8.2, 2.4, items)
    # the items the chain passes on: hop l maps item i to item i, except the failed hop
    taken = [start if level < failed_at else (start + 1) % items for level in range(layers + 1)]
    for level, x in enumerate(xs):
        for i, y in enumerate(ys):
            ax.plot(x, y, "o", markersize=11, markeredgecolor=plotting.OKABE_ITO[0],
                    color=plotting.OKABE_ITO[0] if taken[level] == i else "white")
        ax.text(x, 9.4, "start" if level == 0 else f"after layer {level}", ha="center", fontsize=9)
    for level in range(layers):
        for y in ys:
            ax.add_patch(FancyArrowPatch((xs[level] + 0.25, y), (xs[level + 1] - 0.25, y), arrowstyle="-|>",
                                         mutation_scale=8, color="grey", linewidth=0.8))
        ax.text((xs[level] + xs[level + 1]) / 2, 0.3, f"hop {level + 1}: $n$ pairs\nin $H$ heads", ha="center",
                fontsize=9)
    ax.add_patch(FancyArrowPatch((xs[failed_at - 1] + 0.25, ys[taken[failed_at - 1]]),
                                 (xs[failed_at] - 0.25, ys[taken[failed_at]]), arrowstyle="-|>",
                                 mutation_scale=10, color=plotting.OKABE_ITO[1], linewidth=1.4, linestyle="--"))
    gap = ys[taken[failed_at]] - (ys[0] - ys[1]) / 2                 # between the wrong item's row and the next
    ax.text((xs[failed_at - 1] + xs[failed_at]) / 2, gap, "a failed hop: the chain fails", ha="center",
            va="center", fontsize=9, color=plotting.OKABE_ITO[1], backgroundcolor="white")
    return fig


def write_rules():
    """Chapter 7: every write rule is a conditioning trial: a CS and a US in, a change of the store out."""
    fig, ax = _canvas(2.9)
    _box(ax, 1.3, 5.0, "trial $t$:\nCS $k_t$, US $v_t$", width=2.2, height=2.0, color=0)
    _box(ax, 4.1, 5.0, "prediction\n$k_t S_{t-1}$", width=2.0, height=2.0, color=3)
    _arrow(ax, (2.4, 5.0), (3.1, 5.0))
    rules = [("Hebbian", "$S_t = S_{t-1} + \\alpha\\, k_t^\\top v_t$"),
             ("decay", "$S_t = \\gamma S_{t-1} + k_t^\\top v_t$"),
             ("delta (Rescorla-Wagner)", "$S_t = S_{t-1} + \\beta\\, k_t^\\top (v_t - k_t S_{t-1})$"),
             ("gated delta", "$S_t = \\gamma S_{t-1} + \\beta\\, k_t^\\top (v_t - \\gamma k_t S_{t-1})$")]
    for i, (name, update) in enumerate(rules):
        y = 8.6 - 2.4 * i
        ax.text(5.6, y, f"{name}:", fontsize=9, va="center", fontweight="bold")
        ax.text(5.6, y - 0.8, update, fontsize=10, va="center")
        _arrow(ax, (5.1, 5.0), (5.5, y - 0.4), style="-")
    ax.text(4.1, 2.5, "error-driven rules\nwrite the surprise", ha="center", fontsize=9)
    return fig


def mqar_sequence(tokens=("k3", "v1", "k7", "v4", "k2", "v9", "k7", "k2", "k3"), pairs: int = 3):
    """Chapter 9: an MQAR sequence: key-value pairs, then the keys again as questions, each labelled."""
    fig, ax = _canvas(2.4)
    xs = np.linspace(0.7, 9.3, len(tokens))
    answers = {tokens[2 * i]: tokens[2 * i + 1] for i in range(pairs)}
    for i, (x, token) in enumerate(zip(xs, tokens)):
        question = i >= 2 * pairs
        color = 3 if question else (0 if token.startswith("k") else 1)
        _box(ax, x, 6.0, token, width=0.8, height=1.5, color=color, filled=not question)
        if question:
            ax.text(x, 3.2, answers[token], ha="center", fontsize=10, color=plotting.OKABE_ITO[1])
            source = xs[tokens.index(token) + 1]
            ax.add_patch(FancyArrowPatch((source, 6.9), (x, 6.9), connectionstyle="arc3,rad=-0.35",
                                         arrowstyle="-|>", mutation_scale=8, color="grey", linewidth=0.8))
        else:
            ax.text(x, 3.2, "-", ha="center", fontsize=10, color="grey")
    ax.text(0.1, 3.2, "label", ha="right", fontsize=9)
    ax.text((xs[0] + xs[2 * pairs - 1]) / 2, 1.2, "the pairs: a session of pairings", ha="center", fontsize=9)
    ax.text((xs[2 * pairs] + xs[-1]) / 2, 1.2, "the questions: the tests", ha="center", fontsize=9)
    return fig


def regression_ladder():
    """Chapter 8: the write rules as online regression of values on keys, one rung per use of the error."""
    fig, ax = _canvas(3.4)
    rungs = [("Hebbian", r"$S \leftarrow S + k^\top v$", "ignores the prediction",
              "linear attention; decay: RetNet"),
             ("delta (LMS)", r"$S \leftarrow S + \beta\, k^\top (v - k S)$", "a gradient step on the error",
              "DeltaNet, Gated DeltaNet, Longhorn"),
             ("Kalman (RLS)", r"$S \leftarrow S + g\, (v - k S)$, $g = P k^\top / (\sigma^2 + k P k^\top)$",
              "the step scaled by the inverse curvature", "the Mesa layer")]
    for i, (name, update, reading, layers) in enumerate(rungs):
        y = 1.6 + 3.0 * i
        _box(ax, 1.4, y, name, width=2.6, height=1.8, color=(0, 2, 3)[i])
        ax.text(3.0, y + 0.45, update, fontsize=10, va="center")
        ax.text(3.0, y - 0.55, reading, fontsize=9, va="center", color="grey")
        ax.text(9.95, y - 0.55, layers, fontsize=9, va="center", ha="right")
        if i:
            _arrow(ax, (1.4, y - 2.1), (1.4, y - 0.95))
    ax.text(9.95, 9.6, "as attention layers", fontsize=9, ha="right", fontweight="bold")
    ax.text(3.0, 9.6, r"each write: a step on $\frac{1}{2} \| k S - v \|^2$", fontsize=9)
    return fig


def noisy_channel():
    """Chapter 12: a read as Shannon's channel: the value is the message, the other memories the noise."""
    fig, ax = _canvas(2.8)
    _box(ax, 1.1, 6.0, "message:\nvalue $v_j$\n(the food)", width=2.0, height=2.4, color=1)
    _box(ax, 3.9, 6.0, "write, then\nread by $k_j$", width=2.2, height=2.4, color=2)
    _box(ax, 6.2, 6.0, "+", width=0.8, height=1.2, color=5, filled=False)
    _box(ax, 8.8, 6.0, "decoder:\nestimate\nof $v_j$", width=2.2, height=2.4, color=4)
    _box(ax, 6.2, 1.6, "noise: crosstalk $\\sum_{i \\ne j} W_{ji} v_i$\n(the other pairings)", width=4.6,
         height=1.8, color=0, filled=False)
    _arrow(ax, (2.1, 6.0), (2.8, 6.0))
    _arrow(ax, (5.0, 6.0), (5.8, 6.0), text="$W_{jj} v_j$", offset=(0.0, 0.5))
    _arrow(ax, (6.2, 2.5), (6.2, 5.4))
    _arrow(ax, (6.6, 6.0), (7.7, 6.0), text="read $r_j$", offset=(0.0, 0.5))
    ax.text(5.0, 9.6, "SNR $= 1/\\mathrm{ISR}_j$:  $\\frac{d_v}{2} \\log_2(1 + \\mathrm{SNR})$ bits a read",
            ha="center", fontsize=10)
    return fig


def facts_in_a_matrix():
    """Chapter 14: a fact in a linear memory: the key times W, scored against every attribute, the best answers."""
    fig, ax = _canvas(2.8)
    _box(ax, 1.2, 6.0, "key $k$\nsubject +\nrelation\n(the bell)", width=2.2, height=2.6, color=1)
    _box(ax, 4.0, 6.0, "matrix $W$\n$d \\times d$", width=1.9, height=2.0, color=2)
    _box(ax, 8.4, 6.0, "scores $u_y \\cdot W k$\nbest = answer\n(the food)", width=2.9, height=2.6, color=4)
    _arrow(ax, (2.3, 6.0), (3.05, 6.0))
    _arrow(ax, (4.95, 6.0), (6.95, 6.0), text="read $W k$", offset=(0.0, 0.5))
    _box(ax, 4.0, 1.6, "written: Hebbian $\\sum u_i k_i^\\top$, least squares,\nor trained on the cross-entropy; "
         "one fact\nedited by a rank-one write", width=7.6, height=2.2, color=0, filled=False)
    _arrow(ax, (4.0, 2.7), (4.0, 5.0))
    return fig


def induction_circuit(tokens=("a", "q", "o", "b", "c", "q")):
    """Chapter 13: the induction circuit. Layer 1's previous-token head pairs each token with the one before it
    (the trigger q with its output o: the bell with the food); at q's next occurrence layer 2's induction head
    finds the position that was paired with q and copies the token there, o."""
    fig, ax = _canvas(3.0)
    xs = np.linspace(0.9, 9.1, len(tokens))
    for x, token in zip(xs, tokens):
        color = 0 if token == "q" else (1 if token == "o" else 7)
        _box(ax, x, 2.0, token, width=0.9, height=1.4, color=color)
    first, output, last = tokens.index("q"), tokens.index("o"), len(tokens) - 1
    ax.add_patch(FancyArrowPatch((xs[output], 2.8), (xs[first], 2.8), connectionstyle="arc3,rad=0.5",
                                 arrowstyle="-|>", mutation_scale=10, color=plotting.OKABE_ITO[2], linewidth=1.3))
    ax.text((xs[first] + xs[output]) / 2, 4.6, "layer 1: previous-token head\n(o's position now carries q: the pairing)",
            ha="center", fontsize=9)
    ax.add_patch(FancyArrowPatch((xs[last], 2.8), (xs[output], 2.8), connectionstyle="arc3,rad=0.35",
                                 arrowstyle="-|>", mutation_scale=10, color=plotting.OKABE_ITO[5], linewidth=1.3))
    ax.text((xs[output] + xs[last]) / 2 + 0.6, 7.4, "layer 2: induction head\n(q asks for the position paired with q)",
            ha="center", fontsize=9)
    ax.text(xs[last], 0.2, "predicts o", ha="center", fontsize=9, color=plotting.OKABE_ITO[1])
    return fig


DIAGRAMS = {"ch1": conditioning_circuit, "ch2": linear_attention_forms, "ch3": signal_and_crosstalk,
            "ch4": store_kernels, "ch5": softmax_crowd, "ch6": chain_task, "ch7": write_rules,
            "ch8": regression_ladder, "ch9": mqar_sequence, "ch12": noisy_channel,
            "ch13": induction_circuit, "ch14": facts_in_a_matrix}
"""Each chapter's concept diagram, by chapter."""
