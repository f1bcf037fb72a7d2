"""The integrations surface: /api/integrations/{dispatch,dispatch-v2,retry,dispatch-batch}
(POST /api/integrations/post-sales belongs to the post-sales surface: app/postsales/emission.py)."""
from __future__ import annotations


def add_routes(app, services) -> None:
    from app.integrations import resources
    for path in resources.SPECS:
        app.add_route(path, resources.SingleEmission(services, path))
    app.add_route("/api/integrations/dispatch-batch", resources.DispatchBatch(services))
