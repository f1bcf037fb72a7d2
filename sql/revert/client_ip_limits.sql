-- Revert insurance:client_ip_limits from pg
BEGIN;
SET LOCAL ROLE insurance_owner;
DROP FUNCTION insurance._take_ip_slot(text, inet, integer), insurance._refund_ip_slot(text, inet);
DROP TABLE insurance.client_ip_limits;
COMMIT;
