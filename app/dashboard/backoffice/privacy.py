"""The back-office's Privacy page (/backoffice/privacy): a data protection officer's requests
for one person, by e-mail. The audit rows about them; Export (one JSON document, downloaded);
Erase, after a confirmation page. Each action is a form post with the session's CSRF token; the
SQL functions (dashboard.person_export, dashboard.person_erase) write their audit rows."""
from __future__ import annotations

import falcon
import orjson

from app import errors, validation
from app.dashboard.backoffice.resources import Pages

AUDIT_ROWS = 200


def _email(value: object) -> str:
    if not (isinstance(value, str) and len(value) <= validation.EMAIL_MAX_LENGTH
            and validation.EMAIL_PATTERN.fullmatch(value.strip())):
        raise errors.bad_request("an e-mail address such as ada@example.com",
                                 details=[{"field": "email", "message": "an e-mail address"}])
    return value.strip().lower()


class PrivacyPages(Pages):
    async def on_get(self, req, resp) -> None:
        claims, user = await self._session(req)
        raw = (req.get_param("email") or "").strip()
        email = _email(raw) if raw else ""
        rows = await self._call(claims, "dashboard.audit_about", email, AUDIT_ROWS) if email else None
        self._render(resp, "privacy.html", req, user, email=email, rows=rows, confirm=False, erased=None)

    async def on_post_export(self, req, resp) -> None:
        claims, _ = await self._session(req)
        email = _email((await self._form(req)).get("email"))
        document = await self._call(claims, "dashboard.person_export", email)
        resp.content_type = falcon.MEDIA_JSON
        resp.set_header("Cache-Control", "no-store")
        resp.set_header("Content-Disposition", f'attachment; filename="personal-data-{document["auditId"]}.json"')
        resp.data = orjson.dumps(document, option=orjson.OPT_INDENT_2)

    async def on_get_erase(self, req, resp) -> None:
        """What an erasure does, and the button that does it: nothing changes on a GET."""
        _, user = await self._session(req)
        email = _email(req.get_param("email"))
        self._render(resp, "privacy.html", req, user, email=email, rows=None, confirm=True, erased=None)

    async def on_post_erase(self, req, resp) -> None:
        claims, user = await self._session(req)
        form = await self._form(req)
        email = _email(form.get("email"))
        if form.get("confirm") != "yes":
            raise errors.bad_request("confirm the erasure", details=[{"field": "confirm", "message": "must be yes"}])
        erased = await self._call(claims, "dashboard.person_erase", email)
        rows = await self._call(claims, "dashboard.audit_about", email, AUDIT_ROWS)
        self._render(resp, "privacy.html", req, user, email=email, rows=rows, confirm=False, erased=erased)
