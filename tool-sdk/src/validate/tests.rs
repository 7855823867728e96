use super::depth::local_pointer;
use super::wording::{join_or, suggest, truncate_chars};
use super::*;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, json};
use std::collections::BTreeMap;

fn schema_of<T: JsonSchema>() -> Value {
    let root = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>();
    serde_json::to_value(root).expect("schema serializes")
}

fn validator_of<T: JsonSchema>() -> InputValidator {
    InputValidator::new(&schema_of::<T>(), ValidationOptions::default()).expect("valid schema")
}

fn strict_validator_of<T: JsonSchema>() -> InputValidator {
    InputValidator::new(&schema_of::<T>(), ValidationOptions { coerce: false })
        .expect("valid schema")
}

fn messages(errors: &InputErrors) -> Vec<String> {
    errors.issues().iter().map(ToString::to_string).collect()
}

fn check_err(validator: &InputValidator, input: Value) -> Vec<String> {
    match validator.check(input) {
        Ok(value) => panic!("expected errors, got Ok({value})"),
        Err(errors) => messages(&errors),
    }
}

/// Builds `[[[...1...]]]` `depth` levels deep.
fn nested_arrays(depth: usize) -> Value {
    let mut value = json!(1);
    for _ in 0..depth {
        value = Value::Array(vec![value]);
    }
    value
}

/// Drops a value of any depth without recursion (the test thread has a small stack).
fn drop_flat(value: Value) {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

// Field names are declared in alphabetical order, so messages listing them read the same
// whether or not serde_json keeps insertion order.
#[allow(dead_code)]
#[derive(JsonSchema, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadFile {
    file_path: String,
    limit: Option<u32>,
    offset: Option<u64>,
}

#[allow(dead_code)]
#[derive(JsonSchema, Deserialize, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct Inner {
    f: f64,
    n: u64,
}

#[allow(dead_code)]
#[derive(JsonSchema, Deserialize, Debug, PartialEq)]
#[serde(rename_all = "lowercase")]
enum Mode {
    A,
    B,
    C,
}

#[allow(dead_code)]
#[derive(JsonSchema, Deserialize, Debug, PartialEq)]
enum Documented {
    /// Fast.
    Fast,
    /// Slow.
    Slow,
}

#[allow(dead_code)]
#[derive(JsonSchema, Deserialize, Debug, PartialEq)]
#[serde(tag = "kind")]
enum Tagged {
    A { x: u32 },
    B { y: String },
}

#[allow(dead_code)]
#[derive(JsonSchema, Deserialize, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
struct Everything {
    #[schemars(range(min = 1))]
    count: u32,
    enabled: bool,
    inner: Option<Inner>,
    items: Vec<Inner>,
    #[schemars(length(max = 2))]
    list: Vec<String>,
    map: BTreeMap<String, u64>,
    mode: Mode,
    #[schemars(length(min = 1))]
    name: String,
    offset: Option<u64>,
    #[schemars(pattern("^a"))]
    prefix: String,
    #[serde(default)]
    retries: u32,
    ratio: f64,
    tagged: Tagged,
    tuple: (u32, bool),
}

fn everything() -> Value {
    json!({
        "count": 3,
        "enabled": false,
        "inner": {"f": 1.5, "n": 2},
        "items": [{"f": 0.5, "n": 1}],
        "list": ["x"],
        "map": {"k": 1},
        "mode": "a",
        "name": "n",
        "offset": 7,
        "prefix": "abc",
        "retries": 1,
        "ratio": 0.25,
        "tagged": {"kind": "A", "x": 1},
        "tuple": [1, true]
    })
}

fn with(patch: Value) -> Value {
    let mut input = everything();
    for (key, value) in patch.as_object().expect("patch is an object") {
        input[key] = value.clone();
    }
    input
}

#[test]
fn validator_is_send_sync_and_reusable() {
    fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<InputValidator>();
    assert_send_sync::<InputErrors>();
    assert_send_sync::<SchemaError>();
    let validator = validator_of::<Everything>();
    for _ in 0..3 {
        assert_eq!(validator.check(everything()), Ok(everything()));
    }
    let parsed: Everything = serde_json::from_value(everything()).expect("fixture is valid");
    assert_eq!(parsed.tuple, (1, true));
    assert_eq!(validator.schema(), &schema_of::<Everything>());
}

#[test]
fn all_problems_are_reported_together() {
    let validator = validator_of::<ReadFile>();
    let errors = validator
        .check(json!({"fiel_path": "/tmp/a", "offset": "ten"}))
        .expect_err("invalid");
    assert_eq!(errors.len(), 3);
    assert!(!errors.is_empty());
    assert_eq!(
        errors.to_string(),
        "/: must NOT have additional property 'fiel_path'; allowed properties: file_path, \
         limit, offset (did you mean 'file_path'?)\n\
         /: must have required property 'file_path'\n\
         /offset: must be integer or null, got \"ten\""
    );
    assert_eq!(errors.issues()[2].path, "/offset");
    assert_eq!(
        errors.issues()[2].message,
        "must be integer or null, got \"ten\""
    );
}

#[test]
fn no_suggestion_when_nothing_is_close_or_the_close_name_is_present() {
    let validator = validator_of::<ReadFile>();
    assert_eq!(
        check_err(&validator, json!({"file_path": "a", "zzz": 1})),
        [
            "/: must NOT have additional property 'zzz'; allowed properties: file_path, limit, \
          offset"
        ]
    );
    assert_eq!(
        check_err(&validator, json!({"file_path": "a", "fiel_path": 1})),
        [
            "/: must NOT have additional property 'fiel_path'; allowed properties: file_path, \
          limit, offset"
        ]
    );
    assert_eq!(
        check_err(&validator, json!({"filePath": "a"})),
        [
            "/: must NOT have additional property 'filePath'; allowed properties: file_path, \
             limit, offset (did you mean 'file_path'?)",
            "/: must have required property 'file_path'"
        ]
    );
}

#[test]
fn keyword_messages() {
    let validator = validator_of::<Everything>();
    let cases = [
        (json!({"count": 0}), "/count: must be >= 1"),
        (
            json!({"name": ""}),
            "/name: must NOT have fewer than 1 characters",
        ),
        (
            json!({"prefix": "xyz"}),
            "/prefix: must match pattern \"^a\"",
        ),
        (
            json!({"list": ["a", "b", "c"]}),
            "/list: must NOT have more than 2 items",
        ),
        (
            json!({"mode": "d"}),
            "/mode: must be one of \"a\", \"b\", \"c\", got \"d\"",
        ),
        (
            json!({"mode": "A"}),
            "/mode: must be one of \"a\", \"b\", \"c\", got \"A\" (did you mean \"a\"?)",
        ),
        (
            json!({"enabled": "yes"}),
            "/enabled: must be boolean, got \"yes\"",
        ),
        (json!({"items": {}}), "/items: must be array, got {}"),
        (json!({"offset": -1}), "/offset: must be >= 0"),
        (json!({"ratio": null}), "/ratio: must be number, got null"),
    ];
    for (patch, expected) in cases {
        assert_eq!(
            check_err(&validator, with(patch.clone())),
            [expected],
            "{patch}"
        );
    }
}

#[test]
fn const_and_documented_enum_messages() {
    let validator =
        InputValidator::new(&json!({"const": "x"}), ValidationOptions::default()).unwrap();
    assert_eq!(
        check_err(&validator, json!("y")),
        ["/: must be equal to constant \"x\", got \"y\""]
    );
    // Variants with docs become `oneOf` of `const`s; the message is the same as for `enum`.
    let validator = validator_of::<Documented>();
    assert_eq!(
        check_err(&validator, json!("Medium")),
        ["/: must be one of \"Fast\", \"Slow\", got \"Medium\""]
    );
    assert_eq!(
        check_err(&validator, json!("fast")),
        ["/: must be one of \"Fast\", \"Slow\", got \"fast\" (did you mean \"Fast\"?)"]
    );
}

#[test]
fn optional_struct_reports_the_struct_errors() {
    let validator = validator_of::<Everything>();
    assert_eq!(
        check_err(&validator, with(json!({"inner": {"n": "x", "g": 1}}))),
        [
            "/inner: must NOT have additional property 'g'; allowed properties: f, n",
            "/inner: must have required property 'f'",
            "/inner/n: must be integer, got \"x\"",
        ]
    );
    assert_eq!(
        check_err(&validator, with(json!({"inner": "abc"}))),
        ["/inner: must be object or null, got \"abc\""]
    );
}

#[test]
fn tagged_enum_reports_the_chosen_variant() {
    let validator = validator_of::<Everything>();
    assert_eq!(
        check_err(&validator, with(json!({"tagged": {"kind": "A", "x": "s"}}))),
        ["/tagged/x: must be integer, got \"s\""]
    );
    assert_eq!(
        check_err(&validator, with(json!({"tagged": {"kind": "B"}}))),
        ["/tagged: must have required property 'y'"]
    );
    assert_eq!(
        check_err(&validator, with(json!({"tagged": {"kind": "C", "x": 1}}))),
        ["/tagged/kind: must be one of \"A\", \"B\", got \"C\""]
    );
}

#[allow(dead_code)]
#[derive(JsonSchema, Deserialize)]
enum External {
    Unit,
    Pair(u32, u32),
    Rec { a: u32 },
}

#[allow(dead_code)]
#[derive(JsonSchema, Deserialize)]
#[serde(untagged)]
enum Untagged {
    N(u32),
    S { s: String },
}

#[test]
fn externally_tagged_and_untagged_enums() {
    let validator = validator_of::<External>();
    assert_eq!(
        check_err(&validator, json!("Unti")),
        ["/: must be \"Unit\" or object, got \"Unti\" (did you mean \"Unit\"?)"]
    );
    assert_eq!(
        check_err(&validator, json!({"Nope": 1})),
        [
            "/: must be \"Unit\", an object with property 'Pair' or an object with property \
          'Rec', got {\"Nope\":1}"
        ]
    );
    assert_eq!(
        check_err(&validator, json!({"Rec": {"a": "x"}})),
        ["/Rec/a: must be integer, got \"x\""]
    );
    assert_eq!(
        check_err(&validator, json!({"Pair": [1]})),
        ["/Pair: must NOT have fewer than 2 items"]
    );
    assert_eq!(
        validator.check(json!({"Rec": {"a": "4"}})),
        Ok(json!({"Rec": {"a": 4}}))
    );

    let validator = validator_of::<Untagged>();
    assert_eq!(check_err(&validator, json!(-1)), ["/: must be >= 0"]);
    assert_eq!(
        check_err(&validator, json!([])),
        ["/: must be integer or object, got []"]
    );
    assert_eq!(
        check_err(&validator, json!({"s": 5})),
        ["/s: must be string, got 5"]
    );
    assert_eq!(validator.check(json!("5")), Ok(json!(5)));
}

#[test]
fn long_values_are_truncated() {
    let validator = validator_of::<Everything>();
    let huge = "é".repeat(1_000_000);
    let errors = check_err(&validator, with(json!({ "count": huge })));
    assert_eq!(errors.len(), 1);
    let expected = format!("/count: must be integer, got \"{}...", "é".repeat(56));
    assert_eq!(errors[0], expected);
}

#[test]
fn coerces_numbers_and_booleans_where_the_schema_wants_them() {
    let validator = validator_of::<Everything>();
    let input = with(json!({
        "count": "5",
        "enabled": "true",
        "ratio": "2.5",
        "offset": " 12 ",
        "inner": {"f": "1e3", "n": "9"},
        "items": [{"f": "0.5", "n": "1"}, {"f": 1.0, "n": "18446744073709551615"}],
        "map": {"a": "3"},
        "tagged": {"kind": "A", "x": "4"},
        "tuple": ["6", "FALSE"],
    }));
    let coerced = validator.check(input).expect("coerced into a valid input");
    assert_eq!(
        coerced,
        with(json!({
            "count": 5,
            "enabled": true,
            "ratio": 2.5,
            "offset": 12,
            "inner": {"f": 1000.0, "n": 9},
            "items": [{"f": 0.5, "n": 1}, {"f": 1.0, "n": 18_446_744_073_709_551_615_u64}],
            "map": {"a": 3},
            "tagged": {"kind": "A", "x": 4},
            "tuple": [6, false],
        }))
    );
    let parsed: Everything = serde_json::from_value(coerced).expect("deserializes");
    assert_eq!(parsed.count, 5);
    assert_eq!(parsed.inner, Some(Inner { f: 1000.0, n: 9 }));
    assert_eq!(parsed.tagged, Tagged::A { x: 4 });
}

#[test]
fn integral_float_strings_become_integers() {
    let validator = validator_of::<Everything>();
    let coerced = validator
        .check(with(json!({"count": "1e1"})))
        .expect("coerced");
    assert_eq!(coerced["count"], json!(10));
    assert!(coerced["count"].is_u64());
}

#[test]
fn coerces_through_ref() {
    let schema = json!({
        "$defs": {"N": {"type": "integer"}, "B": {"$ref": "#/$defs/%42%6Fol"}, "Bool": {"type": "boolean"}},
        "type": "object",
        "properties": {"n": {"$ref": "#/$defs/N"}, "b": {"$ref": "#/$defs/B"}}
    });
    let validator = InputValidator::new(&schema, ValidationOptions::default()).unwrap();
    assert_eq!(
        validator.check(json!({"n": "5", "b": "false"})),
        Ok(json!({"n": 5, "b": false}))
    );
}

#[test]
fn fractional_string_is_not_coerced_into_an_integer() {
    let validator = validator_of::<Everything>();
    assert_eq!(
        check_err(&validator, with(json!({"count": "5.5", "enabled": "true"}))),
        ["/count: must be integer, got \"5.5\""]
    );
    assert_eq!(
        check_err(&validator, with(json!({"count": "five"}))),
        ["/count: must be integer, got \"five\""]
    );
    assert_eq!(
        check_err(&validator, with(json!({"ratio": "NaN"}))),
        ["/ratio: must be number, got \"NaN\""]
    );
}

#[test]
fn errors_are_reported_for_the_coerced_input() {
    let validator = validator_of::<Everything>();
    assert_eq!(
        check_err(&validator, with(json!({"count": "0", "enabled": "maybe"}))),
        [
            "/count: must be >= 1",
            "/enabled: must be boolean, got \"maybe\""
        ]
    );
}

#[test]
fn coercion_off_reports_errors() {
    let validator = strict_validator_of::<Everything>();
    assert_eq!(
        check_err(&validator, with(json!({"count": "5", "retries": null}))),
        [
            "/count: must be integer, got \"5\"",
            "/retries: must be integer, got null"
        ]
    );
    assert_eq!(validator.options(), ValidationOptions { coerce: false });
}

#[test]
fn null_for_an_optional_non_nullable_property_is_dropped() {
    let validator = validator_of::<Everything>();
    let mut expected = everything();
    expected.as_object_mut().unwrap().remove("retries");
    assert_eq!(
        validator.check(with(json!({"retries": null}))),
        Ok(expected)
    );
    // Nullable properties keep their null; required ones are errors.
    let coerced = validator
        .check(with(json!({"retries": null, "offset": null})))
        .unwrap();
    assert_eq!(coerced["offset"], Value::Null);
    assert!(coerced.get("retries").is_none());
    assert_eq!(
        check_err(&validator, with(json!({"count": null}))),
        ["/count: must be integer, got null"]
    );
}

#[test]
fn valid_input_comes_back_unchanged() {
    let schema = json!({
        "type": "object",
        "properties": {
            "id": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "s": {"type": "string"},
            "n": {"type": ["integer", "null"]}
        }
    });
    let validator = InputValidator::new(&schema, ValidationOptions::default()).unwrap();
    let input = json!({"id": "5", "s": "true", "n": null, "extra": "7"});
    assert!(validator.is_valid(&input));
    assert_eq!(validator.check(input.clone()), Ok(input));
    // A string that a string branch takes is never coerced, even in an invalid input.
    let coerced = validator.check(json!({"id": "5", "n": "3"})).unwrap();
    assert_eq!(coerced, json!({"id": "5", "n": 3}));
}

#[test]
fn is_valid_does_not_coerce() {
    let validator = validator_of::<Everything>();
    let input = with(json!({"count": "5"}));
    assert!(!validator.is_valid(&input));
    assert!(validator.is_valid(&everything()));
    assert!(validator.check(input).is_ok());
}

#[test]
fn invalid_schemas_are_errors() {
    let options = ValidationOptions::default();
    for schema in [
        json!({"type": 5}),
        json!({"$ref": "#/$defs/missing"}),
        json!({"$ref": "http://example.com/schema.json"}),
        json!({"pattern": "(("}),
        json!(5),
    ] {
        let error = InputValidator::new(&schema, options).expect_err(&schema.to_string());
        assert!(!error.message.is_empty());
        assert!(
            error.to_string().starts_with("invalid input schema: "),
            "{error}"
        );
    }
    let mut deep = json!({"type": "integer"});
    for _ in 0..200 {
        deep = json!({"anyOf": [deep]});
    }
    let error = InputValidator::new(&deep, options).expect_err("too deep");
    assert_eq!(error.message, "schema is nested more than 256 levels deep");
}

#[allow(dead_code)]
#[derive(JsonSchema, Deserialize)]
struct Tree {
    label: String,
    children: Vec<Tree>,
}

#[allow(dead_code)]
#[derive(JsonSchema, Deserialize)]
#[serde(deny_unknown_fields)]
struct Free {
    data: Value,
}

#[test]
fn deep_inputs_never_overflow_the_stack() {
    let recursive = validator_of::<Tree>();
    assert!(recursive.guard_depth);
    let errors = recursive
        .check(nested_arrays(10_000))
        .expect_err("too deep");
    assert_eq!(
        messages(&errors),
        ["/: must NOT be nested more than 128 levels deep"]
    );
    let deep = nested_arrays(10_000);
    assert!(!recursive.is_valid(&deep));
    drop_flat(deep);

    // A deep but legitimate tree (as deep as serde_json parses) is validated normally.
    let mut tree = json!({"label": "leaf", "children": []});
    for _ in 0..60 {
        tree = json!({"label": "node", "children": [tree]});
    }
    assert!(recursive.is_valid(&tree));

    let free = validator_of::<Free>();
    assert!(!free.guard_depth);
    // (`json!` would serialize the deep value recursively, so build the objects by hand.)
    let mut input = Map::new();
    input.insert("data".into(), nested_arrays(10_000));
    let mut valid = free
        .check(Value::Object(input))
        .expect("a free-form field takes anything");
    // (Cloning or comparing it would recurse too: reuse the returned value.)
    assert!(valid["data"][0][0].is_array());
    valid["more"] = json!(1);
    let errors = free.check(valid).map(drop_flat).expect_err("unknown key");
    assert_eq!(
        messages(&errors),
        ["/: must NOT be nested more than 128 levels deep"]
    );
}

#[test]
fn hostile_inputs_give_errors_not_panics() {
    let validator = validator_of::<Everything>();
    let weird = json!({
        "": null, "~/": 1, "\u{0}": "\u{202e}", "🦀🦀": [[[[]]]], "a/b": {"c~d": 1},
        "count": "\u{1F600}", "mode": "\u{0}", "name": 1e308, "offset": -0.0,
        "items": [null, 1, "x", {"f": "inf"}], "tuple": [], "map": {"k": "-1", "a/b~": "x"}
    });
    let errors = validator.check(weird).expect_err("hostile input");
    let text = errors.to_string();
    assert!(
        text.contains("/: must NOT have additional property '~/'"),
        "{text}"
    );
    assert!(
        text.contains("/count: must be integer, got \"😀\""),
        "{text}"
    );
    assert!(text.contains("/map/k: must be >= 0"), "{text}");
    assert!(
        text.contains("/map/a~1b~0: must be integer, got \"x\""),
        "{text}"
    );
    assert!(
        text.contains("/tuple: must NOT have fewer than 2 items"),
        "{text}"
    );
    assert!(
        text.contains("/items/3/f: must be number, got \"inf\""),
        "{text}"
    );
    let paths: Vec<&str> = errors.issues().iter().map(|i| i.path.as_str()).collect();
    let mut sorted = paths.clone();
    sorted.sort_by(|a, b| compare_paths(a, b));
    assert_eq!(paths, sorted);

    for input in [
        json!(null),
        json!("x".repeat(100_000)),
        json!([1, 2, 3]),
        Value::Array((0..10_000).map(|i| json!({ format!("k{i}"): i })).collect()),
        json!({"\u{FFFF}": {"\u{10FFFF}": ["\u{200B}"]}}),
    ] {
        let errors = validator.check(input).expect_err("never valid");
        assert!(!errors.is_empty());
        assert!(errors.len() <= MAX_ISSUES + 1);
    }
}

#[test]
fn many_issues_are_capped() {
    let validator = InputValidator::new(
        &json!({"type": "array", "items": {"type": "integer"}}),
        ValidationOptions::default(),
    )
    .unwrap();
    let errors = validator
        .check(json!(vec!["x"; 120]))
        .expect_err("all wrong");
    assert_eq!(errors.len(), MAX_ISSUES + 1);
    assert_eq!(
        errors.issues()[0].to_string(),
        "/0: must be integer, got \"x\""
    );
    assert_eq!(errors.issues()[2].path, "/2");
    assert_eq!(errors.issues()[10].path, "/10");
    assert_eq!(
        errors.issues()[MAX_ISSUES].to_string(),
        "/: ... and 70 more issues not shown"
    );
}

#[test]
fn cyclic_and_odd_schemas_do_not_hang_or_panic() {
    let options = ValidationOptions::default();
    let cyclic = json!({"$defs": {"A": {"anyOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/A"}]}}, "$ref": "#/$defs/A"});
    let validator = InputValidator::new(&cyclic, options).expect("the library takes it");
    assert!(validator.guard_depth);
    let _ = validator.check(json!({"a": ["5", {"b": "true"}]}));
    for schema in [json!(true), json!(false), json!({})] {
        let validator = InputValidator::new(&schema, options).unwrap();
        let _ = validator.check(json!(["1", "x"]));
    }
    // Draft 7 from `$schema`: array-form `items` is a tuple there.
    let draft7 = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "items": [{"type": "integer"}],
        "additionalItems": {"type": "boolean"}
    });
    let validator = InputValidator::new(&draft7, options).unwrap();
    assert_eq!(validator.check(json!(["1", "true"])), Ok(json!([1, true])));
    let never = InputValidator::new(&json!(false), options).unwrap();
    assert_eq!(
        check_err(&never, json!(1)),
        ["/: must NOT be present (schema is false)"]
    );
}

#[test]
fn issues_are_sorted_and_deduplicated() {
    let errors = InputErrors::new(vec![
        InputIssue::new("/items/10", "b"),
        InputIssue::new("/items/2", "b"),
        InputIssue::new("", "z"),
        InputIssue::new("/items/2", "a"),
        InputIssue::new("/items/2", "b"),
    ]);
    assert_eq!(
        messages(&errors),
        ["/: z", "/items/2: a", "/items/2: b", "/items/10: b"]
    );
}

#[test]
fn helpers() {
    assert_eq!(suggest("unti", ["unit"].into_iter()), Some("unit"));
    assert_eq!(
        suggest("File-Path", ["file_path"].into_iter()),
        Some("file_path")
    );
    assert_eq!(
        suggest("offest", ["limit", "offset"].into_iter()),
        Some("offset")
    );
    assert_eq!(suggest("x", ["y"].into_iter()), None);
    assert_eq!(truncate_chars("abcdef", 5), "ab...");
    assert_eq!(truncate_chars("abcde", 5), "abcde");
    assert_eq!(join_or(&["a".into(), "b".into(), "c".into()]), "a, b or c");
    assert_eq!(
        local_pointer("#/$defs/A%20B").as_deref(),
        Some("/$defs/A B")
    );
    assert_eq!(local_pointer("#foo"), None);
    assert_eq!(local_pointer("other.json#/a"), None);
}

/// Untagged variants that share a property name: which one the model meant decides what the
/// tool gets, so coercing for one variant must not turn the input into another.
#[derive(JsonSchema, Deserialize, Debug, PartialEq)]
#[serde(untagged)]
enum Overlapping {
    Line { x: i64 },
    Labelled { x: String, y: u32 },
}

#[derive(JsonSchema, Deserialize, Debug, PartialEq)]
struct Aim {
    target: Overlapping,
    times: u32,
}

#[test]
fn coercion_keeps_the_untagged_variant_the_input_was_meant_for() {
    let validator = validator_of::<Overlapping>();
    // `Labelled` takes the string `x` as it is and needs only `y` coerced. Coercing `x` for
    // `Line` as well used to turn this into a `Line`, whose `y` serde drops.
    let coerced = validator
        .check(json!({"x": "5", "y": "7"}))
        .expect("coerced");
    assert_eq!(coerced, json!({"x": "5", "y": 7}));
    assert_eq!(
        serde_json::from_value::<Overlapping>(coerced).unwrap(),
        Overlapping::Labelled {
            x: "5".into(),
            y: 7
        }
    );
    // Only `Line` can take this one.
    assert_eq!(validator.check(json!({"x": "5"})), Ok(json!({"x": 5})));
}

#[test]
fn a_branch_valid_without_coercion_wins_over_one_that_needs_it() {
    let validator = validator_of::<Aim>();
    // `target` is a `Labelled` as sent; only `times` needs coercion. `Line` comes first and
    // would take `target` with `x` coerced, which is what used to happen.
    let coerced = validator
        .check(json!({"target": {"x": "5", "y": 7}, "times": "2"}))
        .expect("coerced");
    assert_eq!(coerced, json!({"target": {"x": "5", "y": 7}, "times": 2}));
    let parsed: Aim = serde_json::from_value(coerced).unwrap();
    assert_eq!(
        parsed.target,
        Overlapping::Labelled {
            x: "5".into(),
            y: 7
        }
    );
}

#[allow(dead_code)]
#[derive(JsonSchema, Deserialize)]
#[serde(untagged)]
enum Unfixable {
    Flagged { x: i64, z: bool },
    Labelled { x: String, y: u32 },
}

#[test]
fn when_no_branch_validates_the_errors_are_those_of_the_input_as_sent() {
    let validator = validator_of::<Unfixable>();
    // Coercing for both variants at once used to report `x` as a number the model never
    // sent ("/x: must be string, got 5").
    assert_eq!(
        check_err(&validator, json!({"x": "5", "y": "-1"})),
        ["/y: must be integer, got \"-1\""]
    );
    // With one branch the value can be meant for (an `Option` of a struct, a tagged enum),
    // nothing else is affected: its coercion stays, as everywhere else in the input.
    let validator = validator_of::<Everything>();
    assert_eq!(
        check_err(&validator, with(json!({"inner": {"f": "1.5", "n": "x"}}))),
        ["/inner/n: must be integer, got \"x\""]
    );
}

#[test]
fn each_one_of_branch_is_coerced_on_its_own() {
    // Names that need escaping in a JSON pointer and in a URI fragment, a `$ref` to a
    // percent-encoded definition, `oneOf`, and branches that refuse unknown properties.
    let schema = json!({
        "$defs": {
            "Tar get": {"oneOf": [
                {"type": "object", "properties": {"x": {"type": "integer"}},
                 "required": ["x"], "additionalProperties": false},
                {"type": "object", "properties": {"x": {"type": "string"}, "y": {"type": "boolean"}},
                 "required": ["x", "y"], "additionalProperties": false}
            ]}
        },
        "type": "object",
        "properties": {
            "a b/~%é": {"$ref": "#/$defs/Tar%20get"},
            "list": {"type": "array", "items": {"anyOf": [
                {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}],
                 "items": false},
                {"type": "array", "prefixItems": [{"type": "string"}, {"type": "boolean"}],
                 "items": false}
            ]}}
        }
    });
    let validator = InputValidator::new(&schema, ValidationOptions::default()).unwrap();
    assert_eq!(
        validator.check(json!({"a b/~%é": {"x": "5", "y": "true"}})),
        Ok(json!({"a b/~%é": {"x": "5", "y": true}}))
    );
    assert_eq!(
        validator.check(json!({"a b/~%é": {"x": "5"}})),
        Ok(json!({"a b/~%é": {"x": 5}}))
    );
    // Tuples. The first fits either branch once coerced, and takes the first; coercing it
    // for both at once made it `[1, true]`, which fits neither.
    assert_eq!(
        validator.check(json!({"list": [["1", "true"], ["x", "false"]]})),
        Ok(json!({"list": [[1, "true"], ["x", false]]}))
    );
}

#[test]
fn branches_are_coerced_under_any_dialect_and_base_uri() {
    for (dialect, id) in [
        (
            "http://json-schema.org/draft-07/schema#",
            "https://example.com/tool.json",
        ),
        ("http://json-schema.org/draft-07/schema#", "tool.json"),
        (
            "https://json-schema.org/draft/2020-12/schema",
            "urn:example:tool",
        ),
    ] {
        let schema = json!({
            "$schema": dialect,
            "$id": id,
            "definitions": {
                "Line": {"type": "object", "properties": {"x": {"type": "integer"}},
                         "required": ["x"]},
                "Labelled": {"type": "object",
                             "properties": {"x": {"type": "string"}, "y": {"type": "integer"}},
                             "required": ["x", "y"]}
            },
            "type": "object",
            "properties": {
                "t": {"anyOf": [{"$ref": "#/definitions/Line"}, {"$ref": "#/definitions/Labelled"}]}
            }
        });
        let validator = InputValidator::new(&schema, ValidationOptions::default()).unwrap();
        assert_eq!(
            validator.check(json!({"t": {"x": "5", "y": "7"}})),
            Ok(json!({"t": {"x": "5", "y": 7}})),
            "{dialect} {id}"
        );
    }
}

#[test]
fn branch_validators_are_compiled_only_for_values_several_branches_could_take() {
    let validator = validator_of::<Aim>();
    let valid = json!({"target": {"x": "5", "y": 7}, "times": 2});
    assert_eq!(validator.check(valid.clone()), Ok(valid));
    // `Option<Inner>` and the tagged enum: one branch in question each.
    let everything = validator_of::<Everything>();
    assert!(
        everything
            .check(with(
                json!({"inner": {"f": "1", "n": "2"}, "tagged": {"kind": "A", "x": "3"}})
            ))
            .is_ok()
    );
    assert_eq!(validator.branches.compiled(), 0);
    assert_eq!(everything.branches.compiled(), 0);
    // A target that both variants could take, once per branch, whatever the number of calls.
    for _ in 0..3 {
        assert!(
            validator
                .check(json!({"target": {"x": "5", "y": "7"}, "times": 1}))
                .is_ok()
        );
    }
    assert_eq!(validator.branches.compiled(), 2);
    assert_eq!(validator.clone().branches.compiled(), 2);
}
