//! Conforming variants: builds of this host that each make ONE other choice
//! the profile allows (PROFILE.md "Conforming variants"). Mutants prove the
//! suite catches broken hosts; variants prove it certifies correct hosts
//! that chose differently. `suite/tests/it/variant_matrix.rs` runs the whole
//! suite against each one; `scenarios/variants.json` says, per variant,
//! which section allows the choice, which profiles must certify it and
//! which `strict` requirements pin the reference host's own choice.
//!
//! A variant is nothing but a value of [`Choices`] (and, for `seams-off`
//! and `core-only`, the seams switch): the engine and the HTTP layer read
//! those in every build. Only this registry and the `--variant` flag are
//! this crate's.
//!
//! Every variant makes one choice, but `core-only`: it makes every choice
//! that narrows what a host offers, at once, down to what `core` needs (its
//! own judge, one mode, no seams, no reported runs, no advertised egress
//! policy), so the matrix shows such a host is certified in `core` and in
//! nothing else, each other profile saying why.

use goalpost_host::choices::{
    ArmRequestBody, ArmlessSchedule, AttentionBody, AttentionOffer, Choices,
    ConfidenceWithoutVerdict, CreateStatus, EgressPolicy, ErrorCodes, EscalatedContinue, PauseWake,
    ReportedRuns, Unappliable, WebhookSigning,
};
use goalpost_host::config::Config;
use goalpost_host::domain::{Check, CostReading, Mode};

macro_rules! registry {
    ($( $variant:ident $name:literal ),* $(,)?) => {
        /// Every conforming variant this host knows.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Variant {
            $($variant,)*
        }

        /// Every variant, in declaration order.
        pub const REGISTRY: &[Variant] = &[$(Variant::$variant,)*];

        impl Variant {
            /// What `--variant` takes: kebab-case, unique.
            pub fn name(self) -> &'static str {
                match self {
                    $(Variant::$variant => $name,)*
                }
            }
        }
    };
}

registry! {
    Create200 "create-200",
    AttentionStatusOnly "attention-status-only",
    EnvironmentalConfidenceNull "environmental-confidence-null",
    CostExceeds "cost-exceeds",
    EscalatedContinueTerminal "escalated-continue-terminal",
    OpenwopErrorCodes "openwop-error-codes",
    UnsignedWebhooks "unsigned-webhooks",
    JudgeHost "judge-host",
    ScheduleOnly "schedule-only",
    SeamsOff "seams-off",
    CoreOnly "core-only",
    ArmRequestRevision "arm-request-revision",
    PatchDropsJudgeOwned "patch-drops-judge-owned",
    AttentionPauseClock "attention-pause-clock",
    AttentionSupervisor "attention-supervisor",
}

/// The one mode a `schedule-only` host offers.
const SCHEDULE_ONLY: [Mode; 1] = [Mode::Schedule];
/// The one mode a `core-only` host offers: a person runs every iteration.
const MANUAL_ONLY: [Mode; 1] = [Mode::Manual];

impl Variant {
    pub fn parse(name: &str) -> Option<Variant> {
        REGISTRY
            .iter()
            .copied()
            .find(|variant| variant.name() == name)
    }

    /// Whether the variant's choice is one of the attention extension's.
    /// Every other variant leaves the extension off: a host that does not
    /// advertise attention must see no change in any verdict, and the
    /// variants prove it (PROFILE.md "Profile `attention`").
    pub fn is_attention(self) -> bool {
        matches!(
            self,
            Variant::AttentionPauseClock | Variant::AttentionSupervisor
        )
    }

    /// The host the variant differs from in its one choice: the reference
    /// host, without the attention extension unless the choice is about it.
    pub fn baseline(self) -> Choices {
        let reference = Choices::default();
        if self.is_attention() {
            reference
        } else {
            Choices {
                attention_extension: AttentionOffer::Off,
                ..reference
            }
        }
    }

    /// The reference host's choices with this variant's one change.
    pub fn choices(self) -> Choices {
        let reference = self.baseline();
        match self {
            Variant::Create200 => Choices {
                create_status: CreateStatus::Ok,
                ..reference
            },
            Variant::AttentionStatusOnly => Choices {
                attention: AttentionBody::StatusOnly,
                ..reference
            },
            Variant::EnvironmentalConfidenceNull => Choices {
                confidence_without_verdict: ConfidenceWithoutVerdict::Null,
                ..reference
            },
            Variant::CostExceeds => Choices {
                cost_reading: CostReading::Exceeds,
                ..reference
            },
            Variant::EscalatedContinueTerminal => Choices {
                escalated_continue: EscalatedContinue::GoalTerminal,
                ..reference
            },
            Variant::OpenwopErrorCodes => Choices {
                error_codes: ErrorCodes::Openwop,
                ..reference
            },
            Variant::UnsignedWebhooks => Choices {
                webhook_signing: WebhookSigning::Unsigned,
                ..reference
            },
            // Judges with what the host has: a goal's registered criteria
            // verifier (or any other verifierRef it names); a goal that
            // names none is judged unsatisfied-environmental run by run, so
            // it never satisfies on a worker's word.
            Variant::JudgeHost => Choices {
                judge: Check::Host,
                ..reference
            },
            // One offer, one consequence: a schedule goal is the only kind,
            // so one created without an arm waits for one instead of firing
            // the no-op worker.
            Variant::ScheduleOnly => Choices {
                modes: &SCHEDULE_ONLY,
                armless_schedule: ArmlessSchedule::WaitsForArm,
                ..reference
            },
            Variant::SeamsOff => reference,
            // Everything a host may leave out, left out: what `core` needs
            // and nothing more.
            Variant::CoreOnly => Choices {
                judge: Check::Host,
                modes: &MANUAL_ONLY,
                reported_runs: ReportedRuns::NotOffered,
                egress_policy: EgressPolicy::Unadvertised,
                ..reference
            },
            // Members of the host's own beside the projection, as a typed
            // projection of the goal would carry them.
            Variant::ArmRequestRevision => Choices {
                arm_request: ArmRequestBody::WithRevision,
                ..reference
            },
            // Keeps judge-owned members and bounds as RFC 0097 asks, by
            // leaving them out of the edit instead of refusing it.
            Variant::PatchDropsJudgeOwned => Choices {
                unappliable: Unappliable::Dropped,
                ..reference
            },
            // A timed pause is eligible again by the clock, read wherever
            // the binding is read or checked: nothing is written when it
            // wakes, and no event says so.
            Variant::AttentionPauseClock => Choices {
                attention_extension: AttentionOffer::On {
                    wake: PauseWake::Clock,
                    supervisor: false,
                },
                ..reference
            },
            // Offers the optional `supervisor` completion policy besides
            // the four every attention host offers.
            Variant::AttentionSupervisor => Choices {
                attention_extension: AttentionOffer::On {
                    wake: PauseWake::Tick,
                    supervisor: true,
                },
                ..reference
            },
        }
    }

    /// Whether this variant serves the conformance seams when the host is
    /// configured to (`seams-off` and `core-only` never do).
    pub fn serves_seams(self) -> bool {
        !matches!(self, Variant::SeamsOff | Variant::CoreOnly)
    }

    /// `config` running as this variant.
    pub fn apply(self, mut config: Config) -> Config {
        config.choices = self.choices();
        config.conformance_seams = config.conformance_seams && self.serves_seams();
        config
    }
}

impl std::fmt::Display for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `--variant NAME`.
pub fn parse_arg(name: &str) -> Result<Variant, String> {
    Variant::parse(name).ok_or_else(|| {
        let known: Vec<&str> = REGISTRY.iter().map(|variant| variant.name()).collect();
        format!("unknown variant {name:?}; known: {}", known.join(", "))
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// Which fields of `variant`'s choices differ from its baseline's.
    fn changed(variant: Variant) -> Vec<&'static str> {
        let choices = &variant.choices();
        let reference = variant.baseline();
        let mut changed = Vec::new();
        if choices.create_status != reference.create_status {
            changed.push("create_status");
        }
        if choices.attention != reference.attention {
            changed.push("attention");
        }
        if choices.confidence_without_verdict != reference.confidence_without_verdict {
            changed.push("confidence_without_verdict");
        }
        if choices.cost_reading != reference.cost_reading {
            changed.push("cost_reading");
        }
        if choices.escalated_continue != reference.escalated_continue {
            changed.push("escalated_continue");
        }
        if choices.error_codes != reference.error_codes {
            changed.push("error_codes");
        }
        if choices.webhook_signing != reference.webhook_signing {
            changed.push("webhook_signing");
        }
        if choices.judge != reference.judge {
            changed.push("judge");
        }
        if choices.modes != reference.modes
            || choices.armless_schedule != reference.armless_schedule
        {
            changed.push("modes");
        }
        if choices.reported_runs != reference.reported_runs {
            changed.push("reported_runs");
        }
        if choices.egress_policy != reference.egress_policy {
            changed.push("egress_policy");
        }
        if choices.arm_request != reference.arm_request {
            changed.push("arm_request");
        }
        if choices.unappliable != reference.unappliable {
            changed.push("unappliable");
        }
        if choices.attention_extension != reference.attention_extension {
            changed.push("attention_extension");
        }
        changed
    }

    #[test]
    fn names_are_unique_kebab_case_and_parse_back() {
        let names: BTreeSet<&str> = REGISTRY.iter().map(|variant| variant.name()).collect();
        assert_eq!(names.len(), REGISTRY.len());
        for variant in REGISTRY {
            let name = variant.name();
            assert!(
                name.bytes()
                    .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-'),
                "{name}"
            );
            assert_eq!(parse_arg(name), Ok(*variant));
            assert_eq!(variant.to_string(), name);
        }
        let error = parse_arg("create-201").expect_err("unknown");
        assert!(error.contains("create-200"), "{error}");
    }

    #[test]
    fn every_variant_makes_exactly_one_choice() {
        for variant in REGISTRY {
            let changes = changed(*variant);
            match variant {
                // Its one choice is the seams switch, not a field.
                Variant::SeamsOff => assert!(changes.is_empty(), "{variant}: {changes:?}"),
                // Every narrowing choice at once, seams off too.
                Variant::CoreOnly => {
                    assert_eq!(
                        changes,
                        ["judge", "modes", "reported_runs", "egress_policy"],
                        "{variant}"
                    );
                    assert!(!variant.serves_seams());
                }
                _ => assert_eq!(changes.len(), 1, "{variant}: {changes:?}"),
            }
        }
    }

    #[test]
    fn every_choice_field_is_made_by_some_variant() {
        let made: BTreeSet<&str> = REGISTRY
            .iter()
            .flat_map(|variant| changed(*variant))
            .collect();
        assert_eq!(made.len(), 14, "{made:?}");
    }

    #[test]
    fn only_attention_variants_offer_attention() {
        for variant in REGISTRY {
            let offered = variant.choices().attention_extension != AttentionOffer::Off;
            assert_eq!(offered, variant.is_attention(), "{variant}");
        }
    }

    #[test]
    fn serve_takes_a_variant_and_refuses_an_unknown_one() {
        use clap::Parser;
        let parse = |args: &[&str]| {
            let mut argv = vec!["goalpost-host-builds"];
            argv.extend_from_slice(args);
            crate::Cli::try_parse_from(argv).map(|cli| cli.build.assemble(cli.serve.config()).0)
        };
        let plain = parse(&["--conformance-seams"]).expect("valid");
        assert_eq!(plain.choices, Choices::default());
        let clock =
            parse(&["--conformance-seams", "--variant", "attention-pause-clock"]).expect("valid");
        assert_eq!(
            clock.choices.attention_extension,
            AttentionOffer::On {
                wake: PauseWake::Clock,
                supervisor: false
            }
        );
        let cost = parse(&["--conformance-seams", "--variant", "cost-exceeds"]).expect("valid");
        assert_eq!(cost.choices.cost_reading, CostReading::Exceeds);
        assert!(cost.conformance_seams);
        let off = parse(&["--conformance-seams", "--variant", "seams-off"]).expect("valid");
        assert!(!off.conformance_seams);
        assert!(parse(&["--variant", "create-201"]).is_err());
    }

    #[test]
    fn applying_keeps_the_rest_of_the_config() {
        let base = Config::conformance_in_memory(vec![("t".into(), "a".into())]);
        let judge = Variant::JudgeHost.apply(base.clone());
        assert_eq!(judge.choices.judge, Check::Host);
        assert!(judge.conformance_seams);
        assert_eq!(judge.tokens, base.tokens);
        let off = Variant::SeamsOff.apply(base.clone());
        assert!(!off.conformance_seams);
        assert_eq!(off.choices, Variant::SeamsOff.baseline());
        let schedule = Variant::ScheduleOnly.apply(base);
        assert_eq!(schedule.choices.modes, &[Mode::Schedule]);
        assert_eq!(
            schedule.choices.armless_schedule,
            ArmlessSchedule::WaitsForArm
        );
    }
}
