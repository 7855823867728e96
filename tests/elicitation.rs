//! A tool asks the user (`ctx.elicit`) inside an agent: the question reaches the app as an
//! event or through its handler, the answer comes back typed, both are stored in the session;
//! with deferred approvals the question waits in the store, a new agent resumes the session,
//! answers it, and the call runs again with its answers. Forms MCP cannot show are refused
//! naming the field.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::StreamExt;
use serde::Deserialize;
use serde_json::json;
use tool_sdk::agent::{Agent, AgentConfig, AgentError, AgentEvent};
use tool_sdk::model::{Message, MessageContent, ScriptedModel, ScriptedTurn};
use tool_sdk::session::{Record, SessionError, SessionStore, SqliteStore};
use tool_sdk::{
    BoxFuture, Elicitation, ElicitationAnswer, Elicited, Elicitor, JsonSchema, State, ToolContext,
    ToolError, ToolRegistry, schemars, tool,
};

/// A table booking.
#[derive(Deserialize, JsonSchema)]
struct Booking {
    /// How many people.
    guests: u8,
    /// Inside or outside.
    seating: Seating,
}

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Seating {
    Inside,
    Outside,
}

/// How many times `book` started: a call that runs again after a deferred question counts
/// twice.
#[derive(Clone, Default)]
struct Starts(Arc<AtomicUsize>);

/// Books a table, asking the user for the details.
#[tool(register = false)]
async fn book(
    restaurant: String,
    ctx: &ToolContext,
    starts: State<Starts>,
) -> Result<String, ToolError> {
    starts.0.0.fetch_add(1, Ordering::SeqCst);
    let answer = ctx
        .elicit::<Booking>(format!("Book a table at {restaurant}?"))
        .await?;
    Ok(match answer {
        Elicited::Accept(booking) => {
            let seating = match booking.seating {
                Seating::Inside => "inside",
                Seating::Outside => "outside",
            };
            format!("booked {restaurant} for {} {seating}", booking.guests)
        }
        Elicited::Decline => "the user declined".to_owned(),
        Elicited::Cancel => "the user cancelled".to_owned(),
    })
}

#[derive(Deserialize, JsonSchema)]
struct Nested {
    #[allow(dead_code)]
    address: Address,
}

#[derive(Deserialize, JsonSchema)]
struct Address {
    #[allow(dead_code)]
    street: String,
}

/// Asks for a form MCP cannot show.
#[tool(register = false)]
async fn ask_nested(ctx: &ToolContext) -> Result<String, ToolError> {
    ctx.elicit::<Nested>("Where?").await?;
    Ok("asked".to_owned())
}

/// Asks, within a timeout far shorter than the user takes to answer.
#[tool(register = false, timeout = "300ms")]
async fn quick(ctx: &ToolContext) -> Result<String, ToolError> {
    let answer = ctx.elicit::<Booking>("How many?").await?;
    Ok(format!(
        "{} guests",
        answer.accepted().map_or(0, |b| b.guests)
    ))
}

fn registry() -> Arc<ToolRegistry> {
    let registry = ToolRegistry::new();
    registry.register(Arc::new(QuickTool)).unwrap();
    registry.register(Arc::new(BookTool)).unwrap();
    registry.register(Arc::new(AskNestedTool)).unwrap();
    Arc::new(registry)
}

fn booking_turns() -> ScriptedModel {
    ScriptedModel::new([
        ScriptedTurn::tool_call_with_id("call_1", "book", json!({"restaurant": "Chez Nous"})),
        ScriptedTurn::text("Done."),
    ])
}

fn config(model: ScriptedModel, starts: &Starts) -> AgentConfig {
    AgentConfig::new()
        .with_model(model)
        .with_registry(registry())
        .with_state(starts.clone())
        .permissions(|p| p.allow("book").allow("ask_nested").allow("quick"))
}

/// The text of the result of `call` in `messages`.
fn result_of(messages: &[Message], call: &str) -> (String, bool) {
    messages
        .iter()
        .flat_map(|m| &m.content)
        .find_map(|block| match block {
            MessageContent::ToolResult {
                tool_use_id,
                content,
                is_error,
            } if tool_use_id == call => Some((
                content.iter().filter_map(|c| c.readable()).collect(),
                *is_error,
            )),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no result for {call}"))
}

#[tokio::test]
async fn an_event_carries_the_question_and_the_typed_answer_comes_back_stored() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(dir.path().join("s.db")).unwrap());
    let starts = Starts::default();
    let config = config(booking_turns(), &starts).session(|s| s.with_store(store.clone()));
    let agent = Agent::create(config).await.unwrap();
    let mut run = agent.run("Book Chez Nous.");
    let mut asked = None;
    let mut result = None;
    while let Some(event) = run.next().await {
        match event {
            AgentEvent::ElicitationRequested(request) => {
                asked = Some((
                    request.id.clone(),
                    request.tool.clone(),
                    request.question.clone(),
                ));
                request.accept(json!({"guests": 4, "seating": "outside"}));
            }
            AgentEvent::Finished(done) => result = Some(done),
            _ => {}
        }
    }
    let (id, tool, question) = asked.expect("the question reached the app");
    assert_eq!((id.as_str(), tool.as_str()), ("call_1", "book"));
    let Elicitation::Form { message, schema } = &question else {
        panic!("a form: {question:?}");
    };
    assert_eq!(message, "Book a table at Chez Nous?");
    assert_eq!(schema["properties"]["guests"]["type"], "integer");
    assert_eq!(
        schema["properties"]["guests"]["description"],
        "How many people."
    );
    assert_eq!(
        schema["properties"]["seating"]["enum"],
        json!(["inside", "outside"])
    );
    assert_eq!(schema["required"], json!(["guests", "seating"]));
    let result = result.unwrap();
    assert_eq!(result.text, "Done.");
    assert_eq!(
        result_of(&result.messages.to_vec(), "call_1"),
        ("booked Chez Nous for 4 outside".to_owned(), false)
    );
    // The question and its answer are in the session, between the call's start and result.
    let records = store.load(agent.session_id()).await.unwrap();
    let kinds: Vec<&str> = records.iter().map(Record::kind).collect();
    let start = kinds.iter().position(|k| *k == "tool_started").unwrap();
    let asked = kinds
        .iter()
        .position(|k| *k == "elicitation_asked")
        .unwrap();
    let answered = kinds
        .iter()
        .position(|k| *k == "elicitation_answered")
        .unwrap();
    let ended = kinds.iter().position(|k| *k == "tool_result").unwrap();
    assert!(
        start < asked && asked < answered && answered < ended,
        "{kinds:?}"
    );
    assert!(records.contains(&Record::ElicitationAnswered {
        id: "call_1".into(),
        answer: ElicitationAnswer::Accept {
            content: json!({"guests": 4, "seating": "outside"})
        },
    }));
}

/// Declines every question, noting what it was asked.
struct Decliner(Arc<std::sync::Mutex<Vec<String>>>);

impl Elicitor for Decliner {
    fn elicit<'a>(
        &'a self,
        question: &'a Elicitation,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ElicitationAnswer, ToolError>> {
        let asked = format!("{}: {}", ctx.tool_call_id(), question.message());
        self.0.lock().unwrap().push(asked);
        Box::pin(async { Ok(ElicitationAnswer::Decline) })
    }
}

#[tokio::test]
async fn a_handler_answers_and_prompt_alone_cancels() {
    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let starts = Starts::default();
    let config = config(booking_turns(), &starts)
        .permissions(|p| p.with_elicitation_handler(Decliner(asked.clone())));
    let agent = Agent::create(config).await.unwrap();
    let result = agent.prompt("Book Chez Nous.").await.unwrap();
    assert_eq!(
        result_of(&result.messages.to_vec(), "call_1").0,
        "the user declined"
    );
    assert_eq!(
        *asked.lock().unwrap(),
        ["call_1: Book a table at Chez Nous?"]
    );

    // No handler, nobody reading events: the question is cancelled, the run goes on.
    let agent = Agent::create(config_plain(&starts)).await.unwrap();
    let result = agent.prompt("Book Chez Nous.").await.unwrap();
    assert_eq!(
        result_of(&result.messages.to_vec(), "call_1").0,
        "the user cancelled"
    );
}

fn config_plain(starts: &Starts) -> AgentConfig {
    config(booking_turns(), starts)
}

#[tokio::test]
async fn a_form_mcp_cannot_show_fails_the_call_naming_the_field() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call_with_id("call_1", "ask_nested", json!({})),
        ScriptedTurn::text("Oh."),
    ]);
    let agent = Agent::create(config(model, &Starts::default()))
        .await
        .unwrap();
    let result = agent.prompt("Ask.").await.unwrap();
    let (text, is_error) = result_of(&result.messages.to_vec(), "call_1");
    assert!(is_error);
    assert!(text.contains("field `address`"), "{text}");
    assert!(text.contains("elicitation form"), "{text}");
}

#[tokio::test]
async fn a_deferred_question_waits_in_the_store_and_is_answered_after_a_resume() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let starts = Starts::default();
    let deferring = |model: ScriptedModel| {
        let store = SqliteStore::open(&path).unwrap();
        config(model, &starts).session(|s| s.with_store(store).with_deferred_approvals())
    };
    let agent = Agent::create(deferring(booking_turns())).await.unwrap();
    let id = agent.session_id().to_owned();
    let stopped = agent.prompt("Book Chez Nous.").await.unwrap_err();
    let AgentError::ApprovalsPending(pending) = &stopped else {
        panic!("the run stops for the question: {stopped:?}");
    };
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].call_id, "call_1");
    assert_eq!(pending[0].tool, "book");
    assert_eq!(pending[0].input, json!({"restaurant": "Chez Nous"}));
    assert_eq!(pending[0].title, "Book a table at Chez Nous?");
    let Some(Elicitation::Form { message, .. }) = &pending[0].elicitation else {
        panic!("a tool's question: {pending:?}");
    };
    assert_eq!(message, "Book a table at Chez Nous?");
    assert_eq!(starts.0.load(Ordering::SeqCst), 1);
    drop(agent);

    // Another agent (a restarted process) finds it in the store.
    let model = ScriptedModel::new([ScriptedTurn::text("Booked.")]);
    let agent = Agent::resume(deferring(model.clone()), &id).await.unwrap();
    assert_eq!(agent.pending_approvals().await.unwrap(), *pending);
    // It is a tool's question: a permission answer does not fit it.
    let wrong = agent
        .answer_approval("call_1", tool_sdk::permission::PermissionAnswer::Allow)
        .await
        .unwrap_err();
    assert!(
        matches!(
            &wrong,
            AgentError::Session(SessionError::NoPendingApproval { pending, .. }) if pending.is_empty()
        ),
        "{wrong:?}"
    );
    agent
        .answer_elicitation(
            "call_1",
            ElicitationAnswer::Accept {
                content: json!({"guests": 2, "seating": "inside"}),
            },
        )
        .await
        .unwrap();
    assert!(agent.pending_approvals().await.unwrap().is_empty());
    let done = agent.continue_run().await.unwrap();
    assert_eq!(done.text, "Booked.");
    // The call ran again from the start and got the stored answer.
    assert_eq!(starts.0.load(Ordering::SeqCst), 2);
    let sent = &model.requests()[0].messages;
    assert_eq!(
        result_of(&sent.to_vec(), "call_1"),
        ("booked Chez Nous for 2 inside".to_owned(), false)
    );
    // A second answer is refused: nothing waits.
    assert!(matches!(
        agent
            .answer_elicitation("call_1", ElicitationAnswer::Decline)
            .await,
        Err(AgentError::Session(SessionError::NoPendingApproval { .. }))
    ));
}

/// Answers after a while.
struct Slowly;

impl Elicitor for Slowly {
    fn elicit<'a>(
        &'a self,
        _question: &'a Elicitation,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ElicitationAnswer, ToolError>> {
        Box::pin(async {
            tokio::time::sleep(std::time::Duration::from_millis(900)).await;
            Ok(ElicitationAnswer::Accept {
                content: json!({"guests": 5, "seating": "inside"}),
            })
        })
    }
}

#[tokio::test]
async fn the_time_the_user_takes_does_not_count_against_the_tools_timeout() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call_with_id("call_1", "quick", json!({})),
        ScriptedTurn::text("Done."),
    ]);
    let config =
        config(model, &Starts::default()).permissions(|p| p.with_elicitation_handler(Slowly));
    let agent = Agent::create(config).await.unwrap();
    let result = agent.prompt("Ask slowly.").await.unwrap();
    assert_eq!(
        result_of(&result.messages.to_vec(), "call_1"),
        ("5 guests".to_owned(), false)
    );
}
