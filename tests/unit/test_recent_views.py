"""RecentViews: a view audited within the window needs no new row; the oldest are forgotten first."""
from __future__ import annotations

from app.dashboard.recent_views import RecentViews


def test_a_view_is_fresh_for_the_window_only():
    now = [0.0]
    views = RecentViews(window=60, clock=lambda: now[0])
    assert not views.audited_lately("a")
    views.audited("a")
    now[0] = 59.9
    assert views.audited_lately("a") and not views.audited_lately("b")
    now[0] = 60.0
    assert not views.audited_lately("a")


def test_past_its_size_the_oldest_view_is_forgotten_and_audited_again():
    views = RecentViews(size=2, clock=lambda: 0.0)
    for key in ("a", "b", "c"):
        views.audited(key)
    assert [views.audited_lately(k) for k in ("a", "b", "c")] == [False, True, True]
