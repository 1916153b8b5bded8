//! Every mutant this host knows, by name: what `--mutant` takes. Which
//! requirements each one fails is the suite's data, in
//! scenarios/mutants.json.

/// One registered mutant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MutantInfo {
    pub mutant: Mutant,
    /// What `--mutant` takes: kebab-case, unique.
    pub name: &'static str,
    /// The rule it breaks and how, in one sentence.
    pub description: &'static str,
}

macro_rules! registry {
    ($($variant:ident $name:literal $description:literal)*) => {
        /// Every mutant this host knows.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Mutant {
            $($variant,)*
        }

        /// Every mutant, in declaration order.
        pub const REGISTRY: &[MutantInfo] = &[
            $(MutantInfo {
                mutant: Mutant::$variant,
                name: $name,
                description: $description,
            },)*
        ];
    };
}

registry! {
    // ---- §1–§2 wire surface (core) ----
    DiscoveryDuplicateModes "discovery-duplicate-modes"
        "Discovery lists a continuation mode twice, so agents.goals.continuation is not a set."
    CreateWithoutLocation "create-without-location"
        "A create answers 201 without the Location header."
    OwnerFromBody "owner-from-body"
        "A create that names owner.tenant in its body is stored under that tenant instead of the caller's."
    DefaultBounds "default-bounds"
        "A create without bounds (or with bounds: {}) is given default bounds instead of 422 bounds_required."
    NegativeBoundsClamped "negative-bounds-clamped"
        "Out-of-range bounds are clamped into range (0 or 1.5 iterations become 1, negative cost or timeout 0) instead of refused."
    UnknownKeysDropped "unknown-keys-dropped"
        "Unknown keys in a create body are silently dropped instead of refused with 400."
    NumericStringsCoerced "numeric-strings-coerced"
        "A bound written as a numeric string (\"3\") is coerced to a number instead of refused with 400."
    CreateClaimsKept "create-claims-kept"
        "A create body's state, progress and completion.lastVerdict are stored as claimed."
    ListFilterIgnored "list-filter-ignored"
        "GET {base}?state=S ignores the filter and lists every goal of the caller."
    UnknownStateListsNothing "unknown-state-lists-nothing"
        "A list filter naming no state answers 200 with an empty list instead of 400."
    MissingGoalConflict "missing-goal-conflict"
        "Pause, resume and abandon of a goal the caller cannot see answer 409 goal_terminal instead of 404."
    PatchAnswersUnsaved "patch-answers-unsaved"
        "PATCH answers 200 with the edited objective but never stores it."
    PatchStateApplied "patch-state-applied"
        "PATCH {state} is applied to the goal instead of refused with 422 judge_owned_field."
    PatchProgressIgnored "patch-progress-ignored"
        "PATCH {progress} is silently ignored with 200 instead of refused with 422 judge_owned_field."
    PatchVerdictApplied "patch-verdict-applied"
        "PATCH {completion: {lastVerdict}} stores the verdict instead of refusing with 422 judge_owned_field."
    PatchIdentityIgnored "patch-identity-ignored"
        "PATCH {owner} or {id} is silently ignored with 200 instead of refused with 422 judge_owned_field."
    RefusalStillWrites "refusal-still-writes"
        "A PATCH refused for a judge-owned field still applies its other fields."
    TerminalResumeAllowed "terminal-resume-allowed"
        "Resume of a satisfied, abandoned or bound-exceeded goal makes it active again."
    TerminalPatchAllowed "terminal-patch-allowed"
        "PATCH of a satisfied, abandoned or bound-exceeded goal is applied."
    AttentionIgnoresPause "attention-ignores-pause"
        "The attention view is computed from the state alone, so a paused goal reads active."
    CrossTenantRead "cross-tenant-read"
        "GET {base}/{id} returns a goal whatever tenant owns it."
    ListLeaksTenants "list-leaks-tenants"
        "A list with a state filter forgets the tenant clause and shows every tenant's goals."
    AnonymousList "anonymous-list"
        "The goal list is readable without a credential (it answers an empty list instead of 401)."
    UnknownRouteOk "unknown-route-ok"
        "An unknown route under {base} answers 200 {} instead of 404 with the error envelope."
    MalformedBodyAsEmpty "malformed-body-as-empty"
        "A request body that is not JSON is read as {} instead of refused with 400."

    // ---- §3 continuation, judging and bounds ----
    OffByOneIterations "off-by-one-iterations"
        "The iteration bound is compared with > instead of >=, so maxLoopIterations N allows N+1 runs."
    ScheduleIgnoresIterationBound "schedule-ignores-iteration-bound"
        "The iteration bound is checked on continue only: a schedule arm keeps firing past maxLoopIterations."
    CostCheckedBeforeAdding "cost-checked-before-adding"
        "The cost bound is decided on the spend before the run's own cost, so the goal closes one run late."
    DeadlineIgnoredWhenIdle "deadline-ignored-when-idle"
        "The wall-clock bound is checked only when a run is about to start, so an idle or paused goal stays open past its deadline."
    EnvironmentalUncounted "environmental-uncounted"
        "A run whose run or judge failed environmentally does not count toward maxLoopIterations."
    EscalationIgnored "escalation-ignored"
        "A run's escalation is dropped: the run is judged like any other and the goal stays active."
    EscalationJudged "escalation-judged"
        "An escalated run still gets a (failed) verdict: an evaluation and a goal.evaluated event."
    EscalationUncounted "escalation-uncounted"
        "An escalated run is not counted in progress.iterations or contributingRunIds."
    ResumeResetsProgress "resume-resets-progress"
        "Resume of an escalated goal starts it over: progress and spent cost go back to zero."
    EscalatedAbandonRefused "escalated-abandon-refused"
        "Abandon of an escalated goal is refused with 409 goal_escalated."
    StaleTimerAfterPause "stale-timer-after-pause"
        "The scheduler keeps its own timers and its fire does not re-check pause, so a paused schedule goal keeps running."
    NoFailClosedCheck "no-fail-closed-check"
        "A scheduled fire dispatches from the scheduler's own timers without re-reading the goal, so closed goals keep getting runs."
    ContinueWhilePaused "continue-while-paused"
        "continue does not check pause: a paused goal runs an iteration."
    BoundBeforeVerdict "bound-before-verdict"
        "The decision checks the bounds before the verdict, so a satisfied verdict on the last allowed iteration closes bound-exceeded."
    SatisfiedKeepsRunning "satisfied-keeps-running"
        "A satisfied verdict closes the goal only when the next run comes back, so one more run is dispatched."
    LastVerdictPreviousRun "last-verdict-previous-run"
        "lastVerdict.runId names the run before the one judged."
    EvaluatedWrongRun "evaluated-wrong-run"
        "goal.evaluated carries the previous run's id instead of the evaluated run's."
    EvaluatedIterationsBeforeRun "evaluated-iterations-before-run"
        "goal.evaluated.iterations counts the runs before the evaluated one."
    EvaluatedMissingOnClose "evaluated-missing-on-close"
        "The verdict that closes a goal emits only goal.closed, not its goal.evaluated."
    ClosedEventTwice "closed-event-twice"
        "Abandon emits goal.closed twice (once by the handler, once by the state change)."
    LateVerdictRecorded "late-verdict-recorded"
        "Abandon does not cancel the run in flight, and its verdict is recorded on the closed goal."
    CriteriaIgnored "criteria-ignored"
        "The judge's overall flag decides alone: a failing criterion does not make the verdict unsatisfied."
    CriteriaNotRecorded "criteria-not-recorded"
        "Per-criterion verdicts are aggregated but not recorded in the evaluation."
    RefsCachedAtFirstRun "refs-cached-at-first-run"
        "The verifier and arm are resolved once, at the goal's first run, so a PATCH of the refs never takes effect."
    WorkerClaimCounted "worker-claim-counted"
        "A worker output saying done: true closes the goal satisfied without asking the verifier."
    ArmFailureJudged "arm-failure-judged"
        "A run whose worker failed is still sent to the verifier (with a null output) and judged."
    VerifierGetsObjective "verifier-gets-objective"
        "The verifier call carries the objective inside the run output."
    ContinueEvaluationNextIteration "continue-evaluation-next-iteration"
        "continue answers with its evaluation numbered as the next iteration."

    // ---- §4 seams: events and webhooks ----
    ObjectiveInEvents "objective-in-events"
        "An edit emits a goal.updated event whose payload carries the new objective."
    EventsSequencePerType "events-sequence-per-type"
        "Event sequence numbers are counted per event type, so they do not increase across types."
    AfterCursorIgnored "after-cursor-ignored"
        "events?after=SEQ ignores the cursor and lists every event."
    PayloadGoalPath "payload-goal-path"
        "Event payloads name the goal by its resource path instead of its id."
    EvaluationsNewestFirst "evaluations-newest-first"
        "The evaluations list is ordered newest first."
    WrongWebhookSecret "wrong-webhook-secret"
        "Webhook calls are signed with a secret of the host's own making instead of the configured one."
    WebhookErrorStatusRead "webhook-error-status-read"
        "A webhook answer with an error status is read as if it were a 200."
    WebhookNoTimeout "webhook-no-timeout"
        "Webhook calls have no timeout of their own: a verifier answering after 5 s is still believed."
    VerifierAnswerCoerced "verifier-answer-coerced"
        "Webhook answers are read loosely instead of checked against their schema (\"yes\" is true, confidence is clamped)."
    DeadlineAsEpoch "deadline-as-epoch"
        "The projection's remaining.deadline is sent as epoch milliseconds instead of an RFC 3339 string."
    RemainingIterationsOffByOne "remaining-iterations-off-by-one"
        "remaining.iterations counts the run being dispatched as already spent."
    RemainingCostIgnoresSpend "remaining-cost-ignores-spend"
        "remaining.costUsd is maxCostUsd whatever was spent."
    RemainingDeadlineMoving "remaining-deadline-moving"
        "remaining.deadline is computed from the dispatch time instead of createdAt."
    // ---- hardening: concurrency control, idempotency, hostile input ----
    OwnerCheckMissing "owner-check-missing"
        "Goal lookups forget the owner check: any tenant reads and changes any goal by id."
    EtagMissingOnTransitions "etag-missing-on-transitions"
        "Pause, resume and abandon answer the goal without its ETag header."
    EtagUnchangedByRuns "etag-unchanged-by-runs"
        "An iteration's record does not bump the goal's version, so its ETag survives a run."
    IfMatchIgnoredOnTransitions "if-match-ignored-on-transitions"
        "Pause, resume and abandon ignore If-Match."
    IfMatchIgnoredOnPatch "if-match-ignored-on-patch"
        "PATCH ignores If-Match."
    IfMatchWeakAccepted "if-match-weak-accepted"
        "If-Match compares weakly: W/\"tag\" matches the current tag."
    IfMatchCheckedApart "if-match-checked-apart"
        "If-Match on PATCH is checked before the write instead of with it, so concurrent PATCHes carrying one tag all win."
    ContinueWithoutLock "continue-without-lock"
        "Iterations of one goal are not serialised, so concurrent continues and fires each dispatch."
    IdempotencyKeyIgnored "idempotency-key-ignored"
        "Idempotency-Key is ignored: every create makes a new goal."
    IdempotencyBodyUnchecked "idempotency-body-unchecked"
        "A used Idempotency-Key answers its first goal whatever the new body says."
    IdempotencyKeysGlobal "idempotency-keys-global"
        "Idempotency-Keys are one namespace for every tenant: another tenant's key replays the first tenant's goal."
    IdempotencyNotAtomic "idempotency-not-atomic"
        "The Idempotency-Key is looked up before the insert but not with it, so concurrent creates with one key each make a goal."
    OversizeBodyAs400 "oversize-body-as-400"
        "A body over the size limit is refused with 400 as unreadable instead of 413."
    DuplicateKeysLastWins "duplicate-keys-last-wins"
        "A JSON object with a repeated key is read with the last value instead of refused."
    HugeNumbersSaturate "huge-numbers-saturate"
        "Numbers too large for a double are saturated to the largest integer instead of refused."
    ContentTypeIgnored "content-type-ignored"
        "A body is read as JSON whatever its Content-Type says."
    AnonymousSeams "anonymous-seams"
        "The seam routes look goals up without a credential, so an anonymous caller gets 404 instead of 401."
    BadCredentialNotFound "bad-credential-not-found"
        "A goal request with a credential the host does not know is looked up before it is authenticated, so it answers 404 instead of 401."

    // ---- strict: the profile's exact readings ----
    CreateAnswers200 "create-answers-200"
        "A create answers 200 instead of 201."
    LocationWrongPath "location-wrong-path"
        "A create's Location names a path that does not serve the goal."
    CostExceedsNotReaches "cost-exceeds-not-reaches"
        "The cost bound stops only when spend exceeds maxCostUsd, not when it reaches it."
    CostSummedAsFloat "cost-summed-as-float"
        "Spend is summed in binary floating point, so ten runs of 0.1 stay under a 1.0 budget."
    BoundsRange422 "bounds-range-422"
        "Out-of-range bounds are refused with 422 instead of 400."
    JudgeOwnedCreate400 "judge-owned-create-400"
        "A create naming a judge-owned field is refused with 400 invalid_request instead of 422 judge_owned_field."
    MalformedJsonAsInvalidRequest "malformed-json-as-invalid-request"
        "A body that is not JSON is refused with code invalid_request instead of malformed_json."
    InvalidRequestWithoutDetails "invalid-request-without-details"
        "400 invalid_request carries no details naming the offending pointer or parameter."
    UnauthorizedAsForbidden "unauthorized-as-forbidden"
        "A missing or unknown credential is answered 401 with code forbidden."
    NotFoundCodeVaries "not-found-code-varies"
        "A 404 for a goal says goal_not_found instead of not_found."
    ContentTypeAs400 "content-type-as-400"
        "A body with a Content-Type other than JSON is refused with 400 instead of 415."

    // ---- holes: judge-owned writes by other verbs, bounds, refs, sizes ----
    PostPutStateApplied "post-put-state-applied"
        "POST and PUT to {base}/{id} are served as an upsert that applies the body's state."
    PatchBoundsMerged "patch-bounds-merged"
        "PATCH {bounds} is merged into the goal's bounds with no check that they only tighten, so a client can raise or drop a bound."
    PatchRefsUnsaved "patch-refs-unsaved"
        "PATCH of completion.verifierRef or continuation answers 200 with the change but never stores it."
    MixedBoundTypesDropped "mixed-bound-types-dropped"
        "A wrongly typed bound beside a valid one is dropped and the goal stored with the valid one."
    BodyLimitMissing "body-limit-missing"
        "No limit on body or objective size: a create or PATCH of any size is stored."

    // ---- fail closed: a fire already queued when pause or abandon answered ----
    StaleFireAfterPause "stale-fire-after-pause"
        "Pause leaves the fire the scheduler already queued in place, and that one fire is dispatched without re-checking the goal."
    StaleFireAfterAbandon "stale-fire-after-abandon"
        "Abandon leaves the fire the scheduler already queued in place, and that one fire is dispatched without re-checking the goal."

    // ---- rules that only collateral used to catch ----
    ResumeForgetsSchedule "resume-forgets-schedule"
        "Resume of a paused schedule goal clears the pause but leaves its next fire an hour away, so runs do not start again."
    // Every scenario that reads a goal's tag back leans on it: the
    // collateral is every requirement of such a scenario.
    GetWithoutEtag "get-without-etag"
        "GET {base}/{id} answers the goal without its ETag header."
    // Every scenario that abandons a goal leans on abandon: the collateral
    // is every requirement of such a scenario.
    AbandonAnswersUnsaved "abandon-answers-unsaved"
        "Abandon answers 200 with the goal abandoned but never stores the change."
    // Likewise for every scenario that pauses a goal.
    PauseRefused "pause-refused"
        "Pause is not implemented: it answers 409 for every goal."
    ObjectiveCachedAtFirstRun "objective-cached-at-first-run"
        "The objective sent to the arm is read once, at the goal's first run, so an edited objective never reaches the worker."
    JudgeGetsPreviousOutput "judge-gets-previous-output"
        "The verifier is sent the output of the goal's previous run instead of the output of the run it judges."
    DeepNesting500 "deep-nesting-500"
        "A body nested deeper than the parser's recursion limit is answered 500 instead of refused with 400."
    // Every bound scenario ends with a continue that must be refused.
    ContinueTerminalAnswers200 "continue-terminal-answers-200"
        "continue on a satisfied, abandoned or bound-exceeded goal answers 200 with the goal and no evaluation instead of 409."

    HeartbeatIgnoresProbe "heartbeat-ignores-probe"
        "Under heartbeat continuation every probe fires a run, whatever it answered."
    ProbeErrorFires "probe-error-fires"
        "A heartbeat probe that fails (error status, not JSON, invalid) fires a run."
    EgressRefsAccepted "egress-refs-accepted"
        "Webhook refs into internal addresses (cloud metadata, private, unspecified, loopback) are accepted at create and PATCH while discovery still advertises the egress policy."
    ListPagingIgnored "list-paging-ignored"
        "The goals list ignores `limit` and `after`: every goal, no Link, a bad limit accepted."
    ReportedRunsAnyMode "reported-runs-any-mode"
        "POST {base}/{id}/runs takes a run for a goal in any continuation mode, beside the host's own runs of a schedule goal."
    ReportedRunEscalationDropped "reported-run-escalation-dropped"
        "A reported run's escalate is dropped, so the run is judged instead of halting its goal."
    ReportedRunKeyIgnored "reported-run-key-ignored"
        "A reported run's runId is ignored: the same run reported twice is two iterations."
    ReportedRunBodyUnchecked "reported-run-body-unchecked"
        "A runId reported before answers its first run whatever the new body says."
    UnjudgedRunTrustsClaims "unjudged-run-trusts-claims"
        "A run whose goal names no verifier is judged by its own output's claims (done or satisfied true) instead of failing unjudged."
    CommitmentFiredAtOnce "commitment-fired-at-once"
        "A commitment goal's run that commits to a check-in is fired again at once instead of when committed."
    UncommittedGoalRefired "uncommitted-goal-refired"
        "A commitment goal whose run committed to nothing is fired again a second later, as if on a schedule."
    ReportedRunLenient "reported-run-lenient"
        "The reported-run parser drops unknown fields instead of refusing them, so a bad report is judged and recorded."
    ArmFeedbackMissing "arm-feedback-missing"
        "The arm request never says how the previous verdict went: `previous` is always null."
    EscalationReasonDropped "escalation-reason-dropped"
        "GET {base}/{id}/escalation answers the interrupt's kind with an empty reason."
    EscalationOtherTenant "escalation-other-tenant"
        "GET {base}/{id}/escalation forgets the owner check: another tenant reads the reason."
    ResolutionNoteDropped "resolution-note-dropped"
        "The run after a resume is not told how the escalation was resolved: the arm request has no `resolution`."
    WebhookCommitmentIgnored "webhook-commitment-ignored"
        "A URL arm's answer is read without its `commitment`: a commitment goal whose worker is a webhook never checks in again."

    // ---- the PostgreSQL store, run as a cluster (--db postgres://…) ----
    PostgresInMemoryLockOnly "postgres-in-memory-lock-only"
        "Each replica's reservation trusts its in-memory per-goal lock: the goal is read without a row lock, another replica's run in flight is not looked for, and (goal, iteration) is not unique."
    PostgresFiresUnclaimedUnlocked "postgres-fires-unclaimed-unlocked"
        "Every replica's scheduler takes every due goal (no claim, no SKIP LOCKED) and the reservation neither locks the goal's row nor looks for a run in flight, so two replicas fire one iteration."
    PostgresTrustsReplicaRead "postgres-trusts-replica-read"
        "Each replica keeps the goals it read or wrote in memory, schedules the ones that copy says are due and reserves their runs without re-reading the goal in the reservation's transaction, so a pause written by another replica goes unseen."
    PostgresKeysInReplicaMemory "postgres-keys-in-replica-memory"
        "Idempotency keys are kept in each replica's memory instead of the database, so a create retried on another replica makes a second goal."
    PostgresAppliesUnversioned "postgres-applies-unversioned"
        "A change is written whatever the goal's version (last writer wins), so replicas that decided on one read of the goal all write: concurrent abandons close it twice."

    // ---- PATCH and tags as some third-party hosts serve them ----
    PatchRefsDropped "patch-refs-dropped"
        "PATCH answers 200 having applied its objective but silently dropped its completion and continuation."
    EtagWeak "etag-weak"
        "Every ETag is sent weak (W/\"...\") and If-Match compares weakly, so the host honours only its own weak tags."
    PatchProgressApplied "patch-progress-applied"
        "PATCH {progress} sets the goal's iteration count instead of leaving it to the judge."
    PatchIdentityApplied "patch-identity-applied"
        "PATCH {owner} hands the goal to the named tenant instead of leaving its owner alone."

    // ---- MUSTs whose own rule no mutant broke yet ----
    CreateAnswersUnstamped "create-answers-unstamped"
        "A create answers the goal it built from the request, not the one it stored: without updatedAt, so GET of its id answers another goal."
    GetTimestampsToSeconds "get-timestamps-to-seconds"
        "GET {base}/{id} answers createdAt and updatedAt cut to the whole second instead of as stored."
    PauseRefusalBare "pause-refusal-bare"
        "Pause refuses with a bare 409 and no body, so the refusal carries no error envelope."
    DeadlineCloseLeavesQueuedFire "deadline-close-leaves-queued-fire"
        "The deadline close leaves the fire the scheduler already queued in place: it starts a run after the deadline and records its verdict on the closed goal."
    ClosingVerdictAskedTwice "closing-verdict-asked-twice"
        "When the iteration bound closes a goal, its URL verifier is called a second time for the last run, as a closing verdict."

    // ---- rules the coverage map found held loosely or not at all ----
    DeadlineUncheckedAtDispatch "deadline-unchecked-at-dispatch"
        "The fail-closed check before a dispatch ignores the wall-clock bound and the deadline sweep closes an idle goal 700 ms late (within its 1 s), so a run starts after the deadline."
    PatchClearsVerdict "patch-clears-verdict"
        "A PATCH of the objective, completion or continuation clears the goal's lastVerdict, as if the verdicts recorded under the old refs no longer held."
    HeartbeatCommitmentUnbounded "heartbeat-commitment-unbounded"
        "Heartbeat and commitment goals are dispatched and recorded without a look at their bounds: they run past maxLoopIterations, maxCostUsd and the deadline."
    CompleteRouteServed "complete-route-served"
        "POST {base}/{id}/complete is served as a client's completion: it closes the goal satisfied."
    AttentionOpenAfterClose "attention-open-after-close"
        "The attention view is computed from the pause flag alone, so a closed or escalated goal reads active instead of stopped."
    ModeSwitchKeepsTimer "mode-switch-keeps-timer"
        "A PATCH that switches a schedule or commitment goal to manual leaves the scheduler's timer for it in place, so the goal keeps being fired."
    WorkerAnswerLenient "worker-answer-lenient"
        "A worker's answer is read loosely instead of checked against its schema: unknown members dropped, an escalate without a kind escalates, a commitment's afterMs is clamped into range."
    VerifierConfidenceUnchecked "verifier-confidence-unchecked"
        "A verifier's confidence is clamped into 0..1 instead of checked, so an answer whose confidence is out of range is taken as a verdict."
    ReportedRunUnannounced "reported-run-unannounced"
        "A run reported through POST {base}/{id}/runs is judged and recorded without its goal.evaluated, so the host's own event list never shows it."
    EventStreamSilent "event-stream-silent"
        "The event stream discovery advertises answers 200 text/event-stream with a comment and no event."
    ZeroCostBoundIgnored "zero-cost-bound-ignored"
        "A maxCostUsd of 0 is read as no cost bound (a falsy check), so the goal runs on whatever its runs cost."
    EnvironmentalUnannounced "environmental-unannounced"
        "An environmental failure is recorded as an evaluation but emits no goal.evaluated, as if only a judge's verdict were an event."
    // ---- the attention extension (PROFILE.md "Profile `attention`") ----
    AttentionModesUnderAdvertised "attention-modes-under-advertised"
        "Discovery's attention member lists five modes, leaving out observe, though the host serves all six."
    AttentionModeTwice "attention-mode-twice"
        "A binding may be created in a mode another live binding of the goal already holds."
    AttentionStopReversible "attention-stop-reversible"
        "Resume makes a stopped or superseded binding active again."
    AttentionSupersededDispatched "attention-superseded-dispatched"
        "The fail-closed check before a binding's run reads a superseded binding as active, so it is still dispatched."
    AttentionRunsUnbounded "attention-runs-unbounded"
        "A binding's run is counted in its goal's progress but never held to its bounds, so bindings run past maxLoopIterations."
    AttentionObjectiveInStance "attention-objective-in-stance"
        "The projection splices the objective into the host's own stance text instead of carrying it only as the claim's data."
    AttentionFalsifierCloses "attention-falsifier-closes"
        "A falsify binding's answer may ask for closure as a pursuer's may, and is granted when the policy allows."
    AttentionObserverAdds "attention-observer-adds"
        "An observe binding's answer adds its evidence and verdict instead of changing nothing."
    AttentionCloseUnderVerifier "attention-close-under-verifier"
        "Under the verifier policy a request to close is granted without the judge's verdict."
    AttentionConfirmationAnyAuthority "attention-confirmation-any-authority"
        "A confirmation counts for either confirmed policy whatever authority gave it, so a host's confirmation closes a principal-confirmed goal."
    AttentionTenantConfirms "attention-tenant-confirms"
        "The confirmation endpoint takes a tenant's own token as a principal's authority."
    AttentionQuorumAcrossRevisions "attention-quorum-across-revisions"
        "A quorum counts approving verdicts of every revision, so an approval given before the claim was edited still counts."
    AttentionBlockingIgnored "attention-blocking-ignored"
        "Unresolved blocking evidence does not hold a request to close."
    AttentionPauseNeverWakes "attention-pause-never-wakes"
        "A binding paused until an instant is never woken: it stays paused after the instant passed."
    AttentionEventsCarryLabels "attention-events-carry-labels"
        "attention.evidence.added events carry the evidence's label, text the agent wrote, so attention events are not content-free."
    AttentionListFilterIgnored "attention-list-filter-ignored"
        "The tenant-wide binding list ignores its mode and status filters."
    AttentionOwnerUnchecked "attention-owner-unchecked"
        "The attention routes look a goal up without its owner, so another tenant reads and changes its bindings."
}

impl Mutant {
    /// Whether it breaks the PostgreSQL store: it needs `--db postgres://…`
    /// and shows only with several replicas on that database.
    pub fn needs_postgres(self) -> bool {
        self.name().starts_with("postgres-")
    }

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
    fn names_are_unique_kebab_case_and_described_in_a_sentence() {
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
            assert!(info.description.ends_with('.'), "{}", info.name);
        }
    }

    /// The suite's data (which requirements each mutant fails) lives in
    /// scenarios/mutants.json: it must list exactly these mutants, in this
    /// order, described the same.
    #[test]
    fn scenarios_mutants_json_lists_exactly_the_registry() {
        let text = include_str!("../../../scenarios/mutants.json");
        let document: serde_json::Value = serde_json::from_str(text).expect("mutants.json is JSON");
        let listed: Vec<(&str, &str)> = document["mutants"]
            .as_array()
            .expect("a mutants array")
            .iter()
            .map(|entry| {
                (
                    entry["name"].as_str().unwrap_or_default(),
                    entry["description"].as_str().unwrap_or_default(),
                )
            })
            .collect();
        let registered: Vec<(&str, &str)> = REGISTRY
            .iter()
            .map(|info| (info.name, info.description))
            .collect();
        for (name, _) in &listed {
            assert!(
                Mutant::parse(name).is_some(),
                "mutants.json names unknown mutant {name}"
            );
        }
        for info in REGISTRY {
            assert!(
                listed.iter().any(|(name, _)| *name == info.name),
                "{} has no entry in scenarios/mutants.json",
                info.name
            );
        }
        assert_eq!(listed, registered);
    }

    #[test]
    fn unknown_names_list_the_known_ones() {
        assert_eq!(parse_arg("cross-tenant-read"), Ok(Mutant::CrossTenantRead));
        let refused = parse_arg("nope").expect_err("unknown");
        assert!(refused.contains("off-by-one-iterations"), "{refused}");
    }
}
