//! The layers of `agent/` (see `mod.rs`), read from the source: each file imports only from
//! its own layer or those below, with no circle and no `use super::*` outside tests.

use std::collections::BTreeMap;
use std::path::Path;

/// The layers, top first. A file missing here fails the test: put it where it belongs.
const LAYERS: &[(&str, &[&str])] = &[
    ("facade", &["mod", "stored", "effects"]),
    (
        "driver",
        &[
            "run", "turn", "early", "executor", "asker", "compact", "output", "subagent", "spans",
        ],
    ),
    ("assembly", &["inner"]),
    ("parts", &["recorder", "hold", "budget", "mcp"]),
    (
        "config",
        &["config", "project", "hooks", "command_hooks", "model_table"],
    ),
    ("context", &["context"]),
    ("decisions", &["step"]),
    ("vocabulary", &["error", "events"]),
];

/// Imports that run up a layer today, each with why it is still there. The test fails once
/// one is gone, so that it leaves this list too.
const KNOWN_UPWARD: &[(&str, &str, &str)] = &[];

fn layer_of(file: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, files)| files.contains(&file))
}

/// The sibling modules a file names through `super::`, outside comments, tests and the inline
/// modules it declares (whose `super` is the file itself); `mod` stands for `mod.rs` itself
/// (a name it defines or re-exports).
fn imports(source: &str, siblings: &[String]) -> Result<Vec<String>, String> {
    let source = source.split("#[cfg(test)]").next().unwrap_or_default();
    let mut names = Vec::new();
    let mut inline_mod: Option<usize> = None;
    let mut group: Option<String> = None;
    for line in source.lines() {
        let indent = line.len() - line.trim_start().len();
        let text = line.trim_start();
        if let Some(depth) = inline_mod {
            if indent == depth && text.starts_with('}') {
                inline_mod = None;
            }
            continue;
        }
        if (text.starts_with("mod ") || text.starts_with("pub(super) mod ")) && text.ends_with('{')
        {
            inline_mod = Some(indent);
            continue;
        }
        if text.starts_with("//") {
            continue;
        }
        if text.contains("use super::*") {
            return Err(format!("`use super::*` outside tests: {text}"));
        }
        names.extend(line.match_indices("super::").filter_map(|(at, found)| {
            let rest = &line[at + found.len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            match (name.is_empty(), siblings.contains(&name)) {
                // `use super::{...}`: the names follow, on this line or the next ones.
                (true, _) => None,
                (false, true) => Some(name),
                (false, false) => Some("mod".to_owned()),
            }
        }));
        // `use super::{a::X, b}`, on one line or spread over several: the first segment
        // of each item at the top of the braces.
        if let Some(inside) = text.strip_prefix("use super::{") {
            group = Some(String::new());
            group_text(&mut group, inside, &mut names, siblings);
        } else if group.is_some() {
            group_text(&mut group, text, &mut names, siblings);
        }
    }
    names.sort();
    names.dedup();
    Ok(names)
}

/// Adds `text` to the `use super::{` group being read; once it closes, the siblings (or
/// `mod`) its items name.
fn group_text(
    group: &mut Option<String>,
    text: &str,
    names: &mut Vec<String>,
    siblings: &[String],
) {
    let Some(read) = group.as_mut() else {
        return;
    };
    read.push_str(text);
    if !text.trim_end().ends_with(';') {
        return;
    }
    let (mut depth, mut item, mut heads) = (0, String::new(), Vec::new());
    for c in read.chars().chain([',']) {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth <= 0 => heads.push(std::mem::take(&mut item)),
            _ if depth <= 0 => item.push(c),
            _ => {}
        }
    }
    for head in heads {
        let head = head.trim().trim_end_matches(';').trim();
        let first = head.split("::").next().unwrap_or_default();
        if first.is_empty() {
            continue;
        }
        names.push(match siblings.iter().any(|s| s == first) {
            true => first.to_owned(),
            false => "mod".to_owned(),
        });
    }
    *group = None;
}

#[test]
fn agent_files_import_only_down_their_layers_and_in_no_circle() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/agent");
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.extension().is_some_and(|e| e == "rs") && !name.ends_with("_tests") {
            files.insert(name, std::fs::read_to_string(&path).unwrap());
        }
    }
    let siblings: Vec<String> = files.keys().cloned().collect();
    let mut problems = Vec::new();
    let mut edges: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut seen_known = Vec::new();
    for (file, source) in &files {
        let Some(layer) = layer_of(file) else {
            problems.push(format!("{file}.rs is in no layer of `LAYERS`"));
            continue;
        };
        let names = match imports(source, &siblings) {
            Ok(names) => names,
            Err(problem) => {
                problems.push(format!("{file}.rs: {problem}"));
                continue;
            }
        };
        let mut kept = Vec::new();
        for name in names.into_iter().filter(|name| name != file) {
            let known = KNOWN_UPWARD
                .iter()
                .any(|(from, to, _)| from == file && *to == name);
            match layer_of(&name) {
                Some(to) if to < layer && !known => problems.push(format!(
                    "{file}.rs ({}) imports from {name}.rs ({}), a layer above it",
                    LAYERS[layer].0, LAYERS[to].0
                )),
                Some(to) if to < layer => seen_known.push((file.clone(), name)),
                _ => kept.push(name),
            }
        }
        edges.insert(file, kept);
    }
    // No circle: a depth-first walk never meets a file on its own path.
    fn walk<'a>(
        file: &'a str,
        edges: &'a BTreeMap<&str, Vec<String>>,
        path: &mut Vec<&'a str>,
        done: &mut Vec<&'a str>,
        problems: &mut Vec<String>,
    ) {
        if let Some(at) = path.iter().position(|f| *f == file) {
            problems.push(format!("import circle: {}", path[at..].join(" -> ")));
            return;
        }
        if done.contains(&file) {
            return;
        }
        path.push(file);
        for next in edges.get(file).into_iter().flatten() {
            walk(next, edges, path, done, problems);
        }
        path.pop();
        done.push(file);
    }
    for (from, to, why) in KNOWN_UPWARD {
        if !seen_known.iter().any(|(f, t)| f == from && t == to) {
            problems.push(format!(
                "{from}.rs no longer imports from {to}.rs: take it out of `KNOWN_UPWARD` ({why})"
            ));
        }
    }
    let mut done = Vec::new();
    for file in edges.keys() {
        walk(file, &edges, &mut Vec::new(), &mut done, &mut problems);
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_reader_sees_what_it_must() {
    let siblings = ["inner".to_owned(), "step".to_owned(), "mod".to_owned()];
    assert_eq!(
        imports("use super::inner::AgentInner;\n", &siblings),
        Ok(vec!["inner".to_owned()])
    );
    assert_eq!(
        imports("use super::{AgentError, Emit};\n", &siblings),
        Ok(vec!["mod".to_owned()]),
        "a name of mod.rs"
    );
    assert_eq!(
        imports(
            "use super::{\n    inner::{A, B},\n    step,\n};\n",
            &siblings
        ),
        Ok(vec!["inner".to_owned(), "step".to_owned()])
    );
    assert!(imports("use super::*;\n", &siblings).is_err());
    assert_eq!(
        imports(
            "/// [`A`](super::Agent)\nmod inner {\n    use super::X;\n}\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
            &siblings
        ),
        Ok(vec![]),
        "docs, inline modules and tests are not the file's imports"
    );
}
