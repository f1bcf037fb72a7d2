-- Verify insurance:role_timeouts on pg
DO $$
BEGIN
  ASSERT (SELECT setconfig @> ARRAY['statement_timeout=5s', 'lock_timeout=2s']
            FROM pg_db_role_setting s JOIN pg_database d ON d.oid = s.setdatabase
           WHERE d.datname = current_database() AND s.setrole = 'insurance_app'::regrole),
         'insurance_app has its statement and lock timeouts in this database';
END
$$;
