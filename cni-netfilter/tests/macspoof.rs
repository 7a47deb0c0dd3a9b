//! `macspoofchk`'s rules against the kernel, in a namespace of the test's
//! own (needs root): a repeated setup leaves one jump, check finds them,
//! teardown removes the attachment's part and keeps the shared table, and
//! a second teardown is success.

mod common;

use cni_netfilter::{macspoof, Backend, CommentMatch, Family, Table};
use cni_types::Mac;
use common::{netns, try_nft, with_nft};

#[test]
#[ignore = "needs root: scripts/test.sh runs it"]
fn setup_twice_leaves_one_jump_and_teardown_leaves_the_shared_chain() {
    let ns = netns("macspoof");
    let id = macspoof::ref_id("ctr1", "eth0");
    let mac = Mac([2, 0x16, 0, 0, 0, 7]);
    let table = Table::new(Family::Bridge, macspoof::TABLE);
    let mine = CommentMatch::Exact(macspoof::comment(&id));
    let jumps = || {
        with_nft(&ns, |nft| {
            Ok(nft.find_rules(&table, macspoof::PREROUTING, &mine)?.len())
        })
    };
    for _ in 0..2 {
        try_nft(&ns, |_| macspoof::setup("veth1", mac, &id)).unwrap();
    }
    assert_eq!(jumps(), 1);
    try_nft(&ns, |_| macspoof::check(&id)).unwrap();

    for _ in 0..2 {
        try_nft(&ns, |_| macspoof::teardown(&id)).unwrap();
    }
    assert_eq!(jumps(), 0);
    let err = try_nft(&ns, |_| macspoof::check(&id)).unwrap_err();
    assert!(err.to_string().contains("macspoofchk"), "{err}");
    let chains = with_nft(&ns, |nft| Ok(nft.list_chains(&table)?));
    assert_eq!(chains, vec![macspoof::PREROUTING.to_owned()]);
}
