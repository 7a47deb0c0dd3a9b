//! One check: what it enforces, where the spec says so, and how to decide.

use std::fmt;
use std::sync::Arc;

use crate::call::Call;
use crate::session::Session;
use crate::target::Kind;

/// How much a violated rule weighs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// The spec requires it: a violation is a failure.
    Must,
    /// The spec recommends it: a violation is a warning.
    Should,
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Must => "MUST",
            Level::Should => "SHOULD",
        })
    }
}

/// One rule of the spec, checked against the plugin.
///
/// The table of every case is [`crate::cases::all`].
#[derive(Debug, Clone, Copy)]
pub struct Case {
    /// Stable identifier, for `--only` and `--skip`: `DEL-AGAIN`.
    pub id: &'static str,
    /// Where the rule is written: `SPEC-1.0.0 §2 DEL`.
    pub spec: &'static str,
    /// The spec's sentence, quoted in every finding.
    pub quote: &'static str,
    /// How much a violation weighs.
    pub level: Level,
    /// A stricter level for IPAM plugins, where the rule matters more
    /// (concurrent ADDs must not hand out one address twice).
    pub ipam_level: Option<Level>,
    /// Runs (or reads the memoised run of) the scenario and decides.
    pub check: fn(&Session) -> Verdict,
}

impl Case {
    /// The level that applies to a plugin of this kind.
    pub fn level_for(&self, kind: Kind) -> Level {
        match (kind, self.ipam_level) {
            (Kind::Ipam, Some(level)) => level,
            _ => self.level,
        }
    }
}

/// What a case decided.
#[derive(Debug, Clone)]
pub enum Verdict {
    /// The plugin follows the rule in every call the case looked at.
    Pass,
    /// The plugin broke the rule; one finding per place.
    Fail(Vec<Finding>),
    /// The rule does not apply (kind, versions, options); why.
    Skip(String),
}

impl Verdict {
    /// Pass when `findings` is empty, else a failure with them.
    pub fn from_findings(findings: Vec<Finding>) -> Verdict {
        if findings.is_empty() {
            Verdict::Pass
        } else {
            Verdict::Fail(findings)
        }
    }
}

/// One place where the plugin broke a rule, with what it actually did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// One line: what was wrong.
    pub what: String,
    /// The execution that shows it, when one does (shared with the run's
    /// log, not copied).
    pub call: Option<Arc<Call>>,
}

impl Finding {
    /// A finding about one execution.
    pub fn on(call: &Arc<Call>, what: impl Into<String>) -> Finding {
        Finding {
            what: what.into(),
            call: Some(call.clone()),
        }
    }

    /// A finding that no single execution shows (a comparison of several).
    pub fn new(what: impl Into<String>) -> Finding {
        Finding {
            what: what.into(),
            call: None,
        }
    }
}
