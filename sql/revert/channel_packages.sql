-- Revert insurance:channel_packages from pg
BEGIN;
SET LOCAL ROLE insurance_owner;
DROP TRIGGER risk_items_channel_lane ON insurance.risk_items;
DROP FUNCTION insurance._check_channel_item(), insurance.system_metadata_keys();
DROP TABLE insurance.channel_packages;
COMMIT;
