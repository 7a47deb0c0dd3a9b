//! The token bucket filter (`tbf`): what it holds, how its options are
//! encoded (netlink-packet-route has no type for them), and the kernel's
//! arithmetic with them.
//!
//! # Arithmetic
//! A tbf has a rate (bytes per second), a bucket (`burst`, bytes) and a
//! queue limit (bytes). The kernel takes the bucket either as a time
//! (`tc_tbf_qopt.buffer`, in packet scheduler ticks, a `u32`: at most
//! 2^32 ticks of 64 ns, about 275 s of the rate) or, since Linux 3.13, as
//! bytes (`TCA_TBF_BURST`, a `u32`), from which it computes the time
//! itself in 64-bit nanoseconds. We send both, as `tc` does: the bytes,
//! which the kernel uses, and the ticks `tc` would compute (saturated).
//! All of it is integer arithmetic in `u128`, so nothing wraps.
//!
//! The reference bandwidth plugin sends only the ticks, computed in
//! floating point and converted to `u32` twice: a bucket of 4294967295
//! bits (containerd's default) at 8 Mbit/s is 537 s of rate, more than a
//! `u32` of ticks holds, and wraps to 262 MB (at 1 Mbit/s, to 125 MB).
//!
//! The kernel reports the bucket only as ticks (`tc_tbf_qopt.buffer`,
//! `u32`), so a bucket over about 275 s of rate is reported wrapped, by
//! `tc qdisc show` too; [`Tbf::params`] computes the value reported,
//! wrapped the same way, for CHECK to compare.

use std::time::Duration;

use netlink_packet_core::{DefaultNla, Nla, NlasIterator};

use crate::{NetError, Op};

const TCA_TBF_PARMS: u16 = 1;
const TCA_TBF_RATE64: u16 = 4;
const TCA_TBF_BURST: u16 = 6;
/// `TC_LINKLAYER_ETHERNET`, as `tc` sets it.
const TC_LINKLAYER_ETHERNET: u8 = 1;
/// `sizeof(struct tc_tbf_qopt)`: two `tc_ratespec` of 12 bytes, then
/// `limit`, `buffer`, `mtu`.
const QOPT_LEN: usize = 36;
/// The kernel's `PSCHED_SHIFT`: a tick is 2^6 ns (`PSCHED_TICKS2NS`).
const NS_PER_TICK_SHIFT: u32 = 6;

/// A token bucket filter as configured: `tc qdisc add dev LINK root
/// handle 1: tbf rate RATE burst BURST limit LIMIT`.
///
/// Go: `netlink.Tbf`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Tbf {
    /// Bytes per second (at least 1).
    pub rate: u64,
    /// The bucket, in bytes (at least 1): how much may pass at once.
    pub burst: u32,
    /// The queue, in bytes: what waits for tokens before being dropped.
    pub limit: u32,
}

/// A tbf as the kernel reports it (`tc_tbf_qopt` and `TCA_TBF_RATE64`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TbfParams {
    /// Bytes per second.
    pub rate: u64,
    /// The queue, in bytes.
    pub limit: u32,
    /// The bucket as a time, in packet scheduler ticks, wrapped to 32
    /// bits as the kernel reports it.
    pub buffer: u32,
}

impl Tbf {
    /// A tbf whose queue holds `latency` worth of `rate` beyond the
    /// bucket: `limit = rate × latency + burst`, as `tc .. tbf rate RATE
    /// burst BURST latency LATENCY` and the reference bandwidth plugin
    /// compute it. [`NetError::InvalidQdisc`] for a rate or bucket of 0
    /// bytes (the kernel refuses them with `EINVAL`) or a queue over
    /// `u32::MAX` bytes (the kernel's field).
    ///
    /// ```
    /// use std::time::Duration;
    /// use cni_net::tc::Tbf;
    ///
    /// let tbf = Tbf::with_latency(125_000, 10_000, Duration::from_millis(25))?;
    /// assert_eq!(tbf.limit, 3_125 + 10_000);
    /// assert!(Tbf::with_latency(0, 10_000, Duration::from_millis(25)).is_err());
    /// # Ok::<(), cni_net::NetError>(())
    /// ```
    pub fn with_latency(rate: u64, burst: u32, latency: Duration) -> Result<Tbf, NetError> {
        let invalid = |reason: String| NetError::InvalidQdisc {
            kind: "tbf",
            reason,
        };
        if rate == 0 {
            return Err(invalid("a rate of 0 bytes per second".into()));
        }
        if burst == 0 {
            return Err(invalid("a burst of 0 bytes".into()));
        }
        let queued = u128::from(rate) * latency.as_micros() / 1_000_000;
        let limit = queued + u128::from(burst);
        let limit = u32::try_from(limit).map_err(|_| {
            invalid(format!(
                "a queue of {limit} bytes ({queued} for the latency, {burst} for the burst) \
                 exceeds the kernel's limit of {} bytes",
                u32::MAX
            ))
        })?;
        Ok(Tbf { rate, burst, limit })
    }

    /// [`Tbf::with_latency`] from the units every CNI configuration
    /// speaks, bits: bandwidth's `ingressRate`/`ingressBurst` and
    /// `egressRate`/`egressBurst`, and the `bandwidth` capability's
    /// `rate`/`burst`, are bits per second and bits. Each is divided by 8,
    /// dropping the remainder, as the reference bandwidth plugin does
    /// (`rateInBytes := rateInBits / 8`). [`NetError::InvalidQdisc`] for a
    /// rate under 8 bits per second or a bucket under 8 bits (0 bytes), a
    /// bucket over `u32::MAX` bytes, or what [`Tbf::with_latency`] refuses.
    ///
    /// ```
    /// use std::time::Duration;
    /// use cni_net::tc::Tbf;
    ///
    /// let latency = Duration::from_millis(25);
    /// // 1 Mbit/s with an 80 kbit bucket: 125 000 bytes/s, 10 000 bytes.
    /// let tbf = Tbf::from_bits(1_000_000, 80_000, latency)?;
    /// assert_eq!(tbf, Tbf::with_latency(125_000, 10_000, latency)?);
    /// assert!(Tbf::from_bits(7, 80_000, latency).is_err());
    /// # Ok::<(), cni_net::NetError>(())
    /// ```
    ///
    /// Go: the conversion in plugins `meta/bandwidth`'s `createTBF`.
    pub fn from_bits(rate_bits: u64, burst_bits: u64, latency: Duration) -> Result<Tbf, NetError> {
        let invalid = |reason: String| NetError::InvalidQdisc {
            kind: "tbf",
            reason,
        };
        if rate_bits < 8 {
            return Err(invalid(format!(
                "a rate of {rate_bits} bits per second, less than one byte"
            )));
        }
        if burst_bits < 8 {
            return Err(invalid(format!(
                "a burst of {burst_bits} bits, less than one byte"
            )));
        }
        let burst = u32::try_from(burst_bits / 8).map_err(|_| {
            invalid(format!(
                "a burst of {burst_bits} bits exceeds the kernel's limit of {} bytes",
                u32::MAX
            ))
        })?;
        Tbf::with_latency(rate_bits / 8, burst, latency)
    }

    /// What the kernel will report for this tbf (see the module's
    /// arithmetic): the bucket's time as the kernel computes it
    /// (`psched_l2t_ns`), in ticks, wrapped to 32 bits.
    pub fn params(&self) -> TbfParams {
        TbfParams {
            rate: self.rate,
            limit: self.limit,
            buffer: (kernel_burst_ns(self.rate, self.burst) >> NS_PER_TICK_SHIFT) as u32,
        }
    }

    /// `TCA_OPTIONS` of a tbf: the parameters, the bucket in bytes, and
    /// the 64-bit rate when it exceeds 32 bits.
    pub(crate) fn options(&self, clock: &Psched) -> Vec<DefaultNla> {
        let rate32 = u32::try_from(self.rate).unwrap_or(u32::MAX);
        let buffer = u32::try_from(clock.ticks(self.burst, self.rate)).unwrap_or(u32::MAX);
        let mut qopt = [0u8; QOPT_LEN];
        // rate: cell_log, linklayer, overhead, cell_align, mpu, rate.
        qopt[1] = TC_LINKLAYER_ETHERNET;
        qopt[8..12].copy_from_slice(&rate32.to_ne_bytes());
        // peakrate stays zero: no peak rate.
        qopt[24..28].copy_from_slice(&self.limit.to_ne_bytes());
        qopt[28..32].copy_from_slice(&buffer.to_ne_bytes());
        let mut options = vec![
            DefaultNla::new(TCA_TBF_PARMS, qopt.to_vec()),
            DefaultNla::new(TCA_TBF_BURST, self.burst.to_ne_bytes().to_vec()),
        ];
        if self.rate > u64::from(u32::MAX) {
            options.push(DefaultNla::new(
                TCA_TBF_RATE64,
                self.rate.to_ne_bytes().to_vec(),
            ));
        }
        options
    }
}

impl TbfParams {
    /// Reads the kernel's `TCA_OPTIONS` of a tbf (its nested attributes,
    /// as netlink-packet-route hands them over, undecoded); `None` when
    /// `TCA_TBF_PARMS` is missing or short.
    pub(crate) fn parse(options: &DefaultNla) -> Option<TbfParams> {
        let mut raw = vec![0; options.value_len()];
        options.emit_value(&mut raw);
        let mut params = None;
        let mut rate64 = None;
        for nla in NlasIterator::new(&raw[..]) {
            let nla = nla.ok()?;
            let value = nla.value();
            match nla.kind() {
                TCA_TBF_PARMS if value.len() >= QOPT_LEN => {
                    let u32_at = |at: usize| {
                        u32::from_ne_bytes(value[at..at + 4].try_into().unwrap_or_default())
                    };
                    params = Some(TbfParams {
                        rate: u64::from(u32_at(8)),
                        limit: u32_at(24),
                        buffer: u32_at(28),
                    });
                }
                TCA_TBF_RATE64 if value.len() >= 8 => {
                    rate64 = Some(u64::from_ne_bytes(
                        value[..8].try_into().unwrap_or_default(),
                    ));
                }
                _ => {}
            }
        }
        let mut params = params?;
        if let Some(rate) = rate64 {
            params.rate = params.rate.max(rate);
        }
        Some(params)
    }
}

/// The time, in nanoseconds, the kernel gives a bucket of `burst` bytes at
/// `rate` bytes per second: `psched_ratecfg_precompute` then
/// `psched_l2t_ns` (no overhead, no minimum packet unit, not ATM).
fn kernel_burst_ns(rate: u64, burst: u32) -> u64 {
    let (mut mult, mut shift) = (1u32, 0u32);
    let mut factor: u64 = 1_000_000_000;
    // A rate of 0 keeps mult 1, shift 0, as in the kernel.
    while let Some(quotient) = factor.checked_div(rate) {
        // The kernel keeps the quotient in a u32.
        mult = quotient as u32;
        if mult & (1 << 31) != 0 || factor & (1 << 63) != 0 {
            break;
        }
        factor <<= 1;
        shift += 1;
    }
    (u64::from(burst) * u64::from(mult)) >> shift
}

/// The kernel's packet scheduler clock, from `/proc/net/psched`: how `tc`
/// and the reference convert a time into ticks.
///
/// Go: `netlink.TickInUsec` (its `initClock`); iproute2 `tc_core_init`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Psched {
    t2us: u64,
    us2t: u64,
    clock_res: u64,
}

impl Psched {
    /// Where the kernel publishes its clock.
    pub const PATH: &'static str = "/proc/net/psched";

    /// The clock of the running kernel.
    pub fn read() -> Result<Psched, NetError> {
        let text = std::fs::read_to_string(Psched::PATH)
            .map_err(NetError::kernel(Op::ReadPsched, Psched::PATH))?;
        Psched::parse(&text).ok_or_else(|| {
            NetError::kernel(Op::ReadPsched, Psched::PATH)(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("not four hexadecimal numbers, the first three non-zero: {text:?}"),
            ))
        })
    }

    /// Reads the file's four hexadecimal numbers (`t2us us2t clock_res
    /// hz`); `None` unless the first three are there and not zero.
    ///
    /// ```
    /// use cni_net::tc::Psched;
    ///
    /// assert!(Psched::parse("000003e8 00000040 000f4240 3b9aca00\n").is_some());
    /// assert!(Psched::parse("000003e8 00000000").is_none());
    /// ```
    pub fn parse(text: &str) -> Option<Psched> {
        let mut numbers = text
            .split_whitespace()
            .map(|n| u32::from_str_radix(n, 16).ok().map(u64::from));
        let mut t2us = numbers.next()??;
        let us2t = numbers.next()??;
        let clock_res = numbers.next()??;
        if t2us == 0 || us2t == 0 || clock_res == 0 {
            return None;
        }
        // What tc and Go do for kernels whose clock runs in nanoseconds.
        if clock_res == 1_000_000_000 {
            t2us = us2t;
        }
        Some(Psched {
            t2us,
            us2t,
            clock_res,
        })
    }

    /// Ticks to send `bytes` at `rate` bytes per second, rounded down, as
    /// `tc_calc_xmittime` computes them (without its floating point):
    /// `bytes / rate` seconds, at `t2us / us2t × clock_res / 10^6` ticks
    /// per microsecond.
    pub fn ticks(&self, bytes: u32, rate: u64) -> u128 {
        let numerator = u128::from(bytes) * u128::from(self.t2us) * u128::from(self.clock_res);
        numerator / (u128::from(rate.max(1)) * u128::from(self.us2t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This machine's kernel (6.18) and most others: 64 ns ticks.
    const CLOCK: &str = "000003e8 00000040 000f4240 3b9aca00";

    #[test]
    fn ticks_are_what_tc_computes() {
        let clock = Psched::parse(CLOCK).unwrap();
        // tc: 10000 bytes at 1 MB/s are 10 ms = 156250 ticks of 64 ns.
        assert_eq!(clock.ticks(10_000, 1_000_000), 156_250);
        let params = Tbf::with_latency(1_000_000, 10_000, Duration::from_millis(25))
            .unwrap()
            .params();
        assert_eq!(params.buffer, 156_250);
        assert_eq!(params.limit, 25_000 + 10_000);
    }

    #[test]
    fn a_tbf_from_bits_is_the_tbf_of_the_same_rate_and_bucket_in_bytes() {
        let latency = Duration::from_millis(25);
        for (rate_bits, burst_bits) in [(8, 8), (1_000_000, 80_000), (8_000_001, 4_294_967_295)] {
            assert_eq!(
                Tbf::from_bits(rate_bits, burst_bits, latency).unwrap(),
                Tbf::with_latency(rate_bits / 8, (burst_bits / 8) as u32, latency).unwrap(),
                "{rate_bits} bit/s, {burst_bits} bit"
            );
        }
        // Less than a byte, or a bucket the kernel's u32 cannot hold.
        for (rate_bits, burst_bits) in [(7, 80_000), (1_000_000, 7), (1_000_000, 8 << 32)] {
            assert!(Tbf::from_bits(rate_bits, burst_bits, latency).is_err());
        }
    }

    #[test]
    fn a_bucket_of_4294967295_bits_does_not_wrap_into_a_smaller_one() {
        // containerd's default burst at 8 Mbit/s: 537 s of rate. The
        // reference's ticks wrap to a 262 MB bucket; the kernel gets the
        // bytes here, whole, and would compute 537 s.
        let burst = (4_294_967_295u64 / 8) as u32;
        let tbf = Tbf::with_latency(1_000_000, burst, Duration::from_millis(25)).unwrap();
        assert_eq!(tbf.burst, 536_870_911);
        assert_eq!(kernel_burst_ns(tbf.rate, tbf.burst), 536_870_911_000);
        let clock = Psched::parse(CLOCK).unwrap();
        assert_eq!(clock.ticks(tbf.burst, tbf.rate), 8_388_607_984);
        let options = tbf.options(&clock);
        let burst_attr = options.iter().find(|o| o.kind() == TCA_TBF_BURST).unwrap();
        let mut raw = [0u8; 4];
        burst_attr.emit_value(&mut raw);
        assert_eq!(u32::from_ne_bytes(raw), 536_870_911);
        // What the kernel reports, wrapped as it wraps it (and as `tc
        // qdisc show` then prints 261993004b).
        assert_eq!(tbf.params().buffer, (8_388_607_984u64 % (1 << 32)) as u32);
    }

    #[test]
    fn a_queue_over_4_gib_is_refused_naming_its_parts() {
        let err = Tbf::with_latency(u64::MAX / 8, 1, Duration::from_millis(25)).unwrap_err();
        assert!(matches!(err, NetError::InvalidQdisc { .. }), "{err}");
        assert!(
            err.to_string().contains("exceeds the kernel's limit"),
            "{err}"
        );
        assert!(Tbf::with_latency(1, 0, Duration::ZERO).is_err());
    }

    #[test]
    fn options_read_back_as_the_kernel_reports_them() {
        let clock = Psched::parse(CLOCK).unwrap();
        for rate in [1_000_000, 1 << 33] {
            let tbf = Tbf::with_latency(rate, 80_000, Duration::from_millis(25)).unwrap();
            let nested: Vec<u8> = {
                use netlink_packet_core::Emitable;
                let options = tbf.options(&clock);
                let mut buf = vec![0; options.as_slice().buffer_len()];
                options.as_slice().emit(&mut buf);
                buf
            };
            let read = TbfParams::parse(&DefaultNla::new(2, nested)).unwrap();
            assert_eq!(read.rate, rate);
            assert_eq!(read.limit, tbf.limit);
            assert_eq!(
                u128::from(read.buffer),
                clock.ticks(80_000, rate).min(u32::MAX.into())
            );
        }
    }

    #[test]
    fn a_nanosecond_clock_counts_ticks_as_tc_does() {
        // Kernels with clock_res 10^9 print t2us = us2t: tc then counts
        // 1000 ticks per microsecond.
        let clock = Psched::parse("00000040 00000040 3b9aca00 3b9aca00").unwrap();
        assert_eq!(clock.ticks(1_000, 1_000_000), 1_000_000);
    }
}
