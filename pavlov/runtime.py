"""Where and how large the book's computations run: device, scale and seeding.

* :func:`default_device` picks CUDA, then Apple MPS, then the CPU.
* :func:`scale` reads the one switch ``PAVLOV_SCALE`` (``quick`` or ``full``; by default ``full`` on a
  GPU and ``quick`` elsewhere) and :func:`by_scale` picks a size by it, so no notebook hard-codes a
  size for one machine.
* :func:`progress` shows a progress bar over a long loop.
* :func:`resources` reports the time since :func:`setup` and the peak host and device memory of the run.
* :func:`generator` makes an explicit, seeded ``torch.Generator``; the package never touches the
  global random state. ``PAVLOV_SEED`` (default 0) is mixed into every seed, so a whole chapter can
  be rerun on other random draws without editing it (:func:`seed_for`).
"""

from __future__ import annotations

import os
import platform
import re
import sys
import time
import warnings
from pathlib import Path

import torch

from . import _validate

SCALES = ("quick", "full")


def default_device() -> torch.device:
    """The best available device: CUDA, then Apple MPS, then the CPU."""
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def scale() -> str:
    """The experiment scale: ``PAVLOV_SCALE`` if set, else ``full`` on a GPU and ``quick`` elsewhere.

    An unknown ``PAVLOV_SCALE`` is reported in a warning and replaced by the default, so a chapter
    still runs.

    >>> scale() in ("quick", "full")
    True
    """
    default = "full" if default_device().type != "cpu" else "quick"
    value = os.environ.get("PAVLOV_SCALE", "").strip().lower()
    if not value:
        return default
    if value not in SCALES:
        warnings.warn(f"PAVLOV_SCALE must be one of {', '.join(SCALES)}; got {os.environ['PAVLOV_SCALE']!r}, "
                      f"so the {default!r} scale is used", stacklevel=2)
        return default
    return value


def by_scale(*, quick, full):
    """Return ``quick`` or ``full`` according to :func:`scale`.

    >>> n_trials = by_scale(quick=200, full=10_000)
    """
    return full if scale() == "full" else quick


def progress(iterable, *, desc: str | None = None, total: int | None = None):
    """``iterable`` with a progress bar (``tqdm.auto``), unless ``PAVLOV_PROGRESS=0`` or ``CI`` is set.

    Every loop that can take more than a few seconds is wrapped in it, so a reader running a chapter
    (on a GPU at the full scale, or on a CPU at the quick scale) sees how far it got; the book's build
    and its tests set ``PAVLOV_PROGRESS=0`` and print nothing.

    >>> list(progress(range(3), desc="trials"))
    [0, 1, 2]
    """
    if os.environ.get("PAVLOV_PROGRESS", "").strip().lower() in ("0", "off", "false", "no") or os.environ.get("CI"):
        return iterable
    try:
        from tqdm.auto import tqdm
    except ImportError:      # an optional nicety: without tqdm the loop runs without a bar
        warnings.warn("tqdm is not installed, so long loops show no progress bar (pip install tqdm)", stacklevel=2)
        return iterable
    return tqdm(iterable, desc=desc, total=total, leave=False)


def _check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    if not 0 <= seed < 2**64:
        raise ValueError(f"seed must be in [0, 2**64), got {seed}")
    return seed


def device_of(device) -> torch.device:
    """``device`` as a ``torch.device`` (default: :func:`default_device`), with an error that names it."""
    if device is None:
        return default_device()
    try:
        return torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise ValueError(f"device must name a torch device ('cpu', 'cuda', 'cuda:0', 'mps'), got {device!r}") from None


def seed_for(seed: int) -> int:
    """The seed actually used for ``seed``: ``seed`` itself, or mixed with ``PAVLOV_SEED`` when that is set.

    >>> seed_for(7) == 7 or "PAVLOV_SEED" in os.environ
    True
    """
    value = _check_seed(seed)
    text = os.environ.get("PAVLOV_SEED", "").strip()
    if not text:
        return value
    try:
        offset = int(text)
    except ValueError:
        raise ValueError(f"PAVLOV_SEED must be a non-negative integer; got {text!r}") from None
    if offset < 0:
        raise ValueError(f"PAVLOV_SEED must be a non-negative integer; got {text!r}")
    # distinct offsets move every seed to a different, well-separated stream (a golden-ratio multiple)
    return (value + offset * 0x9E3779B97F4A7C15) % 2**64


def generator(seed: int, device: torch.device | str | None = None) -> torch.Generator:
    """A ``torch.Generator`` on ``device`` (default: :func:`default_device`) seeded with :func:`seed_for` of ``seed``."""
    mixed = seed_for(seed)
    device = device_of(device)
    return torch.Generator(device=device).manual_seed(mixed)


def seed_or_fresh(seed: int | None) -> int:
    """``seed`` itself, or a fresh random seed when it is ``None`` (return it, so the run can be repeated)."""
    return int.from_bytes(os.urandom(4), "little") if seed is None else _check_seed(seed)


def resolve(device=None, dtype=None) -> tuple[torch.device, torch.dtype]:
    """Fill in a missing device (:func:`default_device`) or dtype (float32) and check the dtype."""
    device = device_of(device)
    dtype = torch.float32 if dtype is None else dtype
    if dtype not in _validate.FLOAT_DTYPES:
        raise TypeError(f"dtype must be a floating dtype, got {dtype}")
    return device, dtype


BOOK = "PAVLOV_BOOK"
"""The environment variable that ``make book`` sets while it executes the chapters for the built pages."""


def building_book() -> bool:
    """Whether the chapters are being executed for the built book (:data:`BOOK` set)."""
    return bool(os.environ.get(BOOK))


def device_name(device: torch.device | str | None = None) -> str:
    """The hardware behind ``device`` (default :func:`default_device`): ``"cuda: Tesla T4"``, ``"cpu: AMD EPYC"``.

    >>> device_name("cpu").startswith("cpu: ")
    True
    """
    device = device_of(device)
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
    else:
        cpuinfo = Path("/proc/cpuinfo")
        found = re.search(r"model name\s*:\s*(.+)", cpuinfo.read_text(encoding="utf-8") if cpuinfo.exists() else "")
        name = found.group(1).strip() if found else (platform.processor() or platform.machine())
    return f"{device.type}: {name}"


def run_info() -> dict:
    """The package version, device, scale and software versions of this run."""
    from . import __version__

    return {
        "pavlov": __version__,
        "device": str(default_device()),
        "scale": scale(),
        "torch": torch.__version__,
        "python": platform.python_version(),
    }


_started = time.perf_counter()


def setup() -> None:
    """Print :func:`run_info` on one line, and start the clock of :func:`resources`; every chapter calls this in
    its first code cell."""
    global _started
    _started = time.perf_counter()
    print("  ".join(f"{k}: {v}" for k, v in run_info().items()))


def resources() -> dict:
    """What this run has used so far: ``seconds`` since :func:`setup` (or since the package was imported),
    ``host_bytes``, the process's peak resident memory (None where the platform does not report it), and
    ``device_bytes``, the peak memory torch has allocated on the CUDA device (None off CUDA).

    >>> used = resources()
    >>> used["seconds"] >= 0 and (used["host_bytes"] is None or used["host_bytes"] > 0)
    True
    """
    device = default_device()
    peak = torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None
    return {"seconds": time.perf_counter() - _started, "host_bytes": _peak_resident_bytes(), "device_bytes": peak}


def _peak_resident_bytes() -> int | None:
    """The process's peak resident memory: Linux's ``VmHWM``, which starts afresh with the program, since
    ``getrusage``'s ``ru_maxrss`` keeps, across ``exec``, the peak of the process that started it (a kernel started by
    a large test process would report that process's size); elsewhere ``ru_maxrss``; None where neither exists."""
    status = Path("/proc/self/status")
    found = re.search(r"^VmHWM:\s*(\d+) kB", status.read_text(encoding="utf-8"), re.M) if status.is_file() else None
    if found:
        return int(found.group(1)) * 1024
    try:
        import resource
    except ImportError:           # Windows: no getrusage
        return None
    # ru_maxrss is in KiB on Linux, in bytes on macOS
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)


def keep_freed_memory() -> bool:
    """Ask the C allocator (glibc's, on Linux) to keep the memory a CPU computation frees for its next tensors of that
    size, instead of handing it back to the system and taking it again, page by page, a step later; True where it
    could. A training loop that frees and remakes megabytes of activations every step spends, on a virtual machine,
    a tenth of its time in those page faults. Nothing computed changes: only where tensors live. Peak memory is as
    before; the process keeps it until it ends.
    """
    if not sys.platform.startswith("linux"):
        return False
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):      # not glibc (musl has no mallopt)
        return False
    trim_threshold, top_pad, mmap_threshold = -1, -2, -3      # glibc's M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD
    # blocks up to 32 MiB (glibc's largest such threshold) from the heap, which grows 256 MiB at a time and is never
    # trimmed
    return all(mallopt(option, value) for option, value in
               ((mmap_threshold, 32 << 20), (top_pad, 256 << 20), (trim_threshold, 1 << 30)))
