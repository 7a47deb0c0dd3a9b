//! The bandwidth entry, from the configuration or `runtimeConfig`, and
//! its validation into the tbfs to install.

use std::time::Duration;

use cni_net::tc::Tbf;
use cni_types::{Error, NetConf};
use serde::Deserialize;
use serde_json::{Number, Value};

/// The queue beyond the bucket: 25 ms of the rate, as the reference's
/// `latencyInMillis`.
pub const LATENCY: Duration = Duration::from_millis(25);

/// The bucket the reference refuses from (`burst/8 >= math.MaxUint32`):
/// the kernel's `TCA_TBF_BURST` is a `u32` of bytes.
const MAX_BURST_BYTES: u64 = u32::MAX as u64;

/// A bandwidth entry: "Rates are in bits per second, burst values are in
/// bits" (CONVENTIONS.md). The plugin's own fields beside the standard
/// ones, and `runtimeConfig.bandwidth`'s layout.
///
/// Numbers are kept as given and checked in [`Shaping::read`], so that a
/// negative or fractional one is code 7 naming its field rather than a
/// decoding failure.
///
/// Go: `BandwidthEntry`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Fields {
    /// Ingress rate, bits per second: what the container receives.
    #[serde(rename = "ingressRate", default)]
    pub ingress_rate: Option<Number>,
    /// Ingress burst, bits.
    #[serde(rename = "ingressBurst", default)]
    pub ingress_burst: Option<Number>,
    /// Egress rate, bits per second: what the container sends.
    #[serde(rename = "egressRate", default)]
    pub egress_rate: Option<Number>,
    /// Egress burst, bits.
    #[serde(rename = "egressBurst", default)]
    pub egress_burst: Option<Number>,
    /// Subnets whose traffic is left unshaped: refused unless empty (the
    /// reference reverted the field before v1.6.0 and ignores it).
    #[serde(rename = "unshapedSubnets", default)]
    pub unshaped_subnets: Option<Value>,
    /// The only subnets whose traffic is shaped: refused unless empty.
    #[serde(rename = "shapedSubnets", default)]
    pub shaped_subnets: Option<Value>,
}

impl Fields {
    fn is_given(&self) -> bool {
        self.ingress_rate.is_some()
            || self.ingress_burst.is_some()
            || self.egress_rate.is_some()
            || self.egress_burst.is_some()
    }
}

/// What to install: a tbf per shaped direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Shaping {
    /// What the container receives: a tbf on the host end of its veth.
    pub ingress: Option<Tbf>,
    /// What the container sends: a tbf on the ifb its traffic is
    /// redirected to.
    pub egress: Option<Tbf>,
}

impl Shaping {
    /// The entry in force, validated: the configuration's own keys when
    /// it has any of the four, else `runtimeConfig.bandwidth` (the
    /// reference's `getBandwidth`). Code 7 naming the field for a value
    /// that is not a whole number of bits, a rate without a burst or the
    /// reverse, a burst of 4 GB or more (the reference's rules), or a tbf
    /// the kernel cannot hold (a rate or burst under 8 bits, a queue over
    /// 4 GiB).
    pub fn read(conf: &NetConf<Fields>) -> Result<Shaping, Error> {
        refuse_subnets("", &conf.plugin)?;
        let runtime;
        let (fields, section) = if conf.plugin.is_given() {
            (&conf.plugin, "")
        } else {
            // Read with Go's key rules: containerd spells them as Go does
            // (IngressRate).
            let from_runtime = conf
                .runtime_config
                .as_ref()
                .map(|rc| rc.get::<Fields>("bandwidth"))
                .transpose()?
                .flatten();
            match from_runtime {
                Some(fields) => {
                    refuse_subnets("runtimeConfig.bandwidth.", &fields)?;
                    runtime = fields;
                    (&runtime, "runtimeConfig.bandwidth.")
                }
                None => return Ok(Shaping::default()),
            }
        };
        Ok(Shaping {
            ingress: direction(
                section,
                ("ingressRate", &fields.ingress_rate),
                ("ingressBurst", &fields.ingress_burst),
            )?,
            egress: direction(
                section,
                ("egressRate", &fields.egress_rate),
                ("egressBurst", &fields.egress_burst),
            )?,
        })
    }

    /// Whether nothing is shaped (the reference's `isZero`).
    pub fn is_none(&self) -> bool {
        self.ingress.is_none() && self.egress.is_none()
    }
}

/// Refuses `unshapedSubnets` and `shapedSubnets` holding anything (code
/// 7 naming the field): this plugin shapes all of a direction's traffic,
/// and shaping what the operator asked to leave alone, silently, is the
/// one wrong answer.
///
/// The reference merged them for v1.6.0 (containernetworking/plugins
/// #921: u32 filters sorting destinations into a shaped and an unshaped
/// htb class) and reverted that before the release (d44bbf28); v1.6.0 to
/// v1.9 decode neither and shape everything. Empty lists and `null` ask
/// for nothing and pass.
fn refuse_subnets(section: &str, fields: &Fields) -> Result<(), Error> {
    let named = [
        ("unshapedSubnets", &fields.unshaped_subnets),
        ("shapedSubnets", &fields.shaped_subnets),
    ];
    for (field, value) in named {
        let empty = match value {
            None | Some(Value::Null) => true,
            Some(Value::Array(subnets)) => subnets.is_empty(),
            Some(_) => false,
        };
        if !empty {
            return Err(Error::invalid_config(
                &format!("{section}{field}"),
                "not supported: every packet of a shaped direction is shaped (the reference \
                 reverted this field before v1.6.0 and ignores it)",
            ));
        }
    }
    Ok(())
}

/// A named number of the entry.
type Field<'a> = (&'static str, &'a Option<Number>);

/// The tbf of one direction, `None` when both its numbers are 0.
fn direction(section: &str, rate: Field, burst: Field) -> Result<Option<Tbf>, Error> {
    let name = |field: &str| format!("{section}{field}");
    let bits = |(field, value): Field| match value {
        None => Ok(0),
        Some(n) => n.as_u64().ok_or_else(|| {
            Error::invalid_config(
                &name(field),
                format_args!("{n}: must be a whole number from 0 to {}", u64::MAX),
            )
        }),
    };
    let (rate_bits, burst_bits) = (bits(rate)?, bits(burst)?);
    match (rate_bits, burst_bits) {
        (0, 0) => return Ok(None),
        (_, 0) => {
            return Err(Error::invalid_config(
                &name(burst.0),
                "if rate is set, burst must also be set",
            ))
        }
        (0, _) => {
            return Err(Error::invalid_config(
                &name(rate.0),
                "if burst is set, rate must also be set",
            ))
        }
        _ => {}
    }
    let (rate_bytes, burst_bytes) = (rate_bits / 8, burst_bits / 8);
    if burst_bytes >= MAX_BURST_BYTES {
        return Err(Error::invalid_config(
            &name(burst.0),
            format_args!("{burst_bits}: burst cannot be more than 4GB"),
        ));
    }
    if rate_bytes == 0 {
        return Err(Error::invalid_config(
            &name(rate.0),
            format_args!("{rate_bits}: less than 8 bits per second, the kernel's least rate"),
        ));
    }
    if burst_bytes == 0 {
        return Err(Error::invalid_config(
            &name(burst.0),
            format_args!("{burst_bits}: less than 8 bits, the kernel's least burst"),
        ));
    }
    // Below MAX_BURST_BYTES, checked above.
    let burst_bytes = burst_bytes as u32;
    Tbf::with_latency(rate_bytes, burst_bytes, LATENCY)
        .map(Some)
        .map_err(|e| Error::invalid_config(&format!("{} and {}", name(rate.0), name(burst.0)), e))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn read(extra: serde_json::Value) -> Result<Shaping, Error> {
        let mut conf = json!({"cniVersion": "1.0.0", "name": "n", "type": "bandwidth"});
        conf.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        Shaping::read(&NetConf::from_json(conf.to_string().as_bytes()).unwrap())
    }

    #[test]
    fn rates_and_bursts_in_bits_become_tbfs_in_bytes() {
        let shaping = read(json!({"ingressRate": 8_000_000, "ingressBurst": 80_000})).unwrap();
        let tbf = shaping.ingress.unwrap();
        assert_eq!(
            (tbf.rate, tbf.burst, tbf.limit),
            (1_000_000, 10_000, 35_000)
        );
        assert!(shaping.egress.is_none());
        assert!(read(json!({})).unwrap().is_none());
        assert!(read(json!({"egressRate": 0, "egressBurst": 0}))
            .unwrap()
            .is_none());
    }

    #[test]
    fn the_configurations_own_entry_wins_over_runtime_config_as_in_the_reference() {
        let both = json!({"ingressRate": 8_000, "ingressBurst": 800,
            "runtimeConfig": {"bandwidth": {"ingressRate": 16_000, "ingressBurst": 1_600,
                                            "egressRate": 16_000, "egressBurst": 1_600}}});
        let shaping = read(both).unwrap();
        assert_eq!(shaping.ingress.unwrap().rate, 1_000);
        assert!(shaping.egress.is_none());
        let runtime_only = json!({"runtimeConfig": {"bandwidth":
            {"egressRate": 16_000, "egressBurst": 1_600}}});
        assert_eq!(read(runtime_only).unwrap().egress.unwrap().rate, 2_000);
    }

    #[test]
    fn containerds_4294967295_bit_burst_is_a_536870911_byte_bucket() {
        let shaping = read(json!({"runtimeConfig": {"bandwidth":
            {"ingressRate": 8_000_000, "ingressBurst": 4_294_967_295u64}}}))
        .unwrap();
        assert_eq!(shaping.ingress.unwrap().burst, 536_870_911);
    }

    #[test]
    fn containerds_go_spelled_keys_are_read_as_the_reference_reads_them() {
        let shaping = read(json!({"runtimeConfig": {"bandwidth":
            {"IngressRate": 8_000_000, "IngressBurst": 4_294_967_295u64,
             "EgressRate": 16_000_000, "EgressBurst": 4_294_967_295u64}}}))
        .unwrap();
        assert_eq!(shaping.ingress.unwrap().rate, 1_000_000);
        assert_eq!(shaping.egress.unwrap().rate, 2_000_000);
    }

    #[test]
    fn shaped_or_unshaped_subnets_are_refused_naming_the_field_rather_than_ignored() {
        let subnets = json!(["10.0.0.0/8"]);
        let cases = [
            (
                json!({"ingressRate": 8_000, "ingressBurst": 800, "unshapedSubnets": subnets}),
                "invalid unshapedSubnets",
            ),
            (
                json!({"shapedSubnets": subnets, "runtimeConfig": {"bandwidth":
                    {"egressRate": 16_000, "egressBurst": 1_600}}}),
                "invalid shapedSubnets",
            ),
            (
                json!({"runtimeConfig": {"bandwidth": {"egressRate": 16_000,
                    "egressBurst": 1_600, "unshapedSubnets": subnets}}}),
                "invalid runtimeConfig.bandwidth.unshapedSubnets",
            ),
        ];
        for (conf, msg) in cases {
            let err = read(conf.clone()).unwrap_err();
            assert_eq!(err.code, cni_types::Code::INVALID_NETWORK_CONFIG, "{conf}");
            assert_eq!(err.msg, msg, "{conf}");
        }
        let asks_nothing = json!({"ingressRate": 8_000, "ingressBurst": 800,
            "unshapedSubnets": [], "shapedSubnets": null});
        assert_eq!(read(asks_nothing).unwrap().ingress.unwrap().rate, 1_000);
    }

    #[test]
    fn each_invalid_entry_is_code_7_naming_its_field() {
        let cases = [
            (
                json!({"ingressRate": 10}),
                "invalid ingressBurst",
                "if rate is set",
            ),
            (
                json!({"egressBurst": 10}),
                "invalid egressRate",
                "if burst is set",
            ),
            (
                json!({"ingressRate": 0, "ingressBurst": 80}),
                "invalid ingressRate",
                "if burst",
            ),
            (
                json!({"ingressRate": -1, "ingressBurst": 80}),
                "invalid ingressRate",
                "-1",
            ),
            (
                json!({"egressRate": 1.5, "egressBurst": 80}),
                "invalid egressRate",
                "1.5",
            ),
            (
                json!({"egressRate": 1000, "egressBurst": 34_359_738_360u64}),
                "invalid egressBurst",
                "cannot be more than 4GB",
            ),
            (
                json!({"ingressRate": 7, "ingressBurst": 80}),
                "invalid ingressRate",
                "least rate",
            ),
            (
                json!({"ingressRate": 8, "ingressBurst": 7}),
                "invalid ingressBurst",
                "least burst",
            ),
            (
                json!({"ingressRate": u64::MAX, "ingressBurst": 80}),
                "invalid ingressRate and ingressBurst",
                "exceeds the kernel's limit",
            ),
            (
                json!({"runtimeConfig": {"bandwidth": {"egressRate": -8, "egressBurst": 8}}}),
                "invalid runtimeConfig.bandwidth.egressRate",
                "-8",
            ),
        ];
        for (conf, msg, details) in cases {
            let err = read(conf.clone()).unwrap_err();
            assert_eq!(err.code, cni_types::Code::INVALID_NETWORK_CONFIG, "{conf}");
            assert_eq!(err.msg, msg, "{conf}");
            assert!(err.details.contains(details), "{conf}: {err:?}");
        }
    }
}
