//! `agent`: the local agent `agent-forward` talks to. It keeps the
//! attachments it was told about in memory and answers one JSON line per
//! connection: ADD records the attachment and answers a result with the
//! container interface, DEL forgets it (and succeeds when it is unknown),
//! CHECK fails with code 3 for an attachment it does not know, GC forgets
//! those not in `cni.dev/valid-attachments` (and keeps all when the list
//! is absent), STATUS succeeds.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::Mutex;

use cni_types::{Code, Error, Interface, Result100, SpecVersion, ValidAttachments};

use super::{Answer, Ask};

/// The agent's state: the attachments it has added, by container id and
/// interface name.
#[derive(Debug, Default)]
pub struct Agent {
    attachments: Mutex<BTreeSet<(String, String)>>,
}

impl Agent {
    /// Serves connections on `listener`, one thread each, until accepting
    /// fails.
    pub fn serve(&self, listener: &UnixListener) -> std::io::Result<()> {
        std::thread::scope(|scope| {
            for conn in listener.incoming() {
                let conn = conn?;
                scope.spawn(move || self.answer(conn));
            }
            Ok(())
        })
    }

    /// Reads one request from `conn` and writes the answer.
    fn answer(&self, conn: UnixStream) {
        let mut line = Vec::new();
        if BufReader::new(&conn).read_until(b'\n', &mut line).is_err() {
            return;
        }
        let answer = match serde_json::from_slice::<Ask>(&line) {
            Ok(ask) => self.handle(&ask),
            Err(e) => Answer::Error(
                Error::new(Code::DECODING_FAILURE, "unreadable request")
                    .with_details(e.to_string()),
            ),
        };
        let mut out = serde_json::to_vec(&answer).unwrap_or_default();
        out.push(b'\n');
        let _ = (&conn).write_all(&out);
    }

    /// What the agent does for one command.
    pub fn handle(&self, ask: &Ask) -> Answer {
        let key = (ask.container_id.clone(), ask.ifname.clone());
        let mut attachments = self.attachments.lock().unwrap_or_else(|p| p.into_inner());
        match ask.command.as_str() {
            "ADD" => {
                attachments.insert(key);
                let mut result = Result100::new(SpecVersion::V1_0_0);
                let mut iface = Interface::named(ask.ifname.clone());
                iface.sandbox = ask.netns.clone();
                result.interfaces.push(iface);
                match serde_json::value::to_raw_value(&result) {
                    Ok(raw) => Answer::Result(raw),
                    Err(e) => Answer::Error(Error::internal(&e)),
                }
            }
            "DEL" => {
                attachments.remove(&key);
                Answer::Done
            }
            "CHECK" if !attachments.contains(&key) => Answer::Error(Error::new(
                Code::UNKNOWN_CONTAINER,
                format!("no attachment {} {}", key.0, key.1),
            )),
            "GC" => {
                // No list at all keeps everything: forgetting a live
                // attachment is worse than keeping a stale one. `null`
                // is libcni's empty list.
                if let Some(valid) = valid_attachments(ask) {
                    attachments.retain(|(id, ifname)| valid.keeps(id, ifname));
                }
                Answer::Done
            }
            _ => Answer::Done,
        }
    }

    /// The attachments the agent holds.
    pub fn attachments(&self) -> Vec<(String, String)> {
        let held = self.attachments.lock().unwrap_or_else(|p| p.into_inner());
        held.iter().cloned().collect()
    }
}

/// GC's `cni.dev/valid-attachments` (`null` is the empty list); `None`
/// when unreadable.
fn valid_attachments(ask: &Ask) -> Option<ValidAttachments> {
    #[derive(serde::Deserialize)]
    struct Gc {
        #[serde(rename = "cni.dev/valid-attachments", default)]
        valid: ValidAttachments,
    }
    serde_json::from_str::<Gc>(ask.config.get())
        .ok()
        .map(|gc| gc.valid)
}
