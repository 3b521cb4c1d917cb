//! Re-embeds the migrations when they change, and fingerprints them so test templates built from
//! an older schema are not reused (`APIDRIFT_PG_MIGRATIONS_HASH`).

use std::path::Path;

fn main() {
    let dir = Path::new("../../migrations/postgres");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files = Vec::new();
    collect(dir, &mut files);
    files.sort();
    // FNV-1a over every path and content: stable, dependency-free.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for path in files {
        let bytes = std::fs::read(&path).unwrap_or_default();
        for b in path.to_string_lossy().as_bytes().iter().chain(bytes.iter()) {
            hash ^= u64::from(*b);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    println!("cargo:rustc-env=APIDRIFT_PG_MIGRATIONS_HASH={hash:016x}");
}

fn collect(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, out);
        } else {
            out.push(path);
        }
    }
}
