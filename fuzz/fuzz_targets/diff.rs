//! Fuzzes the parser, the engine (both modes, both tree types), shapes, ignore patterns and the
//! D16 JSON output: nothing may panic, a document diffed with itself is empty, counts match.
//! Run: `RUSTC_BOOTSTRAP=1 cargo fuzz run diff` from the repository root.
#![no_main]

use apidrift_diff::{
    DiffMode, IgnorePattern, Input, Options, diff, diff_bodies, diff_shape, parse,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    let at = (usize::from(split) * rest.len()) / 256;
    let (a, b) = rest.split_at(at);
    let (a, b) = (String::from_utf8_lossy(a), String::from_utf8_lossy(b));
    let _ = IgnorePattern::parse(&a);
    let _ = apidrift_diff::read_document(&b);
    let (Ok(x), Ok(y)) = (parse(&a), parse(&b)) else {
        return;
    };
    for mode in [DiffMode::Full, DiffMode::Schema] {
        let options = Options::with_mode(mode);
        let Ok(report) = diff_bodies(&x, &y, &options) else {
            return;
        };
        assert_eq!(report.counts.change_count as usize, report.changes.len());
        // The D16 output is valid JSON (numbers are written as the input spelled them, so an
        // out-of-f64-range token like `1e400` stays as it is: parse it with our own parser).
        let text = report.to_json();
        let out = parse(&text).map(|j| j.to_value());
        assert!(out.is_ok(), "invalid output: {text}");
        let count = out.ok().and_then(|v| v["changeCount"].as_u64());
        assert_eq!(count, Some(report.changes.len() as u64));
        assert_eq!(
            diff_bodies(&x, &x, &options).map(|r| r.changes.len()),
            Ok(0)
        );
        let (vx, vy) = (x.to_value(), y.to_value());
        let _ = diff_bodies(&vx, &vy, &options);
        assert_eq!(
            diff_bodies(&vx, &vx, &options).map(|r| r.changes.len()),
            Ok(0)
        );
    }
    let old = Input::bare(x);
    if let Ok(shape) = old.to_shape() {
        let _ = diff_shape(&shape, &Input::bare(y), &Options::default());
        let _ = diff(&old, &old, &Options::default());
    }
});
