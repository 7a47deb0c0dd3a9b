//! One suite of store behaviours ([`suite`]), written once against
//! `cni_ipam::store::Store` and run against every store: the file store on
//! a temporary data directory ([`file`]) and the etcd store on a real etcd
//! started by `tests::etcd` ([`etcd`]). What only one store can do (nodes,
//! for etcd) is tested beside its backend.
//!
//! The planner is tested with plain values in `cni-ipam/src/plan.rs`; the
//! plugins as processes in `ipam_file.rs`, `ipam_file_store.rs`,
//! `ipam_faults.rs` and `ipam_etcd.rs`.

mod etcd;
mod file;
mod suite;

/// One `#[test]` per behaviour of [`suite`], for the backend `$backend`.
macro_rules! store_suite {
    ($backend:ty) => {
        crate::store_suite!(
            $backend:
            a_reservation_is_read_back_with_its_owner_and_as_last_reserved,
            a_reservation_is_all_or_nothing_when_one_address_is_taken,
            release_removes_exactly_the_attachment_given,
            an_older_single_line_reservation_is_released_by_container_id,
            the_next_search_starts_after_the_last_reserved_address,
            a_stray_entry_is_taken_named_and_never_released,
            gc_releases_exactly_what_is_not_valid_in_each_of_its_three_states,
            concurrent_reservers_never_share_an_address,
        );
    };
    ($backend:ty: $($behaviour:ident,)*) => {
        $(
            #[test]
            fn $behaviour() {
                crate::suite::$behaviour::<$backend>();
            }
        )*
    };
}
use store_suite;
