-- Revert insurance:dashboard_search from pg: back to its v1.0.0 version, the released script
-- run as it was (CREATE OR REPLACE of the same functions: nothing to drop first).
\ir ../deploy/dashboard_search@v1.0.0.sql
