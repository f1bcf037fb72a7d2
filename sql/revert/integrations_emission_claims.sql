-- Revert insurance:integrations_emission_claims from pg: back to its v1.1.0 version, the released
-- script run as it was (CREATE OR REPLACE of the same functions: nothing to drop first).
\ir ../deploy/integrations_emission_claims@v1.1.0.sql
