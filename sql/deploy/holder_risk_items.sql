-- Deploy insurance:holder_risk_items to pg
-- requires: claimant_rls
-- requires: packages
-- What a holder does with a post-sales JWT. Every function runs as the caller
-- (insurance_holder, SECURITY INVOKER): the claimant policies of claimant_rls decide what it
-- sees, and an item it may not see answers 401 "access denied" (never 404: no enumeration).
-- Each entry point returns the JSON that the API sends as `data`, in one round trip.
-- Rework of @v1.0: beneficiaries say `isHolder` (as the specification, the gateway and the
-- StandardRiskItem do); my_risk_items lists active items only (as the specification's
-- ids-by-holder-email RPC); every entry point names its item by id or by uid (_id, _uid: one
-- of them, the other NULL), so that a client holding only the uid needs no lookup.
BEGIN;
SET LOCAL ROLE insurance_owner;

-- The entry points change signature: the @v1.0 ones go (the shares trigger stays as it was).
DROP FUNCTION postsales.risk_item_variants(bigint);
DROP FUNCTION postsales.remove_beneficiary(bigint, bigint);
DROP FUNCTION postsales.update_beneficiary(bigint, bigint, jsonb);
DROP FUNCTION postsales.add_beneficiary(bigint, jsonb);
DROP FUNCTION postsales.risk_item_beneficiaries(bigint);
DROP FUNCTION postsales.update_risk_item(bigint, jsonb);
DROP FUNCTION postsales.risk_item(bigint);
DROP FUNCTION postsales.visible_item(bigint);

-- ---------------------------------------------------------------- JSON shapes

-- beneficiary_json(row): a beneficiary as the API shows it.
CREATE OR REPLACE FUNCTION postsales.beneficiary_json(b insurance.beneficiaries) RETURNS jsonb
LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
  SELECT jsonb_build_object('id', b.id, 'name', b.name, 'email', b.email, 'document', b.document,
                            'relationship', b.relationship, 'isHolder', b.is_holder, 'share', b.share)
$$;

-- visible_item(_id, _uid): the id and package of the risk item named by id or uid when the
-- caller may see it (RLS); else the seed's 401 "access denied", also for an item that does not
-- exist (no enumeration), or when both are given and name different items.
CREATE FUNCTION postsales.visible_item(_id bigint, _uid uuid, OUT id bigint, OUT package_id bigint)
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

-- ---------------------------------------------------------------- entry points

-- my_risk_items(): the caller's active risk items (summary, newest first), as one JSON array.
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
     WHERE ac.email = (SELECT insurance.claim('email')) AND ri.status = 'active');
END
$$;

-- risk_item(_id, _uid): one item of the caller with its beneficiaries; 401 when not theirs.
CREATE FUNCTION postsales.risk_item(_id bigint, _uid uuid) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = '' AS $$
BEGIN
  RETURN postsales.risk_item_json((postsales.visible_item(_id, _uid)).id);
END
$$;

-- update_risk_item(_id, _uid, _patch): merges the contact data of the insured subject, the
-- only fields a holder may change: {"insured_subject": {"email", "phone", "address"}}.
-- Anything else is 422 FIELD_NOT_EDITABLE (details.fields) and nothing changes.
CREATE FUNCTION postsales.update_risk_item(_id bigint, _uid uuid, _patch jsonb) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
DECLARE
  _item      bigint := (postsales.visible_item(_id, _uid)).id;
  _subject   jsonb;
  _forbidden text[];
  _key       text;
  _value     jsonb;
  _valid     boolean;
BEGIN
  IF jsonb_typeof(_patch) IS DISTINCT FROM 'object' OR _patch = '{}' THEN
    PERFORM postsales.unprocessable('EMPTY_PATCH', 'nothing to change: send {"insured_subject": {...}}');
  END IF;
  SELECT array_agg(k ORDER BY k) INTO _forbidden
    FROM jsonb_object_keys(_patch) k WHERE k <> 'insured_subject';
  _subject := _patch -> 'insured_subject';
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
  UPDATE insurance.risk_items ri SET insured_subject = ri.insured_subject || _subject WHERE ri.id = _item;
  RETURN postsales.risk_item_json(_item);
END
$$;

-- risk_item_beneficiaries(_id, _uid): the beneficiaries of one of the caller's items.
CREATE FUNCTION postsales.risk_item_beneficiaries(_id bigint, _uid uuid) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
  _item bigint := (postsales.visible_item(_id, _uid)).id;
  _list jsonb;
BEGIN
  SELECT coalesce(jsonb_agg(postsales.beneficiary_json(b) ORDER BY b.id), '[]') INTO _list
    FROM insurance.beneficiaries b WHERE b.risk_item_id = _item;
  RETURN _list;
END
$$;

-- add_beneficiary(_id, _uid, _body): adds a (non-holder) beneficiary to one of the caller's items.
CREATE FUNCTION postsales.add_beneficiary(_id bigint, _uid uuid, _body jsonb) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
DECLARE
  _item bigint := (postsales.visible_item(_id, _uid)).id;
  _row insurance.beneficiaries;
BEGIN
  PERFORM postsales.beneficiary_fields(_body, false);
  IF NOT _body ? 'name' THEN
    PERFORM postsales.unprocessable('INVALID_VALUE', 'name is required', '{"field": "name"}');
  END IF;
  INSERT INTO insurance.beneficiaries (risk_item_id, name, email, document, relationship, share)
  VALUES (_item, _body ->> 'name', lower(_body ->> 'email'), _body ->> 'document',
          _body ->> 'relationship', coalesce((_body ->> 'share')::numeric, 0))
  RETURNING * INTO _row;
  RETURN postsales.beneficiary_json(_row);
END
$$;

-- update_beneficiary(_id, _uid, _beneficiary_id, _body): changes the given fields of a beneficiary.
CREATE FUNCTION postsales.update_beneficiary(_id bigint, _uid uuid, _beneficiary_id bigint, _body jsonb)
RETURNS jsonb
LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
DECLARE
  _item bigint := (postsales.visible_item(_id, _uid)).id;
  _row insurance.beneficiaries;
BEGIN
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
  RETURN postsales.beneficiary_json(_row);
END
$$;

-- remove_beneficiary(_id, _uid, _beneficiary_id): removes a beneficiary; the holder cannot be removed.
CREATE FUNCTION postsales.remove_beneficiary(_id bigint, _uid uuid, _beneficiary_id bigint) RETURNS jsonb
LANGUAGE plpgsql VOLATILE SET search_path = '' AS $$
DECLARE
  _item bigint := (postsales.visible_item(_id, _uid)).id;
  _is_holder boolean;
BEGIN
  SELECT b.is_holder INTO _is_holder FROM insurance.beneficiaries b
   WHERE b.id = _beneficiary_id AND b.risk_item_id = _item;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'PT404', MESSAGE = 'beneficiary not found', DETAIL = 'NOT_FOUND';
  END IF;
  IF _is_holder THEN
    PERFORM postsales.unprocessable('HOLDER_NOT_REMOVABLE', 'the holder cannot be removed');
  END IF;
  DELETE FROM insurance.beneficiaries b WHERE b.id = _beneficiary_id;
  RETURN jsonb_build_object('id', _beneficiary_id, 'removed', true);
END
$$;

-- risk_item_variants(_id, _uid): the product variants of the item's package.
CREATE FUNCTION postsales.risk_item_variants(_id bigint, _uid uuid) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
  _package_id bigint := (postsales.visible_item(_id, _uid)).package_id;
BEGIN
  RETURN (SELECT coalesce(jsonb_agg(jsonb_build_object(
                   'code', v.code, 'name', v.name, 'coverages', v.coverages,
                   'premium', v.premium, 'currency', v.currency) ORDER BY v.code), '[]')
            FROM insurance.package_variants v WHERE v.package_id = _package_id);
END
$$;

REVOKE ALL ON FUNCTION postsales.visible_item(bigint, uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION postsales.visible_item(bigint, uuid) TO insurance_holder;

REVOKE ALL ON FUNCTION postsales.risk_item(bigint, uuid),
  postsales.update_risk_item(bigint, uuid, jsonb), postsales.risk_item_beneficiaries(bigint, uuid),
  postsales.add_beneficiary(bigint, uuid, jsonb), postsales.update_beneficiary(bigint, uuid, bigint, jsonb),
  postsales.remove_beneficiary(bigint, uuid, bigint), postsales.risk_item_variants(bigint, uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION postsales.risk_item(bigint, uuid),
  postsales.update_risk_item(bigint, uuid, jsonb), postsales.risk_item_beneficiaries(bigint, uuid),
  postsales.add_beneficiary(bigint, uuid, jsonb), postsales.update_beneficiary(bigint, uuid, bigint, jsonb),
  postsales.remove_beneficiary(bigint, uuid, bigint), postsales.risk_item_variants(bigint, uuid)
  TO insurance_holder, insurance_app;

COMMIT;
