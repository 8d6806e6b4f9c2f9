"""Closed-form predictions, derived in the chapters.

This module never imports the code that measures (``conditioning``, ``attention``, ``stimuli``):
a prediction computed by the code it checks proves nothing. Sections follow the chapters.
"""

from __future__ import annotations

import math

from . import _validate
