-- Severity overrides (`severityOverrides`): a JSON list of {"rule", "path"?, "severity"} per
-- endpoint, and the workspace's default list, tried after the endpoint's. The workspace gains
-- the version of its settings (sent as the strong ETag, compared with If-Match). Same columns as
-- the other backend's migration.
ALTER TABLE endpoints ADD COLUMN severity_overrides JSONB NOT NULL DEFAULT '[]'::jsonb;
ALTER TABLE workspaces ADD COLUMN severity_overrides JSONB NOT NULL DEFAULT '[]'::jsonb;
ALTER TABLE workspaces ADD COLUMN version BIGINT NOT NULL DEFAULT 1;
