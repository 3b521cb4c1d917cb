-- The version of an endpoint's editable state: every edit (PATCH, pause, resume, the console
-- form, the CLI) adds 1; checks, health and figures leave it. Sent as the strong ETag and
-- compared with If-Match. Same version and column as the other backend's migration.
ALTER TABLE endpoints ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
