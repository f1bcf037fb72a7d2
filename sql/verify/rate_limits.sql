-- Verify insurance:rate_limits on pg
SELECT * FROM insurance.rate_limits WHERE false;
