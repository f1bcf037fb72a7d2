-- Deploy insurance:insurance_check_rules to pg
-- The sentence of every CHECK, kept by the database beside the rule (COMMENT ON CONSTRAINT), and
-- insurance.check_rules() that reads them: a value a CHECK refuses is answered with its field and
-- its sentence, never the SQL expression (gateway._broken_rules reads the comments for the
-- gateway's create; app/errors.py CheckRules reads check_rules() for every other route).
-- Comments rather than a list in Python: the text is attached to the constraint itself, so it
-- goes wherever the constraint goes (a dump, a rename), pg_dump and psql's \d+ show it beside
-- the rule, and tests/test_check_rules.py fails for a CHECK without one. They are written here,
-- not in each table's file, because those files are released (v0.9.0): a later CHECK carries
-- its comment in its own change.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- The sentence of every CHECK, beside the rule: what a client is told when a value breaks it
-- (field + sentence: gateway._broken_rules and app/errors.py CheckRules read these). A sentence
-- follows the field's name ("policy_uid must have 1 to 100 characters"); never SQL.
COMMENT ON CONSTRAINT email_check ON DOMAIN insurance.email IS 'must be an e-mail address of at most 254 characters';
COMMENT ON CONSTRAINT packages_name_check ON insurance.packages IS 'must have 1 to 200 characters';
COMMENT ON CONSTRAINT packages_uid_check ON insurance.packages IS 'must be 1 to 64 letters, digits, dots, dashes or underscores, starting with a letter or digit';
COMMENT ON CONSTRAINT packages_sales_integration_slug_check ON insurance.packages IS 'must be an integration slug such as PROVIDER_A';
COMMENT ON CONSTRAINT packages_post_sales_integration_slug_check ON insurance.packages IS 'must be an integration slug such as PROVIDER_A';
COMMENT ON CONSTRAINT package_variants_code_check ON insurance.package_variants IS 'must be travel, health, home or lifestyle';
COMMENT ON CONSTRAINT package_variants_name_check ON insurance.package_variants IS 'must have 1 to 200 characters';
COMMENT ON CONSTRAINT package_variants_coverages_check ON insurance.package_variants IS 'must be a JSON array';
COMMENT ON CONSTRAINT package_variants_premium_check ON insurance.package_variants IS 'must be zero or more';
COMMENT ON CONSTRAINT package_variants_currency_check ON insurance.package_variants IS 'must be a three-letter currency code such as EUR';
COMMENT ON CONSTRAINT channels_name_check ON insurance.channels IS 'must have 1 to 200 characters';
COMMENT ON CONSTRAINT channels_branches_check ON insurance.channels IS 'must name at least one branch of v1, v2, ia/v1, ia/v2, integrations/v1 and integrations/v2';
COMMENT ON CONSTRAINT channels_api_key_hash_check ON insurance.channels IS 'must be a SHA-256 digest (32 bytes)';
COMMENT ON CONSTRAINT channels_ia_keys_check ON insurance.channels IS 'must be a JSON object';
COMMENT ON CONSTRAINT channels_integration_payload_check ON insurance.channels IS 'must be a JSON object';
COMMENT ON CONSTRAINT channels_key_generation_check ON insurance.channels IS 'must be 1 or more';
COMMENT ON CONSTRAINT channels_check ON insurance.channels IS 'a revoked channel cannot be active';
COMMENT ON CONSTRAINT risk_items_policy_uid_check ON insurance.risk_items IS 'must have 1 to 100 characters';
COMMENT ON CONSTRAINT risk_items_insured_subject_check ON insurance.risk_items IS 'must be a JSON object';
COMMENT ON CONSTRAINT risk_items_metadata_check ON insurance.risk_items IS 'must be a JSON object';
COMMENT ON CONSTRAINT risk_items_status_check ON insurance.risk_items IS 'must be active, cancelled or expired';
COMMENT ON CONSTRAINT authorized_claimants_email_check ON insurance.authorized_claimants IS 'must be an e-mail address';
COMMENT ON CONSTRAINT beneficiaries_name_check ON insurance.beneficiaries IS 'must have 1 to 200 characters';
COMMENT ON CONSTRAINT beneficiaries_document_check ON insurance.beneficiaries IS 'must have at most 64 characters';
COMMENT ON CONSTRAINT beneficiaries_relationship_check ON insurance.beneficiaries IS 'must have at most 64 characters';
COMMENT ON CONSTRAINT beneficiaries_share_check ON insurance.beneficiaries IS 'must be a percentage from 0 to 100';
COMMENT ON CONSTRAINT postsales_otp_email_check ON insurance.postsales_otp IS 'must be lower-case';
COMMENT ON CONSTRAINT postsales_otp_attempts_check ON insurance.postsales_otp IS 'must be zero or more';
COMMENT ON CONSTRAINT postsales_otp_check ON insurance.postsales_otp IS 'a code must expire after it is issued';
COMMENT ON CONSTRAINT client_ip_limits_kind_check ON insurance.client_ip_limits IS 'must be otp_request or otp_verify_failure';
COMMENT ON CONSTRAINT client_ip_limits_hits_check ON insurance.client_ip_limits IS 'must be zero or more';
COMMENT ON CONSTRAINT integrations_slug_check ON insurance.integrations IS 'must be an integration slug such as PROVIDER_A';
COMMENT ON CONSTRAINT integrations_auth_config_check ON insurance.integrations IS 'must be a JSON object';
COMMENT ON CONSTRAINT integration_emissions_provider_check ON insurance.integration_emissions IS 'must be an integration slug such as PROVIDER_A';
COMMENT ON CONSTRAINT integration_emissions_event_check ON insurance.integration_emissions IS 'must be an event name such as POLICY_CREATED';
COMMENT ON CONSTRAINT integration_emissions_status_check ON insurance.integration_emissions IS 'must be SUCCESS, FAILED or ABANDONED';
COMMENT ON CONSTRAINT integration_emissions_attempts_check ON insurance.integration_emissions IS 'must be zero or more';
COMMENT ON CONSTRAINT integration_emissions_error_history_check ON insurance.integration_emissions IS 'must be a JSON array';
COMMENT ON CONSTRAINT integration_emissions_check ON insurance.integration_emissions IS 'a failed emission needs its next retry time';
COMMENT ON CONSTRAINT integration_emissions_check1 ON insurance.integration_emissions IS 'a successful emission has no next retry time';
COMMENT ON CONSTRAINT orders_event_check ON insurance.orders IS 'must be an event name such as POLICY_CREATED';
COMMENT ON CONSTRAINT orders_data_check ON insurance.orders IS 'must be a JSON object';
COMMENT ON CONSTRAINT dashboard_users_password_hash_check ON insurance.dashboard_users IS 'must be an argon2 hash';
COMMENT ON CONSTRAINT dashboard_sessions_token_hash_check ON insurance.dashboard_sessions IS 'must be a SHA-256 digest (32 bytes)';
COMMENT ON CONSTRAINT dashboard_sessions_check ON insurance.dashboard_sessions IS 'a session must expire after it starts';
COMMENT ON CONSTRAINT dashboard_login_failures_key_check ON insurance.dashboard_login_failures IS 'must be a login counter key (email:, email+ip: or ip:)';
COMMENT ON CONSTRAINT dashboard_login_failures_failures_check ON insurance.dashboard_login_failures IS 'must be 1 or more';
COMMENT ON CONSTRAINT audit_log_actor_check ON insurance.audit_log IS 'must not be empty';
COMMENT ON CONSTRAINT audit_log_on_behalf_of_check ON insurance.audit_log IS 'must not be empty';
COMMENT ON CONSTRAINT audit_log_action_check ON insurance.audit_log IS 'must be an action such as emissions.retry';
COMMENT ON CONSTRAINT audit_log_targets_check ON insurance.audit_log IS 'must be a JSON array';
COMMENT ON CONSTRAINT audit_log_result_check ON insurance.audit_log IS 'must not be empty';
COMMENT ON CONSTRAINT audit_log_details_check ON insurance.audit_log IS 'must be a JSON object';
COMMENT ON CONSTRAINT audit_log_via_check ON insurance.audit_log IS 'must be cli, backoffice or trpc';
COMMENT ON CONSTRAINT account_ceiling_counts_kind_check ON insurance.account_ceiling_counts IS 'must be dashboard_login, otp_request or otp_verify';
COMMENT ON CONSTRAINT account_ceiling_counts_trips_check ON insurance.account_ceiling_counts IS 'must be zero or more';
COMMENT ON CONSTRAINT account_ceiling_trips_kind_check ON insurance.account_ceiling_trips IS 'must be dashboard_login, otp_request or otp_verify';
COMMENT ON CONSTRAINT rate_limits_hits_check ON insurance.rate_limits IS 'must be 1 or more';
COMMENT ON CONSTRAINT channel_item_counts_count_check ON insurance.channel_item_counts IS 'must be zero or more';
COMMENT ON CONSTRAINT batch_routes_url_check ON outbox.batch_routes IS 'must be a path starting with /';
COMMENT ON CONSTRAINT batch_routes_batch_url_check ON outbox.batch_routes IS 'must be a path starting with /';
COMMENT ON CONSTRAINT http_requests_url_check ON outbox.http_requests IS 'must be an http(s) URL or a path starting with /';
COMMENT ON CONSTRAINT http_requests_method_check ON outbox.http_requests IS 'must be POST, PUT, PATCH, GET or DELETE';
COMMENT ON CONSTRAINT http_requests_headers_check ON outbox.http_requests IS 'must be a JSON object';
COMMENT ON CONSTRAINT http_requests_attempts_check ON outbox.http_requests IS 'must be zero or more';
COMMENT ON CONSTRAINT request_counts_state_check ON outbox.request_counts IS 'must be pending or dead';
COMMENT ON CONSTRAINT request_count_deltas_state_check ON outbox.request_count_deltas IS 'must be pending or dead';
COMMENT ON CONSTRAINT secrets_salt_check ON webhooks.secrets IS 'must be 32 bytes';
COMMENT ON CONSTRAINT secrets_previous_salt_check ON webhooks.secrets IS 'must be 32 bytes';

-- check_rules(): every commented CHECK of our schemas, as the app maps a violation:
-- [{schema, relation (the table or the domain), constraint, columns, message}]. A table's rule
-- names its columns; a domain's names the columns that use it (typed with it, or whose CHECK
-- casts to it), since PostgreSQL reports a domain's violation without the column.
CREATE FUNCTION insurance.check_rules() RETURNS jsonb
LANGUAGE sql STABLE SET search_path = '' AS $$
  SELECT insurance.require_role('insurance_anon');
  SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
           'schema', n.nspname, 'relation', coalesce(t.relname, d.typname), 'constraint', c.conname,
           'columns', pg_catalog.to_jsonb(CASE WHEN c.conrelid <> 0
             THEN ARRAY(SELECT a.attname::text FROM pg_catalog.pg_attribute a
                         WHERE a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey) ORDER BY a.attnum)
             ELSE ARRAY(SELECT DISTINCT a.attname::text
                          FROM pg_catalog.pg_attribute a
                         WHERE a.attnum > 0 AND NOT a.attisdropped
                           AND (a.atttypid = c.contypid
                                OR EXISTS (SELECT FROM pg_catalog.pg_depend dep
                                             JOIN pg_catalog.pg_constraint uc ON uc.oid = dep.objid
                                            WHERE dep.classid = 'pg_catalog.pg_constraint'::pg_catalog.regclass
                                              AND dep.refclassid = 'pg_catalog.pg_type'::pg_catalog.regclass
                                              AND dep.refobjid = c.contypid
                                              AND uc.conrelid = a.attrelid AND a.attnum = ANY (uc.conkey)))
                           AND a.attrelid IN (SELECT r.oid FROM pg_catalog.pg_class r
                                               WHERE r.relkind = 'r' AND r.relnamespace = c.connamespace)) END),
           'message', pg_catalog.obj_description(c.oid, 'pg_constraint'))
           ORDER BY n.nspname, c.conname), '[]')
    FROM pg_catalog.pg_constraint c
    JOIN pg_catalog.pg_namespace n ON n.oid = c.connamespace
    LEFT JOIN pg_catalog.pg_class t ON t.oid = c.conrelid
    LEFT JOIN pg_catalog.pg_type d ON d.oid = c.contypid
   WHERE c.contype = 'c' AND n.nspname IN ('insurance', 'outbox', 'webhooks')
     AND pg_catalog.obj_description(c.oid, 'pg_constraint') IS NOT NULL
$$;
COMMENT ON FUNCTION insurance.check_rules() IS
  'Every commented CHECK of the insurance, outbox and webhooks schemas: [{schema, relation, constraint, '
  'columns, message}] (a domain''s columns: those that use it). Read once by the app to answer a '
  'violation with its field and sentence. Anonymous role.';
REVOKE ALL ON FUNCTION insurance.check_rules() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION insurance.check_rules() TO insurance_anon, insurance_app;

COMMIT;
