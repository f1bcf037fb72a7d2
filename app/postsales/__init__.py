"""The post-sales surface (`/api/postsales/v1`): holders log in with an e-mailed code and
read and update the risk items they hold. Routes are added by add_routes(app, services).
"""
from __future__ import annotations

from app.postsales import auth, resources
from app.postsales.cors import PostsalesCors

PREFIX = "/api/postsales/v1"


def add_routes(app, services) -> None:
    app.add_middleware(PostsalesCors(PREFIX, services.config.postsales_allowed_origins))
    services.lifespan.on_shutdown.append(services.mailer.drain)
    app.add_route(f"{PREFIX}/auth/otp/request", auth.OtpRequest(services))
    app.add_route(f"{PREFIX}/auth/otp/verify", auth.OtpVerify(services))
    app.add_route(f"{PREFIX}/me/risk-items", resources.MyRiskItems(services))
    app.add_route(f"{PREFIX}/risk-items/{{riskItemId}}", resources.RiskItem(services))
    app.add_route(f"{PREFIX}/risk-items/{{riskItemId}}/beneficiaries", resources.Beneficiaries(services))
    app.add_route(f"{PREFIX}/risk-items/{{riskItemId}}/beneficiaries/{{beneficiaryId}}",
                  resources.Beneficiary(services))
    app.add_route(f"{PREFIX}/risk-items/{{riskItemId}}/variants", resources.Variants(services))
