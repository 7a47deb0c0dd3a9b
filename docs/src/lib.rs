//! The guide in `docs/guide/`, compiled: each chapter is the documentation
//! of a module below, so every Rust code block in it is a doctest that CI
//! builds and, unless marked `no_run`, runs (`cargo test -p cni-guide`).
//! Read the chapters as markdown, starting at `docs/guide/README.md`.

#[doc = include_str!("../guide/1-chained.md")]
pub mod chained {}

#[doc = include_str!("../guide/2-interface.md")]
pub mod interface {}

#[doc = include_str!("../guide/3-ipam.md")]
pub mod ipam {}

#[doc = include_str!("../guide/4-testing.md")]
pub mod testing {}

#[doc = include_str!("../guide/5-shipping.md")]
pub mod shipping {}

#[doc = include_str!("../guide/6-async.md")]
pub mod asynchronous {}
