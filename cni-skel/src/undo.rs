//! The one shape of an ADD that changes several things: each change
//! pushes how to undo it, and a failure undoes them all, last first.
//!
//! Go has no helper of this purpose: the reference plugins write
//! `defer func() { if err != nil { ... } }()` by hand, one per change
//! (`bridge`'s deferred `ipam.ExecDel`, `ptp`'s and `macvlan`'s link
//! deletion). netavark collects every teardown failure in one error list;
//! [`Undo`] does the same for a failed ADD, and [`Teardown`] for a DEL.

use std::fmt;

use cni_types::Error;

use crate::BoxError;

/// One undo step: what it undoes, and how.
struct Step<'a> {
    what: String,
    run: Box<dyn FnOnce() -> Result<(), BoxError> + Send + 'a>,
}

/// A stack of undo steps that runs unless the ADD commits.
///
/// Push a step after each change an ADD makes ([`Undo::push`]); when the
/// ADD fails, [`Undo::fail`] runs every step, last pushed first, and
/// reports every failure it meets (in the error's `details`), not just
/// the first. [`Undo::scope`] is the usual way in: it commits when the
/// body succeeds and undoes when it fails. Dropped without a commit (a
/// panic, a forgotten commit), the steps still run and their failures go
/// to stderr.
///
/// Steps are `Send`, so a change made on another thread (see
/// `cni_invoke::add_alongside`) can push its undo there and the stacks be
/// joined with [`Undo::append`].
///
/// ```
/// use cni_skel::{BoxError, Undo};
/// use std::sync::Mutex;
///
/// let made = Mutex::new(vec![]);
/// let result: Result<(), BoxError> = Undo::scope(|undo| {
///     made.lock().unwrap().push("link");
///     undo.push("deleting the link", || { made.lock().unwrap().retain(|m| *m != "link"); Ok(()) });
///     made.lock().unwrap().push("route");
///     undo.push("deleting the route", || Err("route already gone".into()));
///     Err(cni_types::Error::new(cni_types::Code::INTERNAL, "setting the MTU failed").into())
/// });
/// let err = result.unwrap_err().downcast::<cni_types::Error>().unwrap();
/// assert_eq!(err.msg, "setting the MTU failed");
/// assert!(err.details.contains("deleting the route: route already gone"));
/// assert_eq!(*made.lock().unwrap(), ["route"]);
/// ```
#[must_use = "an Undo dropped without commit undoes everything at once"]
pub struct Undo<'a> {
    steps: Vec<Step<'a>>,
}

impl fmt::Debug for Undo<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let steps: Vec<&str> = self.steps.iter().map(|s| s.what.as_str()).collect();
        f.debug_struct("Undo").field("steps", &steps).finish()
    }
}

impl Default for Undo<'_> {
    fn default() -> Self {
        Undo::new()
    }
}

impl<'a> Undo<'a> {
    /// An empty stack.
    pub fn new() -> Undo<'a> {
        Undo { steps: Vec::new() }
    }

    /// Runs `body` with a fresh stack: its value when it succeeds (the
    /// stack committed), else its error after every step ran, with the
    /// steps' own failures in the error's `details`.
    pub fn scope<T>(
        body: impl FnOnce(&mut Undo<'a>) -> Result<T, BoxError>,
    ) -> Result<T, BoxError> {
        let mut undo = Undo::new();
        match body(&mut undo) {
            Ok(value) => {
                undo.commit();
                Ok(value)
            }
            Err(err) => Err(undo.fail(err)),
        }
    }

    /// Pushes how to undo the change just made; `what` names the undoing
    /// ("deleting link eth0") for the report of its failure.
    pub fn push(
        &mut self,
        what: impl Into<String>,
        step: impl FnOnce() -> Result<(), BoxError> + Send + 'a,
    ) {
        self.steps.push(Step {
            what: what.into(),
            run: Box::new(step),
        });
    }

    /// Moves `other`'s steps on top of this stack's (they undo first).
    pub fn append(&mut self, mut other: Undo<'a>) {
        self.steps.append(&mut other.steps);
    }

    /// How many steps would run.
    pub fn len(&self) -> usize {
        self.steps.len()
    }

    /// Whether nothing would run.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// The ADD succeeded: nothing is undone.
    pub fn commit(mut self) {
        self.steps.clear();
    }

    /// Runs every step, last pushed first, and returns the failures, each
    /// as "what: why".
    pub fn rollback(mut self) -> Vec<String> {
        self.run_all()
    }

    /// The ADD failed with `err`: runs every step and returns `err` with
    /// the steps' failures added to its `details` (a [`cni_types::Error`]
    /// keeps its code and message; any other error is converted as the SDK
    /// converts it, [`Error::from_boxed`]).
    pub fn fail(self, err: BoxError) -> BoxError {
        let failures = self.rollback();
        if failures.is_empty() {
            return err;
        }
        let mut err = Error::from_boxed(err);
        append_details(&mut err, "undoing the ADD also failed", &failures);
        err.into()
    }

    fn run_all(&mut self) -> Vec<String> {
        let mut failures = Vec::new();
        while let Some(step) = self.steps.pop() {
            if let Err(e) = (step.run)() {
                failures.push(format!("{}: {e}", step.what));
            }
        }
        failures
    }
}

impl Drop for Undo<'_> {
    fn drop(&mut self) {
        for failure in self.run_all() {
            // stderr, never stdout: stdout carries the one result.
            eprintln!("undoing a failed ADD: {failure}");
        }
    }
}

/// Every failure of a DEL (or GC) that does several independent things:
/// each is tried whatever became of the others, and the first failure is
/// returned with the rest in its `details`.
///
/// ```
/// use cni_skel::{BoxError, Teardown};
///
/// let mut teardown = Teardown::new();
/// let addresses: Option<Vec<u8>> = teardown.keep("deleting the link", Ok::<_, BoxError>(vec![]));
/// teardown.keep("releasing the addresses", Err::<(), _>(cni_types::Error::new(cni_types::Code::INTERNAL, "store busy")));
/// teardown.keep("removing the rules", Err::<(), BoxError>("table gone".into()));
/// assert_eq!(addresses, Some(vec![]));
/// let err = teardown.finish().unwrap_err().downcast::<cni_types::Error>().unwrap();
/// assert_eq!(err.msg, "store busy");
/// assert!(err.details.contains("removing the rules: table gone"));
/// ```
#[derive(Debug, Default)]
pub struct Teardown {
    first: Option<BoxError>,
    others: Vec<String>,
}

impl Teardown {
    /// No failure yet.
    pub fn new() -> Teardown {
        Teardown::default()
    }

    /// Keeps `result`'s failure (`what` names the step for the report)
    /// and returns its value when it succeeded.
    pub fn keep<T, E: Into<BoxError>>(&mut self, what: &str, result: Result<T, E>) -> Option<T> {
        match result {
            Ok(value) => Some(value),
            Err(e) => {
                let e = e.into();
                match self.first {
                    None => self.first = Some(e),
                    Some(_) => self.others.push(format!("{what}: {e}")),
                }
                None
            }
        }
    }

    /// Runs `there` on a second thread while `here` runs on this one
    /// (keeping its own failures on the teardown it is given), then keeps
    /// `there`'s failure too: independent steps of a DEL, such as the
    /// kernel deleting a link (tens of milliseconds) and an IPAM plugin
    /// releasing its reservation, cost the longer of the two rather than
    /// their sum. `there`'s value when it succeeded.
    ///
    /// ```
    /// use cni_skel::{BoxError, Teardown};
    ///
    /// let mut teardown = Teardown::new();
    /// let removed = teardown.alongside("deleting the link", || Ok(3), |here| {
    ///     here.keep("releasing the addresses", Ok::<(), BoxError>(()));
    /// });
    /// assert_eq!(removed, Some(3));
    /// assert!(teardown.finish().is_ok());
    /// ```
    pub fn alongside<T: Send>(
        &mut self,
        what: &str,
        there: impl FnOnce() -> Result<T, BoxError> + Send,
        here: impl FnOnce(&mut Teardown),
    ) -> Option<T> {
        let there = std::thread::scope(|scope| {
            let running = scope.spawn(there);
            here(self);
            running
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        });
        self.keep(what, there)
    }

    /// `Ok` when every step succeeded, else the first failure with the
    /// others in its `details`.
    pub fn finish(self) -> Result<(), BoxError> {
        let Some(first) = self.first else {
            return Ok(());
        };
        if self.others.is_empty() {
            return Err(first);
        }
        let mut err = Error::from_boxed(first);
        append_details(&mut err, "also failed", &self.others);
        Err(err.into())
    }
}

fn append_details(err: &mut Error, heading: &str, failures: &[String]) {
    let list = failures.join("; ");
    err.details = if err.details.is_empty() {
        format!("{heading}: {list}")
    } else {
        format!("{}; {heading}: {list}", err.details)
    };
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn an_undo_dropped_without_commit_runs_every_step_last_first() {
        let order = std::sync::Mutex::new(Vec::new());
        {
            let mut undo = Undo::new();
            undo.push("first", || {
                order.lock().unwrap().push(1);
                Ok(())
            });
            undo.push("second", || {
                order.lock().unwrap().push(2);
                Err("gone".into())
            });
        }
        assert_eq!(*order.lock().unwrap(), [2, 1]);
    }

    #[test]
    fn a_committed_undo_runs_nothing() {
        let ran = AtomicUsize::new(0);
        let mut undo = Undo::new();
        undo.push("step", || {
            ran.fetch_add(1, Ordering::SeqCst);
            Ok(())
        });
        undo.commit();
        assert_eq!(ran.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn teardown_alongside_keeps_both_sides_failures_and_the_first_leads() {
        let mut teardown = Teardown::new();
        let value: Option<u8> = teardown.alongside(
            "removing the link",
            || Err("link busy".into()),
            |here| {
                here.keep(
                    "releasing",
                    Err::<(), _>(Error::new(cni_types::Code(11), "store busy")),
                );
            },
        );
        assert_eq!(value, None);
        let err = Error::from_boxed(teardown.finish().unwrap_err());
        assert_eq!((err.code.0, err.msg.as_str()), (11, "store busy"));
        assert!(
            err.details.contains("removing the link: link busy"),
            "{err:?}"
        );
    }
}
