//! Depth guards: inputs and schemas nested too deep for the (recursive) validator, and the scan
//! that tells whether a schema lets the validator recurse as deep as its input.

use std::borrow::Cow;
use std::collections::HashSet;

use serde_json::Value;

use super::{InputErrors, InputIssue, MAX_INPUT_DEPTH, MAX_WALK_DEPTH, SCAN_BUDGET};

/// Whether `value` nests arrays/objects more than `limit` levels deep. Recursion is bounded by
/// `limit`.
pub(super) fn exceeds_depth(value: &Value, limit: usize) -> bool {
    match value {
        Value::Array(items) => limit == 0 || items.iter().any(|v| exceeds_depth(v, limit - 1)),
        Value::Object(map) => limit == 0 || map.values().any(|v| exceeds_depth(v, limit - 1)),
        _ => false,
    }
}

/// The error for an input nested too deeply. Takes the input to drop it without recursion.
pub(super) fn too_deep(input: Value) -> InputErrors {
    let mut stack = vec![input];
    while let Some(value) = stack.pop() {
        match value {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
    InputErrors::new(vec![InputIssue::new(
        "",
        format!("must NOT be nested more than {MAX_INPUT_DEPTH} levels deep"),
    )])
}

/// Finds whether the compiled validator may recurse as deep as the input: a `$ref` cycle, a
/// reference this scan cannot follow, or `uniqueItems` (which hashes and compares whole items).
pub(super) struct RefScan<'s> {
    root: &'s Value,
    active: Vec<String>,
    done: HashSet<String>,
    steps: usize,
}

impl<'s> RefScan<'s> {
    pub(super) fn needs_depth_guard(root: &'s Value) -> bool {
        let mut scan = RefScan {
            root,
            active: vec![String::new()],
            done: HashSet::new(),
            steps: 0,
        };
        scan.scan(root, 0)
    }

    fn scan(&mut self, node: &'s Value, depth: usize) -> bool {
        self.steps += 1;
        if depth > 4 * MAX_WALK_DEPTH || self.steps > SCAN_BUDGET {
            return true;
        }
        match node {
            Value::Array(items) => items.iter().any(|item| self.scan(item, depth + 1)),
            Value::Object(map) => {
                for (key, value) in map {
                    match key.as_str() {
                        "enum" | "const" | "default" | "examples" => continue,
                        "uniqueItems" if value.as_bool() == Some(true) => return true,
                        "$dynamicRef" | "$recursiveRef" => return true,
                        "$id" | "id" if value.is_string() && !std::ptr::eq(node, self.root) => {
                            return true;
                        }
                        "$ref" => {
                            if let Value::String(reference) = value
                                && self.follow(reference, depth)
                            {
                                return true;
                            }
                            continue;
                        }
                        _ => {}
                    }
                    if self.scan(value, depth + 1) {
                        return true;
                    }
                }
                false
            }
            _ => false,
        }
    }

    /// Follows a `$ref`; true when it closes a cycle or cannot be followed.
    fn follow(&mut self, reference: &str, depth: usize) -> bool {
        let Some(pointer) = local_pointer(reference) else {
            return true;
        };
        let pointer = pointer.into_owned();
        if self.active.contains(&pointer) {
            return true;
        }
        if self.done.contains(&pointer) {
            return false;
        }
        let Some(target) = self.root.pointer(&pointer) else {
            return true;
        };
        self.active.push(pointer);
        if self.scan(target, depth + 1) {
            return true;
        }
        if let Some(pointer) = self.active.pop() {
            self.done.insert(pointer);
        }
        false
    }
}

/// The JSON pointer of a same-document `$ref` ("#", "#/$defs/X", percent-decoded).
pub(super) fn local_pointer(reference: &str) -> Option<Cow<'_, str>> {
    let fragment = reference.strip_prefix('#')?;
    if !fragment.is_empty() && !fragment.starts_with('/') {
        return None;
    }
    if !fragment.contains('%') {
        return Some(Cow::Borrowed(fragment));
    }
    let bytes = fragment.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%'
            && index + 2 < bytes.len()
            && let (Some(high), Some(low)) = (hex(bytes[index + 1]), hex(bytes[index + 2]))
        {
            decoded.push(high * 16 + low);
            index += 3;
        } else {
            decoded.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(decoded).ok().map(Cow::Owned)
}

fn hex(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}
