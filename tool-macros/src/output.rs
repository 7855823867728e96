//! Typed output: the output schema of a tool whose fn returns `Json<T>`.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::ReturnType;
use syn::spanned::Spanned;

use crate::attr::ToolFn;

/// The output shape of a tool whose return type carries `Json<T>` (probed by type, so that a
/// renamed import or a type alias still counts), built by `__tool_output_shape` for the tool's
/// table. Other return types probe to no shape; a fn without a return type gets no fn.
pub fn output_shape(tool: &ToolFn) -> Option<TokenStream> {
    let private = quote!(__tool_private);
    let ReturnType::Type(_, ty) = &tool.func.sig.output else {
        return None;
    };
    // A `T` that is not `JsonSchema` is reported at the return type.
    let shape = quote_spanned! {ty.span()=>
        {
            let tag = (&&#private::Tag::<#ty>::of_type()).__tool_output_shape_tag();
            let probe = (&&tag.inner()).__tool_schema_tag();
            tag.shape(probe)
        }
    };
    Some(quote! {
        #[doc(hidden)]
        fn __tool_output_shape() -> ::core::option::Option<#private::OutputShape> {
            #shape
        }
    })
}
