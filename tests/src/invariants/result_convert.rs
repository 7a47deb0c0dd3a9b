//! `result_convert`: a result parsed in every version and converted to
//! every version.

use cni_types::{CniResult, SpecVersion};
use serde_json::Value;

use super::answer::check_result_json;
use super::fail;

/// Splits a `result_convert` input at its first newline: the version it is
/// read in, and the result's JSON.
pub fn decode_versioned(data: &[u8]) -> (String, &[u8]) {
    match data.iter().position(|b| *b == b'\n') {
        Some(nl) => (
            String::from_utf8_lossy(&data[..nl]).into_owned(),
            &data[nl + 1..],
        ),
        None => (String::new(), data),
    }
}

/// Reads `json` in `version` and checks it and its conversion to every
/// version; `Ok(None)` when it does not parse (which is allowed).
fn check_result_in(version: &str, json: &[u8]) -> Result<Option<CniResult>, String> {
    let Ok(result) = CniResult::parse(version, json) else {
        return Ok(None);
    };
    let wanted = SpecVersion::parse(version)
        .map_err(|e| format!("parse accepted version {version:?}: {e}"))?;
    if *result.version() != wanted {
        return Err(format!(
            "read in {version}, the result is in {}",
            result.version()
        ));
    }
    // From a parsed JSON value (as a prevResult is read): the same result.
    if let Ok(value) = serde_json::from_slice::<Value>(json) {
        if let Ok(same) = CniResult::from_value(version, value) {
            if same != result {
                return Err(format!(
                    "from_value and parse disagree in {version}: {same:?} vs {result:?}"
                ));
            }
        }
    }
    // Printed and read back: the same result.
    let back = check_result_json(&wanted, &result.to_json())
        .map_err(|e| format!("as read in {version}: {e}"))?;
    if back != result {
        return Err(format!(
            "printing changes the result in {version}: {result:?} became {back:?}"
        ));
    }
    for target in SpecVersion::ALL {
        let Ok(converted) = result.convert_to(&target) else {
            continue;
        };
        if *converted.version() != target {
            return Err(format!(
                "{version} -> {target}: the result is in {}",
                converted.version()
            ));
        }
        if target == wanted && converted != result {
            return Err(format!("{version} -> {target} changed the result"));
        }
        let printed = converted.to_json();
        let back = check_result_json(&target, &printed)
            .map_err(|e| format!("{version} -> {target}: {e}"))?;
        if back != converted {
            return Err(format!(
                "{version} -> {target}: the printed result reads back different: {}",
                String::from_utf8_lossy(&printed)
            ));
        }
    }
    Ok(Some(result))
}

/// The `result_convert` target: the result is read in the input's version
/// and in each of the seven; whatever reads is printed and read back
/// unchanged, and converted to each of the seven versions, each successful
/// conversion printing a result that reads back, unchanged, in its target
/// version.
pub fn fuzz_result_convert(data: &[u8]) {
    let (version, json) = decode_versioned(data);
    let mut versions = vec![version];
    versions.extend(SpecVersion::ALL.iter().map(ToString::to_string));
    for v in &versions {
        if let Err(e) = check_result_in(v, json) {
            fail("result_convert", data, e);
        }
    }
}
