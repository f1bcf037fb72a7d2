-- Deploy insurance:insurance_people to pg
-- A person's data on request (export), erased where no duty keeps it (erasure), contract data
-- pseudonymized when its retention ends (the hourly retention job), and every operator's view of a
-- person's data audited. A person is an e-mail address: as a holder (holder beneficiary rows and
-- authorized_claimants), as a beneficiary, or as the insured subject of an item.
-- What holds personal data, and how long it is kept, is declared in insurance.personal_data and
-- insurance.retention_rules; pseudonymization clears the insured-subject keys declared there.
-- The entry points are admin.person_export / person_erase / audit_about (the command line) and
-- dashboard.person_export / person_erase / record_view (the back-office).
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- policy_retention(): how long contract data outlives its policy (POLICY_RETENTION, applied by
-- `python -m app migrate` as the database setting insurance.policy_retention; ten years).
CREATE FUNCTION insurance.policy_retention() RETURNS interval
LANGUAGE sql STABLE SET search_path = '' AS $$
  SELECT coalesce(nullif(pg_catalog.current_setting('insurance.policy_retention', true), ''), '10 years')::interval
$$;
COMMENT ON FUNCTION insurance.policy_retention() IS
  'How long contract data is kept after its policy ends: the database setting insurance.policy_retention '
  '(POLICY_RETENTION), ten years when unset. Any role.';

CREATE FUNCTION insurance.set_policy_retention(_retention interval) RETURNS void
LANGUAGE plpgsql SET search_path = '' AS $$
BEGIN
  IF _retention IS NULL OR _retention < interval '1 day' THEN
    RAISE EXCEPTION USING ERRCODE = '22023', MESSAGE = 'the policy retention must be at least a day';
  END IF;
  EXECUTE pg_catalog.format('ALTER DATABASE %I SET insurance.policy_retention = %L',
                            pg_catalog.current_database(), _retention::text);
END
$$;
COMMENT ON FUNCTION insurance.set_policy_retention(interval) IS
  'Sets how long contract data is kept after its policy ends (a database setting read by the retention '
  'functions; at least a day). Operators (migrate, POLICY_RETENTION).';
REVOKE ALL ON FUNCTION insurance.set_policy_retention(interval) FROM PUBLIC;

-- retained_until(item): when the contract data of an ended policy may be pseudonymized; NULL
-- while the policy is active. Items ended before ended_at existed count from their last change.
CREATE FUNCTION insurance.retained_until(_item insurance.risk_items) RETURNS timestamptz
LANGUAGE sql STABLE SET search_path = '' AS $$
  SELECT CASE WHEN (_item).status <> 'active'
              THEN coalesce((_item).ended_at, (_item).updated_at) + insurance.policy_retention() END
$$;
COMMENT ON FUNCTION insurance.retained_until(insurance.risk_items) IS
  'When the contract data of an ended policy reaches the end of its retention (ended_at + POLICY_RETENTION); NULL '
  'while the policy is active. Any role.';

-- _person_items(email): the items a person appears in, with every role they have there.
CREATE FUNCTION insurance._person_items(_email text)
RETURNS TABLE (risk_item_id bigint, roles text[])
LANGUAGE sql STABLE SET search_path = '' AS $$
  SELECT p.risk_item_id, pg_catalog.array_agg(DISTINCT p.role ORDER BY p.role)
    FROM (SELECT b.risk_item_id, CASE WHEN b.is_holder THEN 'holder' ELSE 'beneficiary' END AS role
            FROM insurance.beneficiaries b WHERE b.email = _email
          UNION ALL
          SELECT ac.risk_item_id, 'holder' FROM insurance.authorized_claimants ac WHERE ac.email = _email
          UNION ALL
          -- No index on the insured subject's e-mail: a scan, for an operator's rare request.
          SELECT r.id, 'insured' FROM insurance.risk_items r WHERE r.insured_subject ->> 'email' = _email) p
   GROUP BY p.risk_item_id
$$;
COMMENT ON FUNCTION insurance._person_items(text) IS
  'The risk items an e-mail appears in (holder, beneficiary, insured) with its roles there. Owner-run people '
  'functions only.';
REVOKE ALL ON FUNCTION insurance._person_items(text) FROM PUBLIC;

-- _person_export(actor, email, via): everything held about one person, as one JSON document; audited.
CREATE FUNCTION insurance._person_export(_actor text, _email text, _via text) RETURNS jsonb
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _who   text := pg_catalog.lower(pg_catalog.btrim(_email));
  _audit bigint;
  _items bigint[];
  _like  text;
BEGIN
  IF _who IS NULL OR _who !~ '^[^@\s]+@[^@\s]+\.[^@\s]+$' THEN
    RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = 'an e-mail address such as ada@example.com', DETAIL = 'BAD_REQUEST';
  END IF;
  _like := '%"' || pg_catalog.replace(pg_catalog.replace(pg_catalog.replace(_who, '\', '\\'), '%', '\%'), '_', '\_') || '"%';
  _audit := insurance.record_audit(_actor, 'people.export', pg_catalog.jsonb_build_array(_who), 'ok',
                                   CASE WHEN _via IS NOT NULL THEN pg_catalog.jsonb_build_object('via', _via) END);
  SELECT pg_catalog.array_agg(p.risk_item_id) INTO _items FROM insurance._person_items(_who) p;
  RETURN pg_catalog.jsonb_build_object(
    'email', _who,
    'exportedAt', pg_catalog.now(),
    'auditId', _audit,
    'policyRetention', insurance.policy_retention()::text,
    'riskItems', coalesce((
      SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
               'uid', r.uid, 'policyUid', r.policy_uid, 'roles', p.roles, 'status', r.status,
               'endedAt', r.ended_at, 'retainedUntil', insurance.retained_until(r),
               'pseudonymizedAt', z.at, 'document', d.document) ORDER BY r.id)
        FROM insurance._person_items(_who) p
        JOIN insurance.risk_items r ON r.id = p.risk_item_id
        LEFT JOIN insurance.risk_item_documents d ON d.risk_item_id = r.id
        LEFT JOIN insurance.pseudonymized_items z ON z.risk_item_id = r.id), '[]'),
    'beneficiaries', coalesce((
      SELECT pg_catalog.jsonb_agg(insurance.beneficiary_json(b) || pg_catalog.jsonb_build_object('riskItemUid', r.uid)
                                  ORDER BY b.id)
        FROM insurance.beneficiaries b JOIN insurance.risk_items r ON r.id = b.risk_item_id
       WHERE b.email = _who), '[]'),
    'emissions', coalesce((
      SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
               'id', e.id, 'riskItemUid', r.uid, 'provider', e.provider, 'event', e.event, 'status', e.status,
               'externalId', e.external_id, 'attempts', e.attempts, 'createdAt', e.created_at,
               'updatedAt', e.updated_at, 'response', e.response, 'errors', e.error_history) ORDER BY e.id)
        FROM insurance.integration_emissions e JOIN insurance.risk_items r ON r.id = e.risk_item_id
       WHERE e.risk_item_id = ANY (_items)), '[]'),
    'loginCodes', coalesce((
      SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
               'createdAt', o.created_at, 'expiresAt', o.expires_at, 'usedAt', o.consumed_at,
               'failedAttempts', o.attempts, 'address', pg_catalog.host(o.ip)) ORDER BY o.created_at)
        FROM insurance.postsales_otp o WHERE o.email = _who), '[]'),
    -- Outbox rows whose body names the person (a scan: rows are kept OUTBOX_RETENTION), and the
    -- partner webhooks about their items' emissions (by the emission index).
    'outbox', coalesce((
      SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
               'id', q.id, 'url', q.url, 'createdAt', q.created_at, 'deliveredAt', q.delivered_at,
               'deadAt', q.dead_at, 'attempts', q.attempts, 'body', q.body) ORDER BY q.id)
        FROM (SELECT q.* FROM outbox.http_requests q WHERE q.body::text LIKE _like
              UNION
              SELECT q.* FROM outbox.http_requests q
               WHERE ((q.body #>> '{data,emissionId}')::bigint) IN (
                       SELECT e.id FROM insurance.integration_emissions e WHERE e.risk_item_id = ANY (_items))) q), '[]'),
    'audit', coalesce((
      SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
               'id', a.id, 'at', a.at, 'actor', a.actor, 'via', a.via, 'action', a.action,
               'targets', a.targets, 'result', a.result) ORDER BY a.id)
        FROM insurance.audit_log a
       WHERE a.targets @> pg_catalog.jsonb_build_array(_who)
          OR a.targets @> pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object('email', _who))), '[]'));
END
$$;
COMMENT ON FUNCTION insurance._person_export(text, text, text) IS
  'Everything held about the person of _email as one JSON document: risk items (roles, document, retention), '
  'beneficiary rows, emissions, login codes with addresses, outbox rows naming them, audit rows about them; '
  'writes the audit row people.export first. Raises PT400 for a malformed e-mail. Owner-run entry points only.';
REVOKE ALL ON FUNCTION insurance._person_export(text, text, text) FROM PUBLIC;

-- _pseudonymize_items(ids, reason): the people of these items replaced, their contract kept.
-- Names become 'erased', e-mails a random address of the reserved .invalid domain, document numbers
-- and the declared keys of the insured subject go, the insurer's stored answers go.
CREATE FUNCTION insurance._pseudonymize_items(_ids bigint[], _reason text) RETURNS integer
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _done integer;
BEGIN
  IF pg_catalog.cardinality(_ids) = 0 THEN
    RETURN 0;
  END IF;
  UPDATE insurance.beneficiaries b
     SET name = 'erased', document = NULL,
         email = CASE WHEN b.email IS NOT NULL
                      THEN 'erased-' || pg_catalog.replace(pg_catalog.gen_random_uuid()::text, '-', '') || '@erased.invalid' END
   WHERE b.risk_item_id = ANY (_ids);
  UPDATE insurance.risk_items r
     SET insured_subject = r.insured_subject - ARRAY(
           SELECT pg_catalog.substr(m.json_path, 3) FROM insurance.personal_data m
            WHERE m.relation = 'insurance.risk_items' AND m.column_name = 'insured_subject'
              AND m.json_path ~ '^\$\.[A-Za-z_]+$')
   WHERE r.id = ANY (_ids);
  UPDATE insurance.integration_emissions e SET response = NULL, error_history = '[]'
   WHERE e.risk_item_id = ANY (_ids) AND (e.response IS NOT NULL OR e.error_history <> '[]');
  INSERT INTO insurance.pseudonymized_items (risk_item_id, reason)
  SELECT i, _reason FROM pg_catalog.unnest(_ids) i ON CONFLICT DO NOTHING;
  GET DIAGNOSTICS _done = ROW_COUNT;
  RETURN _done;
END
$$;
COMMENT ON FUNCTION insurance._pseudonymize_items(bigint[], text) IS
  'Pseudonymizes the contract data of the items _ids: beneficiaries'' names and documents replaced, their '
  'e-mails random .invalid addresses, the insured subject''s declared keys removed, provider answers cleared; '
  'records each item once in pseudonymized_items; returns how many were new. Owner-run people functions only.';
REVOKE ALL ON FUNCTION insurance._pseudonymize_items(bigint[], text) FROM PUBLIC;

-- _person_erase(actor, email, via): delete what no duty keeps, pseudonymize contract data whose
-- retention has ended, say what is kept and until when. Idempotent; audited (people.erase).
CREATE FUNCTION insurance._person_erase(_actor text, _email text, _via text) RETURNS jsonb
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _who      text := pg_catalog.lower(pg_catalog.btrim(_email));
  _like     text;
  _items    bigint[];
  _ended    bigint[];
  _kept     jsonb;
  _gone     jsonb;
  _otp      integer;
  _outbox   integer;
  _answers  integer;
  _trips    integer;
  _pseudo   integer;
BEGIN
  IF _who IS NULL OR _who !~ '^[^@\s]+@[^@\s]+\.[^@\s]+$' THEN
    RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = 'an e-mail address such as ada@example.com', DETAIL = 'BAD_REQUEST';
  END IF;
  _like := '%"' || pg_catalog.replace(pg_catalog.replace(pg_catalog.replace(_who, '\', '\\'), '%', '\%'), '_', '\_') || '"%';
  SELECT pg_catalog.array_agg(p.risk_item_id ORDER BY p.risk_item_id) INTO _items FROM insurance._person_items(_who) p;
  _items := coalesce(_items, '{}');
  SELECT pg_catalog.array_agg(r.id ORDER BY r.id) INTO _ended
    FROM insurance.risk_items r WHERE r.id = ANY (_items) AND insurance.retained_until(r) <= pg_catalog.now();
  _ended := coalesce(_ended, '{}');
  -- What the answer says is kept, read before the pseudonymization changes the rows.
  SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
           'riskItemUid', r.uid, 'policyUid', r.policy_uid, 'roles', p.roles, 'status', r.status,
           'until', insurance.retained_until(r),
           'why', CASE WHEN r.status = 'active'
                       THEN 'contract data of an active policy: kept while it is active and POLICY_RETENTION after it ends'
                       ELSE 'contract data: kept POLICY_RETENTION after the policy ended, then pseudonymized' END)
           ORDER BY r.id) FILTER (WHERE r.id <> ALL (_ended)), '[]'),
         coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('riskItemUid', r.uid, 'policyUid', r.policy_uid)
           ORDER BY r.id) FILTER (WHERE r.id = ANY (_ended)), '[]')
    INTO _kept, _gone
    FROM insurance._person_items(_who) p JOIN insurance.risk_items r ON r.id = p.risk_item_id;

  DELETE FROM insurance.postsales_otp o WHERE o.email = _who;
  GET DIAGNOSTICS _otp = ROW_COUNT;
  DELETE FROM insurance.account_ceiling_trips t WHERE t.account = _who;
  GET DIAGNOSTICS _trips = ROW_COUNT;
  -- Delivered calls need no body; one still queued keeps it until it is delivered.
  UPDATE outbox.http_requests q SET body = NULL
   WHERE q.delivered_at IS NOT NULL AND q.body::text LIKE _like;
  GET DIAGNOSTICS _outbox = ROW_COUNT;
  UPDATE insurance.integration_emissions e SET response = NULL, error_history = '[]'
   WHERE e.risk_item_id = ANY (_items) AND (e.response IS NOT NULL OR e.error_history <> '[]');
  GET DIAGNOSTICS _answers = ROW_COUNT;
  _pseudo := insurance._pseudonymize_items(_ended, 'erasure after retention');

  PERFORM insurance.record_audit(_actor, 'people.erase', pg_catalog.jsonb_build_array(_who), 'ok',
            pg_catalog.jsonb_strip_nulls(pg_catalog.jsonb_build_object(
              'via', _via, 'loginCodes', _otp, 'ceilingTrips', _trips, 'outboxBodies', _outbox,
              'providerAnswers', _answers, 'pseudonymized', pg_catalog.jsonb_array_length(_gone),
              'kept', pg_catalog.jsonb_array_length(_kept))));
  RETURN pg_catalog.jsonb_build_object(
    'email', _who,
    'erased', pg_catalog.jsonb_build_object('loginCodes', _otp, 'ceilingTrips', _trips, 'outboxBodies', _outbox,
                                            'providerAnswers', _answers),
    'pseudonymized', _gone,
    'kept', _kept,
    'keptForever', pg_catalog.jsonb_build_array(
      'the audit log''s rows about this person (accountability, append-only), this erasure''s among them'));
END
$$;
COMMENT ON FUNCTION insurance._person_erase(text, text, text) IS
  'Erases what no duty keeps about the person of _email (login codes and their addresses, ceiling trips, bodies '
  'of delivered outbox rows naming them, stored provider answers of their items), pseudonymizes their items whose '
  'retention has ended, and answers {email, erased{counts}, pseudonymized[items], kept[items, roles, until, why], '
  'keptForever}; idempotent; audited (people.erase). Raises PT400 for a malformed e-mail. Owner-run entry points only.';
REVOKE ALL ON FUNCTION insurance._person_erase(text, text, text) FROM PUBLIC;

-- apply_personal_data_retention(): the retention job's share: contract data whose retention
-- has ended is pseudonymized, a bounded batch per run (the next run goes on).
CREATE FUNCTION insurance.apply_personal_data_retention() RETURNS integer
LANGUAGE sql SECURITY DEFINER SET search_path = '' AS $$
  SELECT insurance._pseudonymize_items(ARRAY(
           SELECT r.id FROM insurance.risk_items r
            WHERE r.status <> 'active' AND insurance.retained_until(r) <= pg_catalog.now()
              AND NOT EXISTS (SELECT FROM insurance.pseudonymized_items z WHERE z.risk_item_id = r.id)
            ORDER BY r.id LIMIT 1000), 'retention ended')
$$;
COMMENT ON FUNCTION insurance.apply_personal_data_retention() IS
  'Pseudonymizes the contract data of at most 1000 ended policies whose POLICY_RETENTION has passed; returns '
  'how many. insurance_cron (the hourly retention job), operators.';
REVOKE ALL ON FUNCTION insurance.apply_personal_data_retention() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION insurance.apply_personal_data_retention() TO insurance_cron;

-- _mark_risk_item_ended: when a policy ends, for its retention.
CREATE FUNCTION insurance._mark_risk_item_ended() RETURNS trigger
LANGUAGE plpgsql SET search_path = '' AS $$
BEGIN
  NEW.ended_at := CASE WHEN NEW.status = 'active' THEN NULL ELSE pg_catalog.now() END;
  RETURN NEW;
END
$$;
COMMENT ON FUNCTION insurance._mark_risk_item_ended() IS
  'BEFORE UPDATE OF status trigger of risk_items: ended_at is now when the status leaves active, NULL when it '
  'comes back. Trigger only.';
REVOKE ALL ON FUNCTION insurance._mark_risk_item_ended() FROM PUBLIC;
-- A plain trigger: its WHEN skips every update that leaves the status as it was.
-- SHARE ROW EXCLUSIVE on risk_items: a catalog change only, held for a moment; no row is read or written
CREATE TRIGGER risk_items_mark_ended BEFORE UPDATE OF status ON insurance.risk_items
  FOR EACH ROW WHEN ((OLD.status = 'active') IS DISTINCT FROM (NEW.status = 'active'))
  EXECUTE FUNCTION insurance._mark_risk_item_ended();

COMMIT;
