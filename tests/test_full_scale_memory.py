"""Every chapter's largest full-scale measurement over trials holds memory that does not grow with the trials.

Each case below is the largest configuration of a chapter at the full scale (its key dimension and number
of memories, as the chapter sets them), run in a fresh process at two numbers of trials nine to twenty times
apart. The measurements draw and read their trials in blocks (:func:`pavlov.stores.trial_blocks`: at most
:data:`pavlov.stores.MEMORY_ELEMENTS` key and value entries for :func:`pavlov.stores.measure_isr` and
:func:`pavlov.stacking.head_margins`, :data:`pavlov.stores.CHUNK_ELEMENTS` for the channel's reads and for each
hop of the chains), so the peak resident memory may grow only by the per-trial results they return. To keep
the runs small enough for CI, the cases set MEMORY_ELEMENTS to 2^22 entries: a block of the full-scale sizes,
with fewer trials in it.

Each case states what one trial's memories take, so what the larger run would add if it held all its trials
at once (``unblocked``, at least 250 MiB); the test allows a quarter of that, so it tells blocks from no
blocks. The chapters not listed hold no per-trial memory of that size: chapter 2 times fixed-size calls,
chapter 9 trains fixed models (its memory grows with the batch, not the seeds), and chapters 1, 7 and 8 keep
every trial's stimuli, under 1 GiB at the full scale (chapter 7 runs its decay rule on blocks of trials,
:func:`pavlov.drift.isr_by_age`). ``python -m tools.full_scale`` measures every chapter's peak at the full
scale, and the GPU page lists them.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest

MIB = 2**20
FLOAT32, FLOAT64 = 4, 8

# chapter: (the call, with {trials}; few; many; the bytes of one trial's memories, which blocks do not keep)
CASES = {
    # the widest ISR sweep: d = n = 512, 1024 trials at the full scale
    "ch3": ('stores.measure_isr("hebbian", 512, 512, trials={trials}, seed=0, device="cpu")',
            8, 136, 512 * 1024 * FLOAT32),
    # the polynomial store's capacity at d = 64: 23,937 memories, 512 trials
    "ch4": (('stores.measure_isr("polynomial", 64, 23937, trials={trials}, n_queries=64, degree=3, seed=0, '
             'device="cpu")'), 2, 24, 23937 * 128 * FLOAT32),
    # the softmax store's capacity at d = 32: 15,367 memories, 512 trials (the chapter's largest stores, 2^22
    # memories at d = 64 in 8 trials, take 2 GiB each and are drawn by the same blocks, one at a time)
    "ch5": (('stores.measure_isr("softmax", 32, 15367, trials={trials}, n_queries=64, beta=32 ** 0.5, seed=0, '
             'device="cpu")'), 4, 72, 15367 * 64 * FLOAT32),
    # noisy cues of 4096 memories at d = 32 in float64, 1000 trials
    "ch10": (('stores.measure_isr("softmax", 32, 4096, trials={trials}, n_queries=16, query_noise=0.5, '
              'beta=32 ** 0.5, seed=0, device="cpu", dtype=torch.float64)'), 16, 256, 4096 * 64 * FLOAT64),
    # one head's margins at n = 32, d_k = 16: 1,600,000 trials
    "ch6 margins": ('stacking.head_margins(32, 16, trials={trials}, seed=0, device="cpu")', 4096, 80000,
                    2 * 32 * 16 * FLOAT32),
    # two million chains of one layer of two heads, n = 4, d_k = 8
    "ch6": ('stacking.measure_chain(4, 8, heads=2, layers=1, trials={trials}, seed=0, device="cpu")',
            32768, 600000, 2 * 2 * 4 * 8 * FLOAT32),
    # the delta rule's information at n = 512 (its 512 x 512 read per trial) and the codebook's decoding
    "ch12": (('channel.measure_bits("delta", 32, 512, trials={trials}, beta=0.25, seed=0, device="cpu", '
              'dtype=torch.float64)'), 16, 144, 512 * 512 * FLOAT64),
    "ch12 codebook": (('channel.decode_codebook("hebbian", 32, 65, codebook_bits=12, trials={trials}, d_value=8, '
                       'seed=0, device="cpu", dtype=torch.float64)'), 15, 150, 65 * 2**12 * FLOAT64),
}

SCRIPT = """
import resource, sys, torch
from pavlov import channel, stacking, stores
torch.set_num_threads(1)
stores.MEMORY_ELEMENTS = 2**22
{call}
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def peak_bytes(call: str) -> int:
    """The peak resident memory of a fresh process that makes ``call``."""
    # glibc keeps freed blocks of a size it has seen mmapped in its heap (its threshold moves up), so the peak
    # RSS can jump with the allocator's history; a fixed threshold returns every large block, and the peak
    # measures the memory the computation holds
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536"}
    done = subprocess.run([sys.executable, "-c", SCRIPT.format(call=call)], capture_output=True, text=True,
                          check=True, env=env)
    return int(done.stdout.split()[-1]) * 1024            # ru_maxrss is in KiB on Linux


@pytest.mark.skipif(not hasattr(resource, "getrusage") or sys.platform != "linux", reason="needs Linux's ru_maxrss")
@pytest.mark.parametrize("chapter", CASES)
def test_memory_does_not_grow_with_the_trials(chapter):
    call, few, many, per_trial = CASES[chapter]
    unblocked = (many - few) * per_trial
    assert unblocked >= 250 * MIB                         # the test can tell blocks from no blocks
    grown = peak_bytes(call.format(trials=many)) - peak_bytes(call.format(trials=few))
    assert grown < unblocked / 4, (f"{many} trials took {grown / MIB:.0f} MiB more than {few}; "
                                   f"all at once they would take {unblocked / MIB:.0f} MiB more")
