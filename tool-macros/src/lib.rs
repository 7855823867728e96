//! The `#[tool]` attribute. Use it through `tool_sdk::tool`; its documentation lives there.
//!
//! Three stages, one file each: `attr` parses into a typed model, `check` validates it
//! with spanned errors collected together, `expand` generates code. Whatever goes wrong, the
//! original fn is emitted too, so the rest of the crate keeps type-checking.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::quote;
use syn::ItemFn;

mod attr;
mod check;
mod expand;

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
    if !errors.is_empty() {
        let errors = errors.iter().map(syn::Error::to_compile_error);
        return quote!(#original #(#errors)*);
    }
    let krate = crate_path(model.args.krate.as_ref());
    let generated = expand::expand(&model, &plan, &krate);
    quote!(#original #generated)
}

/// `::tool_sdk`, or whatever the user renamed the dependency to, or `crate = path`.
fn crate_path(explicit: Option<&syn::Path>) -> TokenStream2 {
    use proc_macro_crate::{FoundCrate, crate_name};
    if let Some(path) = explicit {
        return quote!(#path);
    }
    match crate_name("tool-sdk") {
        Ok(FoundCrate::Name(name)) => {
            let ident = syn::Ident::new(&name, proc_macro2::Span::call_site());
            quote!(::#ident)
        }
        // Inside tool-sdk itself `extern crate self as tool_sdk` makes the absolute path work.
        Ok(FoundCrate::Itself) | Err(_) => quote!(::tool_sdk),
    }
}
