-- Revert insurance:admin_channels from pg
-- Back to v0.9.0: no webhook endpoints command, no integrations-branch rule, list_channels without the endpoints.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

DROP FUNCTION admin.set_channel_webhooks(text, uuid, jsonb);
DROP FUNCTION admin._no_integrations_branch(text, text, jsonb);
DROP FUNCTION admin._webhooks_without_branch(text[], jsonb);

-- The change as it was at v0.9.0 (sql/deploy/admin_channels@v0.9.0.sql), restated.

-- ---------------------------------------------------------------- channels

-- create_channel: a partner channel with the hash of its new API key (the key is shown once,
-- by the caller, and never stored) and the packages it may sell, in one transaction: a name
-- in use (in any case) or an unknown package refuses the whole channel, and the refusal stays
-- in the audit log.
CREATE OR REPLACE FUNCTION admin.create_channel(_actor text, _name text, _branches text[], _api_key_hash bytea,
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
CREATE OR REPLACE FUNCTION admin.list_channels()
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
CREATE OR REPLACE FUNCTION admin.set_channel_branches(_actor text, _id uuid, _branches text[])
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
CREATE OR REPLACE FUNCTION admin.revoke_channel(_actor text, _id uuid)
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
CREATE OR REPLACE FUNCTION admin.rotate_channel_key(_actor text, _id uuid, _api_key_hash bytea)
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
-- set_channel_packages(actor, channel, package_uids): the channel may sell exactly these
-- packages from now on (audited as channels.set_packages); answers {id, packages: [uid...]},
-- or refuses CHANNEL_NOT_FOUND / UNKNOWN_PACKAGE (the command line's admin.* convention).
CREATE OR REPLACE FUNCTION admin.set_channel_packages(_actor text, _id uuid, _package_uids text[]) RETURNS jsonb
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

-- set_webhook_secret(actor, channel, salt): the channel's new secret salt (the old one kept as
-- previous_salt, rotated_at now); audited as channels.webhook_secret. {id, name, rotated} or
-- a refusal {error: CHANNEL_NOT_FOUND | CHANNEL_REVOKED, message}.
CREATE OR REPLACE FUNCTION admin.set_webhook_secret(_actor text, _id uuid, _salt bytea) RETURNS jsonb
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _channel insurance.channels;
  _rotated boolean;
BEGIN
  SELECT * INTO _channel FROM insurance.channels c WHERE c.id = _id;
  IF NOT FOUND THEN
    RETURN admin._refused(_actor, 'channels.webhook_secret', pg_catalog.jsonb_build_array(_id), 'CHANNEL_NOT_FOUND',
                          pg_catalog.format('no channel with id %s', _id));
  ELSIF NOT _channel.active THEN
    RETURN admin._refused(_actor, 'channels.webhook_secret', pg_catalog.jsonb_build_array(_id), 'CHANNEL_REVOKED',
                          pg_catalog.format('channel %s is revoked', _id));
  END IF;
  _rotated := EXISTS (SELECT FROM webhooks.secrets s WHERE s.channel_id = _id);
  INSERT INTO webhooks.secrets AS s (channel_id, salt) VALUES (_id, _salt)
  ON CONFLICT (channel_id) DO UPDATE
     SET previous_salt = s.salt, salt = excluded.salt, rotated_at = pg_catalog.now();
  PERFORM insurance.record_audit(_actor, 'channels.webhook_secret', pg_catalog.jsonb_build_array(_id), 'ok',
                                 pg_catalog.jsonb_build_object('rotated', _rotated));
  RETURN pg_catalog.jsonb_build_object('id', _channel.id, 'name', _channel.name, 'rotated', _rotated);
END
$$;
COMMENT ON FUNCTION admin.set_webhook_secret(text, uuid, bytea) IS
  'Takes the actor, a channel id and 32 random bytes; sets the channel''s webhook secret salt (the previous one signs on for the overlap) and audits channels.webhook_secret; returns {id, name, rotated} or refuses CHANNEL_NOT_FOUND / CHANNEL_REVOKED. Operators.';
REVOKE ALL ON FUNCTION admin.set_webhook_secret(text, uuid, bytea) FROM PUBLIC;


COMMIT;
