-- Alerts (D11), schedules (D17, D18): webhooks, the per-endpoint alert state, the durable outbox
-- with its deliveries and every attempt, and the schedule rows workers claim with leases.

CREATE TABLE webhooks (
    id            uuid        PRIMARY KEY,
    workspace_id  uuid        NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    url           text        NOT NULL,
    min_severity  text        NOT NULL,
    sealed_secret bytea       NOT NULL,        -- apidrift-seal blob (Field::WebhookSecret)
    created_at    timestamptz NOT NULL
);
CREATE INDEX webhooks_workspace_created ON webhooks (workspace_id, created_at, id);

-- What the last alert of an endpoint was: the fingerprint of the drift in force (NULL when the
-- endpoint is back to baseline) and the channels that were told about it (comma-separated ids).
CREATE TABLE alert_state (
    endpoint_id  uuid        PRIMARY KEY,
    workspace_id uuid        NOT NULL,
    fingerprint  text,
    webhook_ids  text        NOT NULL DEFAULT '',
    updated_at   timestamptz NOT NULL,
    FOREIGN KEY (workspace_id, endpoint_id) REFERENCES endpoints (workspace_id, id) ON DELETE CASCADE
);

CREATE TABLE outbox_events (
    id           uuid        PRIMARY KEY,
    workspace_id uuid        NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
    endpoint_id  uuid        NOT NULL,
    kind         text        NOT NULL,         -- drift.detected | drift.resolved
    payload      text        NOT NULL,         -- the exact JSON body that is signed and sent
    created_at   timestamptz NOT NULL
);

CREATE TABLE deliveries (
    id              uuid        PRIMARY KEY,
    workspace_id    uuid        NOT NULL,
    event_id        uuid        NOT NULL REFERENCES outbox_events (id) ON DELETE CASCADE,
    webhook_id      uuid        NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    state           text        NOT NULL,      -- pending | delivered | failed
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL,
    lease_until     timestamptz,
    lease_owner     text,
    last_error      text,
    created_at      timestamptz NOT NULL,
    finished_at     timestamptz
);
CREATE INDEX deliveries_due ON deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX deliveries_event ON deliveries (event_id);
CREATE INDEX deliveries_webhook ON deliveries (webhook_id);

CREATE TABLE delivery_attempts (
    id           uuid        PRIMARY KEY,
    delivery_id  uuid        NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
    attempt      integer     NOT NULL,
    attempted_at timestamptz NOT NULL,
    http_status  integer,
    error        text,
    duration_ms  integer     NOT NULL
);
CREATE INDEX delivery_attempts_delivery ON delivery_attempts (delivery_id, attempt);

CREATE TABLE schedules (
    endpoint_id  uuid        PRIMARY KEY,
    workspace_id uuid        NOT NULL,
    frequency    text        NOT NULL,
    next_run_at  timestamptz NOT NULL,
    lease_until  timestamptz,
    lease_owner  text,
    last_run_at  timestamptz,
    last_outcome text,
    runs         bigint      NOT NULL DEFAULT 0,
    skipped      bigint      NOT NULL DEFAULT 0,
    FOREIGN KEY (workspace_id, endpoint_id) REFERENCES endpoints (workspace_id, id) ON DELETE CASCADE
);
CREATE INDEX schedules_due ON schedules (next_run_at);
