-- Verify insurance:admin_channels on pg
SELECT 'admin.create_channel(text,text,text[],bytea,jsonb,jsonb,text[])'::regprocedure,
       'admin.list_channels()'::regprocedure,
       'admin.set_channel_branches(text,uuid,text[])'::regprocedure,
       'admin.revoke_channel(text,uuid)'::regprocedure,
       'admin.rotate_channel_key(text,uuid,bytea)'::regprocedure,
       'admin.set_channel_packages(text,uuid,text[])'::regprocedure,
       'admin.set_webhook_secret(text,uuid,bytea)'::regprocedure,
       'admin.set_channel_webhooks(text,uuid,jsonb)'::regprocedure,
       'admin._webhooks_without_branch(text[],jsonb)'::regprocedure,
       'admin._no_integrations_branch(text,text,jsonb)'::regprocedure;
