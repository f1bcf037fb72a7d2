-- Verify insurance:emission_claims on pg
SELECT * FROM insurance.emission_claims WHERE false;
