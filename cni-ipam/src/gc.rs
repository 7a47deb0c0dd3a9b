//! Which reservations a GC releases.
//!
//! SPEC-1.1.0: the plugin "should remove any resources related to
//! attachments not in this list". Three states, read safely (see
//! [`ValidAttachments`]):
//!
//! - no list (key absent): the runtime did not say, so nothing is
//!   released;
//! - `[]` or `null` (libcni's empty list): nothing is valid, every
//!   reservation of this node is released;
//! - a list: the reservations of every other attachment are released. An
//!   older reservation naming only a container is kept while any attachment
//!   of that container is listed.
//!
//! Entries no plugin wrote ([`Owner::Unknown`]) and other nodes'
//! reservations are never released.

use cni_types::ValidAttachments;

use crate::store::{Owner, Reservation};

/// The reservations of `held` that a GC with `valid` releases.
///
/// ```
/// use cni_ipam::gc::stale;
/// use cni_ipam::store::{Owner, Reservation};
/// use cni_types::{Attachment, ValidAttachments};
///
/// let held = [Reservation::new("10.0.0.2".parse().unwrap(), Owner::Container("c1".into()))];
/// assert!(stale(&held, &ValidAttachments::Unspecified).is_empty());
/// assert_eq!(stale(&held, &ValidAttachments::List(vec![])).len(), 1);
/// let c1 = Attachment { container_id: "c1".into(), ifname: "eth9".into() };
/// assert!(stale(&held, &ValidAttachments::List(vec![c1])).is_empty());
/// ```
pub fn stale<'h>(held: &'h [Reservation], valid: &ValidAttachments) -> Vec<&'h Reservation> {
    held.iter()
        .filter(|r| r.local)
        .filter(|r| match &r.owner {
            Owner::Attachment(a) => !valid.keeps(&a.container_id, &a.ifname),
            Owner::Container(id) => !valid.keeps_container(id),
            Owner::Unknown(_) => false,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use cni_types::Attachment;

    use super::*;

    fn held() -> Vec<Reservation> {
        let at = |ip: &str, id: &str, ifname: &str| {
            Reservation::new(
                ip.parse().unwrap(),
                Owner::Attachment(Attachment {
                    container_id: id.into(),
                    ifname: ifname.into(),
                }),
            )
        };
        let mut remote = at("10.0.0.9", "c9", "eth0");
        remote.local = false;
        vec![
            at("10.0.0.2", "c1", "eth0"),
            at("10.0.0.3", "c2", "eth0"),
            Reservation::new("10.0.0.4".parse().unwrap(), Owner::Container("old".into())),
            Reservation::new(
                "10.0.0.5".parse().unwrap(),
                Owner::Unknown("a directory".into()),
            ),
            remote,
        ]
    }

    fn released(valid: &ValidAttachments) -> Vec<String> {
        let held = held();
        stale(&held, valid)
            .iter()
            .map(|r| r.ip.to_string())
            .collect()
    }

    fn list(items: &[(&str, &str)]) -> ValidAttachments {
        ValidAttachments::List(
            items
                .iter()
                .map(|(id, ifname)| Attachment {
                    container_id: (*id).into(),
                    ifname: (*ifname).into(),
                })
                .collect(),
        )
    }

    #[test]
    fn no_list_releases_nothing() {
        assert!(released(&ValidAttachments::Unspecified).is_empty());
    }

    #[test]
    fn an_empty_list_releases_every_local_reservation_but_unknown_entries() {
        assert_eq!(released(&list(&[])), ["10.0.0.2", "10.0.0.3", "10.0.0.4"]);
    }

    #[test]
    fn a_list_releases_the_others_and_keeps_older_ones_by_container() {
        assert_eq!(
            released(&list(&[("c1", "eth0"), ("old", "net1")])),
            ["10.0.0.3"]
        );
        assert_eq!(
            released(&list(&[("c1", "eth1")])),
            ["10.0.0.2", "10.0.0.3", "10.0.0.4"]
        );
    }
}
