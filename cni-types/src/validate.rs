//! Validation of names, with the reference's rules and error codes.

use crate::{Code, Error};

/// Container ids and network names: `^[a-zA-Z0-9][a-zA-Z0-9_.\-]*$`.
fn is_valid_name(s: &[u8]) -> bool {
    match s.split_first() {
        None => false,
        Some((first, rest)) => {
            first.is_ascii_alphanumeric()
                && rest
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
        }
    }
}

/// Validates a container id (as bytes, since it comes from the
/// environment): code 3 when empty, code 4 naming the value when it has
/// characters outside `[a-zA-Z0-9_.-]` or does not start with a letter or
/// digit.
///
/// Go: `utils.ValidateContainerID`.
pub fn validate_container_id(id: &[u8]) -> Result<(), Error> {
    if id.is_empty() {
        return Err(Error::new(Code::UNKNOWN_CONTAINER, "missing containerID"));
    }
    if !is_valid_name(id) {
        return Err(Error::new(
            Code::INVALID_ENVIRONMENT_VARIABLES,
            "invalid characters in containerID",
        )
        .with_details(String::from_utf8_lossy(id)));
    }
    Ok(())
}

/// Validates a network name: code 7 when empty or when it has characters
/// outside `[a-zA-Z0-9_.-]` or does not start with a letter or digit (the
/// details name the value).
///
/// Go: `utils.ValidateNetworkName`.
pub fn validate_network_name(name: &str) -> Result<(), Error> {
    if name.is_empty() {
        return Err(Error::new(
            Code::INVALID_NETWORK_CONFIG,
            "missing network name",
        ));
    }
    if !is_valid_name(name.as_bytes()) {
        return Err(Error::new(
            Code::INVALID_NETWORK_CONFIG,
            "invalid characters found in network name",
        )
        .with_details(name));
    }
    Ok(())
}

/// Longest interface name the kernel accepts (IFNAMSIZ - 1).
pub const MAX_INTERFACE_NAME_LEN: usize = 15;

/// Validates an interface name (as bytes) with the kernel's rules, as the
/// reference does: not empty, at most 15 bytes, not `.` or `..`, and no `/`,
/// `:` or whitespace. Failures are code 4; the details name the value.
pub fn validate_interface_name(name: &[u8]) -> Result<(), Error> {
    let bad = |msg: &str| {
        Err(
            Error::new(Code::INVALID_ENVIRONMENT_VARIABLES, msg).with_details(format!(
                "interface name {:?}",
                String::from_utf8_lossy(name)
            )),
        )
    };
    if name.is_empty() {
        return bad("interface name is empty");
    }
    if name.len() > MAX_INTERFACE_NAME_LEN {
        return Err(Error::new(
            Code::INVALID_ENVIRONMENT_VARIABLES,
            "interface name is too long",
        )
        .with_details(format!(
            "interface name {:?} should be less than {} characters",
            String::from_utf8_lossy(name),
            MAX_INTERFACE_NAME_LEN + 1
        )));
    }
    if name == b"." || name == b".." {
        return bad("interface name is . or ..");
    }
    // Invalid UTF-8 decodes to U+FFFD, which is neither of these (as in Go).
    if String::from_utf8_lossy(name)
        .chars()
        .any(|c| c == '/' || c == ':' || is_go_space(c))
    {
        return bad("interface name contains / or : or whitespace characters");
    }
    Ok(())
}

/// Go's `unicode.IsSpace`.
fn is_go_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{85}' | '\u{a0}'
    ) || (c as u32 > 0xff && c.is_whitespace())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_ids_follow_the_reference_pattern() {
        for ok in ["a", "0", "abc-DEF_1.2", "dummy"] {
            assert!(validate_container_id(ok.as_bytes()).is_ok(), "{ok}");
        }
        assert_eq!(
            validate_container_id(b"").unwrap_err().code,
            Code::UNKNOWN_CONTAINER
        );
        for bad in ["-a", ".a", "_a", "a b", "a/b", "é", "a:b"] {
            let e = validate_container_id(bad.as_bytes()).unwrap_err();
            assert_eq!(e.code, Code::INVALID_ENVIRONMENT_VARIABLES);
            assert_eq!(e.details, bad);
        }
    }

    #[test]
    fn network_names_follow_the_reference_pattern() {
        assert!(validate_network_name("my-net_1.0").is_ok());
        assert_eq!(
            validate_network_name("").unwrap_err().code,
            Code::INVALID_NETWORK_CONFIG
        );
        let e = validate_network_name("my net").unwrap_err();
        assert_eq!(
            (e.code, e.details.as_str()),
            (Code::INVALID_NETWORK_CONFIG, "my net")
        );
    }

    #[test]
    fn interface_names_follow_the_kernel_rules() {
        for ok in ["eth0", "a", "123456789012345", "veth.1", "é"] {
            assert!(validate_interface_name(ok.as_bytes()).is_ok(), "{ok}");
        }
        assert!(validate_interface_name(b"\xff\xfe").is_ok());
        for bad in [
            "",
            "1234567890123456",
            ".",
            "..",
            "a/b",
            "a:b",
            "a b",
            "a\tb",
            "a\u{2003}b",
            "a\u{85}",
        ] {
            let e = validate_interface_name(bad.as_bytes()).unwrap_err();
            assert_eq!(e.code, Code::INVALID_ENVIRONMENT_VARIABLES, "{bad:?}");
        }
        assert!(validate_interface_name(b"a:b")
            .unwrap_err()
            .details
            .contains("\"a:b\""));
    }
}
