-- Deploy insurance:admin_commands to pg
-- requires: audit_log
-- requires: packages
-- requires: channel_packages
-- requires: dashboard_users
-- requires: provider_config
-- requires: orders
-- The command line's SQL: an admin schema of functions that change and list packages, channels, users, providers and orders, each mutation audited.
BEGIN;
SET LOCAL ROLE insurance_owner;

-- The command line (`python -m app ...`, connected as the operator) calls these functions by
-- name, as every other caller does: it holds no table SQL. Each mutation writes its audit row
-- (insurance.record_audit) in its own transaction, refusals included; `_actor` is the OS user,
-- as 'cli:<name>' (the --actor given is kept beside it: insurance.audit_on_behalf_of). Refusals answer {"error": "<CODE>", "message": ...} and change
-- nothing but the audit log. No role but the owner (and superusers) may call them.

CREATE SCHEMA admin AUTHORIZATION insurance_owner;
COMMENT ON SCHEMA admin IS 'Functions of the operator''s command line; every mutation audited';

-- _refused: audit a refused command and answer its error.
CREATE FUNCTION admin._refused(_actor text, _action text, _targets jsonb, _code text, _message text)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = ''
AS $$
BEGIN
  PERFORM insurance.record_audit(_actor, _action, _targets, _code);
  RETURN pg_catalog.jsonb_build_object('error', _code, 'message', _message);
END
$$;
COMMENT ON FUNCTION admin._refused(text, text, jsonb, text, text) IS
  'Writes the audit row of a refused command (result refused, the code in details) and returns {error: '
  '_code, message: _message}. Helper of the admin functions.';

-- ---------------------------------------------------------------- packages

-- create_package: a package and its variants ([{code, name, premium, currency, coverages}],
-- at least one); PACKAGE_EXISTS for a taken uid, VARIANT_REQUIRED without a variant.
CREATE FUNCTION admin.create_package(_actor text, _uid text, _name text, _sales_slug text,
                                     _post_sales_slug text, _variants jsonb)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = ''
AS $$
DECLARE
  _package insurance.packages;
  _targets jsonb := pg_catalog.jsonb_build_array(_uid);
BEGIN
  IF EXISTS (SELECT FROM insurance.packages p WHERE p.uid = _uid) THEN
    RETURN admin._refused(_actor, 'packages.create', _targets, 'PACKAGE_EXISTS',
                          pg_catalog.format('a package with uid %s exists already', _uid));
  END IF;
  IF pg_catalog.jsonb_typeof(_variants) IS DISTINCT FROM 'array' OR pg_catalog.jsonb_array_length(_variants) = 0 THEN
    RETURN admin._refused(_actor, 'packages.create', _targets, 'VARIANT_REQUIRED',
                          'a package needs at least one variant');
  END IF;
  INSERT INTO insurance.packages (uid, name, sales_integration_slug, post_sales_integration_slug)
  VALUES (_uid, _name, _sales_slug, _post_sales_slug) RETURNING * INTO _package;
  INSERT INTO insurance.package_variants (package_id, code, name, premium, currency, coverages)
  SELECT _package.id, v.code, v.name, v.premium, v.currency, coalesce(v.coverages, '[]')
    FROM pg_catalog.jsonb_to_recordset(_variants)
         AS v(code text, name text, premium numeric, currency text, coverages jsonb);
  PERFORM insurance.record_audit(_actor, 'packages.create', _targets, 'ok',
            pg_catalog.jsonb_build_object('id', _package.id));
  RETURN admin.package_json(_package.id);
END
$$;
COMMENT ON FUNCTION admin.create_package(text, text, text, text, text, jsonb) IS
  'Creates package _uid with its integration slugs and variants ([{code, name, premium, currency, '
  'coverages}], at least one); audited; returns admin.package_json, or refuses PACKAGE_EXISTS / '
  'INVALID_VARIANTS. Operators (command line).';

-- package_json: a package with its variants, as the command line prints it.
CREATE FUNCTION admin.package_json(_id bigint)
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = ''
AS $$
  SELECT pg_catalog.jsonb_build_object(
           'id', p.id, 'uid', p.uid, 'name', p.name,
           'sales_integration_slug', p.sales_integration_slug,
           'post_sales_integration_slug', p.post_sales_integration_slug,
           'variants', coalesce((SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                                          'code', v.code, 'name', v.name, 'premium', v.premium,
                                          'currency', v.currency, 'coverages', v.coverages) ORDER BY v.code)
                                   FROM insurance.package_variants v WHERE v.package_id = p.id), '[]'))
    FROM insurance.packages p WHERE p.id = _id
$$;
COMMENT ON FUNCTION admin.package_json(bigint) IS
  'Package _id with its variants as the command line prints it, or NULL. Operators.';

-- list_packages: every package with its variants, oldest first.
CREATE FUNCTION admin.list_packages()
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = ''
AS $$
  SELECT coalesce(pg_catalog.jsonb_agg(admin.package_json(p.id) ORDER BY p.id), '[]')
    FROM insurance.packages p
$$;
COMMENT ON FUNCTION admin.list_packages() IS
  'Every package with its variants, oldest first, as a JSON array. Operators.';

-- ---------------------------------------------------------------- channels

-- create_channel: a partner channel with the hash of its new API key (the key is shown once,
-- by the caller, and never stored) and the packages it may sell, in one transaction: a name
-- in use (in any case) or an unknown package refuses the whole channel, and the refusal stays
-- in the audit log.
CREATE FUNCTION admin.create_channel(_actor text, _name text, _branches text[], _api_key_hash bytea,
                                     _ia_keys jsonb, _integration_payload jsonb, _package_uids text[])
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = ''
AS $$
DECLARE
  _channel insurance.channels;
  _unknown text;
  _targets jsonb := pg_catalog.jsonb_build_array(_name);
BEGIN
  IF EXISTS (SELECT FROM insurance.channels c WHERE pg_catalog.lower(c.name) = pg_catalog.lower(_name)) THEN
    RETURN admin._refused(_actor, 'channels.create', _targets, 'CHANNEL_NAME_TAKEN',
                          pg_catalog.format('a channel named %s exists already', _name));
  END IF;
  SELECT pg_catalog.string_agg(u, ', ' ORDER BY u) INTO _unknown
    FROM pg_catalog.unnest(coalesce(_package_uids, '{}')) AS u
   WHERE NOT EXISTS (SELECT FROM insurance.packages p WHERE p.uid = u);
  IF _unknown IS NOT NULL THEN
    RETURN admin._refused(_actor, 'channels.create', _targets, 'UNKNOWN_PACKAGE',
                          pg_catalog.format('no package with uid %s', _unknown));
  END IF;
  INSERT INTO insurance.channels (name, branches, api_key_hash, ia_keys, integration_payload)
  VALUES (_name, _branches, _api_key_hash, coalesce(_ia_keys, '{}'), coalesce(_integration_payload, '{}'))
  RETURNING * INTO _channel;
  INSERT INTO insurance.channel_packages (channel_id, package_id)
  SELECT _channel.id, p.id FROM insurance.packages p WHERE p.uid = ANY (_package_uids);
  PERFORM insurance.record_audit(_actor, 'channels.create', pg_catalog.jsonb_build_array(_channel.id), 'ok',
            pg_catalog.jsonb_build_object('name', _name, 'branches', _branches,
                                          'packages', coalesce(_package_uids, '{}')));
  RETURN pg_catalog.jsonb_build_object('id', _channel.id, 'name', _channel.name, 'branches', _channel.branches,
                                       'packages', (SELECT coalesce(pg_catalog.jsonb_agg(p.uid ORDER BY p.uid), '[]')
                                                      FROM insurance.packages p WHERE p.uid = ANY (_package_uids)));
END
$$;
COMMENT ON FUNCTION admin.create_channel(text, text, text[], bytea, jsonb, jsonb, text[]) IS
  'Creates a partner channel with the SHA-256 of its new API key (the key itself is never stored), its '
  'branches, IA keys, integration payload and the packages _package_uids it may sell; audited; returns '
  '{id, name, branches, packages}, or refuses CHANNEL_NAME_TAKEN / UNKNOWN_PACKAGE (nothing made). Operators.';

-- list_channels: every channel (never its key hash), oldest first.
CREATE FUNCTION admin.list_channels()
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = ''
AS $$
  SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
           'id', c.id, 'name', c.name, 'branches', c.branches,
           'packages', coalesce((SELECT pg_catalog.jsonb_agg(p.uid ORDER BY p.uid)
                                   FROM insurance.channel_packages cp JOIN insurance.packages p ON p.id = cp.package_id
                                  WHERE cp.channel_id = c.id), '[]'),
           'active', c.active, 'revoked_at', c.revoked_at, 'created_at', c.created_at) ORDER BY c.created_at, c.id), '[]')
    FROM insurance.channels c
$$;
COMMENT ON FUNCTION admin.list_channels() IS
  'Every channel with its branches and the packages it may sell (never its key hash), oldest first, as a '
  'JSON array. Operators.';

-- set_channel_branches: the gateway branches channel _id may use from now on (replaces the
-- list); a token of a branch taken away stops at once (gateway.admit reads the branches).
CREATE FUNCTION admin.set_channel_branches(_actor text, _id uuid, _branches text[])
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = ''
AS $$
DECLARE
  _before text[];
  _channel insurance.channels;
BEGIN
  SELECT c.branches INTO _before FROM insurance.channels c WHERE c.id = _id FOR UPDATE;
  IF NOT FOUND THEN
    RETURN admin._refused(_actor, 'channels.set_branches', pg_catalog.jsonb_build_array(_id), 'CHANNEL_NOT_FOUND',
                          pg_catalog.format('no channel with id %s', _id));
  END IF;
  IF coalesce(pg_catalog.cardinality(_branches), 0) = 0 THEN
    RETURN admin._refused(_actor, 'channels.set_branches', pg_catalog.jsonb_build_array(_id), 'BRANCH_REQUIRED',
                          'a channel needs at least one branch');
  END IF;
  UPDATE insurance.channels c SET branches = _branches WHERE c.id = _id RETURNING * INTO _channel;
  PERFORM insurance.record_audit(_actor, 'channels.set_branches', pg_catalog.jsonb_build_array(_id), 'ok',
            pg_catalog.jsonb_build_object('branches', _branches, 'before', _before));
  RETURN pg_catalog.jsonb_build_object('id', _channel.id, 'name', _channel.name, 'branches', _channel.branches,
                                       'active', _channel.active);
END
$$;
COMMENT ON FUNCTION admin.set_channel_branches(text, uuid, text[]) IS
  'Channel _id may use exactly gateway branches _branches from now on (its tokens of another branch stop '
  'at once); audited as channels.set_branches; returns {id, name, branches, active}, or refuses '
  'CHANNEL_NOT_FOUND / BRANCH_REQUIRED. Operators.';
REVOKE ALL ON FUNCTION admin.set_channel_branches(text, uuid, text[]) FROM PUBLIC;

-- revoke_channel: the channel's key and tokens stop working; CHANNEL_NOT_FOUND otherwise.
CREATE FUNCTION admin.revoke_channel(_actor text, _id uuid)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = ''
AS $$
DECLARE
  _channel insurance.channels;
BEGIN
  UPDATE insurance.channels c SET active = false, revoked_at = coalesce(c.revoked_at, pg_catalog.now())
   WHERE c.id = _id RETURNING * INTO _channel;
  IF NOT FOUND THEN
    RETURN admin._refused(_actor, 'channels.revoke', pg_catalog.jsonb_build_array(_id), 'CHANNEL_NOT_FOUND',
                          pg_catalog.format('no channel with id %s', _id));
  END IF;
  PERFORM insurance.record_audit(_actor, 'channels.revoke', pg_catalog.jsonb_build_array(_id));
  RETURN pg_catalog.jsonb_build_object('id', _channel.id, 'name', _channel.name, 'active', _channel.active,
                                       'revoked_at', _channel.revoked_at);
END
$$;
COMMENT ON FUNCTION admin.revoke_channel(text, uuid) IS
  'Revokes channel _id: its key and tokens stop working at once; audited; refuses CHANNEL_NOT_FOUND. '
  'Operators.';

-- rotate_channel_key: a new key hash for an active channel; CHANNEL_NOT_FOUND or CHANNEL_REVOKED.
CREATE FUNCTION admin.rotate_channel_key(_actor text, _id uuid, _api_key_hash bytea)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = ''
AS $$
DECLARE
  _channel insurance.channels;
BEGIN
  UPDATE insurance.channels c SET api_key_hash = _api_key_hash
   WHERE c.id = _id AND c.active RETURNING * INTO _channel;
  IF NOT FOUND THEN
    IF EXISTS (SELECT FROM insurance.channels c WHERE c.id = _id) THEN
      RETURN admin._refused(_actor, 'channels.rotate', pg_catalog.jsonb_build_array(_id), 'CHANNEL_REVOKED',
                            pg_catalog.format('channel %s is revoked', _id));
    END IF;
    RETURN admin._refused(_actor, 'channels.rotate', pg_catalog.jsonb_build_array(_id), 'CHANNEL_NOT_FOUND',
                          pg_catalog.format('no channel with id %s', _id));
  END IF;
  PERFORM insurance.record_audit(_actor, 'channels.rotate', pg_catalog.jsonb_build_array(_id));
  RETURN pg_catalog.jsonb_build_object('id', _channel.id, 'name', _channel.name, 'branches', _channel.branches);
END
$$;
COMMENT ON FUNCTION admin.rotate_channel_key(text, uuid, bytea) IS
  'Gives active channel _id a new key hash (a new key generation: older tokens die); audited; refuses '
  'CHANNEL_NOT_FOUND or CHANNEL_REVOKED. Operators.';

-- ---------------------------------------------------------------- dashboard users

-- create_dashboard_user: a back-office user with an argon2 hash; USER_EXISTS for a taken e-mail.
CREATE FUNCTION admin.create_dashboard_user(_actor text, _email text, _password_hash text)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = ''
AS $$
DECLARE
  _user insurance.dashboard_users;
BEGIN
  IF EXISTS (SELECT FROM insurance.dashboard_users u WHERE u.email = pg_catalog.lower(_email)) THEN
    RETURN admin._refused(_actor, 'users.create', pg_catalog.jsonb_build_array(pg_catalog.lower(_email)),
                          'USER_EXISTS', pg_catalog.format('a dashboard user with e-mail %s exists already', _email));
  END IF;
  INSERT INTO insurance.dashboard_users (email, password_hash) VALUES (pg_catalog.lower(_email), _password_hash)
  RETURNING * INTO _user;
  PERFORM insurance.record_audit(_actor, 'users.create', pg_catalog.jsonb_build_array(_user.email), 'ok',
            pg_catalog.jsonb_build_object('id', _user.id));
  RETURN pg_catalog.jsonb_build_object('id', _user.id, 'email', _user.email, 'active', _user.active,
                                       'created_at', _user.created_at);
END
$$;
COMMENT ON FUNCTION admin.create_dashboard_user(text, text, text) IS
  'Creates back-office user _email with an argon2 hash; audited; refuses USER_EXISTS. Operators.';

-- list_dashboard_users: every user with its count of live sessions (never a hash).
CREATE FUNCTION admin.list_dashboard_users()
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = ''
AS $$
  SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
           'id', u.id, 'email', u.email, 'active', u.active, 'created_at', u.created_at,
           'live_sessions', (SELECT pg_catalog.count(*) FROM insurance.dashboard_sessions s
                              WHERE s.user_id = u.id AND s.revoked_at IS NULL AND s.expires_at > pg_catalog.now()))
           ORDER BY u.id), '[]')
    FROM insurance.dashboard_users u
$$;
COMMENT ON FUNCTION admin.list_dashboard_users() IS
  'Every back-office user with its count of live sessions (never a hash), as a JSON array. Operators.';

-- ---------------------------------------------------------------- providers

-- set_integration: create or replace a provider's auth_config (the caller has checked it
-- against the adapter); the audit row names its keys, never its values.
CREATE FUNCTION admin.set_integration(_actor text, _slug text, _auth_config jsonb)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = ''
AS $$
DECLARE
  _out jsonb := integrations.set_provider_config(_slug, _auth_config);
BEGIN
  PERFORM insurance.record_audit(_actor, 'integrations.set', pg_catalog.jsonb_build_array(_out ->> 'slug'), 'ok',
            pg_catalog.jsonb_build_object('keys', (SELECT coalesce(pg_catalog.jsonb_agg(k ORDER BY k), '[]')
                                                     FROM pg_catalog.jsonb_object_keys(_auth_config) k)));
  RETURN _out;
END
$$;
COMMENT ON FUNCTION admin.set_integration(text, text, jsonb) IS
  'Creates or replaces provider _slug''s auth_config (checked against the adapter by the caller); '
  'audited without the credentials; returns {slug, updatedAt}. Operators.';

-- delete_integration: forget a provider's configuration; INTEGRATION_NOT_FOUND otherwise.
CREATE FUNCTION admin.delete_integration(_actor text, _slug text)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = ''
AS $$
BEGIN
  DELETE FROM insurance.integrations i WHERE i.slug = pg_catalog.upper(_slug);
  IF NOT FOUND THEN
    RETURN admin._refused(_actor, 'integrations.delete', pg_catalog.jsonb_build_array(pg_catalog.upper(_slug)),
                          'INTEGRATION_NOT_FOUND', pg_catalog.format('no provider configuration for %s', _slug));
  END IF;
  PERFORM insurance.record_audit(_actor, 'integrations.delete', pg_catalog.jsonb_build_array(pg_catalog.upper(_slug)));
  RETURN pg_catalog.jsonb_build_object('slug', pg_catalog.upper(_slug), 'deleted', true);
END
$$;
COMMENT ON FUNCTION admin.delete_integration(text, text) IS
  'Forgets provider _slug''s configuration; audited; refuses INTEGRATION_NOT_FOUND. Operators.';

-- list_integrations: every provider with its auth_config (the caller masks credentials).
CREATE FUNCTION admin.list_integrations()
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = ''
AS $$
  SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
           'slug', i.slug, 'auth_config', i.auth_config, 'updated_at', i.updated_at) ORDER BY i.slug), '[]')
    FROM insurance.integrations i
$$;
COMMENT ON FUNCTION admin.list_integrations() IS
  'Every provider with its auth_config (the caller masks credentials), as a JSON array. Operators.';

-- ---------------------------------------------------------------- orders

-- create_order: an order on a risk item named by uid or id; its insert trigger enqueues the
-- event's dispatch (POLICY_CREATED: the welcome mail). RISK_ITEM_NOT_FOUND otherwise.
CREATE FUNCTION admin.create_order(_actor text, _risk_item_id bigint, _risk_item_uid uuid, _event text,
                                   _data jsonb)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = ''
AS $$
DECLARE
  _item insurance.risk_items;
  _order insurance.orders;
BEGIN
  SELECT * INTO _item FROM insurance.risk_items r
   WHERE (_risk_item_id IS NULL OR r.id = _risk_item_id)
     AND (_risk_item_uid IS NULL OR r.uid = _risk_item_uid)
     AND (_risk_item_id IS NOT NULL OR _risk_item_uid IS NOT NULL);
  IF NOT FOUND THEN
    RETURN admin._refused(_actor, 'orders.create',
                          pg_catalog.jsonb_build_array(coalesce(_risk_item_uid::text, _risk_item_id::text)),
                          'RISK_ITEM_NOT_FOUND', 'no such risk item');
  END IF;
  INSERT INTO insurance.orders (risk_item_id, event, data) VALUES (_item.id, _event, coalesce(_data, '{}'))
  RETURNING * INTO _order;
  PERFORM insurance.record_audit(_actor, 'orders.create', pg_catalog.jsonb_build_array(_item.uid), 'ok',
            pg_catalog.jsonb_build_object('orderId', _order.id, 'event', _event));
  RETURN pg_catalog.jsonb_build_object('orderId', _order.id, 'riskItemId', _item.id, 'riskItemUid', _item.uid,
                                       'event', _order.event, 'createdAt', _order.created_at);
END
$$;
COMMENT ON FUNCTION admin.create_order(text, bigint, uuid, text, jsonb) IS
  'Creates an order of event _event on the risk item named by uid or id (its insert trigger enqueues '
  'the event''s dispatch); audited; refuses RISK_ITEM_NOT_FOUND. Operators.';
-- set_channel_packages(actor, channel, package_uids): the channel may sell exactly these
-- packages from now on (audited as channels.set_packages); answers {id, packages: [uid...]},
-- or refuses CHANNEL_NOT_FOUND / UNKNOWN_PACKAGE (the command line's admin.* convention).
CREATE FUNCTION admin.set_channel_packages(_actor text, _id uuid, _package_uids text[]) RETURNS jsonb
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _targets jsonb := pg_catalog.jsonb_build_array(_id);
  _unknown text;
  _result  jsonb;
BEGIN
  IF NOT EXISTS (SELECT FROM insurance.channels WHERE id = _id) THEN
    RETURN admin._refused(_actor, 'channels.set_packages', _targets, 'CHANNEL_NOT_FOUND',
                          pg_catalog.format('no channel with id %s', _id));
  END IF;
  SELECT pg_catalog.string_agg(u, ', ' ORDER BY u) INTO _unknown
    FROM unnest(_package_uids) AS u WHERE NOT EXISTS (SELECT FROM insurance.packages p WHERE p.uid = u);
  IF _unknown IS NOT NULL THEN
    RETURN admin._refused(_actor, 'channels.set_packages', _targets, 'UNKNOWN_PACKAGE',
                          pg_catalog.format('no package with uid %s', _unknown));
  END IF;
  DELETE FROM insurance.channel_packages cp
   WHERE cp.channel_id = _id
     AND cp.package_id NOT IN (SELECT p.id FROM insurance.packages p WHERE p.uid = ANY (_package_uids));
  INSERT INTO insurance.channel_packages (channel_id, package_id)
  SELECT _id, p.id FROM insurance.packages p WHERE p.uid = ANY (_package_uids)
  ON CONFLICT DO NOTHING;
  SELECT pg_catalog.jsonb_build_object('id', _id, 'packages', coalesce(pg_catalog.jsonb_agg(p.uid ORDER BY p.uid), '[]'))
    INTO _result
    FROM insurance.channel_packages cp JOIN insurance.packages p ON p.id = cp.package_id
   WHERE cp.channel_id = _id;
  PERFORM insurance.record_audit(_actor, 'channels.set_packages', _targets, 'ok',
                                 pg_catalog.jsonb_build_object('packages', _result -> 'packages'));
  RETURN _result;
END
$$;
COMMENT ON FUNCTION admin.set_channel_packages(text, uuid, text[]) IS
  'Channel _id may sell exactly packages _package_uids from now on; audited as channels.set_packages; '
  'returns {id, packages}, or refuses CHANNEL_NOT_FOUND / UNKNOWN_PACKAGE. Operators.';
REVOKE ALL ON FUNCTION admin.set_channel_packages(text, uuid, text[]) FROM PUBLIC;

COMMIT;