//! Typed output: the output schema of a tool whose fn returns `Json<T>`.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, ReturnType};

use crate::attr::ToolFn;

/// The output shape of a tool whose return type carries `Json<T>` (probed by type, so that a
/// renamed import or a type alias still counts), and the `output_schema` method that reads it.
/// Other return types probe to no shape; a fn without a return type gets neither.
pub fn output_shape(
    tool: &ToolFn,
    struct_ident: &Ident,
    krate: &TokenStream,
) -> (TokenStream, TokenStream) {
    let private = quote!(#krate::__private);
    let ReturnType::Type(_, ty) = &tool.func.sig.output else {
        return (TokenStream::new(), TokenStream::new());
    };
    // A `T` that is not `JsonSchema` is reported at the return type.
    let shape = quote_spanned! {ty.span()=>
        {
            let tag = (&&#private::Tag::<#ty>::of_type()).__tool_output_shape_tag();
            let probe = (&&tag.inner()).__tool_schema_tag();
            tag.shape(probe)
        }
    };
    let shape_fn = quote! {
        impl #struct_ident {
            fn __tool_output_shape() -> ::core::option::Option<&'static #private::OutputShape> {
                static SHAPE: ::std::sync::OnceLock<
                    ::core::option::Option<#private::OutputShape>,
                > = ::std::sync::OnceLock::new();
                #private::output_shape_once(&SHAPE, || #shape)
            }
        }
    };
    let method = quote! {
        fn output_schema(&self) -> ::core::option::Option<&#private::serde_json::Value> {
            Self::__tool_output_shape().map(|shape| &shape.schema)
        }
    };
    (shape_fn, method)
}
