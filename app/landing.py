"""GET / : a short page that says what this service is and where to go next (the API reference
at /docs and its OpenAPI documents, the back-office, metrics, health), so that a newcomer who
opens the API's address in a browser finds a way in instead of a bare 404. `/api` leads here."""
from __future__ import annotations

import falcon

PAGE = b"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Insurance back-end</title>
<style>
body { font: 16px/1.5 system-ui, sans-serif; max-width: 46rem; margin: 2rem auto; padding: 0 1rem; color: #1a1a1a; }
code { background: #f1f1f1; padding: 0 .25em; }
a { color: #0645ad; }
</style>
</head>
<body>
<main>
<h1>Insurance back-end</h1>
<p>Post-sales API for policy holders, partner gateway, insurer integrations through a durable
outbox, and the back-office dashboard, over PostgreSQL.</p>
<h2>Where to go</h2>
<ul>
<li><a href="/docs">/docs</a>: the API reference, to read in the browser: the partner gateway
 and the post-sales API for holders.</li>
<li>The same as OpenAPI 3.1 documents, to generate a client from:
 <a href="/openapi/partner.json">/openapi/partner.json</a> (partners) and
 <a href="/openapi/holder.json">/openapi/holder.json</a> (the holder web app).</li>
<li><a href="/backoffice">/backoffice</a>: the back-office for operators (log in with a user
 made by <code>.venv/bin/python -m app users create --email E</code>).</li>
<li><a href="/metrics">/metrics</a>: Prometheus metrics (answered to <code>METRICS_ALLOWED_IPS</code> only).</li>
<li><a href="/healthz">/healthz</a> and <a href="/readyz">/readyz</a>: the process answers; the database
 answers and every migration is deployed.</li>
</ul>
<h2>API prefixes</h2>
<ul>
<li><code>/api/postsales/v1</code>: policy holders (one-time code by e-mail, then a bearer token)</li>
<li><code>/api/gateway/{v1,v2,ia/v1,ia/v2,integrations/v1,integrations/v2}</code>: partner systems (API key, then a branch token)</li>
<li><code>/api/integrations/...</code>: the outbox worker and the retry scheduler (service-role token)</li>
<li><code>/api/trpc</code>: the dashboard's typed RPC (session cookie)</li>
</ul>
<p>The guides are in the repository: <code>README.md</code> and <code>docs/</code>.</p>
</main>
</body>
</html>
"""


class Landing:
    async def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.data = PAGE
        resp.content_type = falcon.MEDIA_HTML
        resp.set_header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
        resp.set_header("Cache-Control", "public, max-age=300")


class ToLanding:
    """/api: where a newcomer looks first; the landing page lists what there is."""

    async def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        raise falcon.HTTPFound("/")
