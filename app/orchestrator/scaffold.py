"""`adapters new SLUG`: write a new insurer's adapter module, its sandbox description and its
test stub, a working start that the contract kit passes before the first edit; `adapters list`.

    python -m app adapters new PROVIDER_D --auth oauth2 --variants travel,home

writes app/orchestrator/insurers/<slug>.py (the adapter: registered by being there),
app/orchestrator/insurers/<slug>.sandbox.json (the insurer's side, for the sandbox) and
tests/orchestrator/test_insurer_<slug>.py (its own tests; the kit runs it anyway), here with
the slug provider_d.
docs/adapters.md walks through turning them into the real insurer.
"""
from __future__ import annotations

import json
import string
from pathlib import Path

from app.cli import fail, print_json, slug_arg

ROOT = Path(__file__).resolve().parents[2]
AUTH = ("api-key", "oauth2")

ADAPTER = string.Template('''"""$slug: issues a policy per item through one endpoint (POST {baseUrl}/v1/policies).

auth_config: $auth_config_doc

Written by `python -m app adapters new $slug`: a working start that the contract kit
(tests/orchestrator/test_contract_kit.py) passes against the insurer's description beside it
($module.sandbox.json). Rewrite the mapping and the calls from the insurer's integration
guide, and its description from the same guide, apart (docs/adapters.md).
"""
from __future__ import annotations

from typing import Any

import httpx

$imports


def map_item(item: StandardRiskItem) -> dict[str, Any]:
    """$slug's request for one item."""
    holder = item.holder
    email = holder.email if holder is not None else item.insured_subject.get("email")
    if not email:
        raise MappingError("$slug needs a holder e-mail")
    return {"reference": item.uid, "product": item.variant.upper(), "policyReference": item.policy_uid,
            "policyholder": {"name": item.insured_name, "email": email},
            "premium": {"amount": item.policy.premium, "currency": item.policy.currency}}


class $cls($base):
    slug = "$slug"
    variants = $variants

    def __init__(self, auth_config: dict[str, Any], http: httpx.AsyncClient,
                 state: dict[str, Any] | None = None) -> None:
        super().__init__(auth_config, http, state)
        self.url = self.url_setting("baseUrl", path="/v1/policies")
$init_tail
    def external_id(self, body: dict[str, Any]) -> Any:
        return body["policy"]["id"]

    async def emit(self, item: StandardRiskItem, ctx: EmitContext) -> EmissionResponse:
        return await self.post(self.url, map_item(item), $headers, ctx)


ADAPTER = $cls
''')

API_KEY_INIT = '''        self.api_key = self.setting("apiKey")

    async def access_token(self, item: StandardRiskItem, stale: str | None = None) -> str | None:
        return self.api_key
'''

TEST_STUB = string.Template('''"""$slug's own tests. The contract kit (tests/orchestrator/test_contract_kit.py) runs this
adapter by itself: faults, classification, idempotency, credentials, each variant's
mapping against its description. Here: what only $slug does."""
from __future__ import annotations

import uuid

import pytest

from tests.fixtures.risk_items import sample

pytestmark = pytest.mark.usefixtures("pointed")


async def test_the_insurer_receives_the_item_and_its_policyholder(orchestrator, sbx):
    item, key = sample("$variant"), f"test-{uuid.uuid4()}"
    result = await orchestrator.orchestrate_insurance_emission("$slug", item, key)
    assert result.ok, result
    [seen] = sbx.requests("$slug", key)
    assert seen["body"]["reference"] == item.uid
    assert seen["body"]["policyholder"]["email"] == item.holder.email
''')


def _schema(variants: list[str]) -> dict:
    text = {"type": "string", "minLength": 1, "pattern": "\\S"}
    return {"type": "object", "required": ["reference", "product", "policyReference", "policyholder", "premium"],
            "properties": {
                "reference": {"type": "string", "format": "uuid"},
                "product": {"enum": [v.upper() for v in variants]},
                "policyReference": text,
                "policyholder": {"type": "object", "required": ["name", "email"],
                                 "properties": {"name": text, "email": {"type": "string", "format": "email"}}},
                "premium": {"type": "object", "required": ["amount", "currency"],
                            "properties": {"amount": {"type": "number", "minimum": 0},
                                           "currency": {"type": "string", "pattern": "^[A-Z]{3}$"}}}}}


def description(slug: str, auth: str, variants: list[str]) -> dict:
    """The insurer's side, as the sandbox serves it, in the shape of app/sandbox/descriptions.py."""
    prefix = "/" + slug.lower().replace("_", "-")
    name = slug.lower().replace("_", "-")
    if auth == "oauth2":
        auth_block = {"type": "oauth2", "tokenPath": f"{prefix}/oauth2/token", "identityProvider": f"{slug}_IDP",
                      "clients": {f"sbx-{name}-client": f"sbx-{name}-secret"}, "tokenTtl": 3600}
        config = {"baseUrl": "{sandbox}" + prefix, "tokenUrl": "{sandbox}" + f"{prefix}/oauth2/token",
                  "clientId": f"sbx-{name}-client", "clientSecret": f"sbx-{name}-secret"}
    else:
        auth_block = {"type": "apiKey", "header": "X-Api-Key", "keys": {f"sbx-{name}-key": {}}}
        config = {"baseUrl": "{sandbox}" + prefix, "apiKey": f"sbx-{name}-key"}
    return {
        "slug": slug,
        "about": f"{slug}'s policy API as its integration guide describes it. Written from the insurer's side; "
                 "the adapter never reads this file.",
        "prefix": prefix,
        "issues": "policies",
        "auth": auth_block,
        "authConfig": config,
        "errors": {"unauthorized": {"status": 401, "body": {"error": "unauthorized",
                                                            "reason": "missing or unknown credentials"}}},
        "routes": [{"method": "POST", "path": "/v1/policies", "variants": variants, "request": _schema(variants),
                    "success": {"status": 201, "body": {"policy": {"id": slug[:1] + slug[-1] + "-{seq:07d}",
                                                                   "status": "ISSUED",
                                                                   "reference": "{body.reference}"}}}}],
    }


def files(slug: str, auth: str, variants: list[str]) -> dict[str, str]:
    """Relative path -> text of everything `adapters new` writes."""
    module = slug.lower()
    cls = "".join(part.title() for part in module.split("_"))
    oauth2 = auth == "oauth2"
    adapter = ADAPTER.substitute(
        slug=slug, module=module, cls=cls,
        variants="(" + ", ".join(f'"{v}"' for v in variants) + (",)" if len(variants) == 1 else ")"),
        base="OAuth2Adapter" if oauth2 else "InsuranceAdapter",
        imports="\n".join([*([] if oauth2 else ["from app.orchestrator.base import InsuranceAdapter"]),
                            "from app.orchestrator.contract import EmissionResponse, EmitContext",
                            "from app.orchestrator.model import MappingError, StandardRiskItem",
                            *(["from app.orchestrator.oauth2 import OAuth2Adapter"] if oauth2 else [])]),
        init_tail="" if oauth2 else API_KEY_INIT,
        headers="self.auth_headers(ctx)" if oauth2 else '{"X-Api-Key": ctx.access_token or ""}',
        auth_config_doc=('{"baseUrl": "https://...", "tokenUrl": "https://.../oauth2/token", "clientId": "...", '
                         '"clientSecret": "...", "scope": "optional"}') if oauth2 else
                        '{"baseUrl": "https://...", "apiKey": "..."}')
    return {
        f"app/orchestrator/insurers/{module}.py": adapter,
        f"app/orchestrator/insurers/{module}.sandbox.json": json.dumps(description(slug, auth, variants), indent=2) + "\n",
        f"tests/orchestrator/test_insurer_{module}.py": TEST_STUB.substitute(slug=slug, variant=variants[0]),
    }


def new(args) -> int:
    from app.orchestrator.model import VARIANTS
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in variants if v not in VARIANTS]
    if not variants or unknown:
        fail(f"--variants must name some of {', '.join(VARIANTS)}", code=2)
    root = Path(args.root).resolve()
    written = files(args.slug, args.auth, list(dict.fromkeys(variants)))
    existing = [path for path in written if (root / path).exists()]
    if existing or args.slug in _registered(root):
        fail(f"{args.slug} exists already ({', '.join(existing) or 'a module declares it'}): nothing written", code=2)
    for path, text in written.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    print_json({"slug": args.slug, "written": list(written), **hints(args.slug)})
    return 0


def hints(slug: str) -> dict[str, str]:
    """What to do next, as docs/adapters.md says it (a test keeps the two the same): the kit,
    which makes a database of its own when no DATABASE_URL is set, then the running stack."""
    module = slug.lower()
    return {"test": f'.venv/bin/pytest tests/orchestrator/test_contract_kit.py tests/orchestrator/test_insurer_{module}.py '
                    f'-k "{slug} or {module}"',
            "then": f"restart `make run`: its sandbox then serves {slug} and its insurers point at it "
                    "(a new adapter module is found when a process starts)"}


def _registered(root: Path) -> set[str]:
    """Slugs the descriptions under `root` already claim (read as data: no import of `root`)."""
    return {json.loads(p.read_text())["slug"] for p in (root / "app/orchestrator/insurers").glob("*.sandbox.json")}


def show(args) -> int:
    from app.orchestrator.registry import ADAPTERS
    print_json([{"slug": slug, "variants": list(adapter.variants), "module": adapter.__module__}
                for slug, adapter in ADAPTERS.items()])
    return 0


def register(subparsers) -> None:
    from app.cli import command_group
    adapters = command_group(subparsers, "adapters", "the insurers' adapters: list them, scaffold a new one")
    p = adapters.add_parser("new", help="write a new insurer's adapter, its sandbox description and its test stub")
    p.add_argument("slug", type=slug_arg, metavar="SLUG")
    p.add_argument("--auth", choices=AUTH, default="api-key",
                   help="how the insurer authenticates calls: an API key header, or OAuth2 client credentials")
    p.add_argument("--variants", default="travel,health,home,lifestyle",
                   help="comma-separated product variants the insurer issues (default: all four)")
    p.add_argument("--root", default=str(ROOT), help="the repository to write into (default: this one)")
    p.set_defaults(func=new)
    p = adapters.add_parser("list", help="the registered adapters and their variants")
    p.set_defaults(func=show)
