"""Erasing one association from a least-squares or a Hebbian store: the residual, the damage to the others, the change.

Chapter 8, for the erasing rules of :data:`ERASURE_RULES` (least-squares store) and :func:`hebbian_erasure`.
"""

from __future__ import annotations


from .. import _validate
from .overlaps import key_overlap_moments


ERASURE_RULES = {"delta_zero": ("beta", "steps"), "delta_neutral": ("beta", "steps"), "anti_hebbian": ("alpha",),
                 "kalman": ("noise", "steps"), "downdate": (), "retrain": ()}
"""The erasing rules of the closed forms below and the parameters each takes (the Kalman forms: ``ridge = 0``)."""


def _erasure(rule: str, d_key: int, n_memories: int, overlap: float | None, params: dict, exact_beyond: tuple):
    r"""Checked arguments of the erasure forms: ``(c, h, n, mean, mean_square)``.

    :math:`c` is the part of the target's read-out a rule removes (below capacity): :math:`1 - (1-\beta)^s` for
    :math:`s` = ``steps`` delta writes at rate :math:`\beta` on a unit key, :math:`\alpha` for the anti-Hebbian write,
    :math:`s / (\sigma^2 + s)` for :math:`s` Kalman writes at noise :math:`\sigma^2`. :math:`h = \min(n, d)/n` is the mean
    leverage :math:`\mathbb E P_{tt}` of a key, the hat matrix :math:`P = K K^+` having trace
    :math:`\mathrm{rank}\, K = \min(n, d)` and an exchangeable diagonal. Beyond capacity a form holds for the rules
    in ``exact_beyond``, and for the Kalman rule at ``noise = 0``; other ``n_memories > d_key`` are refused.
    """
    _validate.option("rule", rule, tuple(ERASURE_RULES))
    d_key = _validate.positive_int("d_key", d_key)
    n = _validate.positive_int("n_memories", n_memories)
    if n < 2:
        raise ValueError(f"n_memories must be at least 2 (one to erase, others to damage), got {n}")
    mean, square = key_overlap_moments(d_key, overlap)
    unknown = sorted(set(params) - set(ERASURE_RULES[rule]))
    if unknown:
        raise TypeError(f"{unknown[0]} is not a parameter of the {rule!r} closed forms, which take "
                        f"{', '.join(ERASURE_RULES[rule])}")
    steps = _validate.positive_int("steps", params.get("steps", 1)) if "steps" in ERASURE_RULES[rule] else 1
    if rule in ("retrain", "downdate"):
        c = 1.0
    elif rule == "anti_hebbian":
        c = _validate.finite_float("alpha", params.get("alpha", 1.0), nonnegative=True)
    elif rule == "kalman":
        noise = _validate.finite_float("noise", params.get("noise", 1.0), nonnegative=True)
        c = steps / (noise + steps)
    else:
        c = 1 - (1 - _validate.finite_float("beta", params.get("beta", 1.0), nonnegative=True)) ** steps
    if n > d_key and rule not in exact_beyond and not (rule == "kalman" and c == 1):
        raise ValueError(f"n_memories must be at most d_key = {d_key} for this closed form of {rule!r}"
                         f"{' at noise > 0' if rule == 'kalman' else ''}, got {n}; beyond, measure it "
                         f"(pavlov.stores.erase)")
    return c, min(n, d_key) / n, n, mean, square


def erasure_residual(rule: str, d_key: int, n_memories: int, *, overlap: float | None = None, **params) -> float:
    r"""The mean recall :math:`(k_t S) \cdot v_t` left to an association after ``rule`` erases it from a least-squares store.

    The store is :math:`S_0 = K^+ V` (:math:`n` unit keys in general position, independent unit values), so
    the target recalls :math:`k_t S_0 = \sum_j P_{tj} v_j`, with :math:`P = K K^+` the hat matrix, and
    :math:`\mathbb E\, (k_t S_0) \cdot v_t = \mathbb E P_{tt} = h = \min(n, d)/n` (1 for :math:`n \le d`). For a unit key:

    * delta writes of :math:`(k_t, 0)`: each maps :math:`k_t S \to (1 - \beta)\, k_t S`, so
      :math:`k_t S = (1 - c)\, k_t S_0` with :math:`c = 1 - (1-\beta)^s`, and the residual is :math:`(1 - c)\, h`;
    * of :math:`(k_t, u)`, :math:`u` the mean of the other values: :math:`k_t S = (1 - c)\, k_t S_0 + c\, u`, with
      :math:`\mathbb E\, u \cdot v_t = 0`: again :math:`(1 - c)\, h`;
    * anti-Hebbian, :math:`S = S_0 - \alpha\, k_t^\top v_t`: :math:`h - \alpha`, negative beyond :math:`d` keys at
      :math:`\alpha = 1`: the target had only :math:`d/n` of its value to lose, and is then recalled reversed;
    * Kalman writes of :math:`(k_t, 0)` at noise :math:`\sigma^2` from :math:`P = (K^\top K)^+` (the stored pairs' posterior at
      unit noise, ``ridge = 0``): :math:`s` writes are one at noise :math:`\sigma^2/s` (the information form), and
      :math:`S = S_0 - P k_t^\top (k_t S_0) / (\sigma^2/s + P_{tt})`, since :math:`k_t P k_t^\top = P_{tt}`. So
      :math:`k_t S = k_t S_0\, \sigma^2 / (\sigma^2 + s P_{tt})`: for :math:`n \le d` (:math:`P_{tt} = 1`) :math:`(1 - c)` with
      :math:`c = s / (\sigma^2 + s)`, the erasing pairings weighed against the stored one; beyond, only at
      ``noise = 0`` (the limit of a certain erasure; the rule itself needs noise > 0), where it is 0.

    * ``retrain``, the store written again without the pair (:math:`K_{-t}^+ V_{-t}`, the store that never learned
      it): the target's read-out is built from the other values, independent of :math:`v_t`: 0, for every :math:`n`.
    * ``downdate``, one rank-one write along :math:`u = P k_t^\top`: it *is* the retrained store, at every
      :math:`n` (see :func:`downdate_gap`), so every form here is ``retrain``'s.

    Every value holds for either key ensemble (``overlap``: see :func:`key_overlap_moments`).

    >>> erasure_residual("delta_zero", 32, 16), erasure_residual("anti_hebbian", 32, 64), erasure_residual("kalman", 32, 16)
    (0.0, -0.5, 0.5)
    """
    c, h, _, _, _ = _erasure(rule, d_key, n_memories, overlap, params,
                             ("delta_zero", "delta_neutral", "anti_hebbian", "retrain", "downdate"))
    return h - c if rule == "anti_hebbian" else (1 - c) * h


def erasure_damage(rule: str, d_key: int, n_memories: int, *, overlap: float | None = None, **params) -> float:
    r"""The mean loss of recall :math:`(k_i S_0 - k_i S) \cdot v_i` of the other associations when ``rule`` erases one.

    Every rule changes the store along one direction, so pair :math:`i` loses a multiple of its key's weight
    on it. Over the independent unit values :math:`\mathbb E\, (k_t S_0) \cdot v_i = P_{ti}`, with :math:`P = K K^+`, and since
    :math:`K^\top P = K^\top`, :math:`\sum_i (k_i \cdot k_t) P_{it} = \lVert k_t \rVert^2 = 1`, so
    :math:`\sum_{i \ne t} (k_i \cdot k_t) P_{it} = 1 - P_{tt}`, of mean :math:`1 - h`, :math:`h = \min(n, d)/n`.

    * Delta writes (unit key): :math:`S - S_0 = c\, k_t^\top (u - k_t S_0)` with :math:`u = 0` (``delta_zero``) or the mean
      :math:`\bar v` of the other values (``delta_neutral``), so pair :math:`i` loses :math:`c\, (k_i \cdot k_t)\, (k_t S_0 - u) \cdot v_i`;
      with :math:`\mathbb E\, \bar v \cdot v_i = 1/(n-1)` and :math:`\bar\rho = \mathbb E\, k_i \cdot k_t` (0, or ``overlap``), the mean over the
      :math:`n - 1` others is :math:`c\,(1 - h)/(n - 1)` and :math:`c\,(1 - h - \bar\rho)/(n - 1)`, for every :math:`n`.
      Below capacity the erasure costs the others nothing on average, and a neutral value, which
      shares the others' values, helps them through the shared key direction; beyond, each loses about :math:`1/n`.
    * Anti-Hebbian, :math:`S - S_0 = -\alpha\, k_t^\top v_t`: pair :math:`i` loses :math:`\alpha\, (k_i \cdot k_t)(v_t \cdot v_i)`, of mean 0.
    * Kalman from :math:`P = (K^\top K)^+` (``ridge = 0``): :math:`S - S_0 = -P k_t^\top (k_t S_0) / (a + P_{tt})`, :math:`a = \sigma^2/s`,
      and :math:`k_i P k_t^\top = P_{it}`; so pair :math:`i` loses :math:`P_{it}\, (k_t S_0) \cdot v_i / (a + P_{tt})`, of mean
      :math:`P_{it}^2 / (a + P_{tt})`, and :math:`\sum_{i \ne t} P_{it}^2 = P_{tt} - P_{tt}^2` (:math:`P^2 = P`). For :math:`n \le d`,
      :math:`P = I`: no other read-out moves at all, 0. Beyond, at ``noise = 0`` (a certain erasure: the least-squares
      store refitted under the constraint :math:`k_t S = 0`), :math:`(1 - P_{tt})/(n - 1)`, of mean :math:`(1 - h)/(n - 1)`,
      the delta rule's; at noise > 0 it has no closed form here, and the ``noise = 0`` form exceeds the
      mean by at most :math:`a\, \mathbb E[1/x]/(n-1)`: the shortfall is :math:`(1 - P_{tt}) a / ((a + P_{tt})(n-1))`
      and :math:`1/P_{tt} = 1 + 1/x`, :math:`x = k_t B^{-1} k_t^\top` with :math:`B` the other keys' Gram matrix
      (Sherman-Morrison), so :math:`\mathbb E[1/x]` is the least-squares store's mean ISR (:func:`~pavlov.theory.isr`).
    * ``retrain``: each other pair's mean recall goes from :math:`h(n)` to :math:`h(n - 1)`, :math:`h(m) = \min(m, d)/m`:
      0 below capacity, and beyond it the others *gain* :math:`d/(n-1) - d/n`: the store that never learned the pair
      recalls the rest better, where every single write costs them.

    >>> erasure_damage("delta_zero", 32, 64), erasure_damage("delta_neutral", 32, 16, overlap=0.3)
    (0.007936507936507936, -0.02)
    """
    c, h, n, mean, _ = _erasure(rule, d_key, n_memories, overlap, params,
                                ("delta_zero", "delta_neutral", "anti_hebbian", "retrain", "downdate"))
    if rule in ("retrain", "downdate"):
        return h - min(n - 1, d_key) / (n - 1)
    if rule == "anti_hebbian":
        return 0.0
    if rule == "kalman":
        return (1 - h) / (n - 1)
    return c * (1 - h - (mean if rule == "delta_neutral" else 0.0)) / (n - 1)


def erasure_change(rule: str, d_key: int, n_memories: int, *, overlap: float | None = None, **params) -> float:
    r"""The mean squared change :math:`\lVert k_i (S - S_0) \rVert^2` of the other associations' read-outs when ``rule`` erases one.

    With :math:`m_2 = \mathbb E\, (k_i \cdot k_t)^2` (:func:`key_overlap_moments`: :math:`1/d`, or
    :math:`\rho^2 + (1-\rho)^2/(d-1)`), keys independent of values, and :math:`n \le d`, where :math:`k_t S_0 = v_t`:

    * ``delta_zero``: :math:`k_i (S - S_0) = -c\, (k_i \cdot k_t)\, v_t`, so :math:`c^2 m_2`;
    * ``delta_neutral``: :math:`c\, (k_i \cdot k_t)(\bar v - v_t)` with :math:`\mathbb E \lVert \bar v - v_t \rVert^2 = 1 + 1/(n-1)`,
      so :math:`c^2 m_2\, n / (n - 1)`: a neutral value moves the others more than zero does;
    * ``anti_hebbian``: :math:`-\alpha\, (k_i \cdot k_t)\, v_t` (it writes :math:`v_t`, whatever the store recalls), so
      :math:`\alpha^2 m_2`, for every :math:`n`;
    * ``kalman`` (``ridge = 0``): :math:`-P_{it}\, (k_t S_0) / (a + P_{tt})` (see :func:`erasure_damage`), 0 for :math:`n \le d`;
      beyond, at ``noise = 0``, with :math:`\mathbb E \lVert k_t S_0 \rVert^2 = \sum_j P_{tj}^2 = P_{tt}` the mean over the others is
      :math:`(P_{tt} - P_{tt}^2) P_{tt} / (P_{tt}^2 (n-1)) = (1 - P_{tt})/(n-1)`, of mean :math:`(1 - h)/(n - 1)`.
      At noise > 0 it is within :math:`2 a\, \mathbb E[1/x]/(n-1)` of that (as in :func:`erasure_damage`).

    * ``retrain``: below capacity the retrained store recalls the others exactly, as :math:`S_0` does: 0.

    Beyond :math:`d` keys the delta rules' change depends on the leverage :math:`P_{tt}` jointly with the
    overlaps, and has no closed form here (``delta_zero``'s is near :math:`c^2 m_2\, d/n`, which for independent
    keys is above the certain Kalman erasure's :math:`(1 - h)/(n - 1)`).

    >>> erasure_change("delta_zero", 32, 16), erasure_change("anti_hebbian", 32, 64, overlap=0.5)
    (0.03125, 0.25806451612903225)
    """
    c, h, n, _, square = _erasure(rule, d_key, n_memories, overlap, params, ("anti_hebbian",))
    if rule in ("retrain", "downdate"):
        return 0.0
    if rule == "kalman":
        return (1 - h) / (n - 1)
    return c**2 * square * (n / (n - 1) if rule == "delta_neutral" else 1.0)


def downdate_gap(d_key: int, n_memories: int, *, overlap: float | None = None) -> float:
    r"""The mean square distance :math:`\lVert k_i (S - S_r) \rVert^2` of the downdate from the retrained store: 0 at every load.

    With :math:`P = (K^\top K)^+`, :math:`u = P k_t^\top` and the leverage :math:`h = k_t u`:

    * beyond capacity (:math:`n > d`, keys in general position) :math:`P = (K^\top K)^{-1}` and removing the row
      :math:`k_t` gives, by Sherman-Morrison, :math:`(K^\top K - k_t^\top k_t)^{-1} = P + u u^\top / (1 - h)`; the retrained
      store :math:`(K^\top K - k_t^\top k_t)^{-1} (K^\top V - k_t^\top v_t)` expands to
      :math:`S_0 - u\, (v_t - k_t S_0) / (1 - h)`, a Kalman write of the pair's own value at noise :math:`-1`;
    * below capacity (:math:`n \le d`, independent keys) :math:`h = 1`; :math:`S_0` and :math:`S_r` both lie in the
      keys' row space and agree on the other keys, so they differ along the one direction of that space the
      other keys annul, which is :math:`u` (:math:`K u = e_t`), and :math:`S_r \perp u` (it lies in the other keys'
      span): :math:`S_r = S_0 - u\, (u^\top S_0) / \lVert u \rVert^2`.

    So the distance is 0 for either key ensemble (``overlap``); measured, it is rounding.

    >>> downdate_gap(32, 48)
    0.0
    """
    _erasure("downdate", d_key, n_memories, overlap, {}, ("downdate",))
    return 0.0


HEBBIAN_ERASURE_RULES = {"delta_zero": ("beta", "steps"), "anti_hebbian": ("alpha",), "retrain": ()}
"""The erasing rules of :func:`hebbian_erasure` and the parameters each takes."""


def hebbian_erasure(rule: str, d_key: int, n_memories: int, **params) -> dict[str, float]:
    r"""Erasing one association from the Hebbian store :math:`S_0 = K^\top V`: the five means of :func:`pavlov.stores.erase`.

    :math:`n` unit keys uniform on the sphere in :math:`d` dimensions (independent), independent unit values; with
    :math:`x_i = k_i \cdot k_t`, :math:`m_2 = \mathbb E x^2 = 1/d` and :math:`m_4 = \mathbb E x^4 = 3/(d(d+2))`. The target
    reads :math:`k_t S_0 = v_t + e_t`, :math:`e_t = \sum_{j \ne t} x_j v_j` its crosstalk; each other pair's error
    :math:`e_i = k_i S_0 - v_i` holds :math:`x_i v_t`. Returns ``residual`` :math:`(k_t S) \cdot v_t`, ``damage``
    :math:`(k_i S_0 - k_i S) \cdot v_i`, ``change`` :math:`\lVert k_i (S - S_0) \rVert^2`, ``error``
    :math:`\lVert k_i S - v_i \rVert^2 - \lVert e_i \rVert^2` and ``gap`` :math:`\lVert k_i (S - S_r) \rVert^2`, the
    means over the others, with :math:`S_r = S_0 - k_t^\top v_t` the store written without the pair.

    * ``anti_hebbian`` at rate :math:`\alpha`, :math:`S = S_0 - \alpha k_t^\top v_t`: residual :math:`1 - \alpha`, damage 0,
      change :math:`\alpha^2 m_2`, error :math:`(\alpha^2 - 2\alpha) m_2`, gap :math:`(1 - \alpha)^2 m_2`. At :math:`\alpha = 1`
      it *is* the retrained store (``retrain``): exact unlearning, and the others' error falls by :math:`m_2`, the
      crosstalk the pair had added to each of them.
    * ``delta_zero``, :math:`S = S_0 - c\, k_t^\top (v_t + e_t)`, :math:`c = 1 - (1 - \beta)^s`: it erases the target's
      crosstalk too. Residual :math:`1 - c`; damage :math:`c\, m_2` (the term :math:`x_i^2 v_i` of :math:`x_i e_t`);
      change :math:`c^2 (m_2 + m_4 + (n-2) m_2^2)`; error :math:`\text{change} - 2c\,(m_2 + (n-2) m_2^2)`; gap
      :math:`(1-c)^2 m_2 + c^2 (m_4 + (n-2) m_2^2)`.

    >>> hebbian_erasure("retrain", 32, 16)["error"], hebbian_erasure("delta_zero", 32, 16)["damage"]
    (-0.03125, 0.03125)
    """
    _validate.option("rule", rule, tuple(HEBBIAN_ERASURE_RULES))
    d = _validate.positive_int("d_key", d_key)
    n = _validate.positive_int("n_memories", n_memories)
    if n < 2:
        raise ValueError(f"n_memories must be at least 2 (one to erase, others to damage), got {n}")
    unknown = sorted(set(params) - set(HEBBIAN_ERASURE_RULES[rule]))
    if unknown:
        raise TypeError(f"{unknown[0]} is not a parameter of the {rule!r} Hebbian erasure, which takes "
                        f"{', '.join(HEBBIAN_ERASURE_RULES[rule]) or 'none'}")
    m2, m4 = 1 / d, 3 / (d * (d + 2))
    if rule == "delta_zero":
        beta = _validate.finite_float("beta", params.get("beta", 1.0), nonnegative=True)
        c = 1 - (1 - beta) ** _validate.positive_int("steps", params.get("steps", 1))
        change = c**2 * (m2 + m4 + (n - 2) * m2**2)
        return {"residual": 1 - c, "damage": c * m2, "change": change,
                "error": change - 2 * c * (m2 + (n - 2) * m2**2),
                "gap": (1 - c) ** 2 * m2 + c**2 * (m4 + (n - 2) * m2**2)}
    alpha = 1.0 if rule == "retrain" else _validate.finite_float("alpha", params.get("alpha", 1.0), nonnegative=True)
    return {"residual": 1 - alpha, "damage": 0.0, "change": alpha**2 * m2, "error": (alpha**2 - 2 * alpha) * m2,
            "gap": (1 - alpha) ** 2 * m2}
