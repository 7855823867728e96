//! The agent's hold on its stored session ([`AgentConfig::with_session_lease`]): the lease is
//! taken before the agent touches the session, renewed in the background while the agent
//! lives, and released when it is dropped.
//!
//! [`AgentConfig::with_session_lease`]: super::AgentConfig::with_session_lease

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::session::{SessionError, SessionLease, SessionStore};

/// Held by the agent; dropping it stops the renewals and releases the lease.
pub(crate) struct SessionHold {
    /// Why the lease was lost, once it was: every later record is refused with it.
    lost: Arc<Mutex<Option<SessionError>>>,
    stop: CancellationToken,
}

impl SessionHold {
    /// Takes the lease of session `id` for `ttl`, or says who holds it.
    pub(crate) async fn take(
        store: &Arc<dyn SessionStore>,
        id: &str,
        ttl: Duration,
    ) -> Result<SessionHold, SessionError> {
        let lease = store
            .acquire(id, &SessionLease::this_process(), ttl)
            .await?;
        let hold = SessionHold {
            lost: Arc::default(),
            stop: CancellationToken::new(),
        };
        tokio::spawn(keep(
            store.clone(),
            lease,
            hold.lost.clone(),
            hold.stop.clone(),
        ));
        Ok(hold)
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
        self.stop.cancel();
    }
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
