//! One connection to a message bus: connect, authenticate, `Hello`, then
//! method calls answered in turn.
//!
//! The D-Bus specification, "Authentication Protocol": the client sends a
//! NUL byte, then `AUTH EXTERNAL <hex of the uid in decimal>`; the server
//! answers `OK <guid>`; the client sends `BEGIN` and the binary protocol
//! starts. "Message Bus Specification": the first call must be `Hello`.
//!
//! Go: `github.com/godbus/dbus/v5` `conn.go` (`SystemBus`, `Auth`, `Hello`)
//! and `auth_external.go`.

use std::cell::Cell;
use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use super::address;
use super::wire::{self, Call, Kind, Message};
use super::FirewalldError;

/// The most bytes of one authentication line we read.
const MAX_AUTH_LINE: usize = 512;

/// How many messages that answer nothing of ours (signals such as
/// `NameAcquired`) one call reads past before giving up.
const MAX_SKIPPED: usize = 64;

/// The bus itself, where `Hello` and `NameHasOwner` go.
pub(crate) const BUS: Call<'static> = Call {
    destination: "org.freedesktop.DBus",
    path: "/org/freedesktop/DBus",
    interface: "org.freedesktop.DBus",
    member: "Hello",
    args: &[],
};

/// An authenticated connection that said `Hello`.
#[derive(Debug)]
pub(crate) struct Connection {
    stream: UnixStream,
    address: String,
    serial: Cell<u32>,
    timeout: Duration,
}

impl Connection {
    /// Connects to the first reachable socket of `address`, authenticates
    /// and says `Hello`, each step within `timeout`.
    pub(crate) fn open(address: &str, timeout: Duration) -> Result<Connection, FirewalldError> {
        let mut last = None;
        let mut stream = None;
        for socket in address::parse(address)? {
            match UnixStream::connect_addr(&socket) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let unreachable = |source| FirewalldError::Unreachable {
            address: address.to_owned(),
            source,
        };
        let stream = match (stream, last) {
            (Some(s), _) => s,
            (None, Some(e)) => return Err(unreachable(e)),
            (None, None) => return Err(unreachable(io::ErrorKind::NotFound.into())),
        };
        let conn = Connection {
            stream,
            address: address.to_owned(),
            serial: Cell::new(0),
            timeout,
        };
        conn.authenticate()?;
        let hello = conn.call(&BUS)?;
        if hello.first_string().is_none() {
            return Err(FirewalldError::Malformed {
                reason: format!("Hello answered with signature {:?}", hello.signature),
            });
        }
        Ok(conn)
    }

    fn authenticate(&self) -> Result<(), FirewalldError> {
        let deadline = Instant::now() + self.timeout;
        let uid = nix::unistd::geteuid().as_raw().to_string();
        let hex: String = uid.bytes().map(|b| format!("{b:02x}")).collect();
        self.write_all(
            format!("\0AUTH EXTERNAL {hex}\r\n").as_bytes(),
            "AUTH",
            deadline,
        )?;
        let answer = self.read_line(deadline)?;
        if !answer.starts_with("OK ") {
            return Err(FirewalldError::Auth { answer });
        }
        self.write_all(b"BEGIN\r\n", "BEGIN", deadline)
    }

    /// One line of the authentication protocol, without its `\r\n`. Read a
    /// byte at a time: the server sends nothing after it until `BEGIN`, so
    /// nothing may be read ahead.
    fn read_line(&self, deadline: Instant) -> Result<String, FirewalldError> {
        let mut line = Vec::new();
        loop {
            let mut byte = [0u8];
            self.read_exact(&mut byte, "AUTH", deadline)?;
            if byte[0] == b'\n' {
                break;
            }
            if line.len() == MAX_AUTH_LINE {
                return Err(FirewalldError::Malformed {
                    reason: format!("an authentication line longer than {MAX_AUTH_LINE} bytes"),
                });
            }
            line.push(byte[0]);
        }
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        Ok(String::from_utf8_lossy(&line).into_owned())
    }

    /// Calls a method and waits for its answer: the method return, or its
    /// error as [`FirewalldError::Remote`].
    pub(crate) fn call(&self, call: &Call) -> Result<Message, FirewalldError> {
        let method = format!("{}.{}", call.interface, call.member);
        let deadline = Instant::now() + self.timeout;
        let serial = self.serial.get().wrapping_add(1).max(1);
        self.serial.set(serial);
        let bytes = call.encode(serial)?;
        self.write_all(&bytes, &method, deadline)?;
        for _ in 0..=MAX_SKIPPED {
            let msg = self.receive(&method, deadline)?;
            if msg.reply_serial != Some(serial) {
                continue;
            }
            match msg.kind {
                Kind::MethodReturn => return Ok(msg),
                Kind::Error => {
                    return Err(FirewalldError::Remote {
                        args: call
                            .args
                            .iter()
                            .map(|a| format!("{a:?}"))
                            .collect::<Vec<_>>()
                            .join(", "),
                        method,
                        name: msg.error_name.clone().unwrap_or_default(),
                        message: msg.first_string().unwrap_or_default(),
                    })
                }
                Kind::MethodCall | Kind::Other(_) => continue,
            }
        }
        Err(FirewalldError::Malformed {
            reason: format!("no answer to {method} among {MAX_SKIPPED} messages"),
        })
    }

    fn receive(&self, method: &str, deadline: Instant) -> Result<Message, FirewalldError> {
        let mut prefix = [0u8; wire::PREFIX_LEN];
        self.read_exact(&mut prefix, method, deadline)?;
        let total = wire::total_len(&prefix)?;
        let mut bytes = vec![0u8; total];
        bytes[..wire::PREFIX_LEN].copy_from_slice(&prefix);
        self.read_exact(&mut bytes[wire::PREFIX_LEN..], method, deadline)?;
        Message::decode(&bytes)
    }

    fn read_exact(
        &self,
        buf: &mut [u8],
        method: &str,
        deadline: Instant,
    ) -> Result<(), FirewalldError> {
        let mut done = 0;
        while done < buf.len() {
            let left = self.time_left(method, deadline)?;
            self.stream
                .set_read_timeout(Some(left))
                .map_err(|e| self.broken(e))?;
            match (&self.stream).read(&mut buf[done..]) {
                Ok(0) => return Err(self.broken(io::ErrorKind::UnexpectedEof.into())),
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if is_timeout(&e) => {}
                Err(e) => return Err(self.broken(e)),
            }
        }
        Ok(())
    }

    fn write_all(
        &self,
        mut buf: &[u8],
        method: &str,
        deadline: Instant,
    ) -> Result<(), FirewalldError> {
        while !buf.is_empty() {
            let left = self.time_left(method, deadline)?;
            self.stream
                .set_write_timeout(Some(left))
                .map_err(|e| self.broken(e))?;
            match (&self.stream).write(buf) {
                Ok(0) => return Err(self.broken(io::ErrorKind::WriteZero.into())),
                Ok(n) => buf = &buf[n..],
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if is_timeout(&e) => {}
                Err(e) => return Err(self.broken(e)),
            }
        }
        Ok(())
    }

    /// The time left before `deadline`, or the timeout error when none is.
    fn time_left(&self, method: &str, deadline: Instant) -> Result<Duration, FirewalldError> {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|left| !left.is_zero())
            .ok_or_else(|| FirewalldError::Timeout {
                method: method.to_owned(),
                waited: self.timeout,
            })
    }

    fn broken(&self, source: io::Error) -> FirewalldError {
        FirewalldError::Unreachable {
            address: self.address.clone(),
            source,
        }
    }
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader};
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixListener};
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::thread::JoinHandle;

    use super::*;
    use crate::firewalld::wire::test_reply;

    /// A bus of the test's own on an abstract socket: it answers the
    /// authentication with `auth_answer`, then runs `serve` on each call's
    /// serial until it returns `None`.
    struct FakeBus {
        address: String,
        thread: JoinHandle<()>,
    }

    type Serve = Box<dyn FnMut(u32) -> Option<Vec<u8>> + Send>;

    impl FakeBus {
        fn start(auth_answer: &'static str, mut serve: Serve) -> FakeBus {
            static NEXT: AtomicU32 = AtomicU32::new(0);
            let name = format!(
                "cni-fake-bus-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            );
            let listener =
                UnixListener::bind_addr(&SocketAddr::from_abstract_name(&name).unwrap()).unwrap();
            let thread = std::thread::spawn(move || {
                let (stream, _) = listener.accept().unwrap();
                // A client that misbehaves fails the test, never hangs it.
                stream
                    .set_read_timeout(Some(Duration::from_secs(10)))
                    .unwrap();
                let mut reader = BufReader::new(&stream);
                let mut line = Vec::new();
                reader.read_until(b'\n', &mut line).unwrap();
                assert!(line.starts_with(b"\0AUTH EXTERNAL "), "{line:?}");
                (&stream).write_all(auth_answer.as_bytes()).unwrap();
                if !auth_answer.starts_with("OK") {
                    return;
                }
                line.clear();
                reader.read_until(b'\n', &mut line).unwrap();
                assert_eq!(line, b"BEGIN\r\n");
                loop {
                    let mut prefix = [0u8; wire::PREFIX_LEN];
                    if reader.read_exact(&mut prefix).is_err() {
                        return;
                    }
                    let mut rest = vec![0u8; wire::total_len(&prefix).unwrap() - prefix.len()];
                    reader.read_exact(&mut rest).unwrap();
                    let serial = u32::from_le_bytes(prefix[8..12].try_into().unwrap());
                    match serve(serial) {
                        Some(bytes) => (&stream).write_all(&bytes).unwrap(),
                        None => {
                            // Silent: hold the connection open until the
                            // client gives up and closes it.
                            let _ = reader.read(&mut [0u8; 1]);
                            return;
                        }
                    }
                }
            });
            FakeBus {
                address: format!("unix:abstract={name}"),
                thread,
            }
        }

        fn join(self) {
            self.thread.join().unwrap();
        }
    }

    /// A string body: length, bytes, NUL.
    fn string_body(s: &str) -> Vec<u8> {
        let mut body = (s.len() as u32).to_le_bytes().to_vec();
        body.extend(s.as_bytes());
        body.push(0);
        body
    }

    const SHORT: Duration = Duration::from_millis(300);

    #[test]
    fn replies_are_matched_to_their_call_past_signals_and_other_replies() {
        let bus = FakeBus::start(
            "OK 0123456789abcdef\r\n",
            Box::new(|serial| {
                // A signal (NameAcquired), a stray reply, then ours.
                let mut out = test_reply(4, 0, "s", &string_body(":1.5"));
                out.extend(test_reply(2, serial + 100, "b", &1u32.to_le_bytes()));
                out.extend(test_reply(2, serial, "s", &string_body(":1.5")));
                Some(out)
            }),
        );
        let conn = Connection::open(&bus.address, SHORT).unwrap();
        let msg = conn.call(&BUS).unwrap();
        assert_eq!(msg.first_string().as_deref(), Some(":1.5"));
        drop(conn);
        bus.join();
    }

    #[test]
    fn an_error_reply_names_the_method_its_arguments_and_the_error() {
        let bus = FakeBus::start(
            "OK 0123456789abcdef\r\n",
            Box::new(|serial| {
                Some(if serial == 1 {
                    test_reply(2, serial, "s", &string_body(":1.5"))
                } else {
                    test_reply(3, serial, "s", &string_body("INVALID_ZONE: z"))
                })
            }),
        );
        let conn = Connection::open(&bus.address, SHORT).unwrap();
        let call = Call {
            member: "addSource",
            args: &["z", "10.0.0.1/32"],
            ..BUS
        };
        let err = conn.call(&call).unwrap_err();
        assert_eq!(
            err.to_string(),
            "org.freedesktop.DBus.addSource(\"z\", \"10.0.0.1/32\") failed: INVALID_ZONE: z"
        );
        drop(conn);
        bus.join();
    }

    #[test]
    fn a_bus_that_never_answers_times_out() {
        let bus = FakeBus::start("OK 0123456789abcdef\r\n", Box::new(|_| None));
        let started = Instant::now();
        let err = Connection::open(&bus.address, SHORT).unwrap_err();
        assert!(matches!(err, FirewalldError::Timeout { .. }), "{err:?}");
        assert!(started.elapsed() >= SHORT);
        assert!(
            err.to_string().contains("org.freedesktop.DBus.Hello"),
            "{err}"
        );
        bus.join();
    }

    #[test]
    fn a_refused_authentication_gives_the_bus_answer() {
        let bus = FakeBus::start("REJECTED EXTERNAL\r\n", Box::new(|_| None));
        let err = Connection::open(&bus.address, SHORT).unwrap_err();
        assert!(
            matches!(&err, FirewalldError::Auth { answer } if answer == "REJECTED EXTERNAL"),
            "{err:?}"
        );
        bus.join();
    }

    #[test]
    fn an_answer_longer_than_the_bound_is_refused_unread() {
        let bus = FakeBus::start(
            "OK 0123456789abcdef\r\n",
            Box::new(|serial| {
                let mut huge = test_reply(2, serial, "s", &string_body("x"));
                huge[4..8].copy_from_slice(&(wire::MAX_MESSAGE as u32).to_le_bytes());
                Some(huge)
            }),
        );
        let err = Connection::open(&bus.address, SHORT).unwrap_err();
        assert!(matches!(err, FirewalldError::Malformed { .. }), "{err:?}");
        bus.join();
    }
}
