//! The log's lines as redis-server writes them, so that the tools that
//! wait for and parse Redis's log (testcontainers' "Ready to accept
//! connections", log pipelines, Redis's own test suite) read lapse's:
//!
//! `pid:role dd Mon yyyy hh:mm:ss.mmm <level> message` (Redis's
//! `serverLogRaw`), the level as Redis marks it (`.` debug, `-` verbose,
//! `*` notice, `#` warning) and the role `M` (a primary) or `S` (a
//! replica). Valkey 8's `log-format logfmt` and `log-timestamp-format`
//! (`legacy`, `iso8601`, `milliseconds`) are offered too.
//!
//! Owns only the formatting and the role shown; what is logged, and at
//! which level, is each room's own (through `tracing`).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU8, Ordering};

use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// The role letter shown on each line (`M` or `S`).
static ROLE: AtomicU8 = AtomicU8::new(b'M');

/// Replication says which role this server plays now.
pub fn set_replica(replica: bool) {
    ROLE.store(if replica { b'S' } else { b'M' }, Ordering::Relaxed);
}

/// Valkey's `log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LineFormat {
    #[default]
    Legacy,
    Logfmt,
}

/// Valkey's `log-timestamp-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimeFormat {
    #[default]
    Legacy,
    Iso8601,
    Milliseconds,
}

/// A `tracing` event formatter writing Redis's (or Valkey's) lines.
pub struct RedisFormat {
    pub line: LineFormat,
    pub time: TimeFormat,
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Civil date of days since 1970-01-01 (Howard Hinnant's algorithm).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// `now_ms` (unix ms, UTC) as the chosen timestamp format.
pub fn timestamp(now_ms: i64, format: TimeFormat) -> String {
    if format == TimeFormat::Milliseconds {
        return now_ms.to_string();
    }
    let (secs, ms) = (now_ms.div_euclid(1000), now_ms.rem_euclid(1000));
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (year, month, day) = civil(days);
    let (h, m, s) = (rest / 3600, rest % 3600 / 60, rest % 60);
    match format {
        TimeFormat::Iso8601 => {
            format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{ms:03}+00:00")
        }
        _ => format!(
            "{day:02} {} {year} {h:02}:{m:02}:{s:02}.{ms:03}",
            MONTHS[month as usize - 1]
        ),
    }
}

/// Redis's level mark, and Valkey's logfmt name.
fn level_mark(level: &Level) -> (char, &'static str) {
    match *level {
        Level::ERROR | Level::WARN => ('#', "warning"),
        Level::INFO => ('*', "notice"),
        Level::DEBUG => ('-', "verbose"),
        Level::TRACE => ('.', "debug"),
    }
}

impl<S, N> FormatEvent<S, N> for RedisFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> std::fmt::Result {
        let mut message = String::new();
        ctx.format_fields(Writer::new(&mut message), event)?;
        let role = ROLE.load(Ordering::Relaxed) as char;
        let (mark, name) = level_mark(event.metadata().level());
        let when = timestamp(crate::clock::unix_time_ms(), self.time);
        let pid = std::process::id();
        let mut line = String::new();
        match self.line {
            LineFormat::Legacy => write!(line, "{pid}:{role} {when} {mark} {message}")?,
            LineFormat::Logfmt => {
                let role = if role == 'S' { "replica" } else { "master" };
                let message = message.replace('\\', "\\\\").replace('"', "\\\"");
                write!(
                    line,
                    "pid={pid} role={role} timestamp=\"{when}\" level={name} message=\"{message}\""
                )?;
            }
        }
        writeln!(writer, "{line}")
    }
}

/// Changes the running logger's level (set by the binary that made the
/// logger): CONFIG SET loglevel.
static LEVEL_SETTER: std::sync::OnceLock<LevelSetter> = std::sync::OnceLock::new();

/// How to give the running logger a new `tracing` filter directive.
pub type LevelSetter = Box<dyn Fn(&str) + Send + Sync>;

/// Called once by whoever made the logger, with how to change its level
/// (a `tracing` filter directive).
pub fn on_level_change(set: LevelSetter) {
    let _ = LEVEL_SETTER.set(set);
}

/// The `tracing` filter for a Redis `loglevel`.
pub fn filter_for(loglevel: &str) -> &'static str {
    match loglevel {
        "debug" => "trace",
        "verbose" => "debug",
        "warning" => "warn",
        "nothing" => "off",
        _ => "info",
    }
}

/// CONFIG SET loglevel: the logger logs at `loglevel` from now on.
pub fn set_level(loglevel: &str) {
    if let Some(set) = LEVEL_SETTER.get() {
        set(filter_for(loglevel));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_written_as_redis_and_valkey_write_them() {
        // 2026-11-28 03:27:08.123 UTC
        let at = 1_795_836_428_123;
        assert_eq!(
            timestamp(at, TimeFormat::Legacy),
            "28 Nov 2026 03:27:08.123"
        );
        assert_eq!(
            timestamp(at, TimeFormat::Iso8601),
            "2026-11-28T03:27:08.123+00:00"
        );
        assert_eq!(timestamp(at, TimeFormat::Milliseconds), "1795836428123");
        assert_eq!(timestamp(0, TimeFormat::Legacy), "01 Jan 1970 00:00:00.000");
        assert_eq!(
            timestamp(951_782_400_000, TimeFormat::Legacy),
            "29 Feb 2000 00:00:00.000"
        );
    }
}
