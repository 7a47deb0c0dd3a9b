//! In-process costs of the types every plugin pays for: reading a
//! configuration with a prevResult, converting results, printing one.
//! `bench/inprocess.sh` runs these beside the same operations in the
//! reference Go library.

use std::hint::black_box;

use cni_types::{CniResult, Extra, NetConf, SpecVersion};
use criterion::{criterion_group, criterion_main, Criterion};

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
    c.bench_function("convert 1.1.0 -> 0.2.0", |b| {
        b.iter(|| black_box(&r110).convert_to(&SpecVersion::V0_2_0).unwrap())
    });
    c.bench_function("convert 0.2.0 -> 1.1.0", |b| {
        b.iter(|| black_box(&r020).convert_to(&SpecVersion::V1_1_0).unwrap())
    });
    c.bench_function("convert 0.4.0 -> 1.0.0", |b| {
        b.iter(|| black_box(&r040).convert_to(&SpecVersion::V1_0_0).unwrap())
    });
    let r100 = r110.convert_to(&SpecVersion::V1_0_0).unwrap();
    c.bench_function("print a 1.0.0 result", |b| {
        b.iter(|| black_box(&r100).to_json())
    });
}

criterion_group!(types, benches);
criterion_main!(types);
