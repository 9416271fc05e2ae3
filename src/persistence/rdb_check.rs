//! `lapse --check-rdb FILE`: what `redis-check-rdb` tells of a file
//! (whether it reads to its end with a good checksum, how many keys and
//! deadlines it holds), and what in it redis-server cannot read: lapse's
//! own types for sets and sorted sets with member deadlines (240 and
//! 241, which redis-server 7.0 and `redis-check-rdb` refuse as "Invalid
//! object type") and Redis 7.4's hashes with field deadlines (which 7.0
//! refuses, 7.4 loads).

use std::collections::BTreeMap;

use super::rdb::{TYPE_SET_MEMBER_TTLS, TYPE_ZSET_MEMBER_TTLS};
use super::rdb_load::{load_into, Limits, LoadSink};
use crate::value::{Value, ValueRef};

/// What a file holds, as far as it was read.
#[derive(Default, Debug)]
pub struct Report {
    pub keys: usize,
    pub expires: usize,
    /// Keys by TYPE's name.
    pub by_type: BTreeMap<&'static str, usize>,
    /// Sets written as lapse's type 240 (members with deadlines).
    pub sets_with_member_ttls: usize,
    /// Sorted sets written as lapse's type 241.
    pub zsets_with_member_ttls: usize,
    /// Hashes written as Redis 7.4 writes those with field deadlines.
    pub hashes_with_field_ttls: usize,
    pub functions: usize,
}

impl LoadSink for Report {
    fn string(&mut self, db: usize, key: &[u8], _: &[u8], at: Option<i64>) -> Result<(), String> {
        self.counted(db, key, "string", at);
        Ok(())
    }

    fn value(
        &mut self,
        db: usize,
        key: &[u8],
        value: Value,
        at: Option<i64>,
    ) -> Result<(), String> {
        let view = value.as_ref();
        match view {
            ValueRef::Set(s) if s.member_ttl_count() > 0 => self.sets_with_member_ttls += 1,
            ValueRef::ZSet(z) if z.member_ttl_count() > 0 => self.zsets_with_member_ttls += 1,
            ValueRef::Hash(h) if h.has_field_ttls() => self.hashes_with_field_ttls += 1,
            _ => {}
        }
        self.counted(db, key, view.type_name(), at);
        Ok(())
    }

    fn function(&mut self, _: Vec<u8>) -> Result<(), String> {
        self.functions += 1;
        Ok(())
    }
}

impl Report {
    fn counted(&mut self, _db: usize, _key: &[u8], type_name: &'static str, at: Option<i64>) {
        self.keys += 1;
        self.expires += usize::from(at.is_some());
        *self.by_type.entry(type_name).or_default() += 1;
    }

    /// Whether redis-server 7.0 can load everything read.
    pub fn redis_7_0_reads_it(&self) -> bool {
        self.sets_with_member_ttls + self.zsets_with_member_ttls + self.hashes_with_field_ttls == 0
    }
}

/// Reads `data` as lapse loads a file; the report, and the error that
/// stopped the reading if one did.
pub fn check(data: &[u8], limits: Limits) -> (Report, Option<String>) {
    let mut report = Report::default();
    let error = load_into(data, limits, &mut report).err();
    (report, error)
}

/// The report as `redis-check-rdb` words its own, for `name`.
pub fn render(name: &str, report: &Report, error: Option<&str>) -> String {
    let mut out = format!("[offset 0] Checking RDB file {name}\n");
    if let Some(e) = error {
        out += "--- RDB ERROR DETECTED ---\n";
        out += &format!("[additional info] {e}\n");
        out += &format!("[info] {} keys read before the error\n", report.keys);
        return out;
    }
    out += &format!("[info] {} keys read\n", report.keys);
    out += &format!("[info] {} expires\n", report.expires);
    let types: Vec<String> = report
        .by_type
        .iter()
        .map(|(t, n)| format!("{t} {n}"))
        .collect();
    if !types.is_empty() {
        out += &format!("[info] keys by type: {}\n", types.join(", "));
    }
    if report.functions > 0 {
        out += &format!("[info] {} function libraries\n", report.functions);
    }
    for (n, what, kind) in [
        (
            report.sets_with_member_ttls,
            "sets with member deadlines",
            TYPE_SET_MEMBER_TTLS,
        ),
        (
            report.zsets_with_member_ttls,
            "sorted sets with member deadlines",
            TYPE_ZSET_MEMBER_TTLS,
        ),
    ] {
        if n > 0 {
            out += &format!(
                "[info] {n} {what}, written as lapse's object type {kind}: redis-server and \
                 redis-check-rdb refuse the file (\"Invalid object type: {kind}\"); SPERSIST/ZPERSIST \
                 their members (or let them expire) and save again for a file they read\n"
            );
        }
    }
    if report.hashes_with_field_ttls > 0 {
        out += &format!(
            "[info] {} hashes with field deadlines, written as Redis 7.4 writes them: \
             redis-server 7.4 loads the file, 7.0 refuses it\n",
            report.hashes_with_field_ttls
        );
    }
    out += if report.redis_7_0_reads_it() {
        "\\o/ RDB looks OK! \\o/ (redis-server 7.0 reads it too)\n"
    } else {
        "\\o/ RDB looks OK for lapse \\o/ (not for redis-server 7.0: see above)\n"
    };
    out
}
