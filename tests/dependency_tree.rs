//! What the workspace's dependency tree must not hold, read from `cargo tree` (offline, from
//! Cargo.lock): aws-lc-sys's C build once dominated a clean build, so TLS goes through rustls
//! with ring (`tool-sdk-core/src/tls.rs`); ICU4X, which `url`'s IDNA brings by default, was a
//! twentieth of it.

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

/// `url` (reqwest's, rmcp's) maps international domain names through `idna`, whose Unicode
/// back end is chosen by the version of `idna_adapter` in Cargo.lock: 1.2 is ICU4X (some 25
/// crates, 6 s of a 160 s clean build on 2 cores), 1.1 is unicode-rs (3 crates). The lock holds
/// 1.1 (`cargo update -p idna_adapter --precise 1.1.0`); a plain `cargo update` would take it
/// back to 1.2, and this test says so.
#[test]
fn idna_uses_unicode_rs_not_icu4x() {
    let packages = packages();
    let adapter: Vec<&String> = packages
        .iter()
        .filter(|p| p.starts_with("idna_adapter "))
        .collect();
    assert_eq!(
        adapter.len(),
        1,
        "one idna_adapter in the tree: {adapter:?}"
    );
    assert!(
        adapter[0].starts_with("idna_adapter v1.1."),
        "idna_adapter is {}, whose back end is not unicode-rs: run \
         `cargo update -p idna_adapter --precise 1.1.0`",
        adapter[0]
    );
    let icu: Vec<&String> = packages.iter().filter(|p| p.starts_with("icu_")).collect();
    assert!(icu.is_empty(), "ICU4X is back in the tree: {icu:?}");
}
