-- Revert insurance:holder_risk_items from pg
-- Back to @v1.0: the entry points by id only, `is_holder`, every item in my_risk_items.
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION postsales.risk_item_variants(bigint, uuid);
DROP FUNCTION postsales.remove_beneficiary(bigint, uuid, bigint);
DROP FUNCTION postsales.update_beneficiary(bigint, uuid, bigint, jsonb);
DROP FUNCTION postsales.add_beneficiary(bigint, uuid, jsonb);
DROP FUNCTION postsales.risk_item_beneficiaries(bigint, uuid);
DROP FUNCTION postsales.update_risk_item(bigint, uuid, jsonb);
DROP FUNCTION postsales.risk_item(bigint, uuid);
DROP FUNCTION postsales.visible_item(bigint, uuid);

-- ---------------------------------------------------------------- JSON shapes

-- beneficiary_json(row): a beneficiary as the API shows it.
CREATE OR REPLACE FUNCTION postsales.beneficiary_json(b insurance.beneficiaries) RETURNS jsonb
LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
  SELECT jsonb_build_object('id', b.id, 'name', b.name, 'email', b.email, 'document', b.document,
                            'relationship', b.relationship, 'is_holder', b.is_holder, 'share', b.share)
$$;

-- risk_item_json(id): one visible item with its package and beneficiaries, or NULL.
CREATE OR REPLACE FUNCTION postsales.risk_item_json(p_id bigint) RETURNS jsonb
LANGUAGE sql STABLE SET search_path = '' AS $$
  SELECT jsonb_build_object(
           'id', ri.id, 'uid', ri.uid, 'policy_uid', ri.policy_uid, 'status', ri.status,
           'variant', ri.variant, 'insured_subject', ri.insured_subject,
           'package', jsonb_build_object('uid', p.uid, 'name', p.name),
           'beneficiaries', coalesce((SELECT jsonb_agg(postsales.beneficiary_json(b) ORDER BY b.id)
                                        FROM insurance.beneficiaries b WHERE b.risk_item_id = ri.id), '[]'),
           'created_at', ri.created_at, 'updated_at', ri.updated_at)
    FROM insurance.risk_items ri JOIN insurance.packages p ON p.id = ri.package_id
   WHERE ri.id = p_id
$$;

-- visible_item(id): the package of risk item `id` when the caller may see it (RLS); else
-- the seed's 401 "access denied", also for an id that does not exist (no enumeration).
CREATE FUNCTION postsales.visible_item(p_id bigint) RETURNS bigint
LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
  _package_id bigint;
BEGIN
  SELECT ri.package_id INTO _package_id FROM insurance.risk_items ri WHERE ri.id = p_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'PT401', MESSAGE = 'access denied', DETAIL = 'ACCESS_DENIED';
  END IF;
  RETURN _package_id;
END
$$;

-- unprocessable(code, message, details): a 422 with a stable code.
CREATE OR REPLACE FUNCTION postsales.unprocessable(p_code text, p_message text, p_details jsonb DEFAULT NULL) RETURNS void
LANGUAGE plpgsql SET search_path = '' AS $$
BEGIN
  RAISE EXCEPTION USING ERRCODE = 'PT422', MESSAGE = p_message, DETAIL = p_code,
    HINT = coalesce(p_details::text, '');
END
$$;

-- ---------------------------------------------------------------- entry points

-- my_risk_items(): the caller's risk items (summary, newest first), as one JSON array.
-- plpgsql so that the plan is cached per session: the query has no parameter (the e-mail is
-- read as an InitPlan), so one generic plan, RLS included, serves every call. The claimant
-- join starts from the caller's e-mail (primary key range); the policies agree with it.
CREATE OR REPLACE FUNCTION postsales.my_risk_items() RETURNS json
LANGUAGE plpgsql STABLE SET search_path = '' AS $$
BEGIN
  RETURN (
    SELECT coalesce(json_agg(json_build_object(
             'id', ri.id, 'uid', ri.uid, 'policy_uid', ri.policy_uid, 'status', ri.status,
             'variant', ri.variant, 'insured_subject', ri.insured_subject,
             'package', json_build_object('uid', p.uid, 'name', p.name),
             'created_at', ri.created_at, 'updated_at', ri.updated_at) ORDER BY ri.id DESC), '[]')
      FROM insurance.authorized_claimants ac
      JOIN insurance.risk_items ri ON ri.id = ac.risk_item_id
      JOIN insurance.packages p ON p.id = ri.package_id
     WHERE ac.email = (SELECT insurance.claim('email')));
END
$$;

-- risk_item(id): one item of the caller with its beneficiaries; 401 when not theirs.
CREATE FUNCTION postsales.risk_item(p_id bigint) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = '' AS $$
BEGIN
  PERFORM postsales.visible_item(p_id);
  RETURN postsales.risk_item_json(p_id);
END
$$;

-- update_risk_item(id, patch): merges the contact data of the insured subject, the only
-- fields a holder may change: {"insured_subject": {"email", "phone", "address"}}.
-- Anything else is 422 FIELD_NOT_EDITABLE (details.fields) and nothing changes.
CREATE FUNCTION postsales.update_risk_item(p_id bigint, p_patch jsonb) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
DECLARE
  _subject   jsonb;
  _forbidden text[];
  _key       text;
  _value     jsonb;
  _valid     boolean;
BEGIN
  PERFORM postsales.visible_item(p_id);
  IF jsonb_typeof(p_patch) IS DISTINCT FROM 'object' OR p_patch = '{}' THEN
    PERFORM postsales.unprocessable('EMPTY_PATCH', 'nothing to change: send {"insured_subject": {...}}');
  END IF;
  SELECT array_agg(k ORDER BY k) INTO _forbidden
    FROM jsonb_object_keys(p_patch) k WHERE k <> 'insured_subject';
  _subject := p_patch -> 'insured_subject';
  IF jsonb_typeof(_subject) = 'object' THEN
    SELECT array_agg('insured_subject.' || k ORDER BY k) || coalesce(_forbidden, '{}') INTO _forbidden
      FROM jsonb_object_keys(_subject) k WHERE k NOT IN ('email', 'phone', 'address');
  ELSIF _subject IS NOT NULL THEN
    PERFORM postsales.unprocessable('INVALID_VALUE', 'insured_subject must be an object',
                                    '{"field": "insured_subject"}');
  END IF;
  IF pg_catalog.cardinality(_forbidden) > 0 THEN
    PERFORM postsales.unprocessable('FIELD_NOT_EDITABLE',
      'only insured_subject.email, insured_subject.phone and insured_subject.address may be changed',
      jsonb_build_object('fields', _forbidden));
  END IF;
  IF _subject IS NULL OR _subject = '{}' THEN
    PERFORM postsales.unprocessable('EMPTY_PATCH', 'nothing to change: send {"insured_subject": {...}}');
  END IF;
  FOR _key, _value IN SELECT * FROM jsonb_each(_subject) LOOP
    _valid := CASE _key
         WHEN 'email' THEN jsonb_typeof(_value) = 'string'
                           AND _value #>> '{}' ~ '^[^@\s]+@[^@\s]+\.[^@\s]+$' AND length(_value #>> '{}') <= 254
         WHEN 'phone' THEN jsonb_typeof(_value) = 'string' AND _value #>> '{}' ~ '^\+?[0-9 ()./-]{4,32}$'
         ELSE (jsonb_typeof(_value) = 'string' AND length(_value #>> '{}') BETWEEN 1 AND 500)
              OR (jsonb_typeof(_value) = 'object' AND length(_value::text) <= 2000
                  AND NOT EXISTS (SELECT FROM jsonb_each(_value) a WHERE jsonb_typeof(a.value) <> 'string'))
       END;
    IF NOT _valid THEN
      PERFORM postsales.unprocessable('INVALID_VALUE', 'insured_subject.' || _key || ' is not valid',
                                      jsonb_build_object('field', 'insured_subject.' || _key));
    END IF;
  END LOOP;
  UPDATE insurance.risk_items ri SET insured_subject = ri.insured_subject || _subject WHERE ri.id = p_id;
  RETURN postsales.risk_item_json(p_id);
END
$$;

-- risk_item_beneficiaries(id): the beneficiaries of one of the caller's items.
CREATE FUNCTION postsales.risk_item_beneficiaries(p_id bigint) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
  _list jsonb;
BEGIN
  PERFORM postsales.visible_item(p_id);
  SELECT coalesce(jsonb_agg(postsales.beneficiary_json(b) ORDER BY b.id), '[]') INTO _list
    FROM insurance.beneficiaries b WHERE b.risk_item_id = p_id;
  RETURN _list;
END
$$;

-- beneficiary_fields(body, is_holder): validates a beneficiary body against the fields a
-- holder may set (name, email, document, relationship, share); 422 for anything else.
-- On the holder's own row the e-mail (their login) is not editable either.
CREATE OR REPLACE FUNCTION postsales.beneficiary_fields(p_body jsonb, p_is_holder boolean) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
  _forbidden text[];
BEGIN
  IF jsonb_typeof(p_body) IS DISTINCT FROM 'object' OR p_body = '{}' THEN
    PERFORM postsales.unprocessable('EMPTY_PATCH', 'send the beneficiary fields to set');
  END IF;
  SELECT array_agg(k ORDER BY k) INTO _forbidden FROM jsonb_object_keys(p_body) k
   WHERE k NOT IN ('name', 'email', 'document', 'relationship', 'share')
      OR (p_is_holder AND k = 'email');
  IF _forbidden IS NOT NULL THEN
    PERFORM postsales.unprocessable('FIELD_NOT_EDITABLE',
      'only name, email, document, relationship and share may be set (not the holder''s e-mail)',
      jsonb_build_object('fields', _forbidden));
  END IF;
  IF (p_body ? 'name' AND jsonb_typeof(p_body -> 'name') IS DISTINCT FROM 'string')
     OR (p_body ? 'share' AND jsonb_typeof(p_body -> 'share') IS DISTINCT FROM 'number')
     OR EXISTS (SELECT FROM unnest(ARRAY['email', 'document', 'relationship']) f
                 WHERE p_body ? f AND jsonb_typeof(p_body -> f) NOT IN ('string', 'null')) THEN
    PERFORM postsales.unprocessable('INVALID_VALUE',
      'name is a string, share a number, email, document and relationship strings or null');
  END IF;
END
$$;

-- add_beneficiary(id, body): adds a (non-holder) beneficiary to one of the caller's items.
CREATE FUNCTION postsales.add_beneficiary(p_id bigint, p_body jsonb) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
DECLARE
  _row insurance.beneficiaries;
BEGIN
  PERFORM postsales.visible_item(p_id);
  PERFORM postsales.beneficiary_fields(p_body, false);
  IF NOT p_body ? 'name' THEN
    PERFORM postsales.unprocessable('INVALID_VALUE', 'name is required', '{"field": "name"}');
  END IF;
  INSERT INTO insurance.beneficiaries (risk_item_id, name, email, document, relationship, share)
  VALUES (p_id, p_body ->> 'name', lower(p_body ->> 'email'), p_body ->> 'document',
          p_body ->> 'relationship', coalesce((p_body ->> 'share')::numeric, 0))
  RETURNING * INTO _row;
  RETURN postsales.beneficiary_json(_row);
END
$$;

-- update_beneficiary(id, beneficiary_id, body): changes the given fields of a beneficiary.
CREATE FUNCTION postsales.update_beneficiary(p_id bigint, p_beneficiary_id bigint, p_body jsonb)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
DECLARE
  _row insurance.beneficiaries;
BEGIN
  PERFORM postsales.visible_item(p_id);
  SELECT * INTO _row FROM insurance.beneficiaries b WHERE b.id = p_beneficiary_id AND b.risk_item_id = p_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'PT404', MESSAGE = 'beneficiary not found', DETAIL = 'NOT_FOUND';
  END IF;
  PERFORM postsales.beneficiary_fields(p_body, _row.is_holder);
  UPDATE insurance.beneficiaries b SET
    name         = CASE WHEN p_body ? 'name' THEN p_body ->> 'name' ELSE b.name END,
    email        = CASE WHEN p_body ? 'email' THEN lower(p_body ->> 'email') ELSE b.email END,
    document     = CASE WHEN p_body ? 'document' THEN p_body ->> 'document' ELSE b.document END,
    relationship = CASE WHEN p_body ? 'relationship' THEN p_body ->> 'relationship' ELSE b.relationship END,
    share        = CASE WHEN p_body ? 'share' THEN (p_body ->> 'share')::numeric ELSE b.share END
   WHERE b.id = p_beneficiary_id
  RETURNING * INTO _row;
  RETURN postsales.beneficiary_json(_row);
END
$$;

-- remove_beneficiary(id, beneficiary_id): removes a beneficiary; the holder cannot be removed.
CREATE FUNCTION postsales.remove_beneficiary(p_id bigint, p_beneficiary_id bigint) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
DECLARE
  _is_holder boolean;
BEGIN
  PERFORM postsales.visible_item(p_id);
  SELECT b.is_holder INTO _is_holder FROM insurance.beneficiaries b
   WHERE b.id = p_beneficiary_id AND b.risk_item_id = p_id;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'PT404', MESSAGE = 'beneficiary not found', DETAIL = 'NOT_FOUND';
  END IF;
  IF _is_holder THEN
    PERFORM postsales.unprocessable('HOLDER_NOT_REMOVABLE', 'the holder cannot be removed');
  END IF;
  DELETE FROM insurance.beneficiaries b WHERE b.id = p_beneficiary_id;
  RETURN jsonb_build_object('id', p_beneficiary_id, 'removed', true);
END
$$;

-- risk_item_variants(id): the product variants of the item's package.
CREATE FUNCTION postsales.risk_item_variants(p_id bigint) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
  _package_id bigint := postsales.visible_item(p_id);
BEGIN
  RETURN (SELECT coalesce(jsonb_agg(jsonb_build_object(
                   'code', v.code, 'name', v.name, 'coverages', v.coverages,
                   'premium', v.premium, 'currency', v.currency) ORDER BY v.code), '[]')
            FROM insurance.package_variants v WHERE v.package_id = _package_id);
END
$$;

REVOKE ALL ON FUNCTION postsales.beneficiary_json(insurance.beneficiaries), postsales.risk_item_json(bigint),
  postsales.visible_item(bigint), postsales.unprocessable(text, text, jsonb),
  postsales.beneficiary_fields(jsonb, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION postsales.beneficiary_json(insurance.beneficiaries), postsales.risk_item_json(bigint),
  postsales.visible_item(bigint), postsales.unprocessable(text, text, jsonb),
  postsales.beneficiary_fields(jsonb, boolean) TO insurance_holder;

REVOKE ALL ON FUNCTION postsales.my_risk_items(), postsales.risk_item(bigint),
  postsales.update_risk_item(bigint, jsonb), postsales.risk_item_beneficiaries(bigint),
  postsales.add_beneficiary(bigint, jsonb), postsales.update_beneficiary(bigint, bigint, jsonb),
  postsales.remove_beneficiary(bigint, bigint), postsales.risk_item_variants(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION postsales.my_risk_items(), postsales.risk_item(bigint),
  postsales.update_risk_item(bigint, jsonb), postsales.risk_item_beneficiaries(bigint),
  postsales.add_beneficiary(bigint, jsonb), postsales.update_beneficiary(bigint, bigint, jsonb),
  postsales.remove_beneficiary(bigint, bigint), postsales.risk_item_variants(bigint)
  TO insurance_holder, insurance_app;

COMMIT;
