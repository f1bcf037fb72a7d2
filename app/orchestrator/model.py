"""StandardRiskItem: the canonical item handed to the adapters, validated from JSON.

The database builds it (`integrations.standard_risk_item(id)`, one JSON value); the
post-sales route receives it as a request body. Either way `StandardRiskItem.from_json`
checks the shape once, so that an adapter works on typed values and a bad item is a typed
`InvalidRiskItem` (code MAPPING_ERROR) rather than a KeyError deep inside a mapper.
"""
from __future__ import annotations

import dataclasses
from typing import Any

from app.orchestrator.contract import MAPPING_ERROR

VARIANTS = ("travel", "health", "home", "lifestyle")


class MappingError(Exception):
    """The item cannot be mapped to a provider's request (not retryable)."""

    code = MAPPING_ERROR


class InvalidRiskItem(MappingError):
    """The StandardRiskItem itself is malformed."""


def _str(data: dict, key: str, where: str, required: bool = True) -> str | None:
    value = data.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidRiskItem(f"{where}{key} must be a non-empty string")
    return value


def _obj(data: dict, key: str, where: str = "") -> dict[str, Any]:
    value = data.get(key, {})
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise InvalidRiskItem(f"{where}{key} must be an object")
    return value


def _number(data: dict, key: str, where: str, default: float = 0) -> float:
    value = data.get(key, default)
    if value is None:
        value = default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidRiskItem(f"{where}{key} must be a number")
    return float(value)


@dataclasses.dataclass(frozen=True)
class Beneficiary:
    name: str
    email: str | None = None
    document: str | None = None
    relationship: str | None = None
    is_holder: bool = False
    share: float = 0.0

    @classmethod
    def from_json(cls, data: Any, index: int) -> Beneficiary:
        where = f"beneficiaries[{index}]."
        if not isinstance(data, dict):
            raise InvalidRiskItem(f"beneficiaries[{index}] must be an object")
        is_holder = data.get("isHolder", False)
        if not isinstance(is_holder, bool):
            raise InvalidRiskItem(f"{where}isHolder must be a boolean")
        email = _str(data, "email", where, required=False)
        if is_holder and not email:
            raise InvalidRiskItem(f"{where}email is required for a holder")
        return cls(name=_str(data, "name", where), email=email,
                   document=_str(data, "document", where, required=False),
                   relationship=_str(data, "relationship", where, required=False),
                   is_holder=is_holder, share=_number(data, "share", where))

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "email": self.email, "document": self.document,
                "relationship": self.relationship, "isHolder": self.is_holder, "share": self.share}


@dataclasses.dataclass(frozen=True)
class Policy:
    """The product the item is insured under: the package variant and its price."""

    variant_name: str | None = None
    coverages: tuple[dict[str, Any], ...] = ()
    premium: float = 0.0
    currency: str = "EUR"
    created_at: str | None = None

    @classmethod
    def from_json(cls, data: dict) -> Policy:
        coverages = data.get("coverages") or []
        if not isinstance(coverages, list) or not all(isinstance(c, dict) for c in coverages):
            raise InvalidRiskItem("policy.coverages must be a list of objects")
        currency = data.get("currency") or "EUR"
        if not isinstance(currency, str) or len(currency) != 3:
            raise InvalidRiskItem("policy.currency must be a 3-letter code")
        return cls(variant_name=_str(data, "variantName", "policy.", required=False),
                   coverages=tuple(coverages), premium=_number(data, "premium", "policy."),
                   currency=currency, created_at=_str(data, "createdAt", "policy.", required=False))

    def as_json(self) -> dict[str, Any]:
        return {"variantName": self.variant_name, "coverages": list(self.coverages),
                "premium": self.premium, "currency": self.currency, "createdAt": self.created_at}


@dataclasses.dataclass(frozen=True)
class StandardRiskItem:
    uid: str
    package_id: int
    package_uid: str | None
    variant: str
    policy_uid: str
    insured_subject: dict[str, Any]
    beneficiaries: tuple[Beneficiary, ...] = ()
    authorized_claimants: tuple[str, ...] = ()   # holder e-mails
    metadata: dict[str, Any] = dataclasses.field(default_factory=dict)
    policy: Policy = Policy()
    id: int | None = None
    channel_id: str | None = None
    status: str = "active"

    @classmethod
    def from_json(cls, data: Any) -> StandardRiskItem:
        """Validates a StandardRiskItem given as a JSON object; raises InvalidRiskItem."""
        if not isinstance(data, dict):
            raise InvalidRiskItem("a StandardRiskItem must be a JSON object")
        package_id = data.get("package_id")
        if isinstance(package_id, bool) or not isinstance(package_id, int):
            raise InvalidRiskItem("package_id must be an integer")
        item_id = data.get("id")
        if item_id is not None and (isinstance(item_id, bool) or not isinstance(item_id, int)):
            raise InvalidRiskItem("id must be an integer")
        variant = data.get("variant")
        if variant not in VARIANTS:
            raise InvalidRiskItem(f"variant must be one of {', '.join(VARIANTS)}")
        beneficiaries = data.get("beneficiaries") or []
        if not isinstance(beneficiaries, list):
            raise InvalidRiskItem("beneficiaries must be a list")
        claimants = data.get("authorized_claimants") or []
        if not isinstance(claimants, list):
            raise InvalidRiskItem("authorized_claimants must be a list")
        emails = []
        for i, c in enumerate(claimants):
            email = c.get("email") if isinstance(c, dict) else c
            if not isinstance(email, str) or "@" not in email:
                raise InvalidRiskItem(f"authorized_claimants[{i}] must carry an e-mail")
            emails.append(email)
        return cls(
            id=item_id,
            uid=_str(data, "uid", ""),
            package_id=package_id,
            package_uid=_str(data, "package_uid", "", required=False),
            channel_id=_str(data, "channel_id", "", required=False),
            policy_uid=_str(data, "policy_uid", ""),
            status=_str(data, "status", "", required=False) or "active",
            variant=variant,
            insured_subject=_obj(data, "insured_subject"),
            beneficiaries=tuple(Beneficiary.from_json(b, i) for i, b in enumerate(beneficiaries)),
            authorized_claimants=tuple(emails),
            metadata=_obj(data, "metadata"),
            policy=Policy.from_json(_obj(data, "policy")),
        )

    @property
    def holder(self) -> Beneficiary | None:
        return next((b for b in self.beneficiaries if b.is_holder), None)

    @property
    def insured_name(self) -> str:
        """The insured subject's name, else the holder's; a MappingError when neither exists."""
        name = self.insured_subject.get("name") or self.insured_subject.get("fullName")
        if isinstance(name, str) and name.strip():
            return name.strip()
        if self.holder is not None:
            return self.holder.name
        raise MappingError("the item has neither insured_subject.name nor a holder beneficiary")

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "uid": self.uid, "package_id": self.package_id,
                "package_uid": self.package_uid, "channel_id": self.channel_id,
                "policy_uid": self.policy_uid, "status": self.status, "variant": self.variant,
                "insured_subject": self.insured_subject,
                "beneficiaries": [b.as_json() for b in self.beneficiaries],
                "authorized_claimants": [{"email": e} for e in self.authorized_claimants],
                "metadata": self.metadata, "policy": self.policy.as_json()}
