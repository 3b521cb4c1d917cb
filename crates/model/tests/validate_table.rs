//! Table tests of D6 entry validation: invalid entries with their exact reason, valid entries with
//! their normalised form.

use apidrift_model::net::AllowList;
use apidrift_model::validate::{
    BodyError, Credential, NewEndpoint, create_entries, entry_name, validate_entry,
};
use apidrift_model::{
    Cadence, DiffMode, Frequency, HttpMethod, OverrideSeverity, SeverityOverride,
};
use serde_json::{Value, json};

/// A refused address says how a self-hosted install allows it.
const BLOCKED: &str = "url: private, loopback and link-local hosts are rejected; to allow one on a \
     self-hosted install, add its address range to APIDRIFT_OUTBOUND__ALLOW_CIDRS \
     (e.g. APIDRIFT_OUTBOUND__ALLOW_CIDRS=127.0.0.1/32) or to allow_cidrs in the [outbound] \
     section of the configuration file";
/// `.local` and `.internal` names, which no allow-list admits, point at the address instead.
const BLOCKED_NAME: &str = "url: private, loopback and link-local hosts are rejected, and .local \
     and .internal names always are; to reach such a host on a self-hosted install, use its IP \
     address and add it to APIDRIFT_OUTBOUND__ALLOW_CIDRS \
     (e.g. APIDRIFT_OUTBOUND__ALLOW_CIDRS=10.0.0.5/32) or to allow_cidrs in the [outbound] \
     section of the configuration file";
const SCHEME: &str = "url: must be an absolute http or https URL";

fn reason(entry: Value) -> String {
    match validate_entry(&entry, &AllowList::default()) {
        Ok(ok) => format!("accepted: {ok:?}"),
        Err(reason) => reason,
    }
}

fn with_url(url: &str) -> Value {
    json!({ "name": "n", "url": url })
}

fn ok(entry: Value) -> NewEndpoint {
    match validate_entry(&entry, &AllowList::default()) {
        Ok(e) => e,
        Err(reason) => panic!("{entry} refused: {reason}"),
    }
}

#[test]
fn invalid_entries_name_the_field() {
    let long_name = "x".repeat(201);
    let long_url = format!("https://example.com/{}", "a".repeat(2048));
    let cases: Vec<(Value, &str)> = vec![
        // entry
        (json!("just a string"), "entry: must be a JSON object"),
        (json!(42), "entry: must be a JSON object"),
        (json!(null), "entry: must be a JSON object"),
        (json!([]), "entry: must be a JSON object"),
        // name
        (json!({ "url": "https://example.com/" }), "name: required"),
        (
            json!({ "name": null, "url": "https://example.com/" }),
            "name: required",
        ),
        (
            json!({ "name": "", "url": "https://example.com/" }),
            "name: must not be empty",
        ),
        (
            json!({ "name": "   ", "url": "https://example.com/" }),
            "name: must not be empty",
        ),
        (
            json!({ "name": 7, "url": "https://example.com/" }),
            "name: must be a string",
        ),
        (
            json!({ "name": ["a"], "url": "https://example.com/" }),
            "name: must be a string",
        ),
        (
            json!({ "name": long_name, "url": "https://example.com/" }),
            "name: longer than 200 characters",
        ),
        (
            json!({ "name": "a\u{0007}b", "url": "https://example.com/" }),
            "name: must not contain control characters",
        ),
        // url: presence and form
        (json!({ "name": "n" }), "url: required"),
        (json!({ "name": "n", "url": 5 }), "url: must be a string"),
        (with_url(""), SCHEME),
        (with_url("/relative/path"), SCHEME),
        (with_url("example.com/users"), SCHEME),
        (with_url("file:///etc/passwd"), SCHEME),
        (with_url("gopher://127.0.0.1:6379/_"), SCHEME),
        (with_url("dict://example.com:11211/"), SCHEME),
        (with_url("ftp://example.com/"), SCHEME),
        (with_url("ldap://example.com/"), SCHEME),
        (with_url("data:,x"), SCHEME),
        (with_url("javascript:alert(1)"), SCHEME),
        (with_url("ws://example.com/"), SCHEME),
        (
            with_url("http://user:pass@example.com/"),
            "url: must not contain credentials (user:password@)",
        ),
        (
            with_url("https://token@example.com/"),
            "url: must not contain credentials (user:password@)",
        ),
        (
            with_url("http://example.com:0/"),
            "url: port 0 is not allowed",
        ),
        (
            with_url("http://example.com:65536/"),
            "url: not a valid URL (invalid port number)",
        ),
        (
            with_url("http://4294967296/"),
            "url: not a valid URL (invalid IPv4 address)",
        ),
        (
            with_url("http://[fe80::1%25eth0]/"),
            "url: not a valid URL (invalid IPv6 address)",
        ),
        (
            with_url("http://exa mple.com/"),
            "url: not a valid URL (invalid international domain name)",
        ),
        (
            json!({ "name": "n", "url": long_url }),
            "url: longer than 2048 characters",
        ),
        // url: blocked hosts (security-tests.md 1.5, judged without DNS)
        (with_url("http://127.0.0.1/"), BLOCKED),
        (with_url("http://127.255.255.254:8080/"), BLOCKED),
        (with_url("http://localhost/"), BLOCKED),
        (with_url("http://a.localhost/"), BLOCKED),
        (with_url("http://0.0.0.0/"), BLOCKED),
        (with_url("http://0/"), BLOCKED),
        (with_url("http://10.0.0.1/"), BLOCKED),
        (with_url("http://172.16.0.1/"), BLOCKED),
        (with_url("http://172.31.255.255/"), BLOCKED),
        (with_url("http://192.168.1.1/"), BLOCKED),
        (
            with_url("http://169.254.169.254/latest/meta-data/"),
            BLOCKED,
        ),
        (with_url("http://100.64.0.1/"), BLOCKED),
        (with_url("http://100.100.100.200/"), BLOCKED),
        (with_url("http://192.0.0.1/"), BLOCKED),
        (with_url("http://192.0.2.1/"), BLOCKED),
        (with_url("http://192.88.99.1/"), BLOCKED),
        (with_url("http://198.18.0.1/"), BLOCKED),
        (with_url("http://198.19.255.255/"), BLOCKED),
        (with_url("http://198.51.100.1/"), BLOCKED),
        (with_url("http://203.0.113.1/"), BLOCKED),
        (with_url("http://224.0.0.1/"), BLOCKED),
        (with_url("http://239.255.255.250/"), BLOCKED),
        (with_url("http://240.0.0.1/"), BLOCKED),
        (with_url("http://255.255.255.255/"), BLOCKED),
        (with_url("http://2130706433/"), BLOCKED),
        (with_url("http://0x7f000001/"), BLOCKED),
        (with_url("http://0177.0.0.1/"), BLOCKED),
        (with_url("http://017700000001/"), BLOCKED),
        (with_url("http://0x7f.1/"), BLOCKED),
        (with_url("http://127.1/"), BLOCKED),
        (with_url("http://%31%32%37.0.0.1/"), BLOCKED),
        (
            with_url("http://\u{ff11}\u{ff12}\u{ff17}.\u{ff10}.\u{ff10}.\u{ff11}/"),
            BLOCKED,
        ),
        (with_url("http://127.0.0.1./"), BLOCKED),
        (with_url("http://[::1]/"), BLOCKED),
        (with_url("http://[::]/"), BLOCKED),
        (with_url("http://[::ffff:127.0.0.1]/"), BLOCKED),
        (with_url("http://[::ffff:7f00:1]/"), BLOCKED),
        (with_url("http://[::ffff:169.254.169.254]/"), BLOCKED),
        (with_url("http://[::ffff:10.0.0.1]/"), BLOCKED),
        (with_url("http://[::127.0.0.1]/"), BLOCKED),
        (with_url("http://[64:ff9b::7f00:1]/"), BLOCKED),
        (with_url("http://[64:ff9b::808:808]/"), BLOCKED),
        (with_url("http://[64:ff9b:1::1]/"), BLOCKED),
        (with_url("http://[2002:7f00:1::1]/"), BLOCKED),
        (
            with_url("http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/"),
            BLOCKED,
        ),
        (with_url("http://[fd00:ec2::254]/"), BLOCKED),
        (with_url("http://[fc00::1]/"), BLOCKED),
        (with_url("http://[fe80::1]/"), BLOCKED),
        (with_url("http://[fec0::1]/"), BLOCKED),
        (with_url("http://[ff02::1]/"), BLOCKED),
        (with_url("http://[2001:db8::1]/"), BLOCKED),
        (with_url("http://[3fff::1]/"), BLOCKED),
        (with_url("http://[100::1]/"), BLOCKED),
        (with_url("http://[5f00::1]/"), BLOCKED),
        (with_url("http://example.com@127.0.0.1/"), BLOCKED),
        (with_url("http://127.0.0.1#@example.com/"), BLOCKED),
        (with_url("http://127.0.0.1?@example.com/"), BLOCKED),
        (with_url("http://metadata.google.internal/"), BLOCKED_NAME),
        (with_url("http://service.internal/"), BLOCKED_NAME),
        (with_url("http://printer.local/"), BLOCKED_NAME),
        // method
        (
            json!({ "name": "n", "url": "https://example.com/", "method": "FETCH" }),
            "method: must be one of GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "method": "" }),
            "method: must be one of GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "method": 1 }),
            "method: must be one of GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS",
        ),
        // environment, description, tags
        (
            json!({ "name": "n", "url": "https://example.com/", "environment": "" }),
            "environment: must not be empty",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "environment": 3 }),
            "environment: must be a string",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "environment": "e".repeat(101) }),
            "environment: longer than 100 characters",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "description": 3 }),
            "description: must be a string or null",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "description": "d".repeat(2001) }),
            "description: longer than 2000 characters",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "tags": "a,b" }),
            "tags: must be an array of strings",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "tags": ["ok", 2] }),
            "tags[1]: must be a string",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "tags": ["ok", ""] }),
            "tags[1]: must not be empty",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "tags": vec!["t"; 51] }),
            "tags: at most 50 tags",
        ),
        // auth
        (
            json!({ "name": "n", "url": "https://example.com/", "auth": "secret" }),
            "auth: must be an object",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "auth": {} }),
            "auth.type: required",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "auth": { "type": "kerberos" } }),
            "auth.type: must be one of none, bearer, api_key, basic, oauth, custom",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "auth": { "type": "Bearer", "token": "t" } }),
            "auth.type: must be one of none, bearer, api_key, basic, oauth, custom",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "auth": { "type": "bearer" } }),
            "auth.token: required for bearer",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "auth": { "type": "bearer", "token": "" } }),
            "auth.token: must not be empty",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "auth": { "type": "bearer", "token": 12 } }),
            "auth.token: must be a string",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "auth": { "type": "bearer", "token": "a\r\nX-Evil: 1" } }),
            "auth.token: must not contain line breaks",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "auth": { "type": "bearer", "token": "a\u{0}b" } }),
            "auth.token: must not contain a NUL character (U+0000)",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "auth": { "type": "bearer", "token": "a\u{1}b" } }),
            "auth.token: must not contain control characters (only tab is allowed)",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "auth": { "type": "custom", "header": "X-C", "value": "a\u{b}b" } }),
            "auth.value: must not contain control characters (only tab is allowed)",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "auth": { "type": "api_key", "key": "a\u{7f}b" } }),
            "auth.key: must not contain control characters (only tab is allowed)",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "auth": { "type": "basic", "username": "u", "password": "p\u{1b}" } }),
            "auth.password: must not contain control characters (only tab is allowed)",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "auth": { "type": "custom", "header": "Host", "value": "evil.example" } }),
            "auth.header: Host is set by apidrift and cannot be overridden",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "description": "a\u{0}b" }),
            "description: must not contain a NUL character (U+0000)",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "ignorePaths": ["$.a", "$.b\u{0}"] }),
            "ignorePaths[1]: must not contain a NUL character (U+0000)",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "environment": "prod\u{0}" }),
            "environment: must not contain control characters",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "auth": { "type": "oauth" } }),
            "auth.token: required for oauth",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "auth": { "type": "bearer", "key": "k" } }),
            "auth.token: required for bearer",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "auth": { "type": "api_key" } }),
            "auth.key: required for api_key",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "auth": { "type": "api_key", "key": "k", "header": "Bad Header" } }),
            "auth.header: not a valid header name",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "auth": { "type": "api_key", "key": "k", "header": "Host" } }),
            "auth.header: Host is set by apidrift and cannot be overridden",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "auth": { "type": "basic", "password": "p" } }),
            "auth.username: required for basic",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "auth": { "type": "basic", "username": "u" } }),
            "auth.password: required for basic",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "auth": { "type": "basic", "username": "a:b", "password": "p" } }),
            "auth.username: must not contain ':'",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "auth": { "type": "custom", "value": "v" } }),
            "auth.header: required for custom",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "auth": { "type": "custom", "header": "X-Sig" } }),
            "auth.value: required for custom",
        ),
        // requestBody, contentType
        (
            json!({ "name": "n", "url": "https://example.com/", "requestBody": "{}" }),
            "requestBody: not allowed for GET",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "method": "HEAD", "requestBody": "{}" }),
            "requestBody: not allowed for HEAD",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "method": "POST", "requestBody": {"a": 1} }),
            "requestBody: must be a string",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "contentType": "json" }),
            "contentType: must be a media type such as application/json",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "contentType": "text/plain\r\nX: y" }),
            "contentType: must be a media type such as application/json",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "contentType": 1 }),
            "contentType: must be a media type such as application/json",
        ),
        // diffMode
        (
            json!({ "name": "n", "url": "https://example.com/", "diffMode": "strict" }),
            "diffMode: must be one of schema, exact, full",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "diffMode": "SCHEMA" }),
            "diffMode: must be one of schema, exact, full",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "diffMode": true }),
            "diffMode: must be one of schema, exact, full",
        ),
        // timeoutMs
        (
            json!({ "name": "n", "url": "https://example.com/", "timeoutMs": 0 }),
            "timeoutMs: must be an integer from 1 to 60000",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "timeoutMs": 60001 }),
            "timeoutMs: must be an integer from 1 to 60000",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "timeoutMs": -5 }),
            "timeoutMs: must be an integer from 1 to 60000",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "timeoutMs": 1500.5 }),
            "timeoutMs: must be an integer from 1 to 60000",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "timeoutMs": "1000" }),
            "timeoutMs: must be an integer from 1 to 60000",
        ),
        // schedule
        (
            json!({ "name": "n", "url": "https://example.com/", "schedule": "DAILY" }),
            "schedule: must be an object with a frequency or intervalSeconds",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "schedule": {} }),
            "schedule.frequency: required (or intervalSeconds in its place)",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "schedule": { "frequency": "DAILY", "intervalSeconds": 300 } }),
            "schedule: give either frequency or intervalSeconds, not both",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "schedule": { "intervalSeconds": 59 } }),
            "schedule.intervalSeconds: must be an integer from 60 to 2592000 (seconds)",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "schedule": { "intervalSeconds": 2592001 } }),
            "schedule.intervalSeconds: must be an integer from 60 to 2592000 (seconds)",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "schedule": { "intervalSeconds": "300" } }),
            "schedule.intervalSeconds: must be an integer from 60 to 2592000 (seconds)",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "schedule": { "frequency": "YEARLY" } }),
            "schedule.frequency: must be one of HOURLY, DAILY, WEEKLY, MONTHLY",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "schedule": { "frequency": 1 } }),
            "schedule.frequency: must be one of HOURLY, DAILY, WEEKLY, MONTHLY",
        ),
        // extensions: identityKeys
        (
            json!({ "name": "n", "url": "https://example.com/", "identityKeys": ["$.commits=sha"] }),
            "identityKeys: must be an object of array path patterns to member names, e.g. {\"$.commits\": \"sha\"}",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "identityKeys": { "$.commits": "" } }),
            "identityKeys[\"$.commits\"]: the member name must not be empty",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "identityKeys": { "$.commits": 3 } }),
            "identityKeys[\"$.commits\"]: must be a member name (a string), e.g. \"sha\"",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "identityKeys": { "$.commits": "a.b" } }),
            "identityKeys[\"$.commits\"]: the member name must be letters, digits, _ and -, starting with a letter or _",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "identityKeys": { "$.commits": "1st" } }),
            "identityKeys[\"$.commits\"]: the member name must be letters, digits, _ and -, starting with a letter or _",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "identityKeys": { "commits": "sha" } }),
            "identityKeys[\"commits\"]: the pattern names an array in the body and starts with $ (e.g. $.commits)",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "identityKeys": { "status": "sha" } }),
            "identityKeys[\"status\"]: the pattern names an array in the body and starts with $ (e.g. $.commits)",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "identityKeys": { "$.a\u{0}": "id" } }),
            "identityKeys: a pattern must not contain a NUL character (U+0000)",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "identityKeys": { "$.commits": "k".repeat(101) } }),
            "identityKeys[\"$.commits\"]: the member name is longer than 100 characters",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "identityKeys": { format!("$.{}", "a".repeat(500)): "id" } }),
            "identityKeys: a pattern is longer than 500 characters",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "identityKeys": (0..21).map(|i| (format!("$.a{i}"), json!("id"))).collect::<serde_json::Map<_, _>>() }),
            "identityKeys: at most 20 rules",
        ),
        // severityOverrides (D26)
        (
            json!({ "name": "n", "url": "https://example.com/", "severityOverrides": {"rule": "field-added"} }),
            "severityOverrides: must be an array of {\"rule\", \"path\"?, \"severity\"} objects",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "severityOverrides": [{"rule": "field-added", "severity": "fatal"}] }),
            "severityOverrides[0].severity: must be one of info, warning, breaking, ignore",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "severityOverrides": [
                {"rule": "field-added", "severity": "info"},
                {"rule": "field-added", "path": "meta", "severity": "info"}
            ] }),
            "severityOverrides[1].path: must be a path pattern starting with $, or status, or headers.<name>",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "severityOverrides": vec![json!({"rule": "field-added", "severity": "info"}); 51] }),
            "severityOverrides: at most 50 overrides",
        ),
        // extensions: ignorePaths, headers, followRedirects
        (
            json!({ "name": "n", "url": "https://example.com/", "ignorePaths": "$.a" }),
            "ignorePaths: must be an array of path patterns",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "ignorePaths": ["meta.id"] }),
            "ignorePaths[0]: must be a path pattern starting with $, or status, or headers.<name>",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "ignorePaths": ["$.a", 3] }),
            "ignorePaths[1]: must be a path pattern starting with $, or status, or headers.<name>",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "headers": ["X-A: 1"] }),
            "headers: must be an object of header names to string values",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "headers": { "Bad Name": "v" } }),
            "headers.Bad Name: not a valid header name",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "headers": { "X-A": 1 } }),
            "headers.X-A: must be a string",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "headers": { "X-A": "a\nb" } }),
            "headers.X-A: must not contain line breaks",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "headers": { "X-C": "a\u{1}b" } }),
            "headers.X-C: must not contain control characters (only tab is allowed)",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "headers": { "X-C": "a\u{b}b" } }),
            "headers.X-C: must not contain control characters (only tab is allowed)",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "headers": { "X-C": "a\u{7f}b" } }),
            "headers.X-C: must not contain control characters (only tab is allowed)",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "headers": { "X-C": "a\u{0}b" } }),
            "headers.X-C: must not contain a NUL character (U+0000)",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "headers": { "Upgrade": "websocket" } }),
            "headers.Upgrade: Upgrade is set by apidrift and cannot be overridden",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "headers": { "Content-Length": "5" } }),
            "headers.Content-Length: Content-Length is set by apidrift and cannot be overridden",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "headers": { "X-A": "1", "x-a": "2" } }),
            "headers.x-a: given twice",
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "followRedirects": "yes" }),
            "followRedirects: must be a boolean",
        ),
    ];
    assert!(cases.len() >= 80, "only {} cases", cases.len());
    let mut failures = Vec::new();
    for (entry, want) in &cases {
        let got = reason(entry.clone());
        if got != *want {
            failures.push(format!("{entry}\n   want: {want}\n    got: {got}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn minimal_entry_gets_every_default() {
    let e = ok(json!({ "name": "Users", "url": "https://api.example.com/users" }));
    assert_eq!(e.settings.name, "Users");
    assert_eq!(e.settings.url, "https://api.example.com/users");
    assert_eq!(e.settings.method, HttpMethod::Get);
    assert_eq!(e.settings.environment, "production");
    assert_eq!(e.settings.description, None);
    assert!(e.settings.tags.is_empty());
    assert_eq!(e.credential, Credential::None);
    assert_eq!(e.request_body, None);
    assert_eq!(e.settings.content_type, "application/json");
    assert_eq!(e.settings.diff_mode, DiffMode::Schema);
    assert_eq!(e.settings.timeout_ms, 10_000);
    assert_eq!(e.settings.schedule, None);
    assert!(e.settings.ignore_paths.is_empty() && e.headers.is_empty());
    assert!(e.settings.identity_keys.is_empty());
    assert!(!e.settings.follow_redirects);
}

#[test]
fn valid_entries_are_normalised() {
    let base = || json!({ "name": "n", "url": "https://example.com/" });
    let with = |key: &str, value: Value| {
        let mut entry = base();
        entry[key] = value;
        entry
    };
    // (entry, check of the normalised form)
    type Check = Box<dyn Fn(&NewEndpoint) -> bool>;
    let cases: Vec<(Value, Check)> = vec![
        (
            json!({ "name": "  Padded  ", "url": "https://example.com/" }),
            Box::new(|e| e.settings.name == "Padded"),
        ),
        (
            json!({ "name": "n", "url": "HTTPS://API.Example.COM:443/a?b=1#frag" }),
            Box::new(|e| e.settings.url == "https://api.example.com/a?b=1"),
        ),
        (
            json!({ "name": "n", "url": "http://example.com" }),
            Box::new(|e| e.settings.url == "http://example.com/"),
        ),
        (
            json!({ "name": "n", "url": "http://example.com:8080/x" }),
            Box::new(|e| e.settings.url == "http://example.com:8080/x"),
        ),
        (
            json!({ "name": "n", "url": "http://172.32.0.1/" }),
            Box::new(|e| e.settings.url == "http://172.32.0.1/"),
        ),
        (
            json!({ "name": "n", "url": "http://100.63.255.255/" }),
            Box::new(|e| e.settings.url.starts_with("http://100.63")),
        ),
        (
            json!({ "name": "n", "url": "http://198.20.0.1/" }),
            Box::new(|e| e.settings.url == "http://198.20.0.1/"),
        ),
        (
            json!({ "name": "n", "url": "http://[2606:4700:4700::1111]/dns" }),
            Box::new(|e| e.settings.url == "http://[2606:4700:4700::1111]/dns"),
        ),
        (
            json!({ "name": "n", "url": "http://example.com\\@127.0.0.1/" }),
            Box::new(|e| e.settings.url == "http://example.com/@127.0.0.1/"),
        ),
        (
            json!({ "name": "n", "url": "https://bücher.example/" }),
            Box::new(|e| e.settings.url == "https://xn--bcher-kva.example/"),
        ),
        (
            with("method", json!("post")),
            Box::new(|e| e.settings.method == HttpMethod::Post),
        ),
        (
            with("method", json!("Delete")),
            Box::new(|e| e.settings.method == HttpMethod::Delete),
        ),
        (
            json!({ "name": "n", "url": "https://example.com/", "method": "PATCH", "requestBody": "{\"a\":1}", "contentType": "application/merge-patch+json" }),
            Box::new(|e| {
                e.request_body.as_deref() == Some("{\"a\":1}")
                    && e.settings.content_type == "application/merge-patch+json"
            }),
        ),
        (
            with("environment", json!(" staging ")),
            Box::new(|e| e.settings.environment == "staging"),
        ),
        (
            with("description", json!(null)),
            Box::new(|e| e.settings.description.is_none()),
        ),
        (
            with("description", json!("Users list")),
            Box::new(|e| e.settings.description.as_deref() == Some("Users list")),
        ),
        (
            with("tags", json!(["a", "b", "a"])),
            Box::new(|e| e.settings.tags == ["a", "b"]),
        ),
        (
            with("diffMode", json!("exact")),
            Box::new(|e| e.settings.diff_mode == DiffMode::Full),
        ),
        (
            with("diffMode", json!("full")),
            Box::new(|e| e.settings.diff_mode == DiffMode::Full),
        ),
        (
            with("diffMode", json!("schema")),
            Box::new(|e| e.settings.diff_mode == DiffMode::Schema),
        ),
        (
            with("timeoutMs", json!(1)),
            Box::new(|e| e.settings.timeout_ms == 1),
        ),
        (
            with("timeoutMs", json!(60000)),
            Box::new(|e| e.settings.timeout_ms == 60_000),
        ),
        (
            with("timeoutMs", json!(null)),
            Box::new(|e| e.settings.timeout_ms == 10_000),
        ),
        (
            with("schedule", json!({ "frequency": "hourly" })),
            Box::new(|e| e.settings.schedule == Some(Cadence::Every(Frequency::Hourly))),
        ),
        (
            with("schedule", json!({ "frequency": "MONTHLY" })),
            Box::new(|e| e.settings.schedule == Some(Cadence::Every(Frequency::Monthly))),
        ),
        (
            with("schedule", json!({ "intervalSeconds": 60 })),
            Box::new(|e| e.settings.schedule == Some(Cadence::Interval(60))),
        ),
        (
            with(
                "schedule",
                json!({ "intervalSeconds": 2_592_000, "frequency": null }),
            ),
            Box::new(|e| e.settings.schedule == Some(Cadence::Interval(2_592_000))),
        ),
        (
            with("auth", json!({ "type": "none", "token": "ignored" })),
            Box::new(|e| e.credential == Credential::None),
        ),
        (
            with(
                "auth",
                json!({ "type": "bearer", "token": "t0k", "key": "ignored" }),
            ),
            Box::new(
                |e| matches!(&e.credential, Credential::Bearer { token } if token.expose() == "t0k"),
            ),
        ),
        (
            with("auth", json!({ "type": "oauth", "token": "o" })),
            Box::new(|e| matches!(&e.credential, Credential::Oauth { .. })),
        ),
        (
            with("auth", json!({ "type": "api_key", "key": "k" })),
            Box::new(
                |e| matches!(&e.credential, Credential::ApiKey { header, key } if header == "X-API-Key" && key.expose() == "k"),
            ),
        ),
        (
            with(
                "auth",
                json!({ "type": "api_key", "key": "k", "header": "X-Token" }),
            ),
            Box::new(
                |e| matches!(&e.credential, Credential::ApiKey { header, .. } if header == "X-Token"),
            ),
        ),
        (
            with(
                "auth",
                json!({ "type": "basic", "username": "u", "password": "p" }),
            ),
            Box::new(
                |e| matches!(&e.credential, Credential::Basic { username, password } if username.expose() == "u" && password.expose() == "p"),
            ),
        ),
        (
            with(
                "auth",
                json!({ "type": "custom", "header": "X-Sig", "value": "v" }),
            ),
            Box::new(
                |e| matches!(&e.credential, Credential::Custom { header, value } if header == "X-Sig" && value.expose() == "v"),
            ),
        ),
        (
            with(
                "ignorePaths",
                json!([
                    "$.meta.requestId",
                    "$.items[].updatedAt",
                    "$..traceId",
                    "status",
                    "headers.etag"
                ]),
            ),
            Box::new(|e| e.settings.ignore_paths.len() == 5),
        ),
        (
            with(
                "identityKeys",
                json!({ "$.commits": "sha", "$..pulls": "number", "$.orgs[id=1].repos": "full_name", "$": "_id" }),
            ),
            Box::new(|e| {
                e.settings.identity_keys.len() == 4
                    && e.settings
                        .identity_keys
                        .get("$.commits")
                        .map(String::as_str)
                        == Some("sha")
                    && e.settings.identity_keys.get("$").map(String::as_str) == Some("_id")
            }),
        ),
        (
            with("identityKeys", json!({})),
            Box::new(|e| e.settings.identity_keys.is_empty()),
        ),
        (
            with("identityKeys", json!(null)),
            Box::new(|e| e.settings.identity_keys.is_empty()),
        ),
        (
            with(
                "headers",
                json!({ "Accept-Language": "en", "X-Tenant": "t1" }),
            ),
            Box::new(|e| e.headers.len() == 2 && e.headers[0].name == "Accept-Language"),
        ),
        (
            with("followRedirects", json!(true)),
            Box::new(|e| e.settings.follow_redirects),
        ),
        (
            with("unknownField", json!({ "anything": 1 })),
            Box::new(|e| e.settings.name == "n"),
        ),
    ];
    assert!(cases.len() >= 20);
    for (entry, check) in &cases {
        let e = ok(entry.clone());
        assert!(check(&e), "{entry} normalised unexpectedly: {e:?}");
    }
}

#[test]
fn allow_list_is_an_input() {
    let entry = json!({ "name": "local", "url": "http://127.0.0.1:8080/health" });
    assert_eq!(reason(entry.clone()), BLOCKED);
    let allow = AllowList::parse("127.0.0.0/8").unwrap_or_default();
    let e = validate_entry(&entry, &allow);
    assert_eq!(
        e.map(|e| e.settings.url).ok().as_deref(),
        Some("http://127.0.0.1:8080/health")
    );
    let named = json!({ "name": "local", "url": "http://localhost:3000/" });
    assert!(validate_entry(&named, &allow).is_ok());
    let internal = json!({ "name": "x", "url": "http://api.internal/" });
    assert_eq!(
        validate_entry(&internal, &allow).err().as_deref(),
        Some(BLOCKED_NAME)
    );
}

#[test]
fn credentials_never_print() {
    let e = ok(json!({ "name": "n", "url": "https://example.com/",
        "auth": { "type": "basic", "username": "canary-user", "password": "canary-pass" },
        "headers": { "X-Secret": "canary-header" } }));
    let printed = format!("{e:?}");
    for canary in ["canary-user", "canary-pass", "canary-header"] {
        assert!(!printed.contains(canary), "{printed}");
    }
}

#[test]
fn body_forms() {
    let one = json!({ "name": "a", "url": "https://example.com/" });
    assert_eq!(create_entries(&one).map(<[Value]>::len), Ok(1));
    let bare = json!([one, one]);
    assert_eq!(create_entries(&bare).map(<[Value]>::len), Ok(2));
    let wrapped = json!({ "endpoints": [one, one, one] });
    assert_eq!(create_entries(&wrapped).map(<[Value]>::len), Ok(3));
    assert_eq!(create_entries(&json!([])), Err(BodyError::Empty));
    assert_eq!(
        create_entries(&json!({ "endpoints": [] })),
        Err(BodyError::Empty)
    );
    assert_eq!(
        create_entries(&json!({ "endpoints": 3 })),
        Err(BodyError::Shape)
    );
    assert_eq!(create_entries(&json!("x")), Err(BodyError::Shape));
    assert_eq!(create_entries(&json!(12)), Err(BodyError::Shape));
    assert_eq!(create_entries(&json!(null)), Err(BodyError::Shape));
    let many = Value::Array(vec![one.clone(); 201]);
    assert_eq!(create_entries(&many), Err(BodyError::TooMany(201)));
    let max = Value::Array(vec![one.clone(); 200]);
    assert_eq!(create_entries(&max).map(<[Value]>::len), Ok(200));
    assert_eq!(
        BodyError::TooMany(201).to_string(),
        "at most 200 endpoints per request, got 201"
    );
    assert_eq!(entry_name(&json!({ "name": 5 })), "");
    assert_eq!(entry_name(&json!({ "name": "x" })), "x");
}

#[test]
fn severity_overrides_name_every_rule_when_one_is_unknown() {
    let unknown = reason(json!({ "name": "n", "url": "https://example.com/",
        "severityOverrides": [{"rule": "added", "severity": "breaking"}] }));
    assert!(
        unknown.starts_with("severityOverrides[0].rule: unknown rule \"added\"; the rules are "),
        "{unknown}"
    );
    for rule in SeverityOverride::RULE_IDS {
        assert!(unknown.contains(rule), "{rule} named in {unknown}");
    }
    let valid = ok(
        json!({ "name": "n", "url": "https://example.com/", "severityOverrides": [
        {"rule": "field-added", "path": "$.debug", "severity": "ignore"},
        {"rule": "field-added", "severity": "breaking"}
    ] }),
    );
    assert_eq!(
        valid.settings.severity_overrides,
        vec![
            SeverityOverride::new("field-added", OverrideSeverity::Ignore).at("$.debug"),
            SeverityOverride::new("field-added", OverrideSeverity::Breaking),
        ]
    );
    let none = ok(json!({ "name": "n", "url": "https://example.com/", "severityOverrides": null }));
    assert!(none.settings.severity_overrides.is_empty());
}
