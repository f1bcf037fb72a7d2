-- Revert insurance:admin_channels from pg
BEGIN;
SET LOCAL ROLE insurance_owner;

DROP FUNCTION admin.set_webhook_secret(text,uuid,bytea);
DROP FUNCTION admin.set_channel_packages(text,uuid,text[]);
DROP FUNCTION admin.rotate_channel_key(text,uuid,bytea);
DROP FUNCTION admin.revoke_channel(text,uuid);
DROP FUNCTION admin.set_channel_branches(text,uuid,text[]);
DROP FUNCTION admin.list_channels();
DROP FUNCTION admin.create_channel(text,text,text[],bytea,jsonb,jsonb,text[]);

COMMIT;
