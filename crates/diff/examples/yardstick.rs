//! The yardstick of issue 3 as a process: parse two files into `serde_json::Value`.
//! `cargo run --release -p apidrift-diff --example yardstick -- A B`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (a, b) = (
        args.next().ok_or("usage: yardstick A B")?,
        args.next().ok_or("usage: yardstick A B")?,
    );
    let (ta, tb) = (std::fs::read_to_string(a)?, std::fs::read_to_string(b)?);
    let x: serde_json::Value = serde_json::from_str(&ta)?;
    let y: serde_json::Value = serde_json::from_str(&tb)?;
    println!(
        "{}",
        usize::from(x.is_object()) + usize::from(y.is_object())
    );
    Ok(())
}
