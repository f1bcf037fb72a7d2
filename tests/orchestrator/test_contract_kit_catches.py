"""The kit fails an adapter that lost a behaviour: proof that it tests something.

In a temporary copy of the code, one adapter is replaced by a broken one (the module's
`ADAPTER` rebound, as a careless edit would leave it), and the kit runs there in a child
pytest for that adapter only; it must fail on exactly what was broken, and pass the rest.
"""
from __future__ import annotations

import re

import pytest

from tests.orchestrator.conftest import copy_repo, run_in

KIT = "tests/orchestrator/test_contract_kit.py"

BROKEN = {
    "builds its own request, without the Idempotency-Key": ("provider_a.py", "PROVIDER_A", '''

class _OwnRequest(ProviderA):
    async def emit(self, item, ctx):
        client = self.clients[item.variant]
        response = await self.http.post(client.url, json=client.body(item),
                                        headers={"X-Api-Key": ctx.access_token or ""})
        if response.is_success:
            return EmissionResponse(success=True, external_id=response.json()["policyNumber"])
        return EmissionResponse(success=False, errors=(self.classify(response),))


ADAPTER = _OwnRequest
''', {"test_each_variant_maps_to_a_request_its_insurer_accepts[PROVIDER_A-travel]",
      "test_one_idempotency_key_one_issue[PROVIDER_A]"}),
    "classifies 429 as final": ("provider_b.py", "PROVIDER_B", '''

import dataclasses


class _Final429(ProviderB):
    def classify(self, response):
        error = super().classify(response)
        return dataclasses.replace(error, retryable=False) if response.status_code == 429 else error


ADAPTER = _Final429
''', {"test_408_425_429_and_5xx_are_retryable_and_tried_once[PROVIDER_B-429]"}),
}


@pytest.mark.parametrize("broken", list(BROKEN))
def test_the_kit_fails_an_adapter_that_lost_a_behaviour(broken, tmp_path, admin, sandbox):
    module, slug, tail, expected = BROKEN[broken]
    copy = copy_repo(tmp_path / "repo")
    adapter = copy / "app" / "orchestrator" / "insurers" / module
    adapter.write_text(adapter.read_text() + tail)
    done = run_in(copy, admin, sandbox, "pytest", "-q", "-p", "no:cacheprovider", "-rf", KIT, "-k", slug)
    failed = set(re.findall(r"^FAILED \S+::(\S+)", done.stdout, re.MULTILINE))
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert expected <= failed, done.stdout[-3000:]
    passed = re.search(r"(\d+) passed", done.stdout)
    assert passed and int(passed.group(1)) > 0, "the rest of the kit still passes"
    assert all(slug in name for name in failed)
