-- One open drift per fingerprint: a check with the fingerprint of its endpoint's open diff (not
-- accepted, not closed) is linked to that diff (checks.diff_id) instead of writing a new one;
-- the diff counts it. A clean check or a different drift closes the open diff (closed_at).
-- Diffs written before keep no fingerprint (they join nothing), were seen once, at creation.
-- Same columns as the other backend's migration.
ALTER TABLE diffs ADD COLUMN fingerprint text;
ALTER TABLE diffs ADD COLUMN first_seen_at timestamptz;
ALTER TABLE diffs ADD COLUMN last_seen_at timestamptz;
ALTER TABLE diffs ADD COLUMN seen_count integer NOT NULL DEFAULT 1;
ALTER TABLE diffs ADD COLUMN closed_at timestamptz;
UPDATE diffs SET first_seen_at = created_at, last_seen_at = created_at, seen_count = 1;
ALTER TABLE diffs ALTER COLUMN first_seen_at SET NOT NULL;
ALTER TABLE diffs ALTER COLUMN last_seen_at SET NOT NULL;
CREATE INDEX diffs_open ON diffs (workspace_id, endpoint_id, created_at DESC, id DESC)
    WHERE NOT accepted AND closed_at IS NULL;
