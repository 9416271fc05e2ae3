//! A small log-linear histogram of milliseconds, for the expiry lag
//! percentiles in INFO.
//!
//! Values below `LINEAR_MS` get a bucket each; above, every power of two is
//! split into `SUB_BUCKETS` buckets, so a reported percentile is within about
//! 6% of the true value. The maximum is kept exactly. Fixed size, no
//! allocation after the first record.

const LINEAR_MS: u64 = 16;
const SUB_BUCKETS: u64 = 16;
/// Enough powers of two for any u64 value.
const BUCKETS: usize = (LINEAR_MS + (64 - 4) * SUB_BUCKETS) as usize;

#[derive(Debug, Clone, Default)]
pub struct Histogram {
    /// Counts per bucket; empty until the first value is recorded.
    counts: Vec<u64>,
    total: u64,
    max: u64,
}

#[inline]
fn bucket_of(v: u64) -> usize {
    if v < LINEAR_MS {
        return v as usize;
    }
    let power = 63 - u64::from(v.leading_zeros()); // >= 4
    let sub = (v >> (power - 4)) & (SUB_BUCKETS - 1);
    (LINEAR_MS + (power - 4) * SUB_BUCKETS + sub) as usize
}

/// The largest value that falls in bucket `b`.
fn bucket_top(b: usize) -> u64 {
    let b = b as u64;
    if b < LINEAR_MS {
        return b;
    }
    let power = (b - LINEAR_MS) / SUB_BUCKETS + 4;
    let sub = (b - LINEAR_MS) % SUB_BUCKETS;
    let low = (1u64 << power) + (sub << (power - 4));
    low + ((1u64 << (power - 4)) - 1)
}

impl Histogram {
    #[inline]
    pub fn record(&mut self, v: u64) {
        if self.counts.is_empty() {
            self.allocate();
        }
        self.counts[bucket_of(v)] += 1;
        self.total += 1;
        self.max = self.max.max(v);
    }

    #[cold]
    fn allocate(&mut self) {
        self.counts = vec![0; BUCKETS];
    }

    pub fn count(&self) -> u64 {
        self.total
    }

    /// About how many records are below `v`: those in buckets that end
    /// below it (within a bucket's width, about 6%).
    pub fn count_below(&self, v: u64) -> u64 {
        self.counts
            .iter()
            .enumerate()
            .take_while(|&(b, _)| bucket_top(b) < v)
            .map(|(_, &c)| c)
            .sum()
    }

    pub fn max(&self) -> u64 {
        self.max
    }

    /// The value at or below which `pct` percent of the records fall
    /// (the top of that bucket, capped at the maximum); 0 when empty.
    pub fn percentile(&self, pct: f64) -> u64 {
        if self.total == 0 {
            return 0;
        }
        let rank = ((pct / 100.0) * self.total as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return bucket_top(b).min(self.max);
            }
        }
        self.max
    }

    pub fn merge(&mut self, other: &Histogram) {
        if other.total == 0 {
            return;
        }
        if self.counts.is_empty() {
            self.counts = vec![0; BUCKETS];
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.total += other.total;
        self.max = self.max.max(other.max);
    }
}

/// A percentile as Redis prints it (`%f` with trailing zeros trimmed):
/// 50, 99, 99.9.
pub fn format_percentile(p: f64) -> String {
    let text = format!("{p:.6}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_print_as_redis_prints_them() {
        assert_eq!(format_percentile(50.0), "50");
        assert_eq!(format_percentile(99.9), "99.9");
        assert_eq!(format_percentile(99.99), "99.99");
        assert_eq!(format_percentile(0.5), "0.5");
    }

    #[test]
    fn buckets_cover_every_value_in_order() {
        let mut last = 0;
        for v in (0..100_000u64).chain([u64::MAX / 2, u64::MAX]) {
            let b = bucket_of(v);
            assert!(b >= last && b < BUCKETS);
            assert!(bucket_top(b) >= v, "{v}");
            last = b;
        }
    }

    #[test]
    fn percentiles_are_close() {
        let mut h = Histogram::default();
        assert_eq!(h.percentile(99.0), 0);
        for v in 1..=1000 {
            h.record(v);
        }
        let p50 = h.percentile(50.0);
        assert!((500..=532).contains(&p50), "{p50}");
        let p99 = h.percentile(99.0);
        assert!((990..=1000).contains(&p99), "{p99}");
        assert_eq!(h.max(), 1000);
        let mut merged = Histogram::default();
        merged.merge(&h);
        assert_eq!(merged.count(), 1000);
        assert_eq!(merged.percentile(100.0), 1000);
    }
}
