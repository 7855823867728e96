//! What the workspace's dependency tree must not hold, read from `cargo tree` (offline, from
//! Cargo.lock): aws-lc-sys's C build once dominated a clean build, so TLS goes through rustls
//! with ring (`tool-sdk/src/tls.rs`).

use std::process::Command;

/// Every package (`name vX.Y.Z`) in the tree of the whole workspace with every feature on,
/// build dependencies included.
fn packages() -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "tree",
            "--workspace",
            "--all-features",
            "--offline",
            "--prefix",
            "none",
        ])
        .args(["-e", "normal,build", "--format", "{p}"])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    let mut packages: Vec<String> = stdout.lines().map(str::to_owned).collect();
    packages.sort();
    packages.dedup();
    packages
}

#[test]
fn tls_builds_without_aws_lc() {
    let packages = packages();
    assert!(
        packages.iter().any(|p| p.starts_with("reqwest ")),
        "the tree was read: {packages:?}"
    );
    assert!(
        packages.iter().any(|p| p.starts_with("ring ")),
        "ring is the TLS provider"
    );
    let aws: Vec<&String> = packages
        .iter()
        .filter(|p| p.starts_with("aws-lc"))
        .collect();
    assert!(
        aws.is_empty(),
        "aws-lc is back in the dependency tree: {aws:?}"
    );
}
