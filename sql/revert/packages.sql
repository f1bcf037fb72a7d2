-- Revert insurance:packages from pg
BEGIN;
DROP TABLE insurance.package_variants;
DROP TABLE insurance.packages;
COMMIT;
