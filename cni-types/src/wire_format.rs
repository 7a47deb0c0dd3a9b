//! Which of two byte-level shapes results and errors are printed in.

use serde::{Serialize, Serializer};

use crate::{CniResult, Dns, Error};

/// How a plugin prints its results and errors.
///
/// The SDK's default, [`WireFormat::Spec`], follows the spec's examples
/// where the reference Go library departs from them; [`WireFormat::Reference`]
/// prints what the reference prints, byte for byte, for a plugin that must
/// pass a test suite written against a reference plugin (the sample `noop`,
/// a drop-in for the reference test double, uses it). Runtimes read both
/// alike.
///
/// | | `Spec` (default) | `Reference` |
/// | --- | --- | --- |
/// | error JSON | carries `cniVersion` (the spec's error example), ends in a newline | `code`, `msg`, `details` only, no trailing newline (Go: `types.Error.Print`) |
/// | empty `dns` in a 0.1.0 .. 0.4.0 result | omitted (the spec's examples) | `"dns": {}` (Go's `omitempty` does not apply to a struct) |
/// | empty `dns` in a 1.x result | omitted | omitted (the reference's `Result.MarshalJSON`; Debian's cni 1.1.2 predates it and prints `{}`) |
/// | result JSON | four-space indents, ends in a newline | four-space indents, no trailing newline (Go: `types.PrintResult`) |
///
/// ```
/// use cni_types::{CniResult, WireFormat};
///
/// let r = CniResult::parse("0.4.0", br#"{"cniVersion":"0.4.0","ips":[{"version":"4","address":"10.0.0.2/24"}]}"#).unwrap();
/// let spec = serde_json::to_string(&r.in_format(WireFormat::Spec)).unwrap();
/// let reference = serde_json::to_string(&r.in_format(WireFormat::Reference)).unwrap();
/// assert!(!spec.contains("dns"));
/// assert!(reference.ends_with(r#""dns":{}}"#));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum WireFormat {
    /// The SDK's: the spec's examples where the reference departs from them.
    #[default]
    Spec,
    /// The reference Go library's, byte for byte.
    Reference,
}

impl WireFormat {
    /// An error as this format prints it: pretty, four-space indents; with
    /// `Spec`, labelled with `version` and ending in a newline.
    pub fn error_json(self, err: Error, version: impl Into<String>) -> Vec<u8> {
        match self {
            WireFormat::Spec => err.with_version(version).to_json(),
            WireFormat::Reference => without_newline(
                Error {
                    cni_version: None,
                    ..err
                }
                .to_json(),
            ),
        }
    }

    /// A result as this format prints it: pretty, four-space indents (see
    /// [`CniResult::in_format`]).
    pub fn result_json(self, result: &CniResult) -> Vec<u8> {
        let json = crate::print::pretty(&result.in_format(self));
        match self {
            WireFormat::Spec => json,
            WireFormat::Reference => without_newline(json),
        }
    }
}

fn without_newline(mut json: Vec<u8>) -> Vec<u8> {
    if json.last() == Some(&b'\n') {
        json.pop();
    }
    json
}

/// A result to serialize in a given [`WireFormat`]; see
/// [`CniResult::in_format`].
#[derive(Debug, Clone, Copy)]
pub struct InFormat<'a> {
    result: &'a CniResult,
    format: WireFormat,
}

impl CniResult {
    /// The result, to serialize in `format`: the same fields, plus
    /// `"dns": {}` last in a 0.x result with `Reference` (where Go puts it).
    pub fn in_format(&self, format: WireFormat) -> InFormat<'_> {
        InFormat {
            result: self,
            format,
        }
    }
}

/// A result followed by its empty `dns`, as Go prints its 0.x structs.
#[derive(Serialize)]
struct WithEmptyDns<'a, R> {
    #[serde(flatten)]
    result: &'a R,
    dns: &'a Dns,
}

impl Serialize for InFormat<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match (self.format, self.result) {
            (WireFormat::Reference, CniResult::V020(r)) if r.dns.is_empty() => WithEmptyDns {
                result: r,
                dns: &r.dns,
            }
            .serialize(s),
            (WireFormat::Reference, CniResult::V040(r)) if r.dns.is_empty() => WithEmptyDns {
                result: r,
                dns: &r.dns,
            }
            .serialize(s),
            (_, result) => result.serialize(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Code;

    #[test]
    fn reference_errors_have_no_version_and_no_trailing_newline() {
        let err = Error::new(Code::INTERNAL, "banana");
        let reference = WireFormat::Reference.error_json(err.clone(), "0.4.0");
        assert_eq!(
            String::from_utf8(reference).unwrap(),
            "{\n    \"code\": 999,\n    \"msg\": \"banana\"\n}"
        );
        let spec = WireFormat::Spec.error_json(err, "0.4.0");
        assert_eq!(
            String::from_utf8(spec).unwrap(),
            "{\n    \"cniVersion\": \"0.4.0\",\n    \"code\": 999,\n    \"msg\": \"banana\"\n}\n"
        );
    }

    #[test]
    fn reference_results_print_an_empty_dns_in_0x_versions_only() {
        for (version, json, with_dns) in [
            (
                "0.2.0",
                r#"{"cniVersion":"0.2.0","ip4":{"ip":"10.0.0.2/8"}}"#,
                true,
            ),
            ("0.3.1", r#"{"cniVersion":"0.3.1"}"#, true),
            (
                "0.4.0",
                r#"{"cniVersion":"0.4.0","ips":[{"version":"4","address":"10.0.0.2/8"}]}"#,
                true,
            ),
            ("1.0.0", r#"{"cniVersion":"1.0.0"}"#, false),
            ("1.1.0", r#"{"cniVersion":"1.1.0"}"#, false),
        ] {
            let r = CniResult::parse(version, json.as_bytes()).unwrap();
            let printed = serde_json::to_string(&r.in_format(WireFormat::Reference)).unwrap();
            let want = if with_dns {
                format!(r#"{},"dns":{{}}}}"#, &json[..json.len() - 1])
            } else {
                json.to_owned()
            };
            assert_eq!(printed, want, "{version}");
            assert_eq!(
                serde_json::to_string(&r.in_format(WireFormat::Spec)).unwrap(),
                json
            );
        }
    }

    #[test]
    fn a_dns_with_values_prints_alike_in_both_formats() {
        let json = r#"{"cniVersion":"0.4.0","dns":{"nameservers":["1.2.3.4"]}}"#;
        let r = CniResult::parse("0.4.0", json.as_bytes()).unwrap();
        for format in [WireFormat::Spec, WireFormat::Reference] {
            assert_eq!(serde_json::to_string(&r.in_format(format)).unwrap(), json);
        }
    }
}
