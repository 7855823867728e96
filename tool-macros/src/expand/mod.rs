//! Stage 3: turn a checked model into code.
//!
//! `mod.rs` writes the tool struct and the fns that must know the tool's types (input schema,
//! output shape, required state, validation, and `__tool_start`, which starts a call), `spec`
//! the `static ToolSpec` table of the tool and its `Tool` impl that reads it, `input` the
//! parameter struct and its schema, `call` the body of `__tool_start`, `fallback` the
//! stand-in emitted when the attribute has errors.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, ItemFn, Type};

use crate::attr::{ParamKind, ToolFn, is_data, unraw};
use crate::check::{InputShape, Plan};

mod call;
mod fallback;
mod input;
mod spec;

pub use fallback::fallback;

/// A variable of the generated code. `Span::mixed_site()` makes it hygienic the way a
/// `macro_rules!` local is: it can neither shadow nor be shadowed by the user's names, so a
/// parameter named like its fn (`search(search: String)`) or like one of these still works.
/// Every use must come from here too: an ident with another span does not see the binding.
fn local(name: &str) -> Ident {
    Ident::new(name, Span::mixed_site())
}

/// [`local`], reported at `span` when the compiler points at it (hygiene comes from
/// `mixed_site`, the location from `span`).
fn local_at(name: &str, span: Span) -> Ident {
    Ident::new(name, Span::mixed_site().located_at(span))
}

/// What `expr?` does where the error is a `ToolError` already, without the two generic calls
/// into `Try` a debug build makes for each `?`.
fn try_ok(expr: TokenStream) -> TokenStream {
    let (value, error) = (local("__tool_ok"), local("__tool_err"));
    quote! {
        match #expr {
            ::core::result::Result::Ok(#value) => #value,
            ::core::result::Result::Err(#error) => return ::core::result::Result::Err(#error),
        }
    }
}

/// Everything generated for one tool, after the fn itself.
pub fn expand(tool: &ToolFn, plan: &Plan, krate: &TokenStream) -> TokenStream {
    let func = &tool.func;
    let vis = &func.vis;
    let fn_ident = &func.sig.ident;
    let struct_ident = Ident::new(&plan.struct_name, fn_ident.span());
    let private = quote!(__tool_private);

    let (input_ty, input_struct, input_impls, input_schema) =
        input_parts(tool, plan, &struct_ident, krate);

    let name = &plan.name;
    let struct_doc = format!(
        "The `{name}` tool: implements [`Tool`]({krate_doc}::Tool) by calling [`{fn_ident}`].",
        krate_doc = krate.to_string().replace(' ', "")
    );

    let start = call::start_body(tool, plan, &input_ty);
    let convert = call::convert_fn(tool, krate);
    let output_shape = crate::output::output_shape(tool);
    let required_state = required_state(tool, plan, &input_ty, krate);
    let validate = validate(tool, plan, &input_ty, krate);
    let fns = spec::Fns {
        output_shape: output_shape.is_some(),
        required_state: required_state.is_some(),
        validate: validate.is_some(),
    };
    let table = spec::table(tool, plan, &struct_ident, &fns, krate);
    let tool_impl = spec::tool_impl(&struct_ident);
    let (input, ctx) = (local("__tool_input"), local("__tool_ctx"));
    let assertions = call::assertions(tool, plan);
    let registration = registration(tool, plan);

    quote! {
        #[doc = #struct_doc]
        #[derive(::core::clone::Clone, ::core::marker::Copy, ::core::fmt::Debug, ::core::default::Default)]
        #vis struct #struct_ident;

        #input_struct

        #[allow(non_local_definitions)]
        const _: () = {
            // One short name for the support code, at every use below: less to emit and parse.
            use #krate::__private as __tool_private;
            #[allow(unused_imports)]
            use #private::{ViaDisplay as _, ViaPlain as _, ViaResult as _, ViaSerialize as _,
                ViaToolError as _, ViaToolOutput as _, ViaJsonSchema as _, ViaNoSchema as _,
                ViaJsonReturn as _, ViaPlainReturn as _, ViaInjected as _, ViaArgument as _};

            #input_impls

            // Named fns, not closures: a closure made a fn pointer compiles a shim besides.
            impl #struct_ident {
                #[doc(hidden)]
                fn __tool_input_schema() -> #private::serde_json::Value {
                    #input_schema
                }

                #output_shape
                #required_state
                #validate

                #convert

                /// Reads the arguments and takes the injected values, then returns the fn's
                /// future in the one call future all tools share (`__private::Finish`).
                #[doc(hidden)]
                fn __tool_start<'__tool>(
                    #input: #private::serde_json::Value,
                    #ctx: &'__tool #krate::ToolContext,
                ) -> ::core::result::Result<
                    #krate::BoxFuture<'__tool, #krate::ToolResult>,
                    #krate::ToolError,
                > {
                    #start
                }
            }

            #table
            #tool_impl
            #assertions
            #registration
        };
    }
}

/// The input's type, the parameter struct and its impls (none for `#[input]`), and the code
/// that builds the input schema.
fn input_parts(
    tool: &ToolFn,
    plan: &Plan,
    struct_ident: &Ident,
    krate: &TokenStream,
) -> (TokenStream, TokenStream, TokenStream, TokenStream) {
    let private = quote!(__tool_private);
    match plan.input {
        InputShape::Params => {
            let ident = format_ident!("{}Input", struct_ident);
            let (definition, impls) = input::input_struct(tool, &ident, struct_ident, krate);
            let name = ident.to_string();
            let schema = quote! {
                #private::params_schema(
                    #name,
                    <#ident as #private::schemars::JsonSchema>::json_schema,
                )
            };
            (quote!(#ident), definition, impls, schema)
        }
        InputShape::Struct(index) => {
            let ty = &tool.params[index].ty;
            // Probed, not bound: see `call::assertions`.
            let allow_unknown = allow_unknown_fields(tool);
            let schema = quote! {
                (&&#private::Tag::<#ty>::of_type())
                    .__tool_schema_tag()
                    .input_schema::<#ty>(#allow_unknown)
            };
            (quote!(#ty), TokenStream::new(), TokenStream::new(), schema)
        }
    }
}

/// `Tool::required_state`: what the injected parameters' extractors need. Which parameters
/// are injected is only known to the type checker, so the parameter table says.
fn required_state(
    tool: &ToolFn,
    plan: &Plan,
    input_ty: &TokenStream,
    krate: &TokenStream,
) -> Option<TokenStream> {
    let private = quote!(__tool_private);
    let requirements = match plan.input {
        // Arguments of std data types need no state: only other types may be extractors.
        InputShape::Params
            if tool
                .params
                .iter()
                .all(|p| matches!(p.kind, ParamKind::Arg { .. }) && is_data(&p.ty)) =>
        {
            return None;
        }
        InputShape::Params => quote!(#private::required_state(&#input_ty::__tool_params())),
        InputShape::Struct(_) => {
            let injected: Vec<&Type> = tool
                .params
                .iter()
                .filter(|p| !matches!(p.kind, ParamKind::Input))
                .map(|p| &p.ty)
                .collect();
            if injected.is_empty() {
                return None;
            }
            // Through the probe: a type that is not an extractor is reported once, where the
            // call takes it.
            quote! {
                ::core::iter::IntoIterator::into_iter([
                    #((&&#private::Tag::<#injected>::of_type()).__tool_param_tag().required::<#injected>()),*
                ])
                .flatten()
                .collect()
            }
        }
    };
    Some(quote! {
        #[doc(hidden)]
        fn __tool_required_state() -> ::std::vec::Vec<#krate::StateRequirement> {
            #requirements
        }
    })
}

/// `validate = path`: the tool's own check, on the parsed input.
fn validate(
    tool: &ToolFn,
    plan: &Plan,
    input_ty: &TokenStream,
    krate: &TokenStream,
) -> Option<TokenStream> {
    let private = quote!(__tool_private);
    let path = tool.args.validate.as_ref()?;
    let span = path.span();
    let (input, ctx) = (local_at("__tool_input", span), local_at("__tool_ctx", span));
    let (args, error) = (
        local_at("__tool_args", span),
        local_at("__tool_error", span),
    );
    let parse = match plan.input {
        // Injected fields come from the context.
        InputShape::Params => quote! {
            #input_ty::__tool_parse(
                ::core::clone::Clone::clone(#input),
                ::core::option::Option::Some(#ctx),
            )?
        },
        InputShape::Struct(_) => quote!(#private::parse_input_ref(#input)?),
    };
    Some(quote_spanned! {span=>
        #[doc(hidden)]
        fn __tool_validate<'__tool>(
            #input: &'__tool #private::serde_json::Value,
            #ctx: &'__tool #krate::ToolContext,
        ) -> #krate::BoxFuture<'__tool, ::core::result::Result<(), #krate::ToolError>> {
            ::std::boxed::Box::pin(async move {
                let #args: #input_ty = #parse;
                match #path(&#args, #ctx).await {
                    ::core::result::Result::Ok(()) => ::core::result::Result::Ok(()),
                    ::core::result::Result::Err(#error) => ::core::result::Result::Err(
                        (&&#private::Tag::of(&#error)).__tool_error_tag().invalid_input(::core::convert::identity(#error)),
                    ),
                }
            })
        }
    })
}

/// The tool's entry in the global registry, unless `register = false`.
fn registration(tool: &ToolFn, plan: &Plan) -> Option<TokenStream> {
    if !tool.args.register.is_none_or(|hint| hint.value) {
        return None;
    }
    let private = quote!(__tool_private);
    let name = &plan.name;
    let fn_name = unraw(&tool.func.sig.ident);
    // The table, not a constructor: the registry makes every `#[tool]` the one `SpecTool`.
    Some(quote! {
        #private::inventory::submit! {
            #private::ToolRegistration::from_spec(
                #name,
                ::core::concat!(::core::module_path!(), "::", #fn_name),
                ::core::file!(),
                ::core::line!(),
                &__TOOL_SPEC,
            )
        }
    })
}

/// `allow_unknown_fields`: keys the input does not name are accepted (and ignored).
fn allow_unknown_fields(tool: &ToolFn) -> bool {
    tool.args
        .allow_unknown_fields
        .is_some_and(|hint| hint.value)
}

/// The fn as the user wrote it, for the error path too.
pub fn original(func: &ItemFn) -> TokenStream {
    quote!(#func)
}
