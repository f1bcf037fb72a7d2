-- Deploy insurance:postsales_risk_items to pg
-- What a holder does with a post-sales JWT, as the caller under the holder's policies (an item it may
-- not see answers 401, never 404). CREATE OR REPLACE: it runs over the released functions.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- ---------------------------------------------------------------- JSON shapes and helpers

-- risk_item_json(id): one visible item with its package and beneficiaries, or NULL. The
-- item's stored document (risk_item_documents, under the holder's policy) without what
-- post-sales does not show (package_uid, metadata), with its package's uid and name (the
-- document's package_uid names it: a unique key). jsonb orders its keys itself, so the answer
-- is the one built from the tables.
CREATE OR REPLACE FUNCTION postsales.risk_item_json(_id bigint) RETURNS jsonb
LANGUAGE sql STABLE SET search_path = '' AS $$
  SELECT d.document - '{package_uid,metadata}'::text[]
         || jsonb_build_object('package', jsonb_build_object('uid', p.uid, 'name', p.name))
    FROM insurance.risk_item_documents d
    JOIN insurance.packages p ON p.uid = d.document ->> 'package_uid'
   WHERE d.risk_item_id = _id
$$;
COMMENT ON FUNCTION postsales.risk_item_json(bigint) IS
  'Risk item _id with its package and beneficiaries as the post-sales API shows it, or NULL when the '
  'caller cannot see it. Holder role.';

-- visible_item(_id, _uid): the id and package of the risk item named by id or uid when the
-- caller may see it (RLS); else the seed's 401 "access denied", also for an item that does not
-- exist (no enumeration), or when both are given and name different items.
CREATE OR REPLACE FUNCTION postsales.visible_item(_id bigint, _uid uuid, OUT id bigint, OUT package_id bigint)
LANGUAGE plpgsql STABLE SET search_path = '' AS $$
BEGIN
  SELECT ri.id, ri.package_id INTO visible_item.id, visible_item.package_id FROM insurance.risk_items ri
   WHERE (_id IS NOT NULL OR _uid IS NOT NULL)
     AND (_id IS NULL OR ri.id = _id) AND (_uid IS NULL OR ri.uid = _uid);
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'PT401', MESSAGE = 'access denied', DETAIL = 'ACCESS_DENIED';
  END IF;
END
$$;
COMMENT ON FUNCTION postsales.visible_item(bigint, uuid) IS
  '(id, package_id) of the item named by id or uid when the caller may see it; raises PT401 '
  'ACCESS_DENIED otherwise (also for an unknown item: no enumeration). Holder role.';

-- raise_unprocessable(code, message, details): a 422 with a stable code.
CREATE OR REPLACE FUNCTION postsales.raise_unprocessable(_code text, _message text, _details jsonb DEFAULT NULL) RETURNS void
LANGUAGE plpgsql SET search_path = '' AS $$
BEGIN
  RAISE EXCEPTION USING ERRCODE = 'PT422', MESSAGE = _message, DETAIL = _code,
    HINT = coalesce(_details::text, '');
END
$$;
COMMENT ON FUNCTION postsales.raise_unprocessable(text, text, jsonb) IS
  'Raises PT422 with DETAIL _code, MESSAGE _message and HINT _details. Holder role.';
-- beneficiary_fields(body, is_holder): validates a beneficiary body against the fields a
-- holder may set (name, email, document, relationship, share); 422 for anything else.
-- On the holder's own row the e-mail (their login) is not editable either.
CREATE OR REPLACE FUNCTION postsales.beneficiary_fields(_body jsonb, _is_holder boolean) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
  _forbidden text[];
BEGIN
  IF jsonb_typeof(_body) IS DISTINCT FROM 'object' OR _body = '{}' THEN
    PERFORM postsales.raise_unprocessable('EMPTY_PATCH', 'send the beneficiary fields to set');
  END IF;
  SELECT array_agg(k ORDER BY k) INTO _forbidden FROM jsonb_object_keys(_body) k
   WHERE k NOT IN ('name', 'email', 'document', 'relationship', 'share')
      OR (_is_holder AND k = 'email');
  IF _forbidden IS NOT NULL THEN
    PERFORM postsales.raise_unprocessable('FIELD_NOT_EDITABLE',
      'only name, email, document, relationship and share may be set (not the holder''s e-mail)',
      jsonb_build_object('fields', _forbidden));
  END IF;
  IF (_body ? 'name' AND jsonb_typeof(_body -> 'name') IS DISTINCT FROM 'string')
     OR (_body ? 'share' AND jsonb_typeof(_body -> 'share') IS DISTINCT FROM 'number')
     OR EXISTS (SELECT FROM unnest(ARRAY['email', 'document', 'relationship']) f
                 WHERE _body ? f AND jsonb_typeof(_body -> f) NOT IN ('string', 'null')) THEN
    PERFORM postsales.raise_unprocessable('INVALID_VALUE',
      'name is a string, share a number, email, document and relationship strings or null');
  END IF;
END
$$;
COMMENT ON FUNCTION postsales.beneficiary_fields(jsonb, boolean) IS
  'Returns when _body holds only fields a holder may set (name, email, document, relationship, share; '
  'not the e-mail of the holder''s own row); raises PT422 EMPTY_PATCH, FIELD_NOT_EDITABLE or '
  'INVALID_VALUE otherwise. Holder role.';
REVOKE ALL ON FUNCTION postsales.risk_item_json(bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION postsales.visible_item(bigint, uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION postsales.raise_unprocessable(text, text, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION postsales.beneficiary_fields(jsonb, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION postsales.risk_item_json(bigint) TO insurance_holder;
GRANT EXECUTE ON FUNCTION postsales.visible_item(bigint, uuid) TO insurance_holder;
GRANT EXECUTE ON FUNCTION postsales.raise_unprocessable(text, text, jsonb) TO insurance_holder;
GRANT EXECUTE ON FUNCTION postsales.beneficiary_fields(jsonb, boolean) TO insurance_holder;

-- ---------------------------------------------------------------- entry points

-- my_risk_items(): the caller's active risk items (summary, newest first), as one JSON array.
-- plpgsql so that the plan is cached per session: its queries have no parameter, so one generic
-- plan serves every call (no plan_cache_mode clause: a SET clause costs every call). For the holder the claimant policies alone pick the
-- rows: risk_items_select_holder's array of the claimant's item ids is the primary key's index
-- condition, and authorized_claimants is read once, inside it (a join of authorized_claimants
-- here read it a second time, under its own policy, and made the item policy a hashed
-- subplan). Another caller require_role lets through (an operator, whom no policy holds) meets
-- the same rule written out: the items of the e-mail claim.
CREATE OR REPLACE FUNCTION postsales.my_risk_items()
 RETURNS json
 LANGUAGE plpgsql
 STABLE
 SET search_path = ''
AS $$
BEGIN
  IF pg_catalog.current_setting('role') = 'insurance_holder' THEN  -- see risk_item()
    RETURN (
      SELECT coalesce(json_agg(json_build_object(
               'id', ri.id, 'uid', ri.uid, 'policy_uid', ri.policy_uid, 'status', ri.status,
               'variant', ri.variant, 'insured_subject', ri.insured_subject,
               'package', json_build_object('uid', p.uid, 'name', p.name),
               'created_at', ri.created_at, 'updated_at', ri.updated_at) ORDER BY ri.id DESC), '[]')
        FROM insurance.risk_items ri
        JOIN insurance.packages p ON p.id = ri.package_id
       WHERE ri.status = 'active');
  END IF;
  PERFORM insurance.require_role('insurance_holder');
  RETURN (
    SELECT coalesce(json_agg(json_build_object(
             'id', ri.id, 'uid', ri.uid, 'policy_uid', ri.policy_uid, 'status', ri.status,
             'variant', ri.variant, 'insured_subject', ri.insured_subject,
             'package', json_build_object('uid', p.uid, 'name', p.name),
             'created_at', ri.created_at, 'updated_at', ri.updated_at) ORDER BY ri.id DESC), '[]')
      FROM insurance.authorized_claimants ac
      JOIN insurance.risk_items ri ON ri.id = ac.risk_item_id
      JOIN insurance.packages p ON p.id = ri.package_id
     WHERE ac.email = insurance.claim('email') AND ri.status = 'active');
END
$$;
COMMENT ON FUNCTION postsales.my_risk_items() IS
  'The calling holder''s active risk items, newest first, as one JSON array of summaries. Holder role.';

-- risk_item(_id, _uid): one item of the caller with its beneficiaries; 401 when not theirs.
CREATE OR REPLACE FUNCTION postsales.risk_item(_id bigint, _uid uuid) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = '' AS $$
BEGIN
  -- The role checked inline: require_role() (a call with its own search_path, about 4 us) only
  -- for another caller, which it refuses, or an operator, whom it lets through.
  IF pg_catalog.current_setting('role') <> 'insurance_holder' THEN
    PERFORM insurance.require_role('insurance_holder');
  END IF;
  RETURN postsales.risk_item_json((postsales.visible_item(_id, _uid)).id);
END
$$;
COMMENT ON FUNCTION postsales.risk_item(bigint, uuid) IS
  'The caller''s item named by id or uid with its package and beneficiaries; raises PT401 ACCESS_DENIED'
  ' when it is not theirs. Holder role.';

-- update_risk_item(_id, _uid, _patch): merges the contact data of the insured subject, the
-- only fields a holder may change: {"insured_subject": {"email", "phone", "address"}}.
-- Anything else is 422 FIELD_NOT_EDITABLE (details.fields) and nothing changes.
CREATE OR REPLACE FUNCTION postsales.update_risk_item(_id bigint, _uid uuid, _patch jsonb) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
DECLARE
  _item      bigint;
  _subject   jsonb;
  _forbidden text[];
  _key       text;
  _value     jsonb;
  _valid     boolean;
BEGIN
  PERFORM insurance.require_role('insurance_holder');
  _item := (postsales.visible_item(_id, _uid)).id;
  IF jsonb_typeof(_patch) IS DISTINCT FROM 'object' OR _patch = '{}' THEN
    PERFORM postsales.raise_unprocessable('EMPTY_PATCH', 'nothing to change: send {"insured_subject": {...}}');
  END IF;
  SELECT array_agg(k ORDER BY k) INTO _forbidden
    FROM jsonb_object_keys(_patch) k WHERE k <> 'insured_subject';
  _subject := _patch -> 'insured_subject';
  IF jsonb_typeof(_subject) = 'object' THEN
    SELECT array_agg('insured_subject.' || k ORDER BY k) || coalesce(_forbidden, '{}') INTO _forbidden
      FROM jsonb_object_keys(_subject) k WHERE k NOT IN ('email', 'phone', 'address');
  ELSIF _subject IS NOT NULL THEN
    PERFORM postsales.raise_unprocessable('INVALID_VALUE', 'insured_subject must be an object',
                                    '{"field": "insured_subject"}');
  END IF;
  IF pg_catalog.cardinality(_forbidden) > 0 THEN
    PERFORM postsales.raise_unprocessable('FIELD_NOT_EDITABLE',
      'only insured_subject.email, insured_subject.phone and insured_subject.address may be changed',
      jsonb_build_object('fields', _forbidden));
  END IF;
  IF _subject IS NULL OR _subject = '{}' THEN
    PERFORM postsales.raise_unprocessable('EMPTY_PATCH', 'nothing to change: send {"insured_subject": {...}}');
  END IF;
  FOR _key, _value IN SELECT * FROM jsonb_each(_subject) LOOP
    -- The e-mail rule is the insurance.email domain's, the one every stored address obeys.
    IF _key = 'email' AND jsonb_typeof(_value) = 'string' THEN
      BEGIN
        PERFORM pg_catalog.lower(_value #>> '{}')::insurance.email;
        _valid := true;
      EXCEPTION WHEN check_violation THEN
        _valid := false;
      END;
    ELSE
    _valid := CASE _key
         WHEN 'email' THEN false
         WHEN 'phone' THEN jsonb_typeof(_value) = 'string' AND _value #>> '{}' ~ '^\+?[0-9 ()./-]{4,32}$'
         ELSE (jsonb_typeof(_value) = 'string' AND length(_value #>> '{}') BETWEEN 1 AND 500)
              OR (jsonb_typeof(_value) = 'object' AND length(_value::text) <= 2000
                  AND NOT EXISTS (SELECT FROM jsonb_each(_value) a WHERE jsonb_typeof(a.value) <> 'string'))
       END;
    END IF;
    IF NOT _valid THEN
      PERFORM postsales.raise_unprocessable('INVALID_VALUE', 'insured_subject.' || _key || ' is not valid',
                                      jsonb_build_object('field', 'insured_subject.' || _key));
    END IF;
  END LOOP;
  UPDATE insurance.risk_items ri SET insured_subject = ri.insured_subject || _subject WHERE ri.id = _item;
  RETURN postsales.risk_item_json(_item);
END
$$;
COMMENT ON FUNCTION postsales.update_risk_item(bigint, uuid, jsonb) IS
  'Merges _patch {insured_subject: {email, phone, address}} into the caller''s item and returns it; '
  'raises PT422 EMPTY_PATCH, INVALID_VALUE or FIELD_NOT_EDITABLE (any other field; nothing changed), '
  'PT401 when the item is not theirs. Holder role.';

-- risk_item_beneficiaries(_id, _uid): the beneficiaries of one of the caller's items.
CREATE OR REPLACE FUNCTION postsales.risk_item_beneficiaries(_id bigint, _uid uuid) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
  _item bigint;
  _list jsonb;
BEGIN
  PERFORM insurance.require_role('insurance_holder');
  _item := (postsales.visible_item(_id, _uid)).id;
  SELECT coalesce(jsonb_agg(insurance.beneficiary_json(b) ORDER BY b.id), '[]') INTO _list
    FROM insurance.beneficiaries b WHERE b.risk_item_id = _item;
  RETURN _list;
END
$$;
COMMENT ON FUNCTION postsales.risk_item_beneficiaries(bigint, uuid) IS
  'The beneficiaries of the caller''s item named by id or uid; raises PT401 when it is not theirs. '
  'Holder role.';

-- add_beneficiary(_id, _uid, _body): adds a (non-holder) beneficiary to one of the caller's items.
CREATE OR REPLACE FUNCTION postsales.add_beneficiary(_id bigint, _uid uuid, _body jsonb) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
DECLARE
  _item bigint;
  _row insurance.beneficiaries;
BEGIN
  PERFORM insurance.require_role('insurance_holder');
  _item := (postsales.visible_item(_id, _uid)).id;
  PERFORM postsales.beneficiary_fields(_body, false);
  IF NOT _body ? 'name' THEN
    PERFORM postsales.raise_unprocessable('INVALID_VALUE', 'name is required', '{"field": "name"}');
  END IF;
  INSERT INTO insurance.beneficiaries (risk_item_id, name, email, document, relationship, share)
  VALUES (_item, _body ->> 'name', lower(_body ->> 'email'), _body ->> 'document',
          _body ->> 'relationship', coalesce((_body ->> 'share')::numeric, 0))
  RETURNING * INTO _row;
  RETURN insurance.beneficiary_json(_row);
END
$$;
COMMENT ON FUNCTION postsales.add_beneficiary(bigint, uuid, jsonb) IS
  'Adds a non-holder beneficiary to the caller''s item and returns it; raises PT422 for a field a '
  'holder may not set, shares over 100 or a 51st beneficiary (BENEFICIARY_LIMIT), PT401 when the item '
  'is not theirs. Holder role.';

-- update_beneficiary(_id, _uid, _beneficiary_id, _body): changes the given fields of a beneficiary.
CREATE OR REPLACE FUNCTION postsales.update_beneficiary(_id bigint, _uid uuid, _beneficiary_id bigint, _body jsonb)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
DECLARE
  _item bigint;
  _row insurance.beneficiaries;
BEGIN
  PERFORM insurance.require_role('insurance_holder');
  _item := (postsales.visible_item(_id, _uid)).id;
  SELECT * INTO _row FROM insurance.beneficiaries b WHERE b.id = _beneficiary_id AND b.risk_item_id = _item;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'PT404', MESSAGE = 'beneficiary not found', DETAIL = 'NOT_FOUND';
  END IF;
  PERFORM postsales.beneficiary_fields(_body, _row.is_holder);
  UPDATE insurance.beneficiaries b SET
    name         = CASE WHEN _body ? 'name' THEN _body ->> 'name' ELSE b.name END,
    email        = CASE WHEN _body ? 'email' THEN lower(_body ->> 'email') ELSE b.email END,
    document     = CASE WHEN _body ? 'document' THEN _body ->> 'document' ELSE b.document END,
    relationship = CASE WHEN _body ? 'relationship' THEN _body ->> 'relationship' ELSE b.relationship END,
    share        = CASE WHEN _body ? 'share' THEN (_body ->> 'share')::numeric ELSE b.share END
   WHERE b.id = _beneficiary_id
  RETURNING * INTO _row;
  RETURN insurance.beneficiary_json(_row);
END
$$;
COMMENT ON FUNCTION postsales.update_beneficiary(bigint, uuid, bigint, jsonb) IS
  'Changes the given fields of a beneficiary of the caller''s item and returns it; raises PT422 for a '
  'field a holder may not set, PT404 for an unknown beneficiary, PT401 when the item is not theirs. '
  'Holder role.';

-- remove_beneficiary(_id, _uid, _beneficiary_id): removes a beneficiary; the holder cannot be removed.
CREATE OR REPLACE FUNCTION postsales.remove_beneficiary(_id bigint, _uid uuid, _beneficiary_id bigint) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
DECLARE
  _item bigint;
  _is_holder boolean;
BEGIN
  PERFORM insurance.require_role('insurance_holder');
  _item := (postsales.visible_item(_id, _uid)).id;
  SELECT b.is_holder INTO _is_holder FROM insurance.beneficiaries b
   WHERE b.id = _beneficiary_id AND b.risk_item_id = _item;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'PT404', MESSAGE = 'beneficiary not found', DETAIL = 'NOT_FOUND';
  END IF;
  IF _is_holder THEN
    PERFORM postsales.raise_unprocessable('HOLDER_NOT_REMOVABLE', 'the holder cannot be removed');
  END IF;
  DELETE FROM insurance.beneficiaries b WHERE b.id = _beneficiary_id;
  RETURN jsonb_build_object('id', _beneficiary_id, 'removed', true);
END
$$;
COMMENT ON FUNCTION postsales.remove_beneficiary(bigint, uuid, bigint) IS
  'Removes a beneficiary of the caller''s item (never the holder); returns {removed}; raises PT422 for '
  'the holder''s own row, PT404 NOT_FOUND for an unknown one, PT401 when the item is not theirs. Holder'
  ' role.';

-- risk_item_variants(_id, _uid): the product variants of the item's package.
CREATE OR REPLACE FUNCTION postsales.risk_item_variants(_id bigint, _uid uuid) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
  _package_id bigint;
BEGIN
  PERFORM insurance.require_role('insurance_holder');
  _package_id := (postsales.visible_item(_id, _uid)).package_id;
  RETURN (SELECT coalesce(jsonb_agg(jsonb_build_object(
                   'code', v.code, 'name', v.name, 'coverages', v.coverages,
                   'premium', v.premium, 'currency', v.currency) ORDER BY v.code), '[]')
            FROM insurance.package_variants v WHERE v.package_id = _package_id);
END
$$;
COMMENT ON FUNCTION postsales.risk_item_variants(bigint, uuid) IS
  'The product variants of the package of the caller''s item; raises PT401 when it is not theirs. '
  'Holder role.';
REVOKE ALL ON FUNCTION postsales.my_risk_items() FROM PUBLIC;
REVOKE ALL ON FUNCTION postsales.risk_item(bigint, uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION postsales.update_risk_item(bigint, uuid, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION postsales.risk_item_beneficiaries(bigint, uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION postsales.add_beneficiary(bigint, uuid, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION postsales.update_beneficiary(bigint, uuid, bigint, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION postsales.remove_beneficiary(bigint, uuid, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION postsales.risk_item_variants(bigint, uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION postsales.my_risk_items() TO insurance_holder, insurance_app;
GRANT EXECUTE ON FUNCTION postsales.risk_item(bigint, uuid) TO insurance_holder, insurance_app;
GRANT EXECUTE ON FUNCTION postsales.update_risk_item(bigint, uuid, jsonb) TO insurance_holder, insurance_app;
GRANT EXECUTE ON FUNCTION postsales.risk_item_beneficiaries(bigint, uuid) TO insurance_holder, insurance_app;
GRANT EXECUTE ON FUNCTION postsales.add_beneficiary(bigint, uuid, jsonb) TO insurance_holder, insurance_app;
GRANT EXECUTE ON FUNCTION postsales.update_beneficiary(bigint, uuid, bigint, jsonb) TO insurance_holder, insurance_app;
GRANT EXECUTE ON FUNCTION postsales.remove_beneficiary(bigint, uuid, bigint) TO insurance_holder, insurance_app;
GRANT EXECUTE ON FUNCTION postsales.risk_item_variants(bigint, uuid) TO insurance_holder, insurance_app;

-- ---------------------------------------------------------------- the post-sales emission

-- POST /api/integrations/post-sales belongs to the post-sales surface: the holder names the
-- item of a StandardRiskItem by its uid (the integer id stays an alternative). The item is
-- read here as the holder, under the claimant RLS policies, never taken from the body.

-- begin_emission: claim the POST_SALES key of an item the holder reaches (an
-- authorized_claimants row for the token's e-mail), by uid or id (when both are given they must
-- name the same item); an item the holder cannot reach is PT401 ACCESS_DENIED. Runs as the
-- owner to claim the key, which the holder role cannot touch: one function from the holder's
-- call to integrations.begin_batch (through _begin_one, which raises a refusal).
CREATE OR REPLACE FUNCTION postsales.begin_emission(_risk_item_id bigint, _risk_item_uid uuid,
                                         _claimed_by text, _lease_seconds integer)
RETURNS jsonb
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = ''
AS $$
DECLARE
  _id bigint;
BEGIN
  PERFORM insurance.require_role('insurance_holder');
  IF _risk_item_id IS NULL AND _risk_item_uid IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = 'give the item''s uid (or its id)',
                          DETAIL = 'VALIDATION_ERROR', HINT = '{"field": "uid"}';
  END IF;
  SELECT r.id INTO _id
    FROM insurance.risk_items r
    JOIN insurance.authorized_claimants c ON c.risk_item_id = r.id AND c.email = lower(insurance.claim('email'))
   WHERE (_risk_item_uid IS NULL OR r.uid = _risk_item_uid)
     AND (_risk_item_id IS NULL OR r.id = _risk_item_id);
  IF _id IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PT401', MESSAGE = 'access denied', DETAIL = 'ACCESS_DENIED';
  END IF;
  RETURN integrations._begin_one(pg_catalog.jsonb_build_object('riskItemId', _id, 'provider', NULL,
                                                               'event', 'POST_SALES'),
                                 _claimed_by, _lease_seconds);
END
$$;
COMMENT ON FUNCTION postsales.begin_emission(bigint, uuid, text, integer) IS
  'Claims the POST_SALES emission key of the caller''s item named by uid or id (integrations.begin_batch''s '
  'answer for it); raises PT401 ACCESS_DENIED when the holder cannot reach it. Holder role.';
REVOKE ALL ON FUNCTION postsales.begin_emission(bigint, uuid, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION postsales.begin_emission(bigint, uuid, text, integer) TO insurance_holder, insurance_app;

COMMIT;
