//! What a run found, as a text table, JSON and JUnit XML, all from the
//! same outcomes.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use cni_invoke::excerpt;
use cni_types::SpecVersion;
use serde_json::{json, Value};

use crate::case::{Case, Finding, Level};

/// The result of one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// The rule holds.
    Passed,
    /// A MUST rule is broken.
    Failed,
    /// A SHOULD rule is broken.
    Warning,
    /// The rule does not apply.
    Skipped,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Passed => "pass",
            Status::Failed => "FAIL",
            Status::Warning => "warn",
            Status::Skipped => "skip",
        }
    }
}

/// One case's outcome.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The case.
    pub case: &'static Case,
    /// The level that applied to this plugin's kind.
    pub level: Level,
    /// What it decided.
    pub status: Status,
    /// One line: the first finding, or why it was skipped.
    pub reason: String,
    /// Every finding, with the plugin's actual output.
    pub findings: Vec<Finding>,
}

/// Everything a run found.
#[derive(Debug, Clone)]
pub struct Report {
    /// The plugin.
    pub plugin: PathBuf,
    /// The versions exercised.
    pub versions: Vec<SpecVersion>,
    /// One outcome per case run, in run order.
    pub outcomes: Vec<Outcome>,
    /// How long the run took.
    pub elapsed: Duration,
    /// Why the run stopped before its end, when it did (cancelled, or the
    /// plugin kept timing out): the checks from then on are failed as not
    /// run.
    pub stopped: Option<String>,
}

impl Report {
    fn count(&self, status: Status) -> usize {
        self.outcomes.iter().filter(|o| o.status == status).count()
    }

    /// Cases that passed.
    pub fn passed(&self) -> usize {
        self.count(Status::Passed)
    }

    /// MUST cases that failed.
    pub fn failed(&self) -> usize {
        self.count(Status::Failed)
    }

    /// SHOULD cases that failed.
    pub fn warnings(&self) -> usize {
        self.count(Status::Warning)
    }

    /// The ids of the cases with `status`.
    pub fn ids(&self, status: Status) -> Vec<&'static str> {
        self.outcomes
            .iter()
            .filter(|o| o.status == status)
            .map(|o| o.case.id)
            .collect()
    }

    /// `N passed, M failed, K warnings`.
    pub fn summary(&self) -> String {
        format!(
            "{} passed, {} failed, {} warnings",
            self.passed(),
            self.failed(),
            self.warnings()
        )
    }

    /// The table (id, level, result, reason), the findings of every
    /// failure and warning with the spec's sentence and the plugin's
    /// output, and the summary line last.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let versions: Vec<String> = self.versions.iter().map(|v| v.to_string()).collect();
        let _ = writeln!(
            out,
            "cni-conformance: {} (versions {})\n",
            self.plugin.display(),
            versions.join(", ")
        );
        let width = self
            .outcomes
            .iter()
            .map(|o| o.case.id.len())
            .max()
            .unwrap_or(2);
        let _ = writeln!(
            out,
            "{:width$}  {:6}  {:6}  reason",
            "id", "level", "result"
        );
        for o in &self.outcomes {
            let row = format!(
                "{:width$}  {:6}  {:6}  {}",
                o.case.id,
                o.level.to_string(),
                o.status.as_str(),
                o.reason
            );
            let _ = writeln!(out, "{}", row.trim_end());
        }
        for o in self
            .outcomes
            .iter()
            .filter(|o| matches!(o.status, Status::Failed | Status::Warning))
        {
            let _ = writeln!(
                out,
                "\n{} {} ({}, {})",
                o.status.as_str(),
                o.case.id,
                o.level,
                o.case.spec
            );
            let _ = writeln!(out, "  spec: \"{}\"", o.case.quote);
            for f in &o.findings {
                let _ = writeln!(out, "  - {}", f.what);
                if let Some(call) = &f.call {
                    for line in call.to_string().lines() {
                        let _ = writeln!(out, "      {line}");
                    }
                }
            }
        }
        if let Some(why) = &self.stopped {
            let _ = writeln!(out, "\nstopped early: {why}");
        }
        let _ = writeln!(out, "\n{}", self.summary());
        out
    }

    /// The same as [`Report::text`], as JSON.
    pub fn json(&self) -> Value {
        let outcomes: Vec<Value> = self
            .outcomes
            .iter()
            .map(|o| {
                json!({
                    "id": o.case.id,
                    "spec": o.case.spec,
                    "quote": o.case.quote,
                    "level": o.level.to_string(),
                    "result": match o.status {
                        Status::Passed => "passed",
                        Status::Failed => "failed",
                        Status::Warning => "warning",
                        Status::Skipped => "skipped",
                    },
                    "reason": o.reason,
                    "findings": o.findings.iter().map(finding_json).collect::<Vec<_>>(),
                })
            })
            .collect();
        json!({
            "plugin": self.plugin.display().to_string(),
            "versions": self.versions.iter().map(|v| v.to_string()).collect::<Vec<_>>(),
            "passed": self.passed(),
            "failed": self.failed(),
            "warnings": self.warnings(),
            "summary": self.summary(),
            "elapsedSeconds": self.elapsed.as_secs_f64(),
            "stopped": self.stopped,
            "checks": outcomes,
        })
    }

    /// The same as JUnit XML: one test case per check; a MUST violation is
    /// a `<failure>`, a SHOULD violation a passed case whose
    /// `<system-out>` starts with `warning:`, a skipped check `<skipped>`.
    pub fn junit(&self) -> String {
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
        let _ = writeln!(
            out,
            "<testsuite name=\"cni-conformance\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" time=\"{:.3}\">",
            self.outcomes.len(),
            self.failed(),
            self.count(Status::Skipped),
            self.elapsed.as_secs_f64()
        );
        let _ = writeln!(
            out,
            "  <properties><property name=\"plugin\" value=\"{}\"/><property name=\"summary\" value=\"{}\"/></properties>",
            xml(&self.plugin.display().to_string()),
            xml(&self.summary())
        );
        for o in &self.outcomes {
            let _ = write!(
                out,
                "  <testcase classname=\"cni-conformance.{}\" name=\"{} [{}]\">",
                o.level,
                xml(o.case.id),
                xml(o.case.spec)
            );
            let details = || {
                let mut d = format!("spec: \"{}\"\n", o.case.quote);
                for f in &o.findings {
                    let _ = writeln!(d, "- {}", f.what);
                    if let Some(call) = &f.call {
                        let _ = writeln!(d, "{call}");
                    }
                }
                xml(&d)
            };
            match o.status {
                Status::Passed => {}
                Status::Skipped => {
                    let _ = write!(out, "<skipped message=\"{}\"/>", xml(&o.reason));
                }
                Status::Failed => {
                    let _ = write!(
                        out,
                        "<failure message=\"{}\">{}</failure>",
                        xml(&o.reason),
                        details()
                    );
                }
                Status::Warning => {
                    let _ = write!(
                        out,
                        "<system-out>warning: {}\n{}</system-out>",
                        xml(&o.reason),
                        details()
                    );
                }
            }
            out.push_str("</testcase>\n");
        }
        out.push_str("</testsuite>\n");
        out
    }
}

fn finding_json(f: &Finding) -> Value {
    let call = f.call.as_ref().map(|c| {
        let out = &c.output;
        json!({
            "step": c.step,
            "env": c.env.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>(),
            "stdin": String::from_utf8_lossy(&c.stdin),
            "exit": out.exit.to_string(),
            "stdout": String::from_utf8_lossy(&out.stdout),
            "stdoutDropped": out.stdout_dropped,
            "stderr": excerpt(&out.stderr, out.stderr_dropped, STDERR_SHOWN),
        })
    });
    json!({"what": f.what, "call": call})
}

/// How many characters of a call's stderr the JSON report quotes.
const STDERR_SHOWN: usize = 600;

/// Text escaped for XML attributes and content; control characters other
/// than tab and newline, which XML 1.0 forbids, become `?`.
fn xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\t' | '\n' => out.push(c),
            c if c.is_control() => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_special_characters_and_controls_are_escaped() {
        assert_eq!(xml("a<b & \"c\"\u{1}"), "a&lt;b &amp; &quot;c&quot;?");
    }
}
