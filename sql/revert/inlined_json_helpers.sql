-- Revert insurance:inlined_json_helpers from pg: the bodies as their owning changes made them.
BEGIN;
SET LOCAL ROLE insurance_owner;

CREATE OR REPLACE FUNCTION postsales.beneficiary_json(b insurance.beneficiaries) RETURNS jsonb
LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
  SELECT jsonb_build_object('id', b.id, 'name', b.name, 'email', b.email, 'document', b.document,
                            'relationship', b.relationship, 'isHolder', b.is_holder, 'share', b.share)
$$;

CREATE OR REPLACE FUNCTION integrations.emission_json(e insurance.integration_emissions) RETURNS jsonb
LANGUAGE sql STABLE SET search_path = '' AS $$
  SELECT pg_catalog.jsonb_build_object(
    'emissionId', e.id, 'riskItemId', e.risk_item_id, 'provider', e.provider, 'event', e.event,
    'status', e.status, 'externalId', e.external_id, 'attempts', e.attempts,
    'nextRetryAt', e.next_retry_at,
    'error', CASE WHEN e.status <> 'SUCCESS' THEN e.error_history -> -1 END)
$$;

CREATE OR REPLACE FUNCTION dashboard._emission_json(_e insurance.integration_emissions) RETURNS jsonb
LANGUAGE sql STABLE SET search_path = '' AS $$
  SELECT jsonb_build_object(
    'id', _e.id, 'riskItemId', _e.risk_item_id, 'provider', _e.provider, 'event', _e.event,
    'status', _e.status, 'attempts', _e.attempts, 'nextRetryAt', _e.next_retry_at,
    'lastError', _e.error_history -> -1, 'externalId', _e.external_id,
    'createdAt', _e.created_at, 'updatedAt', _e.updated_at)
$$;

CREATE OR REPLACE FUNCTION outbox.is_final(status integer) RETURNS boolean
LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
  SELECT status IS NOT NULL AND status NOT IN (408, 409, 425, 429) AND status < 500
$$;

COMMIT;
