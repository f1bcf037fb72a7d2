-- Revert insurance:admin_commands from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION admin.set_channel_packages(text, uuid, text[]);
DROP FUNCTION admin.create_order(text, bigint, uuid, text, jsonb);
DROP FUNCTION admin.list_integrations();
DROP FUNCTION admin.delete_integration(text, text);
DROP FUNCTION admin.set_integration(text, text, jsonb);
DROP FUNCTION admin.list_dashboard_users();
DROP FUNCTION admin.create_dashboard_user(text, text, text);
DROP FUNCTION admin.rotate_channel_key(text, uuid, bytea);
DROP FUNCTION admin.revoke_channel(text, uuid);
DROP FUNCTION admin.list_channels();
DROP FUNCTION admin.set_channel_branches(text, uuid, text[]);
DROP FUNCTION admin.create_channel(text, text, text[], bytea, jsonb, jsonb, text[]);
DROP FUNCTION admin.list_packages();
DROP FUNCTION admin.package_json(bigint);
DROP FUNCTION admin.create_package(text, text, text, text, text, jsonb);
DROP FUNCTION admin._refused(text, text, jsonb, text, text);
DROP SCHEMA admin;

COMMIT;
