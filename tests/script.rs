//! A wiremock responder that plays a script of responses: for tests of several requests in a
//! row (a tool turn, then the answer; a refusal, then the request again).

use std::sync::atomic::{AtomicUsize, Ordering};

use wiremock::{Request, Respond, ResponseTemplate};

/// Answers the scripted responses in order; the last one again when the script runs out.
pub struct Script {
    responses: Vec<ResponseTemplate>,
    next: AtomicUsize,
}

impl Script {
    /// A script of `responses`, at least one.
    pub fn new(responses: Vec<ResponseTemplate>) -> Self {
        assert!(!responses.is_empty(), "a script needs a response");
        Script {
            responses,
            next: AtomicUsize::new(0),
        }
    }
}

impl Respond for Script {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let index = self.next.fetch_add(1, Ordering::SeqCst);
        self.responses[index.min(self.responses.len() - 1)].clone()
    }
}
