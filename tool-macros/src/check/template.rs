//! `title` and `permission` templates: `{arg}` placeholders, each checked against the tool's
//! arguments.

use syn::{Error, LitStr};

use super::{InputShape, Piece, Template, closest};
use crate::attr::{Param, ParamKind, error, unraw};

pub(super) fn template(
    lit: &LitStr,
    key: &str,
    params: &[Param],
    input: &InputShape,
    errors: &mut Vec<Error>,
) -> Template {
    let text = lit.value();
    let mut pieces = Vec::new();
    let mut literal = String::new();
    let mut chars = text.chars().peekable();
    let fail = |errors: &mut Vec<Error>, message: String| {
        errors.push(error(lit, format!("in `{key}`: {message}")));
    };
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                literal.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                literal.push('}');
            }
            '}' => {
                fail(
                    errors,
                    "unmatched `}`: write `}}` for a literal brace".into(),
                );
                return Template {
                    pieces,
                    span: lit.span(),
                };
            }
            '{' => {
                let mut name = String::new();
                let mut closed = false;
                for c in chars.by_ref() {
                    if c == '}' {
                        closed = true;
                        break;
                    }
                    name.push(c);
                }
                if !closed {
                    fail(
                        errors,
                        "unclosed `{`: write `{{` for a literal brace".into(),
                    );
                    break;
                }
                let name = name.trim();
                if name.contains(':') {
                    fail(
                        errors,
                        format!("`{{{name}}}`: format specs are not supported, write `{{arg}}`"),
                    );
                    continue;
                }
                if name.is_empty() || name.parse::<usize>().is_ok() {
                    fail(
                        errors,
                        format!("`{{{name}}}` must name an argument, like `{{file_path}}`"),
                    );
                    continue;
                }
                let json = match placeholder_json(name, params, input) {
                    Ok(json) => json,
                    Err(message) => {
                        fail(errors, message);
                        continue;
                    }
                };
                if !literal.is_empty() {
                    pieces.push(Piece::Text(std::mem::take(&mut literal)));
                }
                pieces.push(Piece::Arg {
                    rust: name.to_owned(),
                    json,
                });
            }
            other => literal.push(other),
        }
    }
    if !literal.is_empty() {
        pieces.push(Piece::Text(literal));
    }
    Template {
        pieces,
        span: lit.span(),
    }
}

/// The JSON name of the argument a `{name}` placeholder stands for, or why it stands for none.
fn placeholder_json(name: &str, params: &[Param], input: &InputShape) -> Result<String, String> {
    match input {
        // The field is checked against the struct by the compiler (see expand.rs).
        InputShape::Struct(_) if syn::parse_str::<syn::Ident>(name).is_ok() => Ok(name.to_owned()),
        InputShape::Struct(_) => Err(format!(
            "`{{{name}}}` must name a field of the input struct"
        )),
        InputShape::Params => {
            let args: Vec<&Param> = params
                .iter()
                .filter(|p| matches!(p.kind, ParamKind::Arg { .. }))
                .collect();
            match args.iter().find(|p| unraw(&p.ident) == name) {
                Some(param) => Ok(param.json_name()),
                None => {
                    let names: Vec<String> = args.iter().map(|p| unraw(&p.ident)).collect();
                    let hint = closest(name, &names)
                        .map(|n| format!(" (did you mean `{{{n}}}`?)"))
                        .unwrap_or_default();
                    let list = if names.is_empty() {
                        "it has none".to_owned()
                    } else {
                        format!("its arguments are {}", names.join(", "))
                    };
                    Err(format!(
                        "`{{{name}}}` is not an argument of this tool{hint}; {list}"
                    ))
                }
            }
        }
    }
}
