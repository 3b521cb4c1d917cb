-- An endpoint's latency threshold (D26): `maxResponseTimeMs` (absent: off) and `slowAfter`, one
-- JSON object in one column (the endpoints table stays within diesel's 32 columns), and the
-- latency episode of its alert state: the slow checks in a row and, while a `latency.slow` is in
-- force, the channels told (comma-separated ids; NULL: no episode). Uptime is read from the
-- checks through checks_workspace_endpoint_started (workspace_id, endpoint_id, started_at).
-- Same version and columns as the PostgreSQL migration.
ALTER TABLE endpoints ADD COLUMN latency TEXT NOT NULL DEFAULT '{"slowAfter":3}';
ALTER TABLE alert_state ADD COLUMN slow_streak INTEGER NOT NULL DEFAULT 0;
ALTER TABLE alert_state ADD COLUMN slow_webhook_ids TEXT;
