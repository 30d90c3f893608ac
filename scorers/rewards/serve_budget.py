"""``ts2 serve``'s budgets: a count of units (decoded pixels, bytes of bodies being parsed) held at once across
requests, admitted first in, first out, with a bounded wait.

One :class:`Budget` lives in one replica's event loop (no lock). :meth:`Budget.request` is the synchronous core: a
:class:`Ticket` that is granted at once when nothing waits ahead of it and its amount fits, else queued. A release
(or a shrink) admits the queue from its head while the head fits, and never lets a later request pass an earlier
one: a large request that fits the budget is served once what is ahead of it is done, however many small requests
keep arriving behind it. :meth:`Budget.acquire` awaits a ticket for at most ``wait_s`` seconds (503 with
``Retry-After`` after); a request larger than the whole budget is a 413 at once. ``held`` is always the sum of the
granted tickets not yet released: a ticket gives back only what it was granted, once."""
from __future__ import annotations

import asyncio
from collections import deque

from scorers.rewards.serve_checks import RequestError

__all__ = ["RETRY_AFTER_S", "Budget", "Ticket"]

#: how long a client is told to wait (``Retry-After``, seconds) when a budget stayed full past the admission wait
RETRY_AFTER_S = 1


class Ticket:
    """One request's share of a :class:`Budget`: ``amount``, ``granted`` (holding it) or waiting in the queue, until
    :meth:`release` (idempotent: gives back what was granted, or leaves the queue)."""

    __slots__ = ("budget", "amount", "granted", "done", "future")

    def __init__(self, budget: "Budget", amount: int):
        self.budget, self.amount, self.granted, self.done, self.future = budget, amount, False, False, None

    def release(self) -> None:
        self.budget._release(self)

    def shrink(self, amount: int) -> None:
        """Hold ``amount`` from now on (at most what is held: a resized image gives back what the full-size one
        needed)."""
        self.budget._shrink(self, amount)


class Budget:
    """``total`` units held at once (``what``: how a message names them, e.g. ``decoded pixels``)."""

    def __init__(self, total: int, what: str = "decoded pixels"):
        self.total, self.what = int(total), what
        self.held = self.peak = 0
        self.queue: deque[Ticket] = deque()

    # --- the synchronous core -------------------------------------------------------------------------------------
    def request(self, amount: int) -> Ticket:
        """A ticket for ``amount``: granted when nothing waits and it fits, else queued; :class:`RequestError` 413
        for more than the whole budget."""
        amount = int(amount)
        if amount > self.total:
            raise RequestError(413, f"the request needs {amount:,} {self.what}; the service's whole budget is "
                                    f"{self.total:,}")
        ticket = Ticket(self, max(0, amount))
        if not self.queue and self.held + ticket.amount <= self.total:
            self._grant(ticket)
        else:
            self.queue.append(ticket)
        return ticket

    def _grant(self, ticket: Ticket) -> None:
        ticket.granted = True
        self.held += ticket.amount
        self.peak = max(self.peak, self.held)
        if ticket.future is not None and not ticket.future.done():
            ticket.future.set_result(None)

    def _admit(self) -> None:
        while self.queue and self.held + self.queue[0].amount <= self.total:
            self._grant(self.queue.popleft())

    def _release(self, ticket: Ticket) -> None:
        if ticket.done:
            return
        ticket.done = True
        if ticket.granted:
            self.held -= ticket.amount
        else:
            self.queue.remove(ticket)
        self._admit()

    def _shrink(self, ticket: Ticket, amount: int) -> None:
        if ticket.done or not ticket.granted:
            raise ValueError("shrink: the ticket is not held")
        amount = max(0, min(int(amount), ticket.amount))
        self.held -= ticket.amount - amount
        ticket.amount = amount
        self._admit()

    # --- the service's side ---------------------------------------------------------------------------------------
    async def acquire(self, amount: int, wait_s: float) -> Ticket:
        """A granted ticket for ``amount``, waiting first in, first out for at most ``wait_s`` seconds: 503 with
        ``Retry-After`` after that, 413 for more than the whole budget. A cancelled wait (the client left) leaves the
        queue."""
        ticket = self.request(amount)
        if ticket.granted:
            return ticket
        ticket.future = asyncio.get_running_loop().create_future()
        try:
            await asyncio.wait_for(asyncio.shield(ticket.future), wait_s)
        except asyncio.TimeoutError:
            if not ticket.granted:  # granted in the very moment the wait ran out: keep it
                ticket.release()
                raise RequestError(503, f"busy: {self.held:,} of {self.total:,} {self.what} are in use and "
                                        f"{len(self.queue)} requests wait; retry in {RETRY_AFTER_S} s",
                                   {"Retry-After": str(RETRY_AFTER_S)}) from None
        except BaseException:
            ticket.release()
            raise
        return ticket
