"""pavlov: the package behind *Transformers as Associative Memory*.

Modules, one idea each: :mod:`~pavlov.runtime` (device, scale, seeding), :mod:`~pavlov.stimuli`,
:mod:`~pavlov.maps` (feature maps, output norms), :mod:`~pavlov.conditioning`,
:mod:`~pavlov.attention`, :mod:`~pavlov.stores` (associative stores and their ISR),
:mod:`~pavlov.stacking` (stacked circuits), :mod:`~pavlov.theory` (closed forms), :mod:`~pavlov.stats`,
:mod:`~pavlov.timing` and :mod:`~pavlov.claims` (the ledger of checked claims). :mod:`~pavlov.plotting`
(the figure style) is imported on its own, so computation never loads matplotlib.
"""

__version__ = "0.1.0"

from . import attention, claims, conditioning, maps, stacking, stats, stimuli, stores, theory, timing  # noqa: E402
from .runtime import by_scale, default_device, generator, run_info, scale, setup  # noqa: E402
from .stimuli import random_stimuli  # noqa: E402

__all__ = ["attention", "by_scale", "claims", "conditioning", "default_device", "generator", "maps",
           "random_stimuli", "run_info", "scale", "setup", "stacking", "stats", "stimuli", "stores", "theory", "timing"]
