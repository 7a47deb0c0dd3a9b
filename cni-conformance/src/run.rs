//! Running the table: selection, order, the run's deadline, and the
//! checks left when the run is cut short.

use std::time::{Duration, Instant};

use crate::case::{Case, Finding, Level, Verdict};
use crate::cases;
use crate::error::{SetupError, UnknownCase};
use crate::report::{Outcome, Report, Status};
use crate::session::Session;
use crate::target::Target;

/// Which cases run: all, or only some, minus some.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// When not empty, only these ids run.
    pub only: Vec<String>,
    /// These ids do not run.
    pub skip: Vec<String>,
    /// Cases not started by then are failed as "not run"; none when zero.
    pub deadline: Duration,
}

impl Selection {
    /// Every case, with a two-minute deadline.
    pub fn all() -> Selection {
        Selection {
            deadline: Duration::from_secs(120),
            ..Selection::default()
        }
    }

    fn includes(&self, case: &Case) -> bool {
        (self.only.is_empty() || self.only.iter().any(|id| id == case.id))
            && !self.skip.iter().any(|id| id == case.id)
    }
}

/// Runs the selected cases against `target` and reports every one.
///
/// A run is cut short when the target's cancel switch is thrown or the
/// plugin keeps timing out ([`MAX_TIMEOUTS`](crate::MAX_TIMEOUTS)): the
/// case under way and those after it are reported as not run, with the
/// reason, and [`Report::stopped`] says it. Either way the run's
/// namespaces and temporary directories are removed before this returns.
///
/// ```no_run
/// use cni_conformance::{run, Kind, Selection, Target};
///
/// let report = run(&Target::new("target/debug/dns-mac", Kind::Chained), &Selection::all())?;
/// println!("{}", report.summary());
/// # Ok::<(), cni_conformance::SetupError>(())
/// ```
pub fn run(target: &Target, selection: &Selection) -> Result<Report, SetupError> {
    for id in selection.only.iter().chain(&selection.skip) {
        if !cases::all().any(|c| c.id == id) {
            return Err(SetupError::UnknownCase(UnknownCase(id.clone())));
        }
    }
    let started = Instant::now();
    let session = Session::new(target)?;
    let mut outcomes = Vec::new();
    for case in cases::all().filter(|c| selection.includes(c)) {
        let level = case.level_for(target.kind);
        let late = !selection.deadline.is_zero() && started.elapsed() > selection.deadline;
        let verdict = if let Some(why) = session.cut_short() {
            not_run(why)
        } else if late {
            not_run(format!(
                "the run's deadline of {:?} passed",
                selection.deadline
            ))
        } else {
            let verdict = (case.check)(&session);
            // Cut short under way: its calls were not all made.
            match session.cut_short() {
                Some(why) => not_run(why),
                None => verdict,
            }
        };
        outcomes.push(outcome(case, level, verdict));
    }
    Ok(Report {
        plugin: target.plugin.clone(),
        versions: session.versions().to_vec(),
        outcomes,
        elapsed: started.elapsed(),
        stopped: session.cut_short(),
    })
}

/// A case that did not run, failed with why (as a case past the run's
/// deadline always was).
fn not_run(why: String) -> Verdict {
    Verdict::Fail(vec![Finding::new(format!("not run: {why}"))])
}

fn outcome(case: &'static Case, level: Level, verdict: Verdict) -> Outcome {
    let (status, reason, findings) = match verdict {
        Verdict::Pass => (Status::Passed, String::new(), Vec::new()),
        Verdict::Skip(why) => (Status::Skipped, why, Vec::new()),
        Verdict::Fail(findings) => {
            let status = match level {
                Level::Must => Status::Failed,
                Level::Should => Status::Warning,
            };
            let reason = findings.first().map(|f| f.what.clone()).unwrap_or_default();
            let reason = match findings.len() {
                0 | 1 => reason,
                n => format!("{reason} (+{} more)", n - 1),
            };
            (status, reason, findings)
        }
    };
    Outcome {
        case,
        level,
        status,
        reason,
        findings,
    }
}
