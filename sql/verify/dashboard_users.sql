-- Verify insurance:dashboard_users on pg
SELECT id, email, password_hash, active, created_at FROM insurance.dashboard_users WHERE false;
SELECT token_hash, user_id, created_at, expires_at, revoked_at, ip, user_agent
  FROM insurance.dashboard_sessions WHERE false;
SELECT 'insurance.dashboard_sessions_user_id_idx'::regclass,
       'insurance.dashboard_login_failures_window_ends_idx'::regclass;
