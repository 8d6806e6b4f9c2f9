r"""Memories that must change: concept drift, and how long a forgetting memory remembers.

* :func:`concept_drift`: ``n_pairs`` CS-US pairings presented once per epoch in a fresh random order;
  after ``epochs_before`` epochs every US is replaced by a new one. After every epoch the memory is
  probed with each CS, and two things are recorded: the retrieval quality of the *current*
  associations, :math:`\bar{(k_i S) \cdot v_i} / \sqrt{\bar{\lVert k_i S \rVert^2}}` (means over the pairs; 1 for
  perfect recall, 0 for none; the cosine when all readouts have one norm), and the norm :math:`\lVert S \rVert_F`.
* :func:`isr_by_age`: a stream of ``length`` distinct random pairs written by the decay rule or the (gated)
  delta rule; the ISR of each pair by its age, :math:`\lVert k_s S_T - w_a v_s \rVert^2 / w_a^2` for the pair
  written :math:`a` steps before the end, :math:`w_a` its mean signal (:func:`pavlov.theory.stream_signal`:
  :math:`\gamma^a` for decay).

Keys are uniform on the unit sphere in ``d`` dimensions and values on the unit sphere in ``d`` dimensions.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from . import _validate, theory
from .rules import CHUNKWISE, RULES
from .runtime import generator, resolve, seed_or_fresh
from .stats import mean_and_se
from .stimuli import random_stimuli
from .stores import trial_blocks


class Drift(NamedTuple):
    """Per-epoch measurements of a concept-drift run, ``[trials, epochs]`` each."""

    quality: torch.Tensor
    norm: torch.Tensor
    epochs_before: int
    seed: int

    def recovery(self, fraction: float = 0.9) -> int | None:
        """Epochs after the switch until the mean quality regains ``fraction`` of its value just before it."""
        fraction = _validate.finite_float("fraction", fraction, positive=True)
        if fraction > 1:
            raise ValueError(f"fraction must lie in (0, 1], got {fraction}")
        quality = self.quality.mean(0)
        before = quality[self.epochs_before - 1]
        regained = (quality[self.epochs_before:] >= fraction * before).nonzero()
        return int(regained[0]) + 1 if len(regained) else None

    def recovery_se(self, fraction: float = 0.9) -> float:
        r"""The standard error of :meth:`recovery`, in epochs (delta method).

        The crossing is where the mean over trials of :math:`x = q_e - f\, q_\text{before}` turns positive;
        its standard error in epochs is that of :math:`\bar x` at the crossing over the slope of
        :math:`\bar x` per epoch there (``inf`` if it never crosses or does not rise).
        """
        epoch = self.recovery(fraction)
        if epoch is None or self.quality.shape[0] < 2:
            return math.inf
        at = self.epochs_before - 1 + epoch
        x = self.quality[:, at - 1:at + 1] - fraction * self.quality[:, self.epochs_before - 1, None]
        mean, se = mean_and_se(x)
        slope = float(mean[1] - mean[0])
        return float(se[1]) / slope if slope > 0 else math.inf


def concept_drift(rule: str, *, n_pairs: int, d: int, epochs_before: int, epochs_after: int, trials: int,
                  seed: int | None = None, device=None, dtype=None, **params) -> Drift:
    """Run ``rule`` on a stream whose associations all change after ``epochs_before`` epochs.

    >>> run = concept_drift("delta", n_pairs=4, d=16, epochs_before=2, epochs_after=3, trials=2, beta=1.0, seed=0, device="cpu")
    >>> run.quality.shape, run.recovery() is not None
    (torch.Size([2, 5]), True)
    """
    _validate.option("rule", rule, tuple(RULES))
    n_pairs, d, trials = (_validate.positive_int(name, x) for name, x in
                          (("n_pairs", n_pairs), ("d", d), ("trials", trials)))
    epochs_before, epochs_after = (_validate.positive_int(name, x) for name, x in
                                   (("epochs_before", epochs_before), ("epochs_after", epochs_after)))
    seed = seed_or_fresh(seed)
    device, dtype = resolve(device, dtype)
    gen = generator(seed, device)
    keys = random_stimuli(trials, n_pairs, d, generator=gen, device=device, dtype=dtype)
    old, new = (random_stimuli(trials, n_pairs, d, generator=gen, device=device, dtype=dtype) for _ in range(2))
    chunk = {"chunk_size": n_pairs} if rule in CHUNKWISE else {}
    state, quality, norm = None, [], []
    for epoch in range(epochs_before + epochs_after):
        values = old if epoch < epochs_before else new
        order = torch.rand(trials, n_pairs, generator=gen, device=device).argsort(-1)[..., None]
        k, v = keys.gather(-2, order.expand_as(keys)), values.gather(-2, order.expand_as(values))
        _, state = RULES[rule](k, k, v, initial_state=state, **chunk, **params)
        memory = state[0] if isinstance(state, tuple) else state         # BCM carries its threshold too
        readout = keys @ memory                                          # (trials, n, d)
        quality.append((readout * values).sum(-1).mean(-1) / readout.pow(2).sum(-1).mean(-1).sqrt())
        norm.append(torch.linalg.matrix_norm(memory))
    return Drift(torch.stack(quality, -1), torch.stack(norm, -1), epochs_before, seed)


def isr_by_age(*, gamma: float, d: int, length: int, trials: int, ages: int | None = None, rule: str = "decay",
               beta: float | None = None, seed: int | None = None, device=None, dtype=None) -> tuple[torch.Tensor, int]:
    r"""The ISR of the youngest ``ages`` pairs (default: all) of a ``length``-step stream: ``([trials, ages], seed)``.

    ``rule`` writes the stream: ``"decay"`` (:math:`S \leftarrow \gamma S + k^\top v`) or ``"gated_delta"``
    (:math:`S \leftarrow \gamma (I - \beta k^\top k) S + \beta k^\top v`, the delta rule at ``gamma = 1``; ``beta``
    required). Column ``a`` is the pair written ``a`` steps before the end (age 0: the last pair), read as
    :math:`\lVert k_s S_T - w_a v_s \rVert^2 / w_a^2` with :math:`w_a` = :func:`~pavlov.theory.stream_signal`, the
    mean of :math:`(k_s S_T) \cdot v_s`. The signal's weight must stay above the dtype's smallest number: use
    float64 for old pairs.

    >>> isr, seed = isr_by_age(gamma=0.9, d=32, length=50, trials=4, ages=20, seed=0, device="cpu")
    >>> isr.shape
    torch.Size([4, 20])
    >>> isr, _ = isr_by_age(gamma=1.0, beta=1.0, rule="gated_delta", d=32, length=50, trials=4, seed=0, device="cpu")
    >>> isr.shape
    torch.Size([4, 50])
    """
    _validate.option("rule", rule, ("decay", "gated_delta"))
    gamma = _validate.finite_float("gamma", gamma, positive=True)
    if gamma > 1:
        raise ValueError(f"gamma must lie in (0, 1], got {gamma}")
    if rule == "decay" and beta is not None:
        raise TypeError("beta is not a parameter of the decay rule (it writes k^T v at weight 1)")
    if rule == "gated_delta":
        if beta is None:
            raise TypeError("beta must be given for the gated delta rule")
        beta = _validate.finite_float("beta", beta, positive=True)
    d, length, trials = (_validate.positive_int(name, x) for name, x in (("d", d), ("length", length), ("trials", trials)))
    ages = length if ages is None else _validate.positive_int("ages", ages)
    if ages > length:
        raise ValueError(f"ages must be at most length = {length}, got {ages}")
    seed = seed_or_fresh(seed)
    device, dtype = resolve(device, dtype)
    gen = generator(seed, device)
    keys, values = (random_stimuli(trials, length, d, generator=gen, device=device, dtype=dtype) for _ in range(2))
    params = {"gamma": gamma} if rule == "decay" else {"gamma": gamma, "beta": beta}
    # the rule's work buffers are several times its inputs: run it on blocks of trials
    blocks = trial_blocks(trials, length * d)
    state = torch.cat([RULES[rule](k, k, v, chunk_size=min(length, 64), **params)[1]
                       for k, v in zip(keys.split(blocks), values.split(blocks))])
    keys, values = keys[..., -ages:, :].flip(-2), values[..., -ages:, :].flip(-2)   # youngest first
    weight = torch.tensor([theory.stream_signal(a, d=d, **params) for a in range(ages)], device=device, dtype=dtype)
    isr = (keys @ state - weight[:, None] * values).pow(2).sum(-1) / weight ** 2
    return isr, seed
