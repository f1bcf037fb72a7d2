-- Revert insurance:webhooks_events from pg: back to its v1.0.0 version (webhook-ids drawn at
-- random), the frozen deploy included as it is (CREATE OR REPLACE: the reworked version is in place).
\ir ../deploy/webhooks_events@v1.0.0.sql
