// Drives the real @trpc/client (11.x) against a running app and prints what it saw as JSON.
// Used by tests/dashboard/test_real_client.py; env: BASE_URL, EMAIL, PASSWORD, WIRE_INPUT (JSON:
// {riskItemId, syncRiskItemId, retryEmissionId, missingId}).
import { createTRPCClient, httpBatchLink, httpBatchStreamLink, httpLink } from "@trpc/client";
import superjson from "superjson";

const { BASE_URL, EMAIL, PASSWORD } = process.env;
const input = JSON.parse(process.env.WIRE_INPUT);
const url = `${BASE_URL}/api/trpc`;

// A real login: the session cookie comes from POST /api/auth/login.
const login = await fetch(`${BASE_URL}/api/auth/login`, {
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ email: EMAIL, password: PASSWORD }),
});
if (login.status !== 200) throw new Error(`login answered ${login.status}`);
const cookie = login.headers.getSetCookie().map((c) => c.split(";")[0]).join("; ");

// Every HTTP request the links make, to show batching really happened.
const requests = [];
const recordingFetch = (target, init = {}) => {
  requests.push({ url: String(target), method: init.method ?? "GET", stream: Boolean(init.headers?.["trpc-accept"]) });
  return fetch(target, init);
};

const client = (makeLink, opts = {}) =>
  createTRPCClient({ links: [makeLink({ url, fetch: recordingFetch, headers: () => ({ cookie }), ...opts })] });

async function outcome(promise) {
  try {
    return { ok: true, data: await promise };
  } catch (error) {
    return {
      ok: false, name: error.name, message: error.message, code: error.shape?.code,
      dataCode: error.data?.code, httpStatus: error.data?.httpStatus, path: error.data?.path,
    };
  }
}

async function requestsOf(run) {
  const before = requests.length;
  const results = await run();
  return { results, requests: requests.slice(before) };
}

const all = (promises) => Promise.all(promises.map(outcome));
const report = {};

const plain = client(httpLink);
report.query = await outcome(plain.integrationEmissions.byRiskItem.query({ riskItemId: input.riskItemId }));
report.queryWithoutInput = await outcome(plain.integrationEmissions.list.query());
report.mutation = await outcome(plain.integrationEmissions.syncBeneficiaries.mutate({ riskItemId: input.syncRiskItemId }));
report.retry = await outcome(plain.integrationEmissions.retryEmissions.mutate({ emissionIds: [input.retryEmissionId] }));
report.notFound = await outcome(plain.integrationEmissions.byRiskItem.query({ riskItemId: input.missingId }));
report.badInput = await outcome(plain.integrationEmissions.byRiskItem.query({ riskItemId: "one" }));
report.unknownProcedure = await outcome(plain.integrationEmissions.nothing.query());
report.queryAsMutation = await outcome(plain.integrationEmissions.byRiskItem.mutate({ riskItemId: input.riskItemId }));
report.unauthorized = await outcome(
  createTRPCClient({ links: [httpLink({ url })] }).integrationEmissions.list.query({ limit: 1 }));

const batch = client(httpBatchLink);
report.batch = await requestsOf(() => all([
  batch.integrationEmissions.byRiskItem.query({ riskItemId: input.riskItemId }),
  batch.integrationEmissions.list.query({ limit: 2 }),
  batch.integrationEmissions.byRiskItem.query({ riskItemId: input.missingId }),
]));

const stream = client(httpBatchStreamLink);
report.stream = await requestsOf(() => all([
  stream.integrationEmissions.byRiskItem.query({ riskItemId: input.riskItemId }),
  stream.integrationEmissions.list.query({ limit: 2 }),
  stream.integrationEmissions.byRiskItem.query({ riskItemId: input.missingId }),
]));

const sjBatch = client(httpBatchLink, { transformer: superjson });
report.superjsonBatch = await requestsOf(() => all([
  sjBatch.integrationEmissions.byRiskItem.query({ riskItemId: input.riskItemId }),
  sjBatch.integrationEmissions.list.query(),
  sjBatch.integrationEmissions.byRiskItem.query({ riskItemId: input.missingId }),
]));
const sjStream = client(httpBatchStreamLink, { transformer: superjson });
report.superjsonStream = await all([
  sjStream.integrationEmissions.byRiskItem.query({ riskItemId: input.riskItemId }),
  sjStream.integrationEmissions.list.query({ since: new Date(0), limit: 1 }),
  sjStream.integrationEmissions.byRiskItem.query({ riskItemId: input.missingId }),
]);
const sjPlain = client(httpLink, { transformer: superjson });
report.superjsonMutation = await outcome(
  sjPlain.integrationEmissions.syncBeneficiaries.mutate({ riskItemId: input.syncRiskItemId }));
report.superjsonError = await outcome(sjPlain.integrationEmissions.byRiskItem.query({ riskItemId: input.missingId }));

process.stdout.write(JSON.stringify(report));
