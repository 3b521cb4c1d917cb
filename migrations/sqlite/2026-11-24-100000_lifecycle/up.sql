-- Endpoint lifecycle (pause, retries), the in-flight marker of a check or capture (the health to
-- restore and until when the run may last), and whether a check was scheduled. Same version and
-- columns as the PostgreSQL migration.
ALTER TABLE endpoints ADD COLUMN paused BOOLEAN NOT NULL DEFAULT 0;
ALTER TABLE endpoints ADD COLUMN retries INTEGER NOT NULL DEFAULT 1;
ALTER TABLE endpoints ADD COLUMN prior_health TEXT;
ALTER TABLE endpoints ADD COLUMN checking_until BIGINT;
ALTER TABLE checks ADD COLUMN scheduled BOOLEAN NOT NULL DEFAULT 0;
CREATE INDEX endpoints_checking ON endpoints (checking_until) WHERE health = 'checking';
CREATE INDEX checks_prune ON checks (started_at) WHERE diff_id IS NULL;
CREATE INDEX outbox_events_endpoint ON outbox_events (workspace_id, endpoint_id);
