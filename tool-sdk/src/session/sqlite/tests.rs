use std::path::PathBuf;

use super::*;
use crate::model::Message;

fn runtime() -> tokio::runtime::Runtime {
    // Timers on: a test that waits for the background checkpoint sleeps between looks.
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_time()
        .build()
        .expect("a runtime")
}

#[test]
fn records_come_back_in_order_and_list_is_newest_first() {
    runtime().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("s.db")).unwrap();
        let first = store.create(NewSession::new("/a")).await.unwrap();
        let second = store.create(NewSession::new("/b")).await.unwrap();
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
        // `first` was appended to last, so it comes first; its title is its first prompt's
        // first line, not changed by later prompts.
        let ids: Vec<_> = store
            .list()
            .await
            .unwrap()
            .into_iter()
            .map(|s| s.id)
            .collect();
        assert_eq!(ids, [first.id.clone(), second.id.clone()]);
        let info = store.get(&first.id).await.unwrap();
        assert_eq!(info.title, "Fix the build");
        assert_eq!(info.working_dir, PathBuf::from("/a"));
        assert!(info.updated_at >= info.created_at);
    });
}

#[test]
fn a_deleted_session_is_gone_with_its_records_and_lease_and_the_others_stay() {
    runtime().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("s.db")).unwrap();
        let kept = store.create(NewSession::new("/a")).await.unwrap();
        let gone = store.create(NewSession::new("/a")).await.unwrap();
        let prompt = Record::user(Message::user("hello?"));
        store.append(&kept.id, &prompt).await.unwrap();
        store.append(&gone.id, &prompt).await.unwrap();
        store
            .acquire(&gone.id, "me", Duration::from_secs(60))
            .await
            .unwrap();

        store.delete(&gone.id).await.unwrap();
        let unknown = |error| matches!(error, SessionError::UnknownSession { id } if id == gone.id);
        assert!(unknown(store.get(&gone.id).await.unwrap_err()));
        assert!(unknown(store.append(&gone.id, &prompt).await.unwrap_err()));
        assert!(unknown(store.delete(&gone.id).await.unwrap_err()));
        let connection = Connection::open(dir.path().join("s.db")).unwrap();
        let rows: i64 = connection
            .query_row(
                "SELECT (SELECT COUNT(*) FROM records WHERE session_id = ?1)
                      + (SELECT COUNT(*) FROM leases WHERE session_id = ?1)",
                params![gone.id],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(rows, 0);
        let listed: Vec<_> = store
            .list()
            .await
            .unwrap()
            .into_iter()
            .map(|s| s.id)
            .collect();
        assert_eq!(store.load(&kept.id).await.unwrap(), [prompt]);
        assert_eq!(listed, [kept.id]);
    });
}

#[test]
fn an_unknown_session_is_an_error_that_changes_nothing() {
    runtime().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("s.db")).unwrap();
        let record = Record::user(Message::user("hi"));
        let error = store.append("nope", &record).await.unwrap_err();
        assert!(matches!(&error, SessionError::UnknownSession { id } if id == "nope"));
        assert!(error.to_string().contains("no session `nope`"));
        assert!(matches!(
            store.load("nope").await,
            Err(SessionError::UnknownSession { .. })
        ));
        assert!(store.list().await.unwrap().is_empty());
    });
}

#[test]
fn a_file_of_schema_1_gains_leases_and_keeps_its_sessions() {
    runtime().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        // A file as the first release wrote it: migration 1 only.
        let connection = Connection::open(&path).unwrap();
        connection.execute_batch(MIGRATIONS[0]).unwrap();
        connection.pragma_update(None, "user_version", 1).unwrap();
        connection
            .execute(
                "INSERT INTO sessions VALUES ('old', 'Old', '/w', 1, 1, 1, NULL, NULL)",
                [],
            )
            .unwrap();
        drop(connection);

        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(store.get("old").await.unwrap().title, "Old");
        let lease = store
            .acquire("old", "me", Duration::from_secs(5))
            .await
            .unwrap();
        assert!(matches!(
            store.acquire("old", "you", Duration::from_secs(5)).await,
            Err(SessionError::Busy { holder, .. }) if holder == "me"
        ));
        store.release(&lease).await.unwrap();
        let version: i64 = store
            .with_connection(|connection, _| {
                Ok(connection
                    .query_row("PRAGMA user_version", [], |row| row.get(0))
                    .unwrap())
            })
            .await
            .unwrap();
        assert_eq!(version, 2);
    });
}

#[test]
fn append_all_stores_in_order_titles_and_reorders_list() {
    runtime().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("s.db")).unwrap();
        let first = store.create(NewSession::new("/w")).await.unwrap();
        let second = store.create(NewSession::new("/w")).await.unwrap();
        let records = [
            Record::user(Message::user("one")),
            Record::model_turn(Message::assistant("two")),
            Record::user(Message::user("three")),
        ];
        store.append_all(&first.id, &records).await.unwrap();
        assert_eq!(store.load(&first.id).await.unwrap(), records);
        // The first user message titles the session; the session is listed first again
        // once it is appended to after another.
        assert_eq!(store.get(&first.id).await.unwrap().title, "one");
        store.append_all(&second.id, &records[..1]).await.unwrap();
        store.append_all(&first.id, &records[1..2]).await.unwrap();
        let listed: Vec<_> = store
            .list()
            .await
            .unwrap()
            .into_iter()
            .map(|s| s.id)
            .collect();
        assert_eq!(listed, [first.id.clone(), second.id.clone()]);

        // An unknown session is refused; an empty batch is nothing to do.
        let unknown = store.append_all("nope", &records).await.unwrap_err();
        assert!(matches!(unknown, SessionError::UnknownSession { id } if id == "nope"));
        assert!(store.append_all(&first.id, &[]).await.is_ok());
        assert_eq!(store.load(&first.id).await.unwrap().len(), 4);
    });
}

#[test]
fn an_append_waits_for_another_writer_without_stalling_the_runtime() {
    // One thread for every task: an append that waited for the lock on it would stop the
    // ticker too.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let store = SqliteStore::open(&path).unwrap();
    let id = runtime
        .block_on(store.create(NewSession::new("/w")))
        .unwrap()
        .id;
    // Another process's writer, as SQLite sees it: its own connection holding the lock.
    let other = Connection::open(&path).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let writer = std::thread::spawn(move || {
        released.recv().unwrap();
        other.execute_batch("COMMIT").unwrap();
    });
    runtime.block_on(async {
        let ticks = Arc::new(AtomicUsize::new(0));
        let ticker = tokio::spawn({
            let ticks = ticks.clone();
            async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    if ticks.fetch_add(1, Ordering::SeqCst) == 10 {
                        release.send(()).unwrap();
                    }
                }
            }
        });
        store
            .append(&id, &Record::user(Message::user("after the other")))
            .await
            .unwrap();
        ticker.abort();
        assert!(
            ticks.load(Ordering::SeqCst) > 10,
            "the runtime kept running"
        );
    });
    writer.join().unwrap();
    assert_eq!(runtime.block_on(store.load(&id)).unwrap().len(), 1);
}

#[test]
fn the_log_is_checkpointed_into_the_file() {
    runtime().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let store = SqliteStore::open(&path).unwrap();
        let id = store.create(NewSession::new("/w")).await.unwrap().id;
        let size = || std::fs::metadata(&path).unwrap().len();
        let before = size();
        // Each record fills about a page: past the threshold, a checkpoint copies the
        // log's pages into the file.
        let record = Record::user(Message::user("x".repeat(3000)));
        for _ in 0..CHECKPOINT_PAGES + 10 {
            store.append(&id, &record).await.unwrap();
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while size() < before + 1_000_000 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(size() >= before + 1_000_000, "{} bytes", size());
        assert_eq!(store.load(&id).await.unwrap().len(), CHECKPOINT_PAGES + 10);
    });
}

#[test]
fn what_an_append_remembers_is_dropped_when_another_connection_writes() {
    runtime().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let (here, there) = (
            SqliteStore::open(&path).unwrap(),
            SqliteStore::open(&path).unwrap(),
        );
        let first = here.create(NewSession::new("/w")).await.unwrap().id;
        let second = here.create(NewSession::new("/w")).await.unwrap().id;
        let record = |text: &str| Record::user(Message::user(text));
        here.append(&first, &record("1")).await.unwrap();
        // Another connection appends to the same session, then to another one.
        there.append(&first, &record("2")).await.unwrap();
        there.append(&second, &record("x")).await.unwrap();
        // This connection's next append takes the next seq and puts its session first.
        here.append(&first, &record("3")).await.unwrap();
        assert_eq!(
            here.load(&first).await.unwrap(),
            [record("1"), record("2"), record("3")]
        );
        let listed: Vec<_> = there
            .list()
            .await
            .unwrap()
            .into_iter()
            .map(|s| s.id)
            .collect();
        assert_eq!(listed, [first, second]);
    });
}

#[test]
fn a_newer_schema_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    drop(SqliteStore::open(&path).unwrap());
    let connection = Connection::open(&path).unwrap();
    connection.pragma_update(None, "user_version", 99).unwrap();
    drop(connection);
    let error = SqliteStore::open(&path).unwrap_err();
    assert!(matches!(
        &error,
        SessionError::NewerSchema { path: p, found: 99, supported }
            if *p == path && *supported == MIGRATIONS.len() as i64
    ));
    let connection = Connection::open(&path).unwrap();
    let version: i64 = connection
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .unwrap();
    assert_eq!(version, 99);
}
