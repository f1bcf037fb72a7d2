-- Verify insurance:inlined_json_helpers on pg: SQL-standard bodies, no SET clause (inlinable).
DO $$
BEGIN
  ASSERT (SELECT count(*) FROM pg_catalog.pg_proc
           WHERE oid IN ('postsales.beneficiary_json(insurance.beneficiaries)'::regprocedure,
                         'integrations.emission_json(insurance.integration_emissions)'::regprocedure,
                         'dashboard._emission_json(insurance.integration_emissions)'::regprocedure,
                         'outbox.is_final(integer)'::regprocedure)
             AND prosqlbody IS NOT NULL AND proconfig IS NULL) = 4,
    'the JSON helpers are SQL-standard bodies without SET';
END
$$;
