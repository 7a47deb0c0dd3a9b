//! The parsers of bytes this crate reads from outside the process, as
//! entry points for fuzzing: the fuzz targets of `fuzz/` and the bounded
//! mutation runs of the tests crate (`tests/src/invariants/`) call them.
//! Behind the `fuzzing` feature, which no plugin enables: none of this is
//! API a plugin uses, and each function is a thin call into the code the
//! backends run.

/// nf_tables' netlink answers: datagrams, attributes, the parts of a
/// listed table, chain or rule the nftables backend reads, and
/// acknowledgements.
pub mod nft {
    use crate::nft::{nla, socket, udata};
    use crate::FilterError;

    /// One message of a datagram: its type, sequence number and payload
    /// (without the `nfgenmsg` of an nf_tables message).
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Message {
        /// `nlmsg_type`: subsystem in the high byte, message in the low.
        pub kind: u16,
        /// `nlmsg_seq`.
        pub seq: u32,
        /// The payload.
        pub payload: Vec<u8>,
    }

    /// The messages of a datagram as the socket splits every answer.
    pub fn messages(datagram: &[u8]) -> Result<Vec<Message>, FilterError> {
        Ok(socket::split(datagram)?
            .into_iter()
            .map(|r| Message {
                kind: r.kind,
                seq: r.seq,
                payload: r.payload,
            })
            .collect())
    }

    /// A message as the backend encodes its requests (flags and family 0),
    /// for a round trip through [`messages`].
    pub fn encode_message(kind: u16, seq: u32, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        crate::nft::message::encode(&mut out, kind, 0, seq, 0, 0, payload);
        out
    }

    /// The attributes of a payload, flags cleared, as every reader walks
    /// them.
    pub fn attributes(payload: &[u8]) -> Result<Vec<(u16, &[u8])>, FilterError> {
        nla::parse(payload)
    }

    /// Attributes encoded as the backend encodes them; `None` when one
    /// outgrows the 16-bit length field.
    pub fn encode_attributes(attrs: &[(u16, &[u8])]) -> Option<Vec<u8>> {
        let mut out = nla::Attrs::default();
        attrs
            .iter()
            .for_each(|(kind, value)| out.bytes(*kind, value));
        (!out.overflow).then_some(out.buf)
    }

    /// Whether two attribute lists say the same (`NftBackend::chain_holds`).
    pub fn same_attributes(ours: &[u8], theirs: &[u8]) -> bool {
        nla::same_attrs(ours, theirs)
    }

    /// The errno of an `NLMSG_ERROR` payload (0 for an acknowledgement).
    pub fn error_code(payload: &[u8]) -> Result<i32, FilterError> {
        socket::error_code(payload)
    }

    /// What the backend reads of one listed object: the attributes a
    /// table, chain or rule listing looks at.
    #[derive(Debug, Default, Clone, PartialEq, Eq)]
    pub struct Listed {
        /// Attribute 1 as text (a table's name; a chain's or rule's table).
        pub table: Option<String>,
        /// Attribute 2 as text (a rule's chain).
        pub rule_chain: Option<Vec<u8>>,
        /// Attribute 3 as text (a chain's name).
        pub chain: Option<String>,
        /// Attribute 3 as a number (a rule's handle), when it is one.
        pub handle: Option<u64>,
        /// The comment of attribute 7 (a rule's userdata), as listed.
        pub comment: Option<String>,
        /// The expressions of attribute 4 (a rule's), each as its
        /// attributes (name, data) when the list parses.
        pub expressions: Option<usize>,
    }

    /// One listed object read as the listings read it
    /// (`NftBackend::list_tables`, `list_chains`, `rules_where`,
    /// `chain_holds`). An error is what the backend would report.
    pub fn listed(payload: &[u8]) -> Result<Listed, FilterError> {
        let [table, rule_chain, third, exprs, userdata] = nla::find(payload, [1, 2, 3, 4, 7])?;
        let mut listed = Listed {
            table: table.map(nla::string).transpose()?,
            rule_chain: rule_chain.map(|c| nla::text(c).to_vec()),
            chain: third.and_then(|c| nla::string(c).ok()),
            handle: third.and_then(|h| nla::number(h).ok()),
            comment: userdata.and_then(udata::comment_of),
            expressions: None,
        };
        if let Some(list) = exprs {
            let mut count = 0;
            for (_, element) in nla::parse(list)? {
                let [name, data] = nla::find(element, [1, 2])?;
                name.map(nla::string).transpose()?;
                if let Some(data) = data {
                    nla::parse(data)?;
                }
                count += 1;
            }
            listed.expressions = Some(count);
        }
        Ok(listed)
    }
}

/// D-Bus messages as the firewalld client reads them.
pub mod dbus {
    use crate::firewalld::wire;
    use crate::firewalld::FirewalldError;

    /// What the client reads of a message.
    #[derive(Debug)]
    pub struct Reply {
        /// The message type byte as the client classifies it: 1 call, 2
        /// return, 3 error, anything else other.
        pub kind: u8,
        /// `REPLY_SERIAL`.
        pub reply_serial: Option<u32>,
        /// `ERROR_NAME`.
        pub error_name: Option<String>,
        /// `SIGNATURE` (empty when absent).
        pub signature: String,
        /// The first argument, when it is a string.
        pub first_string: Option<String>,
        /// The first argument as a boolean, or why it is not one.
        pub first_bool: Result<bool, FirewalldError>,
    }

    /// The length of the fixed header plus the header fields' length:
    /// what is read before a message's total length is known.
    pub const PREFIX_LEN: usize = wire::PREFIX_LEN;

    /// The most the client reads of one message.
    pub const MAX_MESSAGE: usize = wire::MAX_MESSAGE;

    /// A message's total length from its first [`PREFIX_LEN`] bytes.
    pub fn total_len(prefix: &[u8; PREFIX_LEN]) -> Result<usize, FirewalldError> {
        wire::total_len(prefix)
    }

    /// One whole message, decoded, and its first argument read both ways.
    pub fn decode(bytes: &[u8]) -> Result<Reply, FirewalldError> {
        let message = wire::Message::decode(bytes)?;
        Ok(Reply {
            kind: match message.kind {
                wire::Kind::MethodCall => 1,
                wire::Kind::MethodReturn => 2,
                wire::Kind::Error => 3,
                wire::Kind::Other(b) => b,
            },
            reply_serial: message.reply_serial,
            error_name: message.error_name.clone(),
            signature: message.signature.clone(),
            first_string: message.first_string(),
            first_bool: message.first_bool(),
        })
    }

    /// A method call with string arguments as the client sends it.
    pub fn encode_call(
        destination: &str,
        path: &str,
        interface: &str,
        member: &str,
        args: &[&str],
        serial: u32,
    ) -> Result<Vec<u8>, FirewalldError> {
        wire::Call {
            destination,
            path,
            interface,
            member,
            args,
        }
        .encode(serial)
    }
}

/// `iptables-save` output as the iptables backend reads it.
pub mod iptables_save {
    pub use crate::iptables::Saved;

    /// The section of `table` in `text`.
    pub fn parse(text: &str, table: &str) -> Saved {
        crate::iptables::save::parse(text, table)
    }

    /// A line split into words as iptables-restore splits it.
    pub fn words(line: &str) -> Vec<String> {
        crate::iptables::save::words(line)
    }

    /// Words joined into one `iptables-restore` line, quoted where needed.
    pub fn line(words: &[String]) -> String {
        crate::iptables::render::line(words)
    }
}
