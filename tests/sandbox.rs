//! The path sandbox on a real temporary tree: a table of paths with the expected verdict for
//! reading and writing, the confined opens (including a check-then-swap race), and a
//! deterministic fuzz-style smoke test.
#![cfg(target_os = "linux")]

use std::fs;
use std::io::{Read, Write};
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use tool_sdk::permission::{ProtectedPattern, Sandbox, SandboxError};

/// The temporary tree:
///
/// ```text
/// T/ws                      working directory
///   a.txt sub/b.txt sub/deep/c.txt sub/.zshrc empty/
///   link_in -> sub/b.txt    linkdir_in -> sub    loop -> loop
///   out_dir -> T/outside    passwd_link -> /etc/passwd    dangling -> T/outside/missing
///   hard1, hard2 (one file) fifo  sock
///   .git/config .git/HEAD .gitignore .bashrc .bash_profile .ssh/id_rsa .claude/settings.json
///   ünïcødé/файл.txt  racedir/f.txt
/// T/ws-evil/x               sibling sharing the prefix
/// T/outside/secret.txt T/outside/d/f.txt
/// T/ro/r.txt                allowed for reading only
/// ```
struct Tree {
    _tmp: tempfile::TempDir,
    t: PathBuf,
    ws: PathBuf,
    ro: PathBuf,
}

fn write(path: &Path, contents: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, contents).unwrap();
}

fn tree() -> Tree {
    let tmp = tempfile::tempdir().unwrap();
    let t = fs::canonicalize(tmp.path()).unwrap();
    let ws = t.join("ws");
    let ro = t.join("ro");
    write(&ws.join("a.txt"), "a");
    write(&ws.join("sub/b.txt"), "b");
    write(&ws.join("sub/deep/c.txt"), "c");
    write(&ws.join("sub/.zshrc"), "zsh");
    fs::create_dir_all(ws.join("empty")).unwrap();
    write(&ws.join(".git/config"), "[core]");
    write(&ws.join(".git/HEAD"), "ref: refs/heads/main");
    write(&ws.join(".gitignore"), "target");
    write(&ws.join(".bashrc"), "bash");
    write(&ws.join(".bash_profile"), "bash");
    write(&ws.join(".ssh/id_rsa"), "key");
    write(&ws.join(".claude/settings.json"), "{}");
    write(&ws.join("ünïcødé/файл.txt"), "unicode");
    write(&ws.join("racedir/f.txt"), "inside");
    write(&ws.join("hard1"), "hard");
    fs::hard_link(ws.join("hard1"), ws.join("hard2")).unwrap();
    write(&t.join("ws-evil/x"), "evil");
    write(&t.join("outside/secret.txt"), "secret");
    write(&t.join("outside/d/f.txt"), "outside");
    write(&ro.join("r.txt"), "ro");
    symlink("sub/b.txt", ws.join("link_in")).unwrap();
    symlink("sub", ws.join("linkdir_in")).unwrap();
    symlink(t.join("outside"), ws.join("out_dir")).unwrap();
    symlink("/etc/passwd", ws.join("passwd_link")).unwrap();
    symlink(t.join("outside/missing"), ws.join("dangling")).unwrap();
    symlink("loop", ws.join("loop")).unwrap();
    let status = Command::new("mkfifo")
        .arg(ws.join("fifo"))
        .status()
        .unwrap();
    assert!(status.success(), "mkfifo failed");
    std::os::unix::net::UnixListener::bind(ws.join("sock")).unwrap();
    Tree {
        _tmp: tmp,
        t,
        ws,
        ro,
    }
}

fn sandbox(tree: &Tree) -> Sandbox {
    Sandbox::new(&tree.ws)
        .unwrap()
        .allow_read_dir(&tree.ro)
        .unwrap()
}

/// An expected verdict.
#[derive(Clone, Copy, Debug, PartialEq)]
enum E {
    Ok,
    Outside,
    ReadOnly,
    Symlink,
    Dangling,
    HardLinked,
    NotRegular,
    Protected,
    Invalid,
    Io,
}

fn verdict(r: &Result<PathBuf, SandboxError>) -> E {
    match r {
        Ok(_) => E::Ok,
        Err(SandboxError::Outside { .. }) => E::Outside,
        Err(SandboxError::ReadOnly { .. }) => E::ReadOnly,
        Err(SandboxError::Symlink { .. }) => E::Symlink,
        Err(SandboxError::DanglingSymlink { .. }) => E::Dangling,
        Err(SandboxError::HardLinked { .. }) => E::HardLinked,
        Err(SandboxError::NotRegularFile { .. }) => E::NotRegular,
        Err(SandboxError::Protected { .. }) => E::Protected,
        Err(SandboxError::InvalidPath { .. }) => E::Invalid,
        Err(SandboxError::Io { .. }) => E::Io,
        Err(e) => panic!("unexpected error variant {e:?}"),
    }
}

/// `{ws}`, `{t}` and `{ro}` are replaced by the tree's directories.
const TABLE: &[(&str, E, E)] = &[
    // plain paths, in every spelling
    ("a.txt", E::Ok, E::Ok),
    ("./a.txt", E::Ok, E::Ok),
    ("{ws}/a.txt", E::Ok, E::Ok),
    ("{ws}//a.txt", E::Ok, E::Ok),
    ("{ws}/./sub/./b.txt", E::Ok, E::Ok),
    ("sub/b.txt", E::Ok, E::Ok),
    ("sub//deep///c.txt", E::Ok, E::Ok),
    ("sub/../a.txt", E::Ok, E::Ok),
    ("/proc/self/root{ws}/a.txt", E::Ok, E::Ok),
    ("ünïcødé/файл.txt", E::Ok, E::Ok),
    ("日本語.txt", E::Ok, E::Ok),
    ("new/nested/deep/file.txt", E::Ok, E::Ok),
    ("./new//file.txt", E::Ok, E::Ok),
    (".gitignore", E::Ok, E::Ok),
    // directories and other non-regular files
    ("sub/", E::Ok, E::NotRegular),
    ("sub/deep/", E::Ok, E::NotRegular),
    (".", E::Ok, E::NotRegular),
    ("{ws}", E::Ok, E::NotRegular),
    ("{ws}/", E::Ok, E::NotRegular),
    ("empty", E::Ok, E::NotRegular),
    ("fifo", E::Ok, E::NotRegular),
    ("sock", E::Ok, E::NotRegular),
    ("a.txt/", E::Io, E::Io),
    ("a.txt/x", E::Io, E::Io),
    ("sub/deep/c.txt/..", E::Io, E::Io),
    // escapes
    ("..", E::Outside, E::Outside),
    ("../etc/passwd", E::Outside, E::Outside),
    ("{ws}/../etc/passwd", E::Outside, E::Outside),
    (
        "{ws}/../../../../../../../../etc/passwd",
        E::Outside,
        E::Outside,
    ),
    ("{ws}-evil/x", E::Outside, E::Outside),
    ("{ws}-evil/new.txt", E::Outside, E::Outside),
    ("{ws}/../ws-evil/x", E::Outside, E::Outside),
    ("/etc/passwd", E::Outside, E::Outside),
    ("/proc/self/root/etc/passwd", E::Outside, E::Outside),
    ("/", E::Outside, E::Outside),
    ("/dev/null", E::Outside, E::Outside),
    ("{t}/outside/secret.txt", E::Outside, E::Outside),
    ("new/../../etc/passwd", E::Invalid, E::Invalid),
    ("sub/new/../../a.txt", E::Invalid, E::Invalid),
    // symbolic links
    ("link_in", E::Ok, E::Symlink),
    ("linkdir_in/b.txt", E::Ok, E::Ok),
    ("linkdir_in/new.txt", E::Ok, E::Ok),
    ("linkdir_in", E::Ok, E::Symlink),
    ("out_dir", E::Outside, E::Outside),
    ("out_dir/secret.txt", E::Outside, E::Outside),
    ("out_dir/new.txt", E::Outside, E::Outside),
    ("out_dir/d/f.txt", E::Outside, E::Outside),
    ("out_dir/newdir/new.txt", E::Outside, E::Outside),
    ("out_dir/../a.txt", E::Outside, E::Outside),
    ("passwd_link", E::Outside, E::Outside),
    ("dangling", E::Dangling, E::Dangling),
    ("dangling/x", E::Dangling, E::Dangling),
    ("loop", E::Io, E::Io),
    ("loop/x", E::Io, E::Io),
    // hard links
    ("hard1", E::Ok, E::HardLinked),
    ("hard2", E::Ok, E::HardLinked),
    // protected
    (".git", E::Ok, E::Protected),
    (".git/config", E::Ok, E::Protected),
    (".git/HEAD", E::Ok, E::Protected),
    (".git/hooks/pre-commit", E::Ok, E::Protected),
    (".GIT/config", E::Ok, E::Protected),
    (".g\u{200c}it/config", E::Ok, E::Protected),
    (".bashrc", E::Ok, E::Protected),
    (".bash_profile", E::Ok, E::Protected),
    (".profile", E::Ok, E::Protected),
    (".zshrc", E::Ok, E::Protected),
    ("sub/.zshrc", E::Ok, E::Protected),
    (".ssh/id_rsa", E::Ok, E::Protected),
    (".ssh/authorized_keys", E::Ok, E::Protected),
    (".claude/settings.json", E::Ok, E::Protected),
    // read-only root
    ("{ro}/r.txt", E::Ok, E::ReadOnly),
    ("{ro}/new.txt", E::Ok, E::ReadOnly),
    ("{ws}/../ro/r.txt", E::Ok, E::ReadOnly),
    ("{ro}/../ws/a.txt", E::Ok, E::Ok),
    // malformed
    ("", E::Invalid, E::Invalid),
    ("a\0b", E::Invalid, E::Invalid),
    ("sub/\0", E::Invalid, E::Invalid),
];

fn expand(tree: &Tree, s: &str) -> PathBuf {
    PathBuf::from(
        s.replace("{ws}", tree.ws.to_str().unwrap())
            .replace("{ro}", tree.ro.to_str().unwrap())
            .replace("{t}", tree.t.to_str().unwrap()),
    )
}

/// A resolved path is absolute, plain and inside a root.
fn assert_inside(resolved: &Path, roots: &[&Path], what: &str) {
    assert!(resolved.is_absolute(), "{what}: {resolved:?} not absolute");
    assert!(
        resolved
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_))),
        "{what}: {resolved:?} not plain"
    );
    assert!(
        roots.iter().any(|r| resolved.starts_with(r)),
        "{what}: {resolved:?} outside {roots:?}"
    );
}

#[test]
fn table() {
    assert!(TABLE.len() >= 40);
    let tree = tree();
    let sb = sandbox(&tree);
    let mut failures = Vec::new();
    for &(raw, read, write) in TABLE {
        let path = expand(&tree, raw);
        let r = sb.check_read(&path);
        let w = sb.check_write(&path);
        if verdict(&r) != read {
            failures.push(format!("read {raw:?}: expected {read:?}, got {r:?}"));
        }
        if verdict(&w) != write {
            failures.push(format!("write {raw:?}: expected {write:?}, got {w:?}"));
        }
        if let Ok(p) = &r {
            assert_inside(p, &[&tree.ws, &tree.ro], raw);
        }
        if let Ok(p) = &w {
            assert_inside(p, &[&tree.ws], raw);
        }
        // Every refusal explains itself with the path it was given.
        for e in [r.err(), w.err()].into_iter().flatten() {
            let msg = e.to_string();
            assert!(
                msg.contains(&*path.to_string_lossy()),
                "{raw:?}: message {msg:?} does not name the path"
            );
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn resolved_paths() {
    let tree = tree();
    let sb = sandbox(&tree);
    let ws = &tree.ws;
    let cases = [
        ("./a.txt", ws.join("a.txt")),
        ("sub//deep/../b.txt", ws.join("sub/b.txt")),
        ("link_in", ws.join("sub/b.txt")),
        ("linkdir_in/new.txt", ws.join("sub/new.txt")),
        ("new/nested/file.txt", ws.join("new/nested/file.txt")),
        ("sub/", ws.join("sub")),
    ];
    for (raw, expected) in cases {
        assert_eq!(sb.check_read(Path::new(raw)).unwrap(), expected, "{raw}");
    }
}

#[test]
fn messages_say_what_and_why() {
    let tree = tree();
    let sb = Sandbox::new(&tree.ws).unwrap();
    let err = sb.check_read(Path::new("/etc/passwd")).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "/etc/passwd is outside the working directory {}; only paths inside it may be used",
            tree.ws.display()
        )
    );
    let err = sb.check_read(Path::new("passwd_link")).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "passwd_link resolves to /etc/passwd, which is outside the working directory {}; \
             only paths inside it may be used",
            tree.ws.display()
        )
    );
    let err = sb.check_write(Path::new("link_in")).unwrap_err();
    assert!(err.to_string().contains("write its target"), "{err}");
    assert!(err.to_string().contains("sub/b.txt"), "{err}");
    let err = sb.check_write(Path::new(".git/config")).unwrap_err();
    assert!(err.to_string().contains("protected"), "{err}");
    let err = sb.check_write(Path::new("hard1")).unwrap_err();
    assert!(err.to_string().contains("2 hard links"), "{err}");
    let err = sb.check_write(Path::new("fifo")).unwrap_err();
    assert!(err.to_string().contains("FIFO"), "{err}");
}

#[test]
fn bypass_lifts_only_protection() {
    let tree = tree();
    let sb = sandbox(&tree).bypass_protection(true);
    assert!(sb.check_write(Path::new(".git/config")).is_ok());
    assert!(sb.check_write(Path::new(".bashrc")).is_ok());
    assert!(matches!(
        sb.check_write(Path::new("hard1")),
        Err(SandboxError::HardLinked { .. })
    ));
    assert!(matches!(
        sb.check_write(Path::new("/etc/passwd")),
        Err(SandboxError::Outside { .. })
    ));
    assert!(matches!(
        sb.check_write(Path::new("link_in")),
        Err(SandboxError::Symlink { .. })
    ));
}

#[test]
fn caller_patterns_and_nested_roots() {
    let tree = tree();
    let sb = Sandbox::new(&tree.ws)
        .unwrap()
        .allow_read_dir("sub/deep")
        .unwrap()
        .protect(ProtectedPattern::FileName("Secrets.toml".into()))
        .protect(ProtectedPattern::Under("ünïcødé".into()))
        .protect(ProtectedPattern::Component("agent-config".into()));
    let refused = |p: &str| sb.check_write(Path::new(p)).unwrap_err();
    assert!(matches!(
        refused("sub/secrets.toml"),
        SandboxError::Protected { .. }
    ));
    assert!(matches!(
        refused("ünïcødé/файл.txt"),
        SandboxError::Protected { .. }
    ));
    assert!(matches!(
        refused("x/agent-config/y"),
        SandboxError::Protected { .. }
    ));
    // The most specific root decides: sub/deep is read-only inside the writable working dir.
    assert!(matches!(
        refused("sub/deep/c.txt"),
        SandboxError::ReadOnly { .. }
    ));
    assert!(sb.check_read(Path::new("sub/deep/c.txt")).is_ok());
    assert!(sb.check_write(Path::new("sub/b.txt")).is_ok());
    // Roots are matched by whole components.
    let sb = Sandbox::new(&tree.ws).unwrap();
    assert!(matches!(
        sb.check_read(&tree.t.join("ws-evil/x")),
        Err(SandboxError::Outside { .. })
    ));
    // Re-allowing the working directory read-only keeps it the working directory.
    let sb = Sandbox::new(&tree.ws)
        .unwrap()
        .allow_dir(&tree.ro)
        .unwrap()
        .allow_read_dir(".")
        .unwrap();
    assert_eq!(sb.working_dir(), tree.ws);
    assert_eq!(
        sb.allowed_dirs().collect::<Vec<_>>(),
        [(tree.ro.as_path(), true)]
    );
    assert!(matches!(
        sb.check_write(Path::new("a.txt")),
        Err(SandboxError::ReadOnly { .. })
    ));
    assert!(Sandbox::new(tree.ws.join("a.txt")).is_err());
    assert!(Sandbox::new(tree.ws.join("missing")).is_err());
}

#[test]
fn confined_open_read() {
    let tree = tree();
    let sb = sandbox(&tree);
    let mut s = String::new();
    sb.open_read(Path::new("linkdir_in/b.txt"))
        .unwrap()
        .read_to_string(&mut s)
        .unwrap();
    assert_eq!(s, "b");
    s.clear();
    sb.open_read(&tree.ro.join("r.txt"))
        .unwrap()
        .read_to_string(&mut s)
        .unwrap();
    assert_eq!(s, "ro");
    // A FIFO is opened non-blocking and refused, instead of hanging the agent.
    assert!(matches!(
        sb.open_read(Path::new("fifo")),
        Err(SandboxError::NotRegularFile { .. })
    ));
    assert!(matches!(
        sb.open_read(Path::new("sub")),
        Err(SandboxError::NotRegularFile { .. })
    ));
    assert!(matches!(
        sb.open_read(Path::new("missing.txt")),
        Err(SandboxError::Io {
            kind: std::io::ErrorKind::NotFound,
            ..
        })
    ));
    assert!(matches!(
        sb.open_read(Path::new("/proc/self/root/etc/passwd")),
        Err(SandboxError::Outside { .. })
    ));
    // The resolved variants accept only plain absolute paths inside a root.
    assert!(sb.open_read_resolved(Path::new("a.txt")).is_err());
    assert!(
        sb.open_read_resolved(&tree.ws.join("sub/../a.txt"))
            .is_err()
    );
    assert!(sb.open_read_resolved(Path::new("/etc/passwd")).is_err());
}

#[test]
fn confined_writes() {
    let tree = tree();
    let sb = sandbox(&tree);
    let mut f = sb.open_write(Path::new("a.txt")).unwrap();
    f.write_all(b"new").unwrap();
    drop(f);
    assert_eq!(fs::read_to_string(tree.ws.join("a.txt")).unwrap(), "new");
    sb.open_write(Path::new("created.txt")).unwrap();
    assert!(tree.ws.join("created.txt").is_file());
    assert!(sb.open_write(Path::new("link_in")).is_err());
    assert!(sb.open_write(Path::new("hard1")).is_err());
    assert!(sb.open_write(Path::new("fifo")).is_err());
    assert_eq!(fs::read_to_string(tree.ws.join("hard2")).unwrap(), "hard");

    // Atomic writes: parents created, permissions kept, refusals as for check_write.
    fs::set_permissions(tree.ws.join("sub/b.txt"), fs::Permissions::from_mode(0o640)).unwrap();
    let out = sb.write_atomic(Path::new("sub/b.txt"), b"atomic").unwrap();
    assert_eq!(out, tree.ws.join("sub/b.txt"));
    assert_eq!(fs::read_to_string(&out).unwrap(), "atomic");
    assert_eq!(
        fs::metadata(&out).unwrap().permissions().mode() & 0o777,
        0o640
    );
    let out = sb
        .write_atomic(Path::new("fresh/dir/ü.txt"), b"fresh")
        .unwrap();
    assert_eq!(fs::read_to_string(out).unwrap(), "fresh");
    for refused in ["link_in", "hard1", ".git/config", "out_dir/new.txt", "fifo"] {
        assert!(
            sb.write_atomic(Path::new(refused), b"x").is_err(),
            "{refused}"
        );
    }
    assert!(sb.write_atomic(&tree.ro.join("r.txt"), b"x").is_err());
    assert!(!tree.t.join("outside/new.txt").exists());
    assert_eq!(fs::read_to_string(tree.ws.join("hard2")).unwrap(), "hard");
    // No temporary files are left behind.
    let leftovers: Vec<_> = fs::read_dir(tree.ws.join("sub"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// Check a path, swap one of its directories for a link to outside, then open the checked
/// path: the kernel-confined open must refuse, although a plain open now reaches outside.
#[test]
fn swap_after_check_cannot_escape() {
    for absolute_link in [true, false] {
        let tree = tree();
        let sb = sandbox(&tree);
        let checked = sb.check_read(Path::new("racedir/f.txt")).unwrap();
        assert_eq!(sb.check_write(Path::new("racedir/f.txt")).unwrap(), checked);

        fs::rename(tree.ws.join("racedir"), tree.ws.join("racedir.old")).unwrap();
        let target = if absolute_link {
            tree.t.join("outside/d")
        } else {
            PathBuf::from("../outside/d")
        };
        symlink(&target, tree.ws.join("racedir")).unwrap();
        // The swap worked: opening by name now reaches outside.
        assert_eq!(fs::read_to_string(&checked).unwrap(), "outside");

        // The kernel (openat2 RESOLVE_BENEATH, or cap-std's own walk) refuses the escape.
        let read = sb.open_read_resolved(&checked);
        assert!(
            matches!(
                &read,
                Err(SandboxError::Io {
                    kind: std::io::ErrorKind::PermissionDenied,
                    ..
                })
            ),
            "read escaped: {read:?}"
        );
        let write = sb.open_write_resolved(&checked);
        assert!(
            matches!(
                &write,
                Err(SandboxError::Io {
                    kind: std::io::ErrorKind::PermissionDenied,
                    ..
                })
            ),
            "write escaped: {write:?}"
        );
        assert!(matches!(
            sb.open_read(&checked),
            Err(SandboxError::Outside { .. })
        ));
        assert!(sb.write_atomic(&checked, b"pwned").is_err());
        assert_eq!(
            fs::read_to_string(tree.t.join("outside/d/f.txt")).unwrap(),
            "outside"
        );
    }
}

/// The confined open still follows links that stay inside the root.
#[test]
fn swap_to_inside_link_still_opens() {
    let tree = tree();
    let sb = sandbox(&tree);
    let checked = sb.check_read(Path::new("racedir/f.txt")).unwrap();
    write(&tree.ws.join("other/f.txt"), "other");
    fs::rename(tree.ws.join("racedir"), tree.ws.join("racedir.old")).unwrap();
    symlink("other", tree.ws.join("racedir")).unwrap();
    let mut s = String::new();
    sb.open_read_resolved(&checked)
        .unwrap()
        .read_to_string(&mut s)
        .unwrap();
    assert_eq!(s, "other");
}

/// ~10k deterministic pseudo-random paths: no panic, and every accepted path resolves inside
/// a root (writable for writes).
#[test]
fn fuzz_smoke() {
    let tree = tree();
    let sb = sandbox(&tree);
    let ws = tree.ws.to_str().unwrap().to_string();
    let evil = format!("{ws}-evil");
    let fragments: Vec<&str> = vec![
        "..",
        "/",
        "//",
        ".",
        "./",
        "../",
        "\0",
        "ü",
        "日本",
        "файл",
        "a.txt",
        "sub",
        "deep",
        "c.txt",
        "link_in",
        "linkdir_in",
        "out_dir",
        "passwd_link",
        "dangling",
        "hard1",
        "fifo",
        "sock",
        ".git",
        ".bashrc",
        "new",
        "ws",
        "ws-evil",
        "ro",
        "outside",
        "etc",
        "passwd",
        "/proc/self/root",
        "/etc",
        &ws,
        &evil,
        " ",
        "~",
        "\u{200c}",
    ];
    let mut rng = fastrand::Rng::with_seed(0x5eed_5a4d_b0c5);
    let mut accepted = 0;
    for i in 0..10_000 {
        let n = rng.usize(1..=8);
        let mut s = String::new();
        for _ in 0..n {
            s.push_str(fragments[rng.usize(..fragments.len())]);
            if rng.u8(..4) != 0 {
                s.push('/');
            }
        }
        let path = Path::new(&s);
        let what = format!("case {i}: {s:?}");
        if let Ok(p) = sb.check_read(path) {
            accepted += 1;
            assert_inside(&p, &[&tree.ws, &tree.ro], &what);
        }
        if let Ok(p) = sb.check_write(path) {
            assert_inside(&p, &[&tree.ws], &what);
            assert!(
                !p.starts_with(&tree.ro),
                "{what}: write into read-only root"
            );
        }
    }
    // The generator reaches both verdicts.
    assert!(accepted > 100, "only {accepted} accepted");
}

/// A root is the directory the sandbox was built on, not whatever its path names later: a
/// working directory renamed away and replaced by a link to outside takes no write there.
#[test]
fn a_root_swapped_for_a_link_after_construction_confines_to_the_original() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path().canonicalize().unwrap();
    let ws = t.join("ws");
    let outside = t.join("outside");
    let extra = t.join("extra");
    for dir in [&ws, &outside, &extra] {
        fs::create_dir(dir).unwrap();
    }
    fs::write(ws.join("old.txt"), "old\n").unwrap();
    let sandbox = Sandbox::new(&ws).unwrap().allow_dir(&extra).unwrap();
    // Checked before the swap, opened after it.
    let checked = sandbox.check_write(Path::new("old.txt")).unwrap();
    let checked_extra = sandbox.check_write(&extra.join("e.txt")).unwrap();

    fs::rename(&ws, t.join("ws-moved")).unwrap();
    symlink(&outside, &ws).unwrap();
    fs::rename(&extra, t.join("extra-moved")).unwrap();
    symlink(&outside, &extra).unwrap();

    let write =
        |file: Result<fs::File, SandboxError>| file.map(|mut f| f.write_all(b"pwned\n").unwrap());
    type Attempt<'a> = Box<dyn Fn() -> Result<(), SandboxError> + 'a>;
    let attempts: Vec<(&str, Attempt)> = vec![
        (
            "write_atomic",
            Box::new(|| {
                sandbox
                    .write_atomic(Path::new("new.txt"), b"pwned\n")
                    .map(drop)
            }),
        ),
        (
            "write_atomic in a new directory",
            Box::new(|| {
                sandbox
                    .write_atomic(Path::new("d/new.txt"), b"pwned\n")
                    .map(drop)
            }),
        ),
        (
            "open_write_resolved",
            Box::new(|| write(sandbox.open_write_resolved(&checked))),
        ),
        (
            "open_write_resolved in an allowed dir",
            Box::new(|| write(sandbox.open_write_resolved(&checked_extra))),
        ),
    ];
    for (what, attempt) in attempts {
        // Refused, or written into the original directory: never outside.
        let _ = attempt();
        let leaked: Vec<_> = fs::read_dir(&outside)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert!(leaked.is_empty(), "{what} wrote outside: {leaked:?}");
    }
    // Paths checked before the swap were written in the directories the sandbox was built
    // on. (Paths checked after it resolve outside and are refused.)
    assert_eq!(
        fs::read_to_string(t.join("ws-moved/old.txt")).unwrap(),
        "pwned\n"
    );
    assert!(t.join("extra-moved/e.txt").exists());
}
