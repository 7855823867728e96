//! [`SessionLease`]: one session is run by one process at a time.
//!
//! Two processes (maybe on two machines sharing a PostgreSQL store) may both be asked to resume
//! the same session. Were both to run it, their records would interleave into a conversation
//! neither model wrote. So whoever runs a session first takes its lease
//! ([`SessionStore::acquire`]): a row in the store naming the holder, that expires `ttl` after
//! it was last renewed. Anyone else asking gets [`SessionError::Busy`], which names the holder
//! and says when its lease runs out.
//!
//! How an agent uses it (by default: see [`SessionLeasing`]):
//!
//! - it acquires the lease, as [`SessionLease::this_process`], when it creates or resumes a
//!   session, and refuses to run if that fails (a second `acquire` of a held lease fails even
//!   for the same holder, so two agents in one process cannot share a session by mistake). A
//!   lease whose holder is gone, a process of this host that no longer exists or an agent of
//!   this process since dropped, is taken over at once ([`SessionStore::take_over`]);
//! - while it runs it renews the lease every [`SessionLease::renew_every`] (a third of the
//!   ttl), so that two renewals may fail to arrive before the lease lapses; a renewal that
//!   fails with [`SessionError::Busy`] or [`SessionError::LeaseLost`] means another process
//!   took the session over, and the agent stops without appending anything more;
//! - every record it appends is fenced by the lease ([`SessionStore::append_leased`]): the
//!   store checks, in the append's own transaction, that the lease is still the session's, so
//!   a holder that stalled past its ttl (a suspended laptop, a SIGSTOP) cannot add a word
//!   once another process took over, even before its next renewal tells it;
//! - it releases the lease when it is dropped or the session ends.
//!
//! A process that dies (SIGKILL, power cut) releases nothing: its lease expires `ttl` after its
//! last renewal and the session can then be taken from another host (at once from its own). A
//! short ttl resumes sooner after a crash; a long one tolerates longer stalls (a slow database)
//! before another process may take over.
//!
//! [`SessionStore::acquire`]: super::SessionStore::acquire
//! [`SessionStore::append_leased`]: super::SessionStore::append_leased
//! [`SessionStore::take_over`]: super::SessionStore::take_over
//! [`SessionLeasing`]: crate::agent::SessionLeasing
//! [`SessionError::Busy`]: super::SessionError::Busy
//! [`SessionError::LeaseLost`]: super::SessionError::LeaseLost

use std::time::{Duration, Instant};

/// The right to run one session, held by one process until it is released or expires. Returned
/// by [`SessionStore::acquire`](super::SessionStore::acquire) and
/// [`SessionStore::renew`](super::SessionStore::renew).
///
/// Expiry is measured by the store's clock (the database's own for PostgreSQL, so hosts with
/// skewed clocks agree). [`expires_in`](Self::expires_in) is this process's cautious view of
/// it: counted from before the request that took or renewed the lease was sent, so the lease
/// never expires in the store before it does here (clock rates aside).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionLease {
    session: String,
    holder: String,
    token: String,
    ttl: Duration,
    since: Instant,
}

impl SessionLease {
    /// A lease on `session` held by `holder`, identified in the store by `token` (unique to
    /// this acquisition), lasting `ttl` from `since`. For stores outside this crate; callers get
    /// leases from [`SessionStore::acquire`](super::SessionStore::acquire).
    pub fn new(
        session: impl Into<String>,
        holder: impl Into<String>,
        token: impl Into<String>,
        ttl: Duration,
        since: Instant,
    ) -> Self {
        SessionLease {
            session: session.into(),
            holder: holder.into(),
            token: token.into(),
            ttl,
            since,
        }
    }

    /// The session leased.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// Who holds it, as given to `acquire`: shown to other processes in
    /// [`SessionError::Busy`](super::SessionError::Busy).
    pub fn holder(&self) -> &str {
        &self.holder
    }

    /// What tells this acquisition from any other in the store, even one by the same holder.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// How long the lease lasts after each renewal.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// How long until the lease expires unless renewed (zero once it has).
    pub fn expires_in(&self) -> Duration {
        self.ttl.saturating_sub(self.since.elapsed())
    }

    /// Words that name this process for [`holder`](Self::holder), to whoever finds the
    /// session busy: `pid 4242 on build-7` (the host name as the kernel has it, where it can
    /// be read).
    pub fn this_process() -> String {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .or_else(|| std::env::var("HOSTNAME").ok())
            .or_else(|| std::env::var("COMPUTERNAME").ok())
            .map(|host| host.trim().to_owned())
            .filter(|host| !host.is_empty());
        match host {
            Some(host) => format!("pid {} on {host}", std::process::id()),
            None => format!("pid {}", std::process::id()),
        }
    }

    /// How often to renew it: a third of its ttl.
    pub fn renew_every(&self) -> Duration {
        self.ttl / 3
    }

    /// The same lease, renewed from `since`.
    pub(crate) fn renewed(&self, since: Instant) -> Self {
        SessionLease {
            since,
            ..self.clone()
        }
    }
}

/// A fresh token for a new acquisition: random, so two processes never share one.
pub(crate) fn new_token() -> String {
    format!("{:016x}{:016x}", fastrand::u64(..), fastrand::u64(..))
}

/// Whole seconds, rounded up, for messages: "expires in 0 s" would read as "now".
pub(crate) fn whole_seconds(duration: &Duration) -> u64 {
    duration.as_secs() + u64::from(duration.subsec_nanos() > 0)
}

#[cfg(test)]
mod tests {
    use super::super::{NewSession, Record, SessionError, SessionInfo, SessionStore};
    use super::*;
    use crate::BoxFuture;

    /// A store that implements only what every store must: no leases.
    struct Plain;

    impl SessionStore for Plain {
        fn create(&self, _: NewSession) -> BoxFuture<'_, Result<SessionInfo, SessionError>> {
            Box::pin(async { Err(SessionError::storage("unused")) })
        }
        fn append<'a>(
            &'a self,
            _: &'a str,
            _: &'a Record,
        ) -> BoxFuture<'a, Result<(), SessionError>> {
            Box::pin(async { Ok(()) })
        }
        fn load<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<Vec<Record>, SessionError>> {
            Box::pin(async { Ok(Vec::new()) })
        }
        fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SessionInfo, SessionError>> {
            Box::pin(async move { Err(SessionError::UnknownSession { id: id.into() }) })
        }
        fn list(&self) -> BoxFuture<'_, Result<Vec<SessionInfo>, SessionError>> {
            Box::pin(async { Ok(Vec::new()) })
        }
    }

    #[test]
    fn a_store_without_leases_refuses_rather_than_pretends() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(async {
            let error = Plain
                .acquire("s1", "me", Duration::from_secs(1))
                .await
                .unwrap_err();
            assert!(error.to_string().contains("has no leases"), "{error}");
            assert!(error.to_string().contains("`s1`"), "{error}");
            let lease = SessionLease::new("s1", "me", "t", Duration::from_secs(3), Instant::now());
            assert!(Plain.renew(&lease).await.is_err());
            assert!(Plain.release(&lease).await.is_err());
        });
    }

    #[test]
    fn a_lease_counts_down_and_names_its_process() {
        let lease = SessionLease::new("s1", "me", "t", Duration::from_secs(3), Instant::now());
        assert!(lease.expires_in() <= Duration::from_secs(3));
        assert!(lease.expires_in() > Duration::from_secs(2));
        assert_eq!(lease.renew_every(), Duration::from_secs(1));
        // Taken five seconds ago for three: expired here, until renewed.
        let five_ago = Instant::now()
            .checked_sub(Duration::from_secs(5))
            .expect("up for 5 s");
        let old = SessionLease::new("s1", "me", "t", Duration::from_secs(3), five_ago);
        assert_eq!(old.expires_in(), Duration::ZERO);
        assert!(old.renewed(Instant::now()).expires_in() > Duration::from_secs(2));
        let me = SessionLease::this_process();
        assert!(
            me.starts_with(&format!("pid {}", std::process::id())),
            "{me}"
        );
        assert_eq!(whole_seconds(&Duration::from_millis(1001)), 2);
        assert_eq!(whole_seconds(&Duration::from_secs(2)), 2);
    }
}
