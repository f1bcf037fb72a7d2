-- Revert insurance:gateway_risk_items from pg: back to @v1.0's create_risk_item (the app checked the fields).
BEGIN;
SET LOCAL ROLE insurance_owner;

CREATE OR REPLACE FUNCTION gateway.create_risk_item(_limit integer, _item jsonb) RETURNS gateway.reply
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _reply   gateway.reply := gateway.admit(_limit);
  _package insurance.packages;
  _row     insurance.risk_items;
BEGIN
  IF _reply.rate_remaining < 0 THEN
    RETURN _reply;
  END IF;
  SELECT * INTO _package FROM insurance.packages WHERE uid = _item ->> 'package_uid';
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'PT422', MESSAGE = 'unknown package', DETAIL = 'UNKNOWN_PACKAGE';
  END IF;
  IF NOT EXISTS (SELECT FROM insurance.package_variants v
                  WHERE v.package_id = _package.id AND v.code = _item ->> 'variant') THEN
    RAISE EXCEPTION USING ERRCODE = 'PT422', MESSAGE = 'the package does not sell this variant',
      DETAIL = 'INVALID_VARIANT',
      HINT = (SELECT pg_catalog.jsonb_build_object('variants', coalesce(pg_catalog.jsonb_agg(v.code ORDER BY v.code), '[]'))
                FROM insurance.package_variants v WHERE v.package_id = _package.id)::text;
  END IF;
  INSERT INTO insurance.risk_items (package_id, channel_id, policy_uid, variant, insured_subject, metadata)
  VALUES (_package.id, (SELECT insurance.claim('sub'))::uuid, _item ->> 'policy_uid', _item ->> 'variant',
          coalesce(_item -> 'insured_subject', '{}'), coalesce(_item -> 'metadata', '{}'))
  ON CONFLICT (package_id, policy_uid) DO NOTHING
  RETURNING * INTO _row;
  IF _row.id IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PT409', MESSAGE = 'this policy exists already in the package',
      DETAIL = 'DUPLICATE_POLICY';
  END IF;
  INSERT INTO insurance.beneficiaries (risk_item_id, name, email, document, relationship, is_holder, share)
  SELECT _row.id, b ->> 'name', pg_catalog.lower(b ->> 'email'), b ->> 'document', b ->> 'relationship',
         coalesce((b ->> 'isHolder')::boolean, false), coalesce((b ->> 'share')::numeric, 0)
    FROM pg_catalog.jsonb_array_elements(coalesce(_item -> 'beneficiaries', '[]')) AS b;
  SELECT d.document INTO _reply.data FROM gateway.risk_item_documents d WHERE d.id = _row.id;
  RETURN _reply;
END
$$;

COMMENT ON CONSTRAINT beneficiaries_check ON insurance.beneficiaries IS NULL;
DROP FUNCTION gateway._shape_problems(jsonb, text, jsonb, text[]);
DROP FUNCTION gateway._broken_rules(regclass, jsonb);

COMMIT;
