//! What is emitted when the attribute has errors: the fn, the errors, and a stand-in for the
//! tool struct (thiserror's `fallback.rs` does the same for a derive), so that each mistake is
//! reported once, at the attribute, and not again at every use of `ReadTool` in the crate.

use proc_macro2::TokenStream;
use quote::quote;
use syn::Ident;

use crate::attr::ToolFn;
use crate::check::Plan;

/// The tool struct, implementing `Tool` with bodies that never run: the crate does not
/// compile while the errors stand.
pub fn fallback(tool: &ToolFn, plan: &Plan, krate: &TokenStream) -> TokenStream {
    // A method (`&self`) is inside an `impl`, where no struct can go.
    let method = matches!(tool.func.sig.inputs.first(), Some(syn::FnArg::Receiver(_)));
    let Ok(struct_ident) = syn::parse_str::<Ident>(&plan.struct_name) else {
        return TokenStream::new();
    };
    if method {
        return TokenStream::new();
    }
    let vis = &tool.func.vis;
    let private = quote!(#krate::__private);
    quote! {
        #[allow(missing_docs)]
        #[derive(::core::clone::Clone, ::core::marker::Copy, ::core::fmt::Debug, ::core::default::Default)]
        #vis struct #struct_ident;

        #[allow(non_local_definitions)]
        const _: () = {
            impl #krate::Tool for #struct_ident {
                fn name(&self) -> &str {
                    ::core::unreachable!()
                }

                fn description(&self) -> &str {
                    ::core::unreachable!()
                }

                fn input_schema(&self) -> &#private::serde_json::Value {
                    ::core::unreachable!()
                }

                fn call<'__tool>(
                    &'__tool self,
                    _: #private::serde_json::Value,
                    _: &'__tool #krate::ToolContext,
                ) -> #krate::BoxFuture<'__tool, #krate::ToolResult> {
                    ::core::unreachable!()
                }
            }
        };
    }
}
