"""The classical Hopfield network: the critical load, the retrieval overlap, and the flip and stability probabilities;
the modern network's mean-field retrieval state and the inverse temperature at which it appears.

Chapter 11 checks them; chapter 12 reads its critical load as bits.
"""

from __future__ import annotations

import math

import torch

from .. import _validate, stats


def _ags_load(y: float) -> float:
    """The load at which the zero-temperature retrieval state has overlap erf(y) (Amit, Gutfreund, Sompolinsky)."""
    m = math.erf(y)
    return (m - 2 * y * math.exp(-y * y) / math.sqrt(math.pi)) ** 2 / (2 * y * y)


_AGS_Y = stats.golden_section_min(lambda y: -_ags_load(y), 0.5, 3.0)


HOPFIELD_CRITICAL_LOAD = _ags_load(_AGS_Y)
"""Amit, Gutfreund and Sompolinsky's critical load of the classical Hopfield network, :math:`\\alpha_c \\approx 0.138`."""


def hopfield_retrieval_overlap(load: float) -> float:
    r"""The overlap :math:`m` of the classical Hopfield network's retrieval state with its pattern at load
    :math:`\alpha = P/N`, in the replica-symmetric theory at zero temperature of Amit, Gutfreund and Sompolinsky
    (1985), as :math:`N \to \infty`; ``math.nan`` beyond :data:`HOPFIELD_CRITICAL_LOAD`, where there is no retrieval
    state.

    The saddle-point equations :math:`m = \mathrm{erf}(y)`, :math:`y = m/\sqrt{2\alpha r}`,
    :math:`C = \sqrt{2/(\pi\alpha r)}\, e^{-y^2}`, :math:`r = (1 - C)^{-2}` give the load in terms of :math:`y`,

    .. math::

        \alpha(y) = \frac{\big(\mathrm{erf}(y) - 2 y e^{-y^2}/\sqrt\pi\big)^2}{2 y^2},

    whose maximum is :math:`\alpha_c`; the retrieval state is the branch beyond it, solved here by bisection.

    >>> round(HOPFIELD_CRITICAL_LOAD, 4), round(hopfield_retrieval_overlap(HOPFIELD_CRITICAL_LOAD), 3)
    (0.1379, 0.967)
    """
    load = _validate.finite_float("load", load, nonnegative=True)
    if load > HOPFIELD_CRITICAL_LOAD:
        return math.nan
    if load == 0:
        return 1.0
    low, high = _AGS_Y, 10.0          # alpha(y) falls from alpha_c on this branch
    for _ in range(100):
        middle = (low + high) / 2
        low, high = (middle, high) if _ags_load(middle) > load else (low, middle)
    return math.erf((low + high) / 2)


def hopfield_bit_flip(n_neurons: int, n_patterns: int) -> float:
    r"""The probability, exact, that one bit of a stored random pattern is unstable in the classical Hopfield network.

    The bit's field times the bit is :math:`((N - 1) + S)/N`, with :math:`S` a sum of :math:`M = (P - 1)(N - 1)`
    independent signs (:func:`hopfield_stable_fraction`), so the bit flips when the binomial :math:`S = 2B - M`
    falls below :math:`-(N - 1)`.

    >>> hopfield_bit_flip(5, 2), round(hopfield_bit_flip(5, 3) * 256, 9)     # B <= 1 of 8 signs: 9/256
    (0.0, 9.0)
    """
    n_neurons = _validate.positive_int("n_neurons", n_neurons)
    n_patterns = _validate.positive_int("n_patterns", n_patterns)
    m = (n_patterns - 1) * (n_neurons - 1)
    flips_below = math.ceil((m - n_neurons + 1) / 2)       # a flip when B <= flips_below - 1
    if m == 0 or flips_below <= 0:
        return 0.0
    b = torch.arange(flips_below, dtype=torch.float64)
    log_binomial = math.lgamma(m + 1) - torch.lgamma(b + 1) - torch.lgamma(m - b + 1)
    return min(torch.logsumexp(log_binomial - m * math.log(2), 0).exp().item(), 1.0)


def hopfield_stable_fraction(n_neurons: int, n_patterns: int) -> float:
    r"""The probability that a stored pattern is a fixed point of the classical Hopfield network, with its bits'
    failures taken as independent.

    The field on bit :math:`i` of stored pattern :math:`\nu`, times the bit, is :math:`\xi^\nu_i h_i = ((N - 1) + S)/N`,
    with :math:`S` a sum of :math:`M = (P - 1)(N - 1)` independent signs (each :math:`\xi^\nu_i \xi^\mu_i \xi^\mu_j \xi^\nu_j`,
    :math:`\mu \ne \nu`, :math:`j \ne i`), so a bit flips exactly when the binomial :math:`S < -(N - 1)` (a zero field keeps the
    bit). The :math:`N` bits of a pattern share their patterns' signs and are not quite independent; taking them
    so gives :math:`(1 - p_{\mathrm{flip}})^N`. As :math:`N \to \infty` it tends to 1 below McEliece et al.'s
    :math:`P = N/(2 \ln N)` and to 0 beyond.

    >>> hopfield_stable_fraction(100, 1), round(hopfield_stable_fraction(1000, 200), 3)
    (1.0, 0.0)
    """
    p_flip = hopfield_bit_flip(n_neurons, n_patterns)
    return math.exp(n_neurons * math.log1p(-p_flip)) if p_flip < 1 else 0.0


def _modern_field(t: torch.Tensor, n_patterns: int, d: int, beta: float) -> torch.Tensor:
    """:math:`\\log((1 - m)/m) - \\log(n - 1) + \\beta m - \\beta^2 m^2/(2d)` at :math:`m = \\sigma(t)`: zero at a fixed point."""
    m = torch.sigmoid(t)
    return -t - math.log(n_patterns - 1) + beta * m - beta**2 * m**2 / (2 * d)


def modern_retrieval_weight(n_patterns: int, d: int, beta: float) -> float:
    r"""The weight :math:`m` a fixed point of the modern Hopfield update puts on its own pattern, in mean field: the
    largest root of

    .. math::

        m = \frac{1}{1 + (n - 1)\, e^{\beta^2 m^2/(2d) - \beta m}} .

    A state :math:`\xi \approx m x_j` scores its pattern :math:`\beta m` and each of the :math:`n - 1` others
    :math:`\beta m\, x_i \cdot x_j`, about normal with variance :math:`\beta^2 m^2/d` for patterns uniform on the unit
    sphere of dimension :math:`d`; replacing their exponentials by their mean :math:`e^{\beta^2 m^2/(2d)}` gives the
    softmax weight on :math:`x_j`. Below :func:`modern_critical_beta` the only root is near :math:`1/n`, the state near
    the patterns' mean; above it a root near 1 appears, a retrieval state. The mean replaces the largest crosstalk
    terms by their average, which overstates the crosstalk once :math:`\beta` nears :math:`2d`.

    >>> round(modern_retrieval_weight(64, 32, 4.0), 3), round(modern_retrieval_weight(64, 32, 16.0), 3)
    (0.017, 1.0)
    """
    n_patterns = _validate.positive_int("n_patterns", n_patterns)
    if n_patterns < 2:
        raise ValueError(f"n_patterns must be at least 2, got {n_patterns}")
    d = _validate.positive_int("d", d)
    beta = _validate.finite_float("beta", beta, positive=True)
    t = torch.linspace(-40.0, 40.0 + beta, 8001, dtype=torch.float64)      # the field is negative beyond t = beta
    i = int(torch.nonzero(_modern_field(t, n_patterns, d, beta) >= 0)[-1])      # the last sign change
    low, high = t[i].item(), t[i + 1].item()
    for _ in range(60):
        middle = torch.tensor((low + high) / 2, dtype=torch.float64)
        low, high = (middle.item(), high) if _modern_field(middle, n_patterns, d, beta) >= 0 else (low, middle.item())
    return 1 / (1 + math.exp(-(low + high) / 2))


def modern_critical_beta(n_patterns: int, d: int) -> float:
    r"""The smallest inverse temperature at which the modern Hopfield update has a retrieval fixed point in mean field:
    the :math:`\beta` at which :func:`modern_retrieval_weight` jumps past one half.

    It grows with the number of patterns, about linearly in :math:`\ln n`, and stays well below :math:`2d` while
    :math:`\ln n \ll d`.

    >>> round(modern_critical_beta(64, 32), 2), round(modern_critical_beta(1024, 32), 2)
    (7.64, 12.15)
    """
    n_patterns = _validate.positive_int("n_patterns", n_patterns)
    d = _validate.positive_int("d", d)
    low, high = 1e-6, 2.0 * d
    if modern_retrieval_weight(n_patterns, d, high) <= 0.5:
        raise ValueError(f"no retrieval state below beta = 2d for n_patterns = {n_patterns}, d = {d}")
    if modern_retrieval_weight(n_patterns, d, low) > 0.5:
        return 0.0
    for _ in range(50):
        middle = (low + high) / 2
        low, high = (low, middle) if modern_retrieval_weight(n_patterns, d, middle) > 0.5 else (middle, high)
    return (low + high) / 2
