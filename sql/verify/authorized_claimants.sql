-- Verify insurance:authorized_claimants on pg
SELECT email, risk_item_id, created_at FROM insurance.authorized_claimants WHERE false;
