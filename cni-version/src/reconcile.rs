//! Reconciling a configuration's version with a plugin's supported set.

use std::fmt::Write as _;

/// A configuration version the plugin does not support.
///
/// Printed as the CNI error the reference library gives: code 1, message
/// `incompatible CNI versions`, and [`Incompatible::details`] as details.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("incompatible CNI versions: {}", self.details())]
pub struct Incompatible {
    /// The configuration's `cniVersion` (0.1.0 when it had none).
    pub config: String,
    /// What the plugin supports, as it advertised it.
    pub supported: Vec<String>,
}

impl Incompatible {
    /// `config is "0.2.0", plugin supports ["0.3.0" "0.4.0"]`, formatted
    /// exactly as the reference library formats it (Go's `%q`).
    pub fn details(&self) -> String {
        let mut out = String::from("config is ");
        go_quote_into(&mut out, &self.config);
        out.push_str(", plugin supports [");
        for (i, v) in self.supported.iter().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            go_quote_into(&mut out, v);
        }
        out.push(']');
        out
    }
}

/// Checks `config_version` against `supported` by exact string match, as the
/// reference `Reconciler` does: `"1.0"` does not match `"1.0.0"`.
pub fn reconcile<S: AsRef<str>>(config_version: &str, supported: &[S]) -> Result<(), Incompatible> {
    if supported.iter().any(|s| s.as_ref() == config_version) {
        return Ok(());
    }
    Err(Incompatible {
        config: config_version.to_owned(),
        supported: supported.iter().map(|s| s.as_ref().to_owned()).collect(),
    })
}

/// Go's `strconv.Quote`, close enough for version strings and names: ASCII
/// printables verbatim, the usual backslash escapes, `\xNN` for other ASCII
/// controls, `\uNNNN` for non-printable non-ASCII.
fn go_quote_into(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_string_match_is_required() {
        assert!(reconcile("0.4.0", &["0.3.0", "0.4.0"]).is_ok());
        assert!(reconcile("1.0", &["1.0.0"]).is_err());
        assert!(reconcile("0.-42.0", &["0.-42.0"]).is_ok());
    }

    #[test]
    fn incompatible_details_name_both_sides_like_the_reference() {
        let err = reconcile("0.2.0", &["0.3.0", "0.4.0"]).unwrap_err();
        assert_eq!(
            err.details(),
            r#"config is "0.2.0", plugin supports ["0.3.0" "0.4.0"]"#
        );
        assert_eq!(
            err.to_string(),
            r#"incompatible CNI versions: config is "0.2.0", plugin supports ["0.3.0" "0.4.0"]"#
        );
    }

    #[test]
    fn details_quote_odd_characters_like_go() {
        let err = reconcile("a\"b\\\n\u{1}", &[] as &[&str]).unwrap_err();
        assert_eq!(
            err.details(),
            r#"config is "a\"b\\\n\x01", plugin supports []"#
        );
    }
}
