"""The back-office page (/backoffice): server-rendered HTML (Jinja2) behind the dashboard's
session cookie, for operators who need no separate web app. Reads and retries go through the
same SQL functions as tRPC (dashboard.*); every retry writes an audit row in SQL."""
from __future__ import annotations

from app.lazy import Loader, lazy, responders

_RESOURCES = "app.dashboard.backoffice.resources"


def add_routes(app, services) -> None:
    def build() -> dict:  # at the first back-office request (app/lazy.py)
        from app.dashboard.backoffice import resources as r
        from app.dashboard.backoffice.privacy import PrivacyPages
        return {"pages": r.Pages(services), "static": r.Static(), "privacy": PrivacyPages(services)}

    loader = Loader(build)
    pages = lazy(loader, "pages", responders(_RESOURCES, "Pages"))
    app.add_route("/backoffice", pages, suffix="home")
    app.add_route("/backoffice/login", pages, suffix="login")
    app.add_route("/backoffice/emissions", pages, suffix="emissions")
    app.add_route("/backoffice/emissions/retry", pages, suffix="retry_emissions")
    app.add_route("/backoffice/emissions/retry-all", pages, suffix="retry_all")
    app.add_route("/backoffice/emissions/{emission_id}", pages, suffix="emission")
    app.add_route("/backoffice/emissions/{emission_id}/live", pages, suffix="emission_live")
    app.add_route("/backoffice/risk-items/{risk_item_id}", pages, suffix="risk_item")
    app.add_route("/backoffice/outbox", pages, suffix="outbox")
    app.add_route("/backoffice/outbox/retry", pages, suffix="retry_outbox")
    app.add_route("/backoffice/audit", pages, suffix="audit")
    app.add_route("/backoffice/search", pages, suffix="search")
    app.add_route("/backoffice/packages", pages, suffix="packages")
    app.add_route("/backoffice/users", pages, suffix="users")
    app.add_route("/backoffice/users/{action}", pages, suffix="user_action")
    app.add_route("/backoffice/providers", pages, suffix="providers")
    app.add_route("/backoffice/providers/{action}", pages, suffix="provider_action")
    privacy = lazy(loader, "privacy", responders("app.dashboard.backoffice.privacy", "PrivacyPages"))
    app.add_route("/backoffice/privacy", privacy)
    app.add_route("/backoffice/privacy/export", privacy, suffix="export")
    app.add_route("/backoffice/privacy/erase", privacy, suffix="erase")
    app.add_route("/backoffice/static/{name}", lazy(loader, "static", responders(_RESOURCES, "Static")))

    async def unknown_page(req, resp, **_) -> None:
        """Any other path under /backoffice/ (a sink: Falcon tries it after every route): the
        HTML not-found page that a browser shows, not the API's JSON."""
        await loader["pages"].unknown(req, resp)

    app.add_sink(unknown_page, r"/backoffice/")
