//! The latency monitor, as Redis's (LATENCY LATEST / HISTORY / RESET):
//! events that took at least `latency-monitor-threshold` milliseconds
//! (`command`, `fast-command`, `expire-cycle`, `eviction-cycle`, the
//! `aof-write*` and `aof-fsync-always` events), one sample per event and
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

    /// LATENCY GRAPH: `event`'s samples as Redis draws them (a header, a
    /// rule, then columns of `_o#|` four rows high, each labelled with
    /// how long ago it was, 80 columns a block); `None` without samples.
    pub fn graph(&self, event: &[u8], now_s: i64) -> Option<String> {
        let (name, series) = self.events.iter().find(|(n, _)| n.as_bytes() == event)?;
        if series.samples.is_empty() {
            return None;
        }
        let values: Vec<u64> = series.samples.iter().map(|(_, ms)| *ms).collect();
        let (low, high) = (values.iter().min().copied()?, values.iter().max().copied()?);
        let mut out = format!(
            "{name} - high {high} ms, low {low} ms (all time high {} ms)\n{}\n",
            series.max_ms,
            "-".repeat(GRAPH_COLUMNS)
        );
        let labels: Vec<String> = series
            .samples
            .iter()
            .map(|(at, _)| ago_label(now_s - at))
            .collect();
        for (n, block) in values.chunks(GRAPH_COLUMNS).enumerate() {
            if n > 0 {
                out.push('\n');
            }
            let start = n * GRAPH_COLUMNS;
            draw_block(
                &mut out,
                block,
                &labels[start..start + block.len()],
                low,
                high,
            );
        }
        Some(out)
    }

    /// LATENCY DOCTOR: what the samples say, event by event, in plain
    /// words, with what usually causes each kind in lapse.
    pub fn doctor(&self, threshold_ms: u64) -> String {
        if threshold_ms == 0 {
            return "The latency monitor is off (latency-monitor-threshold is 0), so nothing was \
                    sampled. CONFIG SET latency-monitor-threshold <milliseconds> turns it on.\n"
                .into();
        }
        let events: Vec<&(&'static str, Series)> = self
            .events
            .iter()
            .filter(|(_, s)| !s.samples.is_empty())
            .collect();
        if events.is_empty() {
            return format!(
                "No event took {threshold_ms} ms or longer (latency-monitor-threshold) since the \
                 server started or the last LATENCY RESET.\n"
            );
        }
        let mut out = format!(
            "Latency events of {threshold_ms} ms or longer (latency-monitor-threshold):\n\n"
        );
        for (n, (name, s)) in events.iter().enumerate() {
            let ms: Vec<f64> = s.samples.iter().map(|(_, m)| *m as f64).collect();
            let mean = ms.iter().sum::<f64>() / ms.len() as f64;
            let deviation = ms.iter().map(|m| (m - mean).abs()).sum::<f64>() / ms.len() as f64;
            let span = s.samples.back().map_or(0, |b| b.0) - s.samples.front().map_or(0, |f| f.0);
            let period = span as f64 / ms.len().max(1) as f64;
            out.push_str(&format!(
                "{}. {name}: {} latency spikes (average {mean:.0}ms, mean deviation {deviation:.0}ms, \
                 period {period:.1} sec). Worst all time event {}ms.\n",
                n + 1,
                ms.len(),
                s.max_ms
            ));
        }
        out.push_str("\nWhat usually causes them here:\n");
        for (name, _) in events {
            let advice = match *name {
                "command" => "- command: slow commands. SLOWLOG GET names them; O(N) commands on big values (KEYS, SMEMBERS, LRANGE 0 -1, HGETALL, DEL of a big value without lazy freeing) are the usual ones.",
                "fast-command" => "- fast-command: O(1) commands that were slow anyway: the machine is overloaded, swapping (check used_memory against total_system_memory), or the process was descheduled.",
                "expire-cycle" => "- expire-cycle: the active expiry of many keys at once (many keys sharing a deadline). A lower active-expire-effort shortens each cycle; lazyfree-lazy-expire yes frees big values on the freer thread.",
                _ => "- an event lapse does not describe yet.",
            };
            out.push_str(advice);
            out.push('\n');
        }
        out
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

/// Columns of one block of LATENCY GRAPH (Redis's `LATENCY_GRAPH_COLS`).
const GRAPH_COLUMNS: usize = 80;
/// Rows of bars, and the marks a row can hold, lowest first.
const GRAPH_ROWS: usize = 4;
const GRAPH_MARKS: [char; 3] = ['_', 'o', '#'];

/// How long ago, as LATENCY GRAPH labels columns: seconds, minutes,
/// hours, days.
fn ago_label(elapsed_s: i64) -> String {
    match elapsed_s {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

/// One block of columns: bars scaled between `low` and `high` over
/// `GRAPH_ROWS` rows of three marks each (a full row below the top
/// mark is `|`), a blank row, then each label written downwards.
fn draw_block(out: &mut String, values: &[u64], labels: &[String], low: u64, high: u64) {
    let levels = (GRAPH_MARKS.len() * GRAPH_ROWS) as i64;
    let range = if high > low { (high - low) as f64 } else { 1.0 };
    let level = |v: u64| (((v - low) as f64 * levels as f64 / range) as i64).clamp(0, levels - 1);
    for row in 0..GRAPH_ROWS {
        let floor = ((GRAPH_ROWS - row - 1) * GRAPH_MARKS.len()) as i64;
        let line: String = values
            .iter()
            .map(|&v| match level(v) - floor {
                i if i < 0 => ' ',
                i if (i as usize) < GRAPH_MARKS.len() => GRAPH_MARKS[i as usize],
                _ => '|',
            })
            .collect();
        out.push_str(&line);
        out.push('\n');
    }
    out.push_str(&" ".repeat(values.len()));
    out.push('\n');
    let longest = labels.iter().map(String::len).max().unwrap_or(0);
    for i in 0..longest {
        let line: String = labels
            .iter()
            .map(|l| l.as_bytes().get(i).map_or(' ', |&b| b as char))
            .collect();
        out.push_str(&line);
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The picture redis-server 7.0 drew for the same samples (DEBUG
    /// SLEEP 0.05, 0.2, 0.01, 0.1, 0.03 a second apart, graphed a second
    /// after the last).
    #[test]
    fn graph_draws_as_redis_does() {
        let mut m = LatencyMonitor::default();
        for (s, ms) in [(100, 50), (101, 200), (102, 10), (103, 100), (104, 30)] {
            m.add_if_needed(1, "command", ms, s);
        }
        let expected = "command - high 200 ms, low 10 ms (all time high 200 ms)\n".to_string()
            + &"-".repeat(80)
            + "\n #   \n |   \n | # \n#|_|o\n     \n54321\nsssss\n";
        assert_eq!(m.graph(b"command", 105).unwrap(), expected);
        assert!(m.graph(b"nosuch", 105).is_none());
        // Past 80 samples a second block follows, after a blank line.
        for s in 0..100 {
            m.add_if_needed(1, "expire-cycle", 5 + s as u64 % 7, 1000 + s);
        }
        let graph = m.graph(b"expire-cycle", 1100).unwrap();
        let lines: Vec<&str> = graph.lines().collect();
        assert_eq!(lines[2].len(), 80);
        assert!(lines.iter().any(|l| l.is_empty()), "no block separator");
        assert!(lines.iter().any(|l| l.len() == 20), "no second block");
        assert!(m.doctor(1).contains("2. expire-cycle: 100 latency spikes"));
        assert!(m.doctor(0).contains("latency-monitor-threshold is 0"));
    }

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
