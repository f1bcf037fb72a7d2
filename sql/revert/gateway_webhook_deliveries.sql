-- Revert insurance:gateway_webhook_deliveries from pg: back to its v1.0.0 version (redeliveries
-- to any endpoint of the original delivery), the released file run as it was (CREATE OR REPLACE).
\ir ../deploy/gateway_webhook_deliveries@v1.0.0.sql
