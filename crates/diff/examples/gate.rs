//! The `apidrift diff` data path without the rest of the binary (for measuring): reads two files,
//! parses them (snapshot or bare body), diffs them and prints the D16 JSON.
//! `cargo run --release -p apidrift-diff --example gate -- A B [full|schema]`.

use apidrift_diff::{DiffMode, Options, diff, read_document};
use std::io::Write;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (a, b) = (
        args.next().ok_or("usage: gate A B [mode]")?,
        args.next().ok_or("usage: gate A B [mode]")?,
    );
    let mode = match args.next().as_deref() {
        Some("schema") => DiffMode::Schema,
        _ => DiffMode::Full,
    };
    let timing = std::env::var_os("GATE_TIMING").is_some();
    let t0 = std::time::Instant::now();
    let (ta, tb) = (std::fs::read_to_string(a)?, std::fs::read_to_string(b)?);
    let t1 = std::time::Instant::now();
    let (x, y) = (read_document(&ta)?, read_document(&tb)?);
    let t2 = std::time::Instant::now();
    let report = diff(&x, &y, &Options::with_mode(mode))?;
    let t3 = std::time::Instant::now();
    let mut out = std::io::stdout().lock();
    out.write_all(report.to_json().as_bytes())?;
    out.write_all(b"\n")?;
    if timing {
        let ms = |a: std::time::Instant, b: std::time::Instant| (b - a).as_secs_f64() * 1000.0;
        eprintln!(
            "read {:.1} ms, parse {:.1} ms, diff {:.1} ms, print {:.1} ms",
            ms(t0, t1),
            ms(t1, t2),
            ms(t2, t3),
            ms(t3, std::time::Instant::now())
        );
    }
    std::mem::forget(x);
    std::mem::forget(y);
    Ok(())
}
