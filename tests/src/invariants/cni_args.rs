//! `cni_args`: `CNI_ARGS` parsing and typed reading, against a model of
//! the format.

use std::collections::BTreeMap;

use cni_types::{CniArgs, CniArgsError, IGNORE_UNKNOWN};

use super::fail;

/// Typed arguments, as a plugin would declare them.
#[derive(Debug, serde::Deserialize)]
#[allow(non_snake_case, dead_code)]
struct TypedArgs {
    IP: Option<std::net::IpAddr>,
    MAC: Option<String>,
    K8S_POD_NAME: Option<String>,
    Verbose: Option<bool>,
    Count: Option<u16>,
    Offset: Option<i64>,
    Ratio: Option<f64>,
    Mode: Option<Mode>,
    Net: Option<cni_types::IpNetwork>,
}

#[derive(Debug, serde::Deserialize)]
#[allow(dead_code)]
enum Mode {
    #[serde(rename = "bridge")]
    Bridge,
    #[serde(rename = "l2")]
    L2,
}

/// The spec's format, read naively: `;`-separated pairs with exactly one
/// `=` each; an empty string has none.
fn model_args(s: &str) -> Option<Vec<(String, String)>> {
    if s.is_empty() {
        return Some(Vec::new());
    }
    s.split(';')
        .map(|pair| {
            let (k, v) = pair.split_once('=')?;
            (!v.contains('=')).then(|| (k.to_owned(), v.to_owned()))
        })
        .collect()
}

/// The `cni_args` target: parsing agrees with the naive model (same pairs
/// in order, the last repeated key wins, invalid exactly when the model
/// says so); reading into a map never fails except on a bad
/// `IgnoreUnknown` and holds the last value of each key; reading into a
/// typed struct only fails with an error naming a pair that is there.
pub fn fuzz_cni_args(data: &[u8]) {
    if let Err(e) = check_cni_args(data) {
        fail("cni_args", data, e);
    }
}

/// The checks of [`fuzz_cni_args`], returning the violation.
pub fn check_cni_args(data: &[u8]) -> Result<(), String> {
    let s = String::from_utf8_lossy(data);
    let s = s.as_ref();
    let parsed = CniArgs::parse(s);
    let model = model_args(s);
    let args = match (parsed, model) {
        (Ok(args), Some(model)) => {
            let pairs: Vec<(String, String)> = args
                .iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
            if pairs != model {
                return Err(format!("pairs {pairs:?}, expected {model:?}"));
            }
            for (k, _) in &model {
                let last = model.iter().rev().find(|(key, _)| key == k).map(|p| &p.1);
                if args.get(k) != last.map(String::as_str) {
                    return Err(format!("get({k:?}) is not the last value"));
                }
            }
            args
        }
        (Err(CniArgsError::InvalidPair(pair)), None) => {
            if !s.split(';').any(|p| p == pair) {
                return Err(format!("InvalidPair({pair:?}) is not a pair of the input"));
            }
            return Ok(());
        }
        (parsed, model) => return Err(format!("parse gave {parsed:?}, the model {model:?}")),
    };
    let ignore = args.get(IGNORE_UNKNOWN);
    let ignore_ok = ignore.is_none_or(|v| {
        matches!(
            v.to_ascii_lowercase().as_str(),
            "1" | "true" | "0" | "false"
        )
    });
    match args.deserialize::<BTreeMap<String, String>>() {
        Ok(map) => {
            if !ignore_ok {
                return Err(format!("IgnoreUnknown={ignore:?} accepted"));
            }
            let mut expected = BTreeMap::new();
            for (k, v) in args.iter().filter(|(k, _)| *k != IGNORE_UNKNOWN) {
                expected.insert(k.to_owned(), v.to_owned());
            }
            if map != expected {
                return Err(format!("map {map:?}, expected {expected:?}"));
            }
        }
        Err(e) if !ignore_ok && matches!(e, CniArgsError::BadValue { .. }) => {}
        Err(e) => return Err(format!("reading into a map failed: {e}")),
    }
    match args.deserialize::<TypedArgs>() {
        Ok(_) => {}
        Err(CniArgsError::BadValue { pair, .. }) => {
            if !args.iter().any(|(k, v)| format!("{k}={v}") == pair) {
                return Err(format!("BadValue names {pair:?}, not a pair of the input"));
            }
        }
        Err(CniArgsError::Unknown(pairs)) => {
            if pairs.is_empty() {
                return Err("Unknown with no pair".into());
            }
            for pair in &pairs {
                if !args.iter().any(|(k, v)| format!("{k}={v}") == *pair) {
                    return Err(format!("Unknown names {pair:?}, not a pair of the input"));
                }
            }
        }
        Err(e) => return Err(format!("typed read failed with {e:?}")),
    }
    Ok(())
}
