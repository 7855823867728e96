//! Stage 2: check the model and derive what expansion needs.
//!
//! Every rule that can be checked from the tokens is checked here, each failure a spanned
//! error that says what is wrong and how to fix it. Rules that need type information (is this
//! type `Deserialize`?) are left to the compiler, steered by `#[diagnostic]` messages in
//! `tool_sdk::__private`.

use proc_macro2::Span;
use syn::visit::Visit;
use syn::{Error, LitStr, ReturnType, Type};

mod template;

use template::template;

use crate::attr::{Param, ParamKind, ToolFn, error, error_at, is_data, last_segment, unraw};

/// What expansion needs beyond the model.
pub struct Plan {
    pub name: String,
    pub description: String,
    /// `read` -> `ReadTool`.
    pub struct_name: String,
    pub input: InputShape,
    pub title: Option<Template>,
    pub permission: Option<Template>,
    pub timeout_ms: Option<u64>,
}

/// Where the input comes from.
pub enum InputShape {
    /// Individual parameters: expansion generates `<Struct>Input`.
    Params,
    /// `#[input] args: T`: the parameter at this index.
    Struct(usize),
}

/// A `title`/`permission` format string split into pieces.
pub struct Template {
    pub pieces: Vec<Piece>,
    pub span: Span,
}

/// A piece of a [`Template`].
pub enum Piece {
    Text(String),
    /// An argument: its Rust name and its JSON name.
    Arg {
        rust: String,
        json: String,
    },
}

pub fn check(tool: &ToolFn, errors: &mut Vec<Error>) -> Plan {
    let sig = &tool.func.sig;

    check_signature(sig, errors);

    let fn_name = unraw(&sig.ident);
    let name = tool_name(tool, &fn_name, errors);

    let description = match (&tool.args.description, &tool.doc) {
        (Some(lit), _) if lit.value().trim().is_empty() => {
            errors.push(error(lit, "the description is empty"));
            String::new()
        }
        (Some(lit), _) => lit.value(),
        (None, Some(doc)) => doc.clone(),
        (None, None) => {
            errors.push(error(
                &sig.ident,
                format!(
                    "tool `{name}` has no description, and the model needs one to know when \
                     to call it: add a `///` doc comment to the fn or `description = \"...\"`"
                ),
            ));
            String::new()
        }
    };

    let input = check_params(&tool.params, errors);

    if let (Some(read_only), Some(destructive)) = (tool.args.read_only, tool.args.destructive)
        && read_only.value
        && destructive.value
    {
        errors.push(error_at(
            destructive.span,
            "a tool cannot be both `read_only` and `destructive`",
        ));
    }

    let timeout_ms = tool.args.timeout.as_ref().and_then(|lit| {
        parse_duration_ms(&lit.value())
            .map_err(|problem| {
                errors.push(error(
                    lit,
                    format!(
                        "invalid timeout {:?}: {problem}; write e.g. \"30s\", \"500ms\", \
                         \"2m\" or \"1m30s\"",
                        lit.value()
                    ),
                ))
            })
            .ok()
    });

    let title = tool
        .args
        .title
        .as_ref()
        .map(|lit| template(lit, "title", &tool.params, &input, errors));
    let permission = tool
        .args
        .permission
        .as_ref()
        .map(|lit| template(lit, "permission", &tool.params, &input, errors));

    if let (Some(field), InputShape::Params) =
        (tool.args.acts_on.as_ref().and_then(|a| a.field()), &input)
    {
        check_acts_on_field(field, &tool.params, errors);
    }

    check_return(&sig.output, errors);

    Plan {
        name,
        description,
        struct_name: format!("{}Tool", upper_camel(&fn_name)),
        input,
        title,
        permission,
        timeout_ms,
    }
}

/// What a tool's fn cannot be: sync, unsafe, const, extern or generic.
fn check_signature(sig: &syn::Signature, errors: &mut Vec<Error>) {
    if sig.asyncness.is_none() {
        errors.push(error(
            &sig.fn_token,
            "a tool must be an `async fn`: add `async` before `fn`",
        ));
    }
    if let syn::Safety::Unsafe(unsafety) = &sig.safety {
        errors.push(error(unsafety, "a tool cannot be an `unsafe fn`"));
    }
    if let Some(constness) = &sig.constness {
        errors.push(error(constness, "a tool cannot be a `const fn`"));
    }
    if let Some(abi) = &sig.abi {
        errors.push(error(abi, "a tool cannot have an `extern` ABI"));
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.push(error(
            &sig.generics,
            "a tool cannot have generic or lifetime parameters: its input schema must be \
                 one concrete type; use concrete types (and `State<T>` for shared data)",
        ));
    }
}

/// The tool's name: `name = "..."`, or else the fn's, either checked.
fn tool_name(tool: &ToolFn, fn_name: &str, errors: &mut Vec<Error>) -> String {
    match &tool.args.name {
        Some(lit) => {
            let value = lit.value();
            if let Some(problem) = name_problem(&value) {
                errors.push(error(
                    lit,
                    format!(
                        "invalid tool name {value:?}: {problem}; names must match \
                         ^[a-zA-Z0-9_-]{{1,64}}$"
                    ),
                ));
            }
            value
        }
        None => {
            if let Some(problem) = name_problem(fn_name) {
                errors.push(error(
                    &tool.func.sig.ident,
                    format!(
                        "the fn name `{fn_name}` is not a valid tool name ({problem}): set \
                         one with `name = \"...\"`"
                    ),
                ));
            }
            fn_name.to_owned()
        }
    }
}

fn check_params(params: &[Param], errors: &mut Vec<Error>) -> InputShape {
    let mut input_index = None;
    let mut context_seen = false;
    let mut first_arg = None;
    for (index, param) in params.iter().enumerate() {
        match &param.kind {
            ParamKind::Input => {
                if input_index.is_some() {
                    errors.push(error(
                        &param.ident,
                        "only one `#[input]` parameter is allowed: it holds the whole input",
                    ));
                } else {
                    input_index = Some(index);
                }
                check_owned(&param.ty, errors);
                if let Some(kind) = non_object_type(&param.ty) {
                    errors.push(error(
                        &param.ty,
                        format!(
                            "an `#[input]` type must be a struct (tool inputs are JSON \
                             objects), but this is {kind}: wrap it in a struct with a named \
                             field, or make it a plain parameter"
                        ),
                    ));
                }
            }
            ParamKind::Injected => check_injected(param, &mut context_seen, errors),
            ParamKind::Arg { options, attr, doc } => {
                // Beside `#[input]` a by-value parameter can only be injected: the
                // expansion asks its type for `FromToolContext`. Written as an argument
                // (`#[arg]`, a doc comment) or of a data type, it was meant as one.
                if attr.is_some() || doc.is_some() || is_data(&param.ty) {
                    first_arg.get_or_insert(index);
                }
                check_owned(&param.ty, errors);
                if let Some(rename) = &options.rename
                    && let Some(problem) = property_problem(&rename.value())
                {
                    errors.push(error(rename, format!("invalid property name: {problem}")));
                }
            }
        }
    }
    if let (Some(input), Some(arg)) = (input_index, first_arg) {
        let (input, arg) = (&params[input], &params[arg]);
        errors.push(error(
            &arg.ident,
            format!(
                "`#[input] {}` already takes the whole input, so `{}` cannot be a separate \
                 argument: move it into the input struct",
                input.ident, arg.ident
            ),
        ));
    }
    match input_index {
        Some(index) => InputShape::Struct(index),
        None => InputShape::Params,
    }
}

/// A reference parameter: the context, or another extractor (`FromToolContext` for `&T`).
fn check_injected(param: &Param, context_seen: &mut bool, errors: &mut Vec<Error>) {
    // Diagnostics only: which parameters are injected is up to the trait.
    if let Type::Reference(reference) = &param.ty
        && last_segment(&reference.elem).is_some_and(|s| s.ident == "ToolContext")
    {
        if *context_seen {
            errors.push(error(
                &param.ident,
                "a tool takes at most one `&ToolContext`: remove this parameter",
            ));
        }
        *context_seen = true;
    }
}

/// Arguments are deserialized from JSON, so they must own their data.
fn check_owned(ty: &Type, errors: &mut Vec<Error>) {
    match ty {
        Type::Reference(reference) => {
            let message = if last_segment(&reference.elem).is_some_and(|s| s.ident == "ToolContext")
            {
                "take the context by shared reference: `ctx: &ToolContext`".to_owned()
            } else if last_segment(&reference.elem).is_some_and(|s| s.ident == "str") {
                "tool arguments are deserialized from JSON and must own their data: use \
                 `String` instead of `&str`"
                    .to_owned()
            } else {
                "tool arguments are deserialized from JSON and must own their data: drop the \
                 `&` and take the value"
                    .to_owned()
            };
            errors.push(error(ty, message));
        }
        Type::ImplTrait(_) => errors.push(error(
            ty,
            "`impl Trait` cannot be a tool argument: the schema needs a concrete type",
        )),
        Type::Infer(_) => errors.push(error(
            ty,
            "write the argument's type: the schema is generated from it",
        )),
        _ if last_segment(ty).is_some_and(|s| s.ident == "ToolContext") => errors.push(error(
            ty,
            "take the context by reference: `ctx: &ToolContext`",
        )),
        _ => {
            let mut lifetimes = FindLifetime(None);
            lifetimes.visit_type(ty);
            if let Some(lifetime) = lifetimes.0 {
                errors.push(error(
                    &lifetime,
                    "tool arguments are deserialized from JSON and cannot borrow: use an \
                         owned type without lifetimes (e.g. `String`, not `Cow<'a, str>`)",
                ));
            }
        }
    }
}

struct FindLifetime(Option<syn::Lifetime>);

impl Visit<'_> for FindLifetime {
    fn visit_lifetime(&mut self, lifetime: &syn::Lifetime) {
        if lifetime.ident != "static" {
            self.0.get_or_insert_with(|| lifetime.clone());
        }
    }
}

/// Types whose JSON is certainly not an object.
fn non_object_type(ty: &Type) -> Option<&'static str> {
    match ty {
        Type::Array(_) | Type::Slice(_) => return Some("an array"),
        Type::Tuple(_) => return Some("a tuple (a JSON array)"),
        _ => {}
    }
    let ident = last_segment(ty)?.ident.to_string();
    Some(match ident.as_str() {
        "String" | "str" | "char" | "PathBuf" => "a string",
        "bool" => "a boolean",
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" | "i8" | "i16" | "i32" | "i64" | "i128"
        | "isize" | "f32" | "f64" => "a number",
        "Vec" | "VecDeque" | "HashSet" | "BTreeSet" => "a list",
        "Option" => "an `Option` (the input itself cannot be null)",
        _ => return None,
    })
}

fn check_return(output: &ReturnType, errors: &mut Vec<Error>) {
    let ReturnType::Type(_, ty) = output else {
        return;
    };
    let mut found = FindImplTrait(None);
    found.visit_type(ty);
    if let Some(impl_trait) = found.0 {
        errors.push(error(
            &impl_trait,
            "a tool must return a concrete type (`String`, a `Serialize` type, \
                 `ToolOutput`, or a `Result` of one): `impl Trait` cannot be converted",
        ));
    }
}

struct FindImplTrait(Option<syn::TypeImplTrait>);

impl Visit<'_> for FindImplTrait {
    fn visit_type_impl_trait(&mut self, node: &syn::TypeImplTrait) {
        self.0.get_or_insert_with(|| node.clone());
    }
}

/// `acts_on(reads = "file_path")` must name an input property: the JSON name of a parameter.
fn check_acts_on_field(field: &LitStr, params: &[Param], errors: &mut Vec<Error>) {
    let names: Vec<String> = params
        .iter()
        .filter(|p| matches!(p.kind, ParamKind::Arg { .. }))
        .map(Param::json_name)
        .collect();
    let value = field.value();
    if names.contains(&value) {
        return;
    }
    let hint = closest(&value, &names)
        .map(|n| format!(" (did you mean `{n}`?)"))
        .unwrap_or_default();
    errors.push(error(
        field,
        format!(
            "`acts_on` names the input property holding the path, command or URL, but this \
             tool has no property `{value}`{hint}; its properties are {}",
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        ),
    ));
}

/// The candidate nearest to `name`, if it is near enough to be a likely typo. Optimal string
/// alignment counts a swap of two neighbours as one edit (the commonest typo), like the input
/// validator's suggestions do.
fn closest<'a>(name: &str, candidates: &'a [String]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|candidate| (strsim::osa_distance(name, candidate), candidate))
        .filter(|(distance, candidate)| *distance <= 2.max(candidate.len() / 3))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate.as_str())
}

fn name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("it is empty".into());
    }
    if name.len() > 64 {
        return Some(format!(
            "it is {} characters long, the limit is 64",
            name.len()
        ));
    }
    name.chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
        .map(|c| format!("{c:?} is not allowed"))
}

fn property_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        Some("it is empty".into())
    } else {
        None
    }
}

/// `"1m30s"` -> 90_000.
fn parse_duration_ms(text: &str) -> Result<u64, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("it is empty".into());
    }
    let mut total: u64 = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            return Err(format!("expected a number at {rest:?}"));
        }
        let number: u64 = rest[..digits]
            .parse()
            .map_err(|_| "the number is too large".to_owned())?;
        rest = &rest[digits..];
        let unit_len = rest.len()
            - rest
                .trim_start_matches(|c: char| c.is_ascii_alphabetic())
                .len();
        let factor = match &rest[..unit_len] {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "" => return Err(format!("{number} needs a unit (ms, s, m or h)")),
            unit => return Err(format!("unknown unit {unit:?} (use ms, s, m or h)")),
        };
        rest = &rest[unit_len..];
        total = number
            .checked_mul(factor)
            .and_then(|ms| total.checked_add(ms))
            .ok_or("it is too long")?;
    }
    if total == 0 {
        return Err("a timeout of zero would stop every call at once".into());
    }
    Ok(total)
}

/// `get_weather` -> `GetWeather`.
pub fn upper_camel(snake: &str) -> String {
    snake
        .split('_')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars
                .next()
                .map(|first| first.to_uppercase().chain(chars).collect::<String>())
                .unwrap_or_default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closest_counts_swapped_letters_as_one_typo() {
        let names = ["file_path".to_owned(), "offset".to_owned()];
        // Two swaps: four single-letter edits, but two typos.
        assert_eq!(closest("fiel_apth", &names), Some("file_path"));
        assert_eq!(closest("ofset", &names), Some("offset"));
        assert_eq!(closest("query", &names), None);
    }
}
