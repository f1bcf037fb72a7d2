-- Deploy insurance:integrations_chat_notices to pg
-- Failure notices for the operators' chat (Slack-compatible incoming-webhook JSON). They go
-- through the outbox like every other outbound call, so a chat outage delays the notice and
-- never blocks or fails an emission.
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '5min';
SET LOCAL ROLE insurance_owner;

-- chat_message: the webhook body for an emission that ended FAILED or ABANDONED, naming the
-- provider, the risk item's uid, the status, the error code, the attempt and the next retry.
CREATE FUNCTION integrations.chat_message(_provider text, _event text, _risk_item_uid uuid, _status text,
                                          _error_code text, _error_message text, _attempt integer,
                                          _max_attempts integer, _next_retry_at timestamptz) RETURNS jsonb
LANGUAGE sql STABLE SET search_path = '' AS $$
  SELECT pg_catalog.jsonb_build_object(
    'text', pg_catalog.format('%s emission %s: %s for risk item %s (%s), attempt %s of %s, %s',
                              CASE _status WHEN 'ABANDONED' THEN ':rotating_light:' ELSE ':warning:' END,
                              _status, _provider, _risk_item_uid, coalesce(_error_code, 'UNKNOWN'),
                              _attempt, _max_attempts,
                              CASE WHEN _next_retry_at IS NULL THEN 'no automatic retry'
                                   ELSE 'next retry at ' || pg_catalog.to_char(_next_retry_at AT TIME ZONE 'UTC',
                                                                               'YYYY-MM-DD"T"HH24:MI:SS"Z"') END),
    'attachments', pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
      'color', CASE _status WHEN 'ABANDONED' THEN 'danger' ELSE 'warning' END,
      'fields', pg_catalog.jsonb_build_array(
        pg_catalog.jsonb_build_object('title', 'provider', 'value', _provider, 'short', true),
        pg_catalog.jsonb_build_object('title', 'event', 'value', _event, 'short', true),
        pg_catalog.jsonb_build_object('title', 'riskItemUid', 'value', _risk_item_uid, 'short', false),
        pg_catalog.jsonb_build_object('title', 'status', 'value', _status, 'short', true),
        pg_catalog.jsonb_build_object('title', 'errorCode', 'value', _error_code, 'short', true),
        pg_catalog.jsonb_build_object('title', 'message', 'value', pg_catalog.left(_error_message, 300), 'short', false),
        pg_catalog.jsonb_build_object('title', 'attempt', 'value', _attempt, 'short', true),
        pg_catalog.jsonb_build_object('title', 'nextRetryAt', 'value', _next_retry_at, 'short', true)))))
$$;
COMMENT ON FUNCTION integrations.chat_message(text, text, uuid, text, text, text, integer, integer, timestamp with time zone) IS
  'The Slack-compatible webhook body ({text}) for an emission that ended FAILED or ABANDONED: provider,'
  ' item uid, status, error code and message (cut), attempt, next retry. Service role.';
GRANT EXECUTE ON FUNCTION integrations.chat_message(text, text, uuid, text, text, text, integer, integer, timestamptz) TO insurance_service;

COMMIT;
