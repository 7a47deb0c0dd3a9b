//! Sample CNI plugins built on the SDK.
//!
//! - [`noop`]: a drop-in replacement for the reference test double
//!   (`plugins/test/noop`), driven by a debug file exactly as runtime test
//!   suites drive the reference one.
//! - [`dns_mac`]: a small chained plugin to copy when starting a plugin: a
//!   typed, validated configuration, a change to the previous result, CHECK
//!   that verifies it, an idempotent DEL.
//!
//! - [`delegator`]: an interface-plugin skeleton that delegates IPAM
//!   (spec section 4) and releases the address when its ADD fails.
//!
//! - [`veth`]: an interface plugin that does real work: a veth pair into
//!   the container namespace over rtnetlink, addresses from its IPAM
//!   plugin, routes both ways.
//!
//! The binaries in `src/bin` are thin `main`s over these modules;
//! `ipam-file` is one over the `cni-ipam` crate.

pub mod delegator;
pub mod dns_mac;
pub mod noop;
pub mod veth;
