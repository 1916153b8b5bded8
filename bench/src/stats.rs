//! Percentiles, and what the kernel says about this process (resident
//! memory, CPU time).

use std::time::Duration;

/// Latency samples in microseconds.
#[derive(Debug, Clone, Default)]
pub struct Samples {
    micros: Vec<u64>,
}

impl Samples {
    pub fn push(&mut self, elapsed: Duration) {
        self.micros
            .push(u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX));
    }

    pub fn len(&self) -> usize {
        self.micros.len()
    }

    pub fn push_ms(&mut self, ms: i64) {
        self.micros
            .push(u64::try_from(ms).unwrap_or(0).saturating_mul(1000));
    }

    pub fn extend(&mut self, other: Samples) {
        self.micros.extend(other.micros);
    }

    /// Nearest-rank percentile (`p` in 0..=100); `None` without samples.
    pub fn percentile(&mut self, p: f64) -> Option<Duration> {
        if self.micros.is_empty() {
            return None;
        }
        self.micros.sort_unstable();
        let n = self.micros.len();
        // Nearest rank: the smallest value with at least p% of samples at or
        // below it.
        let rank = ((p / 100.0) * n as f64).ceil() as usize;
        let index = rank.clamp(1, n) - 1;
        Some(Duration::from_micros(self.micros[index]))
    }
}

/// `1.234 ms`, `56 µs`, `2.1 s`.
pub fn duration(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1000.0 {
        format!("{us:.0} µs")
    } else if us < 1e6 {
        format!("{:.1} ms", us / 1000.0)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}

/// A field of `/proc/self/status` in kB (`VmRSS`, `VmHWM`).
fn status_kb(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(field)?.strip_prefix(':')?;
        rest.trim().strip_suffix("kB")?.trim().parse().ok()
    })
}

/// Resident memory now, in bytes.
pub fn rss_bytes() -> Option<u64> {
    status_kb("VmRSS").map(|kb| kb * 1024)
}

/// The part of the resident memory that is file pages mapped into the
/// process (the store's memory-mapped database), in bytes: page cache the
/// kernel can take back, not heap.
pub fn rss_file_bytes() -> Option<u64> {
    status_kb("RssFile").map(|kb| kb * 1024)
}

/// The most resident memory this process has had, in bytes.
pub fn peak_rss_bytes() -> Option<u64> {
    status_kb("VmHWM").map(|kb| kb * 1024)
}

pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// CPU time (user + system) this process has used so far.
pub fn cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name may hold spaces; the fields we need follow its `)`.
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // After `)`: state is field 3, utime 14, stime 15 (1-based in proc(5)).
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    // USER_HZ is 100 on every Linux this runs on.
    Some(Duration::from_millis((utime + stime) * 10))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut samples = Samples::default();
        assert_eq!(samples.percentile(50.0), None);
        for ms in 1..=100 {
            samples.push(Duration::from_millis(ms));
        }
        assert_eq!(samples.percentile(50.0), Some(Duration::from_millis(50)));
        assert_eq!(samples.percentile(99.0), Some(Duration::from_millis(99)));
        assert_eq!(samples.percentile(100.0), Some(Duration::from_millis(100)));
        assert_eq!(samples.percentile(0.0), Some(Duration::from_millis(1)));
    }

    #[test]
    fn negative_lags_count_as_zero() {
        let mut samples = Samples::default();
        samples.push_ms(-5);
        samples.push_ms(7);
        assert_eq!(samples.percentile(100.0), Some(Duration::from_millis(7)));
        assert_eq!(samples.percentile(50.0), Some(Duration::ZERO));
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(duration(Duration::from_micros(56)), "56 µs");
        assert_eq!(duration(Duration::from_micros(1234)), "1.2 ms");
        assert_eq!(duration(Duration::from_millis(2100)), "2.10 s");
    }

    #[test]
    fn this_process_has_memory_and_cpu_time() {
        let rss = rss_bytes().expect("VmRSS");
        assert!(rss > 0);
        assert!(peak_rss_bytes().expect("VmHWM") >= rss);
        assert!(cpu_time().is_some());
    }
}
