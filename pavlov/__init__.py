"""pavlov: the package behind *Transformers as Associative Memory*.

Modules, one idea each: :mod:`~pavlov.runtime` (device, scale, seeding), :mod:`~pavlov.stimuli`,
:mod:`~pavlov.maps` (feature maps, output norms), :mod:`~pavlov.conditioning`,
:mod:`~pavlov.attention` and :mod:`~pavlov.claims` (the ledger of checked claims).
"""

__version__ = "0.1.0"

from . import attention, claims, conditioning, maps, stimuli  # noqa: E402
from .runtime import by_scale, default_device, generator, scale, setup  # noqa: E402
from .stimuli import random_stimuli  # noqa: E402

__all__ = ["attention", "by_scale", "claims", "conditioning", "default_device", "generator", "maps",
           "random_stimuli", "scale", "setup", "stimuli"]
