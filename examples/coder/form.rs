//! A tool's question to the user (`ctx.elicit`, or an MCP server's elicitation), asked at the
//! prompt: a form field by field, or a page to open.

use console::style;
use serde_json::{Map, Value, json};
use tool_sdk::{Elicitation, ElicitationAnswer};

use crate::input::{Line, LineReader};

/// Asks `question`, which the tool `tool` asked. Ctrl-C or the end of input cancels it; `-` at
/// a field declines it.
pub async fn ask(tool: &str, question: &Elicitation, input: &LineReader) -> ElicitationAnswer {
    println!(
        "{} {} {}",
        style("?").yellow().bold(),
        style(question.message()).bold(),
        style(format!("(asked by {tool})")).dim()
    );
    match question {
        Elicitation::Url { url, .. } => {
            println!("  open {}", style(url).underlined());
            loop {
                let prompt = "  Did you open it? [y]es / [n]o: ".to_owned();
                match input.read(prompt).await {
                    Line::Text(answer) => match answer.trim().to_lowercase().as_str() {
                        "y" | "yes" => {
                            return ElicitationAnswer::Accept {
                                content: Value::Null,
                            };
                        }
                        "n" | "no" => return ElicitationAnswer::Decline,
                        _ => println!("  Please answer y or n."),
                    },
                    Line::Interrupted | Line::Eof => return ElicitationAnswer::Cancel,
                }
            }
        }
        Elicitation::Form { schema, .. } => form(schema, input).await,
    }
}

/// Each field of the form in turn.
async fn form(schema: &Value, input: &LineReader) -> ElicitationAnswer {
    println!(
        "  {}",
        style("Fill in each field (empty leaves an optional one out; `-` declines).").dim()
    );
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut values = Map::new();
    let empty = Map::new();
    let fields = schema["properties"].as_object().unwrap_or(&empty);
    for (name, field) in fields {
        let needed = required.contains(&name.as_str());
        loop {
            let prompt = format!("  {}: ", label(name, field, needed));
            let text = match input.read(prompt).await {
                Line::Text(text) => text.trim().to_owned(),
                Line::Interrupted | Line::Eof => return ElicitationAnswer::Cancel,
            };
            if text == "-" {
                return ElicitationAnswer::Decline;
            }
            if text.is_empty() {
                match needed {
                    true => println!("  {name} is needed."),
                    false => break,
                }
                continue;
            }
            match parse(field, &text) {
                Ok(value) => {
                    values.insert(name.clone(), value);
                    break;
                }
                Err(why) => println!("  {why}"),
            }
        }
    }
    ElicitationAnswer::Accept {
        content: Value::Object(values),
    }
}

/// `name (kind, default)  description`, `*` when it is needed.
fn label(name: &str, field: &Value, needed: bool) -> String {
    let kind = match choices(field) {
        Some(choices) => {
            let titles: Vec<String> = choices.into_iter().map(|(_, title)| title).collect();
            let many = field["type"] == "array";
            format!(
                "{}{}",
                titles.join(" / "),
                if many { ", several" } else { "" }
            )
        }
        None => field["format"]
            .as_str()
            .or(field["type"].as_str())
            .unwrap_or("text")
            .to_owned(),
    };
    let mut label = format!(
        "{}{} ({kind}",
        style(name).bold(),
        if needed { "*" } else { "" }
    );
    if let Some(default) = field.get("default") {
        label.push_str(&format!(", default {default}"));
    }
    label.push(')');
    if let Some(text) = field["description"].as_str().or(field["title"].as_str()) {
        label.push_str(&format!(" {}", style(text).dim()));
    }
    label
}

/// The field's choices, value and title, if it is an enum (or a list of one).
fn choices(field: &Value) -> Option<Vec<(String, String)>> {
    let field = match field["type"].as_str() {
        Some("array") => &field["items"],
        _ => field,
    };
    if let Some(values) = field["enum"].as_array() {
        let names = field["enumNames"].as_array();
        let pairs = values.iter().enumerate().filter_map(|(i, value)| {
            let value = value.as_str()?.to_owned();
            let title = names
                .and_then(|names| names.get(i)?.as_str())
                .unwrap_or(&value)
                .to_owned();
            Some((value, title))
        });
        return Some(pairs.collect());
    }
    let options = field["oneOf"].as_array().or(field["anyOf"].as_array())?;
    let pairs = options.iter().filter_map(|option| {
        let value = option["const"].as_str()?.to_owned();
        let title = option["title"].as_str().unwrap_or(&value).to_owned();
        Some((value, title))
    });
    Some(pairs.collect())
}

/// What the user typed, as the field's type; why not, when it is not one.
fn parse(field: &Value, text: &str) -> Result<Value, String> {
    let choices = choices(field);
    let choose = |text: &str| -> Result<Value, String> {
        let Some(choices) = &choices else {
            return Ok(Value::String(text.to_owned()));
        };
        let chosen = choices.iter().find(|(value, title)| {
            value.eq_ignore_ascii_case(text) || title.eq_ignore_ascii_case(text)
        });
        match chosen {
            Some((value, _)) => Ok(Value::String(value.clone())),
            None => {
                let titles: Vec<&str> = choices.iter().map(|(_, title)| title.as_str()).collect();
                Err(format!("Choose one of: {}.", titles.join(", ")))
            }
        }
    };
    match field["type"].as_str() {
        Some("integer") => text
            .parse::<i64>()
            .map(Value::from)
            .map_err(|_| "A whole number, please.".to_owned()),
        Some("number") => text
            .parse::<f64>()
            .map(|n| json!(n))
            .map_err(|_| "A number, please.".to_owned()),
        Some("boolean") => match text.to_lowercase().as_str() {
            "y" | "yes" | "true" => Ok(Value::Bool(true)),
            "n" | "no" | "false" => Ok(Value::Bool(false)),
            _ => Err("y or n, please.".to_owned()),
        },
        Some("array") => text
            .split(',')
            .map(|part| choose(part.trim()))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        _ => choose(text),
    }
}
