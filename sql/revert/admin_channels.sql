-- Revert insurance:admin_channels from pg: back to its v1.0.0 version (set_channel_webhooks leaves
-- the pending deliveries alone), the released file run as it was (CREATE OR REPLACE).
\ir ../deploy/admin_channels@v1.0.0.sql
