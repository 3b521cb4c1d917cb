ALTER TABLE alert_state DROP COLUMN slow_webhook_ids;
ALTER TABLE alert_state DROP COLUMN slow_streak;
ALTER TABLE endpoints DROP COLUMN latency;
