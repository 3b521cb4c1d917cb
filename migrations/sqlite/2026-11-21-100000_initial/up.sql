-- apidrift initial schema (SQLite). Same tables, columns and indexes as the PostgreSQL schema;
-- uuids are TEXT (lower-case hyphenated, so text order = uuid order), timestamps are INTEGER
-- microseconds since the Unix epoch (UTC, so they sort correctly), JSON is TEXT, booleans 0/1.

CREATE TABLE workspaces (
    id             TEXT    PRIMARY KEY NOT NULL,
    name           TEXT    NOT NULL,
    plan           TEXT    NOT NULL,
    endpoint_limit INTEGER,                 -- NULL = unlimited
    check_quota    INTEGER,                 -- NULL = unlimited
    created_at     BIGINT  NOT NULL
);

CREATE TABLE check_usage (
    workspace_id TEXT   NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    month        TEXT   NOT NULL,
    used         BIGINT NOT NULL,
    PRIMARY KEY (workspace_id, month)
) WITHOUT ROWID;

CREATE TABLE tokens (
    id           TEXT   PRIMARY KEY NOT NULL,
    workspace_id TEXT   NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name         TEXT   NOT NULL,
    token_hash   TEXT   NOT NULL UNIQUE,
    hint         TEXT   NOT NULL,
    scopes       TEXT   NOT NULL,
    role         TEXT   NOT NULL,
    created_at   BIGINT NOT NULL,
    expires_at   BIGINT,
    revoked_at   BIGINT,
    last_used_at BIGINT
);
CREATE INDEX tokens_workspace_created ON tokens (workspace_id, created_at, id);

CREATE TABLE endpoints (
    id                TEXT    PRIMARY KEY NOT NULL,
    workspace_id      TEXT    NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name              TEXT    NOT NULL,
    url               TEXT    NOT NULL,
    method            TEXT    NOT NULL,
    environment       TEXT    NOT NULL,
    description       TEXT,
    tags              TEXT    NOT NULL,
    health            TEXT    NOT NULL,
    auth_type         TEXT    NOT NULL,
    sealed_auth       BLOB,
    sealed_headers    BLOB,
    sealed_request_body BLOB,
    content_type      TEXT    NOT NULL,
    diff_mode         TEXT    NOT NULL,
    timeout_ms        INTEGER NOT NULL,
    schedule          TEXT,
    ignore_paths      TEXT    NOT NULL,
    follow_redirects  BOOLEAN NOT NULL,
    response_contract TEXT,
    baseline_version  INTEGER,
    last_checked_at   BIGINT,
    response_time     INTEGER,
    breaking_count    INTEGER NOT NULL DEFAULT 0,
    warning_count     INTEGER NOT NULL DEFAULT 0,
    created_at        BIGINT  NOT NULL,
    updated_at        BIGINT  NOT NULL,
    UNIQUE (workspace_id, id)
);
CREATE INDEX endpoints_workspace_created
    ON endpoints (workspace_id, created_at DESC, id DESC);
CREATE INDEX endpoints_workspace_health_created
    ON endpoints (workspace_id, health, created_at DESC, id DESC);
CREATE INDEX endpoints_workspace_environment_created
    ON endpoints (workspace_id, environment, created_at DESC, id DESC);
CREATE INDEX endpoints_workspace_health_environment_created
    ON endpoints (workspace_id, health, environment, created_at DESC, id DESC);

CREATE TABLE baselines (
    id           TEXT    PRIMARY KEY NOT NULL,
    workspace_id TEXT    NOT NULL,
    endpoint_id  TEXT    NOT NULL,
    version      INTEGER NOT NULL,
    status       INTEGER NOT NULL,
    content_type TEXT,
    headers      TEXT    NOT NULL,
    sealed_body  BLOB    NOT NULL,
    shape        TEXT    NOT NULL,
    captured_at  BIGINT  NOT NULL,
    FOREIGN KEY (workspace_id, endpoint_id) REFERENCES endpoints (workspace_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX baselines_workspace_endpoint_version
    ON baselines (workspace_id, endpoint_id, version DESC);

CREATE TABLE checks (
    id            TEXT    PRIMARY KEY NOT NULL,
    workspace_id  TEXT    NOT NULL,
    endpoint_id   TEXT    NOT NULL,
    started_at    BIGINT  NOT NULL,
    finished_at   BIGINT  NOT NULL,
    http_status   INTEGER,
    response_time INTEGER,
    error_kind    TEXT,
    error_message TEXT,
    content_type  TEXT,
    headers       TEXT,
    sealed_body   BLOB,
    diff_id       TEXT,
    FOREIGN KEY (workspace_id, endpoint_id) REFERENCES endpoints (workspace_id, id) ON DELETE CASCADE
);
CREATE INDEX checks_workspace_endpoint_started
    ON checks (workspace_id, endpoint_id, started_at DESC, id DESC);

CREATE TABLE diffs (
    id             TEXT    PRIMARY KEY NOT NULL,
    workspace_id   TEXT    NOT NULL,
    endpoint_id    TEXT    NOT NULL,
    check_id       TEXT    NOT NULL REFERENCES checks (id) ON DELETE CASCADE,
    baseline_id    TEXT    REFERENCES baselines (id) ON DELETE SET NULL,
    created_at     BIGINT  NOT NULL,
    accepted       BOOLEAN NOT NULL DEFAULT 0,
    breaking_count INTEGER NOT NULL,
    warning_count  INTEGER NOT NULL,
    info_count     INTEGER NOT NULL,
    change_count   INTEGER NOT NULL,
    changes        TEXT    NOT NULL,
    summary        TEXT,
    FOREIGN KEY (workspace_id, endpoint_id) REFERENCES endpoints (workspace_id, id) ON DELETE CASCADE
);
CREATE INDEX diffs_workspace_created
    ON diffs (workspace_id, created_at DESC, id DESC);
CREATE INDEX diffs_workspace_endpoint_created
    ON diffs (workspace_id, endpoint_id, created_at DESC, id DESC);
-- breaking_count is part of the key so that counting breaking diffs reads the index only.
CREATE INDEX diffs_workspace_breaking_created
    ON diffs (workspace_id, created_at DESC, id DESC, breaking_count) WHERE breaking_count > 0;
CREATE INDEX diffs_check ON diffs (check_id);
CREATE INDEX diffs_baseline ON diffs (baseline_id);

-- Row counts per workspace, kept by triggers in the same transaction as the rows, so that the
-- unfiltered list totals and the plan-limit count are one primary-key read instead of a scan.
CREATE TABLE workspace_counts (
    workspace_id TEXT   PRIMARY KEY NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    endpoints    BIGINT NOT NULL DEFAULT 0,
    diffs        BIGINT NOT NULL DEFAULT 0,
    -- diffs with at least one breaking change (`?breakingOnly=true` without other filters)
    breaking_diffs BIGINT NOT NULL DEFAULT 0
) WITHOUT ROWID;

CREATE TRIGGER workspace_counts_create AFTER INSERT ON workspaces
BEGIN
    INSERT INTO workspace_counts (workspace_id) VALUES (NEW.id);
END;
CREATE TRIGGER endpoints_count_insert AFTER INSERT ON endpoints
BEGIN
    UPDATE workspace_counts SET endpoints = endpoints + 1 WHERE workspace_id = NEW.workspace_id;
END;
CREATE TRIGGER endpoints_count_delete AFTER DELETE ON endpoints
BEGIN
    UPDATE workspace_counts SET endpoints = endpoints - 1 WHERE workspace_id = OLD.workspace_id;
END;
CREATE TRIGGER diffs_count_insert AFTER INSERT ON diffs
BEGIN
    UPDATE workspace_counts
    SET diffs = diffs + 1, breaking_diffs = breaking_diffs + (NEW.breaking_count > 0)
    WHERE workspace_id = NEW.workspace_id;
END;
CREATE TRIGGER diffs_count_delete AFTER DELETE ON diffs
BEGIN
    UPDATE workspace_counts
    SET diffs = diffs - 1, breaking_diffs = breaking_diffs - (OLD.breaking_count > 0)
    WHERE workspace_id = OLD.workspace_id;
END;
