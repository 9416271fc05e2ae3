//! The cluster as text: CLUSTER NODES's lines, which are also
//! `nodes.conf`'s, with its `vars` line; the file replaced whole (a crash
//! leaves the old file or the new; the one before stays beside it as
//! `nodes.conf.previous`), synced when Redis syncs it, and read back at
//! startup.

use std::fmt::Write as _;

use tracing::{info, warn};

use super::slot::{self, SLOTS};
use super::*;

/// Flag names in Redis's order (`redisNodeFlagsTable`).
const FLAG_NAMES: [(u16, &str); 8] = [
    (MYSELF, "myself"),
    (MASTER, "master"),
    (SLAVE, "slave"),
    (PFAIL, "fail?"),
    (FAIL, "fail"),
    (HANDSHAKE, "handshake"),
    (NOADDR, "noaddr"),
    (NOFAILOVER, "nofailover"),
];

/// `myself,master`, or `noflags`.
pub fn flag_names(flags: u16) -> String {
    let names: Vec<&str> = FLAG_NAMES
        .iter()
        .filter(|(f, _)| flags & f != 0)
        .map(|(_, n)| *n)
        .collect();
    if names.is_empty() {
        "noflags".into()
    } else {
        names.join(",")
    }
}

impl Cluster {
    /// One node's line (Redis's `clusterGenNodeDescription`), with the
    /// port a client over TLS or not is given (`client_port`).
    pub fn describe_node(&self, id: NodeId, tls_client: bool) -> String {
        let ranges = slot::ranges(|s| self.slots[s] == Some(id));
        self.describe_with(id, &ranges, tls_client)
    }

    /// Every node's runs of slots, in one pass over the slot table
    /// (Redis's `clusterGenNodesSlotsInfo`).
    fn all_ranges(&self) -> std::collections::HashMap<NodeId, Vec<(usize, usize)>> {
        let mut ranges: std::collections::HashMap<NodeId, Vec<(usize, usize)>> = Default::default();
        let mut run: Option<(NodeId, usize)> = None;
        for slot in 0..=SLOTS {
            let owner = self.slots.get(slot).copied().flatten();
            match (run, owner) {
                (Some((n, _)), Some(o)) if n == o => continue,
                _ => {}
            }
            if let Some((n, first)) = run.take() {
                ranges.entry(n).or_default().push((first, slot - 1));
            }
            run = owner.map(|o| (o, slot));
        }
        ranges
    }

    fn describe_with(&self, id: NodeId, ranges: &[(usize, usize)], tls_client: bool) -> String {
        let n = &self.nodes[id];
        let port = self.client_port(n, tls_client);
        let mut line = String::with_capacity(128);
        let _ = write!(line, "{} {}:{port}@{}", n.name_str(), n.ip, n.cport);
        if !n.hostname.is_empty() {
            let _ = write!(line, ",{}", n.hostname);
        }
        let master = n.slaveof.map(|m| &self.nodes[m]);
        let epoch = match master {
            Some(m) if n.is_replica() => m.config_epoch,
            _ => n.config_epoch,
        };
        let _ = write!(
            line,
            " {} {} {} {} {} {}",
            flag_names(n.flags),
            master.map_or("-", |m| m.name_str()),
            n.ping_sent,
            n.pong_received,
            epoch,
            if n.link.is_some() || n.is(MYSELF) {
                "connected"
            } else {
                "disconnected"
            }
        );
        for &(first, last) in ranges {
            if first == last {
                let _ = write!(line, " {first}");
            } else {
                let _ = write!(line, " {first}-{last}");
            }
        }
        if n.is(MYSELF) {
            // In slot order, a slot both migrating and importing shown as
            // migrating (as Redis lists them).
            let mut open: Vec<(u16, bool, NodeId)> = self
                .migrating
                .iter()
                .map(|(s, n)| (*s, true, *n))
                .chain(
                    self.importing
                        .iter()
                        .filter(|(s, _)| !self.migrating.contains_key(s))
                        .map(|(s, n)| (*s, false, *n)),
                )
                .collect();
            open.sort_unstable_by_key(|(s, _, _)| *s);
            for (slot, migrating, other) in open {
                let arrow = if migrating { "->-" } else { "-<-" };
                let _ = write!(line, " [{slot}{arrow}{}]", self.nodes[other].name_str());
            }
        }
        line
    }

    /// Every node's line but those with a flag in `skip`, each ending
    /// with a newline (CLUSTER NODES; `nodes.conf` skips handshakes and
    /// holds the ports a TLS client is given).
    pub fn describe(&self, skip: u16, tls_client: bool) -> String {
        let mut out = String::new();
        let ranges = self.all_ranges();
        for (id, n) in self.nodes.iter() {
            if n.flags & skip == 0 {
                let mine = ranges.get(&id).map_or(&[][..], Vec::as_slice);
                out.push_str(&self.describe_with(id, mine, tls_client));
                out.push('\n');
            }
        }
        out
    }

    /// Writes `nodes.conf` (Redis's `clusterSaveConfig`), keeping the
    /// file it replaces as `<name>.previous`.
    pub fn save_config(&mut self, fsync: bool) -> std::io::Result<()> {
        let mut text = self.describe(HANDSHAKE, true);
        let _ = writeln!(
            text,
            "vars currentEpoch {} lastVoteEpoch {}",
            self.current_epoch, self.last_vote_epoch
        );
        crate::files::replace_keeping_previous(
            &self.config_path,
            &previous_path(&self.config_path),
            text.as_bytes(),
            fsync,
        )
    }

    /// Reads `nodes.conf` (Redis's `clusterLoadConfig`): false if there
    /// is none (or it is empty); an error names what is wrong in it.
    pub(super) fn load_config(&mut self, now: i64) -> Result<bool, String> {
        let text = match std::fs::read_to_string(&self.config_path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => {
                return Err(format!(
                    "Loading the cluster node config from {}: {e}",
                    self.config_path.display()
                ))
            }
        };
        if text.is_empty() {
            return Ok(false);
        }
        let corrupt =
            |why: &str| format!("Unrecoverable error: corrupted cluster config file ({why}).");
        let mut myself = None;
        for line in text.lines() {
            let argv: Vec<&str> = line.split_whitespace().collect();
            if argv.is_empty() {
                continue;
            }
            if argv[0].eq_ignore_ascii_case("vars") {
                if argv.len().is_multiple_of(2) {
                    return Err(corrupt("vars"));
                }
                for pair in argv[1..].chunks(2) {
                    let value = pair[1].parse().unwrap_or(0);
                    match pair[0] {
                        "currentEpoch" => self.current_epoch = value,
                        "lastVoteEpoch" => self.last_vote_epoch = value,
                        other => warn!("Skipping unknown cluster config variable '{other}'"),
                    }
                }
                continue;
            }
            if argv.len() < 8 {
                return Err(corrupt("a line with fewer than 8 fields"));
            }
            let id = self
                .node_named(argv[0], now)
                .ok_or_else(|| corrupt("node name"))?;
            let (address, hostname) = argv[1].split_once(',').unwrap_or((argv[1], ""));
            let (ip, ports) = address.rsplit_once(':').ok_or_else(|| corrupt("address"))?;
            let (port, cport) = match ports.split_once('@') {
                Some((p, c)) => (p.parse().unwrap_or(0), c.parse().unwrap_or(0)),
                None => {
                    let p: u16 = ports.parse().unwrap_or(0);
                    (p, p.saturating_add(PORT_INCR))
                }
            };
            let mut flags = 0;
            for flag in argv[2].split(',') {
                match FLAG_NAMES
                    .iter()
                    .find(|(_, n)| flag.eq_ignore_ascii_case(n))
                {
                    Some((f, _)) => flags |= f,
                    None if flag.eq_ignore_ascii_case("noflags") => {}
                    None => return Err(corrupt("unknown flag")),
                }
            }
            if flags & MYSELF != 0 {
                if myself.is_some() {
                    return Err(corrupt("two nodes flagged myself"));
                }
                myself = Some(id);
            }
            let node = &mut self.nodes[id];
            node.ip = ip.to_string();
            node.hostname = hostname.to_string();
            node.port = port;
            node.cport = cport;
            node.flags = flags;
            if flags & FAIL != 0 {
                node.fail_time = now;
            }
            if argv[4] != "0" {
                node.ping_sent = now;
            }
            if argv[5] != "0" {
                node.pong_received = now;
            }
            if argv[3] != "-" {
                let master = self
                    .node_named(argv[3], now)
                    .ok_or_else(|| corrupt("master name"))?;
                self.nodes[id].slaveof = Some(master);
                self.add_replica(master, id);
            }
            let node = &mut self.nodes[id];
            node.config_epoch = if node.is_replica() && node.slaveof.is_some() {
                0
            } else {
                argv[6].parse().unwrap_or(0)
            };
            for arg in &argv[8..] {
                if let Some(open) = arg.strip_prefix('[') {
                    let (slot, rest) = open.split_once('-').ok_or_else(|| corrupt("open slot"))?;
                    let slot: u16 = slot
                        .parse()
                        .ok()
                        .filter(|s| usize::from(*s) < SLOTS)
                        .ok_or_else(|| corrupt("slot"))?;
                    let migrating = rest.starts_with('>');
                    let name = rest
                        .get(2..)
                        .and_then(|r| r.strip_suffix(']'))
                        .ok_or_else(|| corrupt("open slot"))?;
                    let other = self
                        .node_named(name, now)
                        .ok_or_else(|| corrupt("node name"))?;
                    if migrating {
                        self.migrating.insert(slot, other);
                    } else {
                        self.importing.insert(slot, other);
                    }
                    continue;
                }
                let (first, last) = arg.split_once('-').unwrap_or((arg, arg));
                let range = first.parse::<usize>().ok().zip(last.parse::<usize>().ok());
                let Some((first, last)) = range.filter(|(f, l)| *f < SLOTS && *l < SLOTS) else {
                    return Err(corrupt("slot range"));
                };
                for slot in first..=last {
                    self.add_slot(id, slot);
                }
            }
        }
        let Some(me) = myself else {
            return Err(corrupt("no node flagged myself"));
        };
        self.myself = me;
        info!("Node configuration loaded, I'm {}", self.me().name_str());
        self.current_epoch = self.current_epoch.max(self.max_epoch());
        Ok(true)
    }

    /// The node of this name, added if new; None if it is no name.
    fn node_named(&mut self, name: &str, now: i64) -> Option<NodeId> {
        let name = parse_name(name.as_bytes())?;
        Some(match self.by_name.get(&name) {
            Some(id) => *id,
            None => self.add_node(Node::new(name, 0, now)),
        })
    }
}

/// Where the `nodes.conf` a save replaces is kept (and the next save is
/// written before it takes the name).
fn previous_path(path: &std::path::Path) -> std::path::PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".previous");
    path.with_file_name(name)
}
