DROP INDEX outbox_events_endpoint;
DROP INDEX checks_prune;
DROP INDEX endpoints_checking;
ALTER TABLE checks DROP COLUMN scheduled;
ALTER TABLE endpoints DROP COLUMN checking_until;
ALTER TABLE endpoints DROP COLUMN prior_health;
ALTER TABLE endpoints DROP COLUMN retries;
ALTER TABLE endpoints DROP COLUMN paused;
