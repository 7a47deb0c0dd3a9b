//! What several plugins' in-process tests share.

use cni_skel::{Plugin, TestRequest};
use cni_types::Code;
use cni_version::PluginInfo;
use serde_json::Value;

/// ADD of `stdin` (made from `fields`) is refused with code 7 and exactly
/// `msg`; `fields` names the case when it is not.
pub fn assert_add_refused<P: Plugin>(plugin: &P, stdin: String, fields: &Value, msg: &str) {
    let out = TestRequest::add()
        .stdin(stdin)
        .run(plugin, &PluginInfo::all());
    let err = out.error().unwrap_or_else(|| panic!("{fields}"));
    assert_eq!(
        (err.code, err.msg.as_str()),
        (Code::INVALID_NETWORK_CONFIG, msg),
        "{fields}: {err:?}"
    );
}

/// `out` (a CHECK without `prevResult`) is refused with code 7 and
/// exactly `words`, the reference plugin's.
pub fn assert_prev_result_missing(out: &cni_skel::Outcome, words: &str) {
    let err = out.error().expect("CHECK without prevResult is refused");
    assert_eq!(
        (err.code, err.msg.as_str()),
        (Code::INVALID_NETWORK_CONFIG, words),
        "CHECK without prevResult answers in the reference's words"
    );
}
