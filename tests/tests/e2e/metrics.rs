//! `GET /metrics` end to end (issue 17, D23): the real `apidrift serve` with a loopback upstream
//! that drifts, a webhook receiver and a fast schedule. Manual checks (clean, then drift), a
//! scheduled endpoint and a delivery move the counters; the exposition is parsed with a strict
//! parser of the Prometheus text format 0.0.4 below. Also: the bearer token of `[metrics]`,
//! bounded labels (unknown paths collapse into one `route`), and the log filter syntax
//! (`apidrift=debug` shows the pipeline's debug lines).

use crate::console::Upstream;
use crate::env::{Backend, Env};
use apidrift_e2e::server::{Response, Server};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::error::Error;
use std::time::{Duration, Instant};

type TestResult = Result<(), Box<dyn Error>>;

const ALL_SCOPES: &str = "endpoints:read,endpoints:write,checks:run,baselines:write";
const METRICS_TOKEN: &str = "metrics-token-3c1d7e";
const VARS: &[(&str, &str)] = &[
    ("APIDRIFT_OUTBOUND__ALLOW_CIDRS", "127.0.0.0/8"),
    ("APIDRIFT_LIMITS__CHECKS_PER_MINUTE", "100000"),
    ("APIDRIFT_LIMITS__READS_PER_MINUTE", "100000"),
    ("APIDRIFT_LIMITS__CREATES_PER_MINUTE", "100000"),
    ("APIDRIFT_LIMITS__UNAUTHENTICATED_PER_MINUTE", "100000"),
    ("APIDRIFT_WORKER__POLL_MS", "50"),
    ("APIDRIFT_WORKER__PERIOD_OVERRIDE_MS", "300"),
    ("APIDRIFT_WORKER__FIRST_RUN_JITTER", "false"),
];

// ------------------------------------------------------------------ a strict text-format parser

/// One sample: metric name, labels, value.
#[derive(Debug, Clone)]
pub(crate) struct Sample {
    pub(crate) name: String,
    pub(crate) labels: BTreeMap<String, String>,
    pub(crate) value: f64,
}

/// One family: its `# TYPE`, `# HELP` and samples.
#[derive(Debug, Default)]
pub(crate) struct Family {
    pub(crate) kind: String,
    pub(crate) help: Option<String>,
    pub(crate) samples: Vec<Sample>,
}

fn is_metric_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn is_label_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with("__")
}

/// Parses `{a="x",b="y"}` (escapes `\\`, `\"`, `\n`); returns the labels and the rest.
fn parse_labels(text: &str) -> Result<(BTreeMap<String, String>, &str), String> {
    let mut labels = BTreeMap::new();
    let mut rest = text.strip_prefix('{').ok_or("expected {")?;
    loop {
        if let Some(after) = rest.strip_prefix('}') {
            return Ok((labels, after));
        }
        let eq = rest.find('=').ok_or("label without =")?;
        let name = &rest[..eq];
        if !is_label_name(name) {
            return Err(format!("bad label name {name:?}"));
        }
        rest = rest[eq + 1..]
            .strip_prefix('"')
            .ok_or("label value must be quoted")?;
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let end = loop {
            match chars.next() {
                Some((i, '"')) => break i,
                Some((_, '\\')) => match chars.next() {
                    Some((_, '\\')) => value.push('\\'),
                    Some((_, '"')) => value.push('"'),
                    Some((_, 'n')) => value.push('\n'),
                    other => return Err(format!("bad escape {other:?}")),
                },
                Some((_, '\n')) | None => return Err("unterminated label value".into()),
                Some((_, c)) => value.push(c),
            }
        };
        if labels.insert(name.to_owned(), value).is_some() {
            return Err(format!("label {name} repeated"));
        }
        rest = &rest[end + 1..];
        if let Some(after) = rest.strip_prefix(',') {
            rest = after;
        } else if !rest.starts_with('}') {
            return Err("expected , or } after a label".into());
        }
    }
}

fn parse_value(text: &str) -> Result<f64, String> {
    match text {
        "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        t => t
            .parse::<f64>()
            .map_err(|e| format!("bad value {t:?}: {e}")),
    }
}

/// The family a sample belongs to: histogram samples carry `_bucket`, `_sum` or `_count`.
fn family_of<'a>(name: &'a str, families: &HashMap<String, Family>) -> &'a str {
    for suffix in ["_bucket", "_sum", "_count"] {
        if let Some(base) = name.strip_suffix(suffix)
            && families.get(base).is_some_and(|f| f.kind == "histogram")
        {
            return base;
        }
    }
    name
}

/// Parses an exposition strictly: every line is a `# HELP`, a `# TYPE` or a sample; a family's
/// `# TYPE` comes once and before its samples; a family's samples are contiguous; no sample
/// repeats; histograms have cumulative buckets ending in `+Inf` equal to `_count`, and `_sum`.
pub(crate) fn parse_exposition(text: &str) -> Result<HashMap<String, Family>, String> {
    let mut families: HashMap<String, Family> = HashMap::new();
    let mut closed: Vec<String> = Vec::new();
    let mut current: Option<String> = None;
    let mut seen = std::collections::HashSet::new();
    if !text.ends_with('\n') {
        return Err("the exposition must end with a newline".into());
    }
    for (n, line) in text.lines().enumerate() {
        let err = |m: String| format!("line {}: {m}: {line:?}", n + 1);
        if line.is_empty() {
            return Err(err("empty line".into()));
        }
        if let Some(comment) = line.strip_prefix('#') {
            let mut parts = comment.trim_start().splitn(3, ' ');
            let keyword = parts.next().unwrap_or_default();
            let name = parts.next().unwrap_or_default().to_owned();
            let rest = parts.next().unwrap_or_default();
            match keyword {
                "HELP" | "TYPE" => {
                    if !is_metric_name(&name) {
                        return Err(err("bad metric name".into()));
                    }
                    if closed.contains(&name) {
                        return Err(err("family appears twice".into()));
                    }
                    if current.as_deref() != Some(name.as_str())
                        && let Some(prev) = current.replace(name.clone())
                    {
                        closed.push(prev);
                    }
                    let family = families.entry(name).or_default();
                    if keyword == "TYPE" {
                        if !family.kind.is_empty() || !family.samples.is_empty() {
                            return Err(err("TYPE repeated or after samples".into()));
                        }
                        if !["counter", "gauge", "histogram", "summary", "untyped"].contains(&rest)
                        {
                            return Err(err("unknown type".into()));
                        }
                        family.kind = rest.to_owned();
                    } else {
                        if family.help.is_some() {
                            return Err(err("HELP repeated".into()));
                        }
                        family.help = Some(rest.to_owned());
                    }
                }
                _ => {} // other comments are allowed
            }
            continue;
        }
        let name_end = line
            .find(['{', ' '])
            .ok_or_else(|| err("no value".into()))?;
        let name = &line[..name_end];
        if !is_metric_name(name) {
            return Err(err("bad metric name".into()));
        }
        let (labels, rest) = if line[name_end..].starts_with('{') {
            parse_labels(&line[name_end..]).map_err(err)?
        } else {
            (BTreeMap::new(), &line[name_end..])
        };
        let rest = rest
            .strip_prefix(' ')
            .ok_or_else(|| err("expected one space before the value".into()))?;
        let mut fields = rest.split(' ');
        let value = parse_value(fields.next().unwrap_or_default()).map_err(err)?;
        if let Some(ts) = fields.next() {
            ts.parse::<i64>().map_err(|_| err("bad timestamp".into()))?;
        }
        if fields.next().is_some() {
            return Err(err("trailing fields".into()));
        }
        let base = family_of(name, &families).to_owned();
        if current.as_deref() != Some(base.as_str()) {
            if closed.contains(&base) || families.contains_key(&base) {
                return Err(err(format!("samples of {base} are not contiguous")));
            }
            if let Some(prev) = current.replace(base.clone()) {
                closed.push(prev);
            }
        }
        if !seen.insert(format!("{name}{labels:?}")) {
            return Err(err("sample repeated".into()));
        }
        families.entry(base).or_default().samples.push(Sample {
            name: name.to_owned(),
            labels,
            value,
        });
    }
    for (name, family) in &families {
        if family.kind == "histogram" {
            check_histogram(name, family)?;
        }
        if family.kind == "counter" && family.samples.iter().any(|s| s.value < 0.0) {
            return Err(format!("{name}: a counter is negative"));
        }
    }
    Ok(families)
}

fn check_histogram(name: &str, family: &Family) -> Result<(), String> {
    let mut series: BTreeMap<String, Vec<&Sample>> = BTreeMap::new();
    for s in &family.samples {
        let mut key = s.labels.clone();
        key.remove("le");
        series.entry(format!("{key:?}")).or_default().push(s);
    }
    for (key, samples) in series {
        let buckets: Vec<&&Sample> = samples
            .iter()
            .filter(|s| s.name == format!("{name}_bucket"))
            .collect();
        let mut last = (f64::NEG_INFINITY, 0.0);
        for b in &buckets {
            let le = parse_value(b.labels.get("le").ok_or("bucket without le")?)?;
            if le <= last.0 || b.value < last.1 {
                return Err(format!("{name}{key}: buckets not increasing"));
            }
            last = (le, b.value);
        }
        if last.0 != f64::INFINITY {
            return Err(format!("{name}{key}: no +Inf bucket"));
        }
        let count = samples
            .iter()
            .find(|s| s.name == format!("{name}_count"))
            .ok_or_else(|| format!("{name}{key}: no _count"))?;
        if count.value != last.1 {
            return Err(format!("{name}{key}: +Inf bucket differs from _count"));
        }
        samples
            .iter()
            .find(|s| s.name == format!("{name}_sum"))
            .ok_or_else(|| format!("{name}{key}: no _sum"))?;
    }
    Ok(())
}

/// The value of the sample `name` with exactly these labels (0 when absent).
fn value(families: &HashMap<String, Family>, name: &str, labels: &[(&str, &str)]) -> f64 {
    let want: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    families
        .get(family_of(name, families))
        .and_then(|f| {
            f.samples
                .iter()
                .find(|s| s.name == name && s.labels == want)
        })
        .map_or(0.0, |s| s.value)
}

#[test]
fn the_parser_is_strict() {
    let good = "# HELP a_total A.\n# TYPE a_total counter\na_total{x=\"1\"} 2\n\
                # TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 3.5\nh_count 2\n";
    assert!(
        parse_exposition(good).is_ok(),
        "{:?}",
        parse_exposition(good)
    );
    for bad in [
        "a 1",                                               // no final newline
        "a{x=1} 1\n",                                        // unquoted value
        "a{x=\"1\" } 1\n",                                   // stray space
        "a  1\n",                                            // two spaces
        "# TYPE a counter\n# TYPE a counter\na 1\n",         // TYPE twice
        "# TYPE a counter\na 1\n# TYPE b gauge\nb 1\na 2\n", // not contiguous
        "a 1\na 1\n",                                        // repeated sample
        "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
        "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n", // no +Inf
        "9a 1\n",
        "a{x=\"\\q\"} 1\n",
    ] {
        assert!(parse_exposition(bad).is_err(), "accepted: {bad:?}");
    }
}

// ------------------------------------------------------------------------------------ scenario

/// A webhook receiver: reads each request whole (head and `Content-Length` body), answers 200.
struct Receiver {
    url: String,
}

impl Receiver {
    fn start() -> Result<Receiver, Box<dyn Error>> {
        use std::io::{Read as _, Write as _};
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        let url = format!("http://{}/hook", listener.local_addr()?);
        std::thread::spawn(move || {
            for mut conn in listener.incoming().flatten() {
                let mut data = Vec::new();
                let mut buf = [0u8; 4096];
                let mut need: Option<usize> = None;
                loop {
                    if let Some(total) = need
                        && data.len() >= total
                    {
                        break;
                    }
                    match conn.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => data.extend_from_slice(&buf[..n]),
                    }
                    if need.is_none()
                        && let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n")
                    {
                        let head = String::from_utf8_lossy(&data[..end]).to_ascii_lowercase();
                        let length = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        need = Some(end + 4 + length);
                    }
                }
                let _ = conn.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
                );
            }
        });
        Ok(Receiver { url })
    }
}

fn call(server: &Server, method: &str, path: &str, token: &str, body: Option<&Value>) -> Response {
    let mut req = server.request(method, path).bearer(token);
    if let Some(b) = body {
        req = req.json(b);
    }
    match req.send() {
        Ok(r) => r,
        Err(e) => panic!("{method} {path}: {e}"),
    }
}

fn scrape(server: &Server) -> Result<(String, HashMap<String, Family>), Box<dyn Error>> {
    let res = server
        .request("GET", "/metrics")
        .bearer(METRICS_TOKEN)
        .send()?;
    assert_eq!(res.status, 200, "{}", res.text());
    assert_eq!(
        res.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let text = res.text();
    let families = parse_exposition(&text).map_err(|e| format!("{e}\n{text}"))?;
    Ok((text, families))
}

#[test]
fn metrics_after_checks_schedules_and_deliveries() -> TestResult {
    let Some(env) = Env::new(Backend::Sqlite, VARS)? else {
        return Ok(());
    };
    let ws = env.cli(&["workspace", "create", "--name", "m", "--plan", "starter"])?["id"]
        .as_str()
        .ok_or("no workspace id")?
        .to_owned();
    let token = env.cli(&[
        "token",
        "create",
        "--workspace",
        &ws,
        "--scopes",
        ALL_SCOPES,
        "--role",
        "admin",
    ])?["token"]
        .as_str()
        .ok_or("no token")?
        .to_owned();
    let server = env.serve(&[
        ("APIDRIFT_METRICS__TOKEN", METRICS_TOKEN),
        ("APIDRIFT_LOG", "apidrift=debug,actix_web=warn"),
    ])?;
    let up = Upstream::start(r#"{"id":1,"name":"a"}"#)?;
    let scheduled_up = Upstream::start(r#"{"ok":true}"#)?;
    let receiver = Receiver::start()?;

    // The token of [metrics]: none or a wrong one is 401 with the usual error body.
    for req in [
        server.request("GET", "/metrics"),
        server.request("GET", "/metrics").bearer("wrong"),
        server
            .request("GET", "/metrics")
            .header("Authorization", &format!("Basic {METRICS_TOKEN}")),
    ] {
        let res = req.send()?;
        assert_eq!(res.status, 401, "{}", res.text());
        assert_eq!(res.json()["error"], "missing or invalid token");
        assert_eq!(res.header("www-authenticate"), Some("Bearer"));
    }
    let (_, before) = scrape(&server)?;

    // A webhook, an endpoint checked by hand (clean, then drift), one on a schedule.
    let res = call(
        &server,
        "POST",
        "/v1/webhooks",
        &token,
        Some(&json!({"url": receiver.url, "minSeverity": "info"})),
    );
    assert_eq!(res.status, 201, "{}", res.text());
    let res = call(
        &server,
        "POST",
        "/api/v1/endpoints",
        &token,
        Some(&json!({"name": "manual", "url": up.url})),
    );
    assert_eq!(res.status, 201, "{}", res.text());
    let id = res.json()["endpoints"][0]["id"]
        .as_str()
        .ok_or("no endpoint id")?
        .to_owned();
    let res = call(
        &server,
        "POST",
        &format!("/v1/endpoints/{id}/baseline"),
        &token,
        None,
    );
    assert_eq!(res.status, 201, "{}", res.text());
    let check = format!("/api/v1/endpoints/{id}/check");
    let res = call(&server, "POST", &check, &token, None);
    assert_eq!(res.status, 200, "{}", res.text());
    assert!(res.json()["diffId"].is_null());
    up.set(r#"{"id":"1"}"#);
    let res = call(&server, "POST", &check, &token, None);
    assert_eq!(res.status, 200, "{}", res.text());
    assert!(res.json()["diffId"].is_string());
    let res = call(
        &server,
        "POST",
        "/api/v1/endpoints",
        &token,
        Some(&json!({"name": "scheduled", "url": scheduled_up.url,
                     "schedule": {"frequency": "hourly"}})),
    );
    assert_eq!(res.status, 201, "{}", res.text());
    // Paths no route knows: counted under one label, never by their raw path.
    for path in ["/nope/123", "/nope/456", "/api/v1/zzz-unknown"] {
        assert_eq!(call(&server, "GET", path, &token, None).status, 404);
    }

    // Wait for the worker: scheduled checks and the delivery of the drift alert.
    let deadline = Instant::now() + Duration::from_secs(30);
    let (text, after) = loop {
        let (text, m) = scrape(&server)?;
        let scheduled = value(
            &m,
            "apidrift_checks_total",
            &[("trigger", "scheduled"), ("result", "clean")],
        );
        let delivered = value(&m, "apidrift_deliveries_total", &[("result", "delivered")]);
        if scheduled >= 1.0 && delivered >= 1.0 {
            break (text, m);
        }
        if Instant::now() > deadline {
            return Err(format!("the worker did not move the counters:\n{text}").into());
        }
        std::thread::sleep(Duration::from_millis(100));
    };

    // Every family of D23, with its type.
    for (name, kind) in [
        ("apidrift_http_requests_total", "counter"),
        ("apidrift_http_request_duration_seconds", "histogram"),
        ("apidrift_checks_total", "counter"),
        ("apidrift_check_duration_seconds", "histogram"),
        ("apidrift_schedule_lag_seconds", "histogram"),
        ("apidrift_outbox_pending", "gauge"),
        ("apidrift_deliveries_total", "counter"),
        ("apidrift_endpoints", "gauge"),
    ] {
        let family = after
            .get(name)
            .ok_or_else(|| format!("{name} missing:\n{text}"))?;
        assert_eq!(family.kind, kind, "{name}");
        assert!(
            family.help.as_deref().is_some_and(|h| !h.is_empty()),
            "{name} has no HELP"
        );
        assert!(!family.samples.is_empty(), "{name} has no sample");
    }

    // Counters moved by what happened.
    let moved = |name: &str, labels: &[(&str, &str)]| {
        value(&after, name, labels) - value(&before, name, labels)
    };
    assert_eq!(
        moved(
            "apidrift_checks_total",
            &[("trigger", "manual"), ("result", "clean")]
        ),
        1.0
    );
    assert_eq!(
        moved(
            "apidrift_checks_total",
            &[("trigger", "manual"), ("result", "drift")]
        ),
        1.0
    );
    assert!(moved("apidrift_check_duration_seconds_count", &[]) >= 3.0);
    assert!(moved("apidrift_schedule_lag_seconds_count", &[]) >= 2.0);
    assert!(moved("apidrift_deliveries_total", &[("result", "delivered")]) >= 1.0);
    let check_route = [
        ("route", "/api/v1/endpoints/{id}/check"),
        ("method", "POST"),
        ("status", "200"),
    ];
    assert_eq!(moved("apidrift_http_requests_total", &check_route), 2.0);
    assert!(
        moved(
            "apidrift_http_request_duration_seconds_count",
            &[("route", "/api/v1/endpoints/{id}/check")]
        ) >= 2.0
    );
    let unmatched = [
        ("route", "(unmatched)"),
        ("method", "GET"),
        ("status", "404"),
    ];
    assert_eq!(moved("apidrift_http_requests_total", &unmatched), 3.0);
    assert!(
        !text.contains("/nope/") && !text.contains("zzz-unknown") && !text.contains(&id),
        "a raw path is a label:\n{text}"
    );
    // The 401s of the unauthenticated scrapes are counted too.
    assert!(
        value(
            &after,
            "apidrift_http_requests_total",
            &[("route", "/metrics"), ("method", "GET"), ("status", "401")]
        ) >= 3.0
    );
    // Gauges read from the store: two endpoints, the drifting one `breaking`.
    let healths = ["healthy", "warning", "breaking", "unknown", "checking"];
    let total: f64 = healths
        .iter()
        .map(|h| value(&after, "apidrift_endpoints", &[("health", h)]))
        .sum();
    assert_eq!(total, 2.0, "{text}");
    assert_eq!(
        value(&after, "apidrift_endpoints", &[("health", "breaking")]),
        1.0
    );
    assert_eq!(value(&after, "apidrift_store_up", &[]), 1.0);
    // Label sets stay bounded: each label takes values from a fixed set.
    for s in &after["apidrift_http_requests_total"].samples {
        let route = &s.labels["route"];
        assert!(
            route == "(unmatched)" || route.starts_with('/'),
            "route label {route:?}"
        );
        assert!(
            [
                "GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "other"
            ]
            .contains(&s.labels["method"].as_str())
        );
    }
    // A second scrape counts the first.
    let (_, again) = scrape(&server)?;
    let scrapes = [("route", "/metrics"), ("method", "GET"), ("status", "200")];
    assert!(
        value(&again, "apidrift_http_requests_total", &scrapes)
            > value(&after, "apidrift_http_requests_total", &scrapes)
    );

    // `apidrift=debug` (the tracing directive syntax) shows the pipeline's debug lines, and
    // `actix_web=warn` keeps actix quiet; the metrics token never reaches the log.
    let logs = server.output();
    assert!(
        logs.contains("check finished") && logs.contains("result=drift"),
        "{logs}"
    );
    assert!(!logs.contains(METRICS_TOKEN));
    drop(server);

    // Without a token configured the route is open.
    let open = env.serve(&[])?;
    let res = open.request("GET", "/metrics").send()?;
    assert_eq!(res.status, 200);
    parse_exposition(&res.text())?;
    Ok(())
}
