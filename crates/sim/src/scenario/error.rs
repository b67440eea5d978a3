//! The one error type of scenario loading, and the serde bridge that gives every error its key path.

use crate::units::OneOrMany;
use serde::de::DeserializeOwned;

/// A user's mistake in a scenario: where (`path`, e.g. `bottleneck.aqm.min_th`) and what.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioError {
    pub path: String,
    pub msg: String,
}

impl ScenarioError {
    pub fn new(path: impl Into<String>, msg: impl Into<String>) -> Self {
        ScenarioError { path: path.into(), msg: msg.into() }
    }
}

impl std::fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // one line, a key path always (crate::diag)
        let path = if self.path.is_empty() { crate::diag::TOP_LEVEL } else { &self.path };
        // and never longer than a line: a long value or key is quoted by its start and length
        let (path, msg) = (crate::diag::escape(path), crate::diag::escape(&self.msg));
        write!(f, "{}: {}", crate::diag::elide_long_words(&path), crate::diag::elide_long_words(&msg))
    }
}

pub type R<T> = Result<T, ScenarioError>;

/// Deserialize `value` as `T`, reporting errors with the key path prefixed by `prefix`.
pub fn typed<T: DeserializeOwned>(value: toml::Value, prefix: &str) -> R<T> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        ScenarioError::new(crate::diag::error_path(prefix, e.path()), clean_serde_msg(&e.inner().to_string()))
    })
}

fn clean_serde_msg(m: &str) -> String {
    // toml's messages may carry a "TOML parse error" preamble and a trailing "in `key`" line,
    // which repeats the path we print anyway: keep the first line only.
    crate::diag::serde_message(m)
}

/// An empty list where one value or a non-empty list is expected.
pub(super) fn check_list<T>(v: &Option<OneOrMany<T>>, path: String) -> R<()>
where
    T: Clone,
{
    if let Some(x) = v {
        if x.is_empty_list() {
            return Err(ScenarioError::new(path, "an empty list; give one value or a non-empty list"));
        }
    }
    Ok(())
}
