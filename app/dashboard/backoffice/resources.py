"""The back-office's pages. Each GET reads one SQL function as insurance_dashboard with the
session's claims and renders a template; each POST checks the CSRF token and the origin, makes
one call (which writes the audit row) and redirects (post/redirect/get).

CSRF: a form carries HMAC-SHA256(session token, "backoffice-csrf"). Only a page that can read
the HttpOnly session cookie's value, i.e. this server, can compute it; it needs no storage and
holds across processes. A POST must also come from an allowed origin when the browser says one.
"""
from __future__ import annotations

import datetime
import hashlib
import hmac
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import quote, urlencode

import asyncpg
import falcon
import jinja2
import orjson

from app import db, errors, validation
from app.dashboard import auth

HERE = Path(__file__).resolve().parent
# Every state an emission is in, one at a time, as every surface names it (SQL computes it:
# dashboard._emission_state): due and waiting for the worker (a retry queued, by the backoff or by
# an operator), a worker calling the insurer, its insurer paused, waiting for its next retry,
# given up, done. A badge says the state with spaces for underscores.
STATUSES = ("RETRY_QUEUED", "IN_PROGRESS", "PAUSED", "FAILED", "ABANDONED", "SUCCESS")
STATE_LABELS = {s: s.replace("_", " ") for s in STATUSES}
SETTLED = frozenset({"PAUSED", "FAILED", "ABANDONED", "SUCCESS"})  # the page stops following
PAGE_SIZE = 50
RETRY_ALL_MAX = 500  # rows one "retry every row that matches" restarts (docs/operations.md)
_env = jinja2.Environment(loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True,
                          trim_blocks=True, lstrip_blocks=True)
_env.filters["pretty"] = lambda v: orjson.dumps(v, option=orjson.OPT_INDENT_2).decode()
SEARCH_MAX = 200  # characters of a search


def utc(value: str | None) -> str:
    """An ISO 8601 time as the page shows it: in UTC, and saying so (2026-11-25 15:30:03 UTC)."""
    if not value:
        return ""
    try:
        moment = datetime.datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return str(value)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def target_text(target: Any) -> str:
    """An audit target as an operator reads it: a scalar as is, an object as `key value`
    pairs (emission 12, risk item DEMO-0003), never a Python dict."""
    if isinstance(target, dict):
        return ", ".join(f"{key} {target_text(value)}" for key, value in target.items() if value is not None)
    if isinstance(target, list):
        return ", ".join(target_text(t) for t in target)
    return "" if target is None else str(target)


# What an audit row's bare number or id is, by its action's area: "emission 12", "outbox row 7".
TARGET_LABELS = {"emissions": "emission", "outbox": "outbox row", "channels": "channel", "packages": "package",
                 "orders": "risk item"}


def target_links(action: str, targets: Any,
                 channels: dict[str, str] | None = None) -> list[tuple[str, str, str | None]]:
    """An audit row's targets as (label, text, link to its page or None): emissions to their
    page, a risk item uid through the search (which opens its page), users, packages and outbox
    rows to their lists. A channel has no page: it shows by its name (`channels`: id -> name,
    from dashboard.list_audit), its id only when the channel is gone."""
    items = targets if isinstance(targets, list) else [targets]
    area = action.split(".")[0]
    names = channels or {}
    def link(target: Any) -> str | None:
        if isinstance(target, (dict, list)) or target is None:
            return None
        text = str(target)
        if area == "emissions" and text.isascii() and text.isdigit():
            return f"/backoffice/emissions/{text}"
        if area in ("emissions", "orders"):
            return f"/backoffice/search?{urlencode({'q': text})}"
        return {"users": "/backoffice/users", "packages": "/backoffice/packages",
                "outbox": "/backoffice/outbox"}.get(area)
    def label(target: Any) -> str:
        return "" if isinstance(target, (dict, list)) or target is None else TARGET_LABELS.get(area, "")

    def text(target: Any) -> str:
        return names.get(str(target), target_text(target)) if area == "channels" else target_text(target)
    return [(label(t), text(t), link(t)) for t in items]



_env.filters["utc"] = utc
_env.filters["target"] = target_text
_env.globals["target_links"] = target_links
_env.globals["STATE_LABELS"] = STATE_LABELS


def csrf_token(session_token: str) -> str:
    return hmac.new(session_token.encode(), b"backoffice-csrf", hashlib.sha256).hexdigest()


def _date(value: str | None, field: str) -> datetime.datetime | None:
    """A YYYY-MM-DD filter as the start of that day, UTC."""
    if not value:
        return None
    try:
        return datetime.datetime.combine(datetime.date.fromisoformat(value), datetime.time(), datetime.UTC)
    except ValueError:
        raise errors.bad_request(f"{field} must be a date (YYYY-MM-DD)", details={"field": field}) from None


def _filters(get) -> dict[str, str]:
    """The emission filters (status, provider, event, since, until) from a query or a form,
    checked: a bad one is a 400 that changes nothing."""
    f = {k: (get(k) or "").strip() for k in ("status", "provider", "event", "since", "until")}
    if f["status"] and f["status"] not in STATUSES:
        raise errors.bad_request(f"status must be one of {', '.join(STATUSES)}", details={"field": "status"})
    for name in ("provider", "event"):
        f[name] = f[name].upper()
        if f[name] and not (f[name].replace("_", "").isalnum() and f[name].isascii() and len(f[name]) <= 64):
            raise errors.bad_request(f"{name} is a code such as PROVIDER_A", details={"field": name})
    for name in ("since", "until"):
        _date(f[name], name)
    return f


def _filter_args(f: dict[str, str]) -> tuple:
    """The filters as the SQL functions take them: statuses[], provider, event, [since, until)."""
    until = _date(f["until"], "until")
    return ([f["status"]] if f["status"] else None, f["provider"] or None, f["event"] or None,
            _date(f["since"], "since"), until + datetime.timedelta(days=1) if until else None)


def _ids(form: dict[str, Any], name: str) -> list[int]:
    raw = form.get(name) or []
    ids = list(dict.fromkeys(validation.path_id(v, name) for v in (raw if isinstance(raw, list) else [raw])))
    if not 0 < len(ids) <= 100:
        raise errors.bad_request("choose between 1 and 100 rows", details=[{"field": name, "message": "1 to 100 ids"}])
    return ids


def _cursor(req: falcon.Request) -> int | None:
    """The `cursor` parameter (the id the previous page ended at), when given."""
    raw = req.get_param("cursor")
    return validation.path_id(raw, "cursor") if raw else None


def _path_id(value: str) -> int | None:
    """The id of a page's path, or None (the page answers 404)."""
    try:
        return validation.path_id(value, "id")
    except errors.ApiError:
        return None


# What a path and query may hold as they are; anything else (CR, LF, spaces, quotes, backslash,
# characters outside ASCII) is percent-encoded, so that a Location header always encodes.
_URL_SAFE = "/?&=%-._~+:,;@!$*()"


def _local(path: str | None, default: str) -> str:
    """Where to go after a POST or a login: a back-office path only (no open redirect),
    percent-encoded (a CR, LF or non-Latin-1 character once made the redirect a 500)."""
    if not path or not isinstance(path, str):
        return default
    path = quote(path.encode("utf-8", "surrogatepass"), safe=_URL_SAFE)
    return path if path.startswith("/backoffice") and not path.startswith("//") else default


# ?notice= carries one of these codes, with its counts in ?done= and ?of=; never text to show.
NOTICES = {
    "emissions-retried": lambda done, of: f"Retry queued for {done} of {of} emission{'s' if of != 1 else ''}.",
    "outbox-due": lambda done, of: f"{done} of {of} outbox row{'s' if of != 1 else ''} due now.",
    "user-disabled": lambda done, of: f"User disabled; {done} live session{'s' if done != 1 else ''} ended.",
    "user-enabled": lambda done, of: "User enabled: they may log in again (ended sessions stay ended).",
    "sessions-ended": lambda done, of: f"{done} live session{'s' if done != 1 else ''} ended.",
    "user-own-account": lambda done, of: "You cannot disable your own account: another operator can, "
                                         "or the command line (python -m app users disable --email E).",
    "user-last-enabled": lambda done, of: "Not disabled: this is the last enabled user, and nobody could log in.",
    "provider-paused": lambda done, of: "Provider paused: its emissions wait and spend no attempt until it is resumed.",
    "provider-resumed": lambda done, of: f"Provider resumed: {done} waiting emission{'s' if done != 1 else ''} queued.",
}
# Notices that say something was refused (shown as an error, not as a success).
REFUSAL_NOTICES = frozenset({"user-own-account", "user-last-enabled"})
# What the page's refusal codes become: a notice on the users page (USER_NOT_FOUND stays a 404).
USER_REFUSALS = {"OWN_ACCOUNT": "user-own-account", "LAST_ENABLED_USER": "user-last-enabled"}
HEALTH_HOURS = (1, 3, 6, 12, 24)  # the providers page's windows
PROVIDER_ACTIONS = {"pause": "dashboard.pause_provider", "resume": "dashboard.resume_provider"}


def health_chart(provider: dict, start: str, slot_minutes: int, width: int = 480, height: int = 72,
                 slots: int = 60) -> dict:
    """A provider's slots (dashboard.providers_health: 60 of slot_minutes each) as the SVG chart
    draws them (templates/providers.html): a bar of calls a minute with its failures over it,
    and the p95 answer time as a line, each scaled to its own maximum; coordinates to 0.1 px."""
    first = datetime.datetime.fromisoformat(start)
    step = width / slots
    max_calls = max([s["calls"] for s in provider["slots"]] + [1])
    max_p95 = max([s["p95Ms"] or 0 for s in provider["slots"]] + [1])
    bars, points = [], []
    for s in provider["slots"]:
        index = int((datetime.datetime.fromisoformat(s["at"]) - first).total_seconds() // 60 // slot_minutes)
        if not 0 <= index < slots:
            continue
        x = round(index * step, 1)
        calls_h = round(s["calls"] / max_calls * height, 1)
        failed_h = round(s["failures"] / max_calls * height, 1)
        bars.append({"x": x, "w": round(step - 1, 1), "calls_y": round(height - calls_h, 1), "calls_h": calls_h,
                     "failed_y": round(height - failed_h, 1), "failed_h": failed_h, "slot": s})
        if s["p95Ms"] is not None:
            points.append(f"{round(x + step / 2, 1)},{round(height - s['p95Ms'] / max_p95 * height, 1)}")
    return {"width": width, "height": height, "bars": bars, "p95_line": " ".join(points),
            "max_calls": max_calls, "max_p95": max_p95 if points else None,
            "per_minute": round(provider["calls"] / (slots * slot_minutes), 2)}


def _until(value: Any) -> datetime.datetime | None:
    """The pause form's end (an <input type=datetime-local>, read as UTC), or None (until resumed)."""
    if not value:
        return None
    if not isinstance(value, str) or len(value) > 40:
        raise errors.bad_request("until must be a time (YYYY-MM-DDTHH:MM, UTC)", details=[{"field": "until", "message": "a time"}])
    try:
        moment = datetime.datetime.fromisoformat(value)
    except ValueError:
        raise errors.bad_request("until must be a time (YYYY-MM-DDTHH:MM, UTC)",
                                 details=[{"field": "until", "message": "a time such as 2026-12-01T06:00"}]) from None
    return moment if moment.tzinfo else moment.replace(tzinfo=datetime.UTC)
# POST /backoffice/users/{action}: the SQL function of each action and the notice it leaves.
USER_ACTIONS = {
    "disable": ("dashboard.disable_user", "user-disabled"),
    "enable": ("dashboard.enable_user", "user-enabled"),
    "end-sessions": ("dashboard.end_user_sessions", "sessions-ended"),
}
# The actions that take something away: their button asks first (a page of its own, no script
# needed), and only a form posted with confirm=yes acts.
CONFIRMED_USER_ACTIONS = {
    "disable": ("Disable", "Their login is refused and every live session of theirs ends at once: their open pages "
                           "go to the login at the next click. Enabling them again lets them log in."),
    "end-sessions": ("End the sessions of", "Every live session of theirs ends at once: their open pages go to the "
                                            "login at the next click. They may log in again."),
}


def _notice(req: falcon.Request) -> str | None:
    """The message of a known ?notice= code, or None (an unknown code or count shows nothing)."""
    message = NOTICES.get(req.get_param("notice") or "")
    counts = [req.get_param(name) or "" for name in ("done", "of")]
    if message is None or not all(c.isascii() and c.isdigit() and len(c) <= 4 for c in counts):
        return None
    return message(*map(int, counts))


def _after_post(target: str, notice: str, done: int, of: int) -> falcon.HTTPSeeOther:
    return falcon.HTTPSeeOther(f"{target}{'&' if '?' in target else '?'}{urlencode({'notice': notice, 'done': done, 'of': of})}")


class Pages:
    def __init__(self, services) -> None:
        self.services = services
        self.origins = auth.allowed_origins(services.config)

    # -- plumbing ---------------------------------------------------------------------------

    async def _session(self, req: falcon.Request) -> tuple[db.Identity, dict]:
        """(identity, claims) of the live session, or a redirect to the login page."""
        identity = await auth.session_identity(self.services.db, req)
        if identity is None:
            target = req.relative_uri if req.method == "GET" else "/backoffice/emissions"
            raise falcon.HTTPSeeOther(f"/backoffice/login?next={quote(target, safe='')}")
        return identity, orjson.loads(identity.claims_json)

    def _render(self, resp: falcon.Response, template: str, req: falcon.Request, user: dict | None,
                status: int = 200, **context: Any) -> None:
        token = auth.cookie_token(req)
        resp.status = status
        resp.content_type = falcon.MEDIA_HTML
        resp.set_header("Cache-Control", "no-store")
        resp.set_header("Content-Security-Policy",
                        "default-src 'self'; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'")
        resp.set_header("X-Frame-Options", "DENY")
        resp.set_header("Referrer-Policy", "same-origin")
        resp.text = _env.get_template(template).render(
            user=user, csrf=csrf_token(token) if token and user else "", path=req.path,
            notice=_notice(req), notice_refused=req.get_param("notice") in REFUSAL_NOTICES, **context)

    async def _call(self, identity: db.Identity, function: str, *args: Any) -> Any:
        return orjson.loads(await self.services.db.call_as(identity, function, *args))

    async def _form(self, req: falcon.Request) -> dict[str, Any]:
        """The POSTed form, after the CSRF token and the origin are checked (403 otherwise)."""
        if not auth.origin_allowed(req, self.origins):
            raise errors.ApiError(403, "FORBIDDEN", "origin not allowed")
        if (req.content_type or "").split(";")[0].strip().lower() != falcon.MEDIA_URLENCODED:
            raise errors.ApiError(415, message="a form post is expected")
        body = await validation.read_body(req, 64 * 1024)  # 413 PAYLOAD_TOO_LARGE, as every surface
        form = falcon.uri.parse_query_string(body.decode("utf-8", "replace"), keep_blank=False)
        validation.check_value(form)  # no NUL may reach SQL (400 VALIDATION_ERROR)
        token = auth.cookie_token(req)
        given = form.get("csrf")
        if not (token and isinstance(given, str) and hmac.compare_digest(given.encode(), csrf_token(token).encode())):
            raise errors.ApiError(403, "CSRF_TOKEN_INVALID", "the form's token does not match the session; reload the page")
        return form

    # -- pages ------------------------------------------------------------------------------

    async def on_get_home(self, req, resp) -> None:
        raise falcon.HTTPSeeOther("/backoffice/emissions")

    async def on_get_login(self, req, resp) -> None:
        identity = await auth.session_identity(self.services.db, req)
        target = _local(req.get_param("next"), "/backoffice/emissions")
        if identity:
            raise falcon.HTTPSeeOther(target)
        self._render(resp, "login.html", req, None, next=target)

    async def on_get_emissions(self, req, resp) -> None:
        """The counts per state (kept counts, never a scan), the filters, one page."""
        claims, user = await self._session(req)
        f = _filters(req.get_param)
        page = await self._call(claims, "dashboard.emissions_overview", *_filter_args(f), _cursor(req), PAGE_SIZE)
        filters = {k: v for k, v in f.items() if v}
        next_url = (f"/backoffice/emissions?{urlencode({**filters, 'cursor': page['nextCursor']})}"
                    if page["nextCursor"] else None)
        self._render(resp, "emissions.html", req, user, page=page, filters=f, statuses=STATUSES,
                     next_url=next_url, query_string=urlencode(filters), retry_all_max=RETRY_ALL_MAX)

    async def on_get_retry_all(self, req, resp) -> None:
        """The confirmation of "retry every row that matches": how many match, what the filters
        are, the cap; nothing changes until its form is posted."""
        claims, user = await self._session(req)
        f = _filters(req.get_param)
        found = await self._call(claims, "dashboard.retry_matching", *_filter_args(f), RETRY_ALL_MAX, True, "backoffice")
        self._render(resp, "retry_all.html", req, user, found=found, filters=f,
                     shown={k: v for k, v in f.items() if v}, retry_all_max=RETRY_ALL_MAX)

    async def on_post_retry_all(self, req, resp) -> None:
        """Restarts at most RETRY_ALL_MAX emissions that match the posted filters, newest first;
        one audit row (emissions.retry_all) names the filters and every id."""
        claims, _ = await self._session(req)
        form = await self._form(req)
        f = _filters(lambda name: form.get(name) if isinstance(form.get(name), str) else None)
        done = await self._call(claims, "dashboard.retry_matching", *_filter_args(f), RETRY_ALL_MAX, False, "backoffice")
        target = f"/backoffice/emissions?{urlencode({k: v for k, v in f.items() if v})}"
        raise _after_post(target, "emissions-retried", done["queued"], done["matched"])

    async def on_get_emission_live(self, req, resp, emission_id: str) -> None:
        """What the emission's page follows while it is not settled: {state, label, status,
        attempts, settled} (JSON, a small answer polled every second or two)."""
        claims, _ = await self._session(req)
        state = await self._found(claims, "dashboard.emission_state", _path_id(emission_id))
        if state is None:
            raise errors.ApiError(404, "NOT_FOUND", "emission not found")
        state["label"] = STATE_LABELS.get(state["state"], state["state"])
        state["settled"] = state["state"] in SETTLED
        resp.set_header("Cache-Control", "no-store")
        resp.media = state

    async def on_get_emission(self, req, resp, emission_id: str) -> None:
        claims, user = await self._session(req)
        # Its request payload may name the item's people: the detail and its audit row in one call.
        detail = await self._found(claims, "dashboard.view_emission", _path_id(emission_id))
        if detail is None:
            return self._render(resp, "not_found.html", req, user, status=404, what=f"Emission {emission_id}")
        state = detail["emission"].get("state") or detail["emission"]["status"]
        self._render(resp, "emission.html", req, user, detail=detail, state=state, settled=state in SETTLED)

    async def on_get_risk_item(self, req, resp, risk_item_id: str) -> None:
        claims, user = await self._session(req)
        # Who saw whose data: the page's data and one audit row naming the item's people, one call.
        data = await self._found(claims, "dashboard.view_risk_item", _path_id(risk_item_id), None, "backoffice")
        if data is None:
            return self._render(resp, "not_found.html", req, user, status=404, what=f"Risk item {risk_item_id}")
        self._render(resp, "risk_item.html", req, user, data=data)

    async def on_get_search(self, req, resp) -> None:
        """One box for what a caller quotes: a policy number, a risk item id or uid, an emission
        id, the insurer's external id, a holder's or beneficiary's e-mail. One risk item found:
        its page; several: the list; none: the page says so."""
        claims, user = await self._session(req)
        query = (req.get_param("q") or "").strip()
        if not query:
            return self._render(resp, "search.html", req, user, query="", found=None)
        if len(query) > SEARCH_MAX:
            raise errors.bad_request(f"a search has at most {SEARCH_MAX} characters", details={"field": "q"})
        validation.check_value(query)  # no NUL may reach SQL (400 VALIDATION_ERROR)
        found = await self._call(claims, "dashboard.search", query)
        # Who looked for whom: the items found and the e-mail searched for (an audit row).
        emails = [query] if validation.EMAIL_PATTERN.fullmatch(query) else []
        if found["items"] or emails:
            await self.services.db.call_as(claims, "dashboard.record_view", "people.search",
                                           [i["riskItemId"] for i in found["items"]], [], emails)
        if len(found["items"]) == 1:
            raise falcon.HTTPSeeOther(f"/backoffice/risk-items/{found['items'][0]['riskItemId']}")
        self._render(resp, "search.html", req, user, query=query, found=found)

    async def on_get_packages(self, req, resp) -> None:
        claims, user = await self._session(req)
        packages = await self._call(claims, "dashboard.list_packages")
        self._render(resp, "packages.html", req, user, packages=packages)

    async def on_get_users(self, req, resp) -> None:
        claims, user = await self._session(req)
        users = await self._call(claims, "dashboard.list_users")
        self._render(resp, "users.html", req, user, users=users)

    async def on_get_outbox(self, req, resp) -> None:
        claims, user = await self._session(req)
        cursor = _cursor(req)
        dead = req.get_param("state") == "dead"
        page = await self._call(claims, "dashboard.list_outbox", dead, cursor, PAGE_SIZE)
        state = "dead" if dead else "waiting"
        self._render(resp, "outbox.html", req, user, page=page, dead=dead,
                     next_url=f"/backoffice/outbox?state={state}&cursor={page['nextCursor']}"
                     if page["nextCursor"] else None)

    async def on_get_audit(self, req, resp) -> None:
        claims, user = await self._session(req)
        cursor = _cursor(req)
        page = await self._call(claims, "dashboard.list_audit", cursor, PAGE_SIZE)
        self._render(resp, "audit.html", req, user, page=page,
                     next_url=f"/backoffice/audit?cursor={page['nextCursor']}" if page["nextCursor"] else None)

    async def on_get_providers(self, req, resp) -> None:
        """Each provider's and the webhooks' health over the last hours (calls per minute, failures,
        p95 answer time, drawn on the server as SVG) and its pause, with pause and resume."""
        claims, user = await self._session(req)
        raw = req.get_param("hours") or "3"
        if raw not in {str(h) for h in HEALTH_HOURS}:
            raise errors.bad_request(f"hours must be one of {', '.join(map(str, HEALTH_HOURS))}",
                                     details=[{"field": "hours", "message": "1, 3, 6, 12 or 24"}])
        health = await self._call(claims, "dashboard.providers_health", int(raw))
        charts = {p["provider"]: health_chart(p, health["from"], health["slotMinutes"]) for p in health["providers"]}
        self._render(resp, "providers.html", req, user, health=health, charts=charts, hours=int(raw),
                     windows=HEALTH_HOURS)

    async def on_post_provider_action(self, req, resp, action: str) -> None:
        """Pause (until a time, or until resumed) or resume a provider; the SQL function writes the
        audit row (providers.pause, providers.resume via backoffice)."""
        claims, _ = await self._session(req)
        if action not in PROVIDER_ACTIONS:
            return await self.unknown(req, resp)
        form = await self._form(req)
        provider = form.get("provider")
        if not (isinstance(provider, str) and provider.isascii() and provider.replace("_", "").isalnum()
                and provider[:1].isalpha() and len(provider) <= 64):
            raise errors.bad_request("choose a provider", details=[{"field": "provider", "message": "a code such as PROVIDER_A"}])
        if action == "pause":
            await self._call(claims, PROVIDER_ACTIONS[action], provider.upper(), _until(form.get("until")), "backoffice")
            raise _after_post("/backoffice/providers", "provider-paused", 1, 1)
        done = await self._call(claims, PROVIDER_ACTIONS[action], provider.upper(), "backoffice")
        raise _after_post("/backoffice/providers", "provider-resumed", done["retriesQueued"], done["retriesQueued"])

    async def unknown(self, req, resp) -> None:
        """A page that does not exist: the HTML not-found page (a browser shows it), with the
        navigation when the session is live; never the API's JSON."""
        identity = await auth.session_identity(self.services.db, req)
        user = orjson.loads(identity.claims_json) if identity else None
        self._render(resp, "not_found.html", req, user, status=404, what="This page")

    async def _found(self, claims: db.Identity, function: str, path_id: int | None, *args: Any) -> Any:
        """The function's answer for the page's id, or None for PT404 (and for an id that cannot exist)."""
        if path_id is None:
            return None
        try:
            return await self._call(claims, function, path_id, *args)
        except asyncpg.PostgresError as exc:
            if exc.sqlstate == "PT404":
                return None
            raise

    # -- actions ----------------------------------------------------------------------------

    async def on_post_retry_emissions(self, req, resp) -> None:
        claims, _ = await self._session(req)
        form = await self._form(req)
        ids = _ids(form, "id")
        outcome = await self._call(claims, "dashboard.retry_emissions", ids, "backoffice")
        queued = sum(1 for o in outcome if o["queued"])
        raise _after_post(_local(form.get("next"), "/backoffice/emissions"), "emissions-retried", queued, len(ids))

    async def on_post_retry_outbox(self, req, resp) -> None:
        claims, _ = await self._session(req)
        form = await self._form(req)
        ids = _ids(form, "id")
        outcome = await self._call(claims, "dashboard.retry_outbox", ids)
        queued = sum(1 for o in outcome if o["result"] == "queued")
        raise _after_post(_local(form.get("next"), "/backoffice/outbox"), "outbox-due", queued, len(ids))


    async def on_post_user_action(self, req, resp, action: str) -> None:
        """Disable, enable or end the sessions of a back-office user, named by e-mail; the SQL
        function writes the audit row (via backoffice), refusals included. Disabling and ending
        sessions first answer a confirmation page; its form (confirm=yes) acts."""
        claims, user = await self._session(req)
        if action not in USER_ACTIONS:
            return await self.unknown(req, resp)
        form = await self._form(req)
        email = form.get("email")
        if not (isinstance(email, str) and validation.EMAIL_PATTERN.fullmatch(email)
                and len(email) <= validation.EMAIL_MAX_LENGTH):
            raise errors.bad_request("choose a user", details=[{"field": "email", "message": "an e-mail address"}])
        if action in CONFIRMED_USER_ACTIONS and form.get("confirm") != "yes":
            verb, consequence = CONFIRMED_USER_ACTIONS[action]
            return self._render(resp, "confirm_user.html", req, user, action=action, email=email, verb=verb,
                                consequence=consequence, own=email.lower() == (user.get("email") or "").lower())
        function, notice = USER_ACTIONS[action]
        outcome = await self._call(claims, function, email)
        if outcome.get("error") in USER_REFUSALS:
            raise _after_post("/backoffice/users", USER_REFUSALS[outcome["error"]], 0, 1)
        if "error" in outcome:
            raise errors.ApiError(404, "NOT_FOUND", outcome["message"])
        raise _after_post("/backoffice/users", notice, outcome.get("sessionsEnded", 0), 1)


class Static:
    """The page's own CSS and script (no CDN): files of app/dashboard/backoffice/static, by name."""

    TYPES: ClassVar[dict[str, str]] = {".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8"}

    def __init__(self) -> None:
        self.files = {p.name: (p.read_bytes(), self.TYPES[p.suffix])
                      for p in (HERE / "static").iterdir() if p.suffix in self.TYPES}

    async def on_get(self, req, resp, name: str) -> None:
        found = self.files.get(name)
        if found is None:
            raise falcon.HTTPNotFound()
        resp.data, resp.content_type = found
        resp.set_header("Cache-Control", "public, max-age=300")
