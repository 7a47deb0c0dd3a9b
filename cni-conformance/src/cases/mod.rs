//! Every case, one file per spec section; [`all`] is the table in the
//! order a run takes it (the output cases last, to see every call).

use crate::case::Case;

pub mod add;
pub mod check;
pub mod concurrency;
pub mod del;
pub mod env;
pub mod gc;
pub mod interface;
pub mod lifecycle;
pub mod output;
pub mod status;
pub mod version;

/// The sections' tables, in run order.
const SECTIONS: [&[Case]; 10] = [
    &version::CASES,
    &env::CASES,
    &add::CASES,
    &interface::CASES,
    &check::CASES,
    &del::CASES,
    &gc::CASES,
    &status::CASES,
    &concurrency::CASES,
    &output::CASES,
];

/// Every case, in run order.
pub fn all() -> impl Iterator<Item = &'static Case> {
    SECTIONS.iter().flat_map(|s| s.iter())
}
