//! The real MCP peers of the MCP tests: servers and clients from npm and PyPI, pinned in
//! `tests/mcp-peers/` (`package.json` + `package-lock.json`, `requirements.txt`).
//!
//! They are installed under `<target>/mcp-peers/` on first use (`npm ci`, and a Python venv
//! with `pip install -r`), once even when several test binaries start together (a file
//! lock), and again when the pinned manifests change. `.ci/run` installs them up front with
//! `cargo test -p tests --test mcp_client -- --ignored install_peers`, but a fresh clone
//! runs `cargo test --workspace` just as well. A failed install panics with the command and
//! its output: the tests never skip silently.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// Where the peers are installed.
#[derive(Debug)]
pub struct Peers {
    /// `<target>/mcp-peers`.
    pub dir: PathBuf,
}

impl Peers {
    /// An executable of the npm packages, such as `mcp-server-everything`.
    pub fn node_bin(&self, name: &str) -> PathBuf {
        self.dir.join("node_modules/.bin").join(name)
    }

    /// A script of ours run by the peers' Node.js (copied from `tests/mcp-peers/` next to
    /// their `node_modules`, where its imports resolve), such as `oauth-server.mjs`.
    pub fn node_script(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// A file inside an npm package.
    pub fn node_file(&self, package: &str, path: &str) -> PathBuf {
        self.dir.join("node_modules").join(package).join(path)
    }

    /// The venv's Python.
    pub fn python(&self) -> PathBuf {
        self.venv_bin("python")
    }

    /// An executable of the venv, such as `mcp-server-time`.
    pub fn venv_bin(&self, name: &str) -> PathBuf {
        self.dir.join("venv/bin").join(name)
    }
}

/// The checkout's root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the checkout")
        .to_path_buf()
}

fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                dir
            } else {
                workspace_root().join(dir)
            }
        }
        None => workspace_root().join("target"),
    }
}

/// The installed peers; installs them first if they are missing or out of date.
pub fn peers() -> &'static Peers {
    static PEERS: OnceLock<Peers> = OnceLock::new();
    PEERS.get_or_init(|| {
        let dir = target_dir().join("mcp-peers");
        install(&dir);
        Peers { dir }
    })
}

fn install(dir: &Path) {
    let manifests = workspace_root().join("tests/mcp-peers");
    let files = [
        "package.json",
        "package-lock.json",
        "requirements.txt",
        "oauth-server.mjs",
        "tasks-client.mjs",
    ];
    let mut stamp = String::new();
    for file in files {
        let text = std::fs::read_to_string(manifests.join(file))
            .unwrap_or_else(|e| panic!("cannot read tests/mcp-peers/{file}: {e}"));
        stamp.push_str(&text);
    }
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    // One installer at a time: test binaries run in parallel.
    let lock = std::fs::File::create(dir.with_extension("lock"))
        .unwrap_or_else(|e| panic!("cannot create the peers' lock file: {e}"));
    lock.lock()
        .unwrap_or_else(|e| panic!("cannot lock the peers' lock file: {e}"));
    let stamp_file = dir.join("installed.stamp");
    if std::fs::read_to_string(&stamp_file).is_ok_and(|installed| installed == stamp) {
        return;
    }
    eprintln!("installing the MCP test peers into {} ...", dir.display());
    for file in [
        "package.json",
        "package-lock.json",
        "oauth-server.mjs",
        "tasks-client.mjs",
    ] {
        std::fs::copy(manifests.join(file), dir.join(file))
            .unwrap_or_else(|e| panic!("cannot copy {file}: {e}"));
    }
    run(
        Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(dir),
        "npm (Node.js 20 or newer) installs the npm peers",
    );
    if !dir.join("venv/bin/python").exists() {
        run(
            Command::new("python3")
                .args(["-m", "venv"])
                .arg(dir.join("venv")),
            "python3 (3.10 or newer, with the venv module) creates the venv",
        );
    }
    run(
        Command::new(dir.join("venv/bin/pip"))
            .args(["install", "--quiet", "--disable-pip-version-check", "-r"])
            .arg(manifests.join("requirements.txt")),
        "pip installs the PyPI peers",
    );
    std::fs::write(&stamp_file, stamp).expect("cannot write the install stamp");
}

fn run(command: &mut Command, what: &str) {
    let output = command.output().unwrap_or_else(|e| {
        panic!("installing the MCP test peers failed: cannot run {command:?} ({what}): {e}")
    });
    if !output.status.success() {
        panic!(
            "installing the MCP test peers failed: {command:?} exited with {}\n({what})\n\
             stdout:\n{}\nstderr:\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

/// A free TCP port on 127.0.0.1 (free when asked; bind it soon).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("no free loopback port")
}

/// `tests/mcp-peers/oauth-server.mjs` running: an MCP server behind the TypeScript SDK's OAuth
/// authorization server. Killed when dropped.
#[derive(Debug)]
pub struct OAuthServer {
    child: std::process::Child,
    /// Its MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
}

impl OAuthServer {
    /// Starts it with `args` (`--token-seconds N`, `--deny`).
    pub fn start(args: &[&str]) -> OAuthServer {
        use std::io::BufRead;
        let mut child = Command::new("node")
            .arg(peers().node_script("oauth-server.mjs"))
            .args(args)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("node (20 or newer) runs oauth-server.mjs");
        let mut line = String::new();
        let read =
            std::io::BufReader::new(child.stdout.take().expect("piped")).read_line(&mut line);
        let url = line.trim().to_owned();
        let server = OAuthServer { child, url };
        assert!(
            read.is_ok() && server.url.starts_with("http://127.0.0.1:"),
            "oauth-server.mjs did not print its URL: {:?}",
            server.url
        );
        server
    }
}

impl Drop for OAuthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
