//! What a request asks of the model's reasoning: [`Thinking`] (Anthropic's extended thinking)
//! and [`Effort`].
//!
//! In a config file's `[model]` table they are `thinking = 4096` (a budget of tokens),
//! `thinking = "adaptive"` or `thinking = "off"`, and `effort = "low"` (`medium`, `high`,
//! `xhigh`, `max`); on the coder's command line, `--thinking 4096|adaptive` and
//! `--effort LEVEL`. Both parse with [`str::parse`].

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Whether the model thinks before it answers, and how much (Anthropic's extended thinking).
///
/// Anthropic gets `thinking: {"type": "enabled", "budget_tokens": N}` for a
/// [`Budget`](Thinking::Budget) and `{"type": "adaptive"}` for [`Adaptive`](Thinking::Adaptive);
/// [`Off`](Thinking::Off) sends nothing, so the model's default applies. Budgets are for
/// Claude 4.5 and earlier (deprecated on the 4.6 models, refused by 4.7 and later); adaptive
/// thinking is for the 4.6 models and later, with [`Effort`] to steer it. OpenAI's Chat
/// Completions has no such setting: its client ignores this (see [`Effort`] for what it
/// takes). Gemini gets `thinkingConfig` with the budget (`-1`, the model's choice, for
/// adaptive) and `includeThoughts`, so its thought summaries stream as thinking.
///
/// The thinking that comes back is kept in the conversation with its signature and sent back
/// unchanged, as the API requires; it streams as
/// `agent::AgentEvent::ThinkingDelta`. Its tokens are
/// billed as output tokens, and counted there: Anthropic reports no separate number.
///
/// ```
/// use tool_sdk::model::Thinking;
///
/// assert_eq!("4096".parse::<Thinking>(), Ok(Thinking::budget(4096)));
/// assert_eq!("adaptive".parse::<Thinking>(), Ok(Thinking::Adaptive));
/// assert!(Thinking::default().is_off());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Thinking {
    /// No thinking is asked for (the default).
    #[default]
    Off,
    /// Thinking with a budget of tokens: at least
    /// [`MIN_BUDGET_TOKENS`](Thinking::MIN_BUDGET_TOKENS), and below the request's
    /// `max_tokens`, which it is part of (except with interleaved thinking between tool
    /// calls, where it may exceed it).
    Budget {
        /// The most tokens the model may think with.
        budget_tokens: u32,
    },
    /// The model decides when and how much to think (Claude 4.6 and later); steer it with
    /// [`Effort`].
    Adaptive,
}

impl Thinking {
    /// The smallest budget Anthropic accepts.
    pub const MIN_BUDGET_TOKENS: u32 = 1024;

    /// Thinking with a budget of `budget_tokens`.
    pub fn budget(budget_tokens: u32) -> Self {
        Thinking::Budget { budget_tokens }
    }

    /// Whether no thinking is asked for.
    pub fn is_off(&self) -> bool {
        matches!(self, Thinking::Off)
    }
}

impl fmt::Display for Thinking {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Thinking::Off => f.write_str("off"),
            Thinking::Budget { budget_tokens } => write!(f, "{budget_tokens}"),
            Thinking::Adaptive => f.write_str("adaptive"),
        }
    }
}

impl FromStr for Thinking {
    type Err = String;

    /// `off`, `adaptive`, or a budget of tokens such as `4096`.
    fn from_str(text: &str) -> Result<Self, String> {
        match text.trim() {
            "off" => Ok(Thinking::Off),
            "adaptive" => Ok(Thinking::Adaptive),
            number => number.parse().map(Thinking::budget).map_err(|_| {
                format!(
                    "thinking must be a budget of tokens (such as 4096), `adaptive` or `off`, \
                     not `{text}`"
                )
            }),
        }
    }
}

/// A budget as a number, the others as their names.
impl Serialize for Thinking {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Thinking::Budget { budget_tokens } => serializer.serialize_u32(*budget_tokens),
            other => serializer.collect_str(other),
        }
    }
}

impl<'de> Deserialize<'de> for Thinking {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Budget(u32),
            Name(String),
        }
        match Written::deserialize(deserializer).map_err(|_| {
            serde::de::Error::custom(
                "thinking must be a budget of tokens (such as 4096), \"adaptive\" or \"off\"",
            )
        })? {
            Written::Budget(budget_tokens) => Ok(Thinking::budget(budget_tokens)),
            Written::Name(name) => name.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// How eagerly the model spends tokens: on thinking, text and tool calls alike.
///
/// Anthropic gets `output_config: {"effort": "<level>"}` (the names below; `high` is its
/// default): Claude Opus 4.5 and the 4.6 models and later take it, and only some of them
/// `xhigh` and `max`; the others answer with an error. OpenAI's Chat Completions gets
/// `reasoning_effort`, which its reasoning models take: `low`, `medium`, `high` and `xhigh`
/// as named, [`Max`](Effort::Max) as `xhigh`, its highest.
///
/// ```
/// use tool_sdk::model::Effort;
///
/// assert_eq!("xhigh".parse::<Effort>(), Ok(Effort::XHigh));
/// assert_eq!(Effort::Max.as_str(), "max");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Effort {
    /// The fewest tokens: quick and cheap, for simple tasks.
    Low,
    /// Between the two.
    Medium,
    /// Anthropic's default: as many tokens as the task needs.
    High,
    /// More than `high`, for long agentic work (`xhigh`; not every model takes it).
    #[serde(rename = "xhigh")]
    XHigh,
    /// No limit on spending (`max`; not every model takes it).
    Max,
}

impl Effort {
    /// Every level, lowest first.
    pub const ALL: [Effort; 5] = [
        Effort::Low,
        Effort::Medium,
        Effort::High,
        Effort::XHigh,
        Effort::Max,
    ];

    /// The level's name, as the Anthropic API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
            Effort::XHigh => "xhigh",
            Effort::Max => "max",
        }
    }
}

impl fmt::Display for Effort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Effort {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let text = text.trim();
        Effort::ALL
            .into_iter()
            .find(|level| level.as_str() == text)
            .ok_or_else(|| {
                format!("effort must be one of low, medium, high, xhigh, max, not `{text}`")
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinking_reads_and_writes_as_a_number_or_a_name() {
        for (text, thinking) in [
            ("2048", Thinking::budget(2048)),
            ("adaptive", Thinking::Adaptive),
            ("off", Thinking::Off),
        ] {
            assert_eq!(text.parse::<Thinking>(), Ok(thinking));
            assert_eq!(thinking.to_string(), text);
        }
        assert_eq!(
            serde_json::to_string(&Thinking::budget(5000)).unwrap(),
            "5000"
        );
        assert_eq!(
            serde_json::to_string(&Thinking::Adaptive).unwrap(),
            "\"adaptive\""
        );
        assert_eq!(
            serde_json::from_str::<Thinking>("3000").unwrap(),
            Thinking::budget(3000)
        );
        let error = "lots".parse::<Thinking>().unwrap_err();
        assert!(
            error.contains("`lots`") && error.contains("adaptive"),
            "{error}"
        );
        let error = serde_json::from_str::<Thinking>("-5")
            .unwrap_err()
            .to_string();
        assert!(error.contains("budget of tokens"), "{error}");
        let error = serde_json::from_str::<Thinking>("\"deep\"")
            .unwrap_err()
            .to_string();
        assert!(error.contains("`deep`"), "{error}");
    }

    #[test]
    fn effort_uses_the_api_names() {
        for level in Effort::ALL {
            assert_eq!(level.as_str().parse::<Effort>(), Ok(level));
            assert_eq!(
                serde_json::to_value(level).unwrap(),
                serde_json::Value::from(level.as_str())
            );
        }
        assert_eq!(serde_json::to_string(&Effort::XHigh).unwrap(), "\"xhigh\"");
        let error = "extreme".parse::<Effort>().unwrap_err();
        assert!(error.contains("low, medium, high, xhigh, max"), "{error}");
    }
}
