//! Stage 1: parse `#[tool(...)]` and the annotated fn into a typed model.
//!
//! Parsing only records what was written; whether it makes sense is `check.rs`'s job. Every
//! problem is pushed into one accumulator so the user sees all of them at once.

use std::fmt::Display;

use darling::ast::NestedMeta;
use darling::util::Override;
use darling::{Error as DarlingError, FromMeta};
use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{Attribute, Error, Expr, FnArg, Ident, ItemFn, Lit, LitStr, Meta, Pat, Type};

/// An error covering all of `tokens` (not just the first one, as `Spanned` would on stable).
pub fn error<T: ToTokens + ?Sized>(tokens: &T, message: impl Display) -> Error {
    Error::new_spanned(tokens, message)
}

/// An error at one span.
pub fn error_at(span: Span, message: impl Display) -> Error {
    Error::new(span, message)
}

/// The keys of `#[tool(...)]`.
#[derive(Debug, Default, FromMeta)]
pub struct ToolArgs {
    pub name: Option<LitStr>,
    pub description: Option<LitStr>,
    pub read_only: Option<Hint>,
    pub destructive: Option<Hint>,
    pub idempotent: Option<Hint>,
    pub open_world: Option<Hint>,
    pub title: Option<LitStr>,
    pub permission: Option<LitStr>,
    pub timeout: Option<LitStr>,
    pub category: Option<LitStr>,
    pub validate: Option<syn::Path>,
    pub register: Option<Hint>,
    pub acts_on: Option<ActsOnArg>,
    /// Accept (and ignore) input keys the tool does not know, instead of refusing them.
    pub allow_unknown_fields: Option<Hint>,
    #[darling(rename = "crate")]
    pub krate: Option<syn::Path>,
}

/// `acts_on(...)`: what a call acts on, for the permission gate. The string names the input
/// property holding the path, command or URL.
#[derive(Debug)]
pub enum ActsOnArg {
    /// `acts_on(agent_state)`: only the agent's own state.
    AgentState,
    /// `acts_on(reads = "file_path")`.
    Reads(LitStr),
    /// `acts_on(writes = "file_path")`.
    Writes(LitStr),
    /// `acts_on(shell = "command")`.
    Shell(LitStr),
    /// `acts_on(url = "url")`.
    Url(LitStr),
}

const ACTS_ON_USAGE: &str = "write one of `acts_on(reads = \"path_property\")`, \
    `acts_on(writes = \"path_property\")`, `acts_on(shell = \"command_property\")`, \
    `acts_on(url = \"url_property\")` or `acts_on(agent_state)`";

impl FromMeta for ActsOnArg {
    fn from_list(items: &[NestedMeta]) -> darling::Result<Self> {
        let [NestedMeta::Meta(meta)] = items else {
            return Err(DarlingError::custom(format!(
                "`acts_on` takes exactly one entry: {ACTS_ON_USAGE}"
            )));
        };
        let key = meta
            .path()
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        let field = || match meta {
            Meta::NameValue(pair) => match &pair.value {
                Expr::Lit(syn::ExprLit {
                    lit: Lit::Str(lit), ..
                }) => Ok(lit.clone()),
                other => Err(DarlingError::custom(format!(
                    "`{key}` takes the name of an input property as a string: \
                     `acts_on({key} = \"...\")`"
                ))
                .with_span(other)),
            },
            _ => Err(DarlingError::custom(format!(
                "`{key}` names the input property it acts on: write `acts_on({key} = \"...\")`"
            ))
            .with_span(meta)),
        };
        match key.as_str() {
            "agent_state" if matches!(meta, Meta::Path(_)) => Ok(ActsOnArg::AgentState),
            "agent_state" => Err(DarlingError::custom(
                "`agent_state` takes no value: write `acts_on(agent_state)`",
            )
            .with_span(meta)),
            "reads" => field().map(ActsOnArg::Reads),
            "writes" => field().map(ActsOnArg::Writes),
            "shell" => field().map(ActsOnArg::Shell),
            "url" => field().map(ActsOnArg::Url),
            _ => Err(DarlingError::custom(format!(
                "unknown `acts_on` entry `{key}`: {ACTS_ON_USAGE}"
            ))
            .with_span(meta)),
        }
    }
}

impl ActsOnArg {
    /// The input property it names, if any.
    pub fn field(&self) -> Option<&LitStr> {
        match self {
            ActsOnArg::AgentState => None,
            ActsOnArg::Reads(field)
            | ActsOnArg::Writes(field)
            | ActsOnArg::Shell(field)
            | ActsOnArg::Url(field) => Some(field),
        }
    }
}

/// A flag written bare (`read_only`) or with a bool (`read_only = false`).
#[derive(Debug, Clone, Copy)]
pub struct Hint {
    pub value: bool,
    pub span: Span,
}

impl FromMeta for Hint {
    fn from_meta(item: &Meta) -> darling::Result<Self> {
        let key = item
            .path()
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        match item {
            Meta::Path(path) => Ok(Hint {
                value: true,
                span: path.span(),
            }),
            Meta::NameValue(pair) => match &pair.value {
                Expr::Lit(lit) => match &lit.lit {
                    Lit::Bool(b) => Ok(Hint {
                        value: b.value,
                        span: pair.span(),
                    }),
                    other => Err(DarlingError::custom(format!(
                        "`{key}` is a flag and takes `true` or `false`: write `{key}` or \
                         `{key} = false`"
                    ))
                    .with_span(other)),
                },
                other => Err(DarlingError::custom(format!(
                    "`{key}` is a flag: write `{key}` or `{key} = false`"
                ))
                .with_span(other)),
            },
            Meta::List(list) => Err(DarlingError::custom(format!(
                "`{key}` is a flag: write `{key}` or `{key} = false`"
            ))
            .with_span(list)),
        }
    }
}

/// The keys of `#[arg(...)]` on a parameter.
#[derive(Debug, Default, FromMeta)]
pub struct ArgOptions {
    /// `default` (the type's `Default`) or `default = expr`.
    pub default: Option<Override<DefaultExpr>>,
    pub rename: Option<LitStr>,
    pub description: Option<LitStr>,
}

/// A default value as written. Unlike darling's `Expr`, a string literal stays a string
/// literal instead of being parsed as code.
#[derive(Debug)]
pub struct DefaultExpr(pub Expr);

impl FromMeta for DefaultExpr {
    fn from_expr(expr: &Expr) -> darling::Result<Self> {
        Ok(DefaultExpr(expr.clone()))
    }
}

/// The annotated fn, its attribute and its parameters.
pub struct ToolFn {
    pub args: ToolArgs,
    /// The fn as written minus the parameter attributes this macro owns.
    pub func: ItemFn,
    /// The fn's doc comment, if any.
    pub doc: Option<String>,
    pub params: Vec<Param>,
}

/// One parameter of the fn.
pub struct Param {
    pub ident: Ident,
    pub ty: Type,
    pub kind: ParamKind,
}

/// What a parameter is for, as far as the tokens tell. Whether a by-value parameter is an
/// argument or injected is decided by its type (`FromToolContext`), at type-check time.
pub enum ParamKind {
    /// A by-value parameter: an argument the model sends (a property of the input schema),
    /// unless its type implements `FromToolContext`.
    Arg {
        doc: Option<String>,
        options: Box<ArgOptions>,
        /// Where `#[arg]` was written, if it was.
        attr: Option<Span>,
    },
    /// `#[input] args: T`: the whole input.
    Input,
    /// A shared reference, such as `ctx: &ToolContext`: always taken from the context (the
    /// model cannot send borrowed data).
    Injected,
}

impl Param {
    /// The property name the model uses.
    pub fn json_name(&self) -> String {
        match &self.kind {
            ParamKind::Arg { options, .. } => match &options.rename {
                Some(rename) => rename.value(),
                None => unraw(&self.ident),
            },
            _ => unraw(&self.ident),
        }
    }
}

/// `r#type` -> `type`.
pub fn unraw(ident: &Ident) -> String {
    let text = ident.to_string();
    text.strip_prefix("r#").map(str::to_owned).unwrap_or(text)
}

/// Parses the attribute arguments and the fn. Always returns the fn (stripped) so that the
/// caller can emit it even when there are errors.
pub fn parse(attr: TokenStream, mut func: ItemFn) -> (ToolFn, Vec<Error>) {
    let mut errors = Vec::new();

    let args = match NestedMeta::parse_meta_list(attr) {
        Ok(items) => match ToolArgs::from_list(&items) {
            Ok(args) => args,
            Err(error) => {
                errors.push(error.into());
                ToolArgs::default()
            }
        },
        Err(error) => {
            errors.push(error);
            ToolArgs::default()
        }
    };

    let doc = doc_string(&func.attrs);
    let mut params = Vec::new();
    for input in func.sig.inputs.iter_mut() {
        match input {
            FnArg::Receiver(receiver) => errors.push(error(
                receiver,
                "a tool cannot take `self`: write a free async fn and pass shared data \
                     as `State<T>`",
            )),
            FnArg::Typed(typed) => {
                let (param, param_errors) = parse_param(typed);
                errors.extend(param_errors);
                if let Some(param) = param {
                    params.push(param);
                }
            }
        }
    }

    (
        ToolFn {
            args,
            func,
            doc,
            params,
        },
        errors,
    )
}

fn parse_param(typed: &mut syn::PatType) -> (Option<Param>, Vec<Error>) {
    let mut errors = Vec::new();
    let attrs = std::mem::take(&mut typed.attrs);
    let doc = doc_string(&attrs);
    let mut options = None;
    let mut input_span = None;
    let mut arg_attr: Option<Attribute> = None;
    for attr in attrs {
        if attr.path().is_ident("doc") {
            continue;
        }
        if attr.path().is_ident("arg") {
            if arg_attr.is_some() {
                errors.push(error(
                    &attr,
                    "duplicate `#[arg]`: put all keys in one `#[arg(...)]`",
                ));
                continue;
            }
            match ArgOptions::from_meta(&attr.meta) {
                Ok(parsed) => options = Some(parsed),
                Err(error) => errors.push(error.into()),
            }
            arg_attr = Some(attr);
        } else if attr.path().is_ident("input") {
            if !matches!(attr.meta, Meta::Path(_)) {
                errors.push(error(&attr.meta, "`#[input]` takes no arguments"));
            }
            input_span = Some(attr.span());
        } else if attr.path().is_ident("cfg") {
            errors.push(error(
                &attr,
                "`#[cfg]` on a tool parameter would change the tool's schema per build; \
                     make the parameter an `Option` instead",
            ));
        } else {
            // Attributes such as `#[allow(unused)]` stay on the fn parameter.
            typed.attrs.push(attr);
        }
    }

    let ty = (*typed.ty).clone();
    let ident = match &*typed.pat {
        Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => pat.ident.clone(),
        // Unpacking a newtype extractor, axum style: `State(name): State<T>`.
        Pat::TupleStruct(pat) => match newtype_binding(pat) {
            Some(ident) => ident,
            None => {
                errors.push(error(
                    pat,
                    "app state is unpacked as `State(name): State<T>` or \
                         `State(mut name): State<T>`, with no other pattern inside",
                ));
                return (None, errors);
            }
        },
        other => {
            let hint = if is_state(&ty) {
                ", or `State(name): State<T>` to unpack app state"
            } else {
                ""
            };
            errors.push(error(
                other,
                format!(
                    "tool parameters need a plain name (it becomes the JSON property): write \
                     `name: Type`, not a pattern{hint}"
                ),
            ));
            return (None, errors);
        }
    };

    let kind = if input_span.is_some() {
        if let Some(arg) = &arg_attr {
            errors.push(error(
                arg,
                "`#[arg]` and `#[input]` cannot be combined on one parameter",
            ));
        }
        ParamKind::Input
    } else if matches!(&ty, Type::Reference(r) if r.mutability.is_none() && !is_data(&r.elem)) {
        if let Some(arg) = &arg_attr {
            errors.push(error(
                arg,
                "`#[arg]` does not apply here: a reference parameter is taken from the \
                     tool's context, not sent by the model",
            ));
        }
        ParamKind::Injected
    } else {
        ParamKind::Arg {
            doc,
            options: Box::new(options.unwrap_or_default()),
            attr: arg_attr.as_ref().map(Spanned::span),
        }
    };
    (Some(Param { ident, ty, kind }), errors)
}

/// The last path segment of a type, looking through `&` when asked.
pub fn last_segment(ty: &Type) -> Option<&syn::PathSegment> {
    match ty {
        Type::Path(path) if path.qself.is_none() => path.path.segments.last(),
        Type::Group(group) => last_segment(&group.elem),
        Type::Paren(paren) => last_segment(&paren.elem),
        _ => None,
    }
}

/// `x` in `State(x)` or `State(mut x)`, axum's way of unpacking an extractor.
fn newtype_binding(pat: &syn::PatTupleStruct) -> Option<Ident> {
    if pat.qself.is_some() || pat.elems.len() != 1 {
        return None;
    }
    match pat.elems.first() {
        Some(Pat::Ident(inner)) if inner.by_ref.is_none() && inner.subpat.is_none() => {
            Some(inner.ident.clone())
        }
        _ => None,
    }
}

/// Types that are data, not extractors: a parameter of one, borrowed or beside `#[input]`, is
/// a mistaken argument, and gets the check stage's error (which says what to write) rather
/// than the extractor trait's. Which parameters are injected is otherwise up to the trait.
///
/// All are std types, which the orphan rule keeps from implementing `FromToolContext` outside
/// tool-sdk-core (which does not), so a parameter of one is an argument without asking the
/// type checker: the expansion skips the probe for it, which keeps crates of such tools as
/// quick to compile as before the trait.
const DATA_TYPES: [&str; 24] = [
    "str", "String", "Vec", "Option", "PathBuf", "HashMap", "BTreeMap", "HashSet", "BTreeSet",
    "bool", "char", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128",
    "f32", "f64",
];

/// Whether `ty` is plain data (see [`DATA_TYPES`]), slices and arrays included.
pub fn is_data(ty: &Type) -> bool {
    match ty {
        Type::Slice(_) | Type::Array(_) | Type::Tuple(_) => true,
        _ => last_segment(ty).is_some_and(|seg| DATA_TYPES.iter().any(|name| seg.ident == name)),
    }
}

/// Whether the type is written `State<..>`: only for a hint in an error message (injection is
/// decided by `FromToolContext`, not by names).
pub fn is_state(ty: &Type) -> bool {
    last_segment(ty).is_some_and(|seg| {
        seg.ident == "State" && matches!(seg.arguments, syn::PathArguments::AngleBracketed(_))
    })
}

/// Joins `///` lines: one leading space dropped, lines kept, outer blank lines trimmed.
fn doc_string(attrs: &[Attribute]) -> Option<String> {
    let mut lines = Vec::new();
    for attr in attrs {
        if !attr.path().is_ident("doc") {
            continue;
        }
        if let Meta::NameValue(pair) = &attr.meta
            && let Expr::Lit(lit) = &pair.value
            && let Lit::Str(text) = &lit.lit
        {
            let value = text.value();
            if value.trim().is_empty() {
                lines.push(String::new());
            }
            for line in value.lines() {
                lines.push(line.strip_prefix(' ').unwrap_or(line).trim_end().to_owned());
            }
        }
    }
    let joined = lines.join("\n");
    let trimmed = joined.trim();
    (!trimmed.is_empty()).then(|| trimmed.to_owned())
}
