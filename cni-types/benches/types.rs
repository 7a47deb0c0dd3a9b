//! In-process costs of the types every plugin pays for: reading a
//! configuration with a prevResult, converting results, printing one.
//! `bench/inprocess.sh` runs these beside the same operations in the
//! reference Go library.

use std::hint::black_box;

use cni_types::{CniResult, Extra, NetConf, SpecVersion};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};

const CONFIG: &[u8] = include_bytes!("../../bench/fixtures/config-1.0.0.json");
const RESULT_020: &[u8] = include_bytes!("../../bench/fixtures/result-0.2.0.json");
const RESULT_040: &[u8] = include_bytes!("../../bench/fixtures/result-0.4.0.json");
const RESULT_110: &[u8] = include_bytes!("../../bench/fixtures/result-1.1.0.json");

fn benches(c: &mut Criterion) {
    c.bench_function("parse config with prevResult (1.0.0)", |b| {
        b.iter(|| NetConf::<Extra>::from_json(black_box(CONFIG)).unwrap())
    });
    let r110 = CniResult::parse("1.1.0", RESULT_110).unwrap();
    let r020 = CniResult::parse("0.2.0", RESULT_020).unwrap();
    let r040 = CniResult::parse("0.4.0", RESULT_040).unwrap();
    // The entry point converts a plugin's result it owns (into_version:
    // strings and lists move); the copy made for each run is outside the
    // timing. Converting a borrowed result (convert_to) copies it first:
    // measured too, as "(borrowed)".
    for (name, result, to) in [
        ("convert 1.1.0 -> 0.2.0", &r110, SpecVersion::V0_2_0),
        ("convert 0.2.0 -> 1.1.0", &r020, SpecVersion::V1_1_0),
        ("convert 0.4.0 -> 1.0.0", &r040, SpecVersion::V1_0_0),
    ] {
        c.bench_function(name, |b| {
            b.iter_batched(
                || result.clone(),
                |r| r.into_version(black_box(&to)).unwrap(),
                BatchSize::SmallInput,
            )
        });
        c.bench_function(&format!("{name} (borrowed)"), |b| {
            b.iter(|| black_box(result).convert_to(&to).unwrap())
        });
    }
    let r100 = r110.convert_to(&SpecVersion::V1_0_0).unwrap();
    c.bench_function("print a 1.0.0 result", |b| {
        b.iter(|| black_box(&r100).to_json())
    });
}

criterion_group!(types, benches);
criterion_main!(types);
