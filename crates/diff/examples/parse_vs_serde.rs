//! Our parser against serde_json on the same two texts, in one process (for `bench/diff.sh`):
//! `cargo run --release -p apidrift-diff --example parse_vs_serde -- A B [ROUNDS]`.
//!
//! Each round parses both files with [`apidrift_diff::parse`] and with
//! `serde_json::from_str::<Value>`, alternating which goes first; only the parsing is timed (the
//! trees are dropped outside the clock). Prints the fastest and the median milliseconds of each and
//! their ratios (on a busy machine the fastest round is the one least disturbed).

use std::time::{Duration, Instant};

/// The fastest and the median time, in milliseconds.
fn summary(mut times: Vec<Duration>) -> (f64, f64) {
    times.sort();
    let ms = |d: Option<&Duration>| d.map_or(0.0, |d| d.as_secs_f64() * 1000.0);
    (ms(times.first()), ms(times.get(times.len() / 2)))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: parse_vs_serde A B [ROUNDS]";
    let (a, b) = (args.next().ok_or(usage)?, args.next().ok_or(usage)?);
    let rounds: usize = args.next().map_or(Ok(9), |r| r.parse())?;
    let (ta, tb) = (std::fs::read_to_string(a)?, std::fs::read_to_string(b)?);
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for round in 0..rounds.max(1) {
        for turn in 0..2 {
            if (round + turn) % 2 == 0 {
                let t = Instant::now();
                let x = apidrift_diff::parse(&ta)?;
                let y = apidrift_diff::parse(&tb)?;
                ours.push(t.elapsed());
                drop((x, y));
            } else {
                let t = Instant::now();
                let x: serde_json::Value = serde_json::from_str(&ta)?;
                let y: serde_json::Value = serde_json::from_str(&tb)?;
                theirs.push(t.elapsed());
                drop((x, y));
            }
        }
    }
    let ((our_min, our_median), (their_min, their_median)) = (summary(ours), summary(theirs));
    let ratio = |a: f64, b: f64| a / b.max(f64::MIN_POSITIVE);
    println!(
        "parse both in one process, {rounds} rounds: apidrift fastest {our_min:.1} ms, median \
         {our_median:.1} ms; serde_json fastest {their_min:.1} ms, median {their_median:.1} ms; \
         ratio fastest {:.2}, median {:.2}",
        ratio(our_min, their_min),
        ratio(our_median, their_median)
    );
    Ok(())
}
