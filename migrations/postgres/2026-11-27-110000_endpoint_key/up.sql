-- The stable key of an endpoint in a monitors file (`apidrift apply`): optional, unique in its
-- workspace, immutable once set. Same column and index as the other backend's migration.
ALTER TABLE endpoints ADD COLUMN key TEXT;
CREATE UNIQUE INDEX endpoints_workspace_key ON endpoints (workspace_id, key) WHERE key IS NOT NULL;
