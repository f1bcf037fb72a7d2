// A partner's script, written against the types openapi-typescript generates from
// /openapi/partner.json (./partner-api.d.ts) and openapi-fetch, unpatched and without a
// non-null assertion: authorize, create, list, get one, and a missing item read as the error
// envelope, and a minimal body (no optional field). Prints one JSON line for tests/test_openapi_clients.py.
// Usage: node partner.js BASE_URL API_KEY PACKAGE_UID POLICY_UID
import createClient from "openapi-fetch";
import type { components, paths } from "./partner-api.js";

type ErrorCode = components["schemas"]["ErrorCode"];
type RiskItemCreate = components["schemas"]["GatewayRiskItemCreate"];

function args(): [string, string, string, string] {
  const [baseUrl, apiKey, packageUid, policyUid] = process.argv.slice(2);
  if (baseUrl === undefined || apiKey === undefined || packageUid === undefined || policyUid === undefined) {
    console.error("usage: node partner.js BASE_URL API_KEY PACKAGE_UID POLICY_UID");
    process.exit(2);
  }
  return [baseUrl, apiKey, packageUid, policyUid];
}

const [baseUrl, apiKey, packageUid, policyUid] = args();
const client = createClient<paths>({ baseUrl });

function fail(step: string, answer: unknown): never {
  console.error(`${step} failed: ${JSON.stringify(answer)}`);
  process.exit(1);
}

async function main(): Promise<void> {
  const authorized = await client.GET("/api/gateway/v2/auth/authorize", { headers: { "x-api-key": apiKey } });
  if (!authorized.data) fail("authorize", authorized.error);
  const auth = { Authorization: `Bearer ${authorized.data.data.access_token}` };

  const body: RiskItemCreate = {
    package_uid: packageUid,
    policy_uid: policyUid,
    variant: "travel",
    insured_subject: { name: "Ada Lovelace", email: "ada@example.com", age: 36 },
    beneficiaries: [{ name: "Ada Lovelace", email: "ada@example.com", isHolder: true, share: 100 }],
    metadata: { campaign: "spring", tags: ["a", "b"] },
  };
  const created = await client.POST("/api/gateway/v2/risk-items", { headers: auth, body });
  if (!created.data) fail("create", created.error);
  const item = created.data.data;

  // The least the API accepts: a beneficiary without share or isHolder (the server's defaults,
  // 0 and false). With openapi-typescript's default options a schema `default` made them required.
  const minimal: RiskItemCreate = {
    package_uid: packageUid,
    policy_uid: `${policyUid}-MIN`,
    variant: "travel",
    insured_subject: { name: "Grace Hopper" },
    beneficiaries: [{ name: "Grace Hopper" }],
  };
  const small = await client.POST("/api/gateway/v2/risk-items", { headers: auth, body: minimal });
  if (!small.data) fail("create (minimal)", small.error);
  const defaults = small.data.data.beneficiaries[0];

  const listed = await client.GET("/api/gateway/v2/risk-items", { headers: auth, params: { query: { limit: 10 } } });
  if (!listed.data) fail("list", listed.error);
  const page = listed.data.data;
  if (!("nextCursor" in page)) fail("list (a keyset page)", page);

  const one = await client.GET("/api/gateway/v2/risk-items/{uid}", {
    headers: auth, params: { path: { uid: item.uid } },
  });
  if (!one.data) fail("get", one.error);

  const missing = await client.GET("/api/gateway/v2/risk-items/{uid}", {
    headers: auth, params: { path: { uid: "00000000-0000-4000-8000-000000000000" } },
  });
  if (missing.data || !missing.error) fail("a missing item", missing.data);
  const code: ErrorCode = missing.error.error.code;

  console.log(JSON.stringify({
    created: item.uid,
    holder: item.beneficiaries[0]?.isHolder ?? false,
    listed: page.items.map((i) => i.uid),
    total: page.total,
    got: one.data.data.policy_uid,
    metadata: one.data.data.metadata["campaign"] === "spring",
    missing: missing.response.status === 404 && code,
    requestId: missing.error.requestId,
    minimal: defaults?.share === 0 && defaults.isHolder === false,
  }));
}

main().catch((err: unknown) => fail("the script", String(err)));
