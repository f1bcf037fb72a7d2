"""The integrations surface: /api/integrations/{dispatch,dispatch-v2,retry,post-sales}."""
from __future__ import annotations


def add_routes(app, services) -> None:
    from app.integrations import resources
    app.add_route("/api/integrations/dispatch", resources.Dispatch(services))
    app.add_route("/api/integrations/dispatch-v2", resources.DispatchV2(services))
    app.add_route("/api/integrations/retry", resources.Retry(services))
    app.add_route("/api/integrations/post-sales", resources.PostSales(services))
