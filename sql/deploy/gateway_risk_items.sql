-- Deploy insurance:gateway_risk_items to pg
-- One function per risk-item route of gateway v1 and v2, under the channel's RLS. CREATE OR REPLACE
-- over the released functions (those whose parameters were renamed dropped first).
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- The rate limit's parameter is named _rate_limit, as gateway.reply and the app name it.
-- squawk-ignore ban-drop-function -- CREATE OR REPLACE keeps a parameter's name: each made anew below, same signature and grants, in this transaction
DROP FUNCTION gateway.list_risk_items(integer, integer, integer, text),
  gateway.page_risk_items(integer, integer, bigint, text),
  gateway.get_risk_item(integer, bigint, uuid),
  gateway.create_risk_item(integer, jsonb);

-- The risk-item routes of gateway v1 and v2, one function per route. They run as
-- insurance_channel (SECURITY INVOKER): which rows a channel sees or creates is decided by
-- the channel's policies on risk_items and beneficiaries, never by a WHERE clause here. Each starts with
-- gateway.admit() (active channel, rate limit) and returns a gateway.reply. The reads check
-- their role inline and call require_role() (a call with its own search_path, about 4 us) only
-- for another caller, which it refuses, or an operator, whom it lets through.

-- The answers are the items' stored documents (insurance.risk_item_documents, kept by the
-- triggers of the risk_item_documents change in the writes' transaction), read by key under the
-- channel's policy on that table: a page is an index range of ids and an aggregate of stored
-- documents, nothing is built per item.

-- list_risk_items(limit, from, to, policy): items from..to (0-based, inclusive, in creation
-- order) of the channel, optionally of one policy uid, with the total count. The app
-- checks the window (0 <= from <= to, at most 100 items).
-- Flat however many items the channel holds (docs/performance.md), and planned once per
-- session (force_generic_plan: a plan made again on every call cost as much as the query):
-- - the window's ids come from the (channel_id, id) or (channel_id, policy_uid) index under a
--   LIMIT the generic plan sees (100, the largest window; the array is then cut to the
--   window). A window that does not start at 0 goes through EXECUTE, planned with its
--   values (an OFFSET it could not see would be planned as 10% of the rows); it still
--   reads the rows before it: v2's cursor does not.
-- - the total is the channel's count kept by the triggers of risk_items, or, for one policy,
--   a count of that policy's few items;
-- - the stored documents are looked up by key for the window's rows only.
CREATE OR REPLACE FUNCTION gateway.list_risk_items(_rate_limit integer, _from integer, _to integer, _policy text)
RETURNS gateway.reply
LANGUAGE plpgsql SET search_path = '' SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  _reply gateway.reply;
  _ids bigint[];
  _total bigint;
  -- The policy's own condition, spelled out for the planner (RLS still decides): a generic
  -- plan then reads the (channel_id, id) range, not the primary key filtered by channel.
  _channel uuid := insurance.claim('sub')::uuid;
BEGIN
  IF pg_catalog.current_setting('role') <> 'insurance_channel' THEN  -- see the header
    PERFORM insurance.require_role('insurance_channel');
  END IF;
  _reply := gateway.admit(_rate_limit);
  IF _reply.rate_remaining < 0 THEN
    RETURN _reply;
  END IF;
  IF _from > 0 THEN
    EXECUTE pg_catalog.format(
      'SELECT ARRAY(SELECT r.id FROM insurance.risk_items r WHERE $1 IS NULL OR r.policy_uid = $1
                     ORDER BY r.id OFFSET %s LIMIT %s)', _from, _to - _from + 1)
      INTO _ids USING _policy;
  ELSIF _policy IS NULL THEN
    _ids := (ARRAY(SELECT r.id FROM insurance.risk_items r WHERE r.channel_id = _channel
                    ORDER BY r.id LIMIT 100))[1:_to + 1];
  ELSE
    _ids := (ARRAY(SELECT r.id FROM insurance.risk_items r WHERE r.channel_id = _channel AND r.policy_uid = _policy
                    ORDER BY r.id LIMIT 100))[1:_to + 1];
  END IF;
  IF _policy IS NULL THEN
    _total := coalesce((SELECT c.count FROM insurance.channel_item_counts c), 0);  -- RLS: its own row
  ELSE
    _total := (SELECT count(*) FROM insurance.risk_items r WHERE r.policy_uid = _policy);
  END IF;
  -- The text jsonb_build_object() would print (its key order, its separators), written out: each
  -- stored document is printed once instead of being unpacked into an aggregate, then an
  -- object, and printed whole (ten items: about 100 us of the call's 165).
  _reply.data := '{"to": ' || coalesce(_to::text, 'null') || ', "from": ' || coalesce(_from::text, 'null')
    || ', "items": [' || coalesce((SELECT pg_catalog.string_agg(coalesce(
                          (SELECT d.document::text FROM insurance.risk_item_documents d WHERE d.risk_item_id = page.id),
                          'null'), ', ' ORDER BY page.n)
                   FROM pg_catalog.unnest(_ids) WITH ORDINALITY AS page(id, n)), '')
    || '], "total": ' || _total || '}';
  RETURN _reply;
END
$$;
COMMENT ON FUNCTION gateway.list_risk_items(integer, integer, integer, text) IS
  'Admits the call (gateway.admit) and answers the channel''s items _from.._to in creation order, '
  'optionally of one policy uid, with the total: a gateway.reply. Channel role.';

-- page_risk_items(limit, page_size, after, policy): keyset pagination (gateway v2): up to
-- page_size items with an id after `after` (NULL: from the start), the total count and
-- `nextCursor` (the last id as 8 bytes in unpadded base64url, NULL on the last page),
-- which the app decodes back into `after`. Flat and planned once, as list_risk_items: an
-- index range from `after` under a LIMIT the generic plan sees (101: the largest page and
-- one more), and the kept count.
CREATE OR REPLACE FUNCTION gateway.page_risk_items(_rate_limit integer, _page_size integer, _after bigint, _policy text)
RETURNS gateway.reply
LANGUAGE plpgsql SET search_path = '' SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  _reply gateway.reply;
  _ids bigint[];
  _total bigint;
  -- Ids start at 1. A plain variable, not coalesce() in the query: under the channel's policy
  -- only a leakproof comparison with a parameter may become an index condition.
  _start bigint := coalesce(_after, 0);
  _channel uuid := insurance.claim('sub')::uuid;  -- as in list_risk_items
BEGIN
  IF pg_catalog.current_setting('role') <> 'insurance_channel' THEN  -- see the header
    PERFORM insurance.require_role('insurance_channel');
  END IF;
  _reply := gateway.admit(_rate_limit);
  IF _reply.rate_remaining < 0 THEN
    RETURN _reply;
  END IF;
  IF _policy IS NULL THEN
    _ids := (ARRAY(SELECT r.id FROM insurance.risk_items r WHERE r.channel_id = _channel AND r.id > _start
                    ORDER BY r.id LIMIT 101))[1:_page_size + 1];
    _total := coalesce((SELECT c.count FROM insurance.channel_item_counts c), 0);  -- RLS: its own row
  ELSE
    _ids := (ARRAY(SELECT r.id FROM insurance.risk_items r
                    WHERE r.channel_id = _channel AND r.policy_uid = _policy AND r.id > _start
                    ORDER BY r.id LIMIT 101))[1:_page_size + 1];
    _total := (SELECT count(*) FROM insurance.risk_items r WHERE r.policy_uid = _policy);
  END IF;
  _reply.data := '{"items": [' || coalesce((SELECT pg_catalog.string_agg(coalesce(  -- as in list_risk_items
                          (SELECT d.document::text FROM insurance.risk_item_documents d WHERE d.risk_item_id = page.id),
                          'null'), ', ' ORDER BY page.n)
                   FROM pg_catalog.unnest(_ids[1:_page_size]) WITH ORDINALITY AS page(id, n)), '')
    || '], "total": ' || _total || ', "nextCursor": '
    || CASE WHEN pg_catalog.cardinality(_ids) > _page_size THEN pg_catalog.to_json(pg_catalog.translate(pg_catalog.encode(
         pg_catalog.int8send(_ids[_page_size]), 'base64'), '+/=', '-_'))::text ELSE 'null' END || '}';
  RETURN _reply;
END
$$;
COMMENT ON FUNCTION gateway.page_risk_items(integer, integer, bigint, text) IS
  'Admits the call and answers up to _page_size of the channel''s items after id _after (keyset, '
  'gateway v2), optionally of one policy uid, with total and nextCursor: a gateway.reply. Channel role.';

-- get_risk_item(limit, id, uid): one item of the channel, named by its integer id (as the
-- create answer carries it) or its uid (both: they must name the same item), or PT404
-- RISK_ITEM_NOT_FOUND (also for another channel's item: RLS hides it).
CREATE OR REPLACE FUNCTION gateway.get_risk_item(_rate_limit integer, _id bigint, _uid uuid) RETURNS gateway.reply
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _reply gateway.reply;
BEGIN
  IF pg_catalog.current_setting('role') <> 'insurance_channel' THEN  -- see the header
    PERFORM insurance.require_role('insurance_channel');
  END IF;
  _reply := gateway.admit(_rate_limit);
  IF _reply.rate_remaining < 0 THEN
    RETURN _reply;
  END IF;
  SELECT d.document INTO _reply.data
    FROM insurance.risk_items r JOIN insurance.risk_item_documents d ON d.risk_item_id = r.id
   WHERE (_id IS NOT NULL OR _uid IS NOT NULL) AND (_id IS NULL OR r.id = _id) AND (_uid IS NULL OR r.uid = _uid);
  IF _reply.data IS NULL THEN
    RAISE EXCEPTION USING ERRCODE = 'PT404', MESSAGE = 'risk item not found', DETAIL = 'RISK_ITEM_NOT_FOUND';
  END IF;
  RETURN _reply;
END
$$;
COMMENT ON FUNCTION gateway.get_risk_item(integer, bigint, uuid) IS
  'Admits the call and answers the channel''s item named by _id or _uid: a gateway.reply; raises PT404 '
  'RISK_ITEM_NOT_FOUND (also for another channel''s item). Channel role.';

-- create_risk_item reports every broken field rule at once, per field, and the rules it reports
-- are the tables' own (CHECK and NOT NULL, read from the catalog): the app holds no copy of them.
-- Only the JSON shape of the body (which keys, which JSON types) is written here.

-- _broken_rules(table, row): the rules of `table` that `row` (jsonb keyed by column name) breaks,
-- as [{column, message}]: a value the column's type cannot hold, a NULL in a NOT NULL column, a
-- CHECK constraint that fails (message: the constraint's comment, else 'is not valid', never its SQL). Only the
-- columns present in `row` are checked. Dynamic SQL, so only called once an insert has failed.
CREATE OR REPLACE FUNCTION gateway._broken_rules(_table regclass, _row jsonb) RETURNS jsonb
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
               'column', c, 'message', coalesce(_rule.description, 'is not valid')))
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
CREATE OR REPLACE FUNCTION gateway._shape_problems(_value jsonb, _prefix text, _types jsonb, _required text[])
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
CREATE OR REPLACE FUNCTION gateway.create_risk_item(_rate_limit integer, _item jsonb) RETURNS gateway.reply
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
  _reply := gateway.admit(_rate_limit);
  IF _reply.rate_remaining < 0 THEN
    RETURN _reply;
  END IF;
  _problems := gateway._shape_problems(_item, '',
    '{"package_uid": "string", "policy_uid": "string", "variant": "string", "insured_subject": "object",
      "metadata": "object", "beneficiaries": "array"}',
    '{package_uid, policy_uid, variant, insured_subject}');
  -- At most 50 beneficiaries: the table's rule (PT422 BENEFICIARY_LIMIT from its trigger), as for holders.
  IF pg_catalog.jsonb_typeof(_item -> 'beneficiaries') = 'array' THEN
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
  -- The statements' triggers have stored its document (with the beneficiaries) already.
  SELECT d.document INTO _reply.data FROM insurance.risk_item_documents d WHERE d.risk_item_id = _row.id;
  RETURN _reply;
END
$$;
COMMENT ON FUNCTION gateway.create_risk_item(integer, jsonb) IS
  'Admits the call and creates the item with its beneficiaries for the token''s channel: a '
  'gateway.reply (201); raises PT400 VALIDATION_ERROR naming every broken field, PT422 UNKNOWN_PACKAGE '
  '/ INVALID_VARIANT / BENEFICIARY_LIMIT (more than 50), PT403 PACKAGE_NOT_ALLOWED, PT409 DUPLICATE_POLICY '
  '(same policy uid in the package). Channel role.';
REVOKE ALL ON FUNCTION gateway._broken_rules(regclass, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION gateway._shape_problems(jsonb, text, jsonb, text[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gateway._broken_rules(regclass, jsonb) TO insurance_channel;
GRANT EXECUTE ON FUNCTION gateway._shape_problems(jsonb, text, jsonb, text[]) TO insurance_channel;
REVOKE ALL ON FUNCTION gateway.list_risk_items(integer, integer, integer, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION gateway.page_risk_items(integer, integer, bigint, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION gateway.get_risk_item(integer, bigint, uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION gateway.create_risk_item(integer, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gateway.list_risk_items(integer, integer, integer, text) TO insurance_channel, insurance_app;
GRANT EXECUTE ON FUNCTION gateway.page_risk_items(integer, integer, bigint, text) TO insurance_channel, insurance_app;
GRANT EXECUTE ON FUNCTION gateway.get_risk_item(integer, bigint, uuid) TO insurance_channel, insurance_app;
GRANT EXECUTE ON FUNCTION gateway.create_risk_item(integer, jsonb) TO insurance_channel, insurance_app;

COMMIT;
