//! Every JSON example in the spec texts parses into our types and prints
//! back equal as JSON. The fixtures are extracted verbatim from
//! `../shared/spec` (see `fixtures/spec-examples/SKIPPED.md` for the few
//! snippets that are not JSON, e.g. ones with `...` placeholders).

use std::path::PathBuf;

use cni_types::conventions::{Bandwidth, PortMapping};
use cni_types::{Attachment, CniResult, Error, NetConf, NetConfList};
use cni_version::PluginInfo;
use serde_json::Value;

fn examples() -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/spec-examples");
    let mut out: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    out.sort();
    out
}

fn json(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap()
}

fn round_trip<T: serde::de::DeserializeOwned + serde::Serialize>(bytes: &[u8]) -> Value {
    serde_json::to_value(serde_json::from_slice::<T>(bytes).unwrap()).unwrap()
}

#[test]
fn every_spec_example_parses_and_prints_back_equal() {
    let examples = examples();
    assert!(examples.len() >= 30, "fixtures present: {}", examples.len());
    for (name, bytes) in &examples {
        let mut original = json(bytes);
        let printed = if name.contains("-config") {
            // A prevResult is printed in the configuration's version, which
            // names itself even where the example left it implicit.
            let version = original.get("cniVersion").cloned();
            if let (Some(prev), Some(v)) = (original.get_mut("prevResult"), version) {
                prev.as_object_mut()
                    .unwrap()
                    .entry("cniVersion")
                    .or_insert(v);
            }
            let conf = NetConf::<cni_types::Extra>::from_json(bytes)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            serde_json::to_value(&conf).unwrap()
        } else if name.contains("-conflist") {
            round_trip::<NetConfList>(bytes)
        } else if let Some(version) = name
            .strip_suffix(".json")
            .and_then(|n| n.split("-result-").nth(1))
        {
            let result = CniResult::parse(version, bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
            // The spec's result examples leave cniVersion implicit; ours names it.
            original
                .as_object_mut()
                .unwrap()
                .entry("cniVersion")
                .or_insert(version.into());
            json(&result.to_json())
        } else if name.contains("-error") {
            json(&serde_json::from_slice::<Error>(bytes).unwrap().to_json())
        } else if name.contains("-version") {
            let info = PluginInfo::decode(bytes).unwrap();
            let requested = original["cniVersion"].as_str();
            json(&info.version_answer(requested))
        } else if name == "SPEC-1.0.0-07-other.json" {
            // The abbreviated result of an IPAM plugin (no cniVersion).
            let mut v = json(&CniResult::parse("1.0.0", bytes).unwrap().to_json());
            v.as_object_mut().unwrap().remove("cniVersion");
            v
        } else if name == "CONVENTIONS-03-other.json" {
            round_trip::<Vec<PortMapping>>(bytes)
        } else if name == "CONVENTIONS-05-other.json" {
            round_trip::<Bandwidth>(bytes)
        } else if name == "SPEC-1.1.0-delta-01-other.json" {
            round_trip::<Attachment>(bytes)
        } else {
            panic!("{name}: no rule for this fixture");
        };
        assert_eq!(printed, original, "{name}");
    }
}

#[test]
fn spec_config_with_prev_result_offers_it_typed_in_the_config_version() {
    let conf = NetConf::<cni_types::Extra>::from_json(
        &std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/spec-examples/SPEC-0.4.0-10-config.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let prev = conf.prev_result.expect("prevResult parsed");
    assert_eq!(prev.version().to_string(), conf.cni_version);
}
