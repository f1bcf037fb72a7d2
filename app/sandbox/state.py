"""Everything the sandbox remembers, in memory: requests, faults, what was issued, tokens."""
from __future__ import annotations

import collections
import itertools
from typing import Any

from app.sandbox.faults import Fault

MAX_RECORDS = 50_000

Answer = tuple[int, Any, dict[str, str]]


class State:
    def __init__(self) -> None:
        self.seq = itertools.count(1)
        self.tokens: dict[str, dict[str, float]] = collections.defaultdict(dict)  # idp -> token -> expiry
        self.tokens_issued: collections.Counter = collections.Counter()           # idp -> tokens issued
        self.reset()

    def reset(self) -> None:
        self.records: collections.deque[dict[str, Any]] = collections.deque(maxlen=MAX_RECORDS)
        self.requests = collections.Counter()
        self.faults: dict[str, collections.deque[Fault]] = collections.defaultdict(collections.deque)
        self.issued: dict[str, dict[str, Answer]] = collections.defaultdict(dict)  # provider -> key -> answer
        self.numbers = collections.Counter()
        self.in_flight: collections.Counter = collections.Counter()   # (provider, key) -> requests now
        self.max_in_flight: collections.Counter = collections.Counter()  # provider -> most for one key

    def enter(self, provider: str, key: str | None) -> tuple[str, str | None]:
        if key:
            self.in_flight[(provider, key)] += 1
            self.max_in_flight[provider] = max(self.max_in_flight[provider], self.in_flight[(provider, key)])
        return provider, key

    def leave(self, entry: tuple[str, str | None]) -> None:
        if entry[1]:
            self.in_flight[entry] -= 1
            if self.in_flight[entry] <= 0:
                del self.in_flight[entry]

    def take_fault(self, provider: str) -> Fault | None:
        queue = self.faults.get(provider)
        if not queue:
            return None
        fault = queue[0]
        fault.count -= 1
        if fault.count <= 0:
            queue.popleft()
        return fault

    def next_number(self, prefix: str) -> int:
        self.numbers[prefix] += 1
        return self.numbers[prefix]
