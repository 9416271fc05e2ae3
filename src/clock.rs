//! Time as the server reads it: unix milliseconds for deadlines and each
//! command's snapshot, a monotonic clock for budgets. Tests and the
//! in-process harness drive a `ManualClock` instead.

/// Current unix time in ms: the clock commands take their snapshot from.
/// Read once per batch of requests: `clock_gettime` (the vDSO's) and
/// one division, where `SystemTime` builds and checks a `Duration`.
#[inline]
pub fn unix_time_ms() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the struct it is given, nothing else.
    if unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) } != 0 {
        return 0;
    }
    // time_t and c_long are i64 on the 64-bit targets lapse builds for.
    ts.tv_sec * 1000 + ts.tv_nsec / 1_000_000
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

/// A cheap monotonic timestamp for timing commands (the slow log), in
/// `ticks`: the CPU's time-stamp counter where it runs at a constant rate
/// (x86-64 with `constant_tsc`: a few ns to read), else nanoseconds of
/// `Instant` (tens of ns: at two a command, 10% of a pipelined GET).
pub fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    if timer().tsc {
        // SAFETY: RDTSC reads a counter; it has no preconditions.
        #[allow(unused_unsafe)]
        return unsafe { core::arch::x86_64::_rdtsc() };
    }
    static BASE: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    BASE.get_or_init(std::time::Instant::now)
        .elapsed()
        .as_nanos() as u64
}

/// The command timer as Redis's INFO `monotonic_clock` names its own.
pub fn timer_name() -> String {
    let timer = timer();
    if timer.tsc {
        format!("X86 TSC @ {} ticks/us", timer.per_us)
    } else {
        "POSIX clock_gettime".to_string()
    }
}

/// How many ticks make a microsecond (to compare durations in ticks).
pub fn ticks_per_us() -> u64 {
    timer().per_us
}

/// Microseconds between two `ticks()` readings.
pub fn ticks_to_us(ticks: u64) -> u64 {
    ticks / ticks_per_us()
}

/// What `ticks` reads and at what rate.
struct Timer {
    tsc: bool,
    per_us: u64,
}

/// The timer, chosen once: the time-stamp counter if the CPU says it is
/// constant, its rate measured against `Instant` over 2 ms (the first
/// call); else `Instant`'s nanoseconds.
fn timer() -> &'static Timer {
    static TIMER: std::sync::OnceLock<Timer> = std::sync::OnceLock::new();
    TIMER.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            let flags = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
            if flags.contains(" constant_tsc") && flags.contains(" nonstop_tsc") {
                // SAFETY: as in `ticks`.
                #[allow(unused_unsafe)]
                let read = || unsafe { core::arch::x86_64::_rdtsc() };
                let (t0, i0) = (read(), std::time::Instant::now());
                while i0.elapsed() < std::time::Duration::from_millis(2) {}
                let (t1, us) = (read(), i0.elapsed().as_secs_f64() * 1e6);
                let rate = t1.wrapping_sub(t0) as f64 / us;
                if rate.is_finite() && rate >= 1.0 {
                    return Timer {
                        tsc: true,
                        per_us: rate as u64,
                    };
                }
            }
        }
        Timer {
            tsc: false,
            per_us: 1000,
        }
    })
}

#[cfg(test)]
mod tests {
    /// The same clock as `SystemTime`, in ms.
    #[test]
    fn unix_time_is_system_time() {
        let since_epoch = || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64)
        };
        let before = since_epoch();
        let ours = super::unix_time_ms();
        let after = since_epoch();
        assert!(before <= ours && ours <= after, "{before} {ours} {after}");
    }
}
