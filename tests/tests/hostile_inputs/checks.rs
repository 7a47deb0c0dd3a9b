//! What every answer must be, and the answers the cases expect: success,
//! a CNI error with a given code, the noop's test setup error.

use tests::invariants::{check_answer, contains, Printed};

use crate::process::Run;

/// The checks every case makes: finished in time, exited (no signal), no
/// panic message, and one well-formed answer (see
/// `tests::invariants::check_answer`). Returns what stdout held.
pub fn well_formed(run: &Run) -> Printed {
    // The bound is enforced by killing the child (see `run`).
    assert!(!run.timed_out, "killed after its time bound: {run:?}");
    assert!(
        run.signal.is_none(),
        "killed by signal {:?}: {run:?}",
        run.signal
    );
    assert!(
        !contains(&run.stderr, b"panicked at"),
        "panic on stderr: {}",
        run.stderr_str()
    );
    let status = run.status.expect("exited");
    check_answer(status, &run.stdout, &run.stderr).unwrap_or_else(|e| panic!("{e}\n{run:?}"))
}

/// The checks of [`well_formed`], and a CNI error with this code.
pub fn fails_with(run: &Run, code: u32) -> cni_types::Error {
    assert_eq!(run.status, Some(1), "{run:?}");
    match well_formed(run) {
        Printed::Error(e) if e.code.0 == code => e,
        other => panic!("expected error code {code}, got {other:?}\n{run:?}"),
    }
}

/// The checks of [`well_formed`], and success.
pub fn succeeds(run: &Run) -> Printed {
    assert_eq!(run.status, Some(0), "{run:?}");
    well_formed(run)
}

/// The noop's test setup error (where the reference panics): exit status
/// 2, nothing on stdout, the reason on stderr.
pub fn setup_error(run: &Run) {
    assert!(!run.timed_out && run.signal.is_none(), "{run:?}");
    assert_eq!(run.status, Some(2), "{run:?}");
    assert!(run.stdout.is_empty(), "{run:?}");
    assert!(contains(&run.stderr, b"test setup error"), "{run:?}");
    assert!(!contains(&run.stderr, b"panicked at"), "{run:?}");
}
