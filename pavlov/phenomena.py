r"""The classic phenomena of Pavlovian conditioning, run as experiments on any write rule of :mod:`pavlov.rules`.

A design is written as in the conditioning literature: ``"30 A+ | 30 AB+"`` is 30 trials of CS A
reinforced by the US, then 30 trials of the compound AB reinforced; ``"30 (A+, AX-)"`` alternates A
reinforced with AX not reinforced, 30 times each. Each letter is a conditioned stimulus, a vector
:math:`\sqrt{s_X}\, e_X` with orthonormal :math:`e_X` in ``d_key`` dimensions and salience :math:`s_X`
(default 1); a compound is the sum of its letters' vectors; the US is the one-dimensional value
:math:`\lambda` (``+``) or 0 (``-``). A trial is one step of a rule, ``k = v`` of the trial's CS and US;
the response to a test stimulus after each trial is :math:`x S_t`, the rule's output with the test as query.

Each phenomenon (:data:`PHENOMENA`) compares groups of a design and reduces them to one index, and a
rule reproduces the phenomenon when the index passes the phenomenon's threshold:

* acquisition: over ``2n`` A+ trials the response to A settles at the US: both its late growth
  :math:`|r_{2n} - r_n|` and its distance from the US :math:`|r_{2n} - \lambda|` are below 0.1 :math:`\lambda`
  (a negatively accelerated curve whose asymptote is the US, as the response's is in animals);
* extinction: after A+ trials, A- trials leave less than half the response that C- trials leave;
* spontaneous recovery: after extinction and rest (C- trials), A's response regains over 0.1 of its acquired level;
* blocking: B conditioned in compound with a pretrained A gets less than half of what it gets
  after pretraining of an unrelated C (which itself must reach 0.1 λ);
* overshadowing: A trained in compound with B gets less than 0.75 of what A trained alone gets;
* conditioned inhibition: after A+ / AX- training, X's response is below -0.25 of A's (X predicts no US);
* latent inhibition: after A- pre-exposure, a few A+ trials teach A less than 0.75 of what they teach
  after pre-exposure to an unrelated C (Lubow and Moore 1959);
* extinction of an inhibitor kept: after A+ / AX- training, X- trials leave X more than half of its
  inhibition, as animals keep it (Zimmer-Hart and Rescorla 1974; the inhibitor must first reach -0.1);
* backward blocking: after AB+ training, A+ trials leave B less than 0.75 of what C+ trials leave;
* overexpectation: A and B, each trained to predict the US, then reinforced together, leave A less than
  0.9 of what A keeps when an unrelated C is reinforced instead (the control must keep 0.1);
* release from overshadowing: after AB+ training, A- trials raise the absent B by more than 0.1 λ over
  what C- trials leave it (Kaufman and Bolles 1981; Matzel et al. 1985);
* recovery from blocking: after A+ then AB+ training, A- trials raise the blocked B by more than 0.1 λ
  over what C- trials leave it (Blaisdell et al. 1999).

The floors and the revaluation criteria are in units of the US λ (``us``), so every index is the same at
any λ for a rule that scales with the US.

With ``normalise=True`` every compound's vector is scaled to unit length, for writing and for testing,
as a layer that L2-normalises its keys (DeltaNet) sees it: AB is :math:`(e_A + e_B)/\sqrt 2`.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from collections.abc import Callable

import torch

from . import _validate
from .rules import RULES
from .runtime import generator, resolve

_TRIAL = r"[A-Z]+[+-]"
_PHASE = re.compile(rf"\s*(\d+)\s+(?:({_TRIAL})|\(\s*({_TRIAL}(?:\s*,\s*{_TRIAL})*)\s*\))\s*")


def parse_design(design: str) -> list[tuple[int, list[tuple[str, bool]]]]:
    """Phases of a design: ``"30 A+ | 30 (A+, AX-)"`` -> ``[(30, [("A", True)]), (30, [("A", True), ("AX", False)])]``.

    >>> parse_design("2 A+ | 3 (A+, AX-)")
    [(2, [('A', True)]), (3, [('A', True), ('AX', False)])]
    """
    if not isinstance(design, str):
        raise TypeError(f"design must be a string like '30 A+ | 30 AB+', got {type(design).__name__}")
    phases = []
    for text in design.split("|"):
        match = _PHASE.fullmatch(text)
        if match is None or int(match.group(1)) < 1:
            raise ValueError(f"design phase {text.strip()!r} must read '<trials> <CS>+' or '<trials> (<CS>+, <CS>-)', "
                             f"with capital letters for stimuli")
        trials = [(t.strip()[:-1], t.strip()[-1] == "+") for t in (match.group(2) or match.group(3)).split(",")]
        phases.append((int(match.group(1)), trials))
    return phases


def _saliences(salience) -> dict:
    """``salience`` checked: a mapping of stimulus letters to positive saliences (None: every salience 1)."""
    if salience is None:
        return {}
    if not isinstance(salience, Mapping):
        raise TypeError(f"salience must be a mapping of stimuli to saliences such as {{'A': 0.5}}, "
                        f"got {type(salience).__name__}")
    return {x: _validate.finite_float(f"salience[{x!r}]", s, positive=True) for x, s in salience.items()}


def _check_cs(cs) -> None:
    """Check ``cs``: a mapping of letters to vectors ``[d_key]`` of one size, device and dtype (:func:`stimuli`)."""
    if not isinstance(cs, Mapping):
        raise TypeError(f"cs must be a mapping of stimulus letters to vectors (see stimuli), got {type(cs).__name__}")
    named = {f"cs[{x!r}]": vector for x, vector in cs.items()}
    for name, vector in named.items():
        _validate.tensor(name, vector)
        if vector.dim() != 1:
            raise ValueError(f"{name} must be one vector [d_key], got shape {tuple(vector.shape)}")
    if named:
        (first, reference), *_ = named.items()
        _validate.same_device_dtype(**named)
        for name, vector in named.items():
            _validate.shape(name, vector, reference.shape, against=first)


def stimuli(letters: str, d_key: int, *, salience: dict[str, float] | None = None, seed: int = 0,
            elemental: bool = False, device=None, dtype=None) -> dict[str, torch.Tensor]:
    r"""Orthonormal CS vectors for ``letters``, scaled by :math:`\sqrt{s_X}`: ``{letter: [d_key]}``.

    The basis is random (from ``seed``); ``elemental=True`` gives each stimulus its own coordinate, one
    input unit per stimulus, which only a rule that treats coordinates apart (the diagonal Kalman
    filter) distinguishes.

    >>> cs = stimuli("AB", 4, device="cpu", dtype=torch.float64)
    >>> abs(float(cs["A"] @ cs["B"])) < 1e-12, abs(float(cs["A"] @ cs["A"]) - 1) < 1e-12
    (True, True)
    """
    d_key = _validate.positive_int("d_key", d_key)
    if not isinstance(letters, str):
        raise TypeError(f"letters must be a string of stimulus names such as 'ABX', got {type(letters).__name__}")
    letters = "".join(sorted(set(letters)))
    if len(letters) > d_key:
        raise ValueError(f"d_key must be at least the number of stimuli ({len(letters)}), got {d_key}")
    salience = _saliences(salience)
    unknown = set(salience) - set(letters)
    if unknown:
        raise ValueError(f"salience names stimuli that are not in letters {letters!r}: {sorted(map(str, unknown))}")
    if not isinstance(elemental, bool):
        raise TypeError(f"elemental must be True or False, got {elemental!r}")
    device, dtype = resolve(device, dtype)
    if elemental:
        basis = torch.eye(d_key, device=device, dtype=dtype)
    else:
        gaussian = torch.randn(d_key, d_key, generator=generator(seed, device), device=device, dtype=dtype)
        basis = torch.linalg.qr(gaussian).Q.T                  # rows: a random orthonormal basis
    return {x: salience.get(x, 1.0) ** 0.5 * basis[i] for i, x in enumerate(letters)}


def _compound(cs: dict[str, torch.Tensor], letters: str, normalise: bool) -> torch.Tensor:
    vector = sum(cs[x] for x in letters)
    return vector / vector.norm() if normalise else vector


def trials(design: str, cs: dict[str, torch.Tensor], *, us: float = 1.0,
           normalise: bool = False) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
    """The trial sequence of a design: CS ``[T, d_key]``, US ``[T, 1]``, and the trial count at each phase's end.

    ``normalise``: each trial's compound scaled to unit length.

    >>> keys, values, ends = trials("2 A+ | 1 AB-", stimuli("AB", 2, device="cpu"))
    >>> values.squeeze(-1).tolist(), ends
    ([1.0, 1.0, 0.0], [2, 3])
    """
    us = _validate.finite_float("us", us)
    _check_cs(cs)
    if not isinstance(normalise, bool):
        raise TypeError(f"normalise must be True or False, got {normalise!r}")
    rows, values, ends = [], [], []
    for repeats, block in parse_design(design):
        for _ in range(repeats):
            for compound, reinforced in block:
                missing = set(compound) - set(cs)
                if missing:
                    raise ValueError(f"cs has no stimulus for {''.join(sorted(missing))!r} used in design {design!r}")
                rows.append(_compound(cs, compound, normalise))
                values.append(us if reinforced else 0.0)
        ends.append(len(rows))
    keys = torch.stack(rows)
    return keys, keys.new_tensor(values)[:, None], ends


def responses(rule: str, design: str, test: str, cs: dict[str, torch.Tensor], *, us: float = 1.0,
              normalise: bool = False, **params) -> tuple[torch.Tensor, list[int]]:
    """The response to the ``test`` stimulus after every trial of ``design`` under ``rule``: ``([T], phase ends)``.

    ``normalise``: compounds, the test's included, scaled to unit length (:func:`trials`).

    >>> cs = stimuli("A", 2, device="cpu", dtype=torch.float64)
    >>> curve, ends = responses("delta", "3 A+", "A", cs, beta=0.5)
    >>> [round(r, 12) for r in curve.tolist()]
    [0.5, 0.75, 0.875]
    """
    _validate.option("rule", rule, tuple(RULES))
    keys, values, ends = trials(design, cs, us=us, normalise=normalise)
    if not isinstance(test, str) or not test or set(test) - set(cs):
        raise ValueError(f"test must name stimuli of cs ({''.join(sorted(cs))}), got {test!r}")
    probe = _compound(cs, test, normalise).expand_as(keys)
    outputs, _ = RULES[rule](probe, keys, values, **params)
    return outputs.squeeze(-1), ends


def rescorla_wagner(design: str, test: str, *, beta: float, salience: dict[str, float] | None = None,
                    us: float = 1.0) -> list[float]:
    r"""The Rescorla-Wagner model, one scalar strength per stimulus: :math:`\Delta V_X = s_X \beta (\lambda - \sum_{Y} V_Y)`.

    The sum runs over the stimuli present on the trial; returns the test compound's strength
    :math:`\sum_{X \in \mathrm{test}} V_X` after every trial. Plain Python, written from the 1972
    paper's equation, as the reference the delta rule is compared with.

    >>> rescorla_wagner("3 A+", "A", beta=0.5)
    [0.5, 0.75, 0.875]
    """
    beta = _validate.finite_float("beta", beta, nonnegative=True)
    us = _validate.finite_float("us", us)
    if not isinstance(test, str) or not test:
        raise ValueError(f"test must name stimuli (a string such as 'AB'), got {test!r}")
    salience = _saliences(salience)
    strength: dict[str, float] = {}
    curve = []
    for repeats, block in parse_design(design):
        for _ in range(repeats):
            for compound, reinforced in block:
                error = (us if reinforced else 0.0) - sum(strength.get(x, 0.0) for x in compound)
                for x in compound:
                    strength[x] = strength.get(x, 0.0) + salience.get(x, 1.0) * beta * error
                curve.append(sum(strength.get(x, 0.0) for x in test))
    return curve


@dataclass(frozen=True)
class Phenomenon:
    """A conditioning phenomenon: groups (a design and a test stimulus each) and how their responses reduce to an index."""

    name: str
    groups: dict[str, tuple[str, str]]      # group -> (design, test stimulus)
    index: Callable[[dict[str, tuple[torch.Tensor, list[int]]]], float]
    threshold: float
    below: bool = True           # reproduced when index < threshold (else when index > threshold)
    description: str = ""

    def reproduced(self, index: float) -> bool:
        return index < self.threshold if self.below else index > self.threshold


def _at(group: tuple[torch.Tensor, list[int]], phase: int) -> float:
    curve, ends = group
    return float(curve[ends[phase] - 1])


def _acquisition(us: float):
    """Late growth or distance from the US, whichever is larger, in units of the US."""
    def index(g) -> float:
        final = _at(g["A+"], 1)
        return max(abs(final - _at(g["A+"], 0)), abs(final - us)) / abs(us)
    return index


def _revaluation(g, us: float) -> float:
    """What the revaluation trials add to the test stimulus over the control's trials, in units of the US."""
    return (_at(g["revalued"], -1) - _at(g["control"], -1)) / us


def _against_control(group: str, floor: float = 0.1):
    """The group's final response over the control's, ``inf`` when the control's is below ``floor``."""
    def index(g) -> float:
        control = _at(g["control"], -1)
        return _at(g[group], -1) / control if control > floor else float("inf")   # nothing to compare with
    return index


def _inhibitor_kept(floor: float):
    def index(g) -> float:
        before = _at(g["X"], 0)
        return _at(g["X"], 1) / before if before < -floor else float("-inf")   # no inhibitor formed: none to keep
    return index


def _define(n: int, us: float = 1.0) -> dict[str, Phenomenon]:
    acquired = max(1, n // 10)        # latent inhibition slows the first few reinforced trials
    floor = 0.1 * abs(us)

    def ratio(a, b, phase=-1):
        return lambda g: _at(g[a], phase) / _at(g[b], phase)

    return {p.name: p for p in (
        Phenomenon("acquisition", {"A+": (f"{n} A+ | {n} A+", "A")}, _acquisition(us), 0.1,
                   description="late growth of the response to A, or its distance from the US if larger"),
        Phenomenon("extinction", {"extinction": (f"{n} A+ | {n} A-", "A"), "control": (f"{n} A+ | {n} C-", "A")},
                   ratio("extinction", "control"), 0.5,
                   description="response to A after A- trials over that after C- trials"),
        Phenomenon("spontaneous_recovery", {"recovery": (f"{n} A+ | {n} A- | {n} C-", "A")},
                   lambda g: (_at(g["recovery"], 2) - _at(g["recovery"], 1)) / _at(g["recovery"], 0), 0.1, below=False,
                   description="response regained by A during rest, over its acquired level"),
        Phenomenon("blocking", {"blocking": (f"{n} A+ | {n} AB+", "B"), "control": (f"{n} C+ | {n} AB+", "B")},
                   _against_control("blocking", floor), 0.5,
                   description="response to B after A pretraining over that after C pretraining"),
        Phenomenon("overshadowing", {"compound": (f"{n} AB+", "A"), "control": (f"{n} A+", "A")},
                   ratio("compound", "control"), 0.75, description="response to A trained with B over A trained alone"),
        Phenomenon("conditioned_inhibition", {"X": (f"{n} (A+, AX-)", "X"), "A": (f"{n} (A+, AX-)", "A")},
                   ratio("X", "A"), -0.25, description="response to X over response to A after A+ / AX- training"),
        Phenomenon("latent_inhibition", {"pre-exposed": (f"{n} A- | {acquired} A+", "A"),
                                         "control": (f"{n} C- | {acquired} A+", "A")},
                   _against_control("pre-exposed", 0.0), 0.75,
                   description="response to A after A- pre-exposure and a few A+ trials, over that after C-"),
        Phenomenon("inhibitor_kept", {"X": (f"{n} (A+, AX-) | {n} X-", "X")}, _inhibitor_kept(floor), 0.5, below=False,
                   description="inhibition X keeps through X- trials, over its inhibition before them"),
        Phenomenon("backward_blocking", {"blocking": (f"{n} AB+ | {n} A+", "B"), "control": (f"{n} AB+ | {n} C+", "B")},
                   _against_control("blocking", floor), 0.75,
                   description="response to B after A+ trials over that after C+"),
        Phenomenon("overexpectation", {"compound": (f"{n} (A+, B+) | {n} AB+", "A"),
                                       "control": (f"{n} (A+, B+) | {n} C+", "A")},
                   _against_control("compound", floor), 0.9,
                   description="response to A after AB+ trials over that after C+ trials"),
        Phenomenon("release_from_overshadowing", {"revalued": (f"{n} AB+ | {n} A-", "B"),
                                                  "control": (f"{n} AB+ | {n} C-", "B")},
                   lambda g: _revaluation(g, us), 0.1, below=False,
                   description="response B gains from A- trials over C- trials, in units of the US"),
        Phenomenon("recovery_from_blocking", {"revalued": (f"{n} A+ | {n} AB+ | {n} A-", "B"),
                                              "control": (f"{n} A+ | {n} AB+ | {n} C-", "B")},
                   lambda g: _revaluation(g, us), 0.1, below=False,
                   description="response the blocked B gains from A- trials over C- trials, in units of the US"),
    )}


PHENOMENA = tuple(_define(1))


def phenomenon(name: str, n: int = 30, us: float = 1.0) -> Phenomenon:
    """The phenomenon ``name`` with ``n`` trials per phase and US ``us`` (λ, non-zero).

    >>> phenomenon("blocking", n=10).groups["blocking"]
    ('10 A+ | 10 AB+', 'B')
    """
    _validate.option("name", name, PHENOMENA)
    us = _validate.finite_float("us", us)
    if us == 0:
        raise ValueError("us must be non-zero: the indices are in units of the US")
    return _define(_validate.positive_int("n", n), us)[name]


def phenomenon_index(name: str, rule: str, *, n: int = 30, us: float = 1.0, d_key: int = 8, seed: int = 0,
                     elemental: bool = False, device=None, dtype=torch.float64, normalise: bool = False,
                     **params) -> tuple[float, bool]:
    """Run phenomenon ``name`` under ``rule`` with US ``us``: its index and whether the rule reproduces it.

    ``elemental``: one coordinate per stimulus (:func:`stimuli`); ``normalise``: unit compounds (:func:`trials`).

    >>> phenomenon_index("blocking", "delta", beta=0.2, device="cpu")[1]
    True
    """
    spec = phenomenon(name, n, us)
    cs = stimuli("ABCX", d_key, seed=seed, elemental=elemental, device=device, dtype=dtype)
    groups = {group: responses(rule, design, test, cs, us=us, normalise=normalise, **params)
              for group, (design, test) in spec.groups.items()}
    index = spec.index(groups)
    return index, spec.reproduced(index)


class PhenomenaTable:
    """Which rule reproduces which phenomenon, with the index behind each verdict; HTML in notebooks."""

    def __init__(self, results: dict[str, dict[str, tuple[float, bool]]]):
        self.results = results

    def reproduced(self) -> dict[str, dict[str, bool]]:
        return {rule: {name: ok for name, (_, ok) in row.items()} for rule, row in self.results.items()}

    def _cell(self, index: float, ok: bool, cross: str = "✗") -> str:
        # no index where the ratio has nothing to compare (a control below the floor, no inhibitor formed)
        shown = f"{index:.2f}".replace("-0.00", "0.00") if math.isfinite(index) else "n/a"
        return f"{'✓' if ok else cross} ({shown})"

    def _repr_html_(self) -> str:
        """One row per phenomenon, one column per rule; each cell names its rule (``data-label``), so that
        on a phone, where the book stacks a table's cells, a row reads as a card of rule: verdict."""
        rules = [html.escape(rule) for rule in self.results]
        head = "<th>phenomenon</th>" + "".join(f"<th>{rule}</th>" for rule in rules)
        body = "".join(
            f'<tr><td data-label="phenomenon">{html.escape(p.replace("_", " "))}</td>' + "".join(
                f'<td data-label="{label}">{self._cell(*row[p])}</td>'
                for label, row in zip(rules, self.results.values())) + "</tr>"
            for p in PHENOMENA)
        return f'<table class="verdicts-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'

    def __repr__(self) -> str:
        # plain text (the PDF's): × where the HTML has ✗, which the PDF's monospaced font lacks
        return "\n".join(f"{rule}: " + ", ".join(f"{p} {self._cell(*row[p], cross='×')}" for p in PHENOMENA)
                         for rule, row in self.results.items())


def phenomena_table(settings: dict[str, dict], **kwargs) -> PhenomenaTable:
    """Run every phenomenon for every rule in ``settings`` (``{label: {"rule": name, **params}}``).

    A setting may hold :func:`phenomenon_index`'s own options (``normalise``, ``elemental``); ``kwargs``
    go to every run (``n``, ``us``, ``device``, ...).

    >>> table = phenomena_table({"delta": {"rule": "delta", "beta": 0.2}}, device="cpu")
    >>> table.reproduced()["delta"]["spontaneous_recovery"]
    False
    """
    if not isinstance(settings, Mapping):
        raise TypeError(f"settings must map labels to {{'rule': name, **params}}, got {type(settings).__name__}")
    results = {}
    for label, setting in settings.items():
        if not isinstance(setting, Mapping) or "rule" not in setting:
            raise ValueError(f"settings[{label!r}] must be a mapping {{'rule': name, **params}}, got {setting!r}")
        setting = dict(setting)
        rule = _validate.option(f"settings[{label!r}]['rule']", setting.pop("rule"), tuple(RULES))
        results[label] = {name: phenomenon_index(name, rule, **kwargs, **setting) for name in PHENOMENA}
    return PhenomenaTable(results)
