-- Revert insurance:integrations_chat_notices from pg
BEGIN;
DROP FUNCTION integrations.chat_message(text, text, uuid, text, text, text, integer, integer, timestamptz);
COMMIT;
