"""Random stimuli: batches of keys (conditioned stimuli) and values (unconditioned stimuli).

Two ensembles are used throughout the book:

* ``"sphere"``: uniform on the unit sphere :math:`S^{d-1}`, so :math:`\\lVert k \\rVert = 1` exactly;
* ``"gaussian"``: i.i.d. entries :math:`\\mathcal N(0, 1/d)`, so :math:`\\mathbb E \\lVert k \\rVert^2 = 1`.

For both, the overlap of two independent stimuli has mean 0 and variance :math:`1/d`; they differ
in the higher moments, which later chapters measure.
"""

from __future__ import annotations

import math

import torch

from . import _validate
from .runtime import resolve

KINDS = ("sphere", "gaussian")


def random_stimuli(*shape: int, kind: str = "sphere", generator: torch.Generator | None = None,
                   device=None, dtype=None) -> torch.Tensor:
    """Random stimulus vectors of shape ``shape``; the last dimension is the stimulus dimension ``d``.

    Args:
        shape: ``(..., n, d)``: any leading batch dimensions, then ``n`` stimuli of dimension ``d``.
        kind: ``"sphere"`` (uniform unit vectors) or ``"gaussian"`` (entries ``N(0, 1/d)``).
        generator: a seeded ``torch.Generator`` (see :func:`pavlov.generator`); its device must match.
        device, dtype: where and in what precision (default: the package device, float32).

    Returns:
        Tensor ``[..., n, d]``.

    >>> from pavlov import generator
    >>> keys = random_stimuli(8, 100, 64, generator=generator(0, "cpu"), device="cpu")  # 8 trials x 100 keys
    >>> keys.shape
    torch.Size([8, 100, 64])
    """
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, torch.Size)):
        shape = tuple(shape[0])
    if not shape:
        raise ValueError("shape must name at least the stimulus dimension d")
    for i, s in enumerate(shape):
        _validate.positive_int(f"shape[{i}]", s)
    _validate.option("kind", kind, KINDS)
    device, dtype = resolve(device, dtype)
    _validate.generator("generator", generator, device)
    # Draw in float32 at least, so half-precision stimuli are rounded from accurate samples.
    draw_dtype = torch.promote_types(dtype, torch.float32)
    x = torch.randn(shape, generator=generator, device=device, dtype=draw_dtype)
    if kind == "sphere":
        x = x / torch.linalg.vector_norm(x, dim=-1, keepdim=True)
    else:
        x = x / math.sqrt(shape[-1])
    return x.to(dtype)
