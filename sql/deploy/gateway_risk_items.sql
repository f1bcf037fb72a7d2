-- Deploy insurance:gateway_risk_items to pg
-- requires: channel_rls
-- requires: rate_limits
-- requires: channel_packages
-- One function per risk-item route of gateway v1 and v2, under the channel's RLS.
BEGIN;
SET LOCAL ROLE insurance_owner;

-- The risk-item routes of gateway v1 and v2, one function per route. They run as
-- insurance_channel (SECURITY INVOKER): which rows a channel sees or creates is decided by
-- the policies of channel_rls, never by a WHERE clause here. Each starts with
-- gateway.admit() (active channel, rate limit) and returns a gateway.reply.

-- risk_item_documents: each risk item as the gateway shows it (its id and uid, its package
-- uid and beneficiaries). A view (inlined into each query, so the policies' claim lookups run once
-- per query, not once per item); security_invoker, so the caller's RLS applies.
CREATE VIEW gateway.risk_item_documents WITH (security_invoker = true) AS
SELECT r.id, r.uid, r.policy_uid,
       pg_catalog.jsonb_build_object(
         'id', r.id,
         'uid', r.uid,
         'package_uid', p.uid,
         'policy_uid', r.policy_uid,
         'status', r.status,
         'variant', r.variant,
         'insured_subject', r.insured_subject,
         'beneficiaries', coalesce(b.list, '[]'),
         'metadata', r.metadata,
         'created_at', r.created_at,
         'updated_at', r.updated_at) AS document
  FROM insurance.risk_items r
  JOIN insurance.packages p ON p.id = r.package_id
  LEFT JOIN LATERAL (
    SELECT pg_catalog.jsonb_agg(insurance.beneficiary_json(b) ORDER BY b.id) AS list
      FROM insurance.beneficiaries b WHERE b.risk_item_id = r.id) AS b ON true;
COMMENT ON VIEW gateway.risk_item_documents IS 'Risk items as the gateway answers them; RLS of the caller applies';

-- list_risk_items(limit, from, to, policy): items from..to (0-based, inclusive, in creation
-- order) of the channel, optionally of one policy uid, with the total count. The app
-- checks the window (0 <= from <= to, at most 100 items). One scan gives both the window
-- and the total (count(*) OVER () runs before OFFSET/LIMIT); only a window past the end
-- needs a second count. The documents are looked up by key for the window's rows only
-- (a scalar subquery per row, never a join over all of the channel's items).
CREATE FUNCTION gateway.list_risk_items(_limit integer, _from integer, _to integer, _policy text)
RETURNS gateway.reply
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _reply gateway.reply;
  _items jsonb;
  _total bigint;
BEGIN
  PERFORM insurance.require_role('insurance_channel');
  _reply := gateway.admit(_limit);
  IF _reply.rate_remaining < 0 THEN
    RETURN _reply;
  END IF;
  SELECT coalesce(pg_catalog.jsonb_agg(
           (SELECT d.document FROM gateway.risk_item_documents d WHERE d.id = page.id) ORDER BY page.id), '[]'),
         max(page.total)
    INTO _items, _total
    FROM (SELECT r.id, count(*) OVER () AS total FROM insurance.risk_items r
           WHERE _policy IS NULL OR r.policy_uid = _policy
           ORDER BY r.id OFFSET _from LIMIT _to - _from + 1) AS page;
  IF _total IS NULL THEN
    SELECT count(*) INTO _total FROM insurance.risk_items r WHERE _policy IS NULL OR r.policy_uid = _policy;
  END IF;
  _reply.data := pg_catalog.jsonb_build_object('items', _items, 'total', _total, 'from', _from, 'to', _to);
  RETURN _reply;
END
$$;
COMMENT ON FUNCTION gateway.list_risk_items(integer, integer, integer, text) IS
  'Admits the call (gateway.admit) and answers the channel''s items _from.._to in creation order, '
  'optionally of one policy uid, with the total: a gateway.reply. Channel role.';

-- page_risk_items(limit, page_size, after, policy): keyset pagination (gateway v2): up to
-- page_size items with an id after `after` (NULL: from the start), the total count and
-- `nextCursor` (the last id as 8 bytes in unpadded base64url, NULL on the last page),
-- which the app decodes back into `after`.
CREATE FUNCTION gateway.page_risk_items(_limit integer, _page_size integer, _after bigint, _policy text)
RETURNS gateway.reply
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _reply gateway.reply;
BEGIN
  PERFORM insurance.require_role('insurance_channel');
  _reply := gateway.admit(_limit);
  IF _reply.rate_remaining < 0 THEN
    RETURN _reply;
  END IF;
  SELECT pg_catalog.jsonb_build_object(
           'items', coalesce(pg_catalog.jsonb_agg(
                               (SELECT d.document FROM gateway.risk_item_documents d WHERE d.id = page.id)
                               ORDER BY page.id) FILTER (WHERE page.n <= _page_size), '[]'),
           'total', (SELECT count(*) FROM insurance.risk_items r
                      WHERE _policy IS NULL OR r.policy_uid = _policy),
           'nextCursor', CASE WHEN count(*) > _page_size THEN pg_catalog.translate(pg_catalog.encode(
                           pg_catalog.int8send(max(page.id) FILTER (WHERE page.n <= _page_size)), 'base64'),
                           '+/=', '-_') END)
    INTO _reply.data
    FROM (SELECT r.id, row_number() OVER (ORDER BY r.id) AS n FROM insurance.risk_items r
           WHERE (_after IS NULL OR r.id > _after) AND (_policy IS NULL OR r.policy_uid = _policy)
           ORDER BY r.id LIMIT _page_size + 1) AS page;
  RETURN _reply;
END
$$;
COMMENT ON FUNCTION gateway.page_risk_items(integer, integer, bigint, text) IS
  'Admits the call and answers up to _page_size of the channel''s items after id _after (keyset, '
  'gateway v2), optionally of one policy uid, with total and nextCursor: a gateway.reply. Channel role.';

-- get_risk_item(limit, id, uid): one item of the channel, named by its integer id (as the
-- create answer carries it) or its uid (both: they must name the same item), or PT404
-- RISK_ITEM_NOT_FOUND (also for another channel's item: RLS hides it).
CREATE FUNCTION gateway.get_risk_item(_limit integer, _id bigint, _uid uuid) RETURNS gateway.reply
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _reply gateway.reply;
BEGIN
  PERFORM insurance.require_role('insurance_channel');
  _reply := gateway.admit(_limit);
  IF _reply.rate_remaining < 0 THEN
    RETURN _reply;
  END IF;
  SELECT d.document INTO _reply.data FROM gateway.risk_item_documents d
   WHERE (_id IS NOT NULL OR _uid IS NOT NULL) AND (_id IS NULL OR d.id = _id) AND (_uid IS NULL OR d.uid = _uid);
  IF _reply.data IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PT404', MESSAGE = 'risk item not found', DETAIL = 'RISK_ITEM_NOT_FOUND';
  END IF;
  RETURN _reply;
END
$$;
COMMENT ON FUNCTION gateway.get_risk_item(integer, bigint, uuid) IS
  'Admits the call and answers the channel''s item named by _id or _uid: a gateway.reply; raises PT404 '
  'RISK_ITEM_NOT_FOUND (also for another channel''s item). Channel role.';

GRANT SELECT ON gateway.risk_item_documents TO insurance_channel;
-- create_risk_item reports every broken field rule at once, per field, and the rules it reports
-- are the tables' own (CHECK and NOT NULL, read from the catalog): the app holds no copy of them.
-- Only the JSON shape of the body (which keys, which JSON types) is written here.

-- _broken_rules(table, row): the rules of `table` that `row` (jsonb keyed by column name) breaks,
-- as [{column, message}]: a value the column's type cannot hold, a NULL in a NOT NULL column, a
-- CHECK constraint that fails (message: the constraint's comment, else its expression). Only the
-- columns present in `row` are checked. Dynamic SQL, so only called once an insert has failed.
CREATE FUNCTION gateway._broken_rules(_table regclass, _row jsonb) RETURNS jsonb
LANGUAGE plpgsql STABLE SET search_path = '' AS $$
DECLARE
  _problems jsonb := '[]';
  _unreadable text[] := '{}';
  _column record;
  _rule record;
  _null boolean;
  _ok boolean;
BEGIN
  FOR _column IN
    SELECT a.attname::text AS name, a.attnotnull, pg_catalog.format_type(a.atttypid, a.atttypmod) AS type
      FROM pg_catalog.pg_attribute a
     WHERE a.attrelid = _table AND a.attnum > 0 AND NOT a.attisdropped AND _row ? a.attname::text
     ORDER BY a.attnum
  LOOP
    BEGIN
      EXECUTE pg_catalog.format('SELECT (pg_catalog.jsonb_populate_record(NULL::%s, $1)).%I IS NULL',
                                _table, _column.name)
         INTO _null USING pg_catalog.jsonb_build_object(_column.name, _row -> _column.name);
      IF _null AND _column.attnotnull THEN
        _problems := _problems || pg_catalog.jsonb_build_object('column', _column.name, 'message', 'is required');
      END IF;
    EXCEPTION WHEN data_exception OR check_violation THEN  -- a domain checks on conversion
      _unreadable := _unreadable || _column.name;
      _problems := _problems || pg_catalog.jsonb_build_object(
        'column', _column.name, 'message', 'is not a valid ' || _column.type);
    END;
  END LOOP;
  FOR _rule IN
    SELECT pg_catalog.pg_get_expr(c.conbin, c.conrelid) AS expr,
           pg_catalog.obj_description(c.oid, 'pg_constraint') AS description,
           ARRAY(SELECT a.attname::text FROM pg_catalog.pg_attribute a
                  WHERE a.attrelid = c.conrelid AND a.attnum = ANY (c.conkey) ORDER BY a.attnum) AS columns
      FROM pg_catalog.pg_constraint c
     WHERE c.conrelid = _table AND c.contype = 'c'
     ORDER BY c.conname
  LOOP
    CONTINUE WHEN NOT _rule.columns <@ ARRAY(SELECT pg_catalog.jsonb_object_keys(_row)) OR _rule.columns && _unreadable;
    BEGIN
      EXECUTE pg_catalog.format('SELECT %s FROM pg_catalog.jsonb_populate_record(NULL::%s, $1) AS _r',
                                _rule.expr, _table)
         INTO _ok USING _row;
    EXCEPTION WHEN data_exception OR check_violation THEN  -- a cast to a domain inside the rule
      _ok := false;
    END;
    IF NOT _ok THEN  -- NULL passes, as in a CHECK
      SELECT _problems || pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
               'column', c, 'message', coalesce(_rule.description, 'must satisfy ' || _rule.expr)))
        INTO _problems FROM pg_catalog.unnest(_rule.columns) AS c;
    END IF;
  END LOOP;
  RETURN _problems;
END
$$;
COMMENT ON FUNCTION gateway._broken_rules(regclass, jsonb) IS
  'The rules of table _table that _row (jsonb by column) breaks, as [{column, message}]: type, NOT '
  'NULL, CHECK (message: the constraint''s comment). Dynamic SQL; called only after an insert failed. '
  'Channel role.';

-- _shape_problems(value, prefix, types, required): [{field, message}] for the keys of the object
-- `value` that `types` ({key: JSON type}) does not know, the `required` keys it lacks and the values
-- of another JSON type (null stands for absent, except in a required key).
CREATE FUNCTION gateway._shape_problems(_value jsonb, _prefix text, _types jsonb, _required text[])
RETURNS jsonb
LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
  SELECT coalesce(pg_catalog.jsonb_agg(p.problem ORDER BY p.key), '[]')
    FROM (SELECT k AS key, pg_catalog.jsonb_build_object('field', _prefix || k, 'message', 'unknown field') AS problem
            FROM pg_catalog.jsonb_object_keys(_value) AS k WHERE NOT _types ? k
          UNION ALL
          SELECT t.key, pg_catalog.jsonb_build_object('field', _prefix || t.key, 'message',
                   CASE WHEN _value -> t.key IS NULL OR pg_catalog.jsonb_typeof(_value -> t.key) = 'null'
                        THEN 'is required' ELSE 'must be of JSON type ' || (t.value #>> '{}') END)
            FROM pg_catalog.jsonb_each(_types) AS t
           WHERE CASE WHEN _value -> t.key IS NULL OR pg_catalog.jsonb_typeof(_value -> t.key) = 'null'
                      THEN t.key = ANY (_required)
                      ELSE pg_catalog.jsonb_typeof(_value -> t.key) <> (t.value #>> '{}') END) AS p
$$;
COMMENT ON FUNCTION gateway._shape_problems(jsonb, text, jsonb, text[]) IS
  '[{field, message}] for the keys of _value that _types does not know, the _required keys it lacks and'
  ' the values of another JSON type. Channel role.';

-- create_risk_item(limit, item): creates the item for the token's channel, with its
-- beneficiaries. PT400 VALIDATION_ERROR with details [{field, message}] naming every field that
-- breaks the body's shape or a rule of insurance.risk_items / insurance.beneficiaries,
-- PT422 UNKNOWN_PACKAGE, PT422 INVALID_VARIANT (not sold by the package), PT409 DUPLICATE_POLICY
-- (same policy uid in the same package, whichever channel holds it).
CREATE FUNCTION gateway.create_risk_item(_limit integer, _item jsonb) RETURNS gateway.reply
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _reply         gateway.reply;
  _package       insurance.packages;
  _row           insurance.risk_items;
  _problems      jsonb;
  _beneficiaries jsonb;
  _b             record;
BEGIN
  PERFORM insurance.require_role('insurance_channel');
  _reply := gateway.admit(_limit);
  IF _reply.rate_remaining < 0 THEN
    RETURN _reply;
  END IF;
  _problems := gateway._shape_problems(_item, '',
    '{"package_uid": "string", "policy_uid": "string", "variant": "string", "insured_subject": "object",
      "metadata": "object", "beneficiaries": "array"}',
    '{package_uid, policy_uid, variant, insured_subject}');
  IF pg_catalog.jsonb_typeof(_item -> 'beneficiaries') = 'array' THEN
    IF pg_catalog.jsonb_array_length(_item -> 'beneficiaries') > 50 THEN
      _problems := _problems || '[{"field": "beneficiaries", "message": "at most 50 beneficiaries"}]';
    END IF;
    SELECT _problems || coalesce(pg_catalog.jsonb_agg(p ORDER BY e.i), '[]')
      INTO _problems
      FROM pg_catalog.jsonb_array_elements(_item -> 'beneficiaries') WITH ORDINALITY AS e(b, i),
           LATERAL pg_catalog.jsonb_array_elements(CASE WHEN pg_catalog.jsonb_typeof(e.b) = 'object'
             THEN gateway._shape_problems(e.b, pg_catalog.format('beneficiaries[%s].', e.i - 1),
                    '{"name": "string", "email": "string", "document": "string", "relationship": "string",
                      "isHolder": "boolean", "share": "number"}', '{}')
             ELSE pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
                    'field', pg_catalog.format('beneficiaries[%s]', e.i - 1), 'message', 'must be an object')) END) AS p;
  END IF;
  IF _problems <> '[]' THEN
    RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = 'the risk item is not valid', DETAIL = 'VALIDATION_ERROR',
      HINT = _problems::text;
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

  -- The beneficiaries as rows of the table: e-mail lower-cased as stored, defaults applied.
  SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
           'name', b -> 'name', 'email', pg_catalog.lower(b ->> 'email'), 'document', b -> 'document',
           'relationship', b -> 'relationship', 'is_holder', coalesce(NULLIF(b -> 'isHolder', 'null'), 'false'),
           'share', coalesce(NULLIF(b -> 'share', 'null'), '0')) ORDER BY i), '[]')
    INTO _beneficiaries
    FROM pg_catalog.jsonb_array_elements(coalesce(_item -> 'beneficiaries', '[]')) WITH ORDINALITY AS e(b, i);
  BEGIN
    INSERT INTO insurance.risk_items (package_id, channel_id, policy_uid, variant, insured_subject, metadata)
    VALUES (_package.id, (SELECT insurance.claim('sub'))::uuid, _item ->> 'policy_uid', _item ->> 'variant',
            _item -> 'insured_subject', coalesce(_item -> 'metadata', '{}'))
    ON CONFLICT (package_id, policy_uid) DO NOTHING
    RETURNING * INTO _row;
    IF _row.id IS NULL THEN
      RAISE EXCEPTION USING ERRCODE = 'PT409', MESSAGE = 'this policy exists already in the package',
        DETAIL = 'DUPLICATE_POLICY';
    END IF;
    INSERT INTO insurance.beneficiaries (risk_item_id, name, email, document, relationship, is_holder, share)
    SELECT _row.id, r.name, r.email, r.document, r.relationship, r.is_holder, r.share
      FROM pg_catalog.jsonb_populate_recordset(NULL::insurance.beneficiaries, _beneficiaries) AS r;
  EXCEPTION WHEN check_violation OR not_null_violation OR data_exception OR SQLSTATE 'PT422' THEN
    -- Which fields: the tables' rules, each checked on its own (a BEFORE trigger such as the
    -- shares' sum may have fired before the row's own CHECK; it is re-raised when no rule broke).
    SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object('field', p ->> 'column', 'message', p -> 'message')), '[]')
      INTO _problems
      FROM pg_catalog.jsonb_array_elements(gateway._broken_rules('insurance.risk_items',
             pg_catalog.jsonb_build_object('policy_uid', _item -> 'policy_uid', 'variant', _item -> 'variant',
               'insured_subject', _item -> 'insured_subject', 'metadata', coalesce(_item -> 'metadata', '{}')))) AS p;
    FOR _b IN SELECT e.b, e.i FROM pg_catalog.jsonb_array_elements(_beneficiaries) WITH ORDINALITY AS e(b, i) LOOP
      SELECT _problems || coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
               'field', pg_catalog.format('beneficiaries[%s].%s', _b.i - 1,
                          CASE p ->> 'column' WHEN 'is_holder' THEN 'isHolder' ELSE p ->> 'column' END),
               'message', p -> 'message')), '[]')
        INTO _problems FROM pg_catalog.jsonb_array_elements(gateway._broken_rules('insurance.beneficiaries', _b.b)) AS p;
    END LOOP;
    IF _problems = '[]' THEN
      RAISE;
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'PT400', MESSAGE = 'the risk item is not valid', DETAIL = 'VALIDATION_ERROR',
      HINT = _problems::text;
  END;
  SELECT d.document INTO _reply.data FROM gateway.risk_item_documents d WHERE d.id = _row.id;
  RETURN _reply;
END
$$;
COMMENT ON FUNCTION gateway.create_risk_item(integer, jsonb) IS
  'Admits the call and creates the item with its beneficiaries for the token''s channel: a '
  'gateway.reply (201); raises PT400 VALIDATION_ERROR naming every broken field, PT422 UNKNOWN_PACKAGE '
  '/ INVALID_VARIANT, PT403 PACKAGE_NOT_ALLOWED, PT409 DUPLICATE_POLICY (same policy uid in the '
  'package). Channel role.';

REVOKE ALL ON FUNCTION gateway._broken_rules(regclass, jsonb), gateway._shape_problems(jsonb, text, jsonb, text[])
  FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gateway._broken_rules(regclass, jsonb), gateway._shape_problems(jsonb, text, jsonb, text[])
  TO insurance_channel;
REVOKE ALL ON FUNCTION gateway.list_risk_items(integer, integer, integer, text),
  gateway.page_risk_items(integer, integer, bigint, text),
  gateway.get_risk_item(integer, bigint, uuid), gateway.create_risk_item(integer, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gateway.list_risk_items(integer, integer, integer, text),
  gateway.page_risk_items(integer, integer, bigint, text),
  gateway.get_risk_item(integer, bigint, uuid), gateway.create_risk_item(integer, jsonb)
  TO insurance_channel, insurance_app;

COMMIT;