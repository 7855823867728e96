//! Stage 3: turn a checked model into code.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, Ident, ItemFn, Lit, ReturnType, Type};

use crate::attr::{ActsOnArg, DefaultExpr, Hint, ParamKind, ToolFn, unraw};
use crate::check::{InputShape, Piece, Plan, Template};

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

    let (input_ty, input_struct, field_schemas, input_schema) = match plan.input {
        InputShape::Params => {
            let ident = format_ident!("{}Input", struct_ident);
            let (definition, field_schemas) = input_struct(tool, &ident, &struct_ident, krate);
            let name = ident.to_string();
            let schema = quote! {
                #private::params_schema(
                    #name,
                    <#ident as #private::schemars::JsonSchema>::json_schema,
                )
            };
            (quote!(#ident), definition, field_schemas, schema)
        }
        InputShape::Struct(index) => {
            let ty = &tool.params[index].ty;
            // Probed, not bound: see `assertions`.
            let allow_unknown = allow_unknown_fields(tool);
            let schema = quote! {
                (&&#private::Tag::<#ty>::of_type())
                    .__tool_schema_tag()
                    .input_schema::<#ty>(#allow_unknown)
            };
            (quote!(#ty), TokenStream::new(), TokenStream::new(), schema)
        }
    };

    let name = &plan.name;
    let description = &plan.description;
    let struct_doc = format!(
        "The `{name}` tool: implements [`Tool`]({krate_doc}::Tool) by calling [`{fn_ident}`].",
        krate_doc = krate.to_string().replace(' ', "")
    );

    let call = call_body(tool, plan, &input_ty, krate);
    let (output_shape, output_schema) = crate::output::output_shape(tool, &struct_ident, krate);
    let annotations = annotations(tool, krate);
    let read_only = tool.args.read_only.is_some_and(|hint| hint.value);
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
    let state_types: Vec<&Type> = tool
        .params
        .iter()
        .filter(|p| matches!(p.kind, ParamKind::State))
        .map(|p| &p.ty)
        .collect();
    let required_state = (!state_types.is_empty()).then(|| {
        quote! {
            fn required_state(&self) -> ::std::vec::Vec<#krate::StateRequirement> {
                ::std::vec![#(<#state_types>::requirement()),*]
            }
        }
    });
    let (input, ctx) = (local("__tool_input"), local("__tool_ctx"));
    let validate = tool.args.validate.as_ref().map(|path| {
        let span = path.span();
        let (input, ctx) = (local_at("__tool_input", span), local_at("__tool_ctx", span));
        let (args, error) = (
            local_at("__tool_args", span),
            local_at("__tool_error", span),
        );
        quote_spanned! {path.span()=>
            fn validate_input<'__tool>(
                &'__tool self,
                #input: &'__tool #private::serde_json::Value,
                #ctx: &'__tool #krate::ToolContext,
            ) -> #krate::BoxFuture<'__tool, ::core::result::Result<(), #krate::ToolError>> {
                ::std::boxed::Box::pin(async move {
                    let #args: #input_ty = #private::parse_input_ref(#input)?;
                    match #path(&#args, #ctx).await {
                        ::core::result::Result::Ok(()) => ::core::result::Result::Ok(()),
                        ::core::result::Result::Err(#error) => ::core::result::Result::Err(
                            (&&#private::Tag::of(&#error)).__tool_error_tag().invalid_input(::core::convert::identity(#error)),
                        ),
                    }
                })
            }
        }
    });
    let display_title = plan.title.as_ref().map(|title| {
        let render = render(title, krate);
        quote! {
            fn display_title(&self, #input: &#private::serde_json::Value) -> ::std::string::String {
                #render
            }
        }
    });
    let permission_prompt = plan.permission.as_ref().map(|permission| {
        let render = render(permission, krate);
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
    let assertions = assertions(tool, plan, krate);
    let registration = tool.args.register.is_none_or(|hint| hint.value).then(|| {
        let fn_name = unraw(fn_ident);
        // In a block of its own, so that `__tool_make` cannot shadow a user's fn of that name
        // in the code around it.
        quote! {
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
        }
    });

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
                ViaJsonReturn as _, ViaPlainReturn as _};

            #field_schemas
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

                #timeout
                #acts_on
                #category
                #required_state
                #validate
                #display_title
                #permission_prompt

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

/// `allow_unknown_fields`: keys the input does not name are accepted (and ignored).
fn allow_unknown_fields(tool: &ToolFn) -> bool {
    tool.args
        .allow_unknown_fields
        .is_some_and(|hint| hint.value)
}

/// `struct ReadToolInput { ... }` for the parameter form, and its `JsonSchema` impl (to go
/// where the schema probe's traits are in scope).
///
/// The impl is written out rather than derived: the derive would require `JsonSchema` of each
/// field's type (if the type is not `JsonSchema`, the one error must be the assertion's, which
/// says what to derive), and it would compile schemars' generic code once per field. Instead
/// each field's schema functions are looked up by the probe (`SchemaFns`, generic only in the
/// type) and one non-generic fn in `__private` builds the schema the derive would.
fn input_struct(
    tool: &ToolFn,
    ident: &Ident,
    struct_ident: &Ident,
    krate: &TokenStream,
) -> (TokenStream, TokenStream) {
    let private = quote!(#krate::__private);
    let vis = &tool.func.vis;
    let doc = format!("The input of [`{struct_ident}`]: the arguments the model sends.");
    let mut fields = Vec::new();
    let mut defaults = Vec::new();
    let mut field_schemas = Vec::new();
    let mut names = Vec::new();
    let mut takes = Vec::new();
    for param in &tool.params {
        let ParamKind::Arg { doc, options } = &param.kind else {
            continue;
        };
        let field = &param.ident;
        let ty = &param.ty;
        let mut attrs = Vec::new();
        if let Some(doc) = doc {
            attrs.push(quote!(#[doc = #doc]));
        }
        // Title and description as schemars' derive takes them from `#[doc = ...]`: one
        // leading space dropped, then split by its (const) rule.
        let split = |part| {
            let doc = doc
                .as_deref()
                .map(|doc| doc.strip_prefix(' ').unwrap_or(doc));
            match doc {
                Some(doc) => quote!({
                    const PART: &str =
                        #private::schemars::_private::get_title_and_description(#doc).#part;
                    PART
                }),
                None => quote!(""),
            }
        };
        let title = split(syn::Index::from(0));
        let description = match &options.description {
            Some(description) => quote!(#description),
            None => split(syn::Index::from(1)),
        };
        let name = match &options.rename {
            Some(rename) => rename.value(),
            // serde and schemars both strip `r#`.
            None => unraw(field),
        };
        let object = local("__tool_object");
        takes.push(match &options.default {
            None => quote! {
                #field: #private::take_field::<#ty>(&mut #object, #name)?
            },
            Some(darling::util::Override::Inherit) => quote! {
                #field: #private::take_field_or::<#ty>(
                    &mut #object,
                    #name,
                    <#ty as ::core::default::Default>::default,
                )?
            },
            Some(darling::util::Override::Explicit(_)) => {
                let default_fn = format_ident!("__tool_default_{}", unraw(field));
                quote! {
                    #field: #private::take_field_or::<#ty>(&mut #object, #name, #ident::#default_fn)?
                }
            }
        });
        names.push(name.clone());
        let default = match &options.default {
            None => quote!(::core::option::Option::None),
            Some(darling::util::Override::Inherit) => {
                quote!(::core::option::Option::Some(|| {
                    #private::schemars::_schemars_maybe_to_value!(
                        <#ty as ::core::default::Default>::default()
                    )
                }))
            }
            Some(darling::util::Override::Explicit(DefaultExpr(expr))) => {
                let default_fn = format_ident!("__tool_default_{}", unraw(field));
                let value = default_value(expr);
                defaults.push(quote_spanned! {expr.span()=>
                    #[doc(hidden)]
                    fn #default_fn() -> #ty {
                        #value
                    }
                });
                quote!(::core::option::Option::Some(|| {
                    #private::schemars::_schemars_maybe_to_value!(#ident::#default_fn())
                }))
            }
        };
        // The probe is checked where it is used: one look-up per field, not two.
        let probe = local("__tool_probe");
        let checked = quote_spanned! {ty.span()=>
            #private::assert_argument_schema::<#ty, _>(#probe);
        };
        field_schemas.push(quote! {
            #private::FieldSchema {
                name: #name,
                title: #title,
                description: #description,
                fns: {
                    let #probe = (&&#private::Tag::<#ty>::of_type()).__tool_schema_tag();
                    #checked
                    #probe.fns::<#ty>()
                },
                default: #default,
            }
        });
        fields.push(quote! {
            #(#attrs)*
            pub #field: #ty,
        });
    }
    // Unknown keys refused: the schema is closed too (`additionalProperties: false`), which is
    // what the validator refuses them by, with a did-you-mean.
    let deny = !allow_unknown_fields(tool);
    let name = ident.to_string();
    let (input, object, deserializer) = (
        local("__tool_input"),
        local("__tool_object"),
        local("__tool_deserializer"),
    );
    // Parsed field by field through shared helpers (generic only in each field's type), not
    // by a derive: serde's would compile its visitor and field enum once per tool.
    let definition = quote! {
        #[doc = #doc]
        #[allow(missing_docs)]
        #vis struct #ident {
            #(#fields)*
        }

        impl #ident {
            /// Reads the input the model sent: an object with these fields.
            #[doc(hidden)]
            fn __tool_parse(
                #input: #private::serde_json::Value,
            ) -> ::core::result::Result<Self, #krate::ToolError> {
                #[allow(unused_mut)]
                let mut #object =
                    #private::input_object(#input, #name, &[#(#names),*], #deny)?;
                ::core::result::Result::Ok(Self { #(#takes),* })
            }

            #(#defaults)*
        }

        impl<'de> #private::serde::Deserialize<'de> for #ident {
            fn deserialize<D: #private::serde::Deserializer<'de>>(
                #deserializer: D,
            ) -> ::core::result::Result<Self, D::Error> {
                let #input =
                    <#private::serde_json::Value as #private::serde::Deserialize>::deserialize(
                        #deserializer,
                    )?;
                Self::__tool_parse(#input).map_err(#private::deserialize_error)
            }
        }
    };
    let schema_impl = quote! {
        impl #private::schemars::JsonSchema for #ident {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                ::std::borrow::Cow::Borrowed(#name)
            }

            fn schema_id() -> ::std::borrow::Cow<'static, str> {
                ::std::borrow::Cow::Borrowed(::core::concat!(::core::module_path!(), "::", #name))
            }

            fn json_schema(
                __tool_generator: &mut #private::schemars::SchemaGenerator,
            ) -> #private::schemars::Schema {
                #private::params_json_schema(
                    __tool_generator,
                    #doc,
                    #deny,
                    &[#(#field_schemas),*],
                )
            }
        }
    };
    (definition, schema_impl)
}

/// A default expression as a value of the field's type: string literals become `String`s.
fn default_value(expr: &Expr) -> TokenStream {
    match expr {
        Expr::Lit(lit) if matches!(lit.lit, Lit::Str(_)) => {
            quote!(::core::convert::Into::into(#expr))
        }
        _ => quote!(#expr),
    }
}

/// The body of `Tool::call`: parse, inject, call, convert.
fn call_body(
    tool: &ToolFn,
    plan: &Plan,
    input_ty: &TokenStream,
    krate: &TokenStream,
) -> TokenStream {
    let private = quote!(#krate::__private);
    let fn_ident = &tool.func.sig.ident;
    let (input, ctx, args) = (
        local("__tool_input"),
        local("__tool_ctx"),
        local("__tool_args"),
    );
    let return_span = match &tool.func.sig.output {
        ReturnType::Default => fn_ident.span(),
        ReturnType::Type(_, ty) => ty.span(),
    };
    let (ret, value, error) = (
        local_at("__tool_return", return_span),
        local_at("__tool_value", return_span),
        local_at("__tool_error", return_span),
    );
    let mut prelude = Vec::new();
    let mut call_args = Vec::new();
    // The user's parameter names are only field names here; each value is bound to a local
    // of ours, so none of them can shadow the fn being called.
    let mut fields = Vec::new();
    for (index, param) in tool.params.iter().enumerate() {
        let value = local(&format!("__tool_param{index}"));
        match param.kind {
            ParamKind::Arg { .. } => {
                let field = &param.ident;
                fields.push(quote!(#field: #value));
                call_args.push(quote!(#value));
            }
            ParamKind::Input => call_args.push(quote!(#args)),
            ParamKind::Context => call_args.push(quote!(#ctx)),
            ParamKind::State => {
                let ty = &param.ty;
                let span = ty.span();
                let (value, ctx) = (
                    local_at(&value.to_string(), span),
                    local_at("__tool_ctx", span),
                );
                prelude.push(quote_spanned! {span=>
                    let #value = <#ty>::from_context(#ctx)?;
                });
                call_args.push(quote!(#value));
            }
        }
    }
    let parse = match plan.input {
        InputShape::Params => quote! {
            let #input_ty { #(#fields),* } = #input_ty::__tool_parse(#input)?;
        },
        InputShape::Struct(_) => quote! {
            let #args: #input_ty = #private::parse_input(#input)?;
        },
    };
    // `identity(x)` rather than `x`: the compiler reports an unsatisfied bound at the argument,
    // and a hygienic local is reported at the macro call whatever its location; the call
    // expression carries the return type's span, so the error points there.
    let convert = quote_spanned! {return_span=>
        match (&&#krate::__private::Tag::of(&#ret)).__tool_return_tag().split(#ret) {
            ::core::result::Result::Ok(#value) => {
                (&&#krate::__private::Tag::of(&#value)).__tool_output_tag().convert(::core::convert::identity(#value))
            }
            ::core::result::Result::Err(#error) => ::core::result::Result::Err(
                (&&#krate::__private::Tag::of(&#error)).__tool_error_tag().convert(::core::convert::identity(#error)),
            ),
        }
    };
    // Fitted to the output shape `output_shape` generates for the same return type.
    let convert = match &tool.func.sig.output {
        ReturnType::Default => convert,
        ReturnType::Type(..) => quote! {
            #private::fit_output(#convert, Self::__tool_output_shape())
        },
    };
    quote! {
        #parse
        #(#prelude)*
        let #ret = #fn_ident(#(#call_args),*).await;
        #convert
    }
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

/// Code that builds a template's text from the JSON input.
fn render(template: &Template, krate: &TokenStream) -> TokenStream {
    let (text, input) = (local("__tool_text"), local("__tool_input"));
    let pushes = template.pieces.iter().map(|piece| match piece {
        Piece::Text(piece) => quote!(#text.push_str(#piece);),
        Piece::Arg { json, .. } => {
            quote!(#krate::__private::render_arg(&mut #text, #input, #json);)
        }
    });
    quote! {
        let mut #text = ::std::string::String::new();
        #(#pushes)*
        #text
    }
}

/// Checks the compiler makes on our behalf, each pointing at the user's tokens.
fn assertions(tool: &ToolFn, plan: &Plan, krate: &TokenStream) -> TokenStream {
    let private = quote!(#krate::__private);
    let mut checks = Vec::new();
    for param in &tool.params {
        let ty = &param.ty;
        match param.kind {
            // Checked where they are used: that the type is `Deserialize` where its field
            // is read (`take_field`), that it is `JsonSchema` where its schema is looked up
            // (`input_struct`).
            ParamKind::Arg { .. } => {}
            ParamKind::Input => checks.push(quote_spanned! {ty.span()=>
                #private::assert_input::<#ty>();
                #private::assert_input_schema::<#ty, _>(
                    (&&#private::Tag::<#ty>::of_type()).__tool_schema_tag(),
                );
            }),
            _ => {}
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

/// The fn as the user wrote it, for the error path too.
pub fn original(func: &ItemFn) -> TokenStream {
    quote!(#func)
}
