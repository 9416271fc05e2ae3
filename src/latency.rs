//! The latency monitor, as Redis's (LATENCY LATEST / HISTORY / RESET):
//! events that took at least `latency-monitor-threshold` milliseconds
//! (`command`, `fast-command`, `expire-cycle`), one sample per event and
//! second (the worst), the last `SAMPLES_KEPT` kept, and each event's
//! worst ever. A threshold of 0 (the default) records nothing.

use std::collections::VecDeque;

/// Samples kept per event (Redis's `LATENCY_TS_LEN`).
const SAMPLES_KEPT: usize = 160;

/// One event's samples: (unix seconds, milliseconds), oldest first.
#[derive(Default)]
struct Series {
    samples: VecDeque<(i64, u64)>,
    max_ms: u64,
}

#[derive(Default)]
pub struct LatencyMonitor {
    /// In the order the events first happened.
    events: Vec<(&'static str, Series)>,
}

impl LatencyMonitor {
    /// Records `ms` for `event` if the threshold is set and reached.
    pub fn add_if_needed(&mut self, threshold_ms: u64, event: &'static str, ms: u64, now_s: i64) {
        if threshold_ms == 0 || ms < threshold_ms {
            return;
        }
        let at = match self.events.iter().position(|(name, _)| *name == event) {
            Some(at) => at,
            None => {
                self.events.push((event, Series::default()));
                self.events.len() - 1
            }
        };
        let series = &mut self.events[at].1;
        series.max_ms = series.max_ms.max(ms);
        match series.samples.back_mut() {
            // One sample a second: the worst.
            Some((time, worst)) if *time == now_s => *worst = (*worst).max(ms),
            _ => {
                if series.samples.len() == SAMPLES_KEPT {
                    series.samples.pop_front();
                }
                series.samples.push_back((now_s, ms));
            }
        }
    }

    /// LATENCY LATEST: each event's name, latest sample and worst.
    pub fn latest(&self) -> impl Iterator<Item = (&'static str, (i64, u64), u64)> + '_ {
        self.events.iter().filter_map(|(name, s)| {
            let last = *s.samples.back()?;
            Some((*name, last, s.max_ms))
        })
    }

    /// LATENCY HISTORY: `event`'s samples, oldest first (none if unknown).
    pub fn history(&self, event: &[u8]) -> Vec<(i64, u64)> {
        self.events
            .iter()
            .find(|(name, _)| name.as_bytes() == event)
            .map(|(_, s)| s.samples.iter().copied().collect())
            .unwrap_or_default()
    }

    /// LATENCY RESET: forgets `event` (every event when None); returns
    /// how many it forgot.
    pub fn reset(&mut self, event: Option<&[u8]>) -> usize {
        let before = self.events.len();
        match event {
            None => self.events.clear(),
            Some(event) => self.events.retain(|(name, _)| name.as_bytes() != event),
        }
        before - self.events.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_worst_sample_a_second_and_the_last_160_kept() {
        let mut m = LatencyMonitor::default();
        m.add_if_needed(0, "command", 500, 1);
        m.add_if_needed(10, "command", 9, 1);
        assert_eq!(m.latest().count(), 0, "off, or under the threshold");
        m.add_if_needed(10, "command", 20, 100);
        m.add_if_needed(10, "command", 50, 100);
        m.add_if_needed(10, "command", 30, 100);
        m.add_if_needed(10, "command", 15, 101);
        assert_eq!(m.history(b"command"), [(100, 50), (101, 15)]);
        assert_eq!(m.latest().collect::<Vec<_>>(), [("command", (101, 15), 50)]);
        for s in 0..200 {
            m.add_if_needed(10, "expire-cycle", 10, 1000 + s);
        }
        let history = m.history(b"expire-cycle");
        assert_eq!(history.len(), 160);
        assert_eq!(history[0], (1040, 10));
        assert_eq!(m.reset(Some(b"nosuch")), 0);
        assert_eq!(m.reset(Some(b"command")), 1);
        assert_eq!(m.reset(None), 1);
        assert!(m.history(b"expire-cycle").is_empty());
    }
}
