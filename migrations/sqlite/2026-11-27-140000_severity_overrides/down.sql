ALTER TABLE workspaces DROP COLUMN version;
ALTER TABLE workspaces DROP COLUMN severity_overrides;
ALTER TABLE endpoints DROP COLUMN severity_overrides;
