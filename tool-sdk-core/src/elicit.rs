//! Asking the user from inside a tool: [`ToolContext::elicit`](crate::ToolContext::elicit)
//! sends an [`Elicitation`] to whoever the runtime put in the context (an [`Elicitor`]: an
//! agent's app, an MCP client), and gets an [`ElicitationAnswer`] back.
//!
//! A form's schema comes from a Rust type and is held to what MCP's elicitation allows: a flat
//! object whose properties are strings (plain, or of a format: `email`, `uri`, `date`,
//! `date-time`), numbers, integers, booleans, enums of strings, or lists of such enums
//! (multiple choice). [`form_schema`] checks it and says which field is not allowed.

use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::{BoxFuture, ToolContext, ToolError};

/// A question a tool asks the user.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum Elicitation {
    /// A form to fill in.
    Form {
        /// What is asked, and why.
        message: String,
        /// The form: a flat object schema, as [`form_schema`] gives it.
        schema: Value,
    },
    /// A page for the user to open (a sign-in, a payment): nothing the user enters there
    /// goes through the agent.
    Url {
        /// Why the page should be opened.
        message: String,
        /// The page.
        url: String,
        /// The asker's id for this question (MCP's `elicitationId`); may be empty.
        #[serde(default)]
        id: String,
    },
}

impl Elicitation {
    /// What is asked.
    pub fn message(&self) -> &str {
        match self {
            Elicitation::Form { message, .. } | Elicitation::Url { message, .. } => message,
        }
    }
}

/// The user's answer to an [`Elicitation`], as MCP has them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum ElicitationAnswer {
    /// The user answered: the form's values (an object), or `null` for a page they opened.
    Accept {
        /// The values.
        #[serde(default)]
        content: Value,
    },
    /// The user said no.
    Decline,
    /// The user dismissed the question without saying.
    Cancel,
}

/// What [`ToolContext::elicit`](crate::ToolContext::elicit) gives a tool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Elicited<T> {
    /// The user answered.
    Accept(T),
    /// The user said no.
    Decline,
    /// The user dismissed the question.
    Cancel,
}

impl<T> Elicited<T> {
    /// The answer, if the user gave one.
    pub fn accepted(self) -> Option<T> {
        match self {
            Elicited::Accept(value) => Some(value),
            Elicited::Decline | Elicited::Cancel => None,
        }
    }
}

/// Asks the user on behalf of a tool: put in a [`ToolContext`] by the runtime
/// ([`with_elicitor`](crate::ToolContext::with_elicitor)). An agent asks its app (an event or
/// a handler, stored in the session); an MCP server sends `elicitation/create` to its client.
pub trait Elicitor: Send + Sync {
    /// Asks `question` for the call of `ctx`. An error fails the tool's `elicit` call with it
    /// (nobody can be asked, the question could not be stored...).
    fn elicit<'a>(
        &'a self,
        question: &'a Elicitation,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ElicitationAnswer, ToolError>>;
}

impl ToolContext {
    /// How long this call has waited for its user's answers ([`elicit`](Self::elicit)) so
    /// far, and whether it waits now. Runtimes leave this time out of the call's timeout: a
    /// user who takes a while to fill in a form does not time the tool out.
    pub fn waited_for_user(&self) -> (std::time::Duration, bool) {
        match &self.elicitor {
            Some((_, wait)) => wait.waited(),
            None => Default::default(),
        }
    }

    /// Asks the user to fill in a `T` (a struct of strings, numbers, booleans and enums: MCP's
    /// elicitation forms), telling them `message`. The user accepts (with the values),
    /// declines, or cancels.
    ///
    /// In an agent the question reaches the app as a permission question does (an
    /// `ElicitationRequested` event, or its elicitation handler), and is stored in the
    /// session; with deferred approvals it waits there, and the call runs again from the start
    /// when the run continues, its questions answered from the session in order (so ask before
    /// doing what cannot be done twice). Served over MCP it is the client's
    /// `elicitation/create`.
    ///
    /// Fails when `T` cannot be a form (the error names the field), when nobody can be asked
    /// (no runtime put an [`Elicitor`] here, or the MCP client cannot elicit), or when the
    /// answer does not fit `T`.
    pub async fn elicit<T>(&self, message: impl Into<String>) -> Result<Elicited<T>, ToolError>
    where
        T: serde::de::DeserializeOwned + schemars::JsonSchema,
    {
        let type_name = std::any::type_name::<T>();
        let schema = form_schema(&crate::schema_for::<T>(), type_name)?;
        let question = Elicitation::Form {
            message: message.into(),
            schema,
        };
        match self.ask_user(&question).await? {
            ElicitationAnswer::Accept { content } => serde_json::from_value(content)
                .map(Elicited::Accept)
                .map_err(|error| {
                    ToolError::failed(format!(
                        "the user's answer does not fit `{type_name}`: {error}"
                    ))
                }),
            ElicitationAnswer::Decline => Ok(Elicited::Decline),
            ElicitationAnswer::Cancel => Ok(Elicited::Cancel),
        }
    }

    /// Asks the user to open `url` (a sign-in, a payment), telling them `message`; nothing they
    /// enter there goes through the agent. `Accept` means they went (and, for the asker, that
    /// it may now check what was done there). Reaches the app as [`elicit`](Self::elicit) does;
    /// served over MCP it is a URL-mode `elicitation/create`.
    pub async fn elicit_url(
        &self,
        message: impl Into<String>,
        url: impl Into<String>,
    ) -> Result<Elicited<()>, ToolError> {
        let question = Elicitation::Url {
            message: message.into(),
            url: url.into(),
            id: self.tool_call_id().to_owned(),
        };
        Ok(match self.ask_user(&question).await? {
            ElicitationAnswer::Accept { .. } => Elicited::Accept(()),
            ElicitationAnswer::Decline => Elicited::Decline,
            ElicitationAnswer::Cancel => Elicited::Cancel,
        })
    }

    /// Asks `question` as it is, through the call's [`Elicitor`], the wait left out of the
    /// call's timeout: for a runtime that passes on a question it was asked (an MCP server's).
    /// A tool asks with [`elicit`](Self::elicit) or [`elicit_url`](Self::elicit_url).
    pub async fn ask_user(&self, question: &Elicitation) -> Result<ElicitationAnswer, ToolError> {
        let Some((elicitor, wait)) = &self.elicitor else {
            return Err(ToolError::failed(
                "this tool asks the user a question (ctx.elicit), and nobody can answer it \
                 here: run it in an agent, or served over MCP to a client that can elicit",
            ));
        };
        let _waiting = wait.begin();
        elicitor.elicit(question, self).await
    }
}

/// The time a call spent waiting for its user's answers: questions may overlap, so it counts
/// from the first asked to the last answered.
#[derive(Default)]
pub(crate) struct UserWait {
    /// Questions waiting now, since when, and the time waited before.
    state: Mutex<(usize, Option<std::time::Instant>, std::time::Duration)>,
}

impl UserWait {
    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, (usize, Option<std::time::Instant>, std::time::Duration)> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A question is asked; the guard says when it is answered.
    pub(crate) fn begin(&self) -> Waiting<'_> {
        let mut state = self.lock();
        if state.0 == 0 {
            state.1 = Some(std::time::Instant::now());
        }
        state.0 += 1;
        Waiting(self)
    }

    fn waited(&self) -> (std::time::Duration, bool) {
        let state = self.lock();
        let now = state.1.map(|since| since.elapsed()).unwrap_or_default();
        (state.2 + now, state.0 > 0)
    }
}

/// A question waiting for its answer (or dropped: the call stopped).
pub(crate) struct Waiting<'a>(&'a UserWait);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.0 = state.0.saturating_sub(1);
        if state.0 == 0
            && let Some(since) = state.1.take()
        {
            state.2 += since.elapsed();
        }
    }
}

/// The formats a string of an elicitation form may have.
const STRING_FORMATS: [&str; 4] = ["email", "uri", "date", "date-time"];

/// The form schema of `schema` (a type's schema, as [`schema_for`](crate::schema_for) gives
/// it): a flat object of primitive properties, references resolved, optional fields' `null`
/// dropped, keys MCP does not know left out. `type_name` names the type in errors, which say
/// which field is not allowed and why.
pub fn form_schema(schema: &Value, type_name: &str) -> Result<Value, ToolError> {
    let defs = schema.get("$defs").and_then(Value::as_object);
    let not_a_form = |what: &str| {
        ToolError::invalid_input(format!(
            "`{type_name}` cannot be asked as an elicitation form: {what}. A form is a struct \
             of named fields, each a string, number, integer, boolean, or enum of strings"
        ))
    };
    let root = resolve(schema, defs);
    let root = &root;
    if root.get("type").and_then(Value::as_str) != Some("object") {
        return Err(not_a_form("it is not a struct"));
    }
    let Some(properties) = root.get("properties").and_then(Value::as_object) else {
        return Err(not_a_form("it has no named fields"));
    };
    let mut form = Map::new();
    for (name, property) in properties {
        let field = field_schema(property, defs).map_err(|why| {
            ToolError::invalid_input(format!(
                "field `{name}` of `{type_name}` is not allowed in an elicitation form: {why}. \
                 MCP's forms hold strings, numbers, integers, booleans, enums of strings and \
                 lists of such enums only: ask for it as one of those, or in a question of \
                 its own"
            ))
        })?;
        form.insert(name.clone(), field);
    }
    let mut out = Map::new();
    out.insert("type".into(), "object".into());
    out.insert("properties".into(), Value::Object(form));
    if let Some(required) = root.get("required").filter(|r| r.as_array().is_some()) {
        out.insert("required".into(), required.clone());
    }
    for key in ["title", "description"] {
        if let Some(value) = root.get(key) {
            out.insert(key.into(), value.clone());
        }
    }
    Ok(Value::Object(out))
}

/// `schema`, or what its `$ref` points at in `defs`, with the keys next to the `$ref` (a
/// field's doc comment, default...) over it.
fn resolve(schema: &Value, defs: Option<&Map<String, Value>>) -> Value {
    let target = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
        .and_then(|name| defs?.get(name));
    match (target, schema) {
        (Some(Value::Object(target)), Value::Object(here)) => {
            let mut merged = target.clone();
            for (key, value) in here.iter().filter(|(key, _)| *key != "$ref") {
                merged.insert(key.clone(), value.clone());
            }
            Value::Object(merged)
        }
        _ => schema.clone(),
    }
}

/// One property of a form, cleaned; the error says why it cannot be one.
fn field_schema(property: &Value, defs: Option<&Map<String, Value>>) -> Result<Value, String> {
    let mut property = resolve(property, defs);
    // `Option<T>`: `anyOf: [T, null]` (or `type: [t, "null"]`) is T, not required.
    if let Some(options) = property.get("anyOf").and_then(Value::as_array) {
        let not_null: Vec<&Value> = options
            .iter()
            .filter(|o| o.get("type").and_then(Value::as_str) != Some("null"))
            .collect();
        let [only] = not_null[..] else {
            return Err("it is one of several types".into());
        };
        let mut inner = resolve(only, defs);
        if let Value::Object(map) = &mut inner {
            copy_texts(&property, map);
        }
        property = inner;
    }
    let kind = match property.get("type") {
        Some(Value::String(kind)) => kind.clone(),
        Some(Value::Array(kinds)) => {
            let kinds: Vec<&str> = kinds
                .iter()
                .filter_map(Value::as_str)
                .filter(|k| *k != "null")
                .collect();
            match kinds[..] {
                [kind] => kind.to_owned(),
                _ => return Err("it is one of several types".into()),
            }
        }
        // A unit enum with documented variants: `oneOf` of string consts.
        None if property.get("oneOf").is_some() => "string".to_owned(),
        None => return Err("it has no simple type".into()),
        Some(_) => return Err("its type cannot be read".into()),
    };
    let mut out = Map::new();
    copy_texts(&property, &mut out);
    match kind.as_str() {
        "string" => {
            out.insert("type".into(), "string".into());
            if let Some(choices) = string_choices(&property)? {
                choices.single(&mut out);
                // The deprecated titles of a plain enum, when the schema has them.
                copy(&property, &mut out, &["enumNames"]);
            }
            if let Some(format) = property.get("format").and_then(Value::as_str) {
                if !STRING_FORMATS.contains(&format) {
                    return Err(format!(
                        "its format `{format}` is not one of {}",
                        STRING_FORMATS.join(", ")
                    ));
                }
                out.insert("format".into(), format.into());
            }
            copy(&property, &mut out, &["minLength", "maxLength", "default"]);
        }
        "number" | "integer" => {
            out.insert("type".into(), kind.clone().into());
            copy(&property, &mut out, &["minimum", "maximum", "default"]);
        }
        "boolean" => {
            out.insert("type".into(), "boolean".into());
            copy(&property, &mut out, &["default"]);
        }
        "array" => {
            let items = property
                .get("items")
                .map(|items| resolve(items, defs))
                .ok_or("it is a list of anything")?;
            let Some(choices) = string_choices(&items)? else {
                return Err("it is a list, and only lists of enum choices are allowed".into());
            };
            out.insert("type".into(), "array".into());
            out.insert("items".into(), choices.items());
            copy(&property, &mut out, &["minItems", "maxItems", "default"]);
        }
        "object" => return Err("it is a nested struct or map".into()),
        other => return Err(format!("its type `{other}` is not allowed")),
    }
    Ok(Value::Object(out))
}

/// Copies `title` and `description` of `from` over.
fn copy_texts(from: &Value, to: &mut Map<String, Value>) {
    copy(from, to, &["title", "description"]);
}

fn copy(from: &Value, to: &mut Map<String, Value>, keys: &[&str]) {
    for key in keys {
        if let Some(value) = from.get(*key) {
            to.insert((*key).into(), value.clone());
        }
    }
}

/// The choices of a string enum, if `schema` is one.
enum Choices {
    /// `enum: [...]`: the values, shown as they are.
    Plain(Value),
    /// Variants with titles (or doc comments): `[{const, title}]`.
    Titled(Value),
}

impl Choices {
    /// The choices in `out`, a string property: `enum`, or `oneOf` with titles.
    fn single(self, out: &mut Map<String, Value>) {
        match self {
            Choices::Plain(values) => out.insert("enum".into(), values),
            Choices::Titled(options) => out.insert("oneOf".into(), options),
        };
    }

    /// The `items` of a list of these choices.
    fn items(self) -> Value {
        match self {
            Choices::Plain(values) => serde_json::json!({"type": "string", "enum": values}),
            Choices::Titled(options) => serde_json::json!({"anyOf": options}),
        }
    }
}

/// The choices of a string enum (`enum: [...]`, or `oneOf`/`anyOf` of `const`s, titled by
/// their `title` or doc comment), if it is one.
fn string_choices(schema: &Value) -> Result<Option<Choices>, String> {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        if values.iter().all(Value::is_string) {
            return Ok(Some(Choices::Plain(Value::Array(values.clone()))));
        }
        return Err("it is an enum with choices that are not strings".into());
    }
    let Some(options) =
        (schema.get("oneOf").or_else(|| schema.get("anyOf"))).and_then(Value::as_array)
    else {
        return Ok(None);
    };
    let mut values = Vec::new();
    let mut titled = Vec::new();
    let mut any_title = false;
    for option in options {
        // A documented variant is `{const: "red"}` or `{enum: ["red"]}`, with its text.
        let value = option.get("const").or_else(|| {
            (option.get("enum").and_then(Value::as_array))
                .filter(|e| e.len() == 1)
                .map(|e| &e[0])
        });
        let Some(Value::String(value)) = value else {
            return Err("it is an enum with variants that carry data".into());
        };
        let title = option.get("title").or_else(|| option.get("description"));
        any_title |= title.is_some();
        let title = title.cloned().unwrap_or_else(|| value.clone().into());
        values.push(Value::String(value.clone()));
        titled.push(serde_json::json!({"const": value, "title": title}));
    }
    Ok(Some(match any_title {
        true => Choices::Titled(Value::Array(titled)),
        false => Choices::Plain(Value::Array(values)),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema_for;
    use serde_json::json;

    #[derive(schemars::JsonSchema, Deserialize)]
    #[allow(dead_code)]
    enum Size {
        Small,
        Large,
    }

    /// A pizza.
    #[derive(schemars::JsonSchema, Deserialize)]
    #[allow(dead_code)]
    struct Order {
        /// Who it is for.
        name: String,
        size: Size,
        extra: Option<Size>,
        slices: u8,
        delivery: bool,
        note: Option<String>,
        toppings: Vec<Size>,
    }

    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    enum Titled {
        /// The first.
        First,
        #[schemars(title = "Second one")]
        Second,
    }

    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Picks {
        one: Titled,
        many: Vec<Titled>,
    }

    #[test]
    fn titled_variants_keep_their_titles() {
        let form = form_schema(&schema_for::<Picks>(), "Picks").unwrap();
        let options = json!([
            {"const": "First", "title": "The first."},
            {"const": "Second", "title": "Second one"}
        ]);
        assert_eq!(form["properties"]["one"]["oneOf"], options);
        assert_eq!(form["properties"]["one"]["type"], "string");
        assert_eq!(
            form["properties"]["many"]["items"],
            json!({"anyOf": options})
        );
    }

    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Nested {
        name: String,
        address: Address,
    }

    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Address {
        street: String,
    }

    #[test]
    fn a_flat_struct_becomes_a_form() {
        let form = form_schema(&schema_for::<Order>(), "Order").unwrap();
        assert_eq!(
            form["properties"]["name"],
            json!({"description": "Who it is for.", "type": "string"})
        );
        assert_eq!(
            form["properties"]["size"],
            json!({"type": "string", "enum": ["Small", "Large"]})
        );
        assert_eq!(
            form["properties"]["extra"]["enum"],
            json!(["Small", "Large"])
        );
        assert_eq!(form["properties"]["slices"]["type"], "integer");
        assert_eq!(form["properties"]["slices"]["maximum"], 255);
        assert_eq!(form["properties"]["note"], json!({"type": "string"}));
        assert_eq!(
            form["properties"]["toppings"]["items"]["enum"],
            json!(["Small", "Large"])
        );
        assert_eq!(
            form["required"],
            json!(["name", "size", "slices", "delivery", "toppings"])
        );
        assert_eq!(form["description"], "A pizza.");
        assert!(form.get("$defs").is_none());
    }

    #[test]
    fn a_nested_struct_is_refused_naming_the_field() {
        let error = form_schema(&schema_for::<Nested>(), "Nested").unwrap_err();
        let message = error.to_string();
        assert!(message.contains("field `address` of `Nested`"), "{message}");
        assert!(message.contains("nested struct"), "{message}");
    }

    #[test]
    fn a_non_struct_is_refused() {
        let error = form_schema(&schema_for::<Vec<String>>(), "Vec<String>").unwrap_err();
        assert!(error.to_string().contains("not a struct"), "{error}");
    }
}
