//! Element expiry commands, one implementation for every family that has
//! them: hash fields (Redis 7.4's HEXPIRE, HTTL, HPERSIST and their
//! variants), set members (Redis 8.12's SEXPIRE, STTL, SPERSIST and
//! theirs) and sorted-set members (lapse's ZEXPIRE, ZTTL, ZPERSIST...,
//! built the same way). A `Family` says what differs: the type, the `FIELDS` /
//! `MEMBERS` token and its errors, the events and the commands that carry
//! the effects to replicas and the AOF. Where Redis 8.12 documents no
//! detail for sets (error texts, event names), the hash family's is
//! followed with "member" for "field".

use super::aggregate::{delete_if_empty, read, read_for_write, Aggregate, Kind, HASH, SET, ZSET};
use super::{CmdError, CmdResult, Ctx};
use crate::db::EventClass;
use crate::protocol::request::parse_i64;
use crate::protocol::Args;
use crate::value::{Hash, HashRef, Set, SetRef, ZSet, ZSetRef};

/// The latest element deadline a command may set (Redis's
/// `HFE_MAX_ABS_TIME_MSEC`, a quarter of what a file may hold).
pub(super) const MEMBER_TTL_MAX_MS: i64 = crate::value::field_ttl::FIELD_TTL_MAX_MS >> 2;

/// An aggregate whose elements can carry deadlines.
pub(super) trait WithTtls: Aggregate {
    /// What changing a deadline needs of the configuration.
    type Limits: Copy;
    fn limits(config: &crate::config::Config) -> Self::Limits;
    /// `None`: no such element; `Some(None)`: it has no deadline.
    fn ttl_of(view: Self::View<'_>, member: &[u8]) -> Option<Option<i64>>;
    /// `ttl_of` of the owned value.
    fn ttl_here(&self, member: &[u8]) -> Option<Option<i64>> {
        Self::ttl_of(self.borrowed(), member)
    }
    fn set_ttl(&mut self, member: &[u8], at_ms: Option<i64>, limits: Self::Limits);
    fn remove_member(&mut self, member: &[u8]);
    /// What an EXPIRE-family command does to the value before anything
    /// else, whatever it then sets (a small hash becomes `listpackex`).
    fn ready_for_ttls(&mut self) {}
}

impl WithTtls for Hash {
    type Limits = crate::value::PackLimits;
    fn limits(config: &crate::config::Config) -> Self::Limits {
        config.hash_limits()
    }
    fn ttl_of(view: HashRef<'_>, field: &[u8]) -> Option<Option<i64>> {
        view.field_ttl(field)
    }
    fn set_ttl(&mut self, field: &[u8], at_ms: Option<i64>, limits: Self::Limits) {
        self.set_field_ttl(field, at_ms, limits);
    }
    fn ready_for_ttls(&mut self) {
        self.allow_field_ttls();
    }
    fn remove_member(&mut self, field: &[u8]) {
        self.remove([field]);
    }
}

/// Sets and sorted sets: their members' deadlines, as their views give
/// them.
macro_rules! members_with_ttls {
    ($ty:ty, $view:ident) => {
        impl WithTtls for $ty {
            type Limits = ();
            fn limits(_: &crate::config::Config) {}
            fn ttl_of(view: $view<'_>, member: &[u8]) -> Option<Option<i64>> {
                view.member_ttl(member)
            }
            fn set_ttl(&mut self, member: &[u8], at_ms: Option<i64>, _: ()) {
                self.set_member_ttl(member, at_ms);
            }
            fn remove_member(&mut self, member: &[u8]) {
                self.remove(member);
            }
        }
    };
}

members_with_ttls!(Set, SetRef);
members_with_ttls!(ZSet, ZSetRef);

/// What differs between the families' element expiry commands.
pub(super) struct Family<T: WithTtls> {
    pub kind: &'static Kind<T>,
    /// `FIELDS` / `MEMBERS`.
    pub token: &'static str,
    pub missing_token: &'static str,
    /// A count below 1, for the commands that set and those that read.
    pub bad_count_set: &'static str,
    pub bad_count_read: &'static str,
    pub count_mismatch: &'static str,
    pub class: EventClass,
    /// Events: a deadline set, removed, an element deleted.
    pub on_expire: &'static str,
    pub on_persist: &'static str,
    pub on_delete: &'static str,
    /// The commands the effects travel as.
    pub expire_at: &'static [u8],
    pub delete: &'static [u8],
    /// EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT's names (for errors).
    pub names: [&'static str; 4],
}

pub(super) const HASH_FIELDS: Family<Hash> = Family {
    kind: &HASH,
    token: "FIELDS",
    missing_token: "ERR Mandatory argument FIELDS is missing or not at the right position",
    bad_count_set: "ERR Parameter `numFields` should be greater than 0",
    bad_count_read: "ERR Number of fields must be a positive integer",
    count_mismatch: "ERR The `numfields` parameter must match the number of arguments",
    class: EventClass::HASH,
    on_expire: "hexpire",
    on_persist: "hpersist",
    on_delete: "hdel",
    expire_at: b"HPEXPIREAT",
    delete: b"HDEL",
    names: ["hexpire", "hpexpire", "hexpireat", "hpexpireat"],
};

pub(super) const SET_MEMBERS: Family<Set> = Family {
    kind: &SET,
    token: "MEMBERS",
    missing_token: "ERR Mandatory argument MEMBERS is missing or not at the right position",
    bad_count_set: "ERR Parameter `numMembers` should be greater than 0",
    bad_count_read: "ERR Number of members must be a positive integer",
    count_mismatch: "ERR The `nummembers` parameter must match the number of arguments",
    class: EventClass::SET,
    on_expire: "sexpire",
    on_persist: "spersist",
    on_delete: "srem",
    expire_at: b"SPEXPIREAT",
    delete: b"SREM",
    names: ["sexpire", "spexpire", "sexpireat", "spexpireat"],
};

pub(super) const ZSET_MEMBERS: Family<ZSet> = Family {
    kind: &ZSET,
    token: "MEMBERS",
    missing_token: "ERR Mandatory argument MEMBERS is missing or not at the right position",
    bad_count_set: "ERR Parameter `numMembers` should be greater than 0",
    bad_count_read: "ERR Number of members must be a positive integer",
    count_mismatch: "ERR The `nummembers` parameter must match the number of arguments",
    class: EventClass::ZSET,
    on_expire: "zexpire",
    on_persist: "zpersist",
    on_delete: "zrem",
    expire_at: b"ZPEXPIREAT",
    delete: b"ZREM",
    names: ["zexpire", "zpexpire", "zexpireat", "zpexpireat"],
};

impl<T: WithTtls> Family<T> {
    /// `FIELDS|MEMBERS count element ...` from `at` (where the token must
    /// be), checked in Redis's order; `bad_count`: the message for a
    /// count below 1. The elements.
    pub fn elements_arg<'a>(
        &self,
        args: &'a Args,
        at: usize,
        bad_count: &'static str,
    ) -> Result<Vec<&'a [u8]>, CmdError> {
        if at >= args.len() || !super::is(&args[at], self.token) {
            return Err(CmdError::Static(self.missing_token));
        }
        if at + 1 >= args.len() {
            return Err(CmdError::Static(bad_count));
        }
        let n = parse_i64(&args[at + 1]).ok_or(CmdError::Static(bad_count))?;
        if n < 1 {
            return Err(CmdError::Static(bad_count));
        }
        if usize::try_from(n).ok() != Some(args.len() - at - 2) {
            return Err(CmdError::Static(self.count_mismatch));
        }
        Ok((at + 2..args.len()).map(|i| &args[i][..]).collect())
    }

    /// An effect naming `elements` after `head` as `TOKEN count element ...`.
    pub fn propagate_with(&self, ctx: &mut Ctx, head: &[&[u8]], elements: &[&[u8]]) {
        let count = elements.len().to_string();
        let mut effect: Vec<&[u8]> = head.to_vec();
        effect.extend([self.token.as_bytes(), count.as_bytes()]);
        effect.extend(elements.iter().copied());
        ctx.propagate_as(&effect);
    }

    /// Elements a deadline already past deleted: counted as expired, the
    /// delete event, one deletion command each (Redis's
    /// `propagateHashFieldDeletion`), and the key gone with its last.
    pub fn deleted_by_past_deadline(&self, ctx: &mut Ctx, key: &[u8], elements: &[&[u8]]) {
        if elements.is_empty() {
            return;
        }
        ctx.db().stats.expired_subkeys += elements.len() as u64;
        ctx.signal(self.class, self.on_delete, key);
        for element in elements {
            ctx.propagate_as(&[self.delete, key, element]);
        }
        delete_if_empty(ctx, key);
    }

    /// The EXPIRE family (Redis's `hexpireGenericCommand`): the deadline
    /// `args[2]` in `unit_ms` from `base_ms` (0: absolute), for each
    /// element: -2 no such element, 0 the condition is not met, 1 set, 2
    /// deleted (the deadline is past). Propagated as the PEXPIREAT form
    /// of the elements set, after a deletion of each element deleted.
    pub fn expire(&self, ctx: &mut Ctx, args: &Args, base_ms: i64, unit_ms: i64) -> CmdResult {
        let key = &args[1];
        let exists = read_for_write(ctx, key, self.kind)?.is_some();
        let name = match (base_ms, unit_ms) {
            (0, 1000) => self.names[2],
            (0, _) => self.names[3],
            (_, 1000) => self.names[0],
            _ => self.names[1],
        };
        let at = deadline_arg(&args[2], base_ms, unit_ms, name)?;
        let (condition, elements_at) = match args[3].to_ascii_uppercase().as_slice() {
            b"NX" => (Condition::Nx, 4),
            b"XX" => (Condition::Xx, 4),
            b"GT" => (Condition::Gt, 4),
            b"LT" => (Condition::Lt, 4),
            _ => (Condition::Always, 3),
        };
        let elements = self.elements_arg(args, elements_at, self.bad_count_set)?;
        if !exists {
            reply_codes(ctx, &vec![-2; elements.len()]);
            return Ok(());
        }
        let condition_arg = (condition != Condition::Always).then(|| &args[3][..]);
        let codes = self.set_deadlines(ctx, key, &elements, at, condition, condition_arg)?;
        reply_codes(ctx, &codes);
        Ok(())
    }

    /// Gives `elements` of the value at `key` (which exists) the deadline
    /// `at` under `condition` (its word as given, for the effect); the
    /// EXPIRE family's code for each.
    fn set_deadlines(
        &self,
        ctx: &mut Ctx,
        key: &[u8],
        elements: &[&[u8]],
        at: i64,
        condition: Condition,
        condition_arg: Option<&[u8]>,
    ) -> Result<Vec<i64>, CmdError> {
        let now_ms = ctx.now_ms;
        let past = ctx.server.already_expired(at, now_ms);
        let limits = T::limits(&ctx.server.config);
        let value = super::aggregate::write(ctx, key, self.kind)?.ok_or(CmdError::WrongType)?;
        value.ready_for_ttls();
        let mut codes = Vec::with_capacity(elements.len());
        let (mut set, mut deleted) = (Vec::new(), Vec::new());
        for &element in elements {
            let code = match value.ttl_here(element) {
                None => -2,
                Some(current) if !condition.allows(current, at) => 0,
                Some(_) if past => {
                    value.remove_member(element);
                    deleted.push(element);
                    2
                }
                Some(_) => {
                    value.set_ttl(element, Some(at), limits);
                    set.push(element);
                    1
                }
            };
            codes.push(code);
        }
        // One deadline for all: either some elements took it or some went.
        if !set.is_empty() {
            ctx.db().track_member_deadlines(key);
            ctx.signal(self.class, self.on_expire, key);
            let at_text = at.to_string();
            let mut head: Vec<&[u8]> = vec![self.expire_at, key, at_text.as_bytes()];
            head.extend(condition_arg);
            self.propagate_with(ctx, &head, &set);
        }
        self.deleted_by_past_deadline(ctx, key, &deleted);
        Ok(codes)
    }

    /// The TTL family (Redis's `httlGenericCommand`): per element -2 no
    /// such element (or past its deadline), -1 no deadline, else the
    /// deadline from now (`relative`) or absolute, in `unit_ms`, seconds
    /// rounded up.
    pub fn ttl(&self, ctx: &mut Ctx, args: &Args, relative: bool, unit_ms: i64) -> CmdResult {
        let now_ms = ctx.now_ms;
        let value = read(ctx, &args[1], self.kind)?;
        let elements = self.elements_arg(args, 2, self.bad_count_read)?;
        let replies: Vec<i64> = elements
            .iter()
            .map(|e| match value.and_then(|v| T::ttl_of(v, e)) {
                None => -2,
                Some(None) => -1,
                Some(Some(at)) if at <= now_ms => -2,
                Some(Some(at)) => {
                    let from = if relative { now_ms } else { 0 };
                    (at - from + unit_ms - 1) / unit_ms
                }
            })
            .collect();
        reply_codes(ctx, &replies);
        Ok(())
    }

    /// PERSIST: per element -2 no such element, -1 no deadline, 1
    /// removed. Propagated as given when it removed one.
    pub fn persist(&self, ctx: &mut Ctx, args: &Args) -> CmdResult {
        let key = &args[1];
        let exists = read_for_write(ctx, key, self.kind)?.is_some();
        let elements = self.elements_arg(args, 2, self.bad_count_read)?;
        let mut codes = Vec::with_capacity(elements.len());
        if exists {
            let limits = T::limits(&ctx.server.config);
            let value = super::aggregate::write(ctx, key, self.kind)?.ok_or(CmdError::WrongType)?;
            for &element in &elements {
                codes.push(match value.ttl_here(element) {
                    None => -2,
                    Some(None) => -1,
                    Some(Some(_)) => {
                        value.set_ttl(element, None, limits);
                        1
                    }
                });
            }
        } else {
            codes.resize(elements.len(), -2);
        }
        if codes.contains(&1) {
            ctx.signal(self.class, self.on_persist, key);
        }
        reply_codes(ctx, &codes);
        Ok(())
    }
}

/// An element deadline given as `arg` in `unit_ms` from `base_ms` (0:
/// absolute), checked as Redis's `parseExpireTime` checks it; `command`
/// names the command in the error for one too far.
pub(super) fn deadline_arg(
    arg: &[u8],
    base_ms: i64,
    unit_ms: i64,
    command: &'static str,
) -> Result<i64, CmdError> {
    let time = parse_i64(arg).ok_or(CmdError::NotInteger)?;
    if time < 0 {
        return Err(CmdError::Static("ERR invalid expire time, must be >= 0"));
    }
    Ok(time
        .checked_mul(unit_ms)
        .filter(|ms| *ms <= MEMBER_TTL_MAX_MS - base_ms)
        .ok_or(CmdError::InvalidExpireTime(command))?
        + base_ms)
}

/// What the EXPIRE family sets a deadline under.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Condition {
    Always,
    Nx,
    Xx,
    Gt,
    Lt,
}

impl Condition {
    /// Whether an element whose deadline is `current` takes `at` (no
    /// deadline counts as infinitely far: LT takes it, GT does not).
    fn allows(self, current: Option<i64>, at: i64) -> bool {
        match (self, current) {
            (Condition::Always, _) => true,
            (Condition::Nx, current) => current.is_none(),
            (Condition::Xx, current) => current.is_some(),
            (Condition::Gt, current) => current.is_some_and(|c| at > c),
            (Condition::Lt, current) => current.is_none_or(|c| at < c),
        }
    }
}

/// Replies with one integer per element.
pub(super) fn reply_codes(ctx: &mut Ctx, codes: &[i64]) {
    let out = ctx.out();
    out.array(codes.len());
    codes.iter().for_each(|&c| out.int(c));
}

// ---- KeyDB's EXPIREMEMBER family, onto the same deadlines --------------

/// The handlers of KeyDB's commands, by full name.
pub(super) static HANDLERS: &[(&str, super::Handler)] = &[
    ("expiremember", expiremember),
    ("expirememberat", expirememberat),
    ("pexpirememberat", pexpirememberat),
];

/// KeyDB's `expireMemberCore`: the deadline `at` for `member` of the hash,
/// set or sorted set at `key`: 1 if set (a past one deletes it), 0 if there
/// is no such key or member; another type is refused with KeyDB's error.
fn expire_member(ctx: &mut Ctx, key: &[u8], member: &[u8], at: i64) -> CmdResult {
    use crate::value::ValueRef;
    let now_ms = ctx.now_ms;
    let codes = match ctx.db().get_for_write(key, now_ms) {
        None => vec![0],
        Some(ValueRef::Hash(_)) => {
            HASH_FIELDS.set_deadlines(ctx, key, &[member], at, Condition::Always, None)?
        }
        Some(ValueRef::Set(_)) => {
            SET_MEMBERS.set_deadlines(ctx, key, &[member], at, Condition::Always, None)?
        }
        Some(ValueRef::ZSet(_)) => {
            ZSET_MEMBERS.set_deadlines(ctx, key, &[member], at, Condition::Always, None)?
        }
        Some(_) => return Err(CmdError::Static("ERR object type is unsupported")),
    };
    let set = codes.first().is_some_and(|&c| c > 0);
    ctx.out().int(i64::from(set));
    Ok(())
}

/// KeyDB's `TTL key member`: `None` if there is no key; `Some(None)` if
/// the member is not there, has no deadline or the type has no members
/// (KeyDB answers -1 for all three; a member past its deadline is not
/// there).
pub(super) fn keydb_member_deadline(
    ctx: &mut Ctx,
    key: &[u8],
    member: &[u8],
) -> Option<Option<i64>> {
    use crate::value::ValueRef;
    let now_ms = ctx.now_ms;
    let deadline = match ctx.db().get(key, now_ms)? {
        ValueRef::Hash(h) => Hash::ttl_of(h, member),
        ValueRef::Set(s) => Set::ttl_of(s, member),
        ValueRef::ZSet(z) => ZSet::ttl_of(z, member),
        _ => None,
    };
    Some(deadline.flatten().filter(|&at| at > now_ms))
}

/// KeyDB's deadline argument: an integer in `unit_ms` from `base_ms`,
/// within what an element deadline may be.
fn keydb_deadline(
    arg: &[u8],
    base_ms: i64,
    unit_ms: i64,
    command: &'static str,
) -> Result<i64, CmdError> {
    let time = parse_i64(arg).ok_or(CmdError::NotInteger)?;
    time.checked_mul(unit_ms)
        .and_then(|ms| ms.checked_add(base_ms))
        .filter(|at| (0..=MEMBER_TTL_MAX_MS).contains(at))
        .ok_or(CmdError::InvalidExpireTime(command))
}

/// EXPIREMEMBER key member delay [s|ms]
fn expiremember(ctx: &mut Ctx, args: Args) -> CmdResult {
    if args.len() > 5 {
        return Err(CmdError::Static("ERR Invalid number of arguments"));
    }
    // The delay is read before the unit, as KeyDB does.
    parse_i64(&args[3]).ok_or(CmdError::NotInteger)?;
    let unit_ms = match (args.len() > 4).then(|| args.get(4)) {
        None => 1000,
        Some(unit) if unit.eq_ignore_ascii_case(b"s") => 1000,
        Some(unit) if unit.eq_ignore_ascii_case(b"ms") => 1,
        Some(_) => return Err(CmdError::Static("ERR Invalid unit arg")),
    };
    let now_ms = ctx.now_ms;
    let at = keydb_deadline(&args[3], now_ms, unit_ms, "expiremember")?;
    expire_member(ctx, &args[1], &args[2], at)
}

/// EXPIREMEMBERAT key member unix-time-seconds
fn expirememberat(ctx: &mut Ctx, args: Args) -> CmdResult {
    let at = keydb_deadline(&args[3], 0, 1000, "expirememberat")?;
    expire_member(ctx, &args[1], &args[2], at)
}

/// PEXPIREMEMBERAT key member unix-time-milliseconds
fn pexpirememberat(ctx: &mut Ctx, args: Args) -> CmdResult {
    let at = keydb_deadline(&args[3], 0, 1, "pexpirememberat")?;
    expire_member(ctx, &args[1], &args[2], at)
}
