//! Diesel schema of `migrations/sqlite` (uuids TEXT, timestamps BIGINT microseconds, JSON TEXT).

diesel::table! {
    workspaces (id) {
        id -> Text,
        name -> Text,
        plan -> Text,
        endpoint_limit -> Nullable<Integer>,
        check_quota -> Nullable<Integer>,
        created_at -> BigInt,
        severity_overrides -> Text,
        version -> BigInt,
    }
}

diesel::table! {
    check_usage (workspace_id, month) {
        workspace_id -> Text,
        month -> Text,
        used -> BigInt,
    }
}

diesel::table! {
    tokens (id) {
        id -> Text,
        workspace_id -> Text,
        name -> Text,
        token_hash -> Text,
        hint -> Text,
        scopes -> Text,
        role -> Text,
        created_at -> BigInt,
        expires_at -> Nullable<BigInt>,
        revoked_at -> Nullable<BigInt>,
        last_used_at -> Nullable<BigInt>,
    }
}

// The in-flight marker's columns `prior_health` and `checking_until` are left out of this
// `table!`: only raw SQL reads or writes them. The table has more than 32 columns, so the adapters
// build diesel with its `64-column-tables` feature.
diesel::table! {
    endpoints (id) {
        id -> Text,
        workspace_id -> Text,
        name -> Text,
        url -> Text,
        method -> Text,
        environment -> Text,
        description -> Nullable<Text>,
        tags -> Text,
        health -> Text,
        auth_type -> Text,
        sealed_auth -> Nullable<Binary>,
        sealed_headers -> Nullable<Binary>,
        sealed_request_body -> Nullable<Binary>,
        content_type -> Text,
        diff_mode -> Text,
        timeout_ms -> Integer,
        schedule -> Nullable<Text>,
        ignore_paths -> Text,
        follow_redirects -> Bool,
        response_contract -> Nullable<Text>,
        baseline_version -> Nullable<Integer>,
        last_checked_at -> Nullable<BigInt>,
        response_time -> Nullable<Integer>,
        breaking_count -> Integer,
        warning_count -> Integer,
        created_at -> BigInt,
        updated_at -> BigInt,
        paused -> Bool,
        retries -> Integer,
        identity_keys -> Text,
        latency -> Text,
        version -> BigInt,
        severity_overrides -> Text,
        key -> Nullable<Text>,
    }
}

diesel::table! {
    baselines (id) {
        id -> Text,
        workspace_id -> Text,
        endpoint_id -> Text,
        version -> Integer,
        status -> Integer,
        content_type -> Nullable<Text>,
        headers -> Text,
        sealed_body -> Binary,
        shape -> Text,
        captured_at -> BigInt,
        volatile_paths -> Text,
    }
}

diesel::table! {
    checks (id) {
        id -> Text,
        workspace_id -> Text,
        endpoint_id -> Text,
        started_at -> BigInt,
        finished_at -> BigInt,
        http_status -> Nullable<Integer>,
        response_time -> Nullable<Integer>,
        error_kind -> Nullable<Text>,
        error_message -> Nullable<Text>,
        content_type -> Nullable<Text>,
        headers -> Nullable<Text>,
        sealed_body -> Nullable<Binary>,
        diff_id -> Nullable<Text>,
        scheduled -> Bool,
    }
}

diesel::table! {
    diffs (id) {
        id -> Text,
        workspace_id -> Text,
        endpoint_id -> Text,
        check_id -> Text,
        baseline_id -> Nullable<Text>,
        created_at -> BigInt,
        accepted -> Bool,
        breaking_count -> Integer,
        warning_count -> Integer,
        info_count -> Integer,
        change_count -> Integer,
        changes -> Text,
        summary -> Nullable<Text>,
        fingerprint -> Nullable<Text>,
        first_seen_at -> BigInt,
        last_seen_at -> BigInt,
        seen_count -> Integer,
        closed_at -> Nullable<BigInt>,
    }
}

diesel::table! {
    workspace_counts (workspace_id) {
        workspace_id -> Text,
        endpoints -> BigInt,
        diffs -> BigInt,
        breaking_diffs -> BigInt,
    }
}

// Only the columns the endpoint reads use (`next_run_at`, read with each page of endpoints); the
// scheduler reads and writes the others with raw SQL.
diesel::table! {
    schedules (endpoint_id) {
        endpoint_id -> Text,
        workspace_id -> Text,
        next_run_at -> BigInt,
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
