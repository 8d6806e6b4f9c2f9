r"""The conditioning circuit, in the vocabulary of Pavlovian conditioning.

A conditioned stimulus (CS, the bell) is paired with an unconditioned stimulus (US, the food); the
pairing is written into a Hebbian store, and a test stimulus (ringing the bell again) reads it out.
In the source's row-vector notation, with feature maps :math:`f` (test and CS) and :math:`g` (US)
and learning rate :math:`\alpha`:

.. math::

    S_i = \alpha \sum_{j \le i} f(\mathrm{cs}_j)^\top g(\mathrm{us}_j), \qquad
    r_i = f(\mathrm{test}_i)\, S_i, \qquad o_i = \mathrm{Norm}(r_i).

Shapes: stimuli are ``[..., n, d]`` with any leading batch dimensions; a store is ``[..., d_k, d_v]``.
The code follows the definition literally (a sum of outer products), not the recurrence
:math:`S_i = S_{i-1} + \alpha f(\mathrm{cs}_i)^\top g(\mathrm{us}_i)`: chapter 2 proves, and checks,
that the two and the forms of linear attention agree.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from . import _validate
from .maps import NORMS, feature_map, output_norm
from .stimuli import random_stimuli


def _stimuli(**named: torch.Tensor) -> None:
    for name, x in named.items():
        _validate.tensor(name, x, min_dim=2)
    _validate.same_device_dtype(**named)


def hebbian_store(cs: torch.Tensor, us: torch.Tensor, *, f=None, g=None, alpha: float = 1.0) -> torch.Tensor:
    r"""The Hebbian store of ``n`` pairings, :math:`S = \alpha \sum_j f(\mathrm{cs}_j)^\top g(\mathrm{us}_j)`.

    Args:
        cs: conditioned stimuli ``[..., n, d_k]``.
        us: unconditioned stimuli ``[..., n, d_v]``, paired row by row with ``cs``.
        f, g: feature maps (a name from :data:`pavlov.maps.FEATURE_MAPS`, a callable, or ``None`` for identity).
        alpha: learning rate :math:`\alpha`.

    Returns:
        The store ``[..., d_k, d_v]``.
    """
    _stimuli(cs=cs, us=us)
    _validate.shape("us", us, (cs.shape[-2], None), against=f"the {cs.shape[-2]} pairings in cs")
    if cs.shape[:-2] != us.shape[:-2]:
        raise ValueError(f"cs and us must share batch dimensions, got {tuple(cs.shape[:-2])} and {tuple(us.shape[:-2])}")
    alpha = _validate.finite_float("alpha", alpha)
    f, g = feature_map(f, parameter="f"), feature_map(g, parameter="g")
    return alpha * f(cs).transpose(-1, -2) @ g(us)


def respond(store: torch.Tensor, test: torch.Tensor, *, f=None, norm: str = "none", eps: float = 1e-6) -> torch.Tensor:
    r"""The response to test stimuli, :math:`o = \mathrm{Norm}(f(\mathrm{test})\, S)`.

    Args:
        store: a store ``[..., d_k, d_v]`` from :func:`hebbian_store`.
        test: test stimuli ``[..., m, d_k]``.
        f: the feature map used when the store was written.
        norm: ``"none"``, ``"rms"`` or ``"layer"`` (see :func:`pavlov.maps.output_norm`).

    Returns:
        Responses ``[..., m, d_v]``.
    """
    _stimuli(store=store, test=test)
    _validate.shape("test", test, (store.shape[-2],), against=f"the store's key dimension {store.shape[-2]}")
    try:
        torch.broadcast_shapes(store.shape[:-2], test.shape[:-2])
    except RuntimeError:
        raise ValueError(f"the batch dimensions of store {tuple(store.shape[:-2])} and test "
                         f"{tuple(test.shape[:-2])} do not broadcast") from None
    return output_norm(feature_map(f, parameter="f")(test) @ store, norm, eps)


def condition(test: torch.Tensor, cs: torch.Tensor, us: torch.Tensor, *, f=None, g=None, alpha: float = 1.0,
              norm: str = "none", eps: float = 1e-6) -> torch.Tensor:
    r"""Run the circuit over a sequence: at step ``i``, pair ``cs[i]`` with ``us[i]``, then present ``test[i]``.

    Computes :math:`o_i = \mathrm{Norm}(f(\mathrm{test}_i) S_i)` with
    :math:`S_i = \alpha \sum_{j \le i} f(\mathrm{cs}_j)^\top g(\mathrm{us}_j)` built as a cumulative sum of
    outer products (``[..., T, d_k, d_v]`` in memory: a reference, not a fast form).

    Args:
        test: test stimuli ``[..., T, d_k]``.
        cs: conditioned stimuli ``[..., T, d_k]``.
        us: unconditioned stimuli ``[..., T, d_v]``.

    Returns:
        Responses ``[..., T, d_v]``.
    """
    _stimuli(test=test, cs=cs, us=us)
    if test.shape != cs.shape:
        raise ValueError(f"test must have the shape of cs {tuple(cs.shape)}, got {tuple(test.shape)}")
    if us.shape[:-1] != cs.shape[:-1]:
        raise ValueError(f"us must have the leading shape of cs {tuple(cs.shape[:-1])}, got {tuple(us.shape[:-1])}")
    alpha = _validate.finite_float("alpha", alpha)
    f, g = feature_map(f, parameter="f"), feature_map(g, parameter="g")
    pairings = f(cs).unsqueeze(-1) * g(us).unsqueeze(-2)          # (..., T, d_k, d_v)
    stores = alpha * pairings.cumsum(dim=-3)                      # S_i, (..., T, d_k, d_v)
    r = (f(test).unsqueeze(-2) @ stores).squeeze(-2)              # (..., T, d_v)
    return output_norm(r, norm, eps)


@dataclass
class ConditioningCircuit:
    r"""The source's circuit with its projections: test :math:`X W_Q`, CS :math:`Y W_K`, US :math:`Z W_V`.

    Calling the circuit on ``x`` alone is self-attention (:math:`X = Y = Z`); passing ``y`` and ``z``
    conditions on another sequence (cross-attention).

    Attributes:
        W_Q, W_K: ``[d_model, d_k]``; W_V: ``[d_model, d_v]``.
        f, g, alpha, norm, eps: as in :func:`condition`.
    """

    W_Q: torch.Tensor
    W_K: torch.Tensor
    W_V: torch.Tensor
    f: object = None
    g: object = None
    alpha: float = 1.0
    norm: str = "none"
    eps: float = 1e-6

    def __post_init__(self):
        for name in ("W_Q", "W_K", "W_V"):
            _validate.tensor(name, getattr(self, name), min_dim=2)
            if getattr(self, name).dim() != 2:
                raise ValueError(f"{name} must be a matrix [d_model, d], got shape {tuple(getattr(self, name).shape)}")
        _validate.same_device_dtype(W_Q=self.W_Q, W_K=self.W_K, W_V=self.W_V)
        if not (self.W_Q.shape[0] == self.W_K.shape[0] == self.W_V.shape[0]):
            raise ValueError("W_Q, W_K and W_V must share d_model (their first dimension), got "
                             f"{self.W_Q.shape[0]}, {self.W_K.shape[0]}, {self.W_V.shape[0]}")
        if self.W_Q.shape[1] != self.W_K.shape[1]:
            raise ValueError(f"W_Q and W_K must share d_k, got {self.W_Q.shape[1]} and {self.W_K.shape[1]}")
        feature_map(self.f, parameter="f"), feature_map(self.g, parameter="g")
        self.alpha = _validate.finite_float("alpha", self.alpha)
        _validate.option("norm", self.norm, NORMS)
        self.eps = _validate.finite_float("eps", self.eps, nonnegative=True)

    def __call__(self, x: torch.Tensor, y: torch.Tensor | None = None, z: torch.Tensor | None = None) -> torch.Tensor:
        """Responses ``[..., T, d_v]`` to the sequence ``x`` ``[..., T, d_model]`` (and ``y``, ``z``, default ``x``)."""
        y = x if y is None else y
        z = y if z is None else z
        for name, s in (("x", x), ("y", y), ("z", z)):
            _validate.tensor(name, s, min_dim=2)
            _validate.shape(name, s, (self.W_Q.shape[0],), against="d_model of the projections")
        _validate.same_device_dtype(W_Q=self.W_Q, x=x, y=y, z=z)
        if y.shape[:-1] != x.shape[:-1]:
            raise ValueError(f"y must have the leading shape (batch..., T) of x {tuple(x.shape[:-1])}, got {tuple(y.shape[:-1])}")
        if z.shape[:-1] != y.shape[:-1]:
            raise ValueError(f"z must have the leading shape (batch..., T) of y {tuple(y.shape[:-1])}, got {tuple(z.shape[:-1])}")
        return condition(x @ self.W_Q, y @ self.W_K, z @ self.W_V, f=self.f, g=self.g, alpha=self.alpha,
                         norm=self.norm, eps=self.eps)


# --- Experiments: acquisition, generalisation, and the read-out of a response ---


def acquisition(test: torch.Tensor, cs: torch.Tensor, us: torch.Tensor, *, f=None, g=None, alpha: float = 1.0,
                norm: str = "none", eps: float = 1e-6) -> torch.Tensor:
    r"""Responses to fixed test stimuli after each pairing of a schedule: the acquisition curve.

    Row ``n - 1`` of the result is :math:`\mathrm{Norm}(f(\mathrm{test})\, S_n)`, the response after the first
    ``n`` pairings, :math:`S_n = \alpha \sum_{j \le n} f(\mathrm{cs}_j)^\top g(\mathrm{us}_j)`. It is computed
    without any store, as :math:`f(\mathrm{test})\, S_n = \alpha \sum_{j \le n} (f(\mathrm{test}) \cdot
    f(\mathrm{cs}_j))\, g(\mathrm{us}_j)`, so memory is ``[..., T, m, d_v]`` rather than one
    ``[d_k, d_v]`` store per step as in :func:`condition`.

    Args:
        test: test stimuli ``[..., m, d_k]``, presented after every pairing; leading dimensions broadcast
            against those of ``cs`` (one ``[m, d_k]`` test set can serve a batch of schedules).
        cs: conditioned stimuli ``[..., T, d_k]``, in the order they are paired.
        us: unconditioned stimuli ``[..., T, d_v]``, paired row by row with ``cs``.
        f, g, alpha, norm, eps: as in :func:`condition`.

    Returns:
        Responses ``[..., T, m, d_v]``: after pairings ``1 .. T``, to each of the ``m`` test stimuli.

    >>> bell, food = torch.eye(4, dtype=torch.float64)[:2]
    >>> acquisition(bell[None], bell.expand(3, 4), food.expand(3, 4), alpha=0.5)[:, 0, 1]
    tensor([0.5000, 1.0000, 1.5000], dtype=torch.float64)
    """
    _stimuli(test=test, cs=cs, us=us)
    _validate.shape("test", test, (cs.shape[-1],), against=f"the CS dimension d_k = {cs.shape[-1]}")
    _validate.shape("us", us, (cs.shape[-2], None), against=f"the {cs.shape[-2]} pairings in cs")
    if us.shape[:-2] != cs.shape[:-2]:
        raise ValueError(f"cs and us must share batch dimensions, got {tuple(cs.shape[:-2])} and "
                         f"{tuple(us.shape[:-2])}")
    try:
        torch.broadcast_shapes(test.shape[:-2], cs.shape[:-2])
    except RuntimeError:
        raise ValueError(f"test's batch dimensions {tuple(test.shape[:-2])} do not broadcast against those of cs "
                         f"{tuple(cs.shape[:-2])}") from None
    alpha = _validate.finite_float("alpha", alpha)
    f, g = feature_map(f, parameter="f"), feature_map(g, parameter="g")
    scores = f(test) @ f(cs).transpose(-1, -2)                          # f(test) . f(cs_j), (..., m, T)
    steps = scores.transpose(-1, -2).unsqueeze(-1) * g(us).unsqueeze(-2)  # one term per pairing, (..., T, m, d_v)
    return output_norm(alpha * steps.cumsum(dim=-3), norm, eps)


def response_strength(response: torch.Tensor, us: torch.Tensor) -> torch.Tensor:
    r"""How much of the unconditioned response ``us`` a response carries: :math:`r \cdot u / \lVert u \rVert^2`.

    With ``us`` the food this is the salivation; with the shock, the flinch. It is 1 for a response equal
    to ``us``, so a single pairing of a unit CS, tested with that CS, has strength :math:`\alpha`.

    Args:
        response: responses ``[..., d_v]``.
        us: unconditioned stimuli ``[..., d_v]``; leading dimensions broadcast against ``response``.

    Returns:
        Strengths ``[...]`` (the broadcast leading shape).

    >>> food = torch.tensor([0.0, 2.0], dtype=torch.float64)
    >>> response_strength(torch.tensor([1.0, 3.0], dtype=torch.float64), food)
    tensor(1.5000, dtype=torch.float64)
    """
    for name, x in (("response", response), ("us", us)):
        _validate.tensor(name, x, min_dim=1)
    _validate.same_device_dtype(response=response, us=us)
    _validate.shape("us", us, (response.shape[-1],), against=f"the response dimension d_v = {response.shape[-1]}")
    us_sq_norm = us.pow(2).sum(dim=-1)
    if not bool((us_sq_norm > 0).all()):
        raise ValueError("us must have non-zero vectors (a strength along the zero vector is undefined)")
    return (response * us).sum(dim=-1) / us_sq_norm


def generalisation_tests(cs: torch.Tensor, similarity, *, generator: torch.Generator | None = None) -> torch.Tensor:
    r"""Unit test stimuli at exact cosine similarities to ``cs``: :math:`t = c\, \hat{b} + \sqrt{1 - c^2}\, u`.

    Here :math:`\hat b = \mathrm{cs} / \lVert \mathrm{cs} \rVert` and :math:`u` is a random unit vector
    orthogonal to :math:`\hat b`, drawn afresh for every test, so :math:`\lVert t \rVert = 1` and
    :math:`\cos(t, \mathrm{cs}) = c` exactly (up to rounding), while the rest of :math:`t` points nowhere
    in particular.

    Args:
        cs: the trained conditioned stimuli ``[..., d]`` (``d >= 2``, non-zero).
        similarity: the cosine similarities ``[m]`` (a sequence of numbers or a 1-D tensor), each in ``[-1, 1]``.
        generator: a seeded ``torch.Generator`` on ``cs``'s device (see :func:`pavlov.generator`).

    Returns:
        Tests ``[..., m, d]`` on ``cs``'s device, in its dtype.

    >>> bell = torch.tensor([[1.0, 0.0, 0.0]], dtype=torch.float64)
    >>> t = generalisation_tests(bell, [1.0, 0.5, -1.0], generator=torch.Generator().manual_seed(0))
    >>> (t @ bell[0]).tolist()
    [[1.0, 0.5, -1.0]]
    """
    _validate.tensor("cs", cs, min_dim=1)
    if cs.shape[-1] < 2:
        raise ValueError(f"cs must have dimension d >= 2 to leave room for an orthogonal direction, "
                         f"got d = {cs.shape[-1]}")
    cs_norm = torch.linalg.vector_norm(cs, dim=-1, keepdim=True)
    if not bool((cs_norm > 0).all()):
        raise ValueError("cs must have non-zero vectors (a similarity to the zero vector is undefined)")
    if isinstance(similarity, torch.Tensor):
        if similarity.dim() != 1 or similarity.dtype not in _validate.FLOAT_DTYPES + (torch.int64, torch.int32):
            raise ValueError(f"similarity must be a 1-D real tensor, got shape {tuple(similarity.shape)}, "
                             f"{similarity.dtype}")
        c = similarity.to(device=cs.device, dtype=cs.dtype)
    else:
        c = torch.tensor(_validate.reals("similarity", similarity), device=cs.device, dtype=cs.dtype)
    if c.numel() == 0:
        raise ValueError("similarity must hold at least one value")
    if not bool(((c >= -1) & (c <= 1)).all()):
        raise ValueError(f"similarity must lie in [-1, 1], got values from {c.min().item():g} to {c.max().item():g}")
    b = (cs / cs_norm).unsqueeze(-2)                                               # (..., 1, d)
    u = random_stimuli(*cs.shape[:-1], c.numel(), cs.shape[-1], kind="gaussian", generator=generator,
                       device=cs.device, dtype=cs.dtype)                            # (..., m, d)
    for _ in range(2):   # remove the CS direction; twice, so rounding leaves no trace of it ("twice is enough")
        u = u - (u * b).sum(dim=-1, keepdim=True) * b
    u = u / torch.linalg.vector_norm(u, dim=-1, keepdim=True)
    return c[:, None] * b + torch.sqrt(1 - c**2)[:, None] * u


def store_from_pairings(cs: torch.Tensor, us: torch.Tensor, counts, *, f=None, g=None,
                        alpha: float = 1.0) -> torch.Tensor:
    r"""The Hebbian store after pairing CS ``a`` with US ``b`` ``counts[a][b]`` times (order does not matter).

    The pairings are listed one by one and written by :func:`hebbian_store`:
    :math:`S = \alpha \sum_{a, b} \mathrm{counts}_{ab}\, f(\mathrm{cs}_a)^\top g(\mathrm{us}_b)`.

    Args:
        cs: the conditioned stimuli ``[..., n_cs, d_k]`` (e.g. bell, light, tone).
        us: the unconditioned stimuli ``[..., n_us, d_v]`` (e.g. food, shock).
        counts: non-negative integers ``[n_cs, n_us]`` (nested sequences or an integer tensor).
        f, g, alpha: as in :func:`hebbian_store`.

    Returns:
        The store ``[..., d_k, d_v]``.

    >>> cs, us = torch.eye(3, dtype=torch.float64), torch.eye(2, dtype=torch.float64)
    >>> store_from_pairings(cs, us, [[2, 0], [0, 1], [0, 0]])[:2]
    tensor([[2., 0.],
            [0., 1.]], dtype=torch.float64)
    """
    _stimuli(cs=cs, us=us)
    if isinstance(counts, torch.Tensor):
        if counts.dtype.is_floating_point or counts.dtype.is_complex or counts.dtype == torch.bool:
            raise TypeError(f"counts must hold integers, got dtype {counts.dtype}")
        counts = counts.tolist()
    try:
        table = [list(row) for row in counts] if isinstance(counts, (list, tuple)) else None
    except TypeError:     # a row that is not a sequence
        table = None
    if table is None or len(table) != cs.shape[-2] or any(len(row) != us.shape[-2] for row in table):
        raise ValueError(f"counts must be a table of {cs.shape[-2]} rows (one per CS) by {us.shape[-2]} columns "
                         "(one per US)")
    for a, row in enumerate(table):
        for b, n in enumerate(row):
            if isinstance(n, bool) or not isinstance(n, int):
                raise TypeError(f"counts[{a}][{b}] must be an int, got {type(n).__name__}")
            if n < 0:
                raise ValueError(f"counts[{a}][{b}] must be non-negative, got {n}")
    pairs = [(a, b) for a, row in enumerate(table) for b, n in enumerate(row) for _ in range(n)]
    if not pairs:   # no pairing at all: the empty store, shaped by what f and g make of one stimulus
        _validate.finite_float("alpha", alpha)
        d_k = feature_map(f, parameter="f")(cs[..., :1, :]).shape[-1]
        d_v = feature_map(g, parameter="g")(us[..., :1, :]).shape[-1]
        return cs.new_zeros(*cs.shape[:-2], d_k, d_v)
    cs_index = torch.tensor([a for a, _ in pairs], dtype=torch.long, device=cs.device)
    us_index = torch.tensor([b for _, b in pairs], dtype=torch.long, device=us.device)
    return hebbian_store(cs.index_select(-2, cs_index), us.index_select(-2, us_index), f=f, g=g, alpha=alpha)
