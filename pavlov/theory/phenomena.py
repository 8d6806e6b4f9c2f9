r"""The indices of chapter 8's conditioning phenomena in closed form: Rescorla-Wagner and least squares.

Each design of :mod:`pavlov.phenomena` has ``n`` trials a phase (latent inhibition: ``max(1, n // 10)``
reinforced trials after ``n`` pre-exposures) and orthonormal stimuli. Under the Rescorla-Wagner model
(the delta rule with summed keys, rate :math:`\beta`) a phase of one stimulus leaves the fraction
:math:`q^n` of its error, :math:`q = 1 - \beta`, and a phase of a two-stimulus compound :math:`h^n`,
:math:`h = 1 - 2\beta`. The drift-free Kalman filter from the prior :math:`P_0 = p_0 I` is ridge
regression with ridge :math:`r = \sigma^2 / p_0` per stimulus: each index is a ratio of least-squares
weights, which do not depend on the order of the trials. Every index is in units of the US, so none
depends on :math:`\lambda`.
"""

from __future__ import annotations

import math

from .. import _validate

PHENOMENON_NAMES = ("acquisition", "extinction", "spontaneous_recovery", "blocking", "overshadowing",
                    "conditioned_inhibition", "latent_inhibition", "inhibitor_kept", "backward_blocking",
                    "overexpectation", "release_from_overshadowing", "recovery_from_blocking")
"""The phenomena, in the order of :data:`pavlov.phenomena.PHENOMENA`."""


def _inhibition_pairs(n: int, beta: float) -> tuple[float, float]:
    r"""Strengths :math:`(V_A, V_X)` after ``n`` pairs of A+ and AX- trials from zero.

    With :math:`\alpha = V_A - 1` and :math:`\sigma = V_A + V_X`, one pair maps :math:`(\alpha, \sigma)` by
    :math:`M = \begin{pmatrix} q + \beta^2 & -\beta \\ -h\beta & h \end{pmatrix}` from :math:`(-1, 0)`;
    :math:`M^n` by Sylvester's formula from its two eigenvalues.
    """
    q, h = 1 - beta, 1 - 2 * beta
    m = ((q + beta ** 2, -beta), (-h * beta, h))
    trace, det = m[0][0] + m[1][1], m[0][0] * m[1][1] - m[0][1] * m[1][0]
    root = math.sqrt(trace ** 2 / 4 - det)            # real: the discriminant (q - h + beta^2)^2/4 + h beta^2 > 0
    plus, minus = trace / 2 + root, trace / 2 - root
    # M^n (-1, 0)^T = -(first column of M^n); M^n = (plus^n (M - minus I) - minus^n (M - plus I)) / (plus - minus)
    column = [(plus ** n * (m[i][0] - minus * (i == 0)) - minus ** n * (m[i][0] - plus * (i == 0))) / (plus - minus)
              for i in (0, 1)]
    alpha, sigma = -column[0], -column[1]
    return 1 + alpha, sigma - alpha - 1


def rescorla_wagner_index(name: str, *, n: int = 30, beta: float = 0.2) -> float:
    r"""The index of phenomenon ``name`` under the Rescorla-Wagner model (the delta rule, summed keys).

    With :math:`q = 1 - \beta` and :math:`h = 1 - 2\beta`: acquisition :math:`\max(q^n - q^{2n}, q^{2n})`;
    extinction, blocking and the inhibitor's extinction :math:`q^n`; overshadowing
    :math:`(1 - h^n) / (2 (1 - q^n))`; overexpectation :math:`1 + (2q^n - 1)(1 - h^n) / (2(1 - q^n))`;
    conditioned inhibition :math:`V_X / V_A` from :func:`_inhibition_pairs`; latent inhibition and backward
    blocking 1, spontaneous recovery and both revaluations 0 (absent stimuli never change).

    >>> round(rescorla_wagner_index("blocking", n=30, beta=0.2), 6)
    0.001238
    """
    _validate.option("name", name, PHENOMENON_NAMES)
    n = _validate.positive_int("n", n)
    beta = _validate.finite_float("beta", beta, positive=True)
    if beta >= 0.5:
        raise ValueError(f"beta must lie in (0, 0.5) for a compound's error to shrink monotonically, got {beta}")
    q, h = (1 - beta) ** n, (1 - 2 * beta) ** n
    if name == "conditioned_inhibition":
        strength_a, strength_x = _inhibition_pairs(n, beta)
        return strength_x / strength_a
    return {"acquisition": max(q - q ** 2, q ** 2), "extinction": q, "spontaneous_recovery": 0.0, "blocking": q,
            "overshadowing": (1 - h) / (2 * (1 - q)), "latent_inhibition": 1.0, "inhibitor_kept": q,
            "backward_blocking": 1.0, "overexpectation": 1 + (2 * q - 1) * (1 - h) / (2 * (1 - q)),
            "release_from_overshadowing": 0.0, "recovery_from_blocking": 0.0}[name]


def least_squares_index(name: str, *, n: int = 30, ridge: float = 1e-3) -> float:
    r"""The index of phenomenon ``name`` under the drift-free Kalman filter: ridge regression, ridge :math:`r`.

    With :math:`D_1 = (2n + r)(n + r) - n^2` (the precision's determinant over A and B after A+ and AB+
    phases, or A+ and AX-) and :math:`a` the latent-inhibition design's reinforced trials: acquisition
    :math:`\max(|2n/(2n+r) - n/(n+r)|, r/(2n+r))`; extinction and overshadowing :math:`(n+r)/(2n+r)`;
    blocking and backward blocking :math:`r(2n+r)/D_1`; conditioned inhibition :math:`-n/(n+r)`; latent
    inhibition :math:`(a+r)/(n+a+r)`; the inhibitor's extinction :math:`D_1 / ((2n+r)^2 - n^2)`;
    overexpectation :math:`2(n+r)/(3n+r)`; release from overshadowing :math:`n(n+r)/D_1 - n/(2n+r)`;
    recovery from blocking :math:`n(n+r)/D_3 - nr/D_1`, :math:`D_3 = (3n+r)(n+r) - n^2`; spontaneous
    recovery 0.

    >>> round(least_squares_index("extinction", n=30, ridge=1e-3), 6)
    0.500008
    """
    _validate.option("name", name, PHENOMENON_NAMES)
    n = _validate.positive_int("n", n)
    r = _validate.finite_float("ridge", ridge, positive=True)
    a = max(1, n // 10)
    d1, d3 = (2 * n + r) * (n + r) - n ** 2, (3 * n + r) * (n + r) - n ** 2
    return {"acquisition": max(abs(2 * n / (2 * n + r) - n / (n + r)), r / (2 * n + r)),
            "extinction": (n + r) / (2 * n + r), "spontaneous_recovery": 0.0, "blocking": r * (2 * n + r) / d1,
            "overshadowing": (n + r) / (2 * n + r), "conditioned_inhibition": -n / (n + r),
            "latent_inhibition": (a + r) / (n + a + r), "inhibitor_kept": d1 / ((2 * n + r) ** 2 - n ** 2),
            "backward_blocking": r * (2 * n + r) / d1, "overexpectation": 2 * (n + r) / (3 * n + r),
            "release_from_overshadowing": n * (n + r) / d1 - n / (2 * n + r),
            "recovery_from_blocking": n * (n + r) / d3 - n * r / d1}[name]


def gated_blocking_index(*, gamma: float, beta: float, n: int = 30) -> float:
    r"""The blocking index of the gated delta rule :math:`S \leftarrow \gamma (I - \beta k^\top k) S + \beta k^\top v`.

    Orthonormal stimuli, summed compound keys, ``n`` trials a phase (``n A+ | n AB+`` against ``n C+ | n AB+``,
    test B). The A+ trials bring A to :math:`V_0 = \beta (1 - q^n)/(1 - q)` (:math:`q = \gamma (1 - \beta)`, in units of
    the US). On an AB+ trial both strengths move by the same error, so A's lead over B shrinks by exactly
    :math:`\gamma` a trial, :math:`V_A - V_B = V_0 \gamma^n` at the end, while their sum obeys
    :math:`\Sigma \leftarrow r \Sigma + 2\beta`, :math:`r = \gamma (1 - 2\beta)`, towards :math:`\Sigma^* = 2\beta/(1 - r)`, from
    :math:`V_0` (blocking group) or 0 (control, where A and B stay equal). With :math:`V_B = (\Sigma - (V_A - V_B))/2`,

    .. math::

        \text{index} = \frac{\Sigma^* + (V_0 - \Sigma^*)\, r^n - V_0\, \gamma^n}{\Sigma^* (1 - r^n)}.

    So forgetting unblocks B *during* the compound trials, as A's lead decays by :math:`\gamma^n`; at
    :math:`\gamma = 1` it is the Rescorla-Wagner index.

    >>> round(gated_blocking_index(gamma=0.95, beta=0.2), 4)
    0.8078
    """
    gamma = _validate.probability("gamma", gamma)
    beta = _validate.finite_float("beta", beta, positive=True)
    if beta >= 0.5:
        raise ValueError(f"beta must lie in (0, 0.5) (a compound step of 2 beta beyond 1 overshoots), got {beta}")
    n = _validate.positive_int("n", n)
    if gamma == 0:
        raise ValueError("gamma must be positive: at gamma = 0 nothing outlives a trial")
    q, r = gamma * (1 - beta), gamma * (1 - 2 * beta)
    start = beta * (1 - q**n) / (1 - q)
    settled = 2 * beta / (1 - r)
    return (settled + (start - settled) * r**n - start * gamma**n) / (settled * (1 - r**n))
