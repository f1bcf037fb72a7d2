-- Revert insurance:dashboard_sessions from pg: back to the version released in v1.0.0, by running its
-- deploy script as released (one transaction of its own: CREATE OR REPLACE over this version).
\ir ../deploy/dashboard_sessions@v1.0.0.sql
