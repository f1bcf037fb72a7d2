-- Verify insurance:postsales_otp on pg
SELECT id, email, code_hash, created_at, expires_at, attempts, consumed_at, ip
  FROM insurance.postsales_otp WHERE false;
