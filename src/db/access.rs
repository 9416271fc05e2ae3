//! A key's access history for eviction, in the 24 bits Redis keeps per
//! object (`robj.lru`), here in what was padding of the dict entry: no
//! byte added per key.
//!
//! Under an LRU (or any non-LFU) policy the bits are the last access time
//! in seconds (Redis's `LRU_CLOCK`, wrapping every 194 days); under an LFU
//! policy they are the last decrement time in minutes (16 bits) and a
//! logarithmic access counter (8 bits), as Redis's `evict.c` keeps them.

/// The most the 24-bit LRU clock holds (Redis's `LRU_CLOCK_MAX`).
const LRU_CLOCK_MAX: u32 = (1 << 24) - 1;
/// A new key's LFU counter, so that it is not evicted before it had a
/// chance to be used (Redis's `LFU_INIT_VAL`).
pub const LFU_INIT_VAL: u8 = 5;

/// Which history the keys keep, and the LFU's settings
/// (`lfu-log-factor`, `lfu-decay-time` in minutes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AccessPolicy {
    pub lfu: bool,
    pub lfu_log_factor: u32,
    pub lfu_decay_time: u32,
}

/// 24 bits of history (see the module doc).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Access([u8; 3]);

impl Access {
    /// The raw 24 bits (DEBUG OBJECT's `lru:`).
    pub fn bits(self) -> u32 {
        u32::from_le_bytes([self.0[0], self.0[1], self.0[2], 0])
    }

    fn from_bits(bits: u32) -> Access {
        let [a, b, c, _] = bits.to_le_bytes();
        Access([a, b, c])
    }

    /// A key created at `now_ms`.
    pub fn fresh(policy: AccessPolicy, now_ms: i64) -> Access {
        if policy.lfu {
            Access::from_bits((lfu_minutes(now_ms) << 8) | u32::from(LFU_INIT_VAL))
        } else {
            Access::from_bits(lru_clock(now_ms))
        }
    }

    /// RESTORE's IDLETIME (seconds, under an LRU policy) or FREQ (under
    /// an LFU one), as Redis's `objectSetLRUOrLFU`: `None` when the
    /// policy keeps the other kind (the option is then ignored).
    pub fn restored(
        policy: AccessPolicy,
        now_ms: i64,
        idle_s: Option<i64>,
        freq: Option<u8>,
    ) -> Option<Access> {
        if policy.lfu {
            let freq = freq?;
            return Some(Access::from_bits(
                (lfu_minutes(now_ms) << 8) | u32::from(freq),
            ));
        }
        let idle = idle_s?.rem_euclid(i64::from(LRU_CLOCK_MAX));
        let mut at = i64::from(lru_clock(now_ms)) - idle;
        if at < 0 {
            at += i64::from(LRU_CLOCK_MAX);
        }
        Some(Access::from_bits(at as u32))
    }

    /// The history after an access at `now_ms`; `chance` in [0, 1) draws
    /// the LFU counter's logarithmic increment.
    pub fn touched(self, policy: AccessPolicy, now_ms: i64, chance: f64) -> Access {
        if !policy.lfu {
            return Access::from_bits(lru_clock(now_ms));
        }
        let mut counter = self.lfu_count(policy, now_ms);
        if counter < 255 {
            let base = f64::from(counter.saturating_sub(LFU_INIT_VAL));
            if chance < 1.0 / (base * f64::from(policy.lfu_log_factor) + 1.0) {
                counter += 1;
            }
        }
        Access::from_bits((lfu_minutes(now_ms) << 8) | u32::from(counter))
    }

    /// (LRU) milliseconds since the last access, at one-second resolution.
    pub fn idle_ms(self, now_ms: i64) -> u64 {
        let clock = lru_clock(now_ms);
        let then = self.bits();
        let seconds = if clock >= then {
            clock - then
        } else {
            clock + (LRU_CLOCK_MAX - then)
        };
        u64::from(seconds) * 1000
    }

    /// (LFU) the access counter, decayed by one per `lfu-decay-time`
    /// minutes since it was last updated (Redis's `LFUDecrAndReturn`).
    pub fn lfu_count(self, policy: AccessPolicy, now_ms: i64) -> u8 {
        let bits = self.bits();
        let (then, counter) = (bits >> 8, (bits & 0xff) as u8);
        if policy.lfu_decay_time == 0 {
            return counter;
        }
        let now = lfu_minutes(now_ms);
        let elapsed = if now >= then {
            now - then
        } else {
            65535 - then + now
        };
        let periods = elapsed / policy.lfu_decay_time;
        counter.saturating_sub(periods.min(255) as u8)
    }
}

/// Redis's `LRU_CLOCK`: unix seconds, 24 bits (INFO `lru_clock`).
pub fn lru_clock(now_ms: i64) -> u32 {
    ((now_ms.max(0) / 1000) as u64 & u64::from(LRU_CLOCK_MAX)) as u32
}

/// Redis's `LFUGetTimeInMinutes`: unix minutes, 16 bits.
fn lfu_minutes(now_ms: i64) -> u32 {
    ((now_ms.max(0) / 60_000) as u64 & 0xffff) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    const LRU: AccessPolicy = AccessPolicy {
        lfu: false,
        lfu_log_factor: 10,
        lfu_decay_time: 1,
    };
    const LFU: AccessPolicy = AccessPolicy { lfu: true, ..LRU };

    #[test]
    fn lru_idle_time_counts_seconds_and_wraps() {
        let t = 1_700_000_000_000;
        let a = Access::fresh(LRU, t);
        assert_eq!(a.idle_ms(t + 999), 0);
        assert_eq!(a.idle_ms(t + 61_000), 61_000);
        assert_eq!(a.touched(LRU, t + 61_000, 0.0).idle_ms(t + 61_000), 0);
        // Across the clock's wrap.
        let before_wrap = Access::from_bits(LRU_CLOCK_MAX - 1);
        let wrap_ms = i64::from(LRU_CLOCK_MAX + 1) * 1000;
        assert_eq!(before_wrap.idle_ms(wrap_ms + 2000), 3000);
    }

    #[test]
    fn lfu_counts_logarithmically_and_decays() {
        let t = 1_700_000_000_000;
        let mut a = Access::fresh(LFU, t);
        assert_eq!(a.lfu_count(LFU, t), LFU_INIT_VAL);
        // A draw of 0 always increments; a draw near 1 only while the
        // counter is at its initial value.
        a = a.touched(LFU, t, 0.0);
        assert_eq!(a.lfu_count(LFU, t), 6);
        assert_eq!(a.touched(LFU, t, 0.99).lfu_count(LFU, t), 6);
        for _ in 0..300 {
            a = a.touched(LFU, t, 0.0);
        }
        assert_eq!(a.lfu_count(LFU, t), 255);
        // One per minute of decay time.
        assert_eq!(a.lfu_count(LFU, t + 3 * 60_000), 252);
        assert_eq!(a.lfu_count(LFU, t + 300 * 60_000), 0);
        let no_decay = AccessPolicy {
            lfu_decay_time: 0,
            ..LFU
        };
        assert_eq!(a.lfu_count(no_decay, t + 300 * 60_000), 255);
    }
}
