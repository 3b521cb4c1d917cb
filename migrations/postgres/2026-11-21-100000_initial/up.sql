-- apidrift initial schema (PostgreSQL). Every table of workspace data carries workspace_id and
-- every list index starts with it; child rows reference (workspace_id, endpoint_id) so a row can
-- never point at another workspace's endpoint.

CREATE TABLE workspaces (
    id             uuid        PRIMARY KEY,
    name           text        NOT NULL,
    plan           text        NOT NULL,
    endpoint_limit integer,                -- NULL = unlimited
    check_quota    integer,                -- NULL = unlimited
    created_at     timestamptz NOT NULL
);

-- Monthly check usage: one row per workspace and calendar month (UTC), month = 'YYYY-MM'.
CREATE TABLE check_usage (
    workspace_id uuid   NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    month        text   NOT NULL,
    used         bigint NOT NULL,
    PRIMARY KEY (workspace_id, month)
);

CREATE TABLE tokens (
    id           uuid        PRIMARY KEY,
    workspace_id uuid        NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name         text        NOT NULL,
    token_hash   text        NOT NULL UNIQUE,  -- hex SHA-256 of the token text
    hint         text        NOT NULL,
    scopes       text        NOT NULL,         -- comma separated wire spellings
    role         text        NOT NULL,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz,
    revoked_at   timestamptz,
    last_used_at timestamptz
);
CREATE INDEX tokens_workspace_created ON tokens (workspace_id, created_at, id);

CREATE TABLE endpoints (
    id                uuid        PRIMARY KEY,
    workspace_id      uuid        NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    name              text        NOT NULL,
    url               text        NOT NULL,
    method            text        NOT NULL,
    environment       text        NOT NULL,
    description       text,
    tags              jsonb       NOT NULL,
    health            text        NOT NULL,
    auth_type         text        NOT NULL,
    sealed_auth       bytea,                   -- apidrift-seal blob, never clear text
    sealed_headers    bytea,                   -- apidrift-seal blob, never clear text
    sealed_request_body bytea,                 -- apidrift-seal blob
    content_type      text        NOT NULL,
    diff_mode         text        NOT NULL,
    timeout_ms        integer     NOT NULL,
    schedule          text,                    -- HOURLY, DAILY, WEEKLY, MONTHLY or NULL
    ignore_paths      jsonb       NOT NULL,
    follow_redirects  boolean     NOT NULL,
    response_contract jsonb,                   -- NULL = no contract in force
    baseline_version  integer,
    last_checked_at   timestamptz,
    response_time     integer,
    breaking_count    integer     NOT NULL DEFAULT 0,
    warning_count     integer     NOT NULL DEFAULT 0,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
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
    id           uuid        PRIMARY KEY,
    workspace_id uuid        NOT NULL,
    endpoint_id  uuid        NOT NULL,
    version      integer     NOT NULL,
    status       integer     NOT NULL,
    content_type text,
    headers      jsonb       NOT NULL,
    sealed_body  bytea       NOT NULL,         -- apidrift-seal blob
    shape        jsonb       NOT NULL,
    captured_at  timestamptz NOT NULL,
    FOREIGN KEY (workspace_id, endpoint_id) REFERENCES endpoints (workspace_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX baselines_workspace_endpoint_version
    ON baselines (workspace_id, endpoint_id, version DESC);

CREATE TABLE checks (
    id            uuid        PRIMARY KEY,
    workspace_id  uuid        NOT NULL,
    endpoint_id   uuid        NOT NULL,
    started_at    timestamptz NOT NULL,
    finished_at   timestamptz NOT NULL,
    http_status   integer,
    response_time integer,
    error_kind    text,
    error_message text,
    content_type  text,
    headers       jsonb,
    sealed_body   bytea,                       -- apidrift-seal blob, kept for D12 promotion
    diff_id       uuid,                        -- the diff this check recorded, if any
    FOREIGN KEY (workspace_id, endpoint_id) REFERENCES endpoints (workspace_id, id) ON DELETE CASCADE
);
CREATE INDEX checks_workspace_endpoint_started
    ON checks (workspace_id, endpoint_id, started_at DESC, id DESC);

CREATE TABLE diffs (
    id             uuid        PRIMARY KEY,
    workspace_id   uuid        NOT NULL,
    endpoint_id    uuid        NOT NULL,
    check_id       uuid        NOT NULL REFERENCES checks (id) ON DELETE CASCADE,
    baseline_id    uuid        REFERENCES baselines (id) ON DELETE SET NULL,
    created_at     timestamptz NOT NULL,
    accepted       boolean     NOT NULL DEFAULT false,
    breaking_count integer     NOT NULL,
    warning_count  integer     NOT NULL,
    info_count     integer     NOT NULL,
    change_count   integer     NOT NULL,
    changes        jsonb       NOT NULL,       -- JSON array of DiffChange (wire form)
    summary        jsonb,
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

-- Row counts per workspace, kept by statement-level triggers in the same transaction as the
-- rows, so that the unfiltered list totals and the plan-limit count are one primary-key read
-- instead of a scan.
CREATE TABLE workspace_counts (
    workspace_id uuid   PRIMARY KEY REFERENCES workspaces (id) ON DELETE CASCADE,
    endpoints    bigint NOT NULL DEFAULT 0,
    diffs        bigint NOT NULL DEFAULT 0,
    -- diffs with at least one breaking change (`?breakingOnly=true` without other filters)
    breaking_diffs bigint NOT NULL DEFAULT 0
);

CREATE FUNCTION apidrift_workspace_counts_create() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO workspace_counts (workspace_id) SELECT id FROM new_rows;
    RETURN NULL;
END
$$;
CREATE TRIGGER workspace_counts_create AFTER INSERT ON workspaces
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION apidrift_workspace_counts_create();

CREATE FUNCTION apidrift_count_endpoints() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE workspace_counts c SET endpoints = c.endpoints + n.rows
        FROM (SELECT workspace_id, count(*) AS rows FROM new_rows GROUP BY workspace_id) n
        WHERE c.workspace_id = n.workspace_id;
    ELSE
        UPDATE workspace_counts c SET endpoints = c.endpoints - o.rows
        FROM (SELECT workspace_id, count(*) AS rows FROM old_rows GROUP BY workspace_id) o
        WHERE c.workspace_id = o.workspace_id;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER endpoints_count_insert AFTER INSERT ON endpoints
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION apidrift_count_endpoints();
CREATE TRIGGER endpoints_count_delete AFTER DELETE ON endpoints
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION apidrift_count_endpoints();

CREATE FUNCTION apidrift_count_diffs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE workspace_counts c
        SET diffs = c.diffs + n.rows, breaking_diffs = c.breaking_diffs + n.breaking
        FROM (SELECT workspace_id, count(*) AS rows,
                     count(*) FILTER (WHERE breaking_count > 0) AS breaking
              FROM new_rows GROUP BY workspace_id) n
        WHERE c.workspace_id = n.workspace_id;
    ELSE
        UPDATE workspace_counts c
        SET diffs = c.diffs - o.rows, breaking_diffs = c.breaking_diffs - o.breaking
        FROM (SELECT workspace_id, count(*) AS rows,
                     count(*) FILTER (WHERE breaking_count > 0) AS breaking
              FROM old_rows GROUP BY workspace_id) o
        WHERE c.workspace_id = o.workspace_id;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER diffs_count_insert AFTER INSERT ON diffs
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION apidrift_count_diffs();
CREATE TRIGGER diffs_count_delete AFTER DELETE ON diffs
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION apidrift_count_diffs();
