//! The builder methods the HTTP clients share.

/// The builder methods every HTTP model has, over its `http: HttpClient` field: written once
/// here so the clients cannot drift apart. Used inside each model's `impl` block.
macro_rules! http_builders {
    () => {
        /// Retries failed requests (429, 5xx, overloaded, connection failures) with this
        /// policy ([`RetryPolicy::none`](crate::RetryPolicy::none) to never retry).
        pub fn with_retry(mut self, retry: crate::RetryPolicy) -> Self {
            self.http.retry = retry;
            self
        }

        /// Sends requests with this HTTP client (for timeouts, proxies, connection pools,
        /// custom certificates).
        ///
        /// The SDK's TLS is rustls with the `ring` provider, installed as the process default
        /// when this model is made (unless the application installed one): build `client`
        /// after that, or install a provider yourself, or reqwest panics for want of one.
        pub fn with_client(mut self, client: reqwest::Client) -> Self {
            self.http.client = client;
            self
        }

        /// Records every HTTP attempt (request, status, headers without secrets, the raw
        /// streamed body) to a new cassette file in `dir`, for tests to replay (see
        /// [`cassette`](crate::cassette)). The environment variable
        /// `TOOL_SDK_RECORD_DIR` does the same for every model the process makes.
        pub fn with_recording(mut self, dir: impl AsRef<std::path::Path>) -> Self {
            self.http.record_to(dir.as_ref());
            self
        }

        /// The cassette file this model records to, when it records.
        pub fn recording_path(&self) -> Option<&std::path::Path> {
            self.http.recording_path()
        }
    };
}
pub(crate) use http_builders;
