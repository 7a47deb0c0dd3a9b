//! The whole in-process path of an ADD: environment and stdin checks,
//! configuration and prevResult parsing, the plugin's method, conversion and
//! printing. The plugin passes prevResult through, as the noop's
//! PASSTHROUGH does, without its debug file.

use std::collections::BTreeMap;
use std::hint::black_box;

use cni_skel::{dispatch, BoxError, CheckSupport, Plugin, Reply, Request};
use cni_types::{NetConf, Result100, SpecVersion};
use cni_version::PluginInfo;
use criterion::{criterion_group, criterion_main, Criterion};

const CONFIG: &[u8] = include_bytes!("../../bench/fixtures/config-1.0.0.json");

struct Passthrough;

impl Plugin for Passthrough {
    type Config = NetConf;
    const CHECK: CheckSupport = CheckSupport::Full;
    // A test double: its ADD changes nothing on the host, so there is
    // nothing to verify and CHECK succeeds.
    fn check(&self, _req: &Request<Self::Config>) -> Result<(), BoxError> {
        Ok(())
    }
    fn add(&self, req: &Request<Self::Config>) -> Result<Reply, BoxError> {
        let prev = req.config.prev_result.clone();
        Ok(prev.map_or_else(|| Result100::new(SpecVersion::V1_1_0).into(), Reply::from))
    }
    fn del(&self, _: &Request<Self::Config>) -> Result<(), BoxError> {
        Ok(())
    }
}

fn benches(c: &mut Criterion) {
    let env: BTreeMap<&str, &str> = [
        ("CNI_COMMAND", "ADD"),
        ("CNI_CONTAINERID", "bench-container"),
        ("CNI_NETNS", "/var/run/netns/bench-does-not-exist"),
        ("CNI_IFNAME", "eth0"),
        ("CNI_PATH", "/opt/cni/bin"),
    ]
    .into_iter()
    .collect();
    let versions = PluginInfo::all();
    c.bench_function("dispatch ADD (1.0.0, prevResult passthrough)", |b| {
        b.iter(|| {
            let mut stdout = Vec::with_capacity(2048);
            let mut stderr = Vec::new();
            let code = dispatch(
                &Passthrough,
                &versions,
                "",
                &env,
                &mut black_box(CONFIG),
                &mut stdout,
                &mut stderr,
            );
            assert_eq!(code, 0);
            stdout
        })
    });
}

criterion_group!(skel, benches);
criterion_main!(skel);
