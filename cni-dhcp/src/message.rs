//! DHCPv4 messages (RFC 2131 section 2) and their options (RFC 2132):
//! encoded and decoded by hand, bounds-checked, never panicking on a
//! server's bytes.

use std::net::Ipv4Addr;

use crate::DhcpError;

/// The fixed BOOTP header before the options, with the magic cookie.
const HEADER_LEN: usize = 240;
/// RFC 2131: "the minimum length of a DHCP message is 300 octets" for
/// relays written to BOOTP; shorter messages are padded.
const MIN_LEN: usize = 300;
const MAGIC: [u8; 4] = [99, 130, 83, 99];
/// The `flags` bit asking the server to broadcast its reply (RFC 2131
/// section 4.1).
pub const BROADCAST_FLAG: u16 = 0x8000;

/// Option codes the client reads or writes (RFC 2132, RFC 3442).
pub mod code {
    /// Subnet mask (1).
    pub const SUBNET_MASK: u8 = 1;
    /// Routers (3).
    pub const ROUTER: u8 = 3;
    /// Static routes, classful (33).
    pub const STATIC_ROUTES: u8 = 33;
    /// Requested IP address (50).
    pub const REQUESTED_IP: u8 = 50;
    /// IP address lease time (51).
    pub const LEASE_TIME: u8 = 51;
    /// DHCP message type (53).
    pub const MESSAGE_TYPE: u8 = 53;
    /// Server identifier (54).
    pub const SERVER_ID: u8 = 54;
    /// Parameter request list (55).
    pub const PARAMETER_REQUEST_LIST: u8 = 55;
    /// Renewal (T1) time (58).
    pub const RENEWAL_TIME: u8 = 58;
    /// Rebinding (T2) time (59).
    pub const REBINDING_TIME: u8 = 59;
    /// Client identifier (61).
    pub const CLIENT_ID: u8 = 61;
    /// Classless static routes (121, RFC 3442).
    pub const CLASSLESS_ROUTES: u8 = 121;
}

/// The DHCP message type (option 53).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageType {
    /// DHCPDISCOVER (1).
    Discover,
    /// DHCPOFFER (2).
    Offer,
    /// DHCPREQUEST (3).
    Request,
    /// DHCPDECLINE (4).
    Decline,
    /// DHCPACK (5).
    Ack,
    /// DHCPNAK (6).
    Nak,
    /// DHCPRELEASE (7).
    Release,
    /// Any other value.
    Other(u8),
}

impl MessageType {
    fn from_u8(v: u8) -> MessageType {
        match v {
            1 => MessageType::Discover,
            2 => MessageType::Offer,
            3 => MessageType::Request,
            4 => MessageType::Decline,
            5 => MessageType::Ack,
            6 => MessageType::Nak,
            7 => MessageType::Release,
            other => MessageType::Other(other),
        }
    }

    fn as_u8(self) -> u8 {
        match self {
            MessageType::Discover => 1,
            MessageType::Offer => 2,
            MessageType::Request => 3,
            MessageType::Decline => 4,
            MessageType::Ack => 5,
            MessageType::Nak => 6,
            MessageType::Release => 7,
            MessageType::Other(v) => v,
        }
    }
}

/// One DHCPv4 message: the BOOTP fields the client uses and its options
/// in order (message type first when encoded).
///
/// Go: `dhcpv4.DHCPv4` (insomniacslk/dhcp).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// 1 for a request from a client, 2 for a reply.
    pub op: u8,
    /// Transaction id, chosen by the client.
    pub xid: u32,
    /// `flags`: [`BROADCAST_FLAG`] or 0.
    pub flags: u16,
    /// Client address, set when renewing, rebinding and releasing.
    pub ciaddr: Ipv4Addr,
    /// "your" address: the one the server offers.
    pub yiaddr: Ipv4Addr,
    /// Client hardware address (Ethernet: 6 bytes used).
    pub chaddr: [u8; 6],
    /// The message type (option 53).
    pub kind: MessageType,
    /// Every other option, code and value, in order.
    pub options: Vec<(u8, Vec<u8>)>,
}

impl Message {
    /// A client's message of `kind` with no options besides its type.
    pub fn client(kind: MessageType, xid: u32, chaddr: [u8; 6]) -> Message {
        Message {
            op: 1,
            xid,
            flags: 0,
            ciaddr: Ipv4Addr::UNSPECIFIED,
            yiaddr: Ipv4Addr::UNSPECIFIED,
            chaddr,
            kind,
            options: Vec::new(),
        }
    }

    /// The value of option `code`; repeated instances are concatenated
    /// (RFC 3396).
    pub fn option(&self, code: u8) -> Option<Vec<u8>> {
        let mut found: Option<Vec<u8>> = None;
        for (c, v) in &self.options {
            if *c == code {
                found.get_or_insert_with(Vec::new).extend_from_slice(v);
            }
        }
        found
    }

    /// Option `code` read as one IPv4 address (the first four bytes).
    pub fn ipv4_option(&self, code: u8) -> Option<Ipv4Addr> {
        let v = self.option(code)?;
        let b: [u8; 4] = v.get(..4)?.try_into().ok()?;
        Some(Ipv4Addr::from(b))
    }

    /// Option `code` read as a 32-bit count of seconds.
    pub fn seconds_option(&self, code: u8) -> Option<u32> {
        let v = self.option(code)?;
        let b: [u8; 4] = v.get(..4)?.try_into().ok()?;
        Some(u32::from_be_bytes(b))
    }

    /// Sets option `code`, replacing an earlier value.
    pub fn set_option(&mut self, code: u8, value: Vec<u8>) {
        self.options.retain(|(c, _)| *c != code);
        self.options.push((code, value));
    }

    /// The message on the wire. Options longer than 255 bytes are split
    /// into several instances (RFC 3396).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(MIN_LEN);
        out.extend_from_slice(&[self.op, 1, 6, 0]); // htype Ethernet, hlen 6, hops
        out.extend_from_slice(&self.xid.to_be_bytes());
        out.extend_from_slice(&[0, 0]); // secs
        out.extend_from_slice(&self.flags.to_be_bytes());
        out.extend_from_slice(&self.ciaddr.octets());
        out.extend_from_slice(&self.yiaddr.octets());
        out.extend_from_slice(&[0; 8]); // siaddr, giaddr
        out.extend_from_slice(&self.chaddr);
        out.extend_from_slice(&[0; 10 + 64 + 128]); // chaddr padding, sname, file
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&[code::MESSAGE_TYPE, 1, self.kind.as_u8()]);
        for (c, v) in &self.options {
            for chunk in v.chunks(255) {
                out.push(*c);
                out.push(chunk.len() as u8);
                out.extend_from_slice(chunk);
            }
            if v.is_empty() {
                out.extend_from_slice(&[*c, 0]);
            }
        }
        out.push(255);
        if out.len() < MIN_LEN {
            out.resize(MIN_LEN, 0);
        }
        out
    }

    /// Reads a message; anything malformed is [`DhcpError::Malformed`]
    /// saying what.
    pub fn decode(bytes: &[u8]) -> Result<Message, DhcpError> {
        let malformed = |what: &str| DhcpError::Malformed(what.to_string());
        if bytes.len() < HEADER_LEN {
            return Err(malformed("shorter than a BOOTP header"));
        }
        if bytes[236..240] != MAGIC {
            return Err(malformed("no DHCP magic cookie"));
        }
        let ip = |at: usize| Ipv4Addr::new(bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]);
        let mut chaddr = [0u8; 6];
        chaddr.copy_from_slice(&bytes[28..34]);
        let mut options = Vec::new();
        let mut kind = None;
        let mut rest = &bytes[HEADER_LEN..];
        while let Some((&c, tail)) = rest.split_first() {
            match c {
                0 => rest = tail,
                255 => break,
                _ => {
                    let (&len, tail) = tail
                        .split_first()
                        .ok_or_else(|| malformed("an option without a length"))?;
                    let value = tail
                        .get(..len as usize)
                        .ok_or_else(|| malformed("an option longer than the message"))?;
                    if c == code::MESSAGE_TYPE {
                        kind = value.first().map(|&v| MessageType::from_u8(v));
                    } else {
                        options.push((c, value.to_vec()));
                    }
                    rest = &tail[len as usize..];
                }
            }
        }
        Ok(Message {
            op: bytes[0],
            xid: u32::from_be_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]),
            flags: u16::from_be_bytes([bytes[10], bytes[11]]),
            ciaddr: ip(12),
            yiaddr: ip(16),
            chaddr,
            kind: kind.ok_or_else(|| malformed("no message type (option 53)"))?,
            options,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_reads_back_as_it_was_written() {
        let mut m = Message::client(MessageType::Request, 0xdead_beef, [2, 0, 0, 0, 0, 1]);
        m.flags = BROADCAST_FLAG;
        m.ciaddr = Ipv4Addr::new(10, 0, 0, 5);
        m.set_option(code::CLIENT_ID, vec![0; 300]);
        m.set_option(code::REQUESTED_IP, vec![10, 0, 0, 5]);
        let bytes = m.encode();
        assert!(bytes.len() >= MIN_LEN);
        let back = Message::decode(&bytes).unwrap();
        assert_eq!(back.kind, MessageType::Request);
        assert_eq!(back.xid, 0xdead_beef);
        assert_eq!(back.flags, BROADCAST_FLAG);
        assert_eq!(back.ciaddr, m.ciaddr);
        // The 300-byte client id went out in two instances and came back whole.
        assert_eq!(back.option(code::CLIENT_ID).unwrap().len(), 300);
        assert_eq!(
            back.ipv4_option(code::REQUESTED_IP),
            Some(Ipv4Addr::new(10, 0, 0, 5))
        );
    }

    #[test]
    fn truncated_or_foreign_bytes_are_refused_without_panicking() {
        let good = Message::client(MessageType::Discover, 1, [0; 6]).encode();
        for cut in [0, 10, 239, 241, 242] {
            let _ = Message::decode(&good[..cut]);
        }
        let mut bad = good.clone();
        bad[236] = 0;
        assert!(matches!(
            Message::decode(&bad),
            Err(DhcpError::Malformed(_))
        ));
        let mut long = good[..HEADER_LEN].to_vec();
        long.extend_from_slice(&[code::ROUTER, 200, 1, 2]);
        assert!(matches!(
            Message::decode(&long),
            Err(DhcpError::Malformed(_))
        ));
    }
}
