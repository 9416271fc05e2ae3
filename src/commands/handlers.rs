//! The handlers by table entry: each family binds its handlers to the
//! command table's entries by full name (its `HANDLERS`); `of` finds an
//! entry's handler by its id.

use std::sync::OnceLock;

use super::{
    acl, bits, cluster, connection, debug, expire, geo, hashes, hll, keys, lease, lists,
    member_ttl, migrate, pubsub, replication, scripting, server, sets, sort, stream_groups,
    streams, strings, transactions, zsets, Handler,
};
use crate::command_table::Command;

/// The families binding handlers, each `(full name, handler)`.
static FAMILIES: &[&[(&str, Handler)]] = &[
    connection::HANDLERS,
    acl::HANDLERS,
    strings::HANDLERS,
    bits::HANDLERS,
    hll::HANDLERS,
    keys::HANDLERS,
    migrate::HANDLERS,
    sort::HANDLERS,
    expire::HANDLERS,
    hashes::HANDLERS,
    lists::HANDLERS,
    sets::HANDLERS,
    zsets::HANDLERS,
    member_ttl::HANDLERS,
    lease::HANDLERS,
    geo::HANDLERS,
    streams::HANDLERS,
    stream_groups::HANDLERS,
    server::HANDLERS,
    debug::HANDLERS,
    transactions::HANDLERS,
    pubsub::HANDLERS,
    scripting::HANDLERS,
    replication::HANDLERS,
    cluster::HANDLERS,
];

/// Every entry's handler, by id; `None` for a container (it runs its
/// subcommands).
fn handlers() -> &'static [Option<Handler>] {
    static BY_ID: OnceLock<Vec<Option<Handler>>> = OnceLock::new();
    BY_ID.get_or_init(|| {
        let mut by_id = vec![None; crate::command_table::COUNT];
        for (name, run) in FAMILIES.iter().flat_map(|f| f.iter()) {
            if let Some(slot) = crate::command_table::lookup_full(name)
                .and_then(|cmd| by_id.get_mut(usize::from(cmd.id)))
            {
                *slot = Some(*run);
            }
        }
        by_id
    })
}

/// The handler of a table entry (`None` for a container).
pub fn of(cmd: &Command) -> Option<Handler> {
    handlers().get(usize::from(cmd.id)).copied().flatten()
}

#[cfg(test)]
mod tests {
    /// Every entry but a container has one handler, and every handler an
    /// entry.
    #[test]
    fn every_entry_has_its_handler() {
        let mut bound = std::collections::HashSet::new();
        for (name, _) in super::FAMILIES.iter().flat_map(|f| f.iter()) {
            let cmd = crate::command_table::lookup_full(name)
                .unwrap_or_else(|| panic!("{name} is bound but has no entry"));
            assert!(bound.insert(cmd.id), "{name} is bound twice");
        }
        for (cmd, parent) in crate::command_table::all_with_subcommands() {
            let full = crate::command_table::full_name(cmd, parent);
            let container = !cmd.subcommands.is_empty() && cmd.name != "command";
            assert_eq!(
                super::of(cmd).is_some(),
                !container,
                "{full}: a handler exactly when it is not a container"
            );
        }
    }
}
