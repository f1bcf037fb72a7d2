"""PROVIDER_C: binds travel and home policies through one endpoint, with OAuth2 client credentials.

auth_config: {"baseUrl": "https://provider-c.example/api", "tokenUrl": "https://provider-c.example/oauth2/token",
              "clientId": "...", "clientSecret": "...", "scope": "optional"}

The token is cached, shared and renewed as app/orchestrator/oauth2.py says. A travel item
becomes a `trip` (destination, start, end, travellers), a home item a `property` (address,
rebuild value); the holder is the `policyholder`. PROVIDER_C says why it refuses a token: a
401 whose error.code is TOKEN_REVOKED is PROVIDER_TOKEN_REVOKED, retryable (after the one
renewal the orchestrator makes), any other 401 the shared PROVIDER_AUTH_FAILED.
"""
from __future__ import annotations

import dataclasses
import datetime
from typing import Any

import httpx
import orjson

from app.orchestrator.contract import PROVIDER_TOKEN_REVOKED, EmissionError, EmissionResponse, EmitContext
from app.orchestrator.model import MappingError, StandardRiskItem
from app.orchestrator.oauth2 import OAuth2Adapter

MAX_TRAVELLERS = 12


def _required(item: StandardRiskItem, key: str) -> Any:
    value = item.insured_subject.get(key)
    if value in (None, ""):
        raise MappingError(f"PROVIDER_C needs insured_subject.{key} for {item.variant}")
    return value


def _date(item: StandardRiskItem, key: str) -> datetime.date:
    try:
        return datetime.date.fromisoformat(str(_required(item, key)))
    except ValueError:
        raise MappingError(f"insured_subject.{key} is not an ISO date (YYYY-MM-DD)") from None


def trip(item: StandardRiskItem) -> dict[str, Any]:
    start, end = _date(item, "departureDate"), _date(item, "returnDate")
    if end < start:
        raise MappingError("insured_subject.returnDate is before departureDate")
    travellers = max(1, len(item.beneficiaries))
    if travellers > MAX_TRAVELLERS:
        raise MappingError(f"PROVIDER_C insures at most {MAX_TRAVELLERS} travellers")
    return {"destination": str(_required(item, "destination")), "start": start.isoformat(), "end": end.isoformat(),
            "travellers": travellers}


def home(item: StandardRiskItem) -> dict[str, Any]:
    value = _required(item, "buildingValue")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise MappingError("insured_subject.buildingValue must be a positive number")
    postal_code = item.insured_subject.get("postalCode")
    return {"address": str(_required(item, "address")), "postalCode": str(postal_code) if postal_code else None,
            "rebuildValue": value}


def bind_request(item: StandardRiskItem) -> dict[str, Any]:
    """PROVIDER_C's bind request for one item."""
    holder, subject = item.holder, item.insured_subject
    email = holder.email if holder is not None else subject.get("email")
    if not email:
        raise MappingError("PROVIDER_C needs a holder e-mail")
    body = {"product": item.variant.upper(), "reference": item.uid, "policyReference": item.policy_uid,
            "policyholder": {"name": item.insured_name, "email": email, "phone": subject.get("phone"),
                             "document": subject.get("document") or (holder.document if holder else None)},
            "premium": {"amount": item.policy.premium, "currency": item.policy.currency},
            "coverages": [{"code": c.get("code"), "limit": c.get("limit")} for c in item.policy.coverages]}
    if item.variant == "travel":
        body["trip"] = trip(item)
    else:
        body["property"] = home(item)
    return body


def _error_code(response: httpx.Response) -> str | None:
    try:
        error = orjson.loads(response.content).get("error")
    except (orjson.JSONDecodeError, AttributeError):
        return None
    return error.get("code") if isinstance(error, dict) else None


class ProviderC(OAuth2Adapter):
    slug = "PROVIDER_C"
    variants = ("travel", "home")

    def __init__(self, auth_config: dict[str, Any], http: httpx.AsyncClient,
                 state: dict[str, Any] | None = None) -> None:
        super().__init__(auth_config, http, state)
        self.url = self.url_setting("baseUrl", path="/v1/policies")

    def external_id(self, body: dict[str, Any]) -> Any:
        return body["policy"]["id"]

    def classify(self, response: httpx.Response) -> EmissionError:
        error = super().classify(response)
        if response.status_code == 401 and _error_code(response) == "TOKEN_REVOKED":
            return dataclasses.replace(error, code=PROVIDER_TOKEN_REVOKED, retryable=True)
        return error

    async def emit(self, item: StandardRiskItem, ctx: EmitContext) -> EmissionResponse:
        return await self.post(self.url, bind_request(item), self.auth_headers(ctx), ctx)


ADAPTER = ProviderC
