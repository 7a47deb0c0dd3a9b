//! Trace context: the W3C `traceparent`, `tracestate` and `baggage` a
//! runtime passes a plugin in `TRACEPARENT`, `TRACESTATE` and `BAGGAGE`
//! (OpenTelemetry's environment carriers, OTEP 0258).

use std::fmt;

use crate::Env;

/// The trace context of an invocation: the caller's span, so a plugin can
/// record its work as a child of it and pass it on to its delegates.
///
/// Read with [`TraceContext::from_env`] (the dispatcher does this for
/// [`Request::trace`](crate::Request::trace)); written back with
/// [`TraceContext::env`]. An invalid `TRACEPARENT` is ignored together
/// with `TRACESTATE`, as the W3C recommendation says ("If the vendor failed
/// to parse traceparent, it MUST NOT attempt to parse tracestate");
/// `BAGGAGE` is independent of both and kept as given.
///
/// Go: `invoke.injectTraceContext` (runtime side; the reference skel does
/// not read them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceContext {
    parent: Option<TraceParent>,
    state: Option<String>,
    baggage: Option<String>,
}

/// The names of the variables, in the order they are passed.
pub const TRACE_VARS: [&str; 3] = ["TRACEPARENT", "TRACESTATE", "BAGGAGE"];

impl TraceContext {
    /// The trace context in `env`.
    ///
    /// ```
    /// use cni_skel::TraceContext;
    /// let env = [
    ///     ("TRACEPARENT", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
    ///     ("BAGGAGE", "tenant=blue"),
    /// ];
    /// let trace = TraceContext::from_env(&env[..]);
    /// assert_eq!(trace.parent().unwrap().trace_id(), "4bf92f3577b34da6a3ce929d0e0e4736");
    /// assert_eq!(trace.baggage(), Some("tenant=blue"));
    /// assert_eq!(trace.state(), None);
    /// ```
    pub fn from_env<E: Env + ?Sized>(env: &E) -> TraceContext {
        let get = |name| {
            env.var(name)
                .and_then(|v| v.into_string().ok())
                .filter(|v| !v.is_empty())
        };
        let parent = get("TRACEPARENT").and_then(|v| TraceParent::parse(&v));
        TraceContext {
            state: parent.as_ref().and_then(|_| get("TRACESTATE")),
            parent,
            baggage: get("BAGGAGE"),
        }
    }

    /// A context with this parent and nothing else.
    pub fn with_parent(parent: TraceParent) -> TraceContext {
        TraceContext {
            parent: Some(parent),
            ..TraceContext::default()
        }
    }

    /// The same context with `TRACESTATE` set (ignored without a parent).
    pub fn with_state(self, state: impl Into<String>) -> TraceContext {
        TraceContext {
            state: Some(state.into()).filter(|s| !s.is_empty()),
            ..self
        }
    }

    /// The same context with `BAGGAGE` set.
    pub fn with_baggage(self, baggage: impl Into<String>) -> TraceContext {
        TraceContext {
            baggage: Some(baggage.into()).filter(|s| !s.is_empty()),
            ..self
        }
    }

    /// `TRACEPARENT`, parsed; `None` when absent or invalid.
    pub fn parent(&self) -> Option<&TraceParent> {
        self.parent.as_ref()
    }

    /// `TRACESTATE`, as given (vendor-specific); only with a valid parent.
    pub fn state(&self) -> Option<&str> {
        self.parent.as_ref().and(self.state.as_deref())
    }

    /// `BAGGAGE`, as given (`key=value` pairs, comma separated).
    pub fn baggage(&self) -> Option<&str> {
        self.baggage.as_deref()
    }

    /// True when there is nothing to pass on.
    pub fn is_empty(&self) -> bool {
        self.parent.is_none() && self.baggage.is_none()
    }

    /// The variables to pass to a plugin, only those that are set.
    ///
    /// ```
    /// # use cni_skel::{TraceContext, TraceParent};
    /// let parent = TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
    /// let trace = TraceContext::with_parent(parent).with_state("vendor=1");
    /// assert_eq!(trace.env(), [
    ///     ("TRACEPARENT", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".to_owned()),
    ///     ("TRACESTATE", "vendor=1".to_owned()),
    /// ]);
    /// ```
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let values = [
            self.parent.as_ref().map(ToString::to_string),
            self.state().map(str::to_owned),
            self.baggage.clone(),
        ];
        TRACE_VARS
            .into_iter()
            .zip(values)
            .filter_map(|(name, value)| Some((name, value?)))
            .collect()
    }
}

/// A valid W3C `traceparent`: `version-traceid-parentid-flags`, lowercase
/// hex, trace and parent ids not all zero, version not `ff`. Later
/// versions may append fields after a `-`; they are kept, so the value is
/// passed on exactly as received.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TraceParent(String);

impl TraceParent {
    /// Parses a `traceparent` value; `None` when it is not valid.
    ///
    /// ```
    /// use cni_skel::TraceParent;
    /// let p = TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
    /// assert_eq!(p.parent_id(), "00f067aa0ba902b7");
    /// assert!(p.sampled());
    /// assert!(TraceParent::parse("00-00000000000000000000000000000000-00f067aa0ba902b7-01").is_none());
    /// ```
    pub fn parse(value: &str) -> Option<TraceParent> {
        let b = value.as_bytes();
        let hex = |r: std::ops::Range<usize>| {
            b.get(r)
                .is_some_and(|s| s.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')))
        };
        let dash = |i: usize| b.get(i) == Some(&b'-');
        let shape = hex(0..2) && dash(2) && hex(3..35) && dash(35) && hex(36..52) && dash(52);
        let flags = hex(53..55);
        let zero = |r: std::ops::Range<usize>| b[r].iter().all(|c| *c == b'0');
        if !shape || !flags || &b[0..2] == b"ff" || zero(3..35) || zero(36..52) {
            return None;
        }
        // Version 00 is exactly 55 characters; later ones may go on after a '-'.
        let length_ok = b.len() == 55 || (&b[0..2] != b"00" && dash(55));
        length_ok.then(|| TraceParent(value.to_owned()))
    }

    /// The trace id: 32 hex digits.
    pub fn trace_id(&self) -> &str {
        &self.0[3..35]
    }

    /// The caller's span id: 16 hex digits.
    pub fn parent_id(&self) -> &str {
        &self.0[36..52]
    }

    /// The trace flags byte.
    pub fn flags(&self) -> u8 {
        u8::from_str_radix(&self.0[53..55], 16).unwrap_or(0)
    }

    /// Whether the caller records this trace (flag `01`).
    pub fn sampled(&self) -> bool {
        self.flags() & 1 == 1
    }
}

impl fmt::Display for TraceParent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn malformed_traceparents_are_ignored() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
            "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceParent::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_later_version_with_more_fields_is_kept_as_given() {
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-extra";
        assert_eq!(TraceParent::parse(later).unwrap().to_string(), later);
    }

    #[test]
    fn tracestate_without_a_valid_parent_is_dropped_and_baggage_kept() {
        let env = [
            ("TRACEPARENT", "garbage"),
            ("TRACESTATE", "v=1"),
            ("BAGGAGE", "k=v"),
        ];
        let trace = TraceContext::from_env(&env[..]);
        assert_eq!((trace.parent(), trace.state()), (None, None));
        assert_eq!(trace.env(), [("BAGGAGE", "k=v".to_owned())]);
    }

    #[test]
    fn what_is_read_is_passed_on_unchanged() {
        let env = [
            ("TRACEPARENT", VALID),
            ("TRACESTATE", "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"),
            ("BAGGAGE", "userId=alice,serverNode=DF%2028"),
        ];
        let trace = TraceContext::from_env(&env[..]);
        let passed: Vec<(&str, String)> = env.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
        assert_eq!(trace.env(), passed);
    }
}
