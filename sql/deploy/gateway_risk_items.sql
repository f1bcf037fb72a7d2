-- Deploy insurance:gateway_risk_items to pg
-- requires: channel_rls
-- requires: rate_limits
-- The risk-item routes of gateway v1 and v2, one function per route. They run as
-- insurance_channel (SECURITY INVOKER): which rows a channel sees or creates is decided by
-- the policies of channel_rls, never by a WHERE clause here. Each starts with
-- gateway.admit() (active channel, rate limit) and returns a gateway.reply.
BEGIN;
SET LOCAL ROLE insurance_owner;

-- risk_item_json(item): the item as the gateway shows it, with its beneficiaries.
CREATE FUNCTION gateway.risk_item_json(_r insurance.risk_items) RETURNS jsonb
LANGUAGE sql STABLE SET search_path = '' AS $$
  SELECT pg_catalog.jsonb_build_object(
    'uid', _r.uid,
    'package_uid', (SELECT p.uid FROM insurance.packages p WHERE p.id = _r.package_id),
    'policy_uid', _r.policy_uid,
    'status', _r.status,
    'variant', _r.variant,
    'insured_subject', _r.insured_subject,
    'beneficiaries', coalesce((
      SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
               'name', b.name, 'email', b.email, 'document', b.document,
               'relationship', b.relationship, 'isHolder', b.is_holder, 'share', b.share)
             ORDER BY b.id)
        FROM insurance.beneficiaries b WHERE b.risk_item_id = _r.id), '[]'),
    'metadata', _r.metadata,
    'created_at', _r.created_at,
    'updated_at', _r.updated_at)
$$;

-- list_risk_items(limit, from, to, policy): items from..to (0-based, inclusive, in creation
-- order) of the channel, optionally of one policy uid, with the total count. The app
-- checks the window (0 <= from <= to, at most 100 items).
CREATE FUNCTION gateway.list_risk_items(_limit integer, _from integer, _to integer, _policy text)
RETURNS gateway.reply
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _reply gateway.reply := gateway.admit(_limit);
BEGIN
  IF _reply.rate_remaining < 0 THEN
    RETURN _reply;
  END IF;
  SELECT pg_catalog.jsonb_build_object(
           'items', coalesce(pg_catalog.jsonb_agg(gateway.risk_item_json(page) ORDER BY page.id), '[]'),
           'total', (SELECT count(*) FROM insurance.risk_items r
                      WHERE _policy IS NULL OR r.policy_uid = _policy),
           'from', _from, 'to', _to)
    INTO _reply.data
    FROM (SELECT * FROM insurance.risk_items r
           WHERE _policy IS NULL OR r.policy_uid = _policy
           ORDER BY r.id OFFSET _from LIMIT _to - _from + 1) AS page;
  RETURN _reply;
END
$$;

-- page_risk_items(limit, page_size, after, policy): keyset pagination (gateway v2): up to
-- page_size items with an id after `after` (NULL: from the start), the total count and
-- `nextCursor` (the last id as 8 bytes in unpadded base64url, NULL on the last page),
-- which the app decodes back into `after`.
CREATE FUNCTION gateway.page_risk_items(_limit integer, _page_size integer, _after bigint, _policy text)
RETURNS gateway.reply
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _reply gateway.reply := gateway.admit(_limit);
BEGIN
  IF _reply.rate_remaining < 0 THEN
    RETURN _reply;
  END IF;
  SELECT pg_catalog.jsonb_build_object(
           'items', coalesce(pg_catalog.jsonb_agg(gateway.risk_item_json(page.item) ORDER BY page.id)
                               FILTER (WHERE page.n <= _page_size), '[]'),
           'total', (SELECT count(*) FROM insurance.risk_items r
                      WHERE _policy IS NULL OR r.policy_uid = _policy),
           'nextCursor', CASE WHEN count(*) > _page_size THEN pg_catalog.translate(pg_catalog.encode(
                           pg_catalog.int8send(max(page.id) FILTER (WHERE page.n <= _page_size)), 'base64'),
                           '+/=', '-_') END)
    INTO _reply.data
    FROM (SELECT r AS item, r.id, row_number() OVER (ORDER BY r.id) AS n FROM insurance.risk_items r
           WHERE (_after IS NULL OR r.id > _after) AND (_policy IS NULL OR r.policy_uid = _policy)
           ORDER BY r.id LIMIT _page_size + 1) AS page;
  RETURN _reply;
END
$$;

-- get_risk_item(limit, uid): one item of the channel, or PT404 RISK_ITEM_NOT_FOUND (also
-- for another channel's item: RLS hides it).
CREATE FUNCTION gateway.get_risk_item(_limit integer, _uid uuid) RETURNS gateway.reply
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _reply gateway.reply := gateway.admit(_limit);
BEGIN
  IF _reply.rate_remaining < 0 THEN
    RETURN _reply;
  END IF;
  SELECT gateway.risk_item_json(r) INTO _reply.data FROM insurance.risk_items r WHERE r.uid = _uid;
  IF _reply.data IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PT404', MESSAGE = 'risk item not found', DETAIL = 'RISK_ITEM_NOT_FOUND';
  END IF;
  RETURN _reply;
END
$$;

-- create_risk_item(limit, item): creates the item for the token's channel, with its
-- beneficiaries, from a body the app has checked for shape. PT422 UNKNOWN_PACKAGE,
-- PT422 INVALID_VARIANT (not sold by the package), PT409 DUPLICATE_POLICY (same policy
-- uid in the same package, whichever channel holds it).
CREATE FUNCTION gateway.create_risk_item(_limit integer, _item jsonb) RETURNS gateway.reply
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
  _reply.data := gateway.risk_item_json(_row);
  RETURN _reply;
END
$$;

REVOKE ALL ON FUNCTION gateway.risk_item_json(insurance.risk_items),
  gateway.list_risk_items(integer, integer, integer, text),
  gateway.page_risk_items(integer, integer, bigint, text),
  gateway.get_risk_item(integer, uuid), gateway.create_risk_item(integer, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gateway.risk_item_json(insurance.risk_items) TO insurance_channel;
GRANT EXECUTE ON FUNCTION gateway.list_risk_items(integer, integer, integer, text),
  gateway.page_risk_items(integer, integer, bigint, text),
  gateway.get_risk_item(integer, uuid), gateway.create_risk_item(integer, jsonb)
  TO insurance_channel, insurance_app;

COMMIT;
