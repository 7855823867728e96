//! The sampler alone, without the redraws TestModel adds: each value it makes on the first
//! draw is valid, for the schemas schemars emits and for hand-written ones.

use serde_json::{Value, json};

use super::Sampler;
use crate::schema::schema_for;

#[allow(dead_code)]
#[derive(schemars::JsonSchema, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Booking {
    #[schemars(length(min = 3, max = 3))]
    code: String,
    #[schemars(range(min = 1, max = 9))]
    guests: u8,
    stay: Option<Stay>,
    kind: Kind,
    extras: Vec<Extra>,
    rating: Option<f32>,
    tags: std::collections::BTreeMap<String, bool>,
}

#[allow(dead_code)]
#[derive(schemars::JsonSchema, serde::Deserialize)]
struct Stay {
    nights: u16,
    #[serde(rename = "late-checkout")]
    late_checkout: bool,
}

#[allow(dead_code)]
#[derive(schemars::JsonSchema, serde::Deserialize)]
enum Kind {
    Single,
    Double,
    Suite { floor: i8 },
}

#[allow(dead_code)]
#[derive(schemars::JsonSchema, serde::Deserialize)]
#[serde(tag = "type")]
enum Extra {
    Breakfast,
    Parking { spaces: u8 },
}

fn valid_on_the_first_draw(schema: &Value) {
    let validator = jsonschema::validator_for(schema).unwrap();
    for seed in 0..100 {
        let mut rng = fastrand::Rng::with_seed(seed);
        let value = Sampler::new(schema, &mut rng).sample().unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| e.to_string())
            .collect();
        assert!(
            errors.is_empty(),
            "seed {seed}: {value}: {errors:?}\n{schema}"
        );
    }
}

#[test]
fn schemars_schemas_get_valid_values() {
    valid_on_the_first_draw(&schema_for::<Booking>());
    valid_on_the_first_draw(&serde_json::to_value(schemars::schema_for!(Booking)).unwrap());
    valid_on_the_first_draw(&schema_for::<Vec<Option<Kind>>>());
}

#[test]
fn hand_written_schemas_get_valid_values() {
    for schema in [
        json!({"type": "integer", "exclusiveMinimum": 3, "exclusiveMaximum": 5}),
        json!({"type": "integer", "minimum": 0.5, "maximum": 1.5}),
        json!({"type": "number", "multipleOf": 0.5, "exclusiveMaximum": -3}),
        json!({"type": "integer", "multipleOf": 0.5, "minimum": 3, "maximum": 3}),
        json!({"type": "array", "items": {"enum": [1, 2, 3]}, "minItems": 3, "uniqueItems": true}),
        json!({"$schema": "http://json-schema.org/draft-07/schema#",
               "type": "array", "items": [{"type": "null"}], "additionalItems": false}),
        json!({"type": "string", "format": "email", "maxLength": 16}),
        json!({"allOf": [{"$ref": "#/$defs/A"}, {"required": ["b"], "properties": {"b": {"const": 1}}}],
               "$defs": {"A": {"type": "object", "properties": {"a": {"type": "boolean"}},
                               "required": ["a"]}}}),
        json!({"$ref": "#/$defs/a~1b%20c", "$defs": {"a/b c": {"type": "boolean"}}}),
        json!({"type": "object", "minProperties": 2, "maxProperties": 2}),
        json!({"type": "string", "maxLength": 0}),
        json!({"type": "array", "maxItems": 0}),
        json!({"type": "string", "format": "date", "pattern": "^[0-9]+$"}),
        json!({"type": "string", "pattern": "^[A-Z]{2}-\\d{3}$"}),
        json!({"type": "string", "pattern": "^(cat|dog)s?$"}),
        json!({"type": "string", "pattern": "^\\w+@[a-z]+\\.(com|org)$", "maxLength": 20}),
        json!({"type": "string", "pattern": "^[^\\s]{4,}$"}),
        json!({"type": "string", "pattern": "x+", "minLength": 3}),
    ] {
        valid_on_the_first_draw(&schema);
    }
}

#[test]
fn a_recursive_schema_ends() {
    let schema = json!({"$ref": "#/$defs/List", "$defs": {"List": {"anyOf": [
        {"type": "object", "properties": {"next": {"$ref": "#/$defs/List"}},
         "required": ["next"]},
        {"type": "null"}
    ]}}});
    valid_on_the_first_draw(&schema);
    let endless = json!({"$ref": "#/$defs/Loop", "$defs": {"Loop": {"$ref": "#/$defs/Loop"}}});
    let mut rng = fastrand::Rng::with_seed(0);
    let error = Sampler::new(&endless, &mut rng).sample().unwrap_err();
    assert!(error.contains("nests without end"), "{error}");
}

#[test]
fn odd_schemas_are_errors_not_panics() {
    for (schema, says) in [
        (
            json!({"type": "array", "minItems": 10_000_000_000u64}),
            "minItems 10000000000",
        ),
        (
            json!({"type": "string", "minLength": 1_000_000}),
            "minLength 1000000",
        ),
        (json!({"type": 5}), "names no type"),
        (json!({"type": []}), "names no type"),
        (json!({"items": 3, "minItems": 1}), "not a schema"),
        (
            json!({"type": "integer", "minimum": 1, "maximum": 2, "multipleOf": 5}),
            "no integer",
        ),
        (
            json!({"type": "number", "multipleOf": 3, "maximum": 1, "minimum": 0.5}),
            "no multiple",
        ),
        (
            json!({"$ref": "http://example.com/s.json"}),
            "points outside",
        ),
        (
            json!({"type": "string", "pattern": "(unclosed"}),
            "unusable",
        ),
        (
            json!({"type": "array", "prefixItems": [true, true], "items": false, "maxItems": 1}),
            "tuple",
        ),
    ] {
        let mut rng = fastrand::Rng::with_seed(1);
        let error = Sampler::new(&schema, &mut rng).sample().unwrap_err();
        assert!(error.contains(says), "{schema}: {error}");
    }
}
