DROP INDEX diffs_open;
ALTER TABLE diffs DROP COLUMN closed_at;
ALTER TABLE diffs DROP COLUMN seen_count;
ALTER TABLE diffs DROP COLUMN last_seen_at;
ALTER TABLE diffs DROP COLUMN first_seen_at;
ALTER TABLE diffs DROP COLUMN fingerprint;
