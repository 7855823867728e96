//! Schema validation of a small input (DESIGN.md §9: <= 100 ns), valid and invalid, against
//! the built-in Read tool's real schema; side by side with the `jsonschema` crate used directly
//! (the engine tool-sdk wraps) and with `boon`.
//!
//! - `valid/ours`: `InputValidator::is_valid`, the fast path `check` takes for a valid input.
//! - `valid/ours_check`: `InputValidator::check` (takes the input by value and hands it back;
//!   making and dropping that value is not timed).
//! - `invalid/ours`: `check` of an input with two errors, building the AJV-style error list the
//!   model gets; the peers collect their own error lists.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use tool_sdk::Tool;
use tool_sdk::builtin::ReadTool;
use tool_sdk::validate::{InputValidator, ValidationOptions};

fn schema() -> Value {
    ReadTool.input_schema().clone()
}

fn valid() -> Value {
    json!({"file_path": "/home/user/project/src/main.rs", "offset": 10, "limit": 200})
}

fn invalid() -> Value {
    // Two problems: a number where a path is wanted, and an unknown property.
    json!({"file_path": 7, "offest": 10})
}

fn validation(c: &mut Criterion) {
    let schema = schema();
    let ours = InputValidator::new(&schema, ValidationOptions::default()).expect("compiles");
    let direct = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&schema)
        .expect("jsonschema compiles");
    let mut boon_schemas = boon::Schemas::new();
    let boon_id = {
        let mut compiler = boon::Compiler::new();
        compiler.set_default_draft(boon::Draft::V2020_12);
        compiler
            .add_resource("urn:bench:read", schema.clone())
            .expect("boon takes the schema");
        compiler
            .compile("urn:bench:read", &mut boon_schemas)
            .expect("boon compiles")
    };

    for (name, input, is_valid) in [("valid", valid(), true), ("invalid", invalid(), false)] {
        assert_eq!(ours.is_valid(&input), is_valid);
        assert_eq!(direct.is_valid(&input), is_valid);
        assert_eq!(boon_schemas.validate(&input, boon_id).is_ok(), is_valid);
        let mut group = c.benchmark_group(name);
        if is_valid {
            group.bench_function("ours", |b| b.iter(|| ours.is_valid(black_box(&input))));
            group.bench_function("ours_check", |b| {
                b.iter_batched(
                    || input.clone(),
                    // The result (the input, handed back) is returned so that criterion
                    // drops it outside the timed part, as it drops the clone it made.
                    |input| ours.check(black_box(input)),
                    BatchSize::SmallInput,
                )
            });
            group.bench_function("jsonschema", |b| {
                b.iter(|| direct.is_valid(black_box(&input)))
            });
            group.bench_function("boon", |b| {
                b.iter(|| boon_schemas.validate(black_box(&input), boon_id).is_ok())
            });
        } else {
            group.bench_function("ours", |b| {
                b.iter_batched(
                    || input.clone(),
                    |input| ours.check(black_box(input)),
                    BatchSize::SmallInput,
                )
            });
            group.bench_function("jsonschema", |b| {
                b.iter(|| {
                    direct
                        .iter_errors(black_box(&input))
                        .map(|e| e.to_string().len())
                        .sum::<usize>()
                })
            });
            group.bench_function("boon", |b| {
                b.iter(|| match boon_schemas.validate(black_box(&input), boon_id) {
                    Ok(()) => 0,
                    Err(error) => error.to_string().len(),
                })
            });
        }
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = validation
}
criterion_main!(benches);
