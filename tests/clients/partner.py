"""A partner's script, written against the client openapi-python-client generates from
/openapi/partner.json (package `partner_client`), unpatched: authorize, create, list, get one,
and a missing item read as the error envelope, and a minimal body (no optional field). Prints one JSON line for
tests/test_openapi_clients.py. Usage: partner.py BASE_URL API_KEY PACKAGE_UID POLICY_UID
"""
import json
import sys
import uuid

from partner_client import AuthenticatedClient
from partner_client.api.gateway import authorize_v2, create_risk_item_v2, get_risk_item_v2, list_risk_items_v2
from partner_client.models import (Error, ErrorCode, GatewayBeneficiaryInput, GatewayRiskItemAnswer,
                                   GatewayRiskItemCreate, GatewayRiskItemListAnswer, GatewayRiskItemPage,
                                   GatewayTokenAnswer, InsuredSubject, RiskItemMetadata, VariantCode)

base_url, api_key, package_uid, policy_uid = sys.argv[1:5]

token = authorize_v2.sync(client=AuthenticatedClient(base_url, token=api_key, prefix="", auth_header_name="x-api-key"))
if not isinstance(token, GatewayTokenAnswer):
    sys.exit(f"authorize failed: {token}")
partner = AuthenticatedClient(base_url, token=token.data.access_token)

subject = InsuredSubject.from_dict({"name": "Ada Lovelace", "email": "ada@example.com", "age": 36})
body = GatewayRiskItemCreate(package_uid=package_uid, policy_uid=policy_uid,
                             variant=VariantCode.TRAVEL, insured_subject=subject,
                             metadata=RiskItemMetadata.from_dict({"campaign": "spring", "tags": ["a", "b"]}),
                             beneficiaries=[GatewayBeneficiaryInput(name="Ada Lovelace", email="ada@example.com",
                                                                    is_holder=True, share=100)])
created = create_risk_item_v2.sync(client=partner, body=body)
if not isinstance(created, GatewayRiskItemAnswer):
    sys.exit(f"create failed: {created}")

# The least the API accepts: a beneficiary without share or is_holder (the server's defaults).
minimal = GatewayRiskItemCreate(package_uid=package_uid, policy_uid=f"{policy_uid}-MIN", variant=VariantCode.TRAVEL,
                                insured_subject=InsuredSubject.from_dict({"name": "Grace Hopper"}),
                                beneficiaries=[GatewayBeneficiaryInput(name="Grace Hopper")])
small = create_risk_item_v2.sync(client=partner, body=minimal)
if not isinstance(small, GatewayRiskItemAnswer):
    sys.exit(f"create (minimal) failed: {small}")

page = list_risk_items_v2.sync(client=partner, limit=10)
if not isinstance(page, GatewayRiskItemListAnswer) or not isinstance(page.data, GatewayRiskItemPage):
    sys.exit(f"list failed: {page}")

one = get_risk_item_v2.sync(client=partner, uid=created.data.uid)
if not isinstance(one, GatewayRiskItemAnswer):
    sys.exit(f"get failed: {one}")

missing = get_risk_item_v2.sync(client=partner, uid=uuid.uuid4())
if not isinstance(missing, Error):
    sys.exit(f"a missing item was not an error: {missing}")

print(json.dumps({
    "created": str(created.data.uid),
    "holder": created.data.beneficiaries[0].is_holder,
    "listed": [str(item.uid) for item in page.data.items],
    "total": page.data.total,
    "got": one.data.policy_uid,
    "metadata": one.data.metadata["campaign"] == "spring",
    "missing": missing.error.code == ErrorCode.RISK_ITEM_NOT_FOUND and missing.error.code.value,
    "requestId": missing.request_id,
    "minimal": small.data.beneficiaries[0].share == 0 and small.data.beneficiaries[0].is_holder is False,
}))
