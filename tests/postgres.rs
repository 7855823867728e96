//! `PostgresStore` against a real PostgreSQL server that each test starts in a temp dir (on a
//! Unix socket there, no TCP), and the leases of both stores: one session is run by one
//! process at a time, even across processes (this binary re-executed), and a lease from a
//! killed process expires.
//!
//! Needs Debian's `postgresql` server package (`initdb`, `pg_ctl`); `.ci/run` installs it.
//! Without it these tests fail and say so.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tool_sdk::model::Message;
use tool_sdk::session::{
    ForkPoint, NewSession, PostgresStore, Record, SessionError, SessionStore, SqliteStore,
    open_store,
};

// ---- the server ----

/// A PostgreSQL server of this test's own: data and socket in a temp dir, stopped on drop.
struct Server {
    dir: tempfile::TempDir,
    bin: PathBuf,
    /// PostgreSQL refuses to run as root: when the tests do, the server runs as `postgres`.
    as_postgres: bool,
}

impl Server {
    fn start() -> Server {
        let bin = postgres_bin();
        // In /tmp, not $TMPDIR: the `postgres` user must reach it, and a socket path must be
        // short (about 100 bytes).
        let dir = tempfile::Builder::new()
            .prefix("pg")
            .tempdir_in("/tmp")
            .expect("a temp dir in /tmp");
        let as_postgres = std::fs::metadata(dir.path()).expect("the temp dir").uid() == 0;
        if as_postgres {
            run(Command::new("chown").arg("postgres:").arg(dir.path()));
        }
        let server = Server {
            dir,
            bin,
            as_postgres,
        };
        run(server.tool("initdb").arg("-D").arg(server.data()).args([
            "--auth=trust",
            "-U",
            "postgres",
            "-E",
            "UTF8",
            "--no-sync",
        ]));
        server.resume();
        server
    }

    /// Starts the server (again) and waits until it accepts connections.
    fn resume(&self) {
        let options = format!(
            "-k {} -c listen_addresses='' -c port=5432 -c fsync=off",
            self.dir.path().display()
        );
        run(self
            .tool("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .arg("-l")
            .arg(self.dir.path().join("server.log"))
            .args(["-w", "-t", "60", "-o", &options, "start"]));
    }

    /// Stops the server: sessions must survive this.
    fn stop(&self) {
        run(self
            .tool("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-m", "fast", "-w", "stop"]));
    }

    /// A URL with the socket's directory as its host, percent-encoded.
    fn url(&self) -> String {
        let host = self.dir.path().display().to_string().replace('/', "%2F");
        format!("postgresql://postgres@{host}:5432/postgres")
    }

    /// The same server in the `key=value` form.
    fn key_value(&self) -> String {
        format!(
            "host={} port=5432 user=postgres dbname=postgres",
            self.dir.path().display()
        )
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn tool(&self, name: &str) -> Command {
        let program = self.bin.join(name);
        match self.as_postgres {
            true => {
                let mut command = Command::new("runuser");
                command.args(["-u", "postgres", "--"]).arg(program);
                command
            }
            false => Command::new(program),
        }
    }

    /// A plain client, for looking under the store.
    async fn sql(&self) -> tokio_postgres::Client {
        let (client, connection) = tokio_postgres::connect(&self.url(), tokio_postgres::NoTls)
            .await
            .expect("a direct connection");
        tokio::spawn(connection);
        client
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self
            .tool("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "-w", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// The directory of `initdb` and `pg_ctl`: Debian's newest `/usr/lib/postgresql/N/bin`, or
/// wherever `PATH` has them.
fn postgres_bin() -> PathBuf {
    let mut debian: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    debian.sort();
    if let Some((_, bin)) = debian.pop() {
        return bin;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .find(|dir| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file())
        .unwrap_or_else(|| {
            panic!(
                "PostgreSQL's server programs (initdb, pg_ctl) are not installed, and these \
                 tests start their own server: install Debian's `postgresql` package \
                 (apt-get install postgresql), as .ci/run does"
            )
        })
}

fn run(command: &mut Command) {
    let output = command.output().expect("the command starts");
    assert!(
        output.status.success(),
        "{command:?} failed: {}\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

// ---- sessions ----

fn texts(records: &[Record]) -> Vec<String> {
    records
        .iter()
        .map(|record| match record {
            Record::UserMessage { message } | Record::ModelTurn { message } => message.text(),
            other => other.kind().to_owned(),
        })
        .collect()
}

#[tokio::test]
async fn sessions_records_and_list_newest_first() {
    let server = Server::start();
    let store = PostgresStore::connect(&server.url()).await.unwrap();
    let first = store.create(NewSession::new("/a")).await.unwrap();
    let second = store
        .create(NewSession::new("/b").with_title("Given"))
        .await
        .unwrap();
    let records = [
        Record::user(Message::user("Fix the build\nsecond line")),
        Record::model_turn(Message::assistant("On it.")),
        Record::user(Message::user("Thanks")),
    ];
    for record in &records {
        store.append(&first.id, record).await.unwrap();
    }
    assert_eq!(store.load(&first.id).await.unwrap(), records);
    assert!(store.load(&second.id).await.unwrap().is_empty());

    // `first` was appended to last, so it comes first; its title is its first prompt's first
    // line, not changed by later prompts.
    let ids = |list: Vec<tool_sdk::session::SessionInfo>| -> Vec<String> {
        list.into_iter().map(|s| s.id).collect()
    };
    assert_eq!(
        ids(store.list().await.unwrap()),
        [first.id.clone(), second.id.clone()]
    );
    let info = store.get(&first.id).await.unwrap();
    assert_eq!(info.title, "Fix the build");
    assert_eq!(info.working_dir, PathBuf::from("/a"));
    assert!(info.updated_at > info.created_at);
    assert_eq!(info.created_at, first.created_at);

    // A given title is kept; appending moves a session to the front.
    store
        .append(&second.id, &Record::user(Message::user("Not the title")))
        .await
        .unwrap();
    assert_eq!(store.get(&second.id).await.unwrap().title, "Given");
    assert_eq!(
        ids(store.list().await.unwrap()),
        [second.id.clone(), first.id.clone()]
    );

    // A fork keeps its fork point; a third session is newest until the others change.
    let fork = store
        .create(NewSession::new("/a").with_parent(ForkPoint {
            session: first.id.clone(),
            at: 2,
        }))
        .await
        .unwrap();
    let stored = store.get(&fork.id).await.unwrap();
    assert_eq!(stored, fork);
    assert_eq!(store.list().await.unwrap()[0].id, fork.id);

    // The same database through `open_store` (a config file's URL) and the key=value form.
    let opened = open_store(&server.url()).unwrap();
    assert_eq!(texts(&opened.load(&first.id).await.unwrap()).len(), 3);
    let key_value = PostgresStore::connect(&server.key_value()).await.unwrap();
    assert_eq!(key_value.list().await.unwrap().len(), 3);
    let query_host = format!(
        "postgres://postgres@/postgres?host={}&port=5432",
        server.dir.path().display()
    );
    let query_host = PostgresStore::connect(&query_host).await.unwrap();
    assert_eq!(query_host.get(&fork.id).await.unwrap(), fork);
}

#[tokio::test]
async fn an_unknown_session_is_an_error_that_changes_nothing() {
    let server = Server::start();
    let store = PostgresStore::connect(&server.url()).await.unwrap();
    let record = Record::user(Message::user("hi"));
    let unknown =
        |error: &SessionError| matches!(error, SessionError::UnknownSession { id } if id == "nope");
    assert!(unknown(&store.append("nope", &record).await.unwrap_err()));
    assert!(unknown(&store.load("nope").await.unwrap_err()));
    assert!(unknown(&store.get("nope").await.unwrap_err()));
    let error = store
        .acquire("nope", "me", Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(unknown(&error), "{error:?}");
    assert!(error.to_string().contains("no session `nope`"), "{error}");
    assert!(store.list().await.unwrap().is_empty());
    let client = server.sql().await;
    let rows: i64 = client
        .query_one("SELECT count(*) FROM records", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(rows, 0);
}

#[tokio::test]
async fn a_server_restart_keeps_everything_and_the_store_reconnects() {
    let server = Server::start();
    let store = PostgresStore::connect(&server.url()).await.unwrap();
    let session = store.create(NewSession::new("/w")).await.unwrap();
    let before = Record::user(Message::user("before the restart"));
    store.append(&session.id, &before).await.unwrap();

    server.stop();
    // While it is down: a clear error naming the database, not a hang or a panic.
    let error = store.load(&session.id).await.unwrap_err();
    assert!(
        matches!(
            error,
            SessionError::Storage { .. } | SessionError::Open { .. }
        ),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("postgresql://postgres@"),
        "{error}"
    );
    server.resume();

    // The same store connects again; a new one sees the same sessions.
    let after = Record::model_turn(Message::assistant("after it"));
    store.append(&session.id, &after).await.unwrap();
    let reopened = PostgresStore::connect(&server.url()).await.unwrap();
    assert_eq!(
        reopened.load(&session.id).await.unwrap(),
        [before, after.clone()]
    );
    assert_eq!(
        reopened.get(&session.id).await.unwrap().title,
        "before the restart"
    );
    assert_eq!(reopened.list().await.unwrap().len(), 1);

    // A restart while the store sits idle is found out by the next call, which is made again
    // on a new connection: nothing was committed on the dead one.
    server.stop();
    server.resume();
    let third = Record::user(Message::user("after another"));
    store.append(&session.id, &third).await.unwrap();
    assert_eq!(store.load(&session.id).await.unwrap().len(), 3);
}

#[tokio::test]
async fn a_newer_schema_is_refused_and_left_alone() {
    let server = Server::start();
    drop(PostgresStore::connect(&server.url()).await.unwrap());
    let client = server.sql().await;
    // Every migration ran.
    assert_eq!(schema_version(&client).await, 3);
    client
        .execute("UPDATE session_schema SET version = 99", &[])
        .await
        .unwrap();

    let error = PostgresStore::connect(&server.url()).await.unwrap_err();
    assert!(
        matches!(
            error,
            SessionError::NewerSchema {
                found: 99,
                supported: 3,
                ..
            }
        ),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains("schema version 99"), "{message}");
    assert!(message.contains("upgrade tool-sdk"), "{message}");
    assert!(message.contains("postgresql://postgres@"), "{message}");
    assert_eq!(schema_version(&client).await, 99);
}

async fn schema_version(client: &tokio_postgres::Client) -> i64 {
    client
        .query_one("SELECT version FROM session_schema", &[])
        .await
        .unwrap()
        .get(0)
}

#[tokio::test]
async fn a_server_that_is_not_there_is_named_without_its_password() {
    // Port 1 on loopback: nothing listens there, the connection is refused at once.
    let url = "postgres://agent:hunter2@127.0.0.1:1/sessions";
    let error = PostgresStore::connect(url).await.unwrap_err();
    let message = error.to_string();
    assert!(matches!(error, SessionError::Open { .. }), "{error:?}");
    assert!(
        message.contains("postgres://agent:***@127.0.0.1:1/sessions"),
        "{message}"
    );
    assert!(message.to_lowercase().contains("refused"), "{message}");
    assert!(!message.contains("hunter2"), "{message}");

    // `open_store` connects on first use, and says the same then.
    let store = open_store(url).unwrap();
    let message = store.list().await.unwrap_err().to_string();
    assert!(message.contains("127.0.0.1:1"), "{message}");
    assert!(!message.contains("hunter2"), "{message}");

    // A malformed URL is refused at once, without its password either.
    let Err(error) = open_store("postgres://agent:hunter2@host:notaport/db") else {
        panic!("a malformed URL was accepted");
    };
    let message = error.to_string();
    assert!(message.contains("not a PostgreSQL URL"), "{message}");
    assert!(!message.contains("hunter2"), "{message}");
}

// ---- leases, in one process ----

/// What every store's leases must do.
async fn leases_keep_one_holder(store: &dyn SessionStore) {
    let session = store.create(NewSession::new("/w")).await.unwrap();
    let ttl = Duration::from_secs(30);

    let lease = store.acquire(&session.id, "pid 1 on a", ttl).await.unwrap();
    assert_eq!(lease.session(), session.id);
    assert_eq!(lease.holder(), "pid 1 on a");
    assert!(lease.expires_in() <= ttl && lease.expires_in() > Duration::from_secs(25));

    // Held: another holder, or the same one again, is refused with the holder's name.
    for other in ["pid 2 on b", "pid 1 on a"] {
        let error = store.acquire(&session.id, other, ttl).await.unwrap_err();
        let SessionError::Busy {
            id,
            holder,
            expires_in,
        } = &error
        else {
            panic!("expected Busy, got {error:?}");
        };
        assert_eq!(
            (id.as_str(), holder.as_str()),
            (session.id.as_str(), "pid 1 on a")
        );
        assert!(*expires_in <= ttl && *expires_in > Duration::from_secs(25));
        assert_eq!(
            error.to_string(),
            format!(
                "session `{}` is busy: process pid 1 on a holds it (its lease expires in 30 s \
                 if that process died)",
                session.id
            )
        );
    }

    // Renewed, then released: the next taker gets it at once.
    let lease = store.renew(&lease).await.unwrap();
    store.release(&lease).await.unwrap();
    store.release(&lease).await.unwrap();
    let second = store.acquire(&session.id, "pid 2 on b", ttl).await.unwrap();
    // The first holder's renewal now fails: someone else runs the session.
    let error = store.renew(&lease).await.unwrap_err();
    assert!(
        matches!(&error, SessionError::Busy { holder, .. } if holder == "pid 2 on b"),
        "{error:?}"
    );
    // A stale release does not free the new holder's lease.
    store.release(&lease).await.unwrap();
    assert!(matches!(
        store.acquire(&session.id, "pid 3 on c", ttl).await,
        Err(SessionError::Busy { .. })
    ));
    store.release(&second).await.unwrap();
    let error = store.renew(&second).await.unwrap_err();
    assert!(
        matches!(
            &error,
            SessionError::LeaseLost { id, holder } if *id == session.id && holder == "pid 2 on b"
        ),
        "{:?}",
        error
    );
    assert!(error.to_string().contains("is lost"), "{error}");

    // A lease not renewed expires; its holder's late renewal then fails.
    let short = store
        .acquire(&session.id, "pid 4 on d", Duration::from_millis(300))
        .await
        .unwrap();
    assert!(store.acquire(&session.id, "pid 5 on e", ttl).await.is_err());
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(short.expires_in(), Duration::ZERO);
    let taker = store.acquire(&session.id, "pid 5 on e", ttl).await.unwrap();
    assert!(matches!(
        store.renew(&short).await,
        Err(SessionError::Busy { .. })
    ));
    store.release(&taker).await.unwrap();

    // A lease that expired but was not taken is renewed: nobody ran the session meanwhile.
    let short = store
        .acquire(&session.id, "pid 6 on f", Duration::from_millis(100))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let renewed = store.renew(&short).await.unwrap();
    assert!(renewed.expires_in() > Duration::ZERO);

    // Leases are per session.
    let other = store.create(NewSession::new("/w")).await.unwrap();
    store.acquire(&other.id, "pid 5 on e", ttl).await.unwrap();

    // Appends are fenced by the lease, in their own transaction: a holder whose lease lapsed
    // and was taken stores nothing more, while the taker's appends go in.
    let fenced = store.create(NewSession::new("/w")).await.unwrap();
    let stale = store
        .acquire(&fenced.id, "pid 7 on g", Duration::from_millis(100))
        .await
        .unwrap();
    let said = |text: &str| [Record::user(Message::user(text))];
    store
        .append_leased(&stale, &said("while held"))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let taker = store.acquire(&fenced.id, "pid 8 on h", ttl).await.unwrap();
    let error = store
        .append_leased(&stale, &said("after the takeover"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            &error,
            SessionError::LeaseLost { id, holder } if *id == fenced.id && holder == "pid 7 on g"
        ),
        "{:?}",
        error
    );
    store
        .append_leased(&taker, &said("the taker's"))
        .await
        .unwrap();
    assert_eq!(
        texts(&store.load(&fenced.id).await.unwrap()),
        ["while held", "the taker's"]
    );

    // A live lease is taken over from a holder named as gone, and only from that one.
    let error = store
        .take_over(&fenced.id, "pid 9 on i", ttl, "pid 7 on g")
        .await
        .unwrap_err();
    assert!(
        matches!(&error, SessionError::Busy { holder, .. } if holder == "pid 8 on h"),
        "{error:?}"
    );
    let heir = store
        .take_over(&fenced.id, "pid 9 on i", ttl, "pid 8 on h")
        .await
        .unwrap();
    assert_eq!(heir.holder(), "pid 9 on i");
    assert!(matches!(
        store.append_leased(&taker, &said("late")).await,
        Err(SessionError::LeaseLost { .. })
    ));
}

#[tokio::test]
async fn postgres_leases_keep_one_holder() {
    let server = Server::start();
    let store = PostgresStore::connect(&server.url()).await.unwrap();
    leases_keep_one_holder(&store).await;
}

#[tokio::test]
async fn sqlite_leases_keep_one_holder() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("sessions.db")).unwrap();
    leases_keep_one_holder(&store).await;
    // Through the trait object the agent holds, too.
    let shared: Arc<dyn SessionStore> = Arc::new(store);
    let session = shared.create(NewSession::new("/w")).await.unwrap();
    let lease = shared
        .acquire(&session.id, "me", Duration::from_secs(1))
        .await
        .unwrap();
    shared.release(&lease).await.unwrap();
}

// ---- two processes ----

/// The variable that tells a re-executed test binary which part to play.
const ROLE: &str = "TOOL_SDK_PG_TEST_ROLE";
const URL: &str = "TOOL_SDK_PG_TEST_URL";
const SESSION: &str = "TOOL_SDK_PG_TEST_SESSION";
/// What a child's lines start with, to tell them from the test harness's own.
const MARK: &str = "@@child ";
/// The lease's ttl in the two-process test: short, so a dead holder's lease frees quickly;
/// a live holder renews it every third of it.
const CHILD_TTL: Duration = Duration::from_secs(2);

/// A re-executed copy of this test binary, running only `child`, in the role `role`.
struct Peer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Peer {
    fn spawn(role: &str, url: &str, session: &str) -> Peer {
        let mut child = Command::new(std::env::current_exe().expect("the test binary"))
            .args([
                "--exact",
                "child",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(ROLE, role)
            .env(URL, url)
            .env(SESSION, session)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the test binary runs again");
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        Peer {
            child,
            stdin,
            stdout,
        }
    }

    /// The child's next line, without the mark.
    fn line(&mut self) -> String {
        let mut line = String::new();
        loop {
            line.clear();
            let read = self
                .stdout
                .read_line(&mut line)
                .expect("the child's output");
            assert!(read > 0, "the child ended without answering");
            if let Some(at) = line.find(MARK) {
                return line[at + MARK.len()..].trim_end().to_owned();
            }
        }
    }

    fn tell(&mut self, what: &str) {
        writeln!(self.stdin, "{what}").expect("the child reads");
        self.stdin.flush().expect("the child reads");
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The other side of the two-process tests; run by them with `ROLE` set, never on its own.
#[test]
#[ignore = "a child process of the two-process tests"]
fn child() {
    // Run with `--ignored` but not by a two-process test: nothing to play.
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let url = std::env::var(URL).expect("the URL");
    let session = std::env::var(SESSION).expect("the session");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async move {
        let store = PostgresStore::connect(&url)
            .await
            .expect("the child connects");
        let holder = format!("pid {}", std::process::id());
        let mut commands =
            tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(tokio::io::stdin()));
        match role.as_str() {
            // Try to take the lease; hold it (renewing) once taken; on "retry", try again.
            "lease" => loop {
                match store.acquire(&session, &holder, CHILD_TTL).await {
                    Ok(mut lease) => {
                        println!("{MARK}won {holder}");
                        loop {
                            tokio::time::sleep(lease.renew_every()).await;
                            lease = store.renew(&lease).await.expect("the winner renews");
                        }
                    }
                    Err(error @ SessionError::Busy { .. }) => println!("{MARK}busy {error}"),
                    Err(error) => panic!("acquire failed: {error}"),
                }
                match commands.next_line().await {
                    Ok(Some(line)) if line == "retry" => continue,
                    _ => return,
                }
            },
            // On "go", append 100 records tagged with this process's pid.
            "append" => {
                println!("{MARK}ready");
                let go = commands.next_line().await.expect("stdin");
                assert_eq!(go.as_deref(), Some("go"));
                for i in 0..100 {
                    let record = Record::user(Message::user(format!("{holder} {i}")));
                    store.append(&session, &record).await.expect("append");
                }
                println!("{MARK}done {holder}");
            }
            other => panic!("unknown role {other}"),
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_one_lease_and_a_killed_holder_expires() {
    let server = Server::start();
    let store = PostgresStore::connect(&server.url()).await.unwrap();
    let session = store.create(NewSession::new("/w")).await.unwrap();
    let id = session.id.clone();
    let url = server.url();

    // Both children start at once and race for the lease; each reports what it got.
    let (winner, mut loser) = tokio::task::spawn_blocking(move || {
        let mut a = Peer::spawn("lease", &url, &id);
        let mut b = Peer::spawn("lease", &url, &id);
        let (first_a, first_b) = (a.line(), b.line());
        let winner_is_a = first_a.starts_with("won ");
        assert!(
            winner_is_a != first_b.starts_with("won "),
            "exactly one child must win: {first_a:?} / {first_b:?}"
        );
        let (winner, loser, winner_line, loser_line) = match winner_is_a {
            true => (a, b, first_a, first_b),
            false => (b, a, first_b, first_a),
        };
        let winner_pid = format!("pid {}", winner.child.id());
        assert_eq!(winner_line, format!("won {winner_pid}"));
        assert!(
            loser_line.starts_with("busy session `")
                && loser_line.contains(&format!("process {winner_pid} holds it")),
            "{loser_line}"
        );
        (winner, loser)
    })
    .await
    .unwrap();

    // Past the ttl the winner still holds it: it renews while it lives.
    tokio::time::sleep(CHILD_TTL + Duration::from_millis(500)).await;
    let (mut winner, mut loser) = tokio::task::spawn_blocking(move || {
        loser.tell("retry");
        let line = loser.line();
        assert!(line.starts_with("busy "), "{line}");
        (winner, loser)
    })
    .await
    .unwrap();

    // SIGKILL: no destructor, no release. The lease outlives the process until its ttl.
    winner.child.kill().unwrap();
    winner.child.wait().unwrap();
    let killed = Instant::now();
    let taken = tokio::task::spawn_blocking(move || {
        loser.tell("retry");
        let line = loser.line();
        assert!(line.starts_with("busy "), "right after the kill: {line}");
        loop {
            std::thread::sleep(Duration::from_millis(100));
            loser.tell("retry");
            let line = loser.line();
            if line.starts_with("won ") {
                return (loser, killed.elapsed());
            }
            assert!(line.starts_with("busy "), "{line}");
            assert!(
                killed.elapsed() < CHILD_TTL + Duration::from_secs(5),
                "the killed holder's lease never expired"
            );
        }
    })
    .await
    .unwrap();
    let (loser, waited) = taken;
    assert!(waited <= CHILD_TTL + Duration::from_secs(1), "{waited:?}");

    // The survivor holds it now, as anyone else asking is told.
    let error = store
        .acquire(&session.id, "the test", CHILD_TTL)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, SessionError::Busy { holder, .. }
            if *holder == format!("pid {}", loser.child.id())),
        "{error:?}"
    );
    drop(winner);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_appending_share_one_gap_free_sequence() {
    let server = Server::start();
    let store = PostgresStore::connect(&server.url()).await.unwrap();
    let session = store.create(NewSession::new("/w")).await.unwrap();
    let url = server.url();
    let id = session.id.clone();
    let pids = tokio::task::spawn_blocking(move || {
        let mut peers = [
            Peer::spawn("append", &url, &id),
            Peer::spawn("append", &url, &id),
        ];
        // Both connected before either starts, so their appends overlap.
        for peer in &mut peers {
            assert_eq!(peer.line(), "ready");
        }
        for peer in &mut peers {
            peer.tell("go");
        }
        let mut pids = Vec::new();
        for peer in &mut peers {
            let pid = format!("pid {}", peer.child.id());
            assert_eq!(peer.line(), format!("done {pid}"));
            assert!(peer.child.wait().unwrap().success());
            pids.push(pid);
        }
        pids
    })
    .await
    .unwrap();

    // Every record once, each process's in its own order.
    let texts = texts(&store.load(&session.id).await.unwrap());
    assert_eq!(texts.len(), 200);
    for pid in &pids {
        let own: Vec<&String> = texts
            .iter()
            .filter(|t| t.starts_with(pid.as_str()))
            .collect();
        let expected: Vec<String> = (0..100).map(|i| format!("{pid} {i}")).collect();
        assert_eq!(own, expected.iter().collect::<Vec<_>>());
    }
    // They did run at the same time: the two processes' records interleave.
    let switches = texts
        .windows(2)
        .filter(|pair| pair[0].split(' ').nth(1) != pair[1].split(' ').nth(1))
        .count();
    assert!(switches > 1, "the appends did not overlap");

    // And the stored sequence numbers are 0..200, no gap, no duplicate.
    let client = server.sql().await;
    let seqs: Vec<i64> = client
        .query(
            "SELECT seq FROM records WHERE session_id = $1 ORDER BY seq",
            &[&session.id],
        )
        .await
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(seqs, (0..200).collect::<Vec<i64>>());
}

// ---- agents on a shared PostgreSQL store ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_on_postgres_resume_each_others_sessions_one_at_a_time() {
    use tool_sdk::agent::{Agent, AgentConfig, AgentError};
    use tool_sdk::model::{ScriptedModel, ScriptedTurn};

    let server = Server::start();
    // Two stores, two connections: stand-ins for two hosts sharing one database.
    let host_a: Arc<dyn SessionStore> =
        Arc::new(PostgresStore::connect(&server.url()).await.unwrap());
    let host_b: Arc<dyn SessionStore> =
        Arc::new(PostgresStore::connect(&server.url()).await.unwrap());
    let dir = tempfile::tempdir().unwrap();
    let config = |store: &Arc<dyn SessionStore>, answer: &str| {
        AgentConfig::new()
            .with_model(ScriptedModel::new([ScriptedTurn::text(answer)]))
            .with_tools(Vec::<String>::new())
            .with_working_dir(dir.path())
            .session(|s| {
                s.with_store(store.clone())
                    .with_lease(tool_sdk::agent::SessionLeasing::Ttl(Duration::from_secs(
                        30,
                    )))
            })
    };

    let on_a = Agent::create(config(&host_a, "Four.")).await.unwrap();
    assert_eq!(on_a.prompt("Two and two?").await.unwrap().text, "Four.");
    let id = on_a.session_id().to_owned();

    // Host B may not run it while host A holds it.
    let busy = Agent::resume(config(&host_b, "-"), &id)
        .await
        .expect_err("busy");
    assert!(
        matches!(busy, AgentError::Session(SessionError::Busy { .. })),
        "{busy:?}"
    );

    // Once A lets go, B picks the conversation up where A left it.
    drop(on_a);
    let deadline = Instant::now() + Duration::from_secs(5);
    let on_b = loop {
        match Agent::resume(config(&host_b, "Eight."), &id).await {
            Ok(agent) => break agent,
            Err(AgentError::Session(SessionError::Busy { .. })) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(other) => panic!("{other}"),
        }
    };
    let result = on_b.prompt("And twice that?").await.unwrap();
    assert_eq!(result.text, "Eight.");
    let texts: Vec<String> = result.messages.iter().map(Message::text).collect();
    assert_eq!(
        texts,
        ["Two and two?", "Four.", "And twice that?", "Eight."]
    );
    assert_eq!(
        host_a.load(&id).await.unwrap(),
        host_b.load(&id).await.unwrap()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_restarted_mid_turn_never_runs_a_call_twice() {
    use std::sync::atomic::Ordering;

    use tests::stepping::{assert_each_ran_once, noted, registry, step_turn, steps_done};
    use tool_sdk::agent::{Agent, AgentConfig};
    use tool_sdk::model::ScriptedModel;
    use tool_sdk::session::stored_conversation;

    let server = Arc::new(Server::start());
    let store: Arc<dyn SessionStore> =
        Arc::new(PostgresStore::connect(&server.url()).await.unwrap());
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().to_path_buf();
    // While step 1's turn streams, the server goes away for 1.2 s: the commit of its
    // read-only call's batch fails, and the mutating call after it must not start.
    let restarted = Arc::new(std::sync::Mutex::new(None));
    let stopped = std::sync::atomic::AtomicBool::new(false);
    let model = {
        let (dir, server, restarted) = (dir.clone(), server.clone(), restarted.clone());
        ScriptedModel::new([]).with_responder(move |request| {
            let mut restarted = restarted.lock().unwrap();
            if steps_done(request.messages.iter()) == 1 && !stopped.swap(true, Ordering::SeqCst) {
                server.stop();
                let server = server.clone();
                *restarted = Some(std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(1200));
                    server.resume();
                }));
            }
            step_turn(&dir, 3, request)
        })
    };
    let agent = Agent::create(
        AgentConfig::new()
            .with_registry(registry())
            .with_working_dir(&dir)
            .session(|s| s.with_store(store.clone()))
            .with_model(model)
            .permissions(|p| p.allow("note_step")),
    )
    .await
    .unwrap();
    let id = agent.session_id().to_owned();
    let error = agent.prompt("Note every step.").await.unwrap_err();
    assert!(
        error.to_string().contains("postgresql://"),
        "the run stops, naming the store: {error}"
    );
    assert_eq!(noted(&dir), [0], "step 1's mutating call did not start");
    let restart = restarted
        .lock()
        .unwrap()
        .take()
        .expect("the server was stopped");
    tokio::task::spawn_blocking(move || restart.join().unwrap())
        .await
        .unwrap();
    // The server back, the next run first takes the conversation back from the store.
    let mut outcome = agent.continue_run().await;
    let mut runs = 2;
    loop {
        assert_eq!(
            agent.messages().await,
            stored_conversation(&*store, &id).await.unwrap(),
            "after run {runs}: the agent's conversation is the stored one"
        );
        match outcome {
            Ok(result) => {
                assert_eq!(result.text, "All noted.");
                break;
            }
            Err(error) => {
                assert!(runs < 3, "the server is back, yet: {error}");
                runs += 1;
                outcome = agent.continue_run().await;
            }
        }
    }
    assert_each_ran_once(&noted(&dir), 3, "a server restarted mid-turn");
}

// ---- hostile text ----

/// A prompt, a tool call's input and its result with NULs and other control characters in
/// them, stored and read back exactly, the session's title taken from the prompt included.
async fn hostile_text_round_trips(store: &dyn SessionStore) {
    let nasty = "before\0after \u{1b}[31m\u{7f} \\u0000 \u{feff}";
    let given = store
        .create(NewSession::new("/w").with_title("given\0title"))
        .await
        .unwrap();
    assert_eq!(store.get(&given.id).await.unwrap().title, "given\0title");
    let session = store.create(NewSession::new("/w")).await.unwrap();
    let call = tool_sdk::model::ToolUse::new(
        "call\0id",
        "write",
        serde_json::json!({"z": nasty, "a": ["\0", {"\0key": 0}]}),
    );
    let records = [
        Record::user(Message::user(nasty)),
        Record::model_turn(Message {
            role: tool_sdk::model::Role::Assistant,
            content: vec![tool_sdk::model::MessageContent::ToolUse(call)],
        }),
        Record::ToolResult {
            block: tool_sdk::model::MessageContent::ToolResult {
                tool_use_id: "call\0id".into(),
                content: vec![tool_sdk::ContentBlock::text(nasty)],
                is_error: false,
            },
        },
    ];
    store.append(&session.id, &records[0]).await.unwrap();
    store.append_all(&session.id, &records[1..]).await.unwrap();
    assert_eq!(store.load(&session.id).await.unwrap(), records);
    let title = store.get(&session.id).await.unwrap().title;
    assert_eq!(title, "before\0after \u{1b}[31m\u{7f} \\u0000 \u{feff}");
    assert!(store.list().await.unwrap().iter().any(|s| s.title == title));
}

#[tokio::test]
async fn postgres_stores_any_text_as_it_was_given() {
    let server = Server::start();
    let store = PostgresStore::connect(&server.url()).await.unwrap();
    hostile_text_round_trips(&store).await;
}

#[tokio::test]
async fn sqlite_stores_any_text_as_it_was_given() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("sessions.db")).unwrap();
    hostile_text_round_trips(&store).await;
}

#[tokio::test]
async fn a_database_of_schema_2_keeps_its_titles() {
    let server = Server::start();
    let client = server.sql().await;
    // The tables as schema 2 had them (titles as text), with a session.
    client
        .batch_execute(
            "CREATE TABLE session_schema (version bigint NOT NULL);
             INSERT INTO session_schema VALUES (2);
             CREATE SEQUENCE sessions_touched;
             CREATE TABLE sessions (
                id text PRIMARY KEY, title text NOT NULL, working_dir text NOT NULL,
                created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL,
                touched bigint NOT NULL, parent_id text, parent_at bigint);
             CREATE INDEX sessions_touched_order ON sessions (touched);
             CREATE TABLE records (
                session_id text NOT NULL REFERENCES sessions (id), seq bigint NOT NULL,
                kind text NOT NULL, body text NOT NULL, created_at timestamptz NOT NULL,
                PRIMARY KEY (session_id, seq));
             CREATE TABLE leases (
                session_id text PRIMARY KEY REFERENCES sessions (id), holder text NOT NULL,
                token text NOT NULL, expires_at timestamptz NOT NULL);
             INSERT INTO sessions VALUES
                ('old', 'Déjà vu', '/w', now(), now(), nextval('sessions_touched'), NULL, NULL),
                ('untitled', '', '/w', now(), now(), nextval('sessions_touched'), NULL, NULL);",
        )
        .await
        .unwrap();
    let store = PostgresStore::connect(&server.url()).await.unwrap();
    assert_eq!(schema_version(&client).await, 3);
    assert_eq!(store.get("old").await.unwrap().title, "Déjà vu");
    // An empty title is still filled by the first prompt, and only by it.
    for prompt in ["first\0prompt", "second"] {
        store
            .append("untitled", &Record::user(Message::user(prompt)))
            .await
            .unwrap();
    }
    assert_eq!(store.get("untitled").await.unwrap().title, "first\0prompt");
}

#[tokio::test]
async fn postgres_refuses_a_fork_of_a_missing_session_and_skips_a_damaged_record() {
    let server = Server::start();
    let store = PostgresStore::connect(&server.url()).await.unwrap();
    let parent = store.create(NewSession::new("/w")).await.unwrap();
    for missing in ["session-nope", "nul\0id"] {
        let error = store
            .create(NewSession::new("/w").with_parent(ForkPoint {
                session: missing.into(),
                at: 0,
            }))
            .await
            .unwrap_err();
        assert!(
            matches!(&error, SessionError::UnknownParent { parent } if parent == missing),
            "{:?}",
            error
        );
    }
    assert_eq!(store.list().await.unwrap().len(), 1, "nothing was created");
    // An id with a NUL is no session's, as on SQLite; where PostgreSQL cannot take a NUL,
    // the error says so.
    let unknown = |error| matches!(error, SessionError::UnknownSession { id } if id == "nul\0id");
    assert!(unknown(store.load("nul\0id").await.unwrap_err()));
    assert!(unknown(store.get("nul\0id").await.unwrap_err()));
    let error = store
        .create(NewSession::new("/nul\0dir"))
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("cannot hold a NUL"), "{error}");
    let fork = store
        .create(NewSession::new("/w").with_parent(ForkPoint {
            session: parent.id.clone(),
            at: 0,
        }))
        .await
        .unwrap();
    assert_eq!(fork.parent.unwrap().session, parent.id);

    // One damaged body: the others still load.
    let records = [
        Record::user(Message::user("one")),
        Record::model_turn(Message::assistant("two")),
        Record::user(Message::user("three")),
    ];
    store.append_all(&parent.id, &records).await.unwrap();
    server
        .sql()
        .await
        .execute(
            "UPDATE records SET body = '{\"kind\": \"from_a_newer_sdk\"}' WHERE seq = 1",
            &[],
        )
        .await
        .unwrap();
    let loaded = store.load(&parent.id).await.unwrap();
    assert_eq!(loaded[0], records[0]);
    assert!(
        matches!(&loaded[1], Record::Unreadable { seq: 1, stored_kind, .. } if stored_kind == "model_turn"),
        "{:?}",
        loaded[1]
    );
    assert_eq!(loaded[2], records[2]);
}
