//! OS containment of Bash commands on Linux: Landlock for the file system, seccomp for the
//! network.
//!
//! When the call's context has a [`Sandbox`](crate::permission::Sandbox), the shell may read
//! anywhere but write only inside the sandbox's working directory, its writable allowed
//! directories, the temporary directory (`std::env::temp_dir()` and `/tmp`), `/dev/shm`, the
//! [`ShellPolicy::writable`] directories, and a few device files (`/dev/null`, `/dev/zero`,
//! `/dev/full`, `/dev/tty`, `/dev/pts`); and, unless [`ShellPolicy::network`] is set, it cannot
//! create IPv4 or IPv6 sockets (`socket(AF_INET | AF_INET6, ...)` fails with `EACCES`) nor an
//! io_uring (which could create them behind seccomp's back). Unix sockets still work.
//!
//! **Without `unsafe`.** Both Landlock (`landlock_restrict_self`) and a seccomp filter apply
//! to the calling *thread* and to every process it forks afterwards, across `execve`. The
//! command is therefore spawned from a short-lived thread of its own that restricts itself
//! first, then calls `Command::spawn` (synchronous, inside the runtime through a
//! `Handle::enter` guard) and ends; no other thread of the process is restricted. The crates
//! `landlock` and `seccompiler` hold the system calls (and their `unsafe`); this crate only
//! calls their safe API. Both set `PR_SET_NO_NEW_PRIVS`, so set-user-id programs (`sudo`)
//! do not gain privileges inside the shell.
//!
//! **Fallback.** Where the kernel has no Landlock (before 5.13, or not enabled at boot) or no
//! seccomp, the command still runs, guarded only by the permission classifier; the Bash tool
//! warns once per session and adds a one-line note to each result.

use std::path::{Path, PathBuf};

use tool_sdk_core::{ToolChild, ToolCommand};

/// How the Bash tool confines its commands when the context has a sandbox. Put one in the app
/// state ([`ToolContext::with_state`](tool_sdk_core::ToolContext::with_state)); without one, the
/// [`Default`] applies: no network, no extra writable directories.
#[derive(Clone, Debug, Default)]
pub struct ShellPolicy {
    /// Let commands open IPv4 and IPv6 sockets (`curl`, `cargo fetch`, `git fetch`).
    pub network: bool,
    /// Directories writable besides the sandbox and the temporary directory, e.g. a build
    /// cache such as `~/.cargo`.
    pub writable: Vec<PathBuf>,
}

/// What the shell of one command may do.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    /// The sandbox's writable roots, as the handles it opened when it was built: a root
    /// replaced by a link to elsewhere since then does not make elsewhere writable.
    pub(crate) roots: Vec<std::sync::Arc<cap_std::fs::Dir>>,
    /// Other directories (or files) writable, besides the device files.
    pub(crate) writable: Vec<PathBuf>,
    pub(crate) network: bool,
}

impl Plan {
    /// The plan for a context with `sandbox`.
    pub(crate) fn new(sandbox: &crate::permission::Sandbox, policy: Option<&ShellPolicy>) -> Self {
        let mut writable = vec![std::env::temp_dir()];
        writable.push(PathBuf::from("/tmp"));
        writable.push(PathBuf::from("/dev/shm"));
        if let Some(policy) = policy {
            writable.extend(policy.writable.iter().cloned());
        }
        Plan {
            roots: sandbox.writable_root_dirs().collect(),
            writable,
            network: policy.is_some_and(|p| p.network),
        }
    }
}

/// Whether each part of a [`Plan`] took effect.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Outcome {
    /// Why the file-system part is not in force, when it is not.
    pub(crate) fs_missing: Option<String>,
    /// Why the network part is not in force, when it was wanted and is not.
    pub(crate) net_missing: Option<String>,
}

impl Outcome {
    /// One line for the result when something is not in force.
    pub(crate) fn note(&self) -> Option<String> {
        let missing: Vec<String> = [
            self.fs_missing
                .as_ref()
                .map(|why| format!("write confinement ({why})")),
            self.net_missing
                .as_ref()
                .map(|why| format!("network blocking ({why})")),
        ]
        .into_iter()
        .flatten()
        .collect();
        (!missing.is_empty()).then(|| {
            format!(
                "[not OS-contained: {} unavailable; the command ran with permission checks only]",
                missing.join(", ")
            )
        })
    }
}

/// Spawns `command` confined by `plan`; without a plan, just spawns it.
pub(crate) fn spawn(
    command: &mut ToolCommand,
    plan: Option<&Plan>,
) -> std::io::Result<(ToolChild, Outcome)> {
    let Some(plan) = plan else {
        return Ok((command.spawn()?, Outcome::default()));
    };
    imp::spawn(command, plan)
}

#[cfg(target_os = "linux")]
mod imp {
    use super::*;

    use landlock::{
        ABI, Access, AccessFs, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
        RulesetCreatedAttr, RulesetStatus,
    };
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule,
    };

    /// Device files any shell needs to write.
    const DEVICES: &[&str] = &[
        "/dev/null",
        "/dev/zero",
        "/dev/full",
        "/dev/tty",
        "/dev/pts",
        "/dev/ptmx",
    ];

    pub(super) fn spawn(
        command: &mut ToolCommand,
        plan: &Plan,
    ) -> std::io::Result<(ToolChild, Outcome)> {
        let runtime = tokio::runtime::Handle::current();
        std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    // Everything below only restricts this thread, which ends after the spawn.
                    let _runtime = runtime.enter();
                    let outcome = Outcome {
                        fs_missing: restrict_fs(&plan.roots, &plan.writable).err(),
                        net_missing: if plan.network {
                            None
                        } else {
                            block_network().err()
                        },
                    };
                    command.spawn().map(|child| (child, outcome))
                })
                .join()
                .unwrap_or_else(|_| Err(std::io::Error::other("the spawning thread panicked")))
        })
    }

    /// Read and execute anywhere; write only beneath `writable` and the device files.
    fn restrict_fs(
        roots: &[std::sync::Arc<cap_std::fs::Dir>],
        writable: &[PathBuf],
    ) -> Result<(), String> {
        let abi = ABI::V5;
        let ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(abi))
            .map_err(|e| e.to_string())?
            .create()
            .map_err(|e| e.to_string())?;
        let mut ruleset = ruleset
            .add_rule(PathBeneath::new(
                PathFd::new("/").map_err(|e| e.to_string())?,
                AccessFs::from_read(abi),
            ))
            .map_err(|e| e.to_string())?;
        for root in roots {
            ruleset = ruleset
                .add_rule(PathBeneath::new(&**root, AccessFs::from_all(abi)))
                .map_err(|e| e.to_string())?;
        }
        let rules = writable
            .iter()
            .map(|dir| (dir.as_path(), AccessFs::from_all(abi)))
            .chain(
                DEVICES
                    .iter()
                    .map(|dev| (Path::new(*dev), AccessFs::from_file(abi))),
            );
        for (path, access) in rules {
            // A directory that does not exist has nothing to write into.
            if let Ok(fd) = PathFd::new(path) {
                ruleset = ruleset
                    .add_rule(PathBeneath::new(fd, access))
                    .map_err(|e| e.to_string())?;
            }
        }
        let status = ruleset.restrict_self().map_err(|e| e.to_string())?;
        match status.ruleset {
            RulesetStatus::FullyEnforced | RulesetStatus::PartiallyEnforced => Ok(()),
            RulesetStatus::NotEnforced => Err("no Landlock in this kernel".to_owned()),
        }
    }

    /// `socket(AF_INET | AF_INET6, ...)` and `io_uring_setup` fail with `EACCES`.
    fn block_network() -> Result<(), String> {
        let arch = std::env::consts::ARCH.try_into().map_err(|_| {
            format!(
                "seccomp filters are not built for {}",
                std::env::consts::ARCH
            )
        })?;
        let domain = |family: i32| {
            SeccompCondition::new(
                0,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::Eq,
                u64::try_from(family).unwrap_or_default(),
            )
            .and_then(|condition| SeccompRule::new(vec![condition]))
        };
        let rules = vec![
            (
                libc::SYS_socket,
                vec![
                    domain(libc::AF_INET).map_err(|e| e.to_string())?,
                    domain(libc::AF_INET6).map_err(|e| e.to_string())?,
                ],
            ),
            // No rules: every call matches.
            (libc::SYS_io_uring_setup, vec![]),
        ];
        let filter = SeccompFilter::new(
            rules.into_iter().collect(),
            SeccompAction::Allow,
            SeccompAction::Errno(u32::try_from(libc::EACCES).unwrap_or(13)),
            arch,
        )
        .map_err(|e| e.to_string())?;
        let program: BpfProgram = filter
            .try_into()
            .map_err(|e: seccompiler::BackendError| e.to_string())?;
        seccompiler::apply_filter(&program).map_err(|e| format!("seccomp: {e}"))
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::*;

    pub(super) fn spawn(
        command: &mut ToolCommand,
        plan: &Plan,
    ) -> std::io::Result<(ToolChild, Outcome)> {
        let why = || "not implemented on this OS".to_owned();
        let outcome = Outcome {
            fs_missing: Some(why()),
            net_missing: (!plan.network).then(why),
        };
        Ok((command.spawn()?, outcome))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_note_names_what_is_missing() {
        assert_eq!(Outcome::default().note(), None);
        let outcome = Outcome {
            fs_missing: Some("no Landlock in this kernel".to_owned()),
            net_missing: None,
        };
        let note = outcome.note().unwrap();
        assert!(
            note.contains("write confinement (no Landlock in this kernel)"),
            "{note}"
        );
        assert!(!note.contains('\n'));
    }
}
