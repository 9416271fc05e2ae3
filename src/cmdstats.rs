//! Per-command statistics, as Redis keeps them: calls, time, rejected and
//! failed calls (INFO commandstats) and a latency histogram per command
//! (INFO latencystats, `latency-tracking`). The dispatcher counts; handlers
//! never do. Times are kept in `clock` ticks and converted when shown.

use std::fmt::Write;

use crate::command_table::Command;
use crate::histogram::Histogram;

/// One command's (or subcommand's) figures.
#[derive(Default)]
struct CommandStat {
    /// `set`, or `config|get` for a subcommand (Redis's full name).
    name: String,
    calls: u64,
    ticks: u64,
    /// Refused before running (arity, NOAUTH, OOM, ...).
    rejected: u64,
    /// Ran and answered an error.
    failed: u64,
    /// Each call's ticks; empty until the first call with tracking on.
    latency: Histogram,
}

/// The figures of every command in the table, by the entry's dense id
/// (a command is found from the `&'static Command` every path already
/// holds, whatever the path: a client, EXEC, a script).
pub struct CommandStats {
    stats: Vec<CommandStat>,
}

impl Default for CommandStats {
    fn default() -> Self {
        let mut stats: Vec<CommandStat> = std::iter::repeat_with(CommandStat::default)
            .take(crate::command_table::COUNT)
            .collect();
        for (cmd, parent) in crate::command_table::all_with_subcommands() {
            if let Some(stat) = stats.get_mut(usize::from(cmd.id)) {
                stat.name = crate::command_table::full_name(cmd, parent);
            }
        }
        Self { stats }
    }
}

impl CommandStats {
    #[inline]
    fn stat(&mut self, cmd: &Command) -> Option<&mut CommandStat> {
        self.stats.get_mut(usize::from(cmd.id))
    }

    /// A call that ran for `ticks`; `failed` if it answered an error.
    /// `first`: false for a blocked call served at last, which was counted
    /// as a call when it blocked (its time and outcome add up).
    pub fn called(
        &mut self,
        cmd: &Command,
        ticks: u64,
        failed: bool,
        track_latency: bool,
        first: bool,
    ) {
        let Some(stat) = self.stat(cmd) else {
            return;
        };
        stat.calls += u64::from(first);
        stat.ticks += ticks;
        stat.failed += u64::from(failed);
        if track_latency {
            stat.latency.record(ticks);
        }
    }

    /// A call refused before it ran.
    pub fn rejected(&mut self, cmd: &Command) {
        if let Some(stat) = self.stat(cmd) {
            stat.rejected += 1;
        }
    }

    /// CONFIG RESETSTAT.
    pub fn reset(&mut self) {
        for stat in &mut self.stats {
            *stat = CommandStat {
                name: std::mem::take(&mut stat.name),
                ..Default::default()
            };
        }
    }

    /// INFO commandstats' lines: commands used, rejected or failed since
    /// the last reset.
    pub fn write_commandstats(&self, out: &mut String) {
        let per_us = crate::clock::ticks_per_us().max(1);
        for s in &self.stats {
            if s.calls == 0 && s.rejected == 0 && s.failed == 0 {
                continue;
            }
            let usec = s.ticks / per_us;
            let per_call = if s.calls == 0 {
                0.0
            } else {
                s.ticks as f64 / per_us as f64 / s.calls as f64
            };
            let _ = write!(
                out,
                "cmdstat_{}:calls={},usec={usec},usec_per_call={per_call:.2},rejected_calls={},failed_calls={}\r\n",
                s.name, s.calls, s.rejected, s.failed
            );
        }
    }

    /// INFO latencystats' lines: `percentiles` of each tracked command's
    /// latency, in microseconds.
    pub fn write_latencystats(&self, out: &mut String, percentiles: &[f64]) {
        let per_us = crate::clock::ticks_per_us().max(1) as f64;
        for s in self.stats.iter().filter(|s| s.latency.count() > 0) {
            let _ = write!(out, "latency_percentiles_usec_{}:", s.name);
            for (i, &p) in percentiles.iter().enumerate() {
                let value = s.latency.percentile(p) as f64 / per_us;
                let sep = if i + 1 < percentiles.len() { "," } else { "" };
                let _ = write!(
                    out,
                    "p{}={value:.3}{sep}",
                    crate::histogram::format_percentile(p)
                );
            }
            out.push_str("\r\n");
        }
    }
}

/// One command's latency distribution for LATENCY HISTOGRAM: its full
/// name, its calls, and (µs, calls that took at most that long) at
/// Redis's power-of-two steps, where the count grew.
pub type Distribution<'a> = (&'a str, u64, Vec<(u64, u64)>);

impl CommandStats {
    /// LATENCY HISTOGRAM: every tracked command's distribution (`names`
    /// empty), or those of the commands named and their subcommands.
    pub fn distributions(&self, names: &[&[u8]]) -> Vec<Distribution<'_>> {
        let tracked = || self.stats.iter().filter(|s| s.latency.count() > 0);
        let chosen: Vec<&CommandStat> = if names.is_empty() {
            tracked().collect()
        } else {
            names
                .iter()
                .flat_map(|name| {
                    let name = String::from_utf8_lossy(name).to_ascii_lowercase();
                    tracked().filter(move |s| {
                        s.name == name
                            || s.name
                                .strip_prefix(&name)
                                .is_some_and(|r| r.starts_with('|'))
                    })
                })
                .collect()
        };
        chosen
            .into_iter()
            .map(|s| (s.name.as_str(), s.latency.count(), cdf(&s.latency)))
            .collect()
    }
}

/// Redis's steps (hdr_histogram's log iteration from 1,024 ns, doubling):
/// the count of calls under 1,024 × 2^k ns, shown as that bound's µs.
fn cdf(latency: &Histogram) -> Vec<(u64, u64)> {
    let per_us = crate::clock::ticks_per_us().max(1);
    let mut out = Vec::new();
    let mut previous = 0;
    for k in 0..40 {
        let bound_ns: u64 = 1024 << k;
        let count = latency.count_below((bound_ns * per_us).div_ceil(1000));
        if count > previous {
            out.push(((bound_ns - 1) / 1000, count));
            previous = count;
        }
        if count == latency.count() {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_rejections_and_failures_are_counted_per_command() {
        let mut stats = CommandStats::default();
        let set = crate::command_table::lookup(b"set").unwrap();
        let config = crate::command_table::lookup(b"config").unwrap();
        let get = config.subcommand(b"get").unwrap();
        stats.called(set, 10, false, true, true);
        stats.called(set, 30, true, true, true);
        stats.rejected(set);
        stats.called(get, 5, false, false, true);
        stats.called(get, 5, false, false, false);
        let mut out = String::new();
        stats.write_commandstats(&mut out);
        assert!(out.contains("cmdstat_set:calls=2,"), "{out}");
        assert!(
            out.contains(",rejected_calls=1,failed_calls=1\r\n"),
            "{out}"
        );
        assert!(out.contains("cmdstat_config|get:calls=1,"), "{out}");
        let mut latency = String::new();
        stats.write_latencystats(&mut latency, &[50.0, 99.9]);
        assert!(
            latency.starts_with("latency_percentiles_usec_set:p50="),
            "{latency}"
        );
        assert!(latency.contains(",p99.9="), "{latency}");
        assert!(!latency.contains("config|get"), "tracking was off for it");
        stats.reset();
        let mut out = String::new();
        stats.write_commandstats(&mut out);
        assert_eq!(out, "");
    }

    #[test]
    fn percentiles_print_as_redis_prints_them() {}
}
