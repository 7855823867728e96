//! Size limits of the code (issue #26): no file over 600 lines of non-test code, no function
//! over 100 lines, in the crates a user reads (tool-sdk-core, tool-sdk-model, tool-sdk-builtin,
//! tool-sdk, tool-macros, tool-sdk-temporal, examples). Tests are left out: a `#[cfg(test)]`
//! module (inline, or a file it names), a `#[test]` function, and the `tests` crate. Each file
//! is parsed with syn, so strings and comments cannot fool the count.

use std::path::{Path, PathBuf};

use syn::spanned::Spanned;
use syn::visit::Visit;

const MAX_FILE_LINES: usize = 600;
const MAX_FN_LINES: usize = 100;
/// The source roots checked, from the workspace root.
const ROOTS: [&str; 7] = [
    "tool-sdk-core/src",
    "tool-sdk-model/src",
    "tool-sdk-builtin/src",
    "tool-sdk/src",
    "tool-macros/src",
    "tool-sdk-temporal/src",
    "examples",
];

#[test]
fn no_file_over_600_lines_and_no_function_over_100() {
    let offenders = offenders();
    assert!(
        offenders.is_empty(),
        "over the size limits ({MAX_FILE_LINES} lines of non-test code a file, \
         {MAX_FN_LINES} lines a function):\n{}",
        offenders.join("\n")
    );
}

/// The checker itself, on code made up to break each rule once.
#[test]
fn the_checker_finds_a_long_function_and_skips_tests() {
    let long_body = "    let _ = 1;\n".repeat(MAX_FN_LINES);
    let source = format!(
        "fn short() {{}}\nimpl S {{\n    fn long(&self) {{\n{long_body}    }}\n}}\n\
         #[cfg(test)]\nmod tests {{\n    fn long_test() {{\n{long_body}    }}\n}}\n"
    );
    let report = check_source(&source).unwrap();
    assert_eq!(report.test_mods, Vec::<String>::new());
    assert_eq!(report.long_fns, [("long".to_owned(), MAX_FN_LINES + 2)]);
    assert_eq!(
        report.code_lines,
        4 + MAX_FN_LINES + 1,
        "the test module is not counted"
    );
    let declared = check_source("#[cfg(test)]\nmod tests;\nmod b;\n").unwrap();
    assert_eq!(declared.test_mods, ["tests"]);
}

/// One line a rule broken: `path: N lines` or `path: fn name: N lines`.
fn offenders() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut files = Vec::new();
    for dir in ROOTS {
        rust_files(&root.join(dir), &mut files);
    }
    files.sort();
    let mut reports = Vec::new();
    let mut test_files = Vec::new();
    for file in &files {
        let source = std::fs::read_to_string(file).unwrap();
        let report = check_source(&source)
            .unwrap_or_else(|error| panic!("{} does not parse: {error}", file.display()));
        // `mod tests;` in `a/b.rs` is `a/b/tests.rs`; in `a/mod.rs` or `lib.rs`, `a/tests.rs`.
        let stem = file.file_stem().unwrap();
        let dir = match stem.to_str() {
            Some("mod" | "lib" | "main") => file.parent().unwrap().to_path_buf(),
            _ => file.with_extension(""),
        };
        for name in &report.test_mods {
            test_files.push(dir.join(format!("{name}.rs")));
            test_files.push(dir.join(name).join("mod.rs"));
        }
        reports.push((file, report));
    }
    let mut offenders = Vec::new();
    for (file, report) in reports {
        if test_files.contains(file) {
            continue;
        }
        let shown = file.strip_prefix(root).unwrap().display();
        if report.code_lines > MAX_FILE_LINES {
            offenders.push(format!("{shown}: {} lines", report.code_lines));
        }
        for (name, lines) in report.long_fns {
            offenders.push(format!("{shown}: fn {name}: {lines} lines"));
        }
    }
    offenders
}

fn rust_files(dir: &Path, into: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, into);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            into.push(path);
        }
    }
}

/// What one file holds, as far as the limits go.
#[derive(Debug, Default)]
struct Report {
    /// Lines of the file outside its inline `#[cfg(test)]` modules.
    code_lines: usize,
    /// The functions over the limit outside tests, with their lengths.
    long_fns: Vec<(String, usize)>,
    /// The modules declared `#[cfg(test)] mod name;`, whose files are tests.
    test_mods: Vec<String>,
}

fn check_source(source: &str) -> syn::Result<Report> {
    let ast = syn::parse_file(source)?;
    let mut visitor = Sizes {
        report: Report::default(),
        test_lines: 0,
    };
    visitor.visit_file(&ast);
    let mut report = visitor.report;
    report.code_lines = source.lines().count() - visitor.test_lines;
    Ok(report)
}

struct Sizes {
    report: Report,
    /// Lines taken by top-level inline test modules.
    test_lines: usize,
}

fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        let path = attr.path();
        if path.is_ident("test") || path.segments.last().is_some_and(|s| s.ident == "test") {
            return true;
        }
        path.is_ident("cfg")
            && attr
                .parse_args::<syn::Ident>()
                .is_ok_and(|ident| ident == "test")
    })
}

fn lines(from: proc_macro2::Span, to: proc_macro2::Span) -> usize {
    to.end().line - from.start().line + 1
}

impl Sizes {
    fn function(&mut self, attrs: &[syn::Attribute], sig: &syn::Signature, body: &syn::Block) {
        if is_test(attrs) {
            return;
        }
        let length = lines(sig.fn_token.span, body.brace_token.span.close());
        if length > MAX_FN_LINES {
            self.report.long_fns.push((sig.ident.to_string(), length));
        }
    }
}

impl<'ast> Visit<'ast> for Sizes {
    fn visit_item_mod(&mut self, module: &'ast syn::ItemMod) {
        if !is_test(&module.attrs) {
            return syn::visit::visit_item_mod(self, module);
        }
        match &module.content {
            None => self.report.test_mods.push(module.ident.to_string()),
            Some(_) => self.test_lines += lines(module.span(), module.span()),
        }
    }

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        self.function(&item.attrs, &item.sig, &item.block);
        syn::visit::visit_item_fn(self, item);
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        self.function(&item.attrs, &item.sig, &item.block);
        syn::visit::visit_impl_item_fn(self, item);
    }

    fn visit_trait_item_fn(&mut self, item: &'ast syn::TraitItemFn) {
        if let Some(body) = &item.default {
            self.function(&item.attrs, &item.sig, body);
        }
        syn::visit::visit_trait_item_fn(self, item);
    }
}
