-- Verify insurance:redelivery_counts on pg
SELECT channel_id, window_start, hits FROM webhooks.redelivery_counts WHERE false;
