-- Deploy insurance:admin_channels to pg
-- Command line: partner channels: create, list, branches, revoke, rotate the API key, the packages a channel sells, its webhook endpoints and secret (audited)
-- Reworked after v0.9.0: set_channel_webhooks; list_channels shows each channel's
-- webhooks; a channel has webhooks only with an integrations/* branch (create_channel,
-- set_channel_webhooks and set_channel_branches refuse WEBHOOKS_NEED_INTEGRATIONS_BRANCH).
-- Reworked after v1.0.0: set_channel_webhooks ends the pending deliveries to an
-- endpoint it removes (or that no longer takes their event type): dead with the reason, audited
-- as webhooks.endpoint_removed, counted in its answer (endedDeliveries).
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- ---------------------------------------------------------------- channels

-- _webhooks_without_branch(branches, webhooks): whether a channel of these branches would have
-- webhook endpoints but no integrations/* branch, where a partner lists and redelivers them.
CREATE OR REPLACE FUNCTION admin._webhooks_without_branch(_branches text[], _webhooks jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE SET search_path = '' AS $$
  SELECT pg_catalog.jsonb_typeof(_webhooks) = 'array' AND pg_catalog.jsonb_array_length(_webhooks) > 0
     AND NOT EXISTS (SELECT FROM pg_catalog.unnest(_branches) AS b WHERE b LIKE 'integrations/%')
$$;
COMMENT ON FUNCTION admin._webhooks_without_branch(text[], jsonb) IS
  'Takes a channel''s branches and its webhooks; true when there are endpoints and no integrations/* branch. Private helper of the channel commands.';
REVOKE ALL ON FUNCTION admin._webhooks_without_branch(text[], jsonb) FROM PUBLIC;

-- The refusal's message: what is wrong, and what to do.
CREATE OR REPLACE FUNCTION admin._no_integrations_branch(_actor text, _action text, _targets jsonb) RETURNS jsonb
LANGUAGE sql SET search_path = '' AS $$
  SELECT admin._refused(_actor, _action, _targets, 'WEBHOOKS_NEED_INTEGRATIONS_BRANCH',
    'webhooks need an integrations/* branch (integrations/v1 or integrations/v2), where the partner lists and '
    'redelivers its deliveries: give the channel one (channels branches, or --branch at creation) or no webhooks')
$$;
COMMENT ON FUNCTION admin._no_integrations_branch(text, text, jsonb) IS
  'Takes the actor, the action and its targets; audits and returns the WEBHOOKS_NEED_INTEGRATIONS_BRANCH refusal. Private helper of the channel commands.';
REVOKE ALL ON FUNCTION admin._no_integrations_branch(text, text, jsonb) FROM PUBLIC;

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
  IF admin._webhooks_without_branch(_branches, _integration_payload -> 'webhooks') THEN
    RETURN admin._no_integrations_branch(_actor, 'channels.create', _targets);
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
  '{id, name, branches, packages}, or refuses CHANNEL_NAME_TAKEN / UNKNOWN_PACKAGE / '
  'WEBHOOKS_NEED_INTEGRATIONS_BRANCH (nothing made). Operators.';

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
           'webhooks', CASE WHEN pg_catalog.jsonb_typeof(c.integration_payload -> 'webhooks') = 'array'
                            THEN c.integration_payload -> 'webhooks' ELSE '[]' END,
           'active', c.active, 'revoked_at', c.revoked_at, 'created_at', c.created_at) ORDER BY c.created_at, c.id), '[]')
    FROM insurance.channels c
$$;
COMMENT ON FUNCTION admin.list_channels() IS
  'Every channel with its branches, the packages it may sell and its webhook endpoints (never its key hash '
  'nor its secret), oldest first, as a JSON array. Operators.';

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
  IF admin._webhooks_without_branch(_branches, (SELECT c.integration_payload -> 'webhooks' FROM insurance.channels c
                                                 WHERE c.id = _id)) THEN
    RETURN admin._no_integrations_branch(_actor, 'channels.set_branches', pg_catalog.jsonb_build_array(_id));
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
  'CHANNEL_NOT_FOUND / BRANCH_REQUIRED / WEBHOOKS_NEED_INTEGRATIONS_BRANCH (its webhooks would lose their '
  'integrations branch). Operators.';
REVOKE ALL ON FUNCTION admin.set_channel_branches(text, uuid, text[]) FROM PUBLIC;

-- set_channel_webhooks(actor, channel, webhooks): the channel's webhook endpoints from now on
-- (the IntegrationPayload's `webhooks`, replaced whole; checked and normalised by the command
-- line, app/webhooks.py check_endpoints, with the network at hand), audited as
-- channels.webhooks with the endpoints before. The pending deliveries to an endpoint no longer
-- there (or no longer taking their event type) end dead with the reason ENDPOINT_REMOVED
-- (outbox._end_removed_endpoints, audited as webhooks.endpoint_removed).
-- {id, name, branches, webhooks, needsSecret, endedDeliveries}
-- (needsSecret: endpoints and no signing secret yet: the caller sets one in the same
-- transaction, admin.set_webhook_secret), or refuses CHANNEL_NOT_FOUND, CHANNEL_REVOKED,
-- WEBHOOKS_INVALID (not an array) or WEBHOOKS_NEED_INTEGRATIONS_BRANCH.
CREATE OR REPLACE FUNCTION admin.set_channel_webhooks(_actor text, _id uuid, _webhooks jsonb) RETURNS jsonb
LANGUAGE plpgsql SET search_path = '' AS $$
DECLARE
  _channel insurance.channels;
  _ended bigint[];
  _targets jsonb := pg_catalog.jsonb_build_array(_id);
BEGIN
  SELECT * INTO _channel FROM insurance.channels c WHERE c.id = _id FOR UPDATE;
  IF NOT FOUND THEN
    RETURN admin._refused(_actor, 'channels.webhooks', _targets, 'CHANNEL_NOT_FOUND',
                          pg_catalog.format('no channel with id %s', _id));
  ELSIF NOT _channel.active THEN
    RETURN admin._refused(_actor, 'channels.webhooks', _targets, 'CHANNEL_REVOKED',
                          pg_catalog.format('channel %s is revoked', _id));
  ELSIF pg_catalog.jsonb_typeof(_webhooks) IS DISTINCT FROM 'array' THEN
    RETURN admin._refused(_actor, 'channels.webhooks', _targets, 'WEBHOOKS_INVALID', 'webhooks is a JSON array');
  ELSIF admin._webhooks_without_branch(_channel.branches, _webhooks) THEN
    RETURN admin._no_integrations_branch(_actor, 'channels.webhooks', _targets);
  END IF;
  UPDATE insurance.channels c
     SET integration_payload = c.integration_payload || pg_catalog.jsonb_build_object('webhooks', _webhooks)
   WHERE c.id = _id;
  PERFORM insurance.record_audit(_actor, 'channels.webhooks', _targets, 'ok',
            pg_catalog.jsonb_build_object('webhooks', _webhooks,
                                          'before', coalesce(_channel.integration_payload -> 'webhooks', '[]')));
  -- A removed endpoint never receives another event: its pending rows end now, visibly.
  _ended := outbox._end_removed_endpoints(_actor, _id, NULL);
  RETURN pg_catalog.jsonb_build_object(
    'id', _channel.id, 'name', _channel.name, 'branches', _channel.branches, 'webhooks', _webhooks,
    'needsSecret', pg_catalog.jsonb_array_length(_webhooks) > 0
                   AND NOT EXISTS (SELECT FROM webhooks.secrets s WHERE s.channel_id = _id),
    'endedDeliveries', pg_catalog.cardinality(_ended));
END
$$;
COMMENT ON FUNCTION admin.set_channel_webhooks(text, uuid, jsonb) IS
  'Takes the actor, a channel id and its webhook endpoints (a JSON array, checked by the command line); replaces '
  'them, audited as channels.webhooks, and ends the pending deliveries to an endpoint no longer there (dead, '
  'ENDPOINT_REMOVED, audited as webhooks.endpoint_removed); returns {id, name, branches, webhooks, needsSecret, '
  'endedDeliveries} or refuses '
  'CHANNEL_NOT_FOUND / CHANNEL_REVOKED / WEBHOOKS_INVALID / WEBHOOKS_NEED_INTEGRATIONS_BRANCH. Operators.';
REVOKE ALL ON FUNCTION admin.set_channel_webhooks(text, uuid, jsonb) FROM PUBLIC;

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
