"""PROVIDER_B: issues policies for several sales channels, each with its own agent account.

auth_config: {"baseUrl": "...", "channels": [
    {"channelId": "<partner channel uuid>", "agentCode": "...", "apiKey": "..."},
    {"packageUid": "<package uid>", "agentCode": "...", "apiKey": "..."},
    {"default": true, "agentCode": "...", "apiKey": "...", "baseUrl": "optional override"}]}

The channel entry is chosen by the item's partner channel, then its package, then the
default entry. Beneficiaries become PROVIDER_B's own request types: the holder is the
`policyHolder`, beneficiaries with a share are `BENEFICIARY` entries (percentage), the
others `ADDITIONAL_INSURED`.
"""
from __future__ import annotations

from typing import Any

import httpx

from app.orchestrator.base import InsuranceAdapter, ProviderNotConfigured
from app.orchestrator.contract import EmissionResponse, EmitContext
from app.orchestrator.model import VARIANTS, Beneficiary, MappingError, StandardRiskItem


def _person(kind: str, b: Beneficiary) -> dict[str, Any]:
    return {"kind": kind, "fullName": b.name, "email": b.email, "document": b.document,
            "relationship": b.relationship}


def map_parties(item: StandardRiskItem) -> dict[str, Any]:
    """The policy holder, beneficiaries and additional insured of PROVIDER_B's request."""
    holder = item.holder
    if holder is not None:
        policy_holder = _person("POLICY_HOLDER", holder)
    else:
        email = item.insured_subject.get("email")
        if not email:
            raise MappingError("PROVIDER_B needs a holder beneficiary or insured_subject.email")
        policy_holder = {"kind": "POLICY_HOLDER", "fullName": item.insured_name, "email": email,
                         "document": item.insured_subject.get("document"), "relationship": "self"}
    others = [b for b in item.beneficiaries if not b.is_holder]
    beneficiaries = [{**_person("BENEFICIARY", b), "percentage": b.share} for b in others if b.share > 0]
    if sum(b["percentage"] for b in beneficiaries) > 100:
        raise MappingError("beneficiary shares add up to more than 100")
    return {"policyHolder": policy_holder, "beneficiaries": beneficiaries,
            "additionalInsured": [_person("ADDITIONAL_INSURED", b) for b in others if b.share <= 0]}


class ProviderB(InsuranceAdapter):
    slug = "PROVIDER_B"
    variants = VARIANTS

    def __init__(self, auth_config: dict[str, Any], http: httpx.AsyncClient,
                 state: dict[str, Any] | None = None) -> None:
        super().__init__(auth_config, http, state)
        channels = auth_config.get("channels")
        if not isinstance(channels, list) or not channels or not all(isinstance(c, dict) for c in channels):
            raise ProviderNotConfigured("PROVIDER_B auth_config.channels[] is missing")
        path = "/api/v2/emissions"
        default_url = self.url_setting("baseUrl", path=path) if auth_config.get("baseUrl") else None
        self.urls: list[httpx.URL] = []
        for channel in channels:
            self.setting("agentCode", channel)
            self.setting("apiKey", channel)
            url = self.url_setting("baseUrl", channel, path) if channel.get("baseUrl") else default_url
            if url is None:
                raise ProviderNotConfigured("PROVIDER_B auth_config.baseUrl is missing")
            self.urls.append(url)
        self.channels = channels

    def channel(self, item: StandardRiskItem) -> int:
        """Index of the item's channels[] entry: by partner channel, then package, then default."""
        for key, value in (("channelId", item.channel_id), ("packageUid", item.package_uid)):
            if value is not None:
                for i, entry in enumerate(self.channels):
                    if entry.get(key) == value:
                        return i
        for i, entry in enumerate(self.channels):
            if entry.get("default") is True:
                return i
        raise ProviderNotConfigured("PROVIDER_B has no channel configuration for this item")

    async def access_token(self, item: StandardRiskItem, stale: str | None = None) -> str | None:
        return self.channels[self.channel(item)]["apiKey"]

    def external_id(self, body: dict[str, Any]) -> Any:
        return body["emission"]["certificateNumber"]

    async def emit(self, item: StandardRiskItem, ctx: EmitContext) -> EmissionResponse:
        index = self.channel(item)
        channel = self.channels[index]
        body = {"agentCode": channel["agentCode"], "externalRef": item.uid,
                "product": item.variant.upper(), "policyReference": item.policy_uid,
                "premium": {"amount": item.policy.premium, "currency": item.policy.currency},
                "insuredSubject": {"fullName": item.insured_name, **item.insured_subject},
                **map_parties(item)}
        headers = {"Authorization": f"Bearer {ctx.access_token}", "X-Agent-Code": channel["agentCode"]}
        return await self.post(self.urls[index], body, headers, ctx)


ADAPTER = ProviderB
