"""``ts2 serve``'s budgets (:mod:`scorers.rewards.serve_budget`), without Ray: ``held`` is the sum of the live
requests' grants whatever the interleaving of acquires, refusals and releases (a refused request used to give back
pixels it never took, and every 503 reset the count); admission is first in, first out, so a large request
that fits is not starved by small ones; the wait is bounded (503 + Retry-After after it)."""
from __future__ import annotations

import asyncio
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scorers.rewards.serve_budget import Budget
from scorers.rewards.serve_checks import RequestError


def test_a_full_budget_is_a_503_with_retry_after_after_the_wait_and_413_above_the_whole():
    async def scenario():
        budget = Budget(100)
        first = await budget.acquire(60, 1.0)
        with pytest.raises(RequestError) as full:
            await budget.acquire(41, 0.05)
        assert full.value.status == 503 and full.value.headers == {"Retry-After": "1"}
        assert budget.held == 60 and not budget.queue  # the refused request took nothing and gave nothing back
        second = await budget.acquire(40, 0)  # exactly full
        first.release()
        first.release()  # a second release gives nothing back
        assert budget.held == 40
        second.release()
        assert budget.held == 0 and budget.peak == 100
        with pytest.raises(RequestError) as whole:
            await budget.acquire(101, 1.0)
        assert whole.value.status == 413 and "whole budget is 100" in whole.value.message

    asyncio.run(asyncio.wait_for(scenario(), 30))


# one operation: ("acquire", amount) | ("release", index of a live ticket) | ("shrink", index, fraction)
_OPERATIONS = st.lists(st.one_of(
    st.tuples(st.just("acquire"), st.integers(0, 120)),
    st.tuples(st.just("release"), st.integers(0, 50)),
    st.tuples(st.just("shrink"), st.integers(0, 50), st.floats(0, 1))), max_size=60)


@settings(max_examples=100, deadline=None)
@given(total=st.integers(1, 100), operations=_OPERATIONS)
def test_held_is_always_the_sum_of_the_live_grants(total, operations):
    """Random interleavings of acquire (granted or queued), refuse (a queued request leaving: its wait ran out),
    release and shrink, against a reference kept here: the granted tickets and their amounts."""
    budget = Budget(total)
    live, arrival = [], {}
    for operation in operations:
        if operation[0] == "acquire":
            amount = operation[1]
            try:
                ticket = budget.request(amount)
            except RequestError as error:
                assert error.status == 413 and amount > total
                continue
            arrival[ticket] = len(arrival)
            live.append(ticket)
        elif live and operation[0] == "release":
            live.pop(operation[1] % len(live)).release()  # a queued one leaving is a refusal
        elif live and operation[0] == "shrink":
            ticket = live[operation[1] % len(live)]
            if ticket.granted:
                ticket.shrink(int(ticket.amount * operation[2]))
        grants = [t for t in live if t.granted]
        waiting = [t for t in live if not t.granted]
        assert budget.held == sum(t.amount for t in grants) <= total
        assert budget.peak <= total
        assert list(budget.queue) == sorted(waiting, key=lambda t: arrival[t])  # the rest wait, in order
        if budget.queue:  # nobody waits who could be let in, and nobody who came later passed a waiting one
            assert budget.held + budget.queue[0].amount > total
            assert all(arrival[t] < arrival[budget.queue[0]] for t in grants)
    for ticket in live:
        ticket.release()
    assert budget.held == 0 and not budget.queue


def test_a_large_request_that_fits_is_not_starved_by_small_ones():
    """The fairness case: a 1 MP budget, 8 loops of small requests (0.1 MP each, held a moment), and one
    0.95 MP request: it is served within its wait, and the small requests that came after it wait for it."""
    async def scenario():
        budget, stop, served = Budget(1_000_000), asyncio.Event(), []
        rng = random.Random(0)

        async def small_loop():
            while not stop.is_set():
                ticket = await budget.acquire(100_000, 30)
                await asyncio.sleep(rng.uniform(0.001, 0.01))
                ticket.release()
                await asyncio.sleep(0)

        loops = [asyncio.ensure_future(small_loop()) for _ in range(8)]
        await asyncio.sleep(0.05)
        for _ in range(5):
            ticket = await budget.acquire(950_000, 5.0)  # a 503 here is the starvation
            served.append(budget.held)
            ticket.release()
            await asyncio.sleep(0.02)
        stop.set()
        await asyncio.gather(*loops)
        return served, budget

    served, budget = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert served == [950_000] * 5  # it held the budget alone: the small ones behind it waited
    assert budget.held == 0 and budget.peak <= 1_000_000


def test_a_cancelled_wait_leaves_the_queue():
    async def scenario():
        budget = Budget(10)
        holder = await budget.acquire(10, 0)
        waiter = asyncio.ensure_future(budget.acquire(5, 30))
        await asyncio.sleep(0.01)
        assert len(budget.queue) == 1
        waiter.cancel()  # the client went away
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert not budget.queue and budget.held == 10
        holder.release()
        assert budget.held == 0

    asyncio.run(asyncio.wait_for(scenario(), 30))
