//! The body of the fn that starts a call, and the checks the compiler makes on the macro's
//! behalf.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, ReturnType};

use super::{local, local_at, try_ok};
use crate::attr::{ParamKind, ToolFn};
use crate::check::{InputShape, Piece, Plan};

/// The body of `__tool_start`: parse, inject, call; the conversion of the value
/// ([`convert_fn`]) comes after the fn's future, in the shared `Finish`.
pub fn start_body(tool: &ToolFn, plan: &Plan, input_ty: &TokenStream) -> TokenStream {
    let private = quote!(__tool_private);
    let fn_ident = &tool.func.sig.ident;
    let (input, ctx, args) = (
        local("__tool_input"),
        local("__tool_ctx"),
        local("__tool_args"),
    );
    // Each argument is bound to a local of ours, so none of them can shadow the fn being
    // called.
    let ctx_opt = local("__tool_context");
    let (object, reads) = match (&plan.input, syn::parse2::<Ident>(input_ty.clone())) {
        (InputShape::Params, Ok(input_ident)) => {
            super::input::read_args(tool, &input_ident, &ctx_opt)
        }
        _ => (TokenStream::new(), Vec::new()),
    };
    let mut reads = reads.into_iter();
    let mut prelude = Vec::new();
    let mut call_args = Vec::new();
    let mut fields = Vec::new();
    for (index, param) in tool.params.iter().enumerate() {
        let value = local(&format!("__tool_param{index}"));
        let ty = &param.ty;
        let span = ty.span();
        let inject = |method: &str| {
            let method = Ident::new(method, span);
            let (value, ctx) = (
                local_at(&value.to_string(), span),
                local_at("__tool_ctx", span),
            );
            let taken = try_ok(quote_spanned! {span=>
                (&&#private::Tag::<#ty>::of_type())
                    .__tool_param_tag()
                    .#method::<#ty>(#ctx)
            });
            quote!(let #value = #taken;)
        };
        match (&param.kind, &plan.input) {
            (ParamKind::Input, _) => call_args.push(quote!(#args)),
            (ParamKind::Arg { .. }, InputShape::Params) => {
                let read = reads.next().expect("one read a by-value parameter");
                fields.push(quote!(let #value = #read;));
                call_args.push(quote!(#value));
            }
            (ParamKind::Arg { .. }, InputShape::Struct(_)) => {
                prelude.push(inject("inject_beside_input"));
                call_args.push(quote!(#value));
            }
            (ParamKind::Injected, _) => {
                prelude.push(inject("inject"));
                call_args.push(quote!(#value));
            }
        }
    }
    let parsed = try_ok(quote!(#private::parse_input(#input)));
    let parse = match plan.input {
        InputShape::Params => {
            quote! {
                let #ctx_opt = ::core::option::Option::Some(#ctx);
                #object
                #(#fields)*
            }
        }
        InputShape::Struct(_) => quote! {
            let #args: #input_ty = #parsed;
        },
    };
    quote! {
        #parse
        #(#prelude)*
        ::core::result::Result::Ok(__TOOL_SPEC.finish(
            #fn_ident(#(#call_args),*),
            Self::__tool_convert,
        ))
    }
}

/// `fn __tool_convert(value: <the fn's return type>) -> ToolResult`: a named fn, not a
/// closure (a closure made a fn pointer compiles a shim besides). The return type can be
/// written as the parameter's: `check` refused `impl Trait`, lifetime parameters and
/// receivers, and an elided lifetime is a fresh one in that position.
pub fn convert_fn(tool: &ToolFn, krate: &TokenStream) -> TokenStream {
    let fn_ident = &tool.func.sig.ident;
    let (return_span, return_ty) = match &tool.func.sig.output {
        ReturnType::Default => (fn_ident.span(), quote!(())),
        ReturnType::Type(_, ty) => (ty.span(), quote!(#ty)),
    };
    let (ret, value, error) = (
        local_at("__tool_return", return_span),
        local_at("__tool_value", return_span),
        local_at("__tool_error", return_span),
    );
    // `identity(x)` rather than `x`: the compiler reports an unsatisfied bound at the argument,
    // and a hygienic local is reported at the macro call whatever its location; the call
    // expression carries the return type's span, so the error points there.
    let convert = quote_spanned! {return_span=>
        match (&&__tool_private::Tag::of(&#ret)).__tool_return_tag().split(#ret) {
            ::core::result::Result::Ok(#value) => {
                (&&__tool_private::Tag::of(&#value)).__tool_output_tag().convert(::core::convert::identity(#value))
            }
            ::core::result::Result::Err(#error) => ::core::result::Result::Err(
                (&&__tool_private::Tag::of(&#error)).__tool_error_tag().convert(::core::convert::identity(#error)),
            ),
        }
    };
    // A tool returning `()` passes it to `identity`; a plain value's error is `Infallible`,
    // whose arm is unreachable; the probes borrow the value whatever its type (`&&str` for a
    // `&'static str`).
    quote! {
        #[doc(hidden)]
        #[allow(clippy::unit_arg, clippy::needless_borrow, unreachable_code)]
        fn __tool_convert(#ret: #return_ty) -> #krate::ToolResult {
            #convert
        }
    }
}

/// Checks the compiler makes on our behalf, each pointing at the user's tokens.
pub fn assertions(tool: &ToolFn, plan: &Plan) -> TokenStream {
    let private = quote!(__tool_private);
    let mut checks = Vec::new();
    for param in &tool.params {
        let ty = &param.ty;
        // Arguments are checked where they are used: that the type is `Deserialize` where its
        // field is read, that it is `JsonSchema` where its schema is looked up
        // (`input::Field::spec`); injected ones where they are taken from the context.
        if let ParamKind::Input = param.kind {
            checks.push(quote_spanned! {ty.span()=>
                #private::assert_input::<#ty>();
                #private::assert_input_schema::<#ty, _>(
                    (&&#private::Tag::<#ty>::of_type()).__tool_schema_tag(),
                );
            });
        }
    }
    if let InputShape::Struct(index) = plan.input {
        let ty = &tool.params[index].ty;
        for template in plan.title.iter().chain(&plan.permission) {
            for piece in &template.pieces {
                // check.rs let only identifiers through.
                if let Piece::Arg { rust, .. } = piece
                    && let Ok(mut field) = syn::parse_str::<Ident>(rust)
                {
                    field.set_span(template.span);
                    checks.push(quote_spanned! {template.span=>
                        let _ = |__tool_args: &#ty| { let _ = &__tool_args.#field; };
                    });
                }
            }
        }
    }
    if checks.is_empty() {
        return TokenStream::new();
    }
    // In a block of its own, like the registration.
    quote! {
        const _: () = {
            #[allow(dead_code, clippy::all)]
            fn __tool_assertions() {
                #(#checks)*
            }
        };
    }
}
