-- Revert insurance:integrations_dispatch from pg: back to its v1.0.0 version (the released file,
-- included once its triggers and functions are dropped by the released revert).
\ir ../revert/integrations_dispatch@v0.9.0.sql
\ir ../deploy/integrations_dispatch@v0.9.0.sql
