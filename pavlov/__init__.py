"""pavlov: the package behind *Transformers as Associative Memory*.

Modules, one idea each: :mod:`~pavlov.runtime` (device, scale, seeding), :mod:`~pavlov.stimuli`,
:mod:`~pavlov.maps` (feature maps, output norms), :mod:`~pavlov.conditioning`,
:mod:`~pavlov.attention`, :mod:`~pavlov.stores` (associative stores and their ISR),
:mod:`~pavlov.stacking` (stacked circuits), :mod:`~pavlov.rules` (write rules: Hebbian, decay, delta, Oja, BCM),
:mod:`~pavlov.phenomena` (classic conditioning experiments), :mod:`~pavlov.drift` (concept drift, forgetting),
:mod:`~pavlov.mqar` (multi-query associative recall: trained models), :mod:`~pavlov.induction` (the induction head),
:mod:`~pavlov.hopfield` (Hopfield networks: classical, dense and modern),
:mod:`~pavlov.channel` (retrieval as a noisy channel: the bits of a read),
:mod:`~pavlov.theory` (the closed forms: a subpackage, one module per idea), :mod:`~pavlov.stats`,
:mod:`~pavlov.timing`, :mod:`~pavlov.claims` (the ledger of checked claims) and :mod:`~pavlov.book`
(what the book ships about itself). :mod:`~pavlov.plotting`
(the figure style) is imported on its own, so computation never loads matplotlib.
"""

__version__ = "0.1.0"

from . import (attention, batched, book, channel, claims, conditioning, drift, facts, hopfield, induction, maps, mqar,
               phenomena, rules, stacking, stats, stimuli, stores, theory, timing)
from .runtime import by_scale, default_device, generator, progress, run_info, scale, setup
from .stimuli import random_stimuli

__all__ = ["attention", "batched", "book", "by_scale", "channel", "claims", "conditioning", "default_device", "drift",
           "facts", "generator", "hopfield", "induction", "maps", "mqar", "phenomena", "progress", "random_stimuli", "rules", "run_info", "scale", "setup", "stacking",
           "stats", "stimuli", "stores", "theory", "timing"]
