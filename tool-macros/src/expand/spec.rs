//! The tool's table (`static __TOOL_SPEC: ToolSpec`), and the one-line impl that makes the
//! struct a `Tool` through the blanket impl in `__private` (see its `spec.rs`).

use proc_macro2::TokenStream;
use quote::quote;
use syn::Ident;

use crate::attr::{ActsOnArg, Hint, ToolFn};
use crate::check::{Piece, Plan, Template};

/// Which of the tool's associated fns exist, for the table's optional entries.
pub struct Fns {
    pub output_shape: bool,
    pub required_state: bool,
    pub validate: bool,
}

/// `static __TOOL_SPEC: ToolSpec = ...`.
pub fn table(
    tool: &ToolFn,
    plan: &Plan,
    struct_ident: &Ident,
    fns: &Fns,
    krate: &TokenStream,
) -> TokenStream {
    let private = quote!(__tool_private);
    let (name, description) = (&plan.name, &plan.description);
    let option = |present: bool, value: TokenStream| match present {
        true => quote!(::core::option::Option::Some(#value)),
        false => quote!(::core::option::Option::None),
    };
    let output_shape = option(fns.output_shape, quote!(#struct_ident::__tool_output_shape));
    let required_state = option(
        fns.required_state,
        quote!(#struct_ident::__tool_required_state),
    );
    let validate = option(fns.validate, quote!(#struct_ident::__tool_validate));
    let hints = hints(tool);
    let acts_on = acts_on(tool, krate);
    let timeout = match plan.timeout_ms {
        Some(ms) => quote!(::core::option::Option::Some(#ms)),
        None => quote!(::core::option::Option::None),
    };
    let category = match &tool.args.category {
        Some(category) => quote!(::core::option::Option::Some(#category)),
        None => quote!(::core::option::Option::None),
    };
    let title = pieces(plan.title.as_ref());
    let permission = pieces(plan.permission.as_ref());
    quote! {
        static __TOOL_SPEC: #private::ToolSpec = #private::ToolSpec {
            name: #name,
            description: #description,
            build_input_schema: #struct_ident::__tool_input_schema,
            input_schema: ::std::sync::OnceLock::new(),
            build_output_shape: #output_shape,
            output_shape: ::std::sync::OnceLock::new(),
            hints: #hints,
            acts_on: #acts_on,
            timeout_ms: #timeout,
            category: #category,
            required_state: #required_state,
            validate: #validate,
            title: #title,
            permission: #permission,
            start: #struct_ident::__tool_start,
        };
    }
}

/// The struct's `Tool` impl is `__private`'s blanket one over `HasSpec`: nothing per tool but
/// the table's address.
pub fn tool_impl(struct_ident: &Ident) -> TokenStream {
    let private = quote!(__tool_private);
    quote! {
        impl #private::HasSpec for #struct_ident {
            #[inline]
            fn spec(&self) -> &'static #private::ToolSpec {
                &__TOOL_SPEC
            }
        }
    }
}

/// A template as its pieces, for the shared renderer.
fn pieces(template: Option<&Template>) -> TokenStream {
    let Some(template) = template else {
        return quote!(::core::option::Option::None);
    };
    let pieces = template.pieces.iter().map(|piece| match piece {
        Piece::Text(text) => quote!(__tool_private::Piece::Text(#text)),
        Piece::Arg { json, .. } => quote!(__tool_private::Piece::Arg(#json)),
    });
    quote!(::core::option::Option::Some(&[#(#pieces),*]))
}

fn acts_on(tool: &ToolFn, krate: &TokenStream) -> TokenStream {
    match &tool.args.acts_on {
        None => quote!(#krate::ActsOn::Unspecified),
        Some(ActsOnArg::AgentState) => quote!(#krate::ActsOn::AgentState),
        Some(ActsOnArg::Reads(field)) => quote!(#krate::ActsOn::ReadsPath(#field)),
        Some(ActsOnArg::Writes(field)) => quote!(#krate::ActsOn::WritesPath(#field)),
        Some(ActsOnArg::Shell(field)) => quote!(#krate::ActsOn::ShellCommand(#field)),
        Some(ActsOnArg::Url(field)) => quote!(#krate::ActsOn::FetchesUrl(#field)),
    }
}

fn hints(tool: &ToolFn) -> TokenStream {
    let hint = |hint: Option<Hint>| match hint {
        Some(hint) => {
            let value = hint.value;
            quote!(::core::option::Option::Some(#value))
        }
        None => quote!(::core::option::Option::None),
    };
    let read_only = hint(tool.args.read_only);
    let destructive = hint(tool.args.destructive);
    let idempotent = hint(tool.args.idempotent);
    let open_world = hint(tool.args.open_world);
    quote! {
        __tool_private::Hints {
            read_only: #read_only,
            destructive: #destructive,
            idempotent: #idempotent,
            open_world: #open_world,
        }
    }
}
