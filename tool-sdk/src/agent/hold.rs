//! The agent's hold on its stored session ([`SessionLeasing`]): the lease is taken before the
//! agent touches the session, renewed in the background while the agent lives, and released
//! when it is dropped. Its token fences every record the agent appends
//! ([`SessionStore::append_leased`]).
//!
//! [`SessionLeasing`]: super::SessionLeasing

use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use super::config::SessionLeasing;
use crate::session::{SessionError, SessionLease, SessionStore};

/// Held by the agent; dropping it stops the renewals and releases the lease.
pub(crate) struct SessionHold {
    /// The lease as taken: its token, which renewals keep, is what fences appends.
    lease: SessionLease,
    /// Why the lease was lost, once it was: every later record is refused with it.
    lost: Arc<Mutex<Option<SessionError>>>,
    stop: CancellationToken,
}

impl SessionHold {
    /// Takes the lease of session `id` as `leasing` says: `None` for no lease (or, with
    /// [`SessionLeasing::Auto`], a store that has none). Says who holds it when another live
    /// process does; takes it over at once from a holder that died on this host.
    pub(crate) async fn take(
        store: &Arc<dyn SessionStore>,
        id: &str,
        leasing: SessionLeasing,
    ) -> Result<Option<SessionHold>, SessionError> {
        let ttl = match leasing {
            SessionLeasing::Off => return Ok(None),
            SessionLeasing::Auto => SessionLeasing::DEFAULT_TTL,
            SessionLeasing::Ttl(ttl) => ttl,
        };
        let me = SessionLease::this_process();
        let lease = match store.acquire(id, &me, ttl).await {
            Err(SessionError::NoLeases { .. }) if leasing == SessionLeasing::Auto => {
                return Ok(None);
            }
            Err(SessionError::Busy { holder, .. }) if holder_is_gone(&holder, id) => {
                store.take_over(id, &me, ttl, &holder).await?
            }
            taken => taken?,
        };
        held_here()
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(id.to_owned());
        let hold = SessionHold {
            lease: lease.clone(),
            lost: Arc::default(),
            stop: CancellationToken::new(),
        };
        tokio::spawn(keep(
            store.clone(),
            lease,
            hold.lost.clone(),
            hold.stop.clone(),
        ));
        Ok(Some(hold))
    }

    /// The lease as taken, to fence appends with.
    pub(crate) fn lease(&self) -> &SessionLease {
        &self.lease
    }

    /// Fails once the lease is lost: another process may be running the session now.
    pub(crate) fn check(&self) -> Result<(), SessionError> {
        match &*self
            .lost
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
        {
            Some(error) => Err(error.clone()),
            None => Ok(()),
        }
    }
}

impl Drop for SessionHold {
    fn drop(&mut self) {
        let mut held = held_here().lock().unwrap_or_else(|p| p.into_inner());
        if let Some(at) = held.iter().position(|id| id == self.lease.session()) {
            held.swap_remove(at);
        }
        self.stop.cancel();
    }
}

/// The sessions whose lease an agent of this process holds now. A lease of this process's
/// that is not here belonged to an agent since dropped, whose release may still be on its
/// way: it need not be waited out. A fact about the process, so process-wide.
fn held_here() -> &'static Mutex<Vec<String>> {
    static HELD: Mutex<Vec<String>> = Mutex::new(Vec::new());
    &HELD
}

/// Whether `holder` ([`SessionLease::this_process`] words) names a holder of session `id` that
/// is gone: a process of this host that no longer exists, or this process when none of its
/// agents holds the session. A holder on another host, or one whose words are not ours, is
/// never taken for gone: its lease is waited out.
fn holder_is_gone(holder: &str, id: &str) -> bool {
    let Some(pid) = pid_on_this_host(holder) else {
        return false;
    };
    if pid == std::process::id() {
        return !held_here()
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .any(|held| held == id);
    }
    process_is_gone(pid)
}

/// The pid in `holder` when it names a process of this host.
fn pid_on_this_host(holder: &str) -> Option<u32> {
    let me = SessionLease::this_process();
    let (_, my_host) = split_holder(&me)?;
    let (pid, host) = split_holder(holder)?;
    (host == my_host).then_some(pid)
}

/// `pid 4242 on build-7` as (4242, "on build-7"); `pid 4242` as (4242, "").
fn split_holder(holder: &str) -> Option<(u32, &str)> {
    let rest = holder.strip_prefix("pid ")?;
    let (pid, host) = rest.split_once(' ').unwrap_or((rest, ""));
    Some((pid.parse().ok()?, host))
}

#[cfg(unix)]
fn process_is_gone(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    // Signal 0 checks without sending: ESRCH is the one answer that means no such process
    // (EPERM is a live process of another user).
    if rustix::process::test_kill_process(pid) == Err(rustix::io::Errno::SRCH) {
        return true;
    }
    // A zombie (dead, not yet reaped by its parent) still answers signal 0.
    std::fs::read_to_string(format!("/proc/{}/stat", pid.as_raw_nonzero()))
        .ok()
        .and_then(|stat| {
            let (_, after_name) = stat.rsplit_once(')')?;
            after_name
                .split_whitespace()
                .next()
                .map(|state| state == "Z")
        })
        .unwrap_or(false)
}

#[cfg(not(unix))]
fn process_is_gone(_: u32) -> bool {
    false
}

/// Renews the lease every third of its ttl until told to stop, then releases it.
async fn keep(
    store: Arc<dyn SessionStore>,
    mut lease: SessionLease,
    lost: Arc<Mutex<Option<SessionError>>>,
    stop: CancellationToken,
) {
    loop {
        tokio::select! {
            _ = stop.cancelled() => {
                // Best effort: a lease not released expires after its ttl anyway.
                let _ = store.release(&lease).await;
                return;
            }
            _ = tokio::time::sleep(lease.renew_every()) => {}
        }
        match store.renew(&lease).await {
            Ok(renewed) => lease = renewed,
            Err(error @ (SessionError::Busy { .. } | SessionError::LeaseLost { .. })) => {
                tracing::warn!(%error, "the session's lease is lost; the agent stops storing");
                *lost.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(error);
                return;
            }
            // A database that did not answer this time: the lease lasts two more tries.
            Err(error) => tracing::warn!(%error, "could not renew the session's lease"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holders_are_read_back_from_their_words() {
        assert_eq!(
            split_holder("pid 4242 on build-7"),
            Some((4242, "on build-7"))
        );
        assert_eq!(split_holder("pid 4242"), Some((4242, "")));
        assert_eq!(split_holder("worker-3"), None);
        assert_eq!(split_holder("pid x on build-7"), None);
        // Another host's process is never judged from here.
        assert_eq!(pid_on_this_host("pid 1 on some-other-host-name"), None);
        assert!(!holder_is_gone("pid 1 on some-other-host-name", "s"));
        // This process, holding nothing: the lease was an agent's since dropped.
        let me = SessionLease::this_process();
        assert!(holder_is_gone(&me, "session-nobody-holds"));
    }

    #[cfg(unix)]
    #[test]
    fn a_process_that_exited_is_gone_and_a_live_one_is_not() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(process_is_gone(pid));
        assert!(!process_is_gone(std::process::id()));
    }
}
