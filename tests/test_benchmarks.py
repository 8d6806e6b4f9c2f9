"""The benchmark suite at its tiny size: the records' schema, positive finite timings, peers that agree with ours.

The suite runs once, as ``make bench`` runs it (``python -m benchmarks.run``), into a temporary folder.
"""

from __future__ import annotations

import doctest
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import peers, run
from benchmarks.peers import OPERATIONS
from tools.ceilings import SUBPROCESS_S

ROOT = Path(__file__).resolve().parents[1]

# Every peer computes the package's function in float32 (fla's references compute in float32
# whatever their inputs). At the tiny size an output or gradient entry sums at most T * d = 64 * 16
# = 1024 products, through a few more products for the delta rules' triangular solve, so by the
# standard bound n u / (1 - n u) (u = 2**-24) each side's rounding error is below about
# 1024 * 6e-8 = 6e-5 of the magnitudes summed, and the rms error far below; random inputs keep the
# outputs well conditioned (measured: 3e-7). A missing or misplaced term is an error of order 1.
AGREE = 1e-4


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The folder the tiny suite wrote, its records and its machine description."""
    out = tmp_path_factory.mktemp("bench")
    subprocess.run([sys.executable, "-m", "benchmarks.run", "--size", "tiny", "--out", str(out)], cwd=ROOT,
                   check=True, capture_output=True, text=True, timeout=SUBPROCESS_S)
    return out, json.loads((out / "results.json").read_text()), json.loads((out / "machine.json").read_text())


def rule_records(records):
    return [r for r in records if "/chunk/" in r["name"]]


def positive_finite(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


def test_every_record_has_every_field(tiny):
    _, records, _ = tiny
    assert isinstance(records, list) and records
    for r in records:
        assert tuple(r) == run.FIELDS, r["name"]
        assert re.fullmatch(r"[a-z_]+/[a-z]+/(fwd|fwdbwd)", r["name"]), r["name"]
        assert isinstance(r["shape"], dict) and r["shape"]


def test_every_operation_pass_and_peer_is_recorded(tiny):
    _, records, _ = tiny
    size = run.SIZES["tiny"]
    found = {(r["name"], r["shape"]["T"], r["shape"]["d_k"], r["peer"]) for r in rule_records(records)}
    expected = {(f"{name}/chunk/{p}", t, d, peer.name) for name, op in OPERATIONS.items() for p in run.PASSES
                for t in size.lengths for d in size.dims for peer in op.peers}
    assert found == expected
    assert len(rule_records(records)) == len(expected)
    stores = [r for r in records if r["name"] == "softmax_store/stream/fwd"]
    assert sorted(r["shape"]["n"] for r in stores) == sorted(size.memories)
    assert any(r["name"].startswith("matmul/") for r in records)


def test_timings_ratios_and_rates_are_positive_and_finite(tiny):
    _, records, _ = tiny
    roof = {r["roofline_gflops"] for r in records}
    assert len(roof) == 1 and positive_finite(roof.pop()), "one roofline for the whole run"
    for r in records:
        for field in ("time_s", "gflops", "roofline_fraction"):
            assert positive_finite(r[field]), (r["name"], r["peer"], field, r[field])
    for r in rule_records(records):       # at the tiny size every peer runs
        assert r["note"] is None, r["note"]
        for field in ("peer_time_s", "ratio"):
            assert positive_finite(r[field]), (r["name"], r["peer"], field, r[field])
        assert r["ratio"] == pytest.approx(r["peer_time_s"] / r["time_s"])
    best = max(r["gflops"] for r in records if r["name"].startswith("matmul/"))
    assert records[0]["roofline_gflops"] == best


def test_peers_compute_the_packages_function(tiny):
    _, records, _ = tiny
    for r in rule_records(records):
        assert 0 <= r["max_rel_err"] <= AGREE, (r["name"], r["peer"], r["max_rel_err"])


def test_softmax_store_records_throughput_and_memory(tiny):
    _, records, _ = tiny
    for r in (r for r in records if r["name"].startswith("softmax_store/")):
        n, m, d_k, d_v = (r["shape"][key] for key in ("n", "m", "d_k", "d_v"))
        assert r["throughput_per_s"] == pytest.approx(n * m / r["time_s"])
        assert r["gflops"] == pytest.approx(2 * n * m * (d_k + d_v) / r["time_s"] / 1e9)
        assert r["kv_bytes"] == n * (d_k + d_v) * 4
        # A read holds at least its [m, n] logits (16 MiB, one chunk: n is the chunk length here). The
        # resident size also moves by the allocators' own releases (Python's 256 KiB arenas, glibc's
        # heap trims: measured a few hundred KiB), hence 1 MiB of slack.
        assert isinstance(r["peak_mem_bytes"], int) and r["peak_mem_bytes"] >= m * n * 4 - 2**20


def test_results_md_and_machine_are_written(tiny):
    out, records, info = tiny
    text = (out / "RESULTS.md").read_text()
    assert text.startswith("# Benchmark results")
    for key in ("device", "threads", "torch", "date"):
        assert str(info[key]) in text
    for r in records:
        assert r["name"] in text and (r["peer"] is None or r["peer"] in text)


def test_chunk_flops_count_the_documented_products():
    c, d_k, d_v = 64, 32, 16
    linear = 2 * c * c * d_k + 2 * c * c * d_v + 3 * 2 * c * d_k * d_v - 2 * c * d_k * d_v   # QK^T, AV, QS, K^TU
    delta = linear + 2 * c * c * d_k + c * (c - 1) * (d_v + d_k) + 2 * c * c * d_k + 2 * c * d_k * d_v
    assert run.chunk_flops(OPERATIONS["decay"], 3, 2 * c, d_k, d_v, c) == 3 * 2 * linear
    assert run.chunk_flops(OPERATIONS["gated_delta"], 3, 2 * c - 1, d_k, d_v, c) == 3 * 2 * delta


def test_references_load_without_importing_fla():
    fn = peers.fla_reference("gated_delta_rule", "naive_chunk_gated_delta_rule")
    assert callable(fn)
    assert "fla" not in sys.modules and "triton" not in sys.modules


@pytest.mark.parametrize("module", [peers, run], ids=["peers", "run"])
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0
