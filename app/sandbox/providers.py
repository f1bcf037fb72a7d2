"""The sandbox's own description of each provider's API: what a request must look like.

Each `check_*` returns None for a valid body, or the reason a strict provider would give in
its 400 answer. Written from the providers' API descriptions, never from the adapters.
"""
from __future__ import annotations

import datetime
import re
from typing import Any

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_CURRENCY = re.compile(r"^[A-Z]{3}$")
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")

A_PRODUCTS = {"travel": "PA-TRAVEL", "health": "PA-HEALTH", "home": "PA-HOME", "lifestyle": "PA-LIFESTYLE"}
B_PRODUCTS = {"TRAVEL", "HEALTH", "HOME", "LIFESTYLE"}


class Invalid(Exception):
    """A body that breaks the provider's API description; the message is the 400 reason."""


def _text(obj: dict, key: str, where: str = "", optional: bool = False) -> str | None:
    value = obj.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        raise Invalid(f"{where}{key} is required (non-empty string)")
    return value


def _email(obj: dict, key: str, where: str = "", optional: bool = False) -> None:
    value = _text(obj, key, where, optional)
    if value is not None and not _EMAIL.match(value):
        raise Invalid(f"{where}{key} is not an e-mail address")


def _number(obj: dict, key: str, where: str = "", optional: bool = False, low: float = 0) -> None:
    value = obj.get(key)
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < low:
        raise Invalid(f"{where}{key} must be a number >= {low}")


def _date(obj: dict, key: str, where: str) -> None:
    value = obj.get(key)
    if value is None:
        return
    try:
        datetime.date.fromisoformat(value)
    except (TypeError, ValueError):
        raise Invalid(f"{where}{key} must be a date (YYYY-MM-DD)") from None


def _object(obj: dict, key: str, where: str = "") -> dict:
    value = obj.get(key)
    if not isinstance(value, dict):
        raise Invalid(f"{where}{key} is required (object)")
    return value


def _list(obj: dict, key: str, where: str = "") -> list:
    value = obj.get(key)
    if not isinstance(value, list):
        raise Invalid(f"{where}{key} is required (array)")
    return value


def _money(body: dict) -> None:
    premium = _object(body, "premium")
    _number(premium, "amount", "premium.")
    if not isinstance(premium.get("currency"), str) or not _CURRENCY.match(premium["currency"]):
        raise Invalid("premium.currency must be an ISO 4217 code")


def check_provider_a(variant: str, body: Any) -> None:
    """POST /provider-a/v1/{variant}/policies"""
    if not isinstance(body, dict):
        raise Invalid("body must be a JSON object")
    if body.get("productCode") != A_PRODUCTS[variant]:
        raise Invalid(f"productCode must be {A_PRODUCTS[variant]} on the {variant} endpoint")
    reference = _text(body, "externalReference")
    if not _UUID.match(reference):
        raise Invalid("externalReference must be a UUID")
    _text(body, "partnerPolicyId")
    insured = _object(body, "insured")
    _text(insured, "fullName", "insured.")
    _email(insured, "email", "insured.", optional=True)
    _money(body)
    for i, coverage in enumerate(_list(body, "coverages")):
        if not isinstance(coverage, dict) or not isinstance(coverage.get("code"), str):
            raise Invalid(f"coverages[{i}].code is required")
    block = _object(body, variant)
    where = f"{variant}."
    if variant == "travel":
        if isinstance(block.get("travellers"), bool) or not isinstance(block.get("travellers"), int) \
                or block["travellers"] < 1:
            raise Invalid("travel.travellers must be an integer >= 1")
        _date(block, "departureDate", where)
        _date(block, "returnDate", where)
    elif variant == "health":
        _date(block, "birthDate", where)
        if not isinstance(block.get("preExistingConditions"), bool):
            raise Invalid("health.preExistingConditions must be a boolean")
    elif variant == "home":
        _number(block, "buildingValue", where, optional=True)
    else:
        for i, b in enumerate(_list(block, "beneficiaries", where)):
            if not isinstance(b, dict):
                raise Invalid(f"lifestyle.beneficiaries[{i}] must be an object")
            _text(b, "name", f"lifestyle.beneficiaries[{i}].")
            _number(b, "share", f"lifestyle.beneficiaries[{i}].")


def _party(obj: Any, kind: str, where: str) -> None:
    if not isinstance(obj, dict):
        raise Invalid(f"{where} must be an object")
    if obj.get("kind") != kind:
        raise Invalid(f"{where}.kind must be {kind}")
    _text(obj, "fullName", f"{where}.")
    _email(obj, "email", f"{where}.", optional=kind != "POLICY_HOLDER")


def check_provider_b(agent: str, body: Any) -> None:
    """POST /provider-b/api/v2/emissions"""
    if not isinstance(body, dict):
        raise Invalid("body must be a JSON object")
    if body.get("agentCode") != agent:
        raise Invalid("agentCode does not match the authenticated agent")
    _text(body, "externalRef")
    _text(body, "policyReference")
    if body.get("product") not in B_PRODUCTS:
        raise Invalid(f"product must be one of {', '.join(sorted(B_PRODUCTS))}")
    _money(body)
    _object(body, "insuredSubject")
    _party(body.get("policyHolder"), "POLICY_HOLDER", "policyHolder")
    total = 0.0
    for i, b in enumerate(_list(body, "beneficiaries")):
        _party(b, "BENEFICIARY", f"beneficiaries[{i}]")
        _number(b, "percentage", f"beneficiaries[{i}].", low=0.01)
        total += b["percentage"]
    if total > 100:
        raise Invalid("beneficiary percentages add up to more than 100")
    for i, b in enumerate(_list(body, "additionalInsured")):
        _party(b, "ADDITIONAL_INSURED", f"additionalInsured[{i}]")


def check_mail(body: Any) -> None:
    """POST /mail/v1/messages"""
    if not isinstance(body, dict):
        raise Invalid("body must be a JSON object")
    _text(body, "from")
    to = _list(body, "to")
    if not to:
        raise Invalid("to must name at least one recipient")
    for i, r in enumerate(to):
        if not isinstance(r, dict):
            raise Invalid(f"to[{i}] must be an object")
        _email(r, "email", f"to[{i}].")
    _text(body, "subject")
    _text(body, "html")
    _text(body, "text")


def check_chat(body: Any) -> None:
    """POST /chat/webhook (Slack-compatible incoming webhook)"""
    if not isinstance(body, dict):
        raise Invalid("invalid_payload")
    text, blocks = body.get("text"), body.get("blocks")
    if not (isinstance(text, str) and text.strip()) and not (isinstance(blocks, list) and blocks):
        raise Invalid("no_text")
