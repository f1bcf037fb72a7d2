"""The views of a person's data this process audited lately (issue 39).

tRPC byRiskItem shows an item's people, so it writes an audit row of the view
(`dashboard.view_risk_item`). A client that polls an item would write one every few seconds,
each a write transaction on the read path; one row per session, item and minute says the same
(who saw whose data, and when) at the price of a read: a view seen again within the minute is
answered by `dashboard.risk_item_emissions` alone. Each API process keeps its own memory, so a
session polling through several processes writes at most one row a minute in each.
"""
from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable

WINDOW_SECONDS = 60.0
MAX_KEYS = 4096  # the oldest are forgotten first: at worst a view is audited again


class RecentViews:
    def __init__(self, window: float = WINDOW_SECONDS, size: int = MAX_KEYS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.window, self.size, self.clock = window, size, clock
        self._audited: OrderedDict[Hashable, float] = OrderedDict()

    def audited_lately(self, key: Hashable) -> bool:
        """True when this view was audited within the window: no new row is needed."""
        at = self._audited.get(key)
        return at is not None and self.clock() - at < self.window

    def audited(self, key: Hashable) -> None:
        """Note that this view's row was written just now (after the call that wrote it)."""
        self._audited[key] = self.clock()
        self._audited.move_to_end(key)
        while len(self._audited) > self.size:
            self._audited.popitem(last=False)
