//! The shared half of the storage benchmark (feature `testkit`): the data layout both adapters'
//! generators write with plain SQL, and the measured operations, run through the [`Store`]
//! trait. Each adapter's `benches/` binary fills its database and calls [`measure`].
//!
//! Layout (ids are deterministic: `{workspace:08x}-{table:04x}-7000-8000-{n:012x}`):
//! * workspace 0 is measured: [`Layout::endpoints`] endpoints (environment cycles production,
//!   staging, development; health healthy except every 10th warning / breaking / unknown) and
//!   [`Layout::diffs`] diffs, each with its check row, spread round-robin over the endpoints, one
//!   in five breaking, `created_at` 100 ms apart;
//! * workspaces 1..=[`Layout::noise_workspaces`] hold the same shape scaled by
//!   [`Layout::noise_fraction`];
//! * one extra empty, unlimited workspace takes the bulk inserts.

use crate::*;
use apidrift_model::{ChangeType, DiffChange, Severity};
use std::sync::Arc;
use std::time::{Duration, Instant};
use time::macros::datetime;

/// Table tags inside the deterministic ids.
pub const TAG_WORKSPACE: u16 = 0;
pub const TAG_ENDPOINT: u16 = 1;
pub const TAG_CHECK: u16 = 2;
pub const TAG_DIFF: u16 = 3;

/// The deterministic id of row `n` of table `tag` in workspace `ws`.
pub fn bench_id(ws: u32, tag: u16, n: u64) -> Uuid {
    let text = format!("{ws:08x}-{tag:04x}-7000-8000-{n:012x}");
    Uuid::parse_str(&text).unwrap_or_default()
}

/// The first endpoint's `created_at`; endpoint `n` is `n` seconds later, diff `n` is `n` × 100 ms
/// later.
pub fn bench_t0() -> OffsetDateTime {
    datetime!(2026-01-01 00:00:00 UTC)
}

/// The sizes of a benchmark database.
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    pub endpoints: u64,
    pub diffs: u64,
    pub noise_workspaces: u32,
    /// Noise workspaces hold this fraction of the measured workspace's rows.
    pub noise_fraction: f64,
}

impl Layout {
    /// The figures: 100,000 endpoints and 1,000,000 diffs, ten noise workspaces at 10 %.
    /// `APIDRIFT_BENCH_SCALE` (e.g. `0.1`) shrinks everything for a quick run.
    pub fn from_env() -> Layout {
        let scale = std::env::var("APIDRIFT_BENCH_SCALE")
            .ok()
            .and_then(|s| s.parse::<f64>().ok())
            .filter(|s| *s > 0.0)
            .unwrap_or(1.0);
        Layout {
            endpoints: ((100_000.0 * scale) as u64).max(20_000),
            diffs: ((1_000_000.0 * scale) as u64).max(20_000),
            noise_workspaces: 10,
            noise_fraction: 0.1,
        }
    }

    /// Rows of workspace `ws` (0 = measured, 1.. = noise): (endpoints, diffs).
    pub fn rows(&self, ws: u32) -> (u64, u64) {
        if ws == 0 {
            (self.endpoints, self.diffs)
        } else {
            let f = self.noise_fraction;
            (
                ((self.endpoints as f64) * f) as u64,
                ((self.diffs as f64) * f) as u64,
            )
        }
    }

    /// The workspace that takes the bulk inserts.
    pub fn bulk_workspace(&self) -> u32 {
        self.noise_workspaces + 1
    }
}

/// Median and 95th percentile of a measurement, in milliseconds.
#[derive(Debug, Clone, Copy)]
pub struct Stats {
    pub median_ms: f64,
    pub p95_ms: f64,
    pub runs: usize,
}

fn stats(mut samples: Vec<Duration>) -> Stats {
    samples.sort();
    let at = |q: f64| {
        let i = ((samples.len() as f64 - 1.0) * q).round() as usize;
        samples.get(i).map_or(0.0, |d| d.as_secs_f64() * 1_000.0)
    };
    Stats {
        median_ms: at(0.5),
        p95_ms: at(0.95),
        runs: samples.len(),
    }
}

/// 20 changes of mixed severity, as a check's write path records them.
pub fn twenty_changes() -> Vec<DiffChange> {
    (0..20)
        .map(|i| DiffChange {
            id: format!("{i:016x}"),
            path: format!("$.data.items[id={i}].field{i}"),
            change_type: if i % 4 == 0 {
                ChangeType::TypeChanged
            } else {
                ChangeType::Changed
            },
            severity: match i % 5 {
                0 => Severity::Breaking,
                1 | 2 => Severity::Warning,
                _ => Severity::Info,
            },
            message: format!("field{i} changed"),
            old_value: Some(serde_json::json!(i)),
            new_value: Some(serde_json::json!(format!("{i}"))),
            old_type: Some("integer".into()),
            new_type: Some("string".into()),
        })
        .collect()
}

/// Runs every measured operation `runs` times (after 3 warm-up runs) and returns one line per
/// operation. Fails when a page comes back with the wrong total (so a broken query cannot look
/// fast).
pub async fn measure(
    store: Arc<dyn Store>,
    layout: &Layout,
    runs: usize,
) -> Result<Vec<(String, Stats)>, StoreError> {
    let ws = bench_id(0, TAG_WORKSPACE, 0);
    let bulk_ws = bench_id(layout.bulk_workspace(), TAG_WORKSPACE, 0);
    let first = PageRequest {
        limit: 25,
        offset: 0,
    };
    let deep = PageRequest {
        limit: 25,
        offset: 10_000,
    };
    let one_endpoint = bench_id(0, TAG_ENDPOINT, 1);
    let since = bench_t0() + time::Duration::milliseconds((layout.diffs as i64) * 90);
    let mut out = Vec::new();

    let endpoint_cases: Vec<(&str, EndpointFilter, PageRequest)> = vec![
        (
            "GET /endpoints first page",
            EndpointFilter::default(),
            first,
        ),
        (
            "GET /endpoints ?health=breaking",
            EndpointFilter {
                health: Some(Health::Breaking),
                ..Default::default()
            },
            first,
        ),
        (
            "GET /endpoints ?environment=staging",
            EndpointFilter {
                environment: Some("staging".into()),
                ..Default::default()
            },
            first,
        ),
        (
            "GET /endpoints ?health=healthy&environment=staging",
            EndpointFilter {
                health: Some(Health::Healthy),
                environment: Some("staging".into()),
            },
            first,
        ),
        (
            "GET /endpoints offset 10000",
            EndpointFilter::default(),
            deep,
        ),
    ];
    for (name, filter, page) in endpoint_cases {
        let mut samples = Vec::new();
        for i in 0..runs + 3 {
            let start = Instant::now();
            let got = store.list_endpoints(ws, &filter, page).await?;
            let took = start.elapsed();
            if got.items.len() != 25 || got.total == 0 {
                return Err(StoreError::Database(format!("{name}: unexpected page")));
            }
            if i >= 3 {
                samples.push(took);
            }
        }
        out.push((name.to_owned(), stats(samples)));
    }

    let diff_cases: Vec<(&str, DiffFilter, PageRequest)> = vec![
        ("GET /diffs first page", DiffFilter::default(), first),
        (
            "GET /diffs ?endpointId",
            DiffFilter {
                endpoint_id: Some(one_endpoint),
                ..Default::default()
            },
            PageRequest {
                limit: 5,
                offset: 0,
            },
        ),
        (
            "GET /diffs ?since (last 10%)",
            DiffFilter {
                since: Some(since),
                ..Default::default()
            },
            first,
        ),
        (
            "GET /diffs ?breakingOnly=true",
            DiffFilter {
                breaking_only: true,
                ..Default::default()
            },
            first,
        ),
        ("GET /diffs offset 10000", DiffFilter::default(), deep),
    ];
    for (name, filter, page) in diff_cases {
        let mut samples = Vec::new();
        for i in 0..runs + 3 {
            let start = Instant::now();
            let got = store.list_diffs(ws, &filter, page).await?;
            let took = start.elapsed();
            let expected = (page.limit as usize).min(usize::try_from(got.total).unwrap_or(0));
            if got.items.len() != expected || got.total == 0 {
                return Err(StoreError::Database(format!("{name}: unexpected page")));
            }
            if i >= 3 {
                samples.push(took);
            }
        }
        out.push((name.to_owned(), stats(samples)));
    }

    let mut samples = Vec::new();
    for i in 0..runs + 3 {
        let start = Instant::now();
        let got = store.get_endpoint(ws, one_endpoint).await?;
        let latest = store.latest_diff(ws, one_endpoint).await?;
        let took = start.elapsed();
        if got.is_none() || latest.is_none() {
            return Err(StoreError::Database("GET /endpoints/{id}: missing".into()));
        }
        if i >= 3 {
            samples.push(took);
        }
    }
    out.push((
        "GET /endpoints/{id} (endpoint + latest diff)".to_owned(),
        stats(samples),
    ));

    let mut samples = Vec::new();
    for i in 0..runs + 3 {
        let rows: Vec<_> = (0..200)
            .map(|n| {
                let mut row = crate::testkit::endpoint_row(&format!("bulk {i}-{n}"), bench_t0());
                row.id = new_id();
                row
            })
            .collect();
        let start = Instant::now();
        let created = store.create_endpoints(bulk_ws, rows).await?;
        let took = start.elapsed();
        if created.created.len() != 200 {
            return Err(StoreError::Database(
                "bulk insert created fewer rows".into(),
            ));
        }
        if i >= 3 {
            samples.push(took);
        }
    }
    out.push((
        "POST /endpoints bulk insert of 200".to_owned(),
        stats(samples),
    ));

    let mut samples = Vec::new();
    let changes = twenty_changes();
    for i in 0..runs + 3 {
        let endpoint = bench_id(0, TAG_ENDPOINT, 1 + (i as u64 % 1_000));
        let now = OffsetDateTime::now_utc();
        let check = NewCheck {
            scheduled: false,
            id: new_id(),
            endpoint_id: endpoint,
            started_at: now,
            finished_at: now,
            http_status: Some(200),
            response_time: Some(42),
            error_kind: None,
            error_message: None,
            content_type: Some("application/json".into()),
            headers: None,
            sealed_body: Some(vec![7u8; 2_048]),
        };
        let id = new_id();
        // A drift of its own each time, so that every sample writes a diff.
        let diff = NewDiff {
            id,
            baseline_id: None,
            changes: changes.clone(),
            summary: None,
            created_at: now,
            fingerprint: Some(id.to_string()),
        };
        let start = Instant::now();
        store.record_check(ws, check, Some(diff)).await?;
        let took = start.elapsed();
        if i >= 3 {
            samples.push(took);
        }
    }
    out.push((
        "check write path (check + diff with 20 changes)".to_owned(),
        stats(samples),
    ));
    Ok(out)
}

/// Prints the figures as a Markdown table.
pub fn print(backend: &str, layout: &Layout, rows: &[(String, Stats)]) {
    println!(
        "\n## {backend}: {} endpoints / {} diffs in the measured workspace, {} noise workspaces\n",
        layout.endpoints, layout.diffs, layout.noise_workspaces
    );
    println!("| operation | median ms | p95 ms | runs |");
    println!("|---|---:|---:|---:|");
    for (name, s) in rows {
        println!(
            "| {name} | {:.2} | {:.2} | {} |",
            s.median_ms, s.p95_ms, s.runs
        );
    }
}

/// The SQL of the list queries, for `EXPLAIN` (`$WS`, `$EP` and `$SINCE` are placeholders the
/// adapters substitute with literals of their own type).
pub const EXPLAINED: &[(&str, &str)] = &[
    (
        "endpoints first page",
        "SELECT id FROM endpoints WHERE workspace_id = $WS ORDER BY created_at DESC, id DESC LIMIT 25",
    ),
    (
        "endpoints total",
        "SELECT count(*) FROM endpoints WHERE workspace_id = $WS",
    ),
    (
        "endpoints ?health=breaking",
        "SELECT id FROM endpoints WHERE workspace_id = $WS AND health = 'breaking' \
         ORDER BY created_at DESC, id DESC LIMIT 25",
    ),
    (
        "endpoints ?health total",
        "SELECT count(*) FROM endpoints WHERE workspace_id = $WS AND health = 'breaking'",
    ),
    (
        "endpoints ?environment=staging",
        "SELECT id FROM endpoints WHERE workspace_id = $WS AND environment = 'staging' \
         ORDER BY created_at DESC, id DESC LIMIT 25",
    ),
    (
        "endpoints offset 10000",
        "SELECT id FROM endpoints WHERE workspace_id = $WS \
         ORDER BY created_at DESC, id DESC LIMIT 25 OFFSET 10000",
    ),
    (
        "endpoints ?health&environment",
        "SELECT id FROM endpoints WHERE workspace_id = $WS AND health = 'healthy' \
         AND environment = 'staging' ORDER BY created_at DESC, id DESC LIMIT 25",
    ),
    (
        "diffs page at offset 10000 (deferred join)",
        "SELECT diffs.id, endpoints.name FROM diffs JOIN endpoints ON endpoints.id = diffs.endpoint_id \
         AND endpoints.workspace_id = diffs.workspace_id WHERE diffs.workspace_id = $WS \
         AND diffs.id IN (SELECT id FROM diffs WHERE workspace_id = $WS \
         ORDER BY created_at DESC, id DESC LIMIT 25 OFFSET 10000) \
         ORDER BY diffs.created_at DESC, diffs.id DESC",
    ),
    (
        "diffs total",
        "SELECT count(*) FROM diffs WHERE workspace_id = $WS",
    ),
    (
        "diffs ?endpointId",
        "SELECT id FROM diffs WHERE workspace_id = $WS AND endpoint_id = $EP \
         ORDER BY created_at DESC, id DESC LIMIT 25",
    ),
    (
        "diffs ?since total",
        "SELECT count(*) FROM diffs WHERE workspace_id = $WS AND created_at >= $SINCE",
    ),
    (
        "diffs ?breakingOnly",
        "SELECT id FROM diffs WHERE workspace_id = $WS AND breaking_count > 0 \
         ORDER BY created_at DESC, id DESC LIMIT 25",
    ),
    (
        "diffs ?breakingOnly total",
        "SELECT count(*) FROM diffs WHERE workspace_id = $WS AND breaking_count > 0",
    ),
];
