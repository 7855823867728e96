//! Exponential backoff with jitter, honouring the provider's `retry-after`.

use std::future::Future;
use std::time::Duration;

use super::ModelError;

/// How failed model requests are retried: on 429, 5xx, overloaded and transport errors only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 = never retry).
    pub max_retries: u32,
    /// The first backoff; each retry doubles it.
    pub initial_backoff: Duration,
    /// The longest backoff, and the longest `retry-after` honoured.
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 4,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// Never retry.
    pub fn none() -> Self {
        RetryPolicy {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// The wait before retry number `retry` (0-based): the provider's `retry-after` when given,
    /// else `initial_backoff * 2^retry` with up to 25% random jitter either way, capped.
    pub fn backoff(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(after) = retry_after {
            return after.min(self.max_backoff);
        }
        let exponential = self
            .initial_backoff
            .saturating_mul(2u32.saturating_pow(retry.min(16)));
        let jitter = 0.75 + fastrand::f64() * 0.5;
        exponential.mul_f64(jitter).min(self.max_backoff)
    }

    /// Runs `attempt` until it succeeds, fails with an error that is not retryable, or the
    /// retries run out (then the last error is returned).
    pub async fn run<T, F, Fut>(&self, mut attempt: F) -> Result<T, ModelError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, ModelError>>,
    {
        let mut retry = 0;
        loop {
            match attempt().await {
                Ok(value) => return Ok(value),
                Err(error) if error.is_retryable() && retry < self.max_retries => {
                    let wait = self.backoff(retry, error.retry_after());
                    tracing::warn!(%error, retry = retry + 1, wait_ms = wait.as_millis() as u64, "model request failed, retrying");
                    tokio::time::sleep(wait).await;
                    retry += 1;
                }
                Err(error) => return Err(error),
            }
        }
    }
}

/// Parses a `retry-after` header: seconds (possibly fractional). HTTP dates are ignored.
pub(crate) fn parse_retry_after(value: Option<&str>) -> Option<Duration> {
    let seconds: f64 = value?.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_bounded_jitter_and_honours_retry_after() {
        let policy = RetryPolicy {
            max_retries: 5,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(1),
        };
        for retry in 0..3 {
            let base = 100.0 * f64::from(1u32 << retry);
            let wait = policy.backoff(retry, None).as_secs_f64() * 1000.0;
            assert!(
                wait >= base * 0.75 - 1e-6 && wait <= base * 1.25 + 1e-6,
                "{retry}: {wait}"
            );
        }
        assert_eq!(policy.backoff(10, None), Duration::from_secs(1), "capped");
        assert_eq!(
            policy.backoff(0, Some(Duration::from_millis(300))),
            Duration::from_millis(300)
        );
        assert_eq!(
            policy.backoff(0, Some(Duration::from_secs(90))),
            Duration::from_secs(1)
        );
    }

    #[test]
    fn retry_after_parses_seconds_only() {
        assert_eq!(parse_retry_after(Some("2")), Some(Duration::from_secs(2)));
        assert_eq!(
            parse_retry_after(Some(" 0.5 ")),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            parse_retry_after(Some("Wed, 21 Oct 2015 07:28:00 GMT")),
            None
        );
        assert_eq!(parse_retry_after(Some("-1")), None);
        assert_eq!(parse_retry_after(None), None);
    }

    #[tokio::test]
    async fn run_retries_only_retryable_errors() {
        let policy = RetryPolicy {
            max_retries: 2,
            initial_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(2),
        };
        let mut calls = 0;
        let result: Result<(), _> = policy
            .run(|| {
                calls += 1;
                async {
                    Err(ModelError::Server {
                        status: 500,
                        message: "boom".into(),
                    })
                }
            })
            .await;
        assert!(matches!(result, Err(ModelError::Server { .. })));
        assert_eq!(calls, 3, "one attempt and two retries");

        let mut calls = 0;
        let result: Result<(), _> = policy
            .run(|| {
                calls += 1;
                async {
                    Err(ModelError::Api {
                        status: 400,
                        message: "bad".into(),
                    })
                }
            })
            .await;
        assert!(matches!(result, Err(ModelError::Api { .. })));
        assert_eq!(calls, 1, "a 400 is not retried");
    }
}
