"""The op tally behind the GPU page's T4 estimates (tools/work.py): it counts what it should, op by op."""

import time

import pytest
import torch

from tools.work import Machine, Work, t4

PLAIN = Machine("plain", {"float32": 1e9, "float64": 5e8}, 1e9, 1e-6)


def tally(fn):
    with Work([PLAIN]) as work:
        fn()
    return work.totals


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_product_is_counted_exactly(dtype):
    a, b = torch.randn(30, 40, dtype=dtype), torch.randn(40, 50, dtype=dtype)
    totals = tally(lambda: a @ b)
    size = a.element_size()
    assert totals["ops"] == 1 and totals["flops"] == 2 * 30 * 40 * 50
    assert totals["bytes"] == size * (30 * 40 + 40 * 50 + 30 * 50)
    # the arithmetic dominates at this machine's rates, at its rate for the dtype
    assert totals["plain"] == pytest.approx(totals["flops"] / PLAIN.flops[str(dtype)[6:]])


def test_a_view_moves_nothing_and_a_broadcast_counts_its_distinct_elements():
    x = torch.randn(100, 100)
    assert tally(lambda: x.t())["bytes"] == 0
    row = torch.randn(1, 100).expand(100, 100)  # 100 distinct numbers shown 10,000 times
    totals = tally(lambda: row + 1)
    assert totals["flops"] == 0 and totals["bytes"] == 4 * (100 + 100 * 100)


def test_each_op_costs_at_least_the_overhead_and_the_largest_of_its_terms():
    machine = Machine("m", {"float32": 1e9}, 1e8, 1e-5)
    assert machine.seconds(0, torch.float32, 0) == 1e-5
    assert machine.seconds(1e6, torch.float32, 1e3) == pytest.approx(1e-3)
    assert machine.seconds(1e3, torch.float32, 1e6) == pytest.approx(1e-2)
    assert machine.seconds(1e6, torch.int64, 0) == pytest.approx(1e-3)  # other dtypes at float32's rate
    # the T4 pays for double precision: a product in float64 at 1/32 of float32's rate
    gpu = t4(overhead=0.0)
    assert gpu.seconds(1e12, torch.float64, 0) == pytest.approx(32 * gpu.seconds(1e12, torch.float32, 0))


def test_an_extrapolated_run_counts_its_repetitions_in_full_and_its_setup_once():
    x = torch.randn(20, 20)

    def run(steps):
        x @ x, time.sleep(0.1)  # set up once
        for _ in range(steps):
            x.sum(), time.sleep(0.02)
        return steps

    once, step = tally(lambda: x @ x), tally(lambda: x.sum())
    with Work([PLAIN]) as work:
        assert work.extrapolated(run, short=2, long=4, total=20) == 4
    for key in ("ops", "flops", "bytes", "plain"):
        assert work.totals[key] == pytest.approx(once[key] + 20 * step[key])
    assert 0.45 < work.wall() < 0.75  # the 0.1 s set-up once and 20 steps of 0.02 s
    with pytest.raises(ValueError, match="short < long"):
        work.extrapolated(run, short=4, long=4, total=20)


def test_each_op_is_estimated_as_far_from_the_other_machines_roofline_as_it_ran_from_the_first():
    x = torch.randn(1000, 1000)
    twice = PLAIN._replace(name="twice", flops={"float32": 2e9}, bandwidth=2e9, overhead=0.5e-6)
    issuing = PLAIN._replace(name="issuing", flops={"float32": 1e15}, bandwidth=1e15)  # the same overhead
    with Work([PLAIN, twice, issuing]) as work:
        x @ x, x.sum(), x[:1].neg()
    # every op's roofline halves on a machine twice as fast in every rate
    assert work.totals["twice, estimated"] == pytest.approx(work.totals["measured"] / 2)
    # the tiny negation costs both machines their one overhead; the large ops shrink to nothing
    assert 0 < work.totals["issuing, estimated"] < work.totals["measured"] / 10
    assert "plain, estimated" not in work.totals


def test_backward_ops_are_counted_too():
    w = torch.randn(10, 10, requires_grad=True)
    forward = tally(lambda: (w @ w).sum())
    both = tally(lambda: (w @ w).sum().backward())
    # the backward pass of a product is two products
    assert both["flops"] == pytest.approx(3 * forward["flops"])


def test_remeasured_rates_charge_later_ops_and_their_time_is_left_out():
    x = torch.randn(20, 20)
    slower = PLAIN._replace(flops={"float32": 0.5e9})  # half the rate, under the same name
    work = Work([PLAIN])
    with work:
        x @ x
    once = work.totals["plain"]
    with work:  # measured while tallying: the measurement's own product is not counted
        work.remeasure(lambda: (time.sleep(0.3), x @ x, [slower])[2])
        x @ x
    assert work.totals["ops"] == 2
    assert work.totals["plain"] == pytest.approx(3 * once)  # the second product at half the rate
    assert work.wall() < 0.25  # the 0.3 s spent measuring is not the run's
    with pytest.raises(ValueError, match="measure must return machines named"):
        work.remeasure(lambda: [slower._replace(name="other")])
