//! Fuzzes `Sandbox::check_read` / `check_write` with arbitrary path bytes against a small tree
//! holding links to inside and outside, a hard link, a FIFO and protected files: no panic,
//! and every accepted path is a plain absolute path inside a root.
#![no_main]

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use tool_sdk::permission::Sandbox;

struct Fixture {
    _tmp: tempfile::TempDir,
    ws: PathBuf,
    ro: PathBuf,
    sandbox: Sandbox,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let tmp = tempfile::tempdir().unwrap();
        let t = fs::canonicalize(tmp.path()).unwrap();
        let (ws, ro) = (t.join("ws"), t.join("ro"));
        for dir in [
            ws.join("sub/deep"),
            ws.join(".git"),
            ro.clone(),
            t.join("ws-evil"),
            t.join("outside"),
        ] {
            fs::create_dir_all(dir).unwrap();
        }
        for file in [
            ws.join("a.txt"),
            ws.join("sub/b.txt"),
            ws.join(".git/config"),
            ws.join(".bashrc"),
            ro.join("r.txt"),
            t.join("ws-evil/x"),
            t.join("outside/secret"),
        ] {
            fs::write(file, "x").unwrap();
        }
        fs::hard_link(ws.join("a.txt"), ws.join("hard")).unwrap();
        symlink("sub", ws.join("in")).unwrap();
        symlink(t.join("outside"), ws.join("out")).unwrap();
        symlink("/etc/passwd", ws.join("pw")).unwrap();
        symlink(t.join("outside/missing"), ws.join("dangling")).unwrap();
        let sandbox = Sandbox::new(&ws).unwrap().allow_read_dir(&ro).unwrap();
        Fixture {
            _tmp: tmp,
            ws,
            ro,
            sandbox,
        }
    })
}

fn assert_inside(p: &Path, roots: &[&Path]) {
    assert!(p.is_absolute(), "{p:?}");
    assert!(
        p.components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_))),
        "{p:?}"
    );
    assert!(
        roots.iter().any(|r| p.starts_with(r)),
        "{p:?} outside {roots:?}"
    );
}

fuzz_target!(|data: &[u8]| {
    let f = fixture();
    let path = Path::new(OsStr::from_bytes(data));
    if let Ok(p) = f.sandbox.check_read(path) {
        assert_inside(&p, &[&f.ws, &f.ro]);
    }
    if let Ok(p) = f.sandbox.check_write(path) {
        assert_inside(&p, &[&f.ws]);
    }
});
