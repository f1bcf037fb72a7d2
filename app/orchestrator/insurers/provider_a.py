"""PROVIDER_A: issues policies through one endpoint per product variant.

auth_config: {"baseUrl": "https://provider-a.example/api", "apiKey": "..."}

Each variant (travel, health, home, lifestyle) has its own client (endpoint and product
code) and its own mapper from the StandardRiskItem; the body shared by all variants is
built once. Credentials travel as `X-Api-Key`; the answer's `policyNumber` is the
external id.
"""
from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Callable
from typing import Any

import httpx

from app.orchestrator.base import InsuranceAdapter
from app.orchestrator.contract import EmissionResponse, EmitContext
from app.orchestrator.model import MappingError, StandardRiskItem

Mapper = Callable[[StandardRiskItem], dict[str, Any]]


def _date(item: StandardRiskItem, key: str) -> str | None:
    """An optional ISO date of insured_subject; a MappingError when present but malformed."""
    value = item.insured_subject.get(key)
    if value is None:
        return None
    try:
        return datetime.date.fromisoformat(str(value)).isoformat()
    except ValueError:
        raise MappingError(f"insured_subject.{key} is not an ISO date (YYYY-MM-DD)") from None


def _text(item: StandardRiskItem, key: str) -> str | None:
    value = item.insured_subject.get(key)
    return str(value) if value not in (None, "") else None


def map_travel(item: StandardRiskItem) -> dict[str, Any]:
    departure, back = _date(item, "departureDate"), _date(item, "returnDate")
    if departure and back and back < departure:
        raise MappingError("insured_subject.returnDate is before departureDate")
    return {"destination": _text(item, "destination"), "departureDate": departure,
            "returnDate": back, "travellers": max(1, len(item.beneficiaries))}


def map_health(item: StandardRiskItem) -> dict[str, Any]:
    return {"birthDate": _date(item, "birthDate"),
            "preExistingConditions": bool(item.insured_subject.get("preExistingConditions", False))}


def map_home(item: StandardRiskItem) -> dict[str, Any]:
    value = item.insured_subject.get("buildingValue")
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
        raise MappingError("insured_subject.buildingValue must be a non-negative number")
    return {"address": _text(item, "address"), "postalCode": _text(item, "postalCode"),
            "buildingValue": value}


def map_lifestyle(item: StandardRiskItem) -> dict[str, Any]:
    return {"plan": item.policy.variant_name,
            "beneficiaries": [{"name": b.name, "share": b.share} for b in item.beneficiaries
                              if not b.is_holder]}


@dataclasses.dataclass(frozen=True)
class VariantClient:
    """PROVIDER_A's client for one product variant: its endpoint, product code and mapper."""

    http: httpx.AsyncClient
    url: httpx.URL
    product_code: str
    mapper: Mapper

    def body(self, item: StandardRiskItem) -> dict[str, Any]:
        subject = item.insured_subject
        holder = item.holder
        return {
            "productCode": self.product_code,
            "externalReference": item.uid,
            "partnerPolicyId": item.policy_uid,
            "insured": {
                "fullName": item.insured_name,
                "email": subject.get("email") or (holder.email if holder else None),
                "phone": subject.get("phone"),
                "documentId": subject.get("document") or (holder.document if holder else None),
            },
            "premium": {"amount": item.policy.premium, "currency": item.policy.currency},
            "coverages": [{"code": c.get("code"), "limit": c.get("limit")} for c in item.policy.coverages],
            item.variant: self.mapper(item),
        }


VARIANTS: dict[str, tuple[str, Mapper]] = {
    "travel": ("PA-TRAVEL", map_travel),
    "health": ("PA-HEALTH", map_health),
    "home": ("PA-HOME", map_home),
    "lifestyle": ("PA-LIFESTYLE", map_lifestyle),
}


class ProviderA(InsuranceAdapter):
    slug = "PROVIDER_A"
    variants = tuple(VARIANTS)

    def __init__(self, auth_config: dict[str, Any], http: httpx.AsyncClient,
                 state: dict[str, Any] | None = None) -> None:
        super().__init__(auth_config, http, state)
        self.api_key = self.setting("apiKey")
        self.clients = {variant: VariantClient(http, self.url_setting("baseUrl", path=f"/v1/{variant}/policies"),
                                               code, mapper)
                        for variant, (code, mapper) in VARIANTS.items()}

    async def access_token(self, item: StandardRiskItem, stale: str | None = None) -> str | None:
        return self.api_key

    def external_id(self, body: dict[str, Any]) -> Any:
        return body["policyNumber"]

    async def emit(self, item: StandardRiskItem, ctx: EmitContext) -> EmissionResponse:
        client = self.clients[item.variant]
        return await self.post(client.url, client.body(item), {"X-Api-Key": ctx.access_token or ""}, ctx)


ADAPTER = ProviderA
