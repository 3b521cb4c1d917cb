-- Endpoint lifecycle (pause, retries), the in-flight marker of a check or capture (the health to
-- restore and until when the run may last), and whether a check was scheduled. Same version and
-- columns as the SQLite migration.
ALTER TABLE endpoints ADD COLUMN paused boolean NOT NULL DEFAULT false;
ALTER TABLE endpoints ADD COLUMN retries integer NOT NULL DEFAULT 1;
ALTER TABLE endpoints ADD COLUMN prior_health text;
ALTER TABLE endpoints ADD COLUMN checking_until timestamptz;
ALTER TABLE checks ADD COLUMN scheduled boolean NOT NULL DEFAULT false;
CREATE INDEX endpoints_checking ON endpoints (checking_until) WHERE health = 'checking';
CREATE INDEX checks_prune ON checks (started_at) WHERE diff_id IS NULL;
CREATE INDEX outbox_events_endpoint ON outbox_events (workspace_id, endpoint_id);
