-- Deploy insurance:chat_notifications to pg
-- requires: outbox_functions
-- Failure notices for the operators' chat (Slack-compatible incoming-webhook JSON). They go
-- through the outbox like every other outbound call, so a chat outage delays the notice and
-- never blocks or fails an emission.
BEGIN;
SET LOCAL ROLE insurance_owner;

-- chat_message: the webhook body for an emission that ended FAILED or ABANDONED, naming the
-- provider, the risk item's uid, the status, the error code, the attempt and the next retry.
CREATE FUNCTION integrations.chat_message(provider text, event text, risk_item_uid uuid, status text,
                                          error_code text, error_message text, attempt integer,
                                          max_attempts integer, next_retry_at timestamptz) RETURNS jsonb
LANGUAGE sql STABLE SET search_path = '' AS $$
  SELECT pg_catalog.jsonb_build_object(
    'text', pg_catalog.format('%s emission %s: %s for risk item %s (%s), attempt %s of %s, %s',
                              CASE status WHEN 'ABANDONED' THEN ':rotating_light:' ELSE ':warning:' END,
                              status, provider, risk_item_uid, coalesce(error_code, 'UNKNOWN'),
                              attempt, max_attempts,
                              CASE WHEN next_retry_at IS NULL THEN 'no automatic retry'
                                   ELSE 'next retry at ' || pg_catalog.to_char(next_retry_at AT TIME ZONE 'UTC',
                                                                               'YYYY-MM-DD"T"HH24:MI:SS"Z"') END),
    'attachments', pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
      'color', CASE status WHEN 'ABANDONED' THEN 'danger' ELSE 'warning' END,
      'fields', pg_catalog.jsonb_build_array(
        pg_catalog.jsonb_build_object('title', 'provider', 'value', provider, 'short', true),
        pg_catalog.jsonb_build_object('title', 'event', 'value', event, 'short', true),
        pg_catalog.jsonb_build_object('title', 'riskItemUid', 'value', risk_item_uid, 'short', false),
        pg_catalog.jsonb_build_object('title', 'status', 'value', status, 'short', true),
        pg_catalog.jsonb_build_object('title', 'errorCode', 'value', error_code, 'short', true),
        pg_catalog.jsonb_build_object('title', 'message', 'value', pg_catalog.left(error_message, 300), 'short', false),
        pg_catalog.jsonb_build_object('title', 'attempt', 'value', attempt, 'short', true),
        pg_catalog.jsonb_build_object('title', 'nextRetryAt', 'value', next_retry_at, 'short', true)))))
$$;
GRANT EXECUTE ON FUNCTION integrations.chat_message(text, text, uuid, text, text, text, integer, integer, timestamptz)
   TO insurance_service;

COMMIT;
