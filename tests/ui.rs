//! Compile-fail tests: each misuse of `#[tool]` gives a spanned error that says how to fix it.
//! The expected messages are pinned in `tests/ui/*.stderr`; regenerate them with
//! `TRYBUILD=overwrite cargo test -p tests --test ui` and review the diff.

#[test]
fn misuse_is_a_compile_error() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("ui/*.rs");
}
