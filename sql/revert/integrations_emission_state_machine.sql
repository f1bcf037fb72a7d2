-- Revert insurance:integrations_emission_state_machine from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION integrations.retry_from_backoffice(bigint[]);
DROP FUNCTION integrations.record_batch(jsonb,jsonb);
DROP FUNCTION integrations.record_emission(bigint,text,text,jsonb,jsonb);
DROP FUNCTION integrations._record_outcomes(jsonb,jsonb);
DROP FUNCTION integrations._clean_text(text,integer);
DROP FUNCTION integrations.retry_delay(integer,numeric,numeric,numeric);
DROP FUNCTION integrations.retry_pending(bigint);

COMMIT;
