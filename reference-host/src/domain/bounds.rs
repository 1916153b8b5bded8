//! A goal's bounds: the limits that close it as `bound-exceeded`.

use super::money::MicroUsd;
use super::timestamp::Timestamp;

/// How `maxCostUsd` C stops a goal. RFC 0097 says a goal is exceeded when
/// its accumulated cost *exceeds* C; the profile lets a host read C as a
/// budget instead (reaching C exactly also stops), and `strict` pins that
/// reading.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CostReading {
    /// Reaching C exactly stops: no run starts with nothing left to spend.
    #[default]
    Budget,
    /// Only spending more than C stops: a goal at exactly C may run again.
    Exceeds,
}

impl CostReading {
    /// Whether `spent` has crossed the cap `cap` under this reading.
    pub fn crossed(self, spent: MicroUsd, cap: MicroUsd) -> bool {
        match self {
            CostReading::Budget => spent >= cap,
            CostReading::Exceeds => spent > cap,
        }
    }
}

/// The cost cap as the client wrote it (so it reads back unchanged, `1`
/// stays `1` and not `1.0`) and in micro-dollars (so comparisons are exact).
#[derive(Debug, Clone, PartialEq)]
pub struct CostCap {
    written: serde_json::Number,
    micros: MicroUsd,
}

impl CostCap {
    /// `None` for negative or non-finite amounts.
    pub fn from_number(written: serde_json::Number) -> Option<CostCap> {
        let usd = written.as_f64()?;
        MicroUsd::from_usd(usd).map(|micros| CostCap { written, micros })
    }

    pub fn written(&self) -> &serde_json::Number {
        &self.written
    }

    pub fn micros(&self) -> MicroUsd {
        self.micros
    }
}

/// At least one bound is always present (a goal without any is refused at
/// the boundary with `bounds_required`).
#[derive(Debug, Clone, PartialEq)]
pub struct Bounds {
    max_loop_iterations: Option<u64>,
    run_timeout_ms: Option<u64>,
    max_cost: Option<CostCap>,
}

impl Bounds {
    /// `None` when no bound is given or `maxLoopIterations` is 0.
    pub fn new(
        max_loop_iterations: Option<u64>,
        run_timeout_ms: Option<u64>,
        max_cost: Option<CostCap>,
    ) -> Option<Bounds> {
        if max_loop_iterations.is_none() && run_timeout_ms.is_none() && max_cost.is_none() {
            return None;
        }
        if max_loop_iterations == Some(0) {
            return None;
        }
        Some(Bounds {
            max_loop_iterations,
            run_timeout_ms,
            max_cost,
        })
    }

    pub fn max_loop_iterations(&self) -> Option<u64> {
        self.max_loop_iterations
    }

    pub fn run_timeout_ms(&self) -> Option<u64> {
        self.run_timeout_ms
    }

    pub fn max_cost(&self) -> Option<&CostCap> {
        self.max_cost.as_ref()
    }

    /// `createdAt + runTimeoutMs`; `None` when there is no wall-clock bound
    /// or it lies beyond the representable range (never reached).
    pub fn deadline(&self, created_at: Timestamp) -> Option<Timestamp> {
        self.run_timeout_ms
            .and_then(|ms| created_at.checked_add_ms(ms))
    }
}
