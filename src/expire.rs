//! The active expire cycle: decides *when* keys nobody touches are removed.
//!
//! Redis's adaptive cycle, as in `expire.c`: each round looks at
//! `keys_per_loop` candidates among the keys that have a TTL, deletes the due
//! ones, and repeats while more than the acceptable share of the round was
//! due. The slow cycle runs from the cron with a budget of a share of the
//! cron period; the fast cycle runs before each poll, briefly, only when the
//! last cycle ran out of time or stale keys are known or estimated to be
//! waiting. Databases are walked round-robin and a call resumes where the
//! last one stopped.
//!
//! Where candidates come from is the `Strategy`: uniformly random keys
//! (`Db::sample_volatile`, Redis's way) or the keys due first
//! (`Db::expire_first_due`, over the deadline-ordered expires side).
//!
//! It never touches sockets and never deletes a key itself: `db` does that.

use rand::Rng;

use crate::clock::Clock;
use crate::db::{Db, Sample};

/// Keys sampled per iteration at effort 1 (`ACTIVE_EXPIRE_CYCLE_KEYS_PER_LOOP`).
pub const KEYS_PER_LOOP: u64 = 20;
/// Longest fast cycle at effort 1, microseconds.
pub const FAST_CYCLE_BUDGET_US: u64 = 1000;
/// Share of the cron period a slow cycle may use at effort 1, percent.
pub const SLOW_CYCLE_CPU_PERC: u64 = 25;
/// Repeat an iteration while more than this share of its sample was due, percent, at effort 1.
pub const ACCEPTABLE_STALE_PERC: u64 = 25;
/// Databases visited per call unless time ran out last time (`CRON_DBS_PER_CALL`).
pub const DBS_PER_CALL: usize = 16;
/// Check the clock every this many iterations.
const ITERATIONS_PER_CLOCK_CHECK: u64 = 16;

/// Where a round's candidates come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// Keys with a TTL sampled uniformly at random (Redis's way).
    Uniform,
    /// Keys in deadline order: the ones due first (see `deadlines`).
    Deadline,
}

impl Strategy {
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Uniform => "uniform",
            Strategy::Deadline => "deadline",
        }
    }
}

/// The settings one cycle runs with.
#[derive(Debug, Clone, Copy)]
pub struct CycleSettings {
    /// `active-expire-effort`, 1..=10.
    pub effort: u32,
    /// Cron frequency: the slow cycle's budget is a share of 1/hz.
    pub hz: u32,
    pub strategy: Strategy,
}

/// Which of the two cycles is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CycleKind {
    /// From `before_sleep`: short, and only when there is reason to.
    Fast,
    /// From the cron, `hz` times a second.
    Slow,
}

/// The cycle's parameters for an `active-expire-effort` (1..=10).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Effort {
    pub keys_per_loop: u64,
    pub fast_budget_us: u64,
    pub slow_cpu_perc: u64,
    pub acceptable_stale_perc: u64,
}

impl Effort {
    /// Redis's scaling: x = effort - 1; keys +25% of 20 per step, fast
    /// budget +25% per step, slow CPU share +2 points per step, acceptable
    /// stale share -1 point per step.
    pub fn new(effort: u32) -> Self {
        let x = u64::from(effort.clamp(1, 10) - 1);
        Self {
            keys_per_loop: KEYS_PER_LOOP + KEYS_PER_LOOP / 4 * x,
            fast_budget_us: FAST_CYCLE_BUDGET_US + FAST_CYCLE_BUDGET_US / 4 * x,
            slow_cpu_perc: SLOW_CYCLE_CPU_PERC + 2 * x,
            acceptable_stale_perc: ACCEPTABLE_STALE_PERC - x,
        }
    }
}

/// The cycle's memory between calls, and its statistics.
#[derive(Debug)]
pub struct ExpireCycle {
    /// `DEBUG SET-ACTIVE-EXPIRE`: off leaves expiry to lookups alone.
    pub enabled: bool,
    /// A replica leaves deletion to its primary; set when replication exists.
    pub is_replica: bool,
    /// Next database to visit (round-robin; kept across calls).
    next_db: usize,
    /// True if the last cycle stopped at its budget.
    timelimit_exit: bool,
    /// Start of the last fast cycle on the monotonic clock, µs.
    last_fast_start_us: Option<u64>,
    /// Running estimate of the share of sampled keys found expired, 0..=1
    /// (Redis's INFO `expired_stale_perc`: 95% old, 5% new).
    pub stale_perc: f64,
    /// Share of sampled keys found expired by the last cycle, 0..=1.
    last_stale_perc: f64,
    /// Cycles that stopped because they used up their budget.
    pub time_cap_reached_count: u64,
    /// Total time spent in cycles, µs.
    pub time_used_us: u64,
}

impl Default for ExpireCycle {
    fn default() -> Self {
        Self {
            enabled: true,
            is_replica: false,
            next_db: 0,
            timelimit_exit: false,
            last_fast_start_us: None,
            stale_perc: 0.0,
            last_stale_perc: 0.0,
            time_cap_reached_count: 0,
            time_used_us: 0,
        }
    }
}

/// (Deadline strategy) no key in `dbs` is due before this time.
pub fn earliest_deadline_ms(dbs: &[Db]) -> Option<i64> {
    dbs.iter().filter_map(Db::earliest_deadline_ms).min()
}

/// Most elements (hash fields, set and sorted-set members) one cycle
/// expires in one database. (Redis 7.4 takes, for hash fields,
/// 10,000 per second over its cycles, `HFE_DB_BASE_ACTIVE_EXPIRE_FIELDS_PER_SEC`
/// / hz, raised up to 32 times while a backlog lasts; lapse's deadline
/// order needs no sampling, so a cycle takes what is due up to this.)
const ELEMENTS_PER_DB_PER_CYCLE: u64 = 10_000;

/// A cycle's time allowance on the monotonic clock.
#[derive(Debug, Clone, Copy)]
struct Budget {
    start_us: u64,
    budget_us: u64,
}

/// What one round of candidates found.
#[derive(Debug, Default)]
struct Round {
    sampled: u64,
    expired: u64,
    /// Sum and count of live TTLs seen, for `avg_ttl`.
    ttl_sum: i64,
    ttl_samples: i64,
}

impl Round {
    fn saw_ttl(&mut self, ttl_ms: i64) {
        self.ttl_sum = self.ttl_sum.saturating_add(ttl_ms);
        self.ttl_samples += 1;
    }
}

/// `keys` uniformly random keys with a TTL; the due ones are deleted.
fn uniform_round(db: &mut Db, keys: u64, now_ms: i64, rng: &mut impl Rng) -> Round {
    let mut round = Round::default();
    for _ in 0..keys {
        match db.sample_volatile(rng, now_ms) {
            None => break,
            Some(Sample::Expired) => round.expired += 1,
            Some(Sample::Alive { ttl_ms }) => round.saw_ttl(ttl_ms),
            Some(Sample::Settled) => continue,
        }
        round.sampled += 1;
    }
    round
}

/// Up to `keys` candidates in deadline order: due keys are deleted, and the
/// first key not due ends the round (nothing after it is due either). One
/// uniformly random key feeds the `avg_ttl` estimate, which must not be
/// biased towards the keys about to expire.
fn deadline_round(db: &mut Db, keys: u64, now_ms: i64, rng: &mut impl Rng) -> Round {
    let mut round = Round::default();
    for _ in 0..keys {
        match db.expire_first_due(now_ms) {
            None => break,
            Some(Sample::Expired) => {
                round.expired += 1;
                round.sampled += 1;
            }
            Some(Sample::Settled) => {}
            Some(Sample::Alive { .. }) => {
                round.sampled += 1;
                break;
            }
        }
    }
    if let Some(ttl_ms) = db.random_ttl_ms(rng, now_ms).filter(|&t| t > 0) {
        round.saw_ttl(ttl_ms);
    }
    round
}

/// What one call did, for tests and tracing.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CycleReport {
    pub ran: bool,
    /// Elements (hash fields, set and sorted-set members) removed.
    pub expired_elements: u64,
    pub sampled: u64,
    pub expired: u64,
    pub iterations: u64,
    pub hit_time_limit: bool,
}

impl ExpireCycle {
    /// Runs one cycle over `dbs` (`activeExpireCycle`).
    pub fn run(
        &mut self,
        kind: CycleKind,
        dbs: &mut [Db],
        settings: CycleSettings,
        clock: &mut impl Clock,
        rng: &mut impl Rng,
    ) -> CycleReport {
        let mut report = CycleReport::default();
        if !self.enabled || self.is_replica || dbs.is_empty() {
            return report;
        }
        let ordered = settings.strategy == Strategy::Deadline;
        for db in dbs.iter_mut() {
            if db.is_deadline_ordered() != ordered {
                db.set_deadline_ordered(ordered);
            }
        }
        let effort = Effort::new(settings.effort);
        let start_us = clock.mono_us();
        let budget_us = match kind {
            CycleKind::Fast => {
                // The share seen by the last cycle, not the slow INFO average:
                // a wave of expiring keys must start fast cycles at once. With
                // deadline order it is known exactly whether anything is due.
                let stale_enough = match settings.strategy {
                    Strategy::Uniform => {
                        self.last_stale_perc * 100.0 > effort.acceptable_stale_perc as f64
                    }
                    Strategy::Deadline => {
                        earliest_deadline_ms(dbs).is_some_and(|t| t <= clock.unix_ms())
                    }
                };
                if !self.timelimit_exit && !stale_enough {
                    return report;
                }
                if let Some(last) = self.last_fast_start_us {
                    if start_us < last + effort.fast_budget_us * 2 {
                        return report;
                    }
                }
                self.last_fast_start_us = Some(start_us);
                effort.fast_budget_us
            }
            CycleKind::Slow => {
                (effort.slow_cpu_perc * 1_000_000 / u64::from(settings.hz.max(1)) / 100).max(1)
            }
        };
        report.ran = true;
        // Elements due and soft deadlines reached, in deadline order
        // (bounded per database, so a wave of them spreads over cycles).
        let now_ms = clock.unix_ms();
        for db in dbs.iter_mut() {
            report.expired_elements += db.expire_due_elements(now_ms, ELEMENTS_PER_DB_PER_CYCLE);
            db.signal_stale(now_ms, ELEMENTS_PER_DB_PER_CYCLE);
        }
        let dbs_per_call = if self.timelimit_exit {
            dbs.len()
        } else {
            DBS_PER_CALL.min(dbs.len())
        };
        self.timelimit_exit = false;
        for _ in 0..dbs_per_call {
            let index = self.next_db % dbs.len();
            self.next_db = (index + 1) % dbs.len();
            let db = &mut dbs[index];
            let budget = Budget {
                start_us,
                budget_us,
            };
            if self.expire_db(
                db,
                &effort,
                settings.strategy,
                budget,
                clock,
                rng,
                &mut report,
            ) {
                break;
            }
        }
        let elapsed = clock.mono_us().saturating_sub(start_us);
        self.time_used_us += elapsed;
        let current = if report.sampled > 0 {
            report.expired as f64 / report.sampled as f64
        } else {
            0.0
        };
        self.stale_perc = current * 0.05 + self.stale_perc * 0.95;
        self.last_stale_perc = current;
        report.hit_time_limit = self.timelimit_exit;
        report
    }

    /// Works on one database until its stale share is acceptable. Returns
    /// true if the budget ran out (the whole cycle stops).
    #[allow(clippy::too_many_arguments)]
    fn expire_db(
        &mut self,
        db: &mut Db,
        effort: &Effort,
        strategy: Strategy,
        Budget {
            start_us,
            budget_us,
        }: Budget,
        clock: &mut impl Clock,
        rng: &mut impl Rng,
        report: &mut CycleReport,
    ) -> bool {
        loop {
            let volatile = db.expires_len() as u64;
            if volatile == 0 {
                db.avg_ttl_ms = 0;
                return false;
            }
            let now_ms = clock.unix_ms();
            let round = match strategy {
                Strategy::Uniform => {
                    uniform_round(db, effort.keys_per_loop.min(volatile), now_ms, rng)
                }
                Strategy::Deadline => deadline_round(db, effort.keys_per_loop, now_ms, rng),
            };
            let Round {
                sampled,
                expired,
                ttl_sum,
                ttl_samples,
            } = round;
            report.sampled += sampled;
            report.expired += expired;
            report.iterations += 1;
            if ttl_samples > 0 {
                // Redis's running estimate: 98% old, 2% new.
                let avg = ttl_sum / ttl_samples;
                if db.avg_ttl_ms == 0 {
                    db.avg_ttl_ms = avg;
                }
                db.avg_ttl_ms = (db.avg_ttl_ms / 50) * 49 + avg / 50;
            }
            if report.iterations.is_multiple_of(ITERATIONS_PER_CLOCK_CHECK)
                && clock.mono_us().saturating_sub(start_us) > budget_us
            {
                self.timelimit_exit = true;
                self.time_cap_reached_count += 1;
                return true;
            }
            if sampled > 0 && expired * 100 / sampled <= effort.acceptable_stale_perc {
                return false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Ttl;
    use crate::value::Value;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    use crate::clock::ManualClock;

    fn db_with(expired: usize, alive: usize, persistent: usize) -> Db {
        let mut db = Db::default();
        let v = || Value::Str(b"v".to_vec());
        for i in 0..expired {
            db.set(format!("e{i}").as_bytes(), v(), Ttl::At(500), 0);
        }
        for i in 0..alive {
            db.set(format!("a{i}").as_bytes(), v(), Ttl::At(1_000_000), 0);
        }
        for i in 0..persistent {
            db.set(format!("p{i}").as_bytes(), v(), Ttl::Clear, 0);
        }
        db
    }

    fn uniform(effort: u32, hz: u32) -> CycleSettings {
        CycleSettings {
            effort,
            hz,
            strategy: Strategy::Uniform,
        }
    }

    fn deadline(effort: u32, hz: u32) -> CycleSettings {
        CycleSettings {
            strategy: Strategy::Deadline,
            ..uniform(effort, hz)
        }
    }

    /// One slow cycle with a clock that stands still.
    fn slow(
        cycle: &mut ExpireCycle,
        dbs: &mut [Db],
        settings: CycleSettings,
        rng: &mut SmallRng,
    ) -> CycleReport {
        cycle.run(CycleKind::Slow, dbs, settings, &mut clock(0), rng)
    }

    fn clock(step_us: u64) -> ManualClock {
        ManualClock {
            unix_ms: 1_000,
            mono_us: 0,
            step_us,
        }
    }

    #[test]
    fn effort_scales_every_parameter() {
        assert_eq!(
            Effort::new(1),
            Effort {
                keys_per_loop: 20,
                fast_budget_us: 1000,
                slow_cpu_perc: 25,
                acceptable_stale_perc: 25
            }
        );
        assert_eq!(
            Effort::new(10),
            Effort {
                keys_per_loop: 65,
                fast_budget_us: 3250,
                slow_cpu_perc: 43,
                acceptable_stale_perc: 16
            }
        );
    }

    #[test]
    fn repeats_while_stale_and_stops_when_clean() {
        let mut dbs = vec![db_with(2_000, 100, 0)];
        let mut cycle = ExpireCycle::default();
        let mut rng = SmallRng::seed_from_u64(1);
        let report = slow(&mut cycle, &mut dbs, uniform(1, 10), &mut rng);
        assert!(report.iterations > 10, "{report:?}");
        // It stops once a sample is at most 25% stale: most keys are gone.
        assert!(dbs[0].len() < 100 + 2_000 / 4, "{}", dbs[0].len());
        assert_eq!(dbs[0].stats.expired_keys, report.expired);
        assert!(!report.hit_time_limit);
    }

    #[test]
    fn stops_after_one_iteration_when_below_threshold() {
        let mut dbs = vec![db_with(0, 1_000, 0)];
        let mut cycle = ExpireCycle::default();
        let mut rng = SmallRng::seed_from_u64(2);
        let report = slow(&mut cycle, &mut dbs, uniform(1, 10), &mut rng);
        assert_eq!(
            (report.iterations, report.sampled, report.expired),
            (1, 20, 0)
        );
        assert!(dbs[0].avg_ttl_ms > 0);
    }

    #[test]
    fn stops_at_its_budget() {
        let mut dbs = vec![db_with(100_000, 0, 0)];
        let mut cycle = ExpireCycle::default();
        let mut rng = SmallRng::seed_from_u64(3);
        // Each clock reading costs 20 ms: the 25 ms slow budget at hz 10 is
        // still unspent at the first clock check (16 iterations), spent at the second.
        let report = cycle.run(
            CycleKind::Slow,
            &mut dbs,
            uniform(1, 10),
            &mut clock(20_000),
            &mut rng,
        );
        assert!(report.hit_time_limit);
        assert_eq!(report.iterations, 32);
        assert_eq!(cycle.time_cap_reached_count, 1);
        assert!(dbs[0].len() > 90_000);
    }

    #[test]
    fn fast_cycle_runs_only_with_reason_and_not_too_often() {
        let mut dbs = vec![db_with(0, 10, 0)];
        let mut cycle = ExpireCycle::default();
        let mut rng = SmallRng::seed_from_u64(4);
        let mut clk = clock(1);
        assert!(
            !cycle
                .run(
                    CycleKind::Fast,
                    &mut dbs,
                    uniform(1, 10),
                    &mut clk,
                    &mut rng
                )
                .ran
        );
        cycle.timelimit_exit = true;
        assert!(
            cycle
                .run(
                    CycleKind::Fast,
                    &mut dbs,
                    uniform(1, 10),
                    &mut clk,
                    &mut rng
                )
                .ran
        );
        cycle.timelimit_exit = true;
        // Within 2 ms of the last fast cycle: skipped.
        assert!(
            !cycle
                .run(
                    CycleKind::Fast,
                    &mut dbs,
                    uniform(1, 10),
                    &mut clk,
                    &mut rng
                )
                .ran
        );
        clk.mono_us += 2_000;
        assert!(
            cycle
                .run(
                    CycleKind::Fast,
                    &mut dbs,
                    uniform(1, 10),
                    &mut clk,
                    &mut rng
                )
                .ran
        );
    }

    #[test]
    fn round_robin_resumes_where_it_stopped() {
        let mut dbs: Vec<Db> = (0..20).map(|_| db_with(0, 0, 0)).collect();
        let mut cycle = ExpireCycle::default();
        let mut rng = SmallRng::seed_from_u64(5);
        slow(&mut cycle, &mut dbs, uniform(1, 10), &mut rng);
        assert_eq!(cycle.next_db, 16);
        slow(&mut cycle, &mut dbs, uniform(1, 10), &mut rng);
        assert_eq!(cycle.next_db, 12);
    }

    #[test]
    fn disabled_cycle_does_nothing() {
        let mut dbs = vec![db_with(100, 0, 0)];
        let mut cycle = ExpireCycle {
            enabled: false,
            ..ExpireCycle::default()
        };
        let mut rng = SmallRng::seed_from_u64(6);
        assert!(
            !cycle
                .run(
                    CycleKind::Slow,
                    &mut dbs,
                    uniform(1, 10),
                    &mut clock(0),
                    &mut rng
                )
                .ran
        );
        assert_eq!(dbs[0].len(), 100);
    }

    #[test]
    fn deadline_order_finds_due_keys_among_many_live_ones() {
        let mut dbs = vec![db_with(300, 20_000, 1_000)];
        let mut cycle = ExpireCycle::default();
        let mut rng = SmallRng::seed_from_u64(7);
        let report = slow(&mut cycle, &mut dbs, deadline(1, 10), &mut rng);
        assert_eq!(report.expired, 300);
        assert_eq!(dbs[0].len(), 21_000);
        assert_eq!(dbs[0].stats.expired_keys_active, 300);
        // Nothing is due now: one candidate looked at, and the cycle stops.
        let report = slow(&mut cycle, &mut dbs, deadline(1, 10), &mut rng);
        assert_eq!(
            (report.iterations, report.sampled, report.expired),
            (1, 1, 0)
        );
        assert!(dbs[0].avg_ttl_ms > 0);
    }

    #[test]
    fn deadline_order_follows_ttl_changes() {
        let mut dbs = vec![db_with(0, 0, 0)];
        let v = |s: &str| Value::Str(s.as_bytes().to_vec());
        let mut cycle = ExpireCycle::default();
        let mut rng = SmallRng::seed_from_u64(8);
        // Build the heap first, then change TTLs up and down.
        slow(&mut cycle, &mut dbs, deadline(1, 10), &mut rng);
        for i in 0..100 {
            dbs[0].set(format!("k{i}").as_bytes(), v("x"), Ttl::At(500), 0);
        }
        for i in 0..50 {
            // Raised past "now": must survive although they were due first.
            dbs[0].set_expire(format!("k{i}").as_bytes(), 5_000, 0);
        }
        dbs[0].set(b"late", v("x"), Ttl::At(900_000), 0);
        dbs[0].set_expire(b"late", 100, 0); // lowered: now due
        dbs[0].persist(b"k60", 0);
        let report = slow(&mut cycle, &mut dbs, deadline(1, 10), &mut rng);
        assert_eq!(report.expired, 50, "{report:?}");
        assert!(dbs[0].contains(b"k0", 1_000) && dbs[0].contains(b"k60", 1_000));
        assert!(!dbs[0].contains(b"late", 1_000) && !dbs[0].contains(b"k70", 1_000));
        assert_eq!(dbs[0].len(), 51);
    }

    #[test]
    fn deadline_order_survives_overwrite_rename_delete_and_flush() {
        let mut dbs = vec![db_with(0, 0, 0)];
        let v = || Value::Str(b"x".to_vec());
        let mut cycle = ExpireCycle::default();
        let mut rng = SmallRng::seed_from_u64(12);
        slow(&mut cycle, &mut dbs, deadline(1, 10), &mut rng);
        let db = &mut dbs[0];
        for i in 0..20 {
            db.set(format!("k{i}").as_bytes(), v(), Ttl::At(500 + i), 0);
        }
        db.set(b"k0", v(), Ttl::Clear, 0); // overwrite without TTL
        db.set(b"k1", v(), Ttl::At(900_000), 0); // overwrite with a later TTL
        let moved = db.detach(b"k2", 0).unwrap(); // RENAME k2 -> r2
        db.attach(b"r2", moved, 0);
        assert!(db.delete(b"k3", 0, false));
        let report = slow(&mut cycle, &mut dbs, deadline(1, 10), &mut rng);
        // k4..k19 (16) and r2 were due; k0, k1 live on.
        assert_eq!(report.expired, 17, "{report:?}");
        assert!(dbs[0].contains(b"k0", 1_000) && dbs[0].contains(b"k1", 1_000));
        assert_eq!(dbs[0].len(), 2);
        dbs[0].flush();
        dbs[0].set(b"after", v(), Ttl::At(700), 0);
        assert_eq!(dbs[0].earliest_deadline_ms(), Some(700));
        let report = slow(&mut cycle, &mut dbs, deadline(1, 10), &mut rng);
        assert_eq!(report.expired, 1);
        assert!(dbs[0].is_empty());
    }

    #[test]
    fn deadline_fast_cycle_runs_when_a_key_is_due() {
        let mut dbs = vec![db_with(0, 100, 0)];
        let mut cycle = ExpireCycle::default();
        let mut rng = SmallRng::seed_from_u64(9);
        let mut clk = clock(1);
        assert!(
            !cycle
                .run(
                    CycleKind::Fast,
                    &mut dbs,
                    deadline(1, 10),
                    &mut clk,
                    &mut rng
                )
                .ran
        );
        dbs[0].set(b"due", Value::Str(b"x".to_vec()), Ttl::At(999), 0);
        assert_eq!(dbs[0].earliest_deadline_ms(), Some(999));
        let report = cycle.run(
            CycleKind::Fast,
            &mut dbs,
            deadline(1, 10),
            &mut clk,
            &mut rng,
        );
        assert!(report.ran);
        assert_eq!(report.expired, 1);
    }

    #[test]
    fn switching_strategy_reorders_the_expires_side() {
        let mut dbs = vec![db_with(10, 10, 0)];
        let mut cycle = ExpireCycle::default();
        let mut rng = SmallRng::seed_from_u64(10);
        assert!(!dbs[0].is_deadline_ordered());
        slow(&mut cycle, &mut dbs, deadline(1, 10), &mut rng);
        assert!(dbs[0].is_deadline_ordered());
        slow(&mut cycle, &mut dbs, uniform(1, 10), &mut rng);
        assert!(!dbs[0].is_deadline_ordered());
    }
}
