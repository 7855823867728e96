//! Strings that match a regular expression, made from its parsed form.

use regex_syntax::hir::{Class, Hir, HirKind};

/// How many times past its minimum an open-ended repetition (`*`, `+`, `{2,}`) goes at most.
const MORE: u32 = 3;

/// Appends to `out` a string that `hir` matches. Anchors and word boundaries write nothing:
/// the pattern's usual shapes (`^[a-z]+-[0-9]{3}$`) hold; the caller checks the rest.
pub(super) fn write(hir: &Hir, rng: &mut fastrand::Rng, out: &mut String) {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => {}
        HirKind::Literal(literal) => out.push_str(&String::from_utf8_lossy(&literal.0)),
        HirKind::Class(Class::Unicode(class)) => {
            let ranges: Vec<(u32, u32)> = class
                .ranges()
                .iter()
                .map(|r| (u32::from(r.start()), u32::from(r.end())))
                .collect();
            out.extend(pick(&ranges, rng).and_then(char::from_u32));
        }
        HirKind::Class(Class::Bytes(class)) => {
            let ranges: Vec<(u32, u32)> = class
                .ranges()
                .iter()
                .map(|r| (u32::from(r.start()), u32::from(r.end().min(0x7f))))
                .filter(|(start, end)| start <= end)
                .collect();
            out.extend(pick(&ranges, rng).and_then(char::from_u32));
        }
        HirKind::Repetition(repetition) => {
            let extra = repetition
                .max
                .map_or(MORE, |max| (max - repetition.min).min(MORE));
            for _ in 0..repetition.min + rng.u32(..=extra) {
                write(&repetition.sub, rng, out);
            }
        }
        HirKind::Capture(capture) => write(&capture.sub, rng, out),
        HirKind::Concat(parts) => {
            for part in parts {
                write(part, rng, out);
            }
        }
        HirKind::Alternation(branches) => write(&branches[rng.usize(..branches.len())], rng, out),
    }
}

/// A character of the class, readable where it allows one: a lowercase letter, a digit, or
/// printable ASCII, before anything else.
fn pick(ranges: &[(u32, u32)], rng: &mut fastrand::Rng) -> Option<u32> {
    for (low, high) in [('a', 'z'), ('0', '9'), ('!', '~')] {
        let inside: Vec<(u32, u32)> = ranges
            .iter()
            .map(|&(start, end)| (start.max(low as u32), end.min(high as u32)))
            .filter(|(start, end)| start <= end)
            .collect();
        if !inside.is_empty() {
            let (start, end) = inside[rng.usize(..inside.len())];
            return Some(rng.u32(start..=end));
        }
    }
    ranges.first().map(|&(start, _)| start)
}
