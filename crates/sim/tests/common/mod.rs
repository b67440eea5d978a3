//! Helpers shared by the integration tests that walk the repository's scenario files.
#![allow(dead_code)] // each test binary uses its own subset

use std::path::{Path, PathBuf};

/// The repository's root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Overrides that make an example too large for a test (ten million flows) a small run of the same
/// shape; none for the others. (tests/test_cli.py runs the same small version.)
pub fn test_overrides(example: &Path) -> Vec<String> {
    match example.file_name().and_then(|n| n.to_str()) {
        Some("core-10m.toml") => [
            "flows[0].count=2000",
            "flows[1].rate=\"10Mb/s\"",
            "bottleneck.rate=\"200Mb/s\"",
            "bottleneck.limit=1000",
            "bottleneck.aqm={type=\"choke\", min_th=200, max_th=600}",
        ]
        .map(String::from)
        .to_vec(),
        _ => Vec::new(),
    }
}

/// `examples/*.toml`, sorted.
pub fn examples() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root().join("examples"))
        .expect("examples/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
}
