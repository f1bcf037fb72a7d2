"""create_app(config): build the collaborators, add middleware and routes, return the app."""
from __future__ import annotations

import dataclasses

import asyncpg
import falcon
import falcon.asgi
import falcon.media
import orjson
import structlog

from app import apidocs, errors, health, landing, openapi
from app.addresses import ClientAddresses
from app.config import Config
from app.dashboard.recent_views import RecentViews
from app.db import CHANNEL, HOLDER, Database
from app.mail import Mailer
from app.middleware import AccessLog, Lifespan, Observe
from app.orchestrator.pipeline import Pipeline
from app.orchestrator.service import Orchestrator
from app.tokens import ISSUER, DeviceTokens, TokenService, service_tokens

log = structlog.get_logger("app")


@dataclasses.dataclass
class Services:
    """What resources may use; built once per app by create_app."""

    config: Config
    db: Database
    postsales_tokens: TokenService
    gateway_tokens: dict[str, TokenService]
    service_tokens: TokenService
    lifespan: Lifespan
    orchestrator: Orchestrator
    pipeline: Pipeline
    mailer: Mailer | None = None
    # Device tokens (docs/security.md "Devices"): holders' device_token, operators' `device` cookie.
    holder_devices: DeviceTokens | None = None
    operator_devices: DeviceTokens | None = None
    # The client of a request, by the one rule of app/addresses.py (every per-IP limit, /metrics).
    addresses: ClientAddresses | None = None
    # tRPC byRiskItem's views audited lately: one row per session, item and minute.
    recent_views: RecentViews = dataclasses.field(default_factory=RecentViews)


def build_services(config: Config) -> Services:
    from app.gateway import BRANCHES as GATEWAY_BRANCHES
    db = Database(config.database_url, config.db_pool_min, config.db_pool_max,
                  config.db_statement_cache_size, config.db_acquire_timeout,
                  read_dsn=config.read_database_url, read_max_lag=config.read_max_lag)
    orchestrator = Orchestrator(config, db)
    return Services(
        config=config,
        db=db,
        postsales_tokens=TokenService(config.secret("POSTSALES_JWT_SECRET"), "postsales",
                                      config.postsales_jwt_expiration, issuer=f"{ISSUER}-postsales",
                                      role=HOLDER, string_claims=("email",)),
        gateway_tokens={
            branch: TokenService(config.secret(secret), f"gateway/{branch}",
                                 config.gateway_jwt_expiration, issuer=f"{ISSUER}-gateway", role=CHANNEL)
            for branch, secret in GATEWAY_BRANCHES.items()
        },
        service_tokens=service_tokens(config.secret("SERVICE_ROLE_SECRET")),
        lifespan=Lifespan(db, on_shutdown=[orchestrator.close]),
        orchestrator=orchestrator,
        pipeline=Pipeline(config, db, orchestrator),
        mailer=Mailer.from_config(config),
        holder_devices=DeviceTokens(config.secret("DEVICE_TOKEN_SECRET"), "postsales", config.device_token_ttl),
        operator_devices=DeviceTokens(config.secret("DEVICE_TOKEN_SECRET"), "dashboard", config.device_token_ttl),
        addresses=ClientAddresses(config.trusted_proxies),
    )


def _point_the_way(services: Services) -> None:
    """Tell a caller with a token of another branch or surface where it belongs, and a gateway
    caller with an API key where to exchange it (app/tokens.py)."""
    known = {f"gateway/{branch}": (tokens, f"/api/gateway/{branch}") for branch, tokens in services.gateway_tokens.items()}
    known["postsales"] = (services.postsales_tokens, "/api/postsales/v1")
    for branch, tokens in services.gateway_tokens.items():
        tokens.authorize_path = f"/api/gateway/{branch}/auth/authorize"
    for audience, (tokens, _) in known.items():
        tokens.siblings = {a: k for a, k in known.items() if a != audience}


def create_app(config: Config | None = None, services: Services | None = None) -> falcon.asgi.App:
    """The ASGI app. Tests may pass `services` to reach the same collaborators."""
    config = config or Config.from_env()
    services = services or build_services(config)
    if config.generated_secrets:
        log.warning("ephemeral_secrets", names=list(config.generated_secrets),
                    reason="not set in the environment; tokens die with this process")

    from app.metrics import RequestMetrics
    access_log = AccessLog() if config.log_level in ("debug", "info") else None
    request_metrics = RequestMetrics()
    app = falcon.asgi.App(middleware=[services.lifespan, Observe(request_metrics, access_log)])
    json_handler = falcon.media.JSONHandler(dumps=orjson.dumps, loads=orjson.loads)
    app.req_options.media_handlers[falcon.MEDIA_JSON] = json_handler
    app.resp_options.media_handlers[falcon.MEDIA_JSON] = json_handler
    app.req_options.strip_url_path_trailing_slash = True

    _point_the_way(services)
    app.set_error_serializer(errors.serialize_http_error)
    app.add_error_handler(asyncpg.PostgresError, errors.database_error_handler(errors.CheckRules(services.db)))
    app.add_error_handler(Exception, errors.handle_unexpected)

    app.add_route("/", landing.Landing())
    # Who may read the internal API reference: anyone in development, else METRICS_ALLOWED_IPS.
    internal_allowed = None if config.development else health.from_operators(services.addresses,
                                                                              config.metrics_allowed_ips)
    app.add_route("/docs", apidocs.Reference(internal_allowed))
    app.add_route("/docs/assets/{name}", apidocs.Asset())
    app.add_route("/api", landing.ToLanding())
    app.add_route("/healthz", health.Health())
    app.add_route("/readyz", health.Ready(services.db, config.sqitch_plan,
                                          health.from_operators(services.addresses, config.metrics_allowed_ips)))
    app.add_route("/metrics", health.Metrics(services.db, config.metrics_allowed_ips, request_metrics,
                                              services.addresses))

    # Each surface adds its own routes; imported here so that a surface is one package.
    from app import dashboard, gateway, integrations, postsales
    for surface in (postsales, gateway, integrations, dashboard):
        surface.add_routes(app, services)
    documents = openapi.OpenApi(gateway.document_branches(), config.openapi_server, internal_allowed=internal_allowed)
    app.add_route("/openapi.json", documents)
    app.add_route("/openapi/{audience}.json", documents)
    app.add_error_handler(falcon.HTTPRouteNotFound, errors.RouteNotFound(app, internal_allowed))
    return app
