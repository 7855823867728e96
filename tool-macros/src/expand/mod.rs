//! Stage 3: turn a checked model into code.
//!
//! `mod.rs` writes the tool struct and its `Tool` impl, `input` the parameter struct and its
//! schema, `call` the body of `Tool::call`, `fallback` the stand-in emitted when the
//! attribute has errors.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, ItemFn, Type};

use crate::attr::{ActsOnArg, Hint, ParamKind, ToolFn, is_data, unraw};
use crate::check::{InputShape, Plan};

mod call;
mod fallback;
mod input;

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

/// Everything generated for one tool, after the fn itself.
pub fn expand(tool: &ToolFn, plan: &Plan, krate: &TokenStream) -> TokenStream {
    let func = &tool.func;
    let vis = &func.vis;
    let fn_ident = &func.sig.ident;
    let struct_ident = Ident::new(&plan.struct_name, fn_ident.span());
    let private = quote!(#krate::__private);

    let (input_ty, input_struct, input_impls, input_schema) =
        input_parts(tool, plan, &struct_ident, krate);

    let name = &plan.name;
    let description = &plan.description;
    let struct_doc = format!(
        "The `{name}` tool: implements [`Tool`]({krate_doc}::Tool) by calling [`{fn_ident}`].",
        krate_doc = krate.to_string().replace(' ', "")
    );

    let call = call::call_body(tool, plan, &input_ty, krate);
    let (output_shape, output_schema) = crate::output::output_shape(tool, &struct_ident, krate);
    let methods = optional_methods(tool, plan, &input_ty, krate);
    let annotations = annotations(tool, krate);
    let read_only = tool.args.read_only.is_some_and(|hint| hint.value);
    let (input, ctx) = (local("__tool_input"), local("__tool_ctx"));
    let assertions = call::assertions(tool, plan, krate);
    let registration = registration(tool, plan, &struct_ident, krate);

    quote! {
        #[doc = #struct_doc]
        #[derive(::core::clone::Clone, ::core::marker::Copy, ::core::fmt::Debug, ::core::default::Default)]
        #vis struct #struct_ident;

        #input_struct

        #[allow(non_local_definitions)]
        const _: () = {
            #[allow(unused_imports)]
            use #private::{ViaDisplay as _, ViaPlain as _, ViaResult as _, ViaSerialize as _,
                ViaToolError as _, ViaToolOutput as _, ViaJsonSchema as _, ViaNoSchema as _,
                ViaJsonReturn as _, ViaPlainReturn as _, ViaInjected as _, ViaArgument as _};

            #input_impls
            #output_shape

            impl #krate::Tool for #struct_ident {
                fn name(&self) -> &str {
                    #name
                }

                fn description(&self) -> &str {
                    #description
                }

                fn input_schema(&self) -> &#private::serde_json::Value {
                    static SCHEMA: ::std::sync::OnceLock<#private::serde_json::Value> =
                        ::std::sync::OnceLock::new();
                    #private::schema_once(&SCHEMA, || #input_schema)
                }

                #output_schema

                fn annotations(&self) -> #krate::ToolAnnotations {
                    #annotations
                }

                fn is_read_only(&self) -> bool {
                    #read_only
                }

                #methods

                // A tool returning `()` passes it to `identity` (see `call_body`).
                #[allow(clippy::unit_arg)]
                fn call<'__tool>(
                    &'__tool self,
                    #input: #private::serde_json::Value,
                    #ctx: &'__tool #krate::ToolContext,
                ) -> #krate::BoxFuture<'__tool, #krate::ToolResult> {
                    ::std::boxed::Box::pin(async move { #call })
                }
            }

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
    let private = quote!(#krate::__private);
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

/// The `Tool` methods whose defaults a key of `#[tool(...)]` (or a parameter) overrides.
fn optional_methods(
    tool: &ToolFn,
    plan: &Plan,
    input_ty: &TokenStream,
    krate: &TokenStream,
) -> TokenStream {
    let private = quote!(#krate::__private);
    let timeout = plan.timeout_ms.map(|ms| {
        quote! {
            fn timeout(&self) -> ::core::option::Option<::core::time::Duration> {
                ::core::option::Option::Some(::core::time::Duration::from_millis(#ms))
            }
        }
    });
    let acts_on = tool.args.acts_on.as_ref().map(|acts_on| {
        let value = match acts_on {
            ActsOnArg::AgentState => quote!(#krate::ActsOn::AgentState),
            ActsOnArg::Reads(field) => quote!(#krate::ActsOn::ReadsPath(#field)),
            ActsOnArg::Writes(field) => quote!(#krate::ActsOn::WritesPath(#field)),
            ActsOnArg::Shell(field) => quote!(#krate::ActsOn::ShellCommand(#field)),
            ActsOnArg::Url(field) => quote!(#krate::ActsOn::FetchesUrl(#field)),
        };
        quote! {
            fn acts_on(&self) -> #krate::ActsOn {
                #value
            }
        }
    });
    let category = tool.args.category.as_ref().map(|category| {
        quote! {
            fn category(&self) -> ::core::option::Option<&str> {
                ::core::option::Option::Some(#category)
            }
        }
    });
    let required_state = required_state(tool, plan, input_ty, krate);
    let validate = validate(tool, plan, input_ty, krate);
    let input = local("__tool_input");
    let display_title = plan.title.as_ref().map(|title| {
        let render = call::render(title, krate);
        quote! {
            fn display_title(&self, #input: &#private::serde_json::Value) -> ::std::string::String {
                #render
            }
        }
    });
    let permission_prompt = plan.permission.as_ref().map(|permission| {
        let render = call::render(permission, krate);
        quote! {
            fn permission_prompt(
                &self,
                #input: &#private::serde_json::Value,
            ) -> #krate::PermissionPrompt {
                #krate::PermissionPrompt {
                    title: { #render },
                    summary: ::core::option::Option::None,
                    content: ::core::clone::Clone::clone(#input),
                }
            }
        }
    });
    quote! {
        #timeout
        #acts_on
        #category
        #required_state
        #validate
        #display_title
        #permission_prompt
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
    let private = quote!(#krate::__private);
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
        fn required_state(&self) -> ::std::vec::Vec<#krate::StateRequirement> {
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
    let private = quote!(#krate::__private);
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
        fn validate_input<'__tool>(
            &'__tool self,
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
fn registration(
    tool: &ToolFn,
    plan: &Plan,
    struct_ident: &Ident,
    krate: &TokenStream,
) -> Option<TokenStream> {
    if !tool.args.register.is_none_or(|hint| hint.value) {
        return None;
    }
    let private = quote!(#krate::__private);
    let name = &plan.name;
    let fn_name = unraw(&tool.func.sig.ident);
    // In a block of its own, so that `__tool_make` cannot shadow a user's fn of that name in
    // the code around it.
    Some(quote! {
        const _: () = {
            fn __tool_make() -> ::std::sync::Arc<dyn #krate::Tool> {
                ::std::sync::Arc::new(#struct_ident)
            }
            #private::inventory::submit! {
                #private::ToolRegistration::new(
                    #name,
                    ::core::concat!(::core::module_path!(), "::", #fn_name),
                    ::core::file!(),
                    ::core::line!(),
                    __tool_make,
                )
            }
        };
    })
}

/// `allow_unknown_fields`: keys the input does not name are accepted (and ignored).
fn allow_unknown_fields(tool: &ToolFn) -> bool {
    tool.args
        .allow_unknown_fields
        .is_some_and(|hint| hint.value)
}

fn annotations(tool: &ToolFn, krate: &TokenStream) -> TokenStream {
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
        #krate::ToolAnnotations {
            read_only: #read_only,
            destructive: #destructive,
            idempotent: #idempotent,
            open_world: #open_world,
            ..::core::default::Default::default()
        }
    }
}

/// The fn as the user wrote it, for the error path too.
pub fn original(func: &ItemFn) -> TokenStream {
    quote!(#func)
}
