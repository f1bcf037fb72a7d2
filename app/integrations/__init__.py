"""The integrations surface: /api/integrations/{dispatch,dispatch-v2,retry,dispatch-batch,post-sales}."""
from __future__ import annotations


def add_routes(app, services) -> None:
    from app.integrations import resources
    for path in resources.SPECS:
        app.add_route(path, resources.SingleEmission(services, path))
    app.add_route("/api/integrations/dispatch-batch", resources.DispatchBatch(services))
    app.add_route("/api/integrations/post-sales", resources.PostSales(services))
