//! `cargo bench -p apidrift-diff`: the yardstick (`serde_json` parse of both documents into
//! `serde_json::Value`) and each stage of our path, on the deterministic corpus of issue 3.

use apidrift_diff::{DiffMode, Options, diff_bodies, parse};
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::time::Duration;

#[path = "support/corpus.rs"]
mod corpus;

fn pairs() -> Vec<(&'static str, String, String)> {
    let mut out = Vec::new();
    for (name, n) in [("25KB", 50u64), ("1.25MB", 2_500), ("10MB", 20_000)] {
        let (a, b, _) = corpus::users_pair(n);
        out.push((name, a, b));
    }
    let (a, b) = corpus::scalars_pair();
    out.push(("scalars20k", a, b));
    let (a, b) = corpus::reversed_pair();
    out.push(("reversed10k", a, b));
    out
}

fn bench(c: &mut Criterion) {
    let full = Options::with_mode(DiffMode::Full);
    let schema = Options::with_mode(DiffMode::Schema);
    for (name, a, b) in pairs() {
        let mut g = c.benchmark_group(name);
        g.sample_size(10)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(2));
        g.throughput(criterion::Throughput::Bytes((a.len() + b.len()) as u64));
        g.bench_function("yardstick_serde_json_parse", |bench| {
            bench.iter(|| {
                let x: serde_json::Value = serde_json::from_str(black_box(&a)).unwrap_or_default();
                let y: serde_json::Value = serde_json::from_str(black_box(&b)).unwrap_or_default();
                (x, y)
            })
        });
        let (va, vb): (serde_json::Value, serde_json::Value) = (
            serde_json::from_str(&a).unwrap_or_default(),
            serde_json::from_str(&b).unwrap_or_default(),
        );
        g.bench_function("diff_value_full", |bench| {
            bench.iter(|| diff_bodies(&va, &vb, &full))
        });
        g.bench_function("diff_value_schema", |bench| {
            bench.iter(|| diff_bodies(&va, &vb, &schema))
        });
        g.bench_function("own_parse", |bench| {
            bench.iter(|| {
                (
                    parse(black_box(&a)).map(|_| ()),
                    parse(black_box(&b)).map(|_| ()),
                )
            })
        });
        if let (Ok(ja), Ok(jb)) = (parse(&a), parse(&b)) {
            g.bench_function("diff_json_full", |bench| {
                bench.iter(|| diff_bodies(&ja, &jb, &full))
            });
            g.bench_function("diff_json_schema", |bench| {
                bench.iter(|| diff_bodies(&ja, &jb, &schema))
            });
        }
        g.bench_function("pipeline_parse_diff_print_full", |bench| {
            bench.iter(|| {
                let (Ok(ja), Ok(jb)) = (parse(&a), parse(&b)) else {
                    return 0;
                };
                diff_bodies(&ja, &jb, &full)
                    .map(|r| r.to_json().len())
                    .unwrap_or(0)
            })
        });
        g.finish();
        // The reordered pairs report only the real changes.
        if let (Ok(ja), Ok(jb)) = (parse(&a), parse(&b))
            && let Ok(r) = diff_bodies(&ja, &jb, &full)
        {
            eprintln!(
                "{name}: {} bytes + {} bytes, full-mode changes: {}",
                a.len(),
                b.len(),
                r.counts.change_count
            );
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
