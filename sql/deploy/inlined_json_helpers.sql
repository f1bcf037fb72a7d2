-- Deploy insurance:inlined_json_helpers to pg
-- requires: holder_risk_items
-- requires: emission_claims
-- requires: outbox_functions
-- requires: dashboard_access
-- requires: entry_point_guards
-- The one-row JSON helpers that the hot routes call for every row they answer, redefined as
-- SQL-standard bodies (BEGIN ATOMIC) without a SET clause, as request_claims did for the claim
-- helpers. A SQL function with a SET clause is never inlined: each statement that calls it
-- parses and plans its body again and saves and restores search_path around every call
-- (measured with pgbench on a tRPC byRiskItem statement of three emissions: 330 -> 245 us).
-- Inlined, the body becomes part of the caller's plan. A BEGIN ATOMIC body binds every name
-- when it is created (here under an empty search_path), so search_path cannot redirect it:
-- what SET guarded against. Same results, same grants; only the plan changes.
BEGIN;
SET LOCAL ROLE insurance_owner;
SET LOCAL search_path = '';

-- beneficiary_json(row): a beneficiary as the holder API shows it. STABLE, as jsonb_build_object
-- is: a body less volatile than its declaration is never inlined (it was IMMUTABLE).
CREATE OR REPLACE FUNCTION postsales.beneficiary_json(b insurance.beneficiaries) RETURNS jsonb
LANGUAGE sql STABLE
BEGIN ATOMIC
  SELECT jsonb_build_object('id', b.id, 'name', b.name, 'email', b.email, 'document', b.document,
                            'relationship', b.relationship, 'isHolder', b.is_holder, 'share', b.share);
END;

-- emission_json(e): an emission as the integration endpoints answer it.
CREATE OR REPLACE FUNCTION integrations.emission_json(e insurance.integration_emissions) RETURNS jsonb
LANGUAGE sql STABLE
BEGIN ATOMIC
  SELECT jsonb_build_object(
    'emissionId', e.id, 'riskItemId', e.risk_item_id, 'provider', e.provider, 'event', e.event,
    'status', e.status, 'externalId', e.external_id, 'attempts', e.attempts,
    'nextRetryAt', e.next_retry_at,
    'error', CASE WHEN e.status <> 'SUCCESS' THEN e.error_history -> -1 END);
END;

-- _emission_json(e): one emission as the dashboard shows it; lastError is the newest entry
-- of error_history.
CREATE OR REPLACE FUNCTION dashboard._emission_json(_e insurance.integration_emissions) RETURNS jsonb
LANGUAGE sql STABLE
BEGIN ATOMIC
  SELECT jsonb_build_object(
    'id', _e.id, 'riskItemId', _e.risk_item_id, 'provider', _e.provider, 'event', _e.event,
    'status', _e.status, 'attempts', _e.attempts, 'nextRetryAt', _e.next_retry_at,
    'lastError', _e.error_history -> -1, 'externalId', _e.external_id,
    'createdAt', _e.created_at, 'updatedAt', _e.updated_at);
END;

-- is_final(status): a delivery answered with this status needs no retry (null: no answer came).
CREATE OR REPLACE FUNCTION outbox.is_final(status integer) RETURNS boolean
LANGUAGE sql IMMUTABLE
BEGIN ATOMIC
  SELECT status IS NOT NULL AND status NOT IN (408, 409, 425, 429) AND status < 500;
END;

COMMIT;
