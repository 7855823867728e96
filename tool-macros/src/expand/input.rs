//! The parameter struct of a parameter-style tool (`ReadToolInput`), how it is read from the
//! model's JSON, and its schema.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, Ident, Lit};

use super::{allow_unknown_fields, local, try_ok};
use crate::attr::{DefaultExpr, Param, ParamKind, ToolFn, is_data, unraw};

/// `struct ReadToolInput { ... }` for the parameter form, and its impls (to go where the
/// probes' traits are in scope): how it is read, its `Deserialize` and `JsonSchema`.
///
/// Each by-value parameter is a field; whether it is read from the input or taken from the
/// context ([`FromToolContext`]) is decided per field by a probe at type-check time. Reference
/// parameters are not fields: they are taken from the context in the call.
///
/// The `JsonSchema` impl is written out rather than derived: the derive would require
/// `JsonSchema` of each field's type (if the type is not `JsonSchema`, the one error must be
/// the assertion's, which says what to derive), and it would compile schemars' generic code
/// once per field. Instead each field's schema functions are looked up by the probe
/// (`SchemaFns`, generic only in the type) and one non-generic fn in `__private` builds the
/// schema the derive would, from the table `__tool_params` returns.
pub fn input_struct(
    tool: &ToolFn,
    ident: &Ident,
    struct_ident: &Ident,
    krate: &TokenStream,
) -> (TokenStream, TokenStream) {
    let private = quote!(__tool_private);
    let vis = &tool.func.vis;
    let doc = format!("The input of [`{struct_ident}`]: the arguments the model sends.");
    let mut fields = Vec::new();
    let mut defaults = Vec::new();
    let mut specs = Vec::new();
    let mut names = Vec::new();
    let mut takes = Vec::new();
    for param in &tool.params {
        match &param.kind {
            ParamKind::Arg { .. } => {}
            ParamKind::Injected => {
                let ty = &param.ty;
                specs.push(quote! {
                    #private::ParamSpec::Injected(
                        (&&#private::Tag::<#ty>::of_type()).__tool_param_tag().required::<#ty>(),
                    )
                });
                continue;
            }
            ParamKind::Input => continue,
        }
        let field = Field::new(param, ident);
        takes.push(field.take());
        names.push(field.name_entry());
        specs.push(field.spec());
        defaults.extend(field.default_fn());
        defaults.extend(field.default_json_fn());
        let (name, ty, doc) = (&param.ident, &param.ty, field.doc);
        let doc = doc.map(|doc| quote!(#[doc = #doc]));
        fields.push(quote! {
            #doc
            pub #name: #ty,
        });
    }
    let definition = quote! {
        #[doc = #doc]
        #[allow(missing_docs)]
        #vis struct #ident {
            #(#fields)*
        }
    };
    let parts = Parts {
        names,
        takes,
        specs,
        defaults,
    };
    (definition, input_impls(tool, ident, &doc, parts, krate))
}

/// `let mut __tool_object = <the input's object>?;`: unknown keys refused unless allowed.
fn object_binding(type_name: &str, names: &[TokenStream], deny: bool) -> TokenStream {
    let (input, object) = (local("__tool_input"), local("__tool_object"));
    let object_of = try_ok(quote! {
        __tool_private::input_object(#input, #type_name, &[#(#names),*], #deny)
    });
    quote! {
        #[allow(unused_mut)]
        let mut #object = #object_of;
    }
}

/// The arguments read straight out of the input, for `__tool_start` (which so needs no
/// parameter struct built and taken apart again): the object's binding, then each by-value
/// parameter's read (`?` included), in order; `ctx` is an `Option<&ToolContext>` local.
pub fn read_args(tool: &ToolFn, ident: &Ident, ctx: &Ident) -> (TokenStream, Vec<TokenStream>) {
    let mut names = Vec::new();
    let mut reads = Vec::new();
    for param in &tool.params {
        if let ParamKind::Arg { .. } = param.kind {
            let field = Field::new(param, ident);
            names.push(field.name_entry());
            reads.push(field.take_expr(ctx));
        }
    }
    let binding = object_binding(&ident.to_string(), &names, !allow_unknown_fields(tool));
    (binding, reads)
}

/// What the fields contribute to [`input_impls`].
struct Parts {
    names: Vec<TokenStream>,
    takes: Vec<TokenStream>,
    specs: Vec<TokenStream>,
    defaults: Vec<TokenStream>,
}

/// The impls of the parameter struct: `__tool_parse`, `__tool_params`, `Deserialize` and
/// `JsonSchema`.
fn input_impls(
    tool: &ToolFn,
    ident: &Ident,
    doc: &str,
    parts: Parts,
    krate: &TokenStream,
) -> TokenStream {
    let private = quote!(__tool_private);
    let Parts {
        names,
        takes,
        specs,
        defaults,
    } = parts;
    // Unknown keys refused: the schema is closed too (`additionalProperties: false`), which is
    // what the validator refuses them by, with a did-you-mean.
    let deny = !allow_unknown_fields(tool);
    let name = ident.to_string();
    let count = specs.len();
    let (input, deserializer, ctx) = (
        local("__tool_input"),
        local("__tool_deserializer"),
        local("__tool_ctx"),
    );
    // Parsed field by field through shared helpers (generic only in each field's type), not
    // by a derive: serde's would compile its visitor and field enum once per tool.
    let object_binding = object_binding(&name, &names, deny);
    quote! {
        impl #ident {
            /// Reads the input the model sent: an object with these fields. Injected fields
            /// come from `ctx`.
            // `#[inline]`: compiled only where it is used (the `Deserialize` impl, `validate`);
            // a call reads its arguments in `__tool_start`.
            #[doc(hidden)]
            #[inline]
            fn __tool_parse(
                #input: #private::serde_json::Value,
                #ctx: ::core::option::Option<&#krate::ToolContext>,
            ) -> ::core::result::Result<Self, #krate::ToolError> {
                #object_binding
                ::core::result::Result::Ok(Self { #(#takes),* })
            }

            /// Every parameter but `#[input]`: an argument's schema, or the state an injected
            /// one needs.
            #[doc(hidden)]
            fn __tool_params() -> [#private::ParamSpec; #count] {
                [#(#specs),*]
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
                Self::__tool_parse(#input, ::core::option::Option::None)
                    .map_err(#private::deserialize_error)
            }
        }

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
                    &Self::__tool_params(),
                )
            }
        }
    }
}

/// One by-value parameter, a field of the struct.
struct Field<'a> {
    param: &'a Param,
    input_ident: &'a Ident,
    private: TokenStream,
    /// Its property name.
    name: String,
    doc: Option<&'a String>,
    options: &'a crate::attr::ArgOptions,
    attr: Option<proc_macro2::Span>,
}

impl<'a> Field<'a> {
    fn new(param: &'a Param, input_ident: &'a Ident) -> Self {
        let ParamKind::Arg { doc, options, attr } = &param.kind else {
            unreachable!("only by-value parameters are fields");
        };
        let name = match &options.rename {
            Some(rename) => rename.value(),
            // serde and schemars both strip `r#`.
            None => unraw(&param.ident),
        };
        Field {
            param,
            input_ident,
            private: quote!(__tool_private),
            name,
            doc: doc.as_ref(),
            options,
            attr: *attr,
        }
    }

    /// The field's probe: argument or injected. A std data type is an argument without one.
    fn probe(&self) -> TokenStream {
        let (private, ty) = (&self.private, &self.param.ty);
        match is_data(ty) {
            true => quote!(#private::ArgTag),
            false => quote!((&&#private::Tag::<#ty>::of_type()).__tool_param_tag()),
        }
    }

    fn default_fn_ident(&self) -> Ident {
        format_ident!("__tool_default_{}", unraw(&self.param.ident))
    }

    /// `field: <read from the input or the context>?`.
    fn take(&self) -> TokenStream {
        let field = &self.param.ident;
        let take = self.take_expr(&local("__tool_ctx"));
        quote!(#field: #take)
    }

    /// `<read from the input or the context>?`, with `ctx` the context if there is one.
    fn take_expr(&self, ctx: &Ident) -> TokenStream {
        let (ty, name) = (&self.param.ty, &self.name);
        let probe = self.probe();
        let object = local("__tool_object");
        let input_ident = self.input_ident;
        // At the type, so that an argument that is not `Deserialize` is reported there alone.
        let take = quote_spanned!(ty.span()=> take);
        let take_or = quote_spanned!(ty.span()=> take_or);
        let read = match &self.options.default {
            None => quote! {
                #probe.#take::<#ty>(&mut #object, #name, #ctx)
            },
            Some(darling::util::Override::Inherit) => quote! {
                #probe.#take_or::<#ty>(
                    &mut #object,
                    #name,
                    <#ty as ::core::default::Default>::default,
                    #ctx,
                )
            },
            Some(darling::util::Override::Explicit(_)) => {
                let default_fn = self.default_fn_ident();
                quote! {
                    #probe.#take_or::<#ty>(
                        &mut #object, #name, #input_ident::#default_fn, #ctx,
                    )
                }
            }
        };
        try_ok(read)
    }

    /// Its entry in the list of property names (none if injected).
    fn name_entry(&self) -> TokenStream {
        let name = &self.name;
        match is_data(&self.param.ty) {
            true => quote!(::core::option::Option::Some(#name)),
            false => {
                let probe = self.probe();
                quote!(#probe.name(#name))
            }
        }
    }

    fn default_json_fn_ident(&self) -> Ident {
        format_ident!("__tool_default_json_{}", unraw(&self.param.ident))
    }

    /// `fn __tool_default_json_x() -> Option<Value>` for `#[arg(default)]`: the default in
    /// the schema, when it is `Serialize`. A named fn: a closure made a fn pointer compiles a
    /// shim besides.
    fn default_json_fn(&self) -> Option<TokenStream> {
        let private = &self.private;
        let value = match self.options.default.as_ref()? {
            darling::util::Override::Inherit => {
                let ty = &self.param.ty;
                quote!(<#ty as ::core::default::Default>::default())
            }
            darling::util::Override::Explicit(_) => {
                let default_fn = self.default_fn_ident();
                quote!(Self::#default_fn())
            }
        };
        let json_fn = self.default_json_fn_ident();
        Some(quote! {
            #[doc(hidden)]
            fn #json_fn() -> ::core::option::Option<#private::serde_json::Value> {
                #private::schemars::_schemars_maybe_to_value!(#value)
            }
        })
    }

    /// `fn __tool_default_x() -> T` for `#[arg(default = expr)]`.
    fn default_fn(&self) -> Option<TokenStream> {
        let Some(darling::util::Override::Explicit(DefaultExpr(expr))) = &self.options.default
        else {
            return None;
        };
        let (ty, default_fn) = (&self.param.ty, self.default_fn_ident());
        let value = default_value(expr);
        Some(quote_spanned! {expr.span()=>
            #[doc(hidden)]
            fn #default_fn() -> #ty {
                #value
            }
        })
    }

    /// Its entry in the parameter table: the schema as the derive would write it.
    fn spec(&self) -> TokenStream {
        let (private, ty, name) = (&self.private, &self.param.ty, &self.name);
        let input_ident = self.input_ident;
        // Title and description as schemars' derive takes them from `#[doc = ...]`: one
        // leading space dropped, then split by its rule, here rather than by its const fn
        // (evaluated twice a field by the compiler's interpreter).
        let (title, doc_description) = self
            .doc
            .map(|doc| title_and_description(doc.strip_prefix(' ').unwrap_or(doc.as_str())))
            .unwrap_or_default();
        let description = match &self.options.description {
            Some(description) => quote!(#description),
            None => quote!(#doc_description),
        };
        let default = match &self.options.default {
            None => quote!(::core::option::Option::None),
            Some(_) => {
                let json_fn = self.default_json_fn_ident();
                quote!(::core::option::Option::Some(#input_ident::#json_fn))
            }
        };
        // The probes are checked where they are used: one look-up of each per field.
        let (param, schema) = (local("__tool_param"), local("__tool_probe"));
        let checked = quote_spanned! {ty.span()=>
            #param.assert_schema::<#ty, _>(#schema);
        };
        let field = quote! {
            #private::FieldSchema {
                name: #name,
                title: #title,
                description: #description,
                fns: #schema.fns::<#ty>(),
                default: #default,
            }
        };
        // A std type is an argument, without a probe (see `probe`): `#[arg]` applies to it,
        // and its entry is an argument's.
        if is_data(ty) {
            return quote! {{
                let #param = #private::ArgTag;
                let #schema = (&&#private::Tag::<#ty>::of_type()).__tool_schema_tag();
                #checked
                #private::ParamSpec::Arg(#field)
            }};
        }
        let attr_checked = self.attr.map(|span| {
            quote_spanned! {span=>
                #private::assert_arg_attribute::<#ty, _>(#param);
            }
        });
        let probe = self.probe();
        quote! {{
            let #param = #probe;
            let #schema = (&&#private::Tag::<#ty>::of_type()).__tool_schema_tag();
            #checked
            #attr_checked
            #param.spec::<#ty>(#field)
        }}
    }
}

/// schemars' `_private::get_title_and_description`: a doc comment whose first line is a
/// markdown heading (`# Title`) is that title and the rest; any other is all description.
fn title_and_description(doc: &str) -> (&str, &str) {
    let doc = doc.trim_matches(|c: char| c.is_ascii_whitespace());
    if !doc.starts_with('#') {
        return ("", doc);
    }
    let end = doc.find('\n').unwrap_or(doc.len());
    let title = doc[..end]
        .trim_start_matches('#')
        .trim_matches(|c: char| c.is_ascii_whitespace());
    let description = doc[end..].trim_matches(|c: char| c.is_ascii_whitespace());
    (title, description)
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

#[cfg(test)]
mod tests {
    use super::title_and_description;

    #[test]
    fn a_doc_splits_as_schemars_splits_it() {
        // Cases of schemars' own rule (`_private::rustdoc`): only a leading `#` makes a title.
        let cases = [
            ("The path to look at.", ("", "The path to look at.")),
            ("  Padded.\n", ("", "Padded.")),
            (
                "# Title\nThe rest,\n\nin two paragraphs.",
                ("Title", "The rest,\n\nin two paragraphs."),
            ),
            ("## Only a title", ("Only a title", "")),
            ("#Tight\n  body  ", ("Tight", "body")),
            ("Not # a title", ("", "Not # a title")),
            ("", ("", "")),
        ];
        for (doc, expected) in cases {
            assert_eq!(title_and_description(doc), expected, "doc: {doc:?}");
        }
    }
}
