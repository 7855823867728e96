//! The `#[tool]` attribute. Use it through `tool_sdk::tool`; its documentation lives there.
//!
//! Three stages: `attr` parses into a typed model, `check` validates it with spanned errors
//! collected together, `expand` generates code. Whatever goes wrong, the original fn is
//! emitted too, and a stand-in tool struct, so the rest of the crate keeps type-checking and
//! each mistake is reported once.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::quote;
use syn::ItemFn;

mod attr;
mod check;
mod expand;
mod output;

/// Turns an async fn into a tool an LLM can call. See `tool_sdk::tool`.
#[proc_macro_attribute]
pub fn tool(attr: TokenStream, item: TokenStream) -> TokenStream {
    let func = match syn::parse::<ItemFn>(item.clone()) {
        Ok(func) => func,
        Err(_) => {
            let error = syn::Error::new(
                proc_macro2::Span::call_site(),
                "`#[tool]` goes on an `async fn`, e.g. `#[tool] async fn read(file_path: String) \
                 -> String`",
            )
            .to_compile_error();
            let mut out = TokenStream::from(error);
            out.extend(item);
            return out;
        }
    };
    tool_impl(attr.into(), func).into()
}

fn tool_impl(attr: TokenStream2, func: ItemFn) -> TokenStream2 {
    let (model, mut errors) = attr::parse(attr, func);
    let plan = check::check(&model, &mut errors);
    let original = expand::original(&model.func);
    let krate = crate_path(model.args.krate.as_ref());
    if !errors.is_empty() {
        let errors = errors.iter().map(syn::Error::to_compile_error);
        let fallback = expand::fallback(&model, &plan, &krate);
        return quote!(#original #(#errors)* #fallback);
    }
    let generated = expand::expand(&model, &plan, &krate);
    quote!(#original #generated)
}

/// `::tool_sdk`, or whatever the user renamed the dependency to, or `::tool_sdk_core` (also
/// renamed) in a crate that depends on it and not on tool-sdk, or `crate = path`.
fn crate_path(explicit: Option<&syn::Path>) -> TokenStream2 {
    use proc_macro_crate::{FoundCrate, crate_name};
    if let Some(path) = explicit {
        return quote!(#path);
    }
    // Inside either crate itself `extern crate self as ...` makes the absolute path work.
    let found = |package: &str, itself: &str| match crate_name(package) {
        Ok(FoundCrate::Name(name)) => Some(syn::parse_str::<syn::Ident>(&name).ok()?),
        Ok(FoundCrate::Itself) => Some(syn::Ident::new(itself, proc_macro2::Span::call_site())),
        Err(_) => None,
    };
    match found("tool-sdk", "tool_sdk").or_else(|| found("tool-sdk-core", "tool_sdk_core")) {
        Some(ident) => quote!(::#ident),
        None => quote!(::tool_sdk),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Odd inputs must give errors, never a panic, and the fn must always come back out.
    #[test]
    fn never_panics_and_always_emits_the_fn() {
        let attrs = [
            "",
            "name = \"Read\", read_only",
            "name = \"\"",
            "name = \"ü\"",
            "read_only = \"yes\", destructive = 1, open_world(x)",
            "title = \"{\"",
            "title = \"}\"",
            "title = \"{a-b} {ü x} {} {0} {x:?} {{}}\"",
            "title = \"{a-b}\"",
            "permission = \"{ü x}\"",
            "permission = \"{{{file_path}}}\"",
            "timeout = \"\"",
            "timeout = \"99999999999999999999h\"",
            "timeout = \"5ms5\"",
            "validate = 5, register = maybe",
            "allow_unknown_fields, allow_unknown_fields = false",
            "allow_unknown_fields = \"yes\", allow_unknown_field",
            "crate = \"\"",
            "name = \"a\", name = \"b\", = , ,",
        ];
        let fns = [
            "/// D.\nasync fn read(file_path: String) -> String { file_path }",
            "/// D.\nasync fn r#type(#[input] a: Args, #[arg(default = \"x\")] b: u8) {}",
            "fn f(&self, (a, b): (u8, u8), _: u8, ref c: u8, d @ 1: u8) {}",
            "/// D.\nasync fn g<'a, T>(x: &'a T, y: impl Fn(), z: _, ctx: &mut ToolContext) {}",
            "/// D.\nasync fn h(#[input] #[input(x)] a: Vec<u8>, #[arg] #[arg] b: u8) {}",
            "/// D.\nasync fn i(#[arg(rename = \"\", default, default = 1)] a: u8) {}",
            "/// D.\nasync fn j(#[input] a: Args) -> impl Fn() {}",
            "/// D.\nasync fn é_名() {}",
            "/// D.\nasync fn k(#[input] a: Args) -> String { todo!() }",
            "/// D.\nasync fn s(State(a): State<u8>, State(mut b): State<u8>, State(ref c): \
             State<u8>, State(d): u8, State((e, f)): State<(u8, u8)>, State(): State<u8>, \
             #[input] State(g): State<u8>, #[arg] State(h): State<u8>, Foo(i): Foo) {}",
        ];
        for attr in attrs {
            for source in fns {
                let func: ItemFn = syn::parse_str(source).unwrap();
                let attr_tokens: TokenStream2 = attr.parse().unwrap();
                let out = std::panic::catch_unwind(|| tool_impl(attr_tokens, func.clone()))
                    .unwrap_or_else(|_| panic!("panicked on #[tool({attr})] {source}"))
                    .to_string();
                let name = func.sig.ident.to_string();
                assert!(
                    out.contains(&format!("fn {name}")),
                    "the fn is missing for #[tool({attr})] {source}"
                );
            }
        }
    }

    /// Uses of `ReadTool` elsewhere must find it (rust-analyzer, like rustc past name
    /// resolution, would report each use otherwise): the struct and a `Tool` impl come out
    /// beside the error.
    #[test]
    fn a_wrong_attribute_still_defines_the_tool_struct() {
        let func: ItemFn = syn::parse_str("/// D.\npub async fn read(p: String) {}").unwrap();
        let out = tool_impl("timeout = \"soon\"".parse().unwrap(), func).to_string();
        assert!(out.contains("compile_error"), "{out}");
        assert!(out.contains("pub struct ReadTool"), "{out}");
        assert!(out.contains("Tool for ReadTool"), "{out}");
        // Not registered: the stand-in never runs.
        assert!(!out.contains("inventory"), "{out}");
        // A method's attribute is inside an `impl`, where a struct cannot go.
        let func: ItemFn = syn::parse_str("/// D.\nasync fn read(&self, p: String) {}").unwrap();
        let out = tool_impl(TokenStream2::new(), func).to_string();
        assert!(!out.contains("struct ReadTool"), "{out}");
    }

    #[test]
    fn a_misspelt_allow_unknown_fields_gets_a_suggestion() {
        let func: ItemFn = syn::parse_str("/// D.\nasync fn f(a: u8) {}").unwrap();
        let out = tool_impl("allow_unknown_field".parse().unwrap(), func).to_string();
        assert!(
            out.contains("Did you mean `allow_unknown_fields`?"),
            "{out}"
        );
    }

    #[test]
    fn errors_are_all_reported_together() {
        let func: ItemFn =
            syn::parse_str("fn read(file_path: &str) -> String { todo!() }").unwrap();
        let out = tool_impl("name = \"a b\", title = \"{nope}\"".parse().unwrap(), func);
        let out = out.to_string();
        for expected in [
            "must be an `async fn`",
            "invalid tool name",
            "has no description",
            "instead of `&str`",
            "`{nope}` is not an argument",
        ] {
            assert!(out.contains(expected), "missing {expected:?} in {out}");
        }
    }
}
