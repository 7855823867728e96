//! The `coder` example driven in a pseudo-terminal, as a user would: the offline demo asks
//! before editing, `n` leaves the file alone, `y` changes it, and Ctrl-C during a long Bash
//! call cancels the turn (and kills the command) without ending the program.
//!
//! `cargo test --workspace` builds the example before running tests; run alone, this test
//! needs `cargo build -p examples --example coder` first.

#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use expectrl::process::unix::WaitStatus;
use expectrl::session::OsSession as Session;
use expectrl::{ControlCode, Expect};

/// Spelt in pieces so that the demo, run on this repository, does not find it.
const TODO_LINE: &str = concat!("    // TO", "DO: greet the user");

fn coder_binary() -> PathBuf {
    // The test runs from target/<profile>/deps; examples are built into target/<profile>/examples.
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>");
    let coder = profile_dir.join("examples").join("coder");
    assert!(
        coder.is_file(),
        "{} is missing: build it with `cargo build -p examples --example coder` (cargo test \
         --workspace does)",
        coder.display()
    );
    coder
}

/// A small project with one TODO comment.
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("src/main.rs"),
        format!("fn main() {{\n{TODO_LINE}\n    println!(\"hi\");\n}}\n"),
    )
    .unwrap();
    dir
}

fn coder_command(dir: &Path, extra: &[&str]) -> Command {
    let mut command = Command::new(coder_binary());
    command.arg("--cwd").arg(dir).args(extra);
    for key in [
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
    ] {
        command.env_remove(key);
    }
    command.env("TERM", "xterm-256color");
    // Saved conversations go to a data directory of the test's, not the user's.
    command.env("XDG_DATA_HOME", data_home());
    command
}

fn data_home() -> PathBuf {
    std::env::temp_dir().join(format!("coder-pty-data-{}", std::process::id()))
}

/// The pseudo-terminal's size, and so the screen's.
const COLS: u16 = 80;
const ROWS: u16 = 24;

fn start(dir: &Path) -> Session {
    let mut session = Session::spawn(coder_command(dir, &[])).expect("coder starts in a pty");
    session.set_expect_timeout(Some(Duration::from_secs(30)));
    session
        .get_process_mut()
        .set_window_size(COLS, ROWS)
        .unwrap();
    session
}

/// [`start`], in a terminal set up as a user's is: it echoes what is typed (ptys start
/// without echo), `^C` included.
fn start_in_terminal(dir: &Path) -> Session {
    let mut session = start(dir);
    // Set right after exec, well before the coder first reads a line (rustyline keeps the
    // terminal's modes from then on).
    session.get_process_mut().set_echo(true, None).unwrap();
    session
}

/// What the user sees: everything the coder wrote, drawn by a terminal emulator.
struct Screen(vt100::Parser);

impl Screen {
    fn new() -> Self {
        let size = |n| std::num::NonZeroU16::new(n).expect("a screen has rows and columns");
        Screen(vt100::Parser::new(size(ROWS), size(COLS), 0))
    }

    /// Waits for `needle`, drawing what came up to it; returns that text.
    fn expect(&mut self, coder: &mut Session, needle: &str) -> String {
        let found = coder.expect(needle).unwrap();
        self.0.process(found.as_bytes());
        String::from_utf8_lossy(found.as_bytes()).into_owned()
    }

    fn rows(&self) -> Vec<String> {
        self.0.screen().rows(0, COLS).collect()
    }
}

/// Answers the demo's first question with `n` and waits for the turn to end.
fn decline_the_demos_edit(coder: &mut Session) {
    coder.expect("Allow? [y]es / [n]o / [a]lways").unwrap();
    coder.send_line("n").unwrap();
    coder.expect("tool calls").unwrap();
}

/// Ctrl-D at the prompt ends the program with status 0.
fn quit_with_ctrl_d(mut coder: Session) {
    // Ctrl-D only means "quit" at the prompt: typed earlier, the terminal would swallow it.
    coder.expect("> ").unwrap();
    coder.send(ControlCode::EndOfTransmission).unwrap();
    assert_eq!(
        coder.get_process().wait().unwrap(),
        WaitStatus::Exited(coder.get_process().pid(), 0)
    );
}

fn main_rs(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("src/main.rs")).unwrap()
}

#[test]
fn the_demo_asks_before_editing_and_no_leaves_the_file_unchanged() {
    let dir = project();
    let before = main_rs(dir.path());
    let mut coder = start(dir.path());
    coder.expect("SCRIPTED DEMO").unwrap();
    coder.expect("Edit ").unwrap();
    // The question shows the change it would make.
    coder.expect("TODO(reviewed)").unwrap();
    coder.expect("Allow? [y]es / [n]o / [a]lways").unwrap();
    coder.send_line("n").unwrap();
    coder.expect("the file is unchanged").unwrap();
    coder.expect("tool calls").unwrap();
    assert_eq!(main_rs(dir.path()), before);
    quit_with_ctrl_d(coder);
}

#[test]
fn yes_applies_the_edit_and_shows_its_diff() {
    let dir = project();
    let mut coder = start(dir.path());
    coder.expect("Allow? [y]es / [n]o / [a]lways").unwrap();
    coder.send_line("y").unwrap();
    coder.expect("the TODO is marked as reviewed").unwrap();
    coder.expect("tool calls").unwrap();
    let after = main_rs(dir.path());
    assert!(
        after.contains("    // TODO(reviewed): greet the user\n"),
        "{after}"
    );
    assert!(!after.contains(TODO_LINE), "{after}");
    coder.send_line("/exit").unwrap();
    assert_eq!(
        coder.get_process().wait().unwrap(),
        WaitStatus::Exited(coder.get_process().pid(), 0)
    );
}

#[test]
fn plan_mode_refuses_the_edit_without_asking() {
    let dir = project();
    let before = main_rs(dir.path());
    let mut coder = start(dir.path());
    decline_the_demos_edit(&mut coder);
    coder.send_line("/mode plan").unwrap();
    coder.expect("mode: Plan").unwrap();
    coder.send_line("find a TODO").unwrap();
    // Read-only tools still run; the edit is refused by the mode, and nobody is asked.
    let refusal = coder.expect("not applied").unwrap();
    let shown = String::from_utf8_lossy(refusal.before());
    assert!(shown.contains("Read "), "{shown}");
    assert!(!shown.contains("Allow?"), "{shown}");
    assert_eq!(main_rs(dir.path()), before);
    coder.send_line("/exit").unwrap();
}

#[test]
fn ctrl_c_cancels_a_long_bash_call_and_returns_to_the_prompt() {
    let dir = project();
    let mut coder = start(dir.path());
    decline_the_demos_edit(&mut coder);

    // An odd duration, to find this very process in /proc.
    coder.send_line("run sleep 41.37").unwrap();
    coder.expect("Run sleep 41.37").unwrap();
    let sleeper = wait_for(|| find_process("sleep", "41.37"), "the sleep to start");
    let interrupted = Instant::now();
    coder.send(ControlCode::EndOfText).unwrap();
    coder.expect("Cancelled.").unwrap();
    coder.expect("> ").unwrap();
    assert!(
        interrupted.elapsed() < Duration::from_secs(10),
        "cancelling took {:?}",
        interrupted.elapsed()
    );
    wait_for(
        || (!Path::new(&format!("/proc/{sleeper}")).exists()).then_some(()),
        "the cancelled command to be killed",
    );

    // Still alive and answering.
    coder.send_line("/tools").unwrap();
    coder.expect("runs without asking").unwrap();
    quit_with_ctrl_d(coder);
}

#[test]
fn rewind_puts_the_demos_edit_back() {
    let dir = project();
    let before = main_rs(dir.path());
    let mut coder = start(dir.path());
    coder.expect("Allow? [y]es / [n]o / [a]lways").unwrap();
    coder.send_line("y").unwrap();
    coder.expect("the TODO is marked as reviewed").unwrap();
    coder.expect("tool calls").unwrap();
    assert_ne!(main_rs(dir.path()), before);
    coder.expect("> ").unwrap();
    coder.send_line("/rewind").unwrap();
    coder.expect(" 1. Find a TODO comment").unwrap();
    coder.expect("> ").unwrap();
    coder.send_line("/rewind 1").unwrap();
    coder.expect("restored ").unwrap();
    coder.expect("main.rs").unwrap();
    assert_eq!(main_rs(dir.path()), before, "the file is as it was");
    coder.send_line("/rewind 7").unwrap();
    coder.expect("there is no prompt 7").unwrap();
    quit_with_ctrl_d(coder);
}

#[test]
fn continue_picks_up_the_last_conversation_in_this_directory() {
    let dir = project();
    let mut coder = start(dir.path());
    decline_the_demos_edit(&mut coder);
    quit_with_ctrl_d(coder);

    let mut coder =
        Session::spawn(coder_command(dir.path(), &["--continue"])).expect("coder starts");
    coder.set_expect_timeout(Some(Duration::from_secs(30)));
    coder.expect("resumed").unwrap();
    // The recap: the first prompt, then the last answer, and no replay of the demo.
    coder.expect("Find a TODO comment").unwrap();
    coder.expect("the file is unchanged").unwrap();
    coder.expect("> ").unwrap();
    coder.send_line("/sessions").unwrap();
    let listed = coder.expect("resume one with").unwrap();
    let listed = String::from_utf8_lossy(listed.as_bytes()).into_owned();
    assert!(
        listed.contains(" *"),
        "the current session is marked: {listed}"
    );
    // The conversation goes on where it was.
    coder.send_line("run echo resumed-$((6*7))").unwrap();
    coder.expect("resumed-42").unwrap();
    coder.expect("1 tool call").unwrap();
    quit_with_ctrl_d(coder);

    // Nothing to continue elsewhere, and an unknown id: clear errors, failing status.
    let elsewhere = tempfile::tempdir().unwrap();
    let none = coder_command(elsewhere.path(), &["--continue", "-p", "hi"])
        .output()
        .unwrap();
    assert!(!none.status.success());
    let stderr = String::from_utf8_lossy(&none.stderr);
    assert!(stderr.contains("no earlier session in"), "{stderr}");
    let unknown = coder_command(dir.path(), &["--resume", "nope", "-p", "hi"])
        .output()
        .unwrap();
    assert!(!unknown.status.success());
    let stderr = String::from_utf8_lossy(&unknown.stderr);
    assert!(stderr.contains("no session `nope`"), "{stderr}");
    // In the user's terms: what to type, no SDK function.
    assert!(stderr.contains("`/sessions` lists them"), "{stderr}");
    assert!(!stderr.contains("SessionStore"), "{stderr}");
}

#[test]
fn print_mode_runs_one_prompt_and_its_exit_code_tells_how_it_went() {
    let dir = project();
    let ok = coder_command(
        dir.path(),
        &["--allow", "Bash", "--print", "run echo printed-$((6*7))"],
    )
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&ok.stdout);
    assert!(ok.status.success(), "{stdout}");
    assert!(stdout.contains("printed-42"), "{stdout}");

    // Nobody to ask in --print mode: the edit is refused, the file stays as it was.
    let before = main_rs(dir.path());
    let refused = coder_command(dir.path(), &["-p", "Find a TODO and resolve it"])
        .output()
        .unwrap();
    assert!(refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stdout).contains("not applied"));
    assert_eq!(main_rs(dir.path()), before);

    // A provider that cannot start is an error with a reason, and a failing exit code.
    let no_key = coder_command(dir.path(), &["--provider", "anthropic", "-p", "hi"])
        .output()
        .unwrap();
    assert!(!no_key.status.success());
    assert!(
        String::from_utf8_lossy(&no_key.stderr).contains("ANTHROPIC_API_KEY"),
        "{}",
        String::from_utf8_lossy(&no_key.stderr)
    );
}

fn wait_for<T>(mut probe: impl FnMut() -> Option<T>, what: &str) -> T {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(found) = probe() {
            return found;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The pid of a running `program arg` process.
fn find_process(program: &str, arg: &str) -> Option<u32> {
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let words: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
            let is_it = words.len() >= 2
                && words[0].ends_with(program.as_bytes())
                && words[1] == arg.as_bytes();
            is_it.then_some(pid)
        })
}

#[test]
fn mcp_config_adds_a_servers_tools_and_a_broken_server_is_a_clear_start_up_error() {
    let dir = project();
    let config = dir.path().join("mcp.json");
    let server = env!("CARGO_BIN_EXE_mcp-test-server");
    std::fs::write(
        &config,
        serde_json::json!({ "mcpServers": { "files": {
            "command": server, "args": [dir.path()]
        } } })
        .to_string(),
    )
    .unwrap();
    let config_arg = config.to_str().unwrap();
    let call = coder_command(
        dir.path(),
        &[
            "--mcp-config",
            config_arg,
            "-p",
            r#"call mcp__files__Glob {"pattern": "**/*.rs"}"#,
        ],
    )
    .output()
    .unwrap();
    let stdout = String::from_utf8_lossy(&call.stdout);
    assert!(call.status.success(), "{stdout}");
    assert!(stdout.contains("The call finished"), "{stdout}");
    assert!(stdout.contains("main.rs"), "{stdout}");

    std::fs::write(
        &config,
        r#"{"mcpServers": {"broken": {"command": "definitely-not-a-program-4711"}}}"#,
    )
    .unwrap();
    let broken = coder_command(dir.path(), &["--mcp-config", config_arg, "-p", "hi"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&broken.stderr);
    assert!(!broken.status.success());
    assert!(stderr.contains("broken"), "{stderr}");
    assert!(stderr.contains("definitely-not-a-program-4711"), "{stderr}");
}

/// A remote MCP server behind OAuth (the TypeScript SDK's authorization server, from npm):
/// the coder prints the authorization URL, takes the redirect on its loopback listener (the
/// test plays the browser: a GET of the URL), calls the tool; the next run uses the token kept
/// in the data directory and asks nothing.
#[test]
fn an_oauth_mcp_server_is_authorized_once_through_the_browser() {
    use std::io::BufRead;
    let server = tests::mcp_peers::OAuthServer::start(&[]);
    let url = server.url.clone();
    let dir = project();
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        serde_json::json!({"mcpServers": {"guarded": {"type": "http", "url": url}}}).to_string(),
    )
    .unwrap();
    let args = [
        "--mcp-config",
        config.to_str().unwrap(),
        "-p",
        "call mcp__guarded__stats {}",
    ];
    let mut coder = coder_command(dir.path(), &args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The coder's words to the user, then the URL on a line of its own.
    let mut stderr = std::io::BufReader::new(coder.stderr.take().unwrap());
    let mut said = String::new();
    let authorization_url = loop {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "the coder ended without asking for authorization:\n{said}"
        );
        said.push_str(&line);
        if let Some(found) = line.trim().strip_prefix("http") {
            break format!("http{found}");
        }
    };
    assert!(
        said.contains("MCP server `guarded` needs your authorization"),
        "{said}"
    );
    // The user's browser: the authorization server approves and sends it to the coder's
    // loopback listener.
    let landed = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(async {
            let page = tests::browser::open(&authorization_url).await?;
            page.text().await.map_err(|e| e.to_string())
        })
        .unwrap();
    assert!(landed.contains("Authorization received"), "{landed}");
    let done = coder.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&done.stdout);
    assert!(done.status.success(), "{stdout}");
    assert!(stdout.contains("The call finished"), "{stdout}");
    assert!(stdout.contains("\"authorizations\":1"), "{stdout}");

    // Again: the stored token is used, nobody is asked.
    let again = coder_command(dir.path(), &args).output().unwrap();
    let stdout = String::from_utf8_lossy(&again.stdout);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(again.status.success(), "{stdout}{stderr}");
    assert!(!stderr.contains("needs your authorization"), "{stderr}");
    assert!(stdout.contains("\"authorizations\":1"), "{stdout}");
    // Kept in the data directory, readable by the user only.
    let tokens = data_home().join("tool-sdk-coder/mcp-tokens");
    let file = tool_sdk::mcp::McpTokenFile::new(&tokens).file(&url);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", file.display());
    }
}

#[test]
fn on_this_repository_the_demo_finds_a_todo_and_asks_to_edit_it() {
    // What the README promises a newcomer's first command shows. In --print mode nobody can
    // answer, so the edit is refused and the checkout stays as it is.
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let run = coder_command(repo, &["-p", "Find a TODO comment and resolve it"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stdout}");
    assert!(stderr.contains("● Read "), "{stderr}");
    assert!(stderr.contains("Edit "), "{stderr}");
    assert!(stdout.contains("The edit was not applied"), "{stdout}");
}

#[test]
fn an_invalid_call_shows_every_problem_the_model_is_told() {
    let dir = project();
    let input = serde_json::json!({ "file_path": 3, "limit": "many", "bogus": true });
    let run = coder_command(dir.path(), &["-p", &format!("call Read {input}")])
        .output()
        .unwrap();
    // In --print mode the tool lines are progress, on stderr.
    let stdout = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stdout}");
    // What the model gets for this input, from the same registry the coder uses.
    let told = tool_sdk::ToolRegistry::global()
        .unwrap()
        .validate("Read", input)
        .unwrap_err()
        .message_for_model();
    let problems: Vec<&str> = told
        .lines()
        .skip(1)
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect();
    assert!(problems.len() >= 3, "one line per problem: {told}");
    for problem in problems {
        assert!(
            stdout.contains(problem),
            "{problem:?} is not shown:\n{stdout}"
        );
    }
}

#[test]
fn the_projects_claude_settings_and_memory_files_are_used_as_they_are() {
    let dir = project();
    std::fs::write(dir.path().join("CLAUDE.md"), "Be brief.").unwrap();
    std::fs::create_dir(dir.path().join(".claude")).unwrap();
    std::fs::write(
        dir.path().join(".claude/settings.json"),
        r#"{"permissions": {"allow": ["Bash(touch made-by-settings)"], "defaultMode": "plan"}}"#,
    )
    .unwrap();
    let run = coder_command(dir.path(), &["-p", "run touch made-by-settings"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    // The settings' rule allowed the call that would otherwise be refused in --print mode.
    assert!(
        dir.path().join("made-by-settings").exists(),
        "{}\n{stderr}",
        String::from_utf8_lossy(&run.stdout)
    );
    assert!(stderr.contains("instructions: CLAUDE.md"), "{stderr}");
    assert!(
        stderr.contains("rules: .claude/settings.json (1 allow, 0 ask, 0 deny)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("`permissions.defaultMode` is not supported"),
        "{stderr}"
    );

    // A deny rule that does not parse stops the coder, naming the file.
    std::fs::write(
        dir.path().join(".claude/settings.local.json"),
        r#"{"permissions": {"deny": ["Bash(rm:*"]}}"#,
    )
    .unwrap();
    let broken = coder_command(dir.path(), &["-p", "hi"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&broken.stderr);
    assert!(!broken.status.success());
    assert!(stderr.contains("settings.local.json"), "{stderr}");
    assert!(stderr.contains("permissions.deny"), "{stderr}");
}

#[test]
fn print_mode_names_the_rule_that_would_allow_a_refused_call() {
    let dir = project();
    let refused = coder_command(dir.path(), &["-p", "run touch made-by-print"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&refused.stdout);
    assert!(!dir.path().join("made-by-print").exists());
    let hint = "--allow 'Bash(touch made-by-print)'";
    assert!(stdout.contains(hint), "{stdout}");

    // The rule it names does allow the call.
    let allowed = coder_command(
        dir.path(),
        &[
            "--allow",
            "Bash(touch made-by-print)",
            "-p",
            "run touch made-by-print",
        ],
    )
    .output()
    .unwrap();
    assert!(
        dir.path().join("made-by-print").exists(),
        "{}",
        String::from_utf8_lossy(&allowed.stdout)
    );
}

#[test]
fn ctrl_c_leaves_no_frozen_spinner_on_the_screen() {
    let dir = project();
    let mut coder = start_in_terminal(dir.path());
    let mut screen = Screen::new();
    screen.expect(&mut coder, "Allow? [y]es / [n]o / [a]lways");
    coder.send_line("n").unwrap();
    screen.expect(&mut coder, "tool calls");

    coder.send_line("run sleep 43.21").unwrap();
    screen.expect(&mut coder, "Run sleep 43.21");
    wait_for(|| find_process("sleep", "43.21"), "the sleep to start");
    // A few ticks of the spinner, as a user would see before pressing Ctrl-C.
    std::thread::sleep(Duration::from_millis(300));
    coder.send(ControlCode::EndOfText).unwrap();
    screen.expect(&mut coder, "Cancelled.");
    screen.expect(&mut coder, " tokens · ");

    let rows = screen.rows();
    let about_the_call: Vec<&String> = rows
        .iter()
        .filter(|row| row.contains("Run sleep 43.21"))
        .collect();
    assert_eq!(
        about_the_call.len(),
        1,
        "the cancelled call's result line, and no spinner:\n{}",
        rows.join("\n")
    );
    assert!(about_the_call[0].starts_with('●'), "{}", rows.join("\n"));
    quit_with_ctrl_d(coder);
}

#[test]
fn ctrl_c_at_a_permission_question_says_the_call_did_not_run() {
    let dir = project();
    let mut coder = start(dir.path());
    decline_the_demos_edit(&mut coder);
    // The SDK races the refusal against the cancellation; the line must not depend on it.
    for round in 0..4 {
        coder.send_line(format!("run touch never-{round}")).unwrap();
        coder.expect("Allow? [y]es / [n]o / [a]lways").unwrap();
        coder.send(ControlCode::EndOfText).unwrap();
        // The turn ends cancelled: the refusal does not let the model take another turn.
        let shown = coder.expect("Cancelled.").unwrap();
        let shown = String::from_utf8_lossy(shown.before()).into_owned();
        let line = shown
            .lines()
            .rev()
            .find(|line| line.contains(&format!("Run touch never-{round}")) && line.contains('●'))
            .unwrap_or_else(|| panic!("no result line for the call:\n{shown}"));
        assert!(line.contains("did not run"), "{line}");
        assert!(!line.contains("before it finished"), "{line}");
        coder.expect(" tokens · ").unwrap();
        assert!(!dir.path().join(format!("never-{round}")).exists());
    }
    quit_with_ctrl_d(coder);
}

#[test]
fn the_bash_question_shows_the_command_once() {
    let dir = project();
    let mut coder = start_in_terminal(dir.path());
    let mut screen = Screen::new();
    screen.expect(&mut coder, "Allow? [y]es / [n]o / [a]lways");
    coder.send_line("n").unwrap();
    screen.expect(&mut coder, "tool calls");

    coder
        .send_line(r#"call Bash {"command": "touch m-4711", "description": "Make a marker"}"#)
        .unwrap();
    screen.expect(&mut coder, "I'll call Bash.");
    screen.expect(&mut coder, "Allow? [y]es / [n]o / [a]lways");
    let rows = screen.rows();
    let question = rows
        .iter()
        .rposition(|row| row.starts_with("? "))
        .unwrap_or_else(|| panic!("no question on the screen:\n{}", rows.join("\n")));
    let shown = rows[question..].join("\n");
    assert_eq!(shown.matches("touch m-4711").count(), 1, "{shown}");
    assert!(shown.contains("$ touch m-4711"), "{shown}");
    assert!(shown.contains("Make a marker"), "{shown}");
    coder.send_line("n").unwrap();
    screen.expect(&mut coder, " tokens · ");
    quit_with_ctrl_d(coder);
}

#[test]
fn flags_that_do_nothing_are_warned_about() {
    let dir = project();
    let run = coder_command(
        dir.path(),
        &[
            "--allow",
            "Nonexistent",
            "--deny",
            "Globb",
            "--allow",
            "Bash(cargo test:*)",
            "--deny",
            "Read(.env)",
            "--model",
            "some-model",
            "-p",
            "hi",
        ],
    )
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("warning"))
        .collect();
    assert_eq!(warnings.len(), 3, "{stderr}");
    assert!(
        warnings.iter().any(|w| w.contains("--allow Nonexistent")),
        "{stderr}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("--deny Globb") && w.contains("did you mean `Glob`")),
        "{stderr}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("--model some-model") && w.contains("demo")),
        "{stderr}"
    );
}

/// The coder started in `dir` as the README starts it: no `--cwd`, saving to `data`.
fn coder_in(dir: &Path, data: &Path, extra: &[&str]) -> Command {
    let mut command = Command::new(coder_binary());
    command.current_dir(dir).args(extra);
    for key in [
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
    ] {
        command.env_remove(key);
    }
    command
        .env("TERM", "xterm-256color")
        .env("XDG_DATA_HOME", data);
    command
}

fn spawn(command: Command) -> Session {
    let mut session = Session::spawn(command).expect("coder starts in a pty");
    session.set_expect_timeout(Some(Duration::from_secs(30)));
    session
        .get_process_mut()
        .set_window_size(COLS, ROWS)
        .unwrap();
    session
}

/// The sessions saved in the data directory `data`.
fn saved_sessions(data: &Path) -> Vec<tool_sdk::session::SessionInfo> {
    use tool_sdk::session::SessionStore;
    let file = data.join("tool-sdk-coder/sessions.db");
    if !file.exists() {
        return Vec::new();
    }
    let store = tool_sdk::session::SqliteStore::open(file).unwrap();
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(store.list())
        .unwrap()
}

#[test]
fn the_demo_in_a_checkout_edits_a_scratch_copy_and_the_next_demo_finds_the_todo_again() {
    // The README's first command, run in this repository, answered `y`.
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let demo_rs = repo.join("examples/coder/demo.rs");
    let todo = concat!("// TO", "DO: teach the scripted demo");
    let before = std::fs::read_to_string(&demo_rs).unwrap();
    assert!(
        before.contains(todo),
        "the TODO the demo finds is in {demo_rs:?}"
    );
    let data = tempfile::tempdir().unwrap();

    let mut coder = spawn(coder_in(repo, data.path(), &[]));
    coder.expect("scratch copy").unwrap();
    coder.expect("so your checkout stays as it is").unwrap();
    coder.expect("Allow? [y]es / [n]o / [a]lways").unwrap();
    coder.send_line("y").unwrap();
    coder.expect("the TODO is marked as reviewed").unwrap();
    coder.expect("tool calls").unwrap();
    quit_with_ctrl_d(coder);

    let after = std::fs::read_to_string(&demo_rs).unwrap();
    if after != before {
        // Put back before failing: the other tests, and the next run, need the TODO.
        std::fs::write(&demo_rs, &before).unwrap();
        panic!("the demo edited the checkout's {demo_rs:?}");
    }
    let copies: Vec<PathBuf> = std::fs::read_dir(data.path().join("tool-sdk-coder/demo"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    assert_eq!(copies.len(), 1, "{copies:?}");
    let edited = std::fs::read_to_string(copies[0].join("examples/coder/demo.rs")).unwrap();
    assert!(
        edited.contains(concat!("// TO", "DO(reviewed): teach the scripted demo")),
        "the edit was made, on the copy"
    );
    assert!(!edited.contains(todo));

    // The next demo starts from a fresh copy: the same TODO, the same question.
    let mut coder = spawn(coder_in(repo, data.path(), &[]));
    let asked = coder.expect("Allow? [y]es / [n]o / [a]lways").unwrap();
    let shown = String::from_utf8_lossy(asked.before()).into_owned();
    assert!(shown.contains("examples/coder/demo.rs"), "{shown}");
    assert!(!shown.contains("no TODO comments"), "{shown}");
    coder.send_line("n").unwrap();
    coder.expect("the file is unchanged").unwrap();
    quit_with_ctrl_d(coder);
    assert_eq!(std::fs::read_to_string(&demo_rs).unwrap(), before);
}

#[test]
fn a_command_dies_with_a_killed_coder_and_continue_names_the_interrupted_call() {
    let dir = project();
    let data = tempfile::tempdir().unwrap();
    let mut command = coder_command(dir.path(), &[]);
    command.env("XDG_DATA_HOME", data.path());
    let mut coder = spawn(command);
    decline_the_demos_edit(&mut coder);
    coder.send_line("run sleep 47.11").unwrap();
    coder.expect("Run sleep 47.11").unwrap();
    let sleeper = wait_for(|| find_process("sleep", "47.11"), "the sleep to start");

    // SIGKILL: no code of the coder runs after it.
    let killed = Command::new("kill")
        .args(["-KILL", &coder.get_process().pid().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    wait_for(
        || (!is_running(sleeper)).then_some(()),
        "the command to die with the coder",
    );
    drop(coder);

    // The dead coder's lease runs out (at once once a dead holder is recognised).
    let sessions = saved_sessions(data.path());
    let id = sessions
        .iter()
        .find(|s| s.title.starts_with("Find a TODO"))
        .map(|s| s.id.clone())
        .expect("the session was saved");
    wait_until_free(data.path(), &id);

    let mut command = coder_command(dir.path(), &["--continue"]);
    command.env("XDG_DATA_HOME", data.path());
    let mut coder = spawn(command);
    coder.expect("resumed").unwrap();
    coder.expect("The last turn was cut off").unwrap();
    coder
        .expect("`sleep 47.11` (Bash) was interrupted and may have partly happened")
        .unwrap();
    quit_with_ctrl_d(coder);
}

/// Whether `pid` is a live process (a zombie is not).
fn is_running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat.rsplit_once(") ").map(|(_, rest)| rest.chars().next());
        state != Some(Some('Z'))
    })
}

/// Waits until the session `id`'s lease can be taken, and gives it back.
fn wait_until_free(data: &Path, id: &str) {
    use tool_sdk::session::SessionStore;
    let store =
        tool_sdk::session::SqliteStore::open(data.join("tool-sdk-coder/sessions.db")).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match runtime.block_on(store.acquire(id, "the test", Duration::from_secs(5))) {
            Ok(lease) => {
                runtime.block_on(store.release(&lease)).unwrap();
                return;
            }
            Err(error) => assert!(Instant::now() < deadline, "{error}"),
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_session_open_in_another_coder_names_its_holder_and_can_be_forked() {
    let dir = project();
    let data = tempfile::tempdir().unwrap();
    let with_data = |extra: &[&str]| {
        let mut command = coder_command(dir.path(), extra);
        command.env("XDG_DATA_HOME", data.path());
        command
    };
    let mut first = spawn(with_data(&[]));
    // It took the session's lease when it started, and holds it while it runs.
    decline_the_demos_edit(&mut first);
    let holder = format!("in use by pid {}", first.get_process().pid());

    // With --print: the error alone, naming who has it.
    let busy = with_data(&["--continue", "-p", "hi"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&busy.stderr);
    assert!(!busy.status.success());
    assert!(stderr.contains(&holder), "{stderr}");

    // At a terminal: a fork is offered, and goes on on its own.
    let mut second = spawn(with_data(&["--continue"]));
    second.expect(holder.as_str()).unwrap();
    second
        .expect("Fork it into a new session with the same history? [y/n]")
        .unwrap();
    second.send_line("y").unwrap();
    second.expect("forked into").unwrap();
    second.expect("> ").unwrap();
    second.send_line("run echo forked-$((6*7))").unwrap();
    second.expect("forked-42").unwrap();
    second.expect("1 tool call").unwrap();
    quit_with_ctrl_d(second);
    quit_with_ctrl_d(first);

    let sessions = saved_sessions(data.path());
    assert_eq!(sessions.len(), 2, "{sessions:?}");
    let fork = sessions.iter().find(|s| s.parent.is_some()).unwrap();
    let original = sessions.iter().find(|s| s.parent.is_none()).unwrap();
    assert_eq!(fork.parent.as_ref().unwrap().session, original.id);
}

#[test]
fn print_mode_writes_only_the_answer_to_stdout_and_keeps_no_session_of_a_failed_run() {
    let dir = project();
    let data = tempfile::tempdir().unwrap();
    let with_data = |extra: &[&str]| {
        let mut command = coder_command(dir.path(), extra);
        command.env("XDG_DATA_HOME", data.path());
        command
    };
    let ok = with_data(&["--allow", "Bash", "--print", "run echo printed-$((6*7))"])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&ok.stdout),
        String::from_utf8_lossy(&ok.stderr),
    );
    assert!(ok.status.success(), "{stdout}{stderr}");
    assert_eq!(
        stdout,
        "I'll run `echo printed-$((6*7))`.\nThe call finished. Its output starts with: printed-42\n"
    );
    // The progress, the summary and the cost, on stderr.
    assert!(stderr.contains("● Run echo printed-$((6*7))"), "{stderr}");
    assert!(stderr.contains("1 tool call"), "{stderr}");
    assert!(stderr.contains("session so far"), "{stderr}");

    let empty = with_data(&["--print", ""]).output().unwrap();
    assert_eq!(empty.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&empty.stderr);
    assert!(stderr.contains("--print needs a prompt"), "{stderr}");

    // A provider nobody answers at: an error on stderr, and nothing kept.
    let unreachable = with_data(&["--provider", "openai", "--print", "hello?"])
        .env("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
        .output()
        .unwrap();
    assert!(!unreachable.status.success());
    assert_eq!(String::from_utf8_lossy(&unreachable.stdout), "");
    let stderr = String::from_utf8_lossy(&unreachable.stderr);
    assert!(stderr.contains("error:"), "{stderr}");
    let titles: Vec<String> = saved_sessions(data.path())
        .into_iter()
        .map(|s| s.title)
        .collect();
    assert_eq!(titles, ["run echo printed-$((6*7))"]);
}

#[test]
fn tools_shows_the_gates_decisions_and_unknown_commands_are_named() {
    let dir = project();
    let mut coder = start(dir.path());
    decline_the_demos_edit(&mut coder);
    coder.expect("> ").unwrap();
    coder.send_line("/tools").unwrap();
    let listed = coder.expect("WebFetch").unwrap();
    let listed = String::from_utf8_lossy(listed.before()).into_owned();
    let line = |tool: &str| {
        listed
            .lines()
            .find(|line| line.contains(&format!("{tool} ")))
            .unwrap_or_else(|| panic!("no {tool} in {listed}"))
            .to_owned()
    };
    assert!(
        line("TodoWrite").contains("runs without asking"),
        "{listed}"
    );
    assert!(line("Edit").contains("asks"), "{listed}");
    assert!(line("Read").contains("runs without asking"), "{listed}");

    // As listed: TodoWrite runs and nobody is asked.
    coder.expect("> ").unwrap();
    coder
        .send_line(r#"call TodoWrite {"todos": [{"content": "Test", "status": "pending", "activeForm": "Testing"}]}"#)
        .unwrap();
    let ran = coder.expect("The call finished").unwrap();
    assert!(!String::from_utf8_lossy(ran.before()).contains("Allow?"));

    coder.expect("> ").unwrap();
    coder.send_line("/frobnicate").unwrap();
    coder.expect("unknown command /frobnicate").unwrap();
    coder.expect("/tools").unwrap();

    // A command a `cargo run --example coder` user can type.
    coder.expect("> ").unwrap();
    coder.send_line("/sessions").unwrap();
    coder
        .expect("cargo run --example coder -- --resume <id>")
        .unwrap();
    quit_with_ctrl_d(coder);
}

#[test]
fn the_edit_question_shows_the_files_real_line_numbers() {
    let dir = project();
    let long = dir.path().join("long.txt");
    let text: String = (1..=100).map(|n| format!("line {n}\n")).collect();
    std::fs::write(&long, &text).unwrap();
    let mut coder = start(dir.path());
    decline_the_demos_edit(&mut coder);
    coder.expect("> ").unwrap();
    let input = serde_json::json!({
        "file_path": long, "old_string": "line 90", "new_string": "line ninety"
    });
    coder.send_line(format!("call Edit {input}")).unwrap();
    let asked = coder.expect("Allow? [y]es / [n]o / [a]lways").unwrap();
    let shown = String::from_utf8_lossy(asked.before()).into_owned();
    assert!(shown.contains("@@ -87,7 +87,7 @@"), "{shown}");
    assert!(!shown.contains("@@ -1 +1 @@"), "{shown}");
    coder.send_line("n").unwrap();
    coder.expect(" tokens · ").unwrap();
    assert_eq!(std::fs::read_to_string(&long).unwrap(), text);
    quit_with_ctrl_d(coder);
}

#[test]
fn the_coders_saved_conversations_are_private_whatever_the_umask() {
    use std::os::unix::fs::PermissionsExt;
    let dir = project();
    let data = tempfile::tempdir().unwrap();
    let store_dir = data.path().join("tool-sdk-coder");
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    let run = || {
        let coder = coder_command(dir.path(), &["--print", "hi"]);
        // Under the usual umask, in a data directory of its own.
        let mut command = Command::new("sh");
        command
            .args(["-c", "umask 022 && exec \"$0\" \"$@\""])
            .arg(coder.get_program())
            .args(coder.get_args())
            .env("XDG_DATA_HOME", data.path());
        for (key, value) in coder.get_envs() {
            match (key, value) {
                (key, _) if key == "XDG_DATA_HOME" => {}
                (key, Some(value)) => drop(command.env(key, value)),
                (key, None) => drop(command.env_remove(key)),
            }
        }
        let output = command.output().unwrap();
        assert!(output.status.success(), "{output:?}");
    };
    run();
    assert_eq!(mode(&store_dir), 0o700);
    assert_eq!(mode(&store_dir.join("sessions.db")), 0o600);

    // Left open to others by an older coder: made private on the next start.
    std::fs::set_permissions(&store_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let db = store_dir.join("sessions.db");
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    run();
    assert_eq!(mode(&store_dir), 0o700);
    assert_eq!(mode(&db), 0o600);
}

#[test]
fn resuming_a_session_with_a_damaged_record_warns_and_goes_on() {
    let dir = project();
    let data = tempfile::tempdir().unwrap();
    let with_data = |extra: &[&str]| {
        let mut command = coder_command(dir.path(), extra);
        command.env("XDG_DATA_HOME", data.path());
        command.output().unwrap()
    };
    assert!(with_data(&["--print", "hi"]).status.success());
    // The model's answer damaged in the file, as a disk or a bug could.
    let db = rusqlite::Connection::open(data.path().join("tool-sdk-coder/sessions.db")).unwrap();
    let id: String = db
        .query_row("SELECT id FROM sessions", [], |row| row.get(0))
        .unwrap();
    let damaged = db
        .execute(
            "UPDATE records SET body = 'not json' WHERE session_id = ?1 AND kind = 'model_turn'",
            [&id],
        )
        .unwrap();
    assert!(damaged > 0);
    drop(db);

    let resumed = with_data(&["--resume", &id, "--print", "hi again"]);
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert!(resumed.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "session {id}: record 1 (model_turn) cannot be read"
        )),
        "{stderr}"
    );
}

/// A model API on a local port answering every request with `body` (server-sent events), one
/// request a connection; its base URL.
fn serve_every_request_with(body: String) -> String {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let mut reader = BufReader::new(stream);
            let mut length = 0;
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line != "\r\n" {
                if let Some((name, value)) = line.split_once(':')
                    && name.eq_ignore_ascii_case("content-length")
                {
                    length = value.trim().parse().unwrap_or(0);
                }
                line.clear();
            }
            let mut request = vec![0; length];
            let _ = reader.read_exact(&mut request);
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\
                 connection: close\r\n\r\n",
                body.len()
            );
            let mut stream = reader.into_inner();
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
        }
    });
    url
}

#[test]
fn thinking_streams_folded_into_a_line_and_slash_thinking_shows_it_whole() {
    // The stream built from Anthropic's documented thinking example (tests/thinking.rs).
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/anthropic/thinking_after_tool.sse");
    let url = serve_every_request_with(std::fs::read_to_string(fixture).unwrap());
    let dir = project();
    let mut command = coder_command(dir.path(), &["--thinking", "2048", "--effort", "low"]);
    command
        .env("ANTHROPIC_API_KEY", "test-key")
        .env("ANTHROPIC_BASE_URL", &url);
    let mut coder = Session::spawn(command).expect("coder starts in a pty");
    coder.set_expect_timeout(Some(Duration::from_secs(30)));
    coder.expect("> ").unwrap();
    coder.send_line("Weather in Paris?").unwrap();
    let mut screen = Screen::new();
    screen.expect(&mut coder, "tool calls");
    let rows = screen.rows().join("\n");
    assert!(
        rows.contains("✻ thought for 17 words (/thinking shows it)"),
        "{rows}"
    );
    assert!(
        rows.contains("Currently in Paris, the temperature is 88°F"),
        "{rows}"
    );
    // The thinking itself is folded away: only the line that counts it stays.
    assert!(!rows.contains("I will give it in Celsius too."), "{rows}");
    coder.expect("> ").unwrap();
    coder.send_line("/thinking").unwrap();
    coder
        .expect(
            "The tool says it is 88 degrees Fahrenheit in Paris. I will give it in Celsius too.",
        )
        .unwrap();
    quit_with_ctrl_d(coder);
}

/// A tool's question reaches the coder's prompt: `book` of an MCP server (ours, which asks in
/// the 2026-07-28 form) asks for a form, the user fills it in field by field (a wrong value is
/// asked again), and the tool gets the answer.
#[test]
fn a_tools_question_is_answered_at_the_prompt() {
    let dir = project();
    let config = dir.path().join("mcp.json");
    let server = env!("CARGO_BIN_EXE_mcp-test-server");
    std::fs::write(
        &config,
        serde_json::json!({ "mcpServers": { "food": { "command": server, "args": [dir.path()] } } })
            .to_string(),
    )
    .unwrap();
    let mut coder = Session::spawn(coder_command(
        dir.path(),
        &["--mcp-config", config.to_str().unwrap()],
    ))
    .expect("coder starts in a pty");
    coder.set_expect_timeout(Some(Duration::from_secs(30)));
    decline_the_demos_edit(&mut coder);

    coder
        .send_line(r#"call mcp__food__book {"restaurant": "Chez Nous"}"#)
        .unwrap();
    coder.expect("Allow? [y]es / [n]o / [a]lways").unwrap();
    coder.send_line("y").unwrap();
    coder.expect("Book a table at Chez Nous?").unwrap();
    coder.expect("(asked by mcp__food__book)").unwrap();
    coder.expect("guests").unwrap();
    coder.expect(": ").unwrap();
    coder.send_line("four").unwrap();
    coder.expect("A whole number, please.").unwrap();
    coder.expect("guests").unwrap();
    coder.send_line("4").unwrap();
    coder.expect("inside / outside").unwrap();
    coder.send_line("Outside").unwrap();
    coder.expect("note").unwrap();
    coder.send_line("").unwrap();
    coder
        .expect("Its output starts with: booked Chez Nous for 4 outside")
        .unwrap();
    coder.expect("1 tool call").unwrap();

    // `-` declines.
    coder
        .send_line(r#"call mcp__food__book {"restaurant": "Le Bistro"}"#)
        .unwrap();
    coder.expect("Allow? [y]es / [n]o / [a]lways").unwrap();
    coder.send_line("y").unwrap();
    coder.expect("Book a table at Le Bistro?").unwrap();
    coder.expect("guests").unwrap();
    coder.send_line("-").unwrap();
    coder.expect("Its output starts with: declined").unwrap();
    coder.expect("1 tool call").unwrap();
    quit_with_ctrl_d(coder);
}
