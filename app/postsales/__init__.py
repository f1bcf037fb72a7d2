"""The post-sales surface (`/api/postsales/v1`, and `/api/integrations/post-sales`): holders
log in with an e-mailed code, read and update the risk items they hold, and start their
post-sales emission. Routes are added by add_routes(app, services).
"""
from __future__ import annotations

from app.postsales import auth, emission, resources
from app.postsales.cors import PostsalesCors

PREFIX = "/api/postsales/v1"


def add_routes(app, services) -> None:
    app.add_middleware(PostsalesCors((PREFIX, emission.PATH), services.config.postsales_allowed_origins))
    services.lifespan.on_shutdown.append(services.mailer.drain)
    app.add_route(f"{PREFIX}/auth/otp/request", auth.OtpRequest(services))
    app.add_route(f"{PREFIX}/auth/otp/verify", auth.OtpVerify(services))
    app.add_route(f"{PREFIX}/me/risk-items", resources.MyRiskItems(services))
    app.add_route(f"{PREFIX}/risk-items/{{riskItemId}}", resources.HolderRiskItem(services))
    app.add_route(f"{PREFIX}/risk-items/{{riskItemId}}/beneficiaries", resources.Beneficiaries(services))
    app.add_route(f"{PREFIX}/risk-items/{{riskItemId}}/beneficiaries/{{beneficiaryId}}",
                  resources.HolderBeneficiary(services))
    app.add_route(f"{PREFIX}/risk-items/{{riskItemId}}/variants", resources.Variants(services))
    app.add_route(emission.PATH, emission.PostSalesEmission(services))
