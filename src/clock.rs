//! Time as the server reads it: unix milliseconds for deadlines and each
//! command's snapshot, a monotonic clock for budgets. Tests and the
//! in-process harness drive a `ManualClock` instead.

/// Current unix time in ms: the clock commands take their snapshot from.
pub fn unix_time_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The unix clock for deadlines and a monotonic one for budgets.
pub trait Clock {
    fn unix_ms(&mut self) -> i64;
    fn mono_us(&mut self) -> u64;
}

/// The real clocks.
pub struct SystemClock {
    origin: std::time::Instant,
}

impl Default for SystemClock {
    fn default() -> Self {
        Self {
            origin: std::time::Instant::now(),
        }
    }
}

impl Clock for SystemClock {
    fn unix_ms(&mut self) -> i64 {
        unix_time_ms()
    }

    fn mono_us(&mut self) -> u64 {
        self.origin.elapsed().as_micros() as u64
    }
}

/// A clock driven by hand: unix time stands where it is set, and the
/// monotonic clock advances `step_us` per reading (so budgets run out).
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    pub unix_ms: i64,
    pub mono_us: u64,
    pub step_us: u64,
}

impl Clock for ManualClock {
    fn unix_ms(&mut self) -> i64 {
        self.unix_ms
    }

    fn mono_us(&mut self) -> u64 {
        self.mono_us += self.step_us;
        self.mono_us
    }
}
