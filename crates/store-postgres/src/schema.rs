//! Diesel schema of `migrations/postgres` (native uuid, timestamptz, jsonb, bytea).

diesel::table! {
    workspaces (id) {
        id -> Uuid,
        name -> Text,
        plan -> Text,
        endpoint_limit -> Nullable<Int4>,
        check_quota -> Nullable<Int4>,
        created_at -> Timestamptz,
        severity_overrides -> Jsonb,
        version -> BigInt,
    }
}

diesel::table! {
    check_usage (workspace_id, month, shard) {
        workspace_id -> Uuid,
        month -> Text,
        shard -> Int2,
        used -> Int8,
    }
}

diesel::table! {
    tokens (id) {
        id -> Uuid,
        workspace_id -> Uuid,
        name -> Text,
        token_hash -> Text,
        hint -> Text,
        scopes -> Text,
        role -> Text,
        created_at -> Timestamptz,
        expires_at -> Nullable<Timestamptz>,
        revoked_at -> Nullable<Timestamptz>,
        last_used_at -> Nullable<Timestamptz>,
    }
}

// The in-flight marker's columns `prior_health` and `checking_until` are left out of this
// `table!`: only raw SQL reads or writes them. The table has more than 32 columns, so the adapters
// build diesel with its `64-column-tables` feature.
diesel::table! {
    endpoints (id) {
        id -> Uuid,
        workspace_id -> Uuid,
        name -> Text,
        url -> Text,
        method -> Text,
        environment -> Text,
        description -> Nullable<Text>,
        tags -> Jsonb,
        health -> Text,
        auth_type -> Text,
        sealed_auth -> Nullable<Bytea>,
        sealed_headers -> Nullable<Bytea>,
        sealed_request_body -> Nullable<Bytea>,
        content_type -> Text,
        diff_mode -> Text,
        timeout_ms -> Int4,
        schedule -> Nullable<Text>,
        ignore_paths -> Jsonb,
        follow_redirects -> Bool,
        response_contract -> Nullable<Jsonb>,
        baseline_version -> Nullable<Int4>,
        last_checked_at -> Nullable<Timestamptz>,
        response_time -> Nullable<Int4>,
        breaking_count -> Int4,
        warning_count -> Int4,
        created_at -> Timestamptz,
        updated_at -> Timestamptz,
        paused -> Bool,
        retries -> Integer,
        identity_keys -> Jsonb,
        latency -> Jsonb,
        version -> BigInt,
        severity_overrides -> Jsonb,
        key -> Nullable<Text>,
    }
}

diesel::table! {
    baselines (id) {
        id -> Uuid,
        workspace_id -> Uuid,
        endpoint_id -> Uuid,
        version -> Int4,
        status -> Int4,
        content_type -> Nullable<Text>,
        headers -> Jsonb,
        sealed_body -> Bytea,
        shape -> Jsonb,
        captured_at -> Timestamptz,
        volatile_paths -> Jsonb,
    }
}

diesel::table! {
    checks (id) {
        id -> Uuid,
        workspace_id -> Uuid,
        endpoint_id -> Uuid,
        started_at -> Timestamptz,
        finished_at -> Timestamptz,
        http_status -> Nullable<Int4>,
        response_time -> Nullable<Int4>,
        error_kind -> Nullable<Text>,
        error_message -> Nullable<Text>,
        content_type -> Nullable<Text>,
        headers -> Nullable<Jsonb>,
        sealed_body -> Nullable<Bytea>,
        diff_id -> Nullable<Uuid>,
        scheduled -> Bool,
    }
}

diesel::table! {
    diffs (id) {
        id -> Uuid,
        workspace_id -> Uuid,
        endpoint_id -> Uuid,
        check_id -> Uuid,
        baseline_id -> Nullable<Uuid>,
        created_at -> Timestamptz,
        accepted -> Bool,
        breaking_count -> Int4,
        warning_count -> Int4,
        info_count -> Int4,
        change_count -> Int4,
        changes -> Jsonb,
        summary -> Nullable<Jsonb>,
        fingerprint -> Nullable<Text>,
        first_seen_at -> Timestamptz,
        last_seen_at -> Timestamptz,
        seen_count -> Int4,
        closed_at -> Nullable<Timestamptz>,
    }
}

diesel::table! {
    workspace_counts (workspace_id) {
        workspace_id -> Uuid,
        endpoints -> Int8,
        diffs -> Int8,
        breaking_diffs -> Int8,
    }
}

// Only the columns the endpoint reads use (`next_run_at`, read with each page of endpoints); the
// scheduler reads and writes the others with raw SQL.
diesel::table! {
    schedules (endpoint_id) {
        endpoint_id -> Uuid,
        workspace_id -> Uuid,
        next_run_at -> Timestamptz,
    }
}

diesel::allow_tables_to_appear_in_same_query!(
    workspaces,
    workspace_counts,
    check_usage,
    tokens,
    endpoints,
    baselines,
    checks,
    diffs,
);
