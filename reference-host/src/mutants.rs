//! Mutants: deliberately broken builds of this host, one bug each, that the
//! suite must catch (issue 4, "Kill matrix"). A requirement is
//! **mutation-verified** when a mutant breaks it and the suite's scenarios
//! for it fail against that mutant; `suite/tests/kill_matrix.rs` proves
//! every entry of [`REGISTRY`] on every `cargo test`.
//!
//! The registry below is plain data and is compiled into every build, so
//! the suite can report which requirements are mutation-verified. The
//! broken behaviour is not: the hooks, the per-host switch
//! ([`Config::mutant`](crate::Config), `goalpost-host serve --mutant NAME`)
//! and the code behind them exist only with the `mutants` cargo feature,
//! which the default build and the released binary leave out.
//!
//! Each mutant has one bug, the way a real implementation gets it wrong.
//! Its `breaks` list names the requirements whose own rule that bug
//! breaks; its `collateral` list the others it also makes fail (a scenario
//! of theirs leans on the broken behaviour in a setup step). Together they
//! are its `kills`: every requirement whose disposition it changes against
//! the bundled scenarios. The kill matrix fails if one of them still
//! passes, and also if any requirement outside them changes (so a list can
//! neither overclaim nor hide collateral). Reports call a requirement
//! mutation-verified only through `breaks`.

#[cfg(feature = "mutants")]
mod body;
#[cfg(feature = "mutants")]
pub(crate) mod engine;
#[cfg(feature = "mutants")]
pub(crate) mod http;
#[cfg(feature = "mutants")]
pub(crate) mod notes;
#[cfg(feature = "mutants")]
mod switch;
#[cfg(feature = "mutants")]
pub(crate) mod webhook;

#[cfg(feature = "mutants")]
pub use switch::Switch;

/// One registered mutant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MutantInfo {
    pub mutant: Mutant,
    /// What `--mutant` takes: kebab-case, unique.
    pub name: &'static str,
    /// The rule it breaks and how, in one sentence.
    pub description: &'static str,
    /// Requirement ids (`scenarios/requirements.json`) whose own rule this
    /// mutant breaks. Only these count as mutation-verified by it: a
    /// requirement that fails only because a setup step of its scenario
    /// failed proves nothing about its own checks.
    pub breaks: &'static [&'static str],
    /// Requirement ids that also fail against it without their rule being
    /// the one broken (a scenario for them leans on the broken behaviour).
    pub collateral: &'static [&'static str],
    /// `breaks` then `collateral`: every requirement whose disposition the
    /// mutant changes; nothing else may change.
    pub kills: &'static [&'static str],
}

macro_rules! registry {
    ($(
        $variant:ident $name:literal $description:literal
        breaks [$($break:literal),* $(,)?]
        collateral [$($collateral:literal),* $(,)?]
    )*) => {
        /// Every mutant this host knows.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Mutant {
            $($variant,)*
        }

        /// Every mutant with what it breaks and what must catch it, in
        /// declaration order.
        pub const REGISTRY: &[MutantInfo] = &[
            $(MutantInfo {
                mutant: Mutant::$variant,
                name: $name,
                description: $description,
                breaks: &[$($break),*],
                collateral: &[$($collateral),*],
                kills: &[$($break,)* $($collateral,)*],
            },)*
        ];
    };
}

registry! {
    // ---- §1–§2 wire surface (core) ----
    DiscoveryDuplicateModes "discovery-duplicate-modes"
        "Discovery lists a continuation mode twice, so agents.goals.continuation is not a set."
        breaks ["core.discovery.shape"]
        collateral []
    CreateWithoutLocation "create-without-location"
        "A create answers 201 without the Location header."
        breaks ["core.create.location", "strict.create.location-path"]
        collateral ["core.create.returns-active-goal", "core.get.returns-goal"]
    OwnerFromBody "owner-from-body"
        "A create that names owner.tenant in its body is stored under that tenant instead of the caller's."
        breaks ["core.create.owner-from-credential", "strict.create.judge-owned-422"]
        collateral ["core.tenancy.list-isolation"]
    DefaultBounds "default-bounds"
        "A create without bounds (or with bounds: {}) is given default bounds instead of 422 bounds_required."
        breaks ["core.create.bounds-required", "strict.errors.bounds-required-code"]
        collateral ["core.errors.envelope"]
    NegativeBoundsClamped "negative-bounds-clamped"
        "Out-of-range bounds are clamped into range (0 or 1.5 iterations become 1, negative cost or timeout 0) instead of refused."
        breaks ["core.create.bounds-range", "strict.create.bounds-range-400"]
        collateral []
    UnknownKeysDropped "unknown-keys-dropped"
        "Unknown keys in a create body are silently dropped instead of refused with 400."
        breaks ["core.create.unknown-keys", "core.create.bounds-range"]
        collateral [
            "core.errors.envelope",
            "strict.create.judge-owned-422",
            "strict.errors.invalid-request-code",
        ]
    NumericStringsCoerced "numeric-strings-coerced"
        "A bound written as a numeric string (\"3\") is coerced to a number instead of refused with 400."
        breaks ["core.create.wrong-types", "core.create.bound-type-beside-valid"]
        collateral ["strict.errors.invalid-request-code"]
    CreateClaimsKept "create-claims-kept"
        "A create body's state, progress and completion.lastVerdict are stored as claimed."
        breaks ["core.judge-only.create-body", "strict.create.judge-owned-422"]
        collateral []
    ListFilterIgnored "list-filter-ignored"
        "GET {base}?state=S ignores the filter and lists every goal of the caller."
        breaks ["core.list.filter-state"]
        collateral ["core.lifecycle.abandon"]
    UnknownStateListsNothing "unknown-state-lists-nothing"
        "A list filter naming no state answers 200 with an empty list instead of 400."
        breaks ["core.list.unknown-state"]
        collateral ["core.errors.envelope", "strict.errors.invalid-request-code"]
    MissingGoalConflict "missing-goal-conflict"
        "Pause, resume and abandon of a goal the caller cannot see answer 409 goal_terminal instead of 404."
        breaks [
            "core.lookup.unknown-id",
            "core.tenancy.goal-404",
            "hardening.tenancy.goal-endpoints",
        ]
        collateral []
    PatchAnswersUnsaved "patch-answers-unsaved"
        "PATCH answers 200 with the edited objective but never stores it."
        breaks ["core.patch.objective"]
        collateral [
            "observed.projection.objective-as-data",
            "observed.projection.verifier-content-free",
            "observed.events.content-free",
            "hardening.etag.every-response",
            "hardening.if-match.abandon",
            "hardening.if-match.patch",
            "hardening.if-match.pause",
            "hardening.if-match.resume",
            "hardening.if-match.semantics",
            "hardening.race.patch-one-winner",
            "behavior.patch.refs-stored",
            "strict.get.etag",
        ]
    PatchStateApplied "patch-state-applied"
        "PATCH {state} is applied to the goal instead of refused with 422 judge_owned_field."
        breaks ["core.judge-only.patch-state", "strict.errors.judge-owned-code"]
        collateral [
            "core.judge-only.refusal-changes-nothing",
            "core.errors.envelope",
            "strict.get.etag",
        ]
    PatchProgressIgnored "patch-progress-ignored"
        "PATCH {progress} is silently ignored with 200 instead of refused with 422 judge_owned_field."
        breaks ["core.judge-only.patch-progress", "strict.errors.judge-owned-code"]
        collateral ["core.judge-only.refusal-changes-nothing"]
    PatchVerdictApplied "patch-verdict-applied"
        "PATCH {completion: {lastVerdict}} stores the verdict instead of refusing with 422 judge_owned_field."
        breaks ["core.judge-only.patch-last-verdict", "strict.errors.judge-owned-code"]
        collateral ["core.judge-only.refusal-changes-nothing"]
    PatchIdentityIgnored "patch-identity-ignored"
        "PATCH {owner} or {id} is silently ignored with 200 instead of refused with 422 judge_owned_field."
        breaks ["core.judge-only.patch-identity", "strict.errors.judge-owned-code"]
        collateral ["core.judge-only.refusal-changes-nothing"]
    RefusalStillWrites "refusal-still-writes"
        "A PATCH refused for a judge-owned field still applies its other fields."
        breaks ["core.judge-only.refusal-changes-nothing"]
        collateral ["core.judge-only.patch-state"]
    TerminalResumeAllowed "terminal-resume-allowed"
        "Resume of a satisfied, abandoned or bound-exceeded goal makes it active again."
        breaks [
            "core.terminal.no-transition",
            "behavior.terminal.final",
            "strict.errors.terminal-code",
        ]
        collateral [
            "core.terminal.no-edit",
            "core.lifecycle.abandon",
            "behavior.terminal.continue-refused",
        ]
    TerminalPatchAllowed "terminal-patch-allowed"
        "PATCH of a satisfied, abandoned or bound-exceeded goal is applied."
        breaks ["core.terminal.no-edit", "behavior.terminal.final", "strict.errors.terminal-code"]
        collateral [
            "core.terminal.no-transition",
            "core.lifecycle.abandon",
            "behavior.terminal.continue-refused",
        ]
    AttentionIgnoresPause "attention-ignores-pause"
        "The attention view is computed from the state alone, so a paused goal reads active."
        breaks ["core.pause.resume-attention"]
        collateral [
            "behavior.pause.disarms-schedule",
            "behavior.pause.resume-rearms",
            "observed.pause.no-dispatch",
            "observed.pause.resume-dispatches",
            "hardening.if-match.pause",
            "hardening.if-match.resume",
            "core.pause.keeps-state",
        ]
    CrossTenantRead "cross-tenant-read"
        "GET {base}/{id} returns a goal whatever tenant owns it."
        breaks ["core.tenancy.goal-404", "hardening.tenancy.goal-endpoints"]
        collateral ["hardening.idempotency.tenant-scoped", "strict.errors.not-found-code"]
    ListLeaksTenants "list-leaks-tenants"
        "A list with a state filter forgets the tenant clause and shows every tenant's goals."
        breaks ["core.tenancy.list-isolation", "hardening.tenancy.lists"]
        collateral ["core.create.owner-from-credential"]
    AnonymousList "anonymous-list"
        "The goal list is readable without a credential (it answers an empty list instead of 401)."
        breaks ["core.auth.credential-required", "hardening.auth.anonymous-goals"]
        collateral ["core.errors.envelope", "strict.errors.unauthorized-code"]
    UnknownRouteOk "unknown-route-ok"
        "An unknown route under {base} answers 200 {} instead of 404 with the error envelope."
        breaks ["core.errors.unknown-route"]
        collateral ["strict.errors.not-found-code"]
    MalformedBodyAsEmpty "malformed-body-as-empty"
        "A request body that is not JSON is read as {} instead of refused with 400."
        breaks [
            "core.errors.malformed-json",
            "hardening.input.malformed-json",
            "hardening.input.invalid-utf8",
        ]
        collateral ["hardening.input.deep-nesting", "strict.errors.malformed-json-code"]

    // ---- §3 continuation, judging and bounds ----
    OffByOneIterations "off-by-one-iterations"
        "The iteration bound is compared with > instead of >=, so maxLoopIterations N allows N+1 runs."
        breaks [
            "behavior.bound.iterations-exact",
            "observed.bound.iterations-manual",
            "observed.bound.iterations-schedule",
            "hardening.race.continue-bound",
            "hardening.race.schedule-and-continue",
        ]
        collateral [
            "behavior.terminal.continue-refused",
            "behavior.terminal.final",
            "behavior.events.closed-once",
            "behavior.events.run-ids-agree",
            "behavior.verdict.criteria-all-pass",
            "observed.webhooks.calls-urls",
            "observed.verdict.failing-criterion-overrides",
            "observed.verifier.error-status-environmental",
            "observed.verifier.invalid-answer-environmental",
            "observed.verifier.malformed-environmental",
            "observed.verifier.timeout-environmental",
            "observed.worker.claim-not-completion",
        ]
    ScheduleIgnoresIterationBound "schedule-ignores-iteration-bound"
        "The iteration bound is checked on continue only: a schedule arm keeps firing past maxLoopIterations."
        breaks [
            "behavior.bound.iterations-exact",
            "observed.bound.iterations-schedule",
            "hardening.race.schedule-and-continue",
        ]
        collateral ["hardening.race.continue-bound"]
    CostCheckedBeforeAdding "cost-checked-before-adding"
        "The cost bound is decided on the spend before the run's own cost, so the goal closes one run late."
        breaks [
            "behavior.bound.cost",
            "observed.cost.worker-reported",
            "strict.bound.cost-budget",
            "strict.bound.cost-budget-decimal",
        ]
        collateral [
            "behavior.terminal.continue-refused",
            "behavior.escalation.resume-keeps-progress",
            "behavior.patch.refs-take-effect",
            "observed.projection.remaining-cost",
        ]
    DeadlineIgnoredWhenIdle "deadline-ignored-when-idle"
        "The wall-clock bound is checked only when a run is about to start, so an idle or paused goal stays open past its deadline."
        breaks ["behavior.bound.wall-clock"]
        collateral ["behavior.bound.wall-clock-no-late-run"]
    EnvironmentalUncounted "environmental-uncounted"
        "A run whose run or judge failed environmentally does not count toward maxLoopIterations."
        breaks [
            "observed.verifier.malformed-environmental",
            "observed.verifier.error-status-environmental",
        ]
        collateral [
            "observed.verifier.invalid-answer-environmental",
            "observed.verifier.timeout-environmental",
        ]
    EscalationIgnored "escalation-ignored"
        "A run's escalation is dropped: the run is judged like any other and the goal stays active."
        breaks ["behavior.escalation.halts", "observed.escalation.halts-dispatch"]
        collateral [
            "behavior.escalation.counts-iteration",
            "behavior.escalation.resume-keeps-progress",
            "behavior.escalation.abandon",
            "behavior.events.evaluated-per-verdict",
            "behavior.events.closed-once",
            "behavior.patch.refs-take-effect",
            "observed.escalation.no-verdict",
            "observed.escalation.reason-shown",
            "observed.escalation.resolution-note",
        ]
    EscalationJudged "escalation-judged"
        "An escalated run still gets a (failed) verdict: an evaluation and a goal.evaluated event."
        breaks [
            "behavior.escalation.halts",
            "behavior.events.evaluated-per-verdict",
            "observed.escalation.no-verdict",
        ]
        collateral [
            "behavior.escalation.abandon",
            "behavior.escalation.counts-iteration",
            "behavior.events.closed-once",
            "behavior.escalation.resume-keeps-progress",
            "behavior.patch.refs-take-effect",
            "observed.escalation.halts-dispatch",
        ]
    EscalationUncounted "escalation-uncounted"
        "An escalated run is not counted in progress.iterations or contributingRunIds."
        breaks ["behavior.escalation.counts-iteration"]
        collateral [
            "behavior.escalation.halts",
            "behavior.events.evaluated-per-verdict",
            "behavior.events.closed-once",
            "behavior.escalation.resume-keeps-progress",
            "behavior.patch.refs-take-effect",
            "observed.escalation.halts-dispatch",
            "observed.escalation.no-verdict",
            "observed.escalation.reason-shown",
            "observed.escalation.resolution-note",
        ]
    ResumeResetsProgress "resume-resets-progress"
        "Resume of an escalated goal starts it over: progress and spent cost go back to zero."
        breaks ["behavior.escalation.resume-keeps-progress"]
        collateral [
            "behavior.patch.refs-take-effect",
            "observed.escalation.reason-shown",
            "observed.escalation.resolution-note",
        ]
    EscalatedAbandonRefused "escalated-abandon-refused"
        "Abandon of an escalated goal is refused with 409 goal_escalated."
        breaks ["behavior.escalation.abandon"]
        collateral [
            "behavior.events.closed-once",
            "behavior.escalation.halts",
            "observed.escalation.halts-dispatch",
            "observed.escalation.no-verdict",
        ]
    StaleTimerAfterPause "stale-timer-after-pause"
        "The scheduler keeps its own timers and its fire does not re-check pause, so a paused schedule goal keeps running."
        breaks ["behavior.pause.disarms-schedule", "observed.pause.no-dispatch"]
        collateral ["behavior.pause.resume-rearms", "observed.pause.resume-dispatches"]
    NoFailClosedCheck "no-fail-closed-check"
        "A scheduled fire dispatches from the scheduler's own timers without re-reading the goal, so closed goals keep getting runs."
        breaks [
            "observed.abandon.no-dispatch",
            "observed.pause.no-dispatch",
            "observed.deadline.no-dispatch",
            "observed.escalation.halts-dispatch",
            "observed.converge.no-run-after-satisfied",
            "behavior.pause.disarms-schedule",
        ]
        collateral [
            "observed.close.late-answer-ignored",
            "observed.pause.resume-dispatches",
            "observed.escalation.no-verdict",
            "observed.converge.suite-verdict",
            "observed.bound.iterations-schedule",
            "behavior.pause.resume-rearms",
            "hardening.race.continue-bound",
            "hardening.race.schedule-and-continue",
        ]
    ContinueWhilePaused "continue-while-paused"
        "continue does not check pause: a paused goal runs an iteration."
        breaks ["behavior.pause.continue-refused"]
        collateral []
    BoundBeforeVerdict "bound-before-verdict"
        "The decision checks the bounds before the verdict, so a satisfied verdict on the last allowed iteration closes bound-exceeded."
        breaks ["behavior.converge.last-iteration-wins"]
        collateral [
            "observed.arm.failure-environmental",
            "observed.run-ids.agree",
            "observed.verdict.criteria-recorded",
            "observed.verifier.judges-run-output",
        ]
    SatisfiedKeepsRunning "satisfied-keeps-running"
        "A satisfied verdict closes the goal only when the next run comes back, so one more run is dispatched."
        breaks [
            "behavior.converge.satisfied",
            "observed.converge.no-run-after-satisfied",
            "observed.converge.suite-verdict",
        ]
        collateral [
            "behavior.converge.last-iteration-wins",
            "behavior.terminal.continue-refused",
            "behavior.terminal.final",
            "behavior.events.evaluated-per-verdict",
            "behavior.events.closed-once",
            "behavior.events.payload-shape",
            "behavior.events.content-free",
            "behavior.evaluations.record-shape",
            "behavior.patch.refs-take-effect",
            "behavior.verdict.criteria-all-pass",
            "observed.run-ids.agree",
            "observed.verifier.judges-run-output",
            "observed.arm.failure-environmental",
            "observed.verdict.criteria-recorded",
        ]
    LastVerdictPreviousRun "last-verdict-previous-run"
        "lastVerdict.runId names the run before the one judged."
        breaks [
            "behavior.converge.satisfied",
            "observed.converge.suite-verdict",
            "behavior.events.run-ids-agree",
            "observed.run-ids.agree",
        ]
        collateral [
            "behavior.terminal.continue-refused",
            "behavior.events.evaluated-per-verdict",
            "behavior.events.closed-once",
            "observed.converge.no-run-after-satisfied",
            "observed.verifier.judges-run-output",
        ]
    EvaluatedWrongRun "evaluated-wrong-run"
        "goal.evaluated carries the previous run's id instead of the evaluated run's."
        breaks ["behavior.events.run-ids-agree", "observed.run-ids.agree"]
        collateral ["observed.verifier.judges-run-output"]
    EvaluatedIterationsBeforeRun "evaluated-iterations-before-run"
        "goal.evaluated.iterations counts the runs before the evaluated one."
        breaks ["behavior.events.iterations-field"]
        collateral [
            "behavior.events.after-cursor",
            "behavior.escalation.resume-keeps-progress",
            "behavior.patch.refs-take-effect",
        ]
    EvaluatedMissingOnClose "evaluated-missing-on-close"
        "The verdict that closes a goal emits only goal.closed, not its goal.evaluated."
        breaks ["behavior.events.evaluated-per-verdict"]
        collateral [
            "behavior.events.content-free",
            "behavior.events.closed-once",
            "behavior.converge.satisfied",
            "behavior.terminal.continue-refused",
            "behavior.bound.iterations-exact",
            "behavior.events.payload-shape",
            "behavior.events.run-ids-agree",
            "behavior.escalation.resume-keeps-progress",
            "behavior.patch.refs-take-effect",
            "observed.run-ids.agree",
            "observed.verifier.judges-run-output",
            "hardening.race.continue-bound",
            "hardening.race.schedule-and-continue",
        ]
    ClosedEventTwice "closed-event-twice"
        "Abandon emits goal.closed twice (once by the handler, once by the state change)."
        breaks ["behavior.events.closed-once", "hardening.race.abandon-once"]
        collateral [
            "behavior.escalation.abandon",
            "behavior.events.sequence-increasing",
            "observed.close.late-answer-ignored",
        ]
    LateVerdictRecorded "late-verdict-recorded"
        "Abandon does not cancel the run in flight, and its verdict is recorded on the closed goal."
        breaks ["observed.close.late-answer-ignored"]
        collateral []
    CriteriaIgnored "criteria-ignored"
        "The judge's overall flag decides alone: a failing criterion does not make the verdict unsatisfied."
        breaks [
            "behavior.verdict.criteria-all-pass",
            "observed.verdict.failing-criterion-overrides",
        ]
        collateral []
    CriteriaNotRecorded "criteria-not-recorded"
        "Per-criterion verdicts are aggregated but not recorded in the evaluation."
        breaks ["observed.verdict.criteria-recorded"]
        collateral []
    RefsCachedAtFirstRun "refs-cached-at-first-run"
        "The verifier and arm are resolved once, at the goal's first run, so a PATCH of the refs never takes effect."
        breaks ["behavior.patch.refs-take-effect"]
        collateral ["behavior.escalation.resume-keeps-progress"]
    WorkerClaimCounted "worker-claim-counted"
        "A worker output saying done: true closes the goal satisfied without asking the verifier."
        breaks ["observed.worker.claim-not-completion"]
        collateral []
    ArmFailureJudged "arm-failure-judged"
        "A run whose worker failed is still sent to the verifier (with a null output) and judged."
        breaks ["observed.arm.failure-environmental"]
        collateral []
    VerifierGetsObjective "verifier-gets-objective"
        "The verifier call carries the objective inside the run output."
        breaks ["observed.projection.verifier-content-free"]
        collateral ["observed.projection.objective-as-data", "observed.events.content-free"]
    ContinueEvaluationNextIteration "continue-evaluation-next-iteration"
        "continue answers with its evaluation numbered as the next iteration."
        breaks ["behavior.continue.one-iteration"]
        collateral ["behavior.escalation.resume-keeps-progress", "behavior.patch.refs-take-effect"]

    // ---- §4 seams: events and webhooks ----
    ObjectiveInEvents "objective-in-events"
        "An edit emits a goal.updated event whose payload carries the new objective."
        breaks ["behavior.events.content-free", "observed.events.content-free"]
        collateral [
            "observed.projection.objective-as-data",
            "observed.projection.verifier-content-free",
        ]
    EventsSequencePerType "events-sequence-per-type"
        "Event sequence numbers are counted per event type, so they do not increase across types."
        breaks ["behavior.events.sequence-increasing"]
        collateral []
    AfterCursorIgnored "after-cursor-ignored"
        "events?after=SEQ ignores the cursor and lists every event."
        breaks ["behavior.events.after-cursor"]
        collateral []
    PayloadGoalPath "payload-goal-path"
        "Event payloads name the goal by its resource path instead of its id."
        breaks ["behavior.events.payload-shape"]
        collateral ["behavior.events.closed-once"]
    EvaluationsNewestFirst "evaluations-newest-first"
        "The evaluations list is ordered newest first."
        breaks ["behavior.evaluations.record-shape"]
        collateral [
            "behavior.bound.wall-clock",
            "behavior.bound.wall-clock-no-late-run",
            "behavior.events.iterations-field",
            "behavior.events.run-ids-agree",
            "behavior.bound.iterations-exact",
            "observed.run-ids.agree",
            "observed.verifier.judges-run-output",
            "observed.verdict.criteria-recorded",
            "hardening.race.continue-bound",
            "hardening.race.schedule-and-continue",
        ]
    WrongWebhookSecret "wrong-webhook-secret"
        "Webhook calls are signed with a secret of the host's own making instead of the configured one."
        breaks ["observed.webhooks.secret-header"]
        collateral []
    WebhookErrorStatusRead "webhook-error-status-read"
        "A webhook answer with an error status is read as if it were a 200."
        breaks [
            "observed.verifier.error-status-environmental",
            "observed.heartbeat.probe-failure-fires-nothing",
        ]
        collateral []
    WebhookNoTimeout "webhook-no-timeout"
        "Webhook calls have no timeout of their own: a verifier answering after 5 s is still believed."
        breaks ["observed.verifier.timeout-environmental"]
        collateral []
    VerifierAnswerCoerced "verifier-answer-coerced"
        "Webhook answers are read loosely instead of checked against their schema (\"yes\" is true, confidence is clamped)."
        breaks [
            "observed.verifier.invalid-answer-environmental",
            "observed.heartbeat.probe-failure-fires-nothing",
        ]
        collateral []
    DeadlineAsEpoch "deadline-as-epoch"
        "The projection's remaining.deadline is sent as epoch milliseconds instead of an RFC 3339 string."
        breaks ["observed.webhooks.request-shape", "observed.projection.remaining-deadline"]
        collateral ["observed.deadline.no-dispatch", "observed.projection.remaining-iterations"]
    RemainingIterationsOffByOne "remaining-iterations-off-by-one"
        "remaining.iterations counts the run being dispatched as already spent."
        breaks ["observed.projection.remaining-iterations"]
        collateral ["observed.projection.remaining-deadline"]
    RemainingCostIgnoresSpend "remaining-cost-ignores-spend"
        "remaining.costUsd is maxCostUsd whatever was spent."
        breaks ["observed.projection.remaining-cost"]
        collateral ["observed.cost.worker-reported"]
    RemainingDeadlineMoving "remaining-deadline-moving"
        "remaining.deadline is computed from the dispatch time instead of createdAt."
        breaks ["observed.projection.remaining-deadline"]
        collateral ["observed.projection.remaining-iterations"]
    // ---- hardening: concurrency control, idempotency, hostile input ----
    OwnerCheckMissing "owner-check-missing"
        "Goal lookups forget the owner check: any tenant reads and changes any goal by id."
        breaks [
            "core.tenancy.goal-404",
            "hardening.tenancy.goal-endpoints",
            "hardening.tenancy.seams",
            "observed.escalation.reason-shown",
        ]
        collateral ["hardening.idempotency.tenant-scoped", "strict.errors.not-found-code"]
    EtagMissingOnTransitions "etag-missing-on-transitions"
        "Pause, resume and abandon answer the goal without its ETag header."
        breaks ["hardening.etag.every-response"]
        collateral []
    EtagUnchangedByRuns "etag-unchanged-by-runs"
        "An iteration's record does not bump the goal's version, so its ETag survives a run."
        breaks ["hardening.etag.changes-on-change"]
        collateral []
    IfMatchIgnoredOnTransitions "if-match-ignored-on-transitions"
        "Pause, resume and abandon ignore If-Match."
        breaks [
            "hardening.if-match.pause",
            "hardening.if-match.resume",
            "hardening.if-match.abandon",
        ]
        collateral []
    IfMatchIgnoredOnPatch "if-match-ignored-on-patch"
        "PATCH ignores If-Match."
        breaks ["hardening.if-match.patch", "hardening.race.patch-one-winner"]
        collateral ["hardening.etag.changes-on-change", "hardening.if-match.semantics"]
    IfMatchWeakAccepted "if-match-weak-accepted"
        "If-Match compares weakly: W/\"tag\" matches the current tag."
        breaks ["hardening.if-match.semantics"]
        collateral []
    IfMatchCheckedApart "if-match-checked-apart"
        "If-Match on PATCH is checked before the write instead of with it, so concurrent PATCHes carrying one tag all win."
        breaks ["hardening.race.patch-one-winner"]
        collateral []
    ContinueWithoutLock "continue-without-lock"
        "Iterations of one goal are not serialised, so concurrent continues and fires each dispatch."
        breaks ["hardening.race.continue-bound", "hardening.race.schedule-and-continue"]
        collateral []
    IdempotencyKeyIgnored "idempotency-key-ignored"
        "Idempotency-Key is ignored: every create makes a new goal."
        breaks [
            "hardening.idempotency.replay",
            "hardening.idempotency.conflict",
            "hardening.idempotency.concurrent",
            "strict.idempotency.replay-same-answer",
        ]
        collateral []
    IdempotencyBodyUnchecked "idempotency-body-unchecked"
        "A used Idempotency-Key answers its first goal whatever the new body says."
        breaks ["hardening.idempotency.conflict"]
        collateral []
    IdempotencyKeysGlobal "idempotency-keys-global"
        "Idempotency-Keys are one namespace for every tenant: another tenant's key replays the first tenant's goal."
        breaks ["hardening.idempotency.tenant-scoped"]
        collateral []
    IdempotencyNotAtomic "idempotency-not-atomic"
        "The Idempotency-Key is looked up before the insert but not with it, so concurrent creates with one key each make a goal."
        breaks ["hardening.idempotency.concurrent"]
        collateral []
    OversizeBodyAs400 "oversize-body-as-400"
        "A body over the size limit is refused with 400 as unreadable instead of 413."
        breaks ["hardening.limits.body-413", "strict.errors.payload-too-large-code"]
        collateral []
    DuplicateKeysLastWins "duplicate-keys-last-wins"
        "A JSON object with a repeated key is read with the last value instead of refused."
        breaks ["hardening.input.duplicate-keys"]
        collateral []
    HugeNumbersSaturate "huge-numbers-saturate"
        "Numbers too large for a double are saturated to the largest integer instead of refused."
        breaks ["hardening.input.huge-number"]
        collateral []
    ContentTypeIgnored "content-type-ignored"
        "A body is read as JSON whatever its Content-Type says."
        breaks ["hardening.input.content-type", "strict.input.content-type-415"]
        collateral []
    AnonymousSeams "anonymous-seams"
        "The seam routes look goals up without a credential, so an anonymous caller gets 404 instead of 401."
        breaks ["hardening.auth.anonymous-seams"]
        collateral []
    BadCredentialNotFound "bad-credential-not-found"
        "A goal request with a credential the host does not know is looked up before it is authenticated, so it answers 404 instead of 401."
        breaks ["hardening.auth.bad-credentials"]
        collateral []

    // ---- strict: the profile's exact readings ----
    CreateAnswers200 "create-answers-200"
        "A create answers 200 instead of 201."
        breaks ["strict.create.status-201"]
        collateral ["strict.idempotency.replay-same-answer"]
    LocationWrongPath "location-wrong-path"
        "A create's Location names a path that does not serve the goal."
        breaks ["strict.create.location-path"]
        collateral []
    CostExceedsNotReaches "cost-exceeds-not-reaches"
        "The cost bound stops only when spend exceeds maxCostUsd, not when it reaches it."
        breaks ["strict.bound.cost-budget", "strict.bound.cost-budget-decimal"]
        collateral []
    CostSummedAsFloat "cost-summed-as-float"
        "Spend is summed in binary floating point, so ten runs of 0.1 stay under a 1.0 budget."
        breaks ["strict.bound.cost-budget-decimal"]
        collateral []
    BoundsRange422 "bounds-range-422"
        "Out-of-range bounds are refused with 422 instead of 400."
        breaks ["strict.create.bounds-range-400"]
        collateral [
            "core.create.unknown-keys",
            "core.create.wrong-types",
            "strict.errors.invalid-request-code",
        ]
    JudgeOwnedCreate400 "judge-owned-create-400"
        "A create naming a judge-owned field is refused with 400 invalid_request instead of 422 judge_owned_field."
        breaks ["strict.create.judge-owned-422"]
        collateral []
    MalformedJsonAsInvalidRequest "malformed-json-as-invalid-request"
        "A body that is not JSON is refused with code invalid_request instead of malformed_json."
        breaks ["strict.errors.malformed-json-code"]
        collateral []
    InvalidRequestWithoutDetails "invalid-request-without-details"
        "400 invalid_request carries no details naming the offending pointer or parameter."
        breaks ["strict.errors.invalid-request-code"]
        collateral []
    UnauthorizedAsForbidden "unauthorized-as-forbidden"
        "A missing or unknown credential is answered 401 with code forbidden."
        breaks ["strict.errors.unauthorized-code"]
        collateral []
    NotFoundCodeVaries "not-found-code-varies"
        "A 404 for a goal says goal_not_found instead of not_found."
        breaks ["strict.errors.not-found-code"]
        collateral []
    ContentTypeAs400 "content-type-as-400"
        "A body with a Content-Type other than JSON is refused with 400 instead of 415."
        breaks ["strict.input.content-type-415"]
        collateral []

    // ---- holes: judge-owned writes by other verbs, bounds, refs, sizes ----
    PostPutStateApplied "post-put-state-applied"
        "POST and PUT to {base}/{id} are served as an upsert that applies the body's state."
        breaks ["core.judge-only.post-put-state"]
        collateral []
    PatchBoundsMerged "patch-bounds-merged"
        "PATCH {bounds} is merged into the goal's bounds with no check that they only tighten, so a client can raise or drop a bound."
        breaks ["core.patch.bounds-kept"]
        collateral []
    PatchRefsUnsaved "patch-refs-unsaved"
        "PATCH of completion.verifierRef or continuation answers 200 with the change but never stores it."
        breaks ["behavior.patch.refs-stored", "behavior.patch.refs-take-effect"]
        collateral ["behavior.escalation.resume-keeps-progress"]
    MixedBoundTypesDropped "mixed-bound-types-dropped"
        "A wrongly typed bound beside a valid one is dropped and the goal stored with the valid one."
        breaks ["core.create.bound-type-beside-valid"]
        collateral []
    BodyLimitMissing "body-limit-missing"
        "No limit on body or objective size: a create or PATCH of any size is stored."
        breaks ["hardening.limits.huge-body", "hardening.limits.body-413"]
        collateral ["strict.errors.payload-too-large-code"]

    // ---- fail closed: a fire already queued when pause or abandon answered ----
    StaleFireAfterPause "stale-fire-after-pause"
        "Pause leaves the fire the scheduler already queued in place, and that one fire is dispatched without re-checking the goal."
        breaks ["observed.pause.no-dispatch"]
        collateral ["observed.pause.resume-dispatches"]
    StaleFireAfterAbandon "stale-fire-after-abandon"
        "Abandon leaves the fire the scheduler already queued in place, and that one fire is dispatched without re-checking the goal."
        breaks ["observed.abandon.no-dispatch"]
        collateral []

    // ---- rules that only collateral used to catch ----
    ResumeForgetsSchedule "resume-forgets-schedule"
        "Resume of a paused schedule goal clears the pause but leaves its next fire an hour away, so runs do not start again."
        breaks ["behavior.pause.resume-rearms", "observed.pause.resume-dispatches"]
        collateral ["behavior.pause.disarms-schedule"]
    // Every scenario that reads a goal's tag back leans on it: the
    // collateral is every requirement of such a scenario.
    GetWithoutEtag "get-without-etag"
        "GET {base}/{id} answers the goal without its ETag header."
        breaks ["strict.get.etag"]
        collateral [
            "behavior.terminal.continue-refused",
            "behavior.terminal.final",
            "core.create.location",
            "core.create.returns-active-goal",
            "core.errors.malformed-json",
            "core.get.returns-goal",
            "core.judge-only.patch-identity",
            "core.judge-only.patch-last-verdict",
            "core.judge-only.patch-progress",
            "core.judge-only.patch-state",
            "core.judge-only.refusal-changes-nothing",
            "core.lifecycle.abandon",
            "core.tenancy.goal-404",
            "core.terminal.no-edit",
            "core.terminal.no-transition",
            "hardening.auth.anonymous-goals",
            "hardening.auth.bad-credentials",
            "hardening.etag.changes-on-change",
            "hardening.etag.every-response",
            "hardening.if-match.abandon",
            "hardening.if-match.patch",
            "hardening.if-match.pause",
            "hardening.if-match.resume",
            "hardening.if-match.semantics",
            "hardening.input.content-type",
            "hardening.input.deep-nesting",
            "hardening.input.duplicate-keys",
            "hardening.input.invalid-utf8",
            "hardening.input.malformed-json",
            "hardening.limits.body-413",
            "hardening.race.patch-one-winner",
            "hardening.tenancy.goal-endpoints",
            "hardening.tenancy.seams",
        ]
    // Every scenario that abandons a goal leans on abandon: the collateral
    // is every requirement of such a scenario.
    AbandonAnswersUnsaved "abandon-answers-unsaved"
        "Abandon answers 200 with the goal abandoned but never stores the change."
        breaks ["core.lifecycle.abandon"]
        collateral [
            "behavior.escalation.abandon",
            "behavior.escalation.halts",
            "behavior.events.closed-once",
            "behavior.events.sequence-increasing",
            "behavior.pause.disarms-schedule",
            "behavior.pause.resume-rearms",
            "behavior.terminal.continue-refused",
            "behavior.terminal.final",
            "core.auth.credential-required",
            "core.errors.envelope",
            "core.list.filter-state",
            "core.lookup.unknown-id",
            "core.tenancy.goal-404",
            "core.terminal.no-edit",
            "core.terminal.no-transition",
            "hardening.auth.anonymous-goals",
            "hardening.auth.bad-credentials",
            "hardening.etag.every-response",
            "hardening.if-match.abandon",
            "hardening.race.abandon-once",
            "hardening.tenancy.goal-endpoints",
            "hardening.tenancy.lists",
            "observed.abandon.no-dispatch",
            "observed.close.late-answer-ignored",
            "observed.escalation.halts-dispatch",
            "observed.escalation.no-verdict",
            "observed.heartbeat.fires-on-probe",
            "observed.heartbeat.probe-failure-fires-nothing",
            "observed.pause.no-dispatch",
            "observed.pause.resume-dispatches",
            "strict.errors.terminal-code",
        ]
    // Likewise for every scenario that pauses a goal.
    PauseRefused "pause-refused"
        "Pause is not implemented: it answers 409 for every goal."
        breaks ["core.pause.keeps-state"]
        collateral [
            "behavior.bound.wall-clock",
            "behavior.bound.wall-clock-no-late-run",
            "behavior.pause.continue-refused",
            "behavior.pause.disarms-schedule",
            "behavior.pause.resume-rearms",
            "behavior.terminal.continue-refused",
            "behavior.terminal.final",
            "core.errors.envelope",
            "core.lifecycle.abandon",
            "core.lookup.unknown-id",
            "core.pause.resume-attention",
            "core.tenancy.goal-404",
            "core.terminal.no-edit",
            "core.terminal.no-transition",
            "hardening.auth.anonymous-goals",
            "hardening.etag.every-response",
            "hardening.if-match.pause",
            "hardening.if-match.resume",
            "hardening.tenancy.goal-endpoints",
            "observed.pause.no-dispatch",
            "observed.pause.resume-dispatches",
            "strict.errors.terminal-code",
        ]
    ObjectiveCachedAtFirstRun "objective-cached-at-first-run"
        "The objective sent to the arm is read once, at the goal's first run, so an edited objective never reaches the worker."
        breaks ["observed.projection.objective-as-data"]
        collateral ["observed.events.content-free", "observed.projection.verifier-content-free"]
    JudgeGetsPreviousOutput "judge-gets-previous-output"
        "The verifier is sent the output of the goal's previous run instead of the output of the run it judges."
        breaks ["observed.verifier.judges-run-output"]
        collateral ["observed.run-ids.agree"]
    DeepNesting500 "deep-nesting-500"
        "A body nested deeper than the parser's recursion limit is answered 500 instead of refused with 400."
        breaks ["hardening.input.deep-nesting"]
        collateral []
    // Every bound scenario ends with a continue that must be refused.
    ContinueTerminalAnswers200 "continue-terminal-answers-200"
        "continue on a satisfied, abandoned or bound-exceeded goal answers 200 with the goal and no evaluation instead of 409."
        breaks ["behavior.terminal.continue-refused", "hardening.race.continue-bound"]
        collateral [
            "behavior.bound.cost",
            "behavior.bound.iterations-exact",
            "behavior.converge.satisfied",
            "behavior.escalation.abandon",
            "behavior.events.closed-once",
            "behavior.events.evaluated-per-verdict",
            "behavior.terminal.final",
            "hardening.race.schedule-and-continue",
            "observed.bound.iterations-manual",
            "observed.cost.worker-reported",
            "observed.projection.remaining-cost",
            "observed.webhooks.calls-urls",
            "strict.bound.cost-budget",
            "strict.bound.cost-budget-decimal",
        ]

    HeartbeatIgnoresProbe "heartbeat-ignores-probe"
        "Under heartbeat continuation every probe fires a run, whatever it answered."
        breaks [
            "observed.heartbeat.fires-on-probe",
            "observed.heartbeat.probe-failure-fires-nothing",
        ]
        collateral []
    ProbeErrorFires "probe-error-fires"
        "A heartbeat probe that fails (error status, not JSON, invalid) fires a run."
        breaks ["observed.heartbeat.probe-failure-fires-nothing"]
        collateral []
    EgressRefsAccepted "egress-refs-accepted"
        "Webhook refs into internal addresses (cloud metadata, private, unspecified, loopback) are accepted at create and PATCH while discovery still advertises the egress policy."
        breaks ["hardening.egress.internal-refs-refused"]
        collateral []
    ListPagingIgnored "list-paging-ignored"
        "The goals list ignores `limit` and `after`: every goal, no Link, a bad limit accepted."
        breaks ["hardening.lists.paging"]
        collateral []
    // ---- what a goal tells its worker and the person resolving it ----
    ArmFeedbackMissing "arm-feedback-missing"
        "The arm request never says how the previous verdict went: `previous` is always null."
        breaks ["observed.projection.previous-outcome"]
        collateral []
    EscalationReasonDropped "escalation-reason-dropped"
        "GET {base}/{id}/escalation answers the interrupt's kind with an empty reason."
        breaks ["observed.escalation.reason-shown"]
        collateral []
    EscalationOtherTenant "escalation-other-tenant"
        "GET {base}/{id}/escalation forgets the owner check: another tenant reads the reason."
        breaks ["observed.escalation.reason-shown"]
        collateral []
    ResolutionNoteDropped "resolution-note-dropped"
        "The run after a resume is not told how the escalation was resolved: the arm request has no `resolution`."
        breaks ["observed.escalation.resolution-note"]
        collateral []
}

impl Mutant {
    /// The registry entry.
    pub fn info(self) -> &'static MutantInfo {
        // Every variant has exactly one entry, in declaration order.
        &REGISTRY[self as usize]
    }

    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// The mutant named `name` (what `--mutant` takes).
    pub fn parse(name: &str) -> Option<Mutant> {
        REGISTRY
            .iter()
            .find(|info| info.name == name)
            .map(|info| info.mutant)
    }
}

/// Parses `--mutant NAME`; an unknown name lists the known ones.
pub fn parse_arg(name: &str) -> Result<Mutant, String> {
    Mutant::parse(name).ok_or_else(|| {
        let known: Vec<&str> = REGISTRY.iter().map(|info| info.name).collect();
        format!("unknown mutant {name:?}; known: {}", known.join(", "))
    })
}

impl std::fmt::Display for Mutant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The names of the mutants that break `requirement`'s own rule, in
/// registry order; empty when it is not mutation-verified.
pub fn breaking(requirement: &str) -> Vec<&'static str> {
    REGISTRY
        .iter()
        .filter(|info| info.breaks.contains(&requirement))
        .map(|info| info.name)
        .collect()
}

/// The names of the mutants that must fail `requirement` (its own rule or
/// collateral), in registry order.
pub fn killing(requirement: &str) -> Vec<&'static str> {
    REGISTRY
        .iter()
        .filter(|info| info.kills.contains(&requirement))
        .map(|info| info.name)
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn entries_follow_the_variants() {
        for (index, info) in REGISTRY.iter().enumerate() {
            assert_eq!(info.mutant as usize, index, "{}", info.name);
            assert_eq!(info.mutant.info().name, info.name);
            assert_eq!(Mutant::parse(info.name), Some(info.mutant));
        }
        assert_eq!(Mutant::parse("no-such-mutant"), None);
    }

    #[test]
    fn names_are_unique_kebab_case_and_every_mutant_kills_something() {
        let mut names = BTreeSet::new();
        for info in REGISTRY {
            assert!(names.insert(info.name), "{} twice", info.name);
            assert!(
                info.name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
                "{}",
                info.name
            );
            assert!(!info.breaks.is_empty(), "{} breaks nothing", info.name);
            assert!(
                info.collateral.iter().all(|id| !info.breaks.contains(id)),
                "{} lists a requirement as both broken and collateral",
                info.name
            );
            let kills: BTreeSet<_> = info.kills.iter().collect();
            assert_eq!(
                kills.len(),
                info.kills.len(),
                "{} repeats a kill",
                info.name
            );
            assert!(info.description.ends_with('.'), "{}", info.name);
        }
    }

    #[test]
    fn unknown_names_list_the_known_ones() {
        assert_eq!(parse_arg("cross-tenant-read"), Ok(Mutant::CrossTenantRead));
        let refused = parse_arg("nope").expect_err("unknown");
        assert!(refused.contains("off-by-one-iterations"), "{refused}");
    }

    #[cfg(feature = "mutants")]
    #[test]
    fn serve_takes_a_mutant() {
        use clap::Parser;
        let parsed = crate::cli::Cli::try_parse_from([
            "goalpost-host",
            "serve",
            "--mutant",
            "off-by-one-iterations",
        ])
        .expect("valid");
        let crate::cli::Invocation::Serve(serve) = parsed.invocation() else {
            panic!("expected serve");
        };
        assert_eq!(
            serve.host.into_config().mutant,
            Some(Mutant::OffByOneIterations)
        );
        assert!(
            crate::cli::Cli::try_parse_from(["goalpost-host", "serve", "--mutant", "nope"])
                .is_err()
        );
        let preset = crate::Config::conformance_in_memory(Vec::new());
        assert_eq!(preset.mutant, None);
    }

    #[cfg(not(feature = "mutants"))]
    #[test]
    fn the_default_build_has_no_mutant_switch() {
        use clap::Parser;
        assert!(crate::cli::Cli::try_parse_from([
            "goalpost-host",
            "serve",
            "--mutant",
            "off-by-one-iterations",
        ])
        .is_err());
    }

    #[test]
    fn killing_lists_the_mutants_of_a_requirement() {
        assert_eq!(
            killing("core.discovery.shape"),
            vec!["discovery-duplicate-modes"]
        );
        assert!(killing("core.no-such-requirement").is_empty());
    }

    #[test]
    fn breaking_counts_only_a_requirement_whose_rule_is_broken() {
        // `create-without-location` fails the create scenario's first step,
        // so it also fails core.create.returns-active-goal: collateral.
        assert!(killing("core.create.returns-active-goal").contains(&"create-without-location"));
        assert!(!breaking("core.create.returns-active-goal").contains(&"create-without-location"));
        assert_eq!(
            breaking("core.create.location"),
            vec!["create-without-location"]
        );
    }
}
