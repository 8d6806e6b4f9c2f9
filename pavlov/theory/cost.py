"""The cost and the precision of the attention forms: operation counts, norm rescaling and rounding.

Chapter 2 derives them; chapters 4, 6, 7, 8 and 10 take their tolerances for exact identities from :data:`UNIT_ROUNDOFF`.
"""

from __future__ import annotations

import math


from .. import _validate


ATTENTION_FORMS = ("recurrent", "parallel", "chunkwise")


def attention_cost(form: str, T: int, d_k: int, d_v: int, chunk_size: int = 64) -> int:
    r"""Multiply-adds of one head of causal linear attention over ``T`` steps, in ``form``.

    Counts the products of the matrix multiplications as the three forms are written; the feature
    map and the output norm add :math:`O(T d)`, lower order, and are left out (the denominator adds
    one value column: pass ``d_v + 1``).

    * ``"recurrent"``: :math:`2 T d_k d_v`, per step the update :math:`\phi(k_t)^\top v_t` and the
      read-out :math:`\phi(q_t) S_t`;
    * ``"parallel"``: :math:`T^2 (d_k + d_v)`, the dense scores :math:`\phi(Q)\phi(K)^\top` and the
      scores times :math:`V` (the causal mask zeroes half the scores but does not skip them);
    * ``"chunkwise"``: :math:`2 T d_k d_v + (d_k + d_v) \sum_c C_c^2`, chunks of :math:`C_c` steps
      (``chunk_size`` each, the last possibly shorter): per chunk the read-out of the state, the
      parallel form inside the chunk and the state update.

    >>> attention_cost("parallel", 1024, 64, 64) / attention_cost("parallel", 512, 64, 64)
    4.0
    """
    _validate.option("form", form, ATTENTION_FORMS)
    T, d_k, d_v = (_validate.positive_int(n, x) for n, x in (("T", T), ("d_k", d_k), ("d_v", d_v)))
    chunk_size = _validate.positive_int("chunk_size", chunk_size)
    if form == "recurrent":
        return 2 * T * d_k * d_v
    if form == "parallel":
        return T * T * (d_k + d_v)
    full, last = divmod(T, chunk_size)
    return 2 * T * d_k * d_v + (d_k + d_v) * (full * chunk_size**2 + last**2)


def norm_rescaling_change(scale: float, eps: float, mean_square: float) -> float:
    r"""Relative change of an RMSNorm or LayerNorm output when its input is multiplied by ``scale`` > 0.

    With :math:`m` the row's mean square (RMSNorm) or variance (LayerNorm),
    :math:`\mathrm{Norm}_\epsilon(s r) = \mathrm{Norm}_{\epsilon / s^2}(r)`, so the output row is
    multiplied by :math:`c = \sqrt{(m + \epsilon) / (m + \epsilon / s^2)}` and changes by

    .. math:: |c - 1| \approx \frac{\epsilon}{2m}\,\lvert 1 - s^{-2} \rvert \quad (\epsilon \ll s^2 m),

    exactly 0 for :math:`\epsilon = 0`.

    >>> norm_rescaling_change(10.0, 0.0, 1.0)
    0.0
    """
    scale = _validate.finite_float("scale", scale, positive=True)
    eps = _validate.finite_float("eps", eps, nonnegative=True)
    mean_square = _validate.finite_float("mean_square", mean_square, positive=True)
    return abs(math.sqrt((mean_square + eps) / (mean_square + eps / scale**2)) - 1.0)


UNIT_ROUNDOFF = {"float64": 2.0**-53, "float32": 2.0**-24, "bfloat16": 2.0**-8, "float16": 2.0**-11}


def rounding_scale(depth: int, precision="float64") -> float:
    r"""The rounding scale :math:`n u`: the relative rounding error expected of outputs that each accumulate ``depth`` terms.

    A heuristic, not a bound (the worst case, :math:`\gamma_n \sum_j |x_j| / |\sum_j x_j|` with
    :math:`\gamma_n = nu/(1 - nu)`, depends on the data's cancellation). A sum of :math:`n` rounded terms errs by about :math:`\sqrt n\, u \sum_j |x_j|` (rounding errors
    add like a random walk); terms of random sign cancel to :math:`|\sum_j x_j| \approx \sum_j |x_j| /
    \sqrt n`, so the relative error is about :math:`n u`, with :math:`u` the unit roundoff of
    ``precision`` (a name such as ``"float64"`` or a ``torch`` dtype). Terms of one sign do better.

    >>> rounding_scale(1000, "float64")
    1.1102230246251565e-13
    """
    depth = _validate.positive_int("depth", depth)
    name = str(precision).removeprefix("torch.")
    _validate.option("precision", name, tuple(UNIT_ROUNDOFF))
    return depth * UNIT_ROUNDOFF[name]
