-- Revert insurance:outbox_requests from pg: back to its v1.1.0 version, the released script run
-- as it was (CREATE OR REPLACE of the same functions, whose settings it restores: nothing to drop first).
\ir ../deploy/outbox_requests@v1.1.0.sql
