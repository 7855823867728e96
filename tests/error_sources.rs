//! Errors keep the error beneath them: `std::error::Error::source` walks from an
//! `AgentError` down to the `reqwest::Error`, `std::io::Error`, `rusqlite::Error` or
//! `tokio_postgres::Error` that caused it, each found by a downcast.

use std::error::Error;
use std::path::Path;
use std::sync::Arc;

use tool_sdk::ToolRegistry;
use tool_sdk::agent::{Agent, AgentConfig, AgentError, ConfigError};
use tool_sdk::mcp::{McpClient, McpServerConfig};
use tool_sdk::model::anthropic::AnthropicModel;
use tool_sdk::model::{ModelError, RetryPolicy, ScriptedModel};
use tool_sdk::session::{PostgresStore, SessionError, SqliteStore};

/// The first error of type `T` in `error`'s chain, `error` included.
fn find<'a, T: Error + 'static>(error: &'a (dyn Error + 'static)) -> Option<&'a T> {
    let mut next = Some(error);
    while let Some(error) = next {
        if let Some(found) = error.downcast_ref::<T>() {
            return Some(found);
        }
        next = error.source();
    }
    None
}

fn config() -> AgentConfig {
    AgentConfig::new()
        .with_registry(Arc::new(ToolRegistry::new()))
        .with_model(ScriptedModel::new([]))
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    listener.local_addr().expect("an address").port()
}

#[tokio::test]
async fn a_model_that_refuses_the_connection_leads_to_reqwest() {
    let model = AnthropicModel::new("claude-test", "test-key")
        .with_base_url(format!("http://127.0.0.1:{}", closed_port()))
        .with_retry(RetryPolicy::none());
    let agent = Agent::create(config().with_model(model)).await.unwrap();
    let error = agent.prompt("hi").await.unwrap_err();
    assert!(
        matches!(&error, AgentError::Model(ModelError::Transport { .. })),
        "{error:?}"
    );
    let reqwest = find::<reqwest::Error>(&error).expect("the reqwest error beneath");
    assert!(reqwest.is_connect(), "{reqwest:?}");
    // Deeper still: the operating system's refusal.
    let io = find::<std::io::Error>(&error).expect("the I/O error beneath reqwest");
    assert_eq!(io.kind(), std::io::ErrorKind::ConnectionRefused);
    // A clone (run results and events carry errors) keeps the chain.
    assert!(find::<reqwest::Error>(&error.clone()).is_some());
}

#[tokio::test]
async fn a_session_file_that_is_not_a_database_leads_to_rusqlite() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    std::fs::write(
        &path,
        "this is not a database, but it is long enough to have a header",
    )
    .unwrap();
    let mut config = config();
    config.session.store = Some(format!("sqlite:{}", path.display()).into());
    let error = Agent::create(config).await.unwrap_err();
    assert!(
        matches!(&error, AgentError::Session(SessionError::Corrupt { .. })),
        "{error:?}"
    );
    let sqlite = find::<rusqlite::Error>(&error).expect("the SQLite error beneath");
    assert_eq!(
        sqlite.sqlite_error_code(),
        Some(rusqlite::ErrorCode::NotADatabase)
    );
}

#[test]
fn a_session_file_that_cannot_be_created_leads_to_io() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing").join("sessions.db");
    let error = SqliteStore::open(&path).unwrap_err();
    assert!(matches!(&error, SessionError::Open { .. }), "{error:?}");
    let io = find::<std::io::Error>(&error).expect("the I/O error beneath");
    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
}

#[tokio::test]
async fn a_postgres_server_that_is_not_there_leads_to_tokio_postgres() {
    let url = format!("postgres://nobody@127.0.0.1:{}/sessions", closed_port());
    let error = PostgresStore::connect(&url).await.unwrap_err();
    assert!(matches!(&error, SessionError::Open { .. }), "{error:?}");
    let postgres = find::<tokio_postgres::Error>(&error).expect("the PostgreSQL error beneath");
    assert!(postgres.to_string().contains("connect"), "{postgres}");
    let io = find::<std::io::Error>(&error).expect("the I/O error beneath tokio-postgres");
    assert_eq!(io.kind(), std::io::ErrorKind::ConnectionRefused);
}

#[test]
fn a_config_file_that_cannot_be_read_leads_to_io() {
    let error = AgentConfig::from_file(Path::new("/no/such/dir/agent.toml")).unwrap_err();
    let AgentError::Config(ConfigError::ReadFile { path, source }) = &error else {
        panic!("{error:?}");
    };
    assert_eq!(path, Path::new("/no/such/dir/agent.toml"));
    assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
    assert!(find::<std::io::Error>(&error).is_some());
    assert!(
        error
            .to_string()
            .contains("cannot read /no/such/dir/agent.toml"),
        "{error}"
    );
}

#[test]
fn bad_toml_leads_to_the_toml_error_with_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.toml");
    std::fs::write(&path, "max_turns = = 3\n").unwrap();
    let error = AgentConfig::from_file(&path).unwrap_err();
    let AgentError::Config(ConfigError::BadFile { path: named, .. }) = &error else {
        panic!("{error:?}");
    };
    assert_eq!(*named, path);
    let toml = find::<toml::de::Error>(&error).expect("the TOML error beneath");
    assert!(toml.span().is_some(), "{toml:?}");
}

#[tokio::test]
async fn a_missing_model_is_its_own_variant() {
    let config = AgentConfig::new().with_registry(Arc::new(ToolRegistry::new()));
    let error = Agent::create(config).await.unwrap_err();
    assert!(
        matches!(&error, AgentError::Config(ConfigError::MissingModel)),
        "{error:?}"
    );
}

#[tokio::test]
async fn an_mcp_command_that_cannot_start_leads_to_io() {
    let config = McpServerConfig::stdio("/no/such/mcp-server", Vec::<String>::new());
    let error = McpClient::connect("nowhere", config).await.unwrap_err();
    let io = find::<std::io::Error>(&error).expect("the I/O error beneath");
    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
    let error = AgentError::from(error);
    assert!(find::<std::io::Error>(&error).is_some());
}

#[test]
fn a_sandboxed_open_that_fails_leads_to_io() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = tool_sdk::permission::Sandbox::new(dir.path()).unwrap();
    let error = sandbox.open_read(Path::new("missing.txt")).unwrap_err();
    let io = find::<std::io::Error>(&error).expect("the I/O error beneath");
    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
}
