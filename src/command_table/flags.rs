//! Command flags as a typed bitset, spelled in the table with Redis's
//! names (`"write"`, `"denyoom"`, ...) and checked at compile time.
//!
//! Dispatch gates on them in one place: authentication (`noauth`),
//! transactions (`no-multi`), subscribed mode (`pubsub` and friends),
//! later read-only replicas (`write`), OOM (`denyoom`), scripts
//! (`noscript`) and loading (`loading`).

/// A set of command flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Flags(u32);

impl std::ops::BitOr for Flags {
    type Output = Flags;

    fn bitor(self, other: Flags) -> Flags {
        Flags(self.0 | other.0)
    }
}

/// Every flag with the name COMMAND reports, in Redis's order.
const NAMES: &[(&str, Flags)] = &[
    ("write", Flags::WRITE),
    ("readonly", Flags::READONLY),
    ("denyoom", Flags::DENYOOM),
    ("admin", Flags::ADMIN),
    ("pubsub", Flags::PUBSUB),
    ("noscript", Flags::NOSCRIPT),
    ("blocking", Flags::BLOCKING),
    ("loading", Flags::LOADING),
    ("stale", Flags::STALE),
    ("skip_monitor", Flags::SKIP_MONITOR),
    ("skip_slowlog", Flags::SKIP_SLOWLOG),
    ("asking", Flags::ASKING),
    ("fast", Flags::FAST),
    ("no_auth", Flags::NOAUTH),
    ("no_mandatory_keys", Flags::NO_MANDATORY_KEYS),
    ("no_async_loading", Flags::NO_ASYNC_LOADING),
    ("no_multi", Flags::NO_MULTI),
    ("allow_busy", Flags::ALLOW_BUSY),
    ("may_replicate", Flags::MAY_REPLICATE),
];

/// Flags Redis 7.0 keeps to itself: COMMAND does not list them.
const HIDDEN: Flags = Flags::MAY_REPLICATE;

impl Flags {
    pub const NONE: Flags = Flags(0);
    pub const WRITE: Flags = Flags(1);
    pub const READONLY: Flags = Flags(1 << 1);
    pub const DENYOOM: Flags = Flags(1 << 2);
    pub const ADMIN: Flags = Flags(1 << 3);
    pub const PUBSUB: Flags = Flags(1 << 4);
    pub const NOSCRIPT: Flags = Flags(1 << 5);
    pub const BLOCKING: Flags = Flags(1 << 6);
    pub const LOADING: Flags = Flags(1 << 7);
    pub const STALE: Flags = Flags(1 << 8);
    pub const SKIP_MONITOR: Flags = Flags(1 << 9);
    pub const FAST: Flags = Flags(1 << 10);
    pub const NOAUTH: Flags = Flags(1 << 11);
    pub const NO_MULTI: Flags = Flags(1 << 12);
    pub const ALLOW_BUSY: Flags = Flags(1 << 13);
    /// Not a write, but may propagate (scripts, PUBLISH): held by CLIENT
    /// PAUSE WRITE as writes are.
    pub const MAY_REPLICATE: Flags = Flags(1 << 14);
    /// Reported by COMMAND as Redis reports them (the behaviour they name
    /// is built in: EXEC is never slow-logged, scripts may name no keys,
    /// there is no async loading).
    pub const SKIP_SLOWLOG: Flags = Flags(1 << 15);
    pub const NO_MANDATORY_KEYS: Flags = Flags(1 << 16);
    pub const NO_ASYNC_LOADING: Flags = Flags(1 << 17);
    /// Served by a node importing the slot without ASKING first
    /// (RESTORE-ASKING, as a slot's migration sends it).
    pub const ASKING: Flags = Flags(1 << 18);

    /// The flags named in `names`, as the command table spells them
    /// (`"noauth"` and `"no-multi"` are accepted for Redis's source names).
    /// Evaluated at compile time: an unknown name fails the build.
    pub const fn parse(names: &[&str]) -> Flags {
        let mut bits = 0;
        let mut i = 0;
        while i < names.len() {
            bits |= Self::named(names[i]).0;
            i += 1;
        }
        Flags(bits)
    }

    const fn named(name: &str) -> Flags {
        let name = name.as_bytes();
        let mut i = 0;
        while i < NAMES.len() {
            if same_name(NAMES[i].0.as_bytes(), name) {
                return NAMES[i].1;
            }
            i += 1;
        }
        panic!("unknown command flag")
    }

    pub const fn has(self, flag: Flags) -> bool {
        self.0 & flag.0 == flag.0
    }

    /// These flags and those of `other`.
    pub const fn with(self, other: Flags) -> Flags {
        Flags(self.0 | other.0)
    }

    /// Those of these flags that are in `other`.
    pub const fn only(self, other: Flags) -> Flags {
        Flags(self.0 & other.0)
    }

    /// These flags but those of `other`.
    pub const fn without(self, other: Flags) -> Flags {
        Flags(self.0 & !other.0)
    }

    /// The names COMMAND INFO lists.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        NAMES
            .iter()
            .filter(move |(_, f)| self.has(*f) && !HIDDEN.has(*f))
            .map(|(n, _)| *n)
    }
}

/// Equal names, where `-` in the table matches `_` and `noauth` is the
/// short spelling of `no_auth`.
const fn same_name(canonical: &[u8], given: &[u8]) -> bool {
    if given.len() == 6 && canonical.len() == 7 {
        let short = b"noauth";
        let mut i = 0;
        while i < 6 {
            if given[i] != short[i] {
                return false;
            }
            i += 1;
        }
        return canonical[2] == b'_';
    }
    if canonical.len() != given.len() {
        return false;
    }
    let mut i = 0;
    while i < canonical.len() {
        let g = if given[i] == b'-' { b'_' } else { given[i] };
        if canonical[i] != g {
            return false;
        }
        i += 1;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        let f = Flags::parse(&["write", "denyoom", "noauth", "no-multi"]);
        assert!(f.has(Flags::WRITE) && f.has(Flags::NOAUTH) && f.has(Flags::NO_MULTI));
        assert!(!f.has(Flags::READONLY));
        assert_eq!(
            f.names().collect::<Vec<_>>(),
            ["write", "denyoom", "no_auth", "no_multi"]
        );
    }
}
