//! Writes the benchmark corpus to a directory (for timing `apidrift diff` end to end):
//! `cargo run --release -p apidrift-diff --example corpus -- DIR`.

#[path = "../benches/support/corpus.rs"]
mod corpus;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1).ok_or("usage: corpus DIR")?;
    std::fs::create_dir_all(&dir)?;
    for (name, n) in [("25kb", 50u64), ("1mb", 2_500), ("10mb", 20_000)] {
        let (a, b, mutated) = corpus::users_pair(n);
        std::fs::write(format!("{dir}/{name}-a.json"), a)?;
        std::fs::write(format!("{dir}/{name}-b.json"), b)?;
        println!("{name}: {mutated} items mutated");
    }
    let (a, b) = corpus::scalars_pair();
    std::fs::write(format!("{dir}/scalars-a.json"), a)?;
    std::fs::write(format!("{dir}/scalars-b.json"), b)?;
    let (a, b) = corpus::reversed_pair();
    std::fs::write(format!("{dir}/reversed-a.json"), a)?;
    std::fs::write(format!("{dir}/reversed-b.json"), b)?;
    Ok(())
}
