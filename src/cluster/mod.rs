//! Redis Cluster as this node sees it (Redis 7.0's `cluster.c`): the
//! nodes it knows, who serves each of the 16384 slots, the epochs, and
//! the cluster bus's links as buffers. No sockets: the loop
//! (`server/cluster.rs`) connects the links this room asks for
//! (`to_connect`), feeds it what they read (`receive`), writes what it
//! queued (`Link::send`) and closes what it dropped (`to_close`). What a
//! message asks of the rest of the server (a PUBLISH to deliver, keys
//! of a lost slot to delete) waits in `effects` for the loop.

mod failover;
pub mod message;
mod nodes_conf;
pub mod slot;

use std::collections::{BTreeMap, HashMap};

use rand::Rng;
use slab::Slab;
use tracing::{debug, info, warn};

use crate::config::ClusterConfig;
pub use failover::{FailoverRefused, ReplicaView};
pub use message::NodeName;
use message::{Body, Gossip, Header, Message, NO_NAME, TYPE_COUNT};
use slot::{BITMAP_BYTES, SLOTS};

/// A node's place in the table (stable while it is known).
pub type NodeId = usize;
/// A bus link; never reused, so a socket the loop still holds for a
/// dropped link cannot be mistaken for a new one.
pub type LinkId = u64;

/// Node flags (`CLUSTER_NODE_*`), as the bus carries them.
pub const MASTER: u16 = 1;
pub const SLAVE: u16 = 2;
pub const PFAIL: u16 = 4;
pub const FAIL: u16 = 8;
pub const MYSELF: u16 = 16;
pub const HANDSHAKE: u16 = 32;
pub const NOADDR: u16 = 64;
pub const MEET: u16 = 128;
pub const MIGRATE_TO: u16 = 256;
pub const NOFAILOVER: u16 = 512;

/// The bus port is the client port plus this, unless `cluster-port`.
pub const PORT_INCR: u16 = 10000;
/// Failure reports count for this many node timeouts.
const FAIL_REPORT_VALIDITY_MULT: i64 = 2;
/// A master with slots back from FAIL is cleared after this many.
const FAIL_UNDO_TIME_MULT: i64 = 2;
/// A master waits this long after start before its state may turn ok.
const WRITABLE_DELAY_MS: i64 = 2000;
const MAX_REJOIN_DELAY_MS: i64 = 5000;
const MIN_REJOIN_DELAY_MS: i64 = 500;
/// A forgotten node is not re-added from gossip for this long.
const BLACKLIST_TTL_MS: i64 = 60_000;

/// One node of the cluster.
pub struct Node {
    pub name: NodeName,
    pub flags: u16,
    pub config_epoch: u64,
    pub slots: Box<[u8; BITMAP_BYTES]>,
    pub numslots: usize,
    pub replicas: Vec<NodeId>,
    pub slaveof: Option<NodeId>,
    pub ctime: i64,
    /// Unix ms of the PING in flight (0: none) and the last PONG.
    pub ping_sent: i64,
    pub pong_received: i64,
    data_received: i64,
    fail_time: i64,
    /// When we last voted for a replica of it, and since when it has had
    /// no working replica.
    voted_time: i64,
    orphaned_time: i64,
    pub repl_offset: u64,
    pub ip: String,
    pub hostname: String,
    pub port: u16,
    pub pport: u16,
    pub cport: u16,
    /// The link we opened to it, and the one it opened to us.
    pub link: Option<LinkId>,
    pub inbound_link: Option<LinkId>,
    /// Masters that reported it PFAIL or FAIL, and when.
    fail_reports: Vec<(NodeId, i64)>,
    last_in_ping_gossip: u64,
}

impl Node {
    fn new(name: NodeName, flags: u16, now: i64) -> Node {
        Node {
            name,
            flags,
            config_epoch: 0,
            slots: Box::new([0; BITMAP_BYTES]),
            numslots: 0,
            replicas: Vec::new(),
            slaveof: None,
            ctime: now,
            ping_sent: 0,
            pong_received: 0,
            data_received: 0,
            fail_time: 0,
            voted_time: 0,
            orphaned_time: 0,
            repl_offset: 0,
            ip: String::new(),
            hostname: String::new(),
            port: 0,
            pport: 0,
            cport: 0,
            link: None,
            inbound_link: None,
            fail_reports: Vec::new(),
            last_in_ping_gossip: 0,
        }
    }

    pub fn is(&self, flag: u16) -> bool {
        self.flags & flag != 0
    }

    pub fn is_master(&self) -> bool {
        self.is(MASTER)
    }

    pub fn is_replica(&self) -> bool {
        self.is(SLAVE)
    }

    pub fn name_str(&self) -> &str {
        std::str::from_utf8(&self.name).unwrap_or("")
    }
}

/// One bus connection, as buffers.
pub struct Link {
    pub node: Option<NodeId>,
    /// Accepted from a peer (else opened by us to `node`).
    pub inbound: bool,
    pub ctime: i64,
    /// Bytes queued for the peer.
    pub send: Vec<u8>,
    /// Bytes of a message not yet whole.
    recv: Vec<u8>,
    /// The socket's two ends' addresses, once connected: the peer's
    /// tells where a MEET came from, ours where the peers reach us.
    pub peer_ip: String,
    pub local_ip: String,
}

/// What a message or command asks of the server around the cluster.
#[derive(Debug, PartialEq)]
pub enum Effect {
    /// A PUBLISH (or, `shard`, SPUBLISH) from another node, for this
    /// node's subscribers.
    Publish {
        channel: Vec<u8>,
        message: Vec<u8>,
        shard: bool,
    },
    /// Another node took this slot while we held keys in it.
    DropSlotKeys(u16),
    /// Replicate this address, or (None) stop replicating: a master now.
    SetPrimary(Option<(String, u16)>),
    /// A master in a manual failover pauses writes until then (unix ms),
    /// or ends that pause.
    PauseWrites(i64),
    Unpause,
    /// CLUSTER RESET of a replica: its data goes.
    FlushData,
}

/// What CLUSTER SETSLOT does to a slot.
pub enum SlotChange {
    Migrating(NodeId),
    Importing(NodeId),
    Stable,
    /// Bound to a node; this node holds that many keys in the slot.
    Node(NodeId, usize),
}

/// Work left for before the loop sleeps (`CLUSTER_TODO_*`).
#[derive(Default)]
struct Todo {
    save: bool,
    fsync: bool,
    update_state: bool,
    handle_failover: bool,
    handle_manual_failover: bool,
}

/// Cluster mode's state: `ServerState::cluster` when `cluster-enabled`.
pub struct Cluster {
    nodes: Slab<Node>,
    by_name: HashMap<NodeName, NodeId>,
    pub myself: NodeId,
    /// Who serves each slot.
    slots: Vec<Option<NodeId>>,
    migrating: BTreeMap<u16, NodeId>,
    importing: BTreeMap<u16, NodeId>,
    /// Slots still bound to an owner that stopped claiming them.
    owner_not_claiming: Box<[u8; BITMAP_BYTES]>,
    pub current_epoch: u64,
    pub last_vote_epoch: u64,
    pub state_ok: bool,
    /// Masters serving at least one slot.
    pub size: usize,
    pub stats_sent: [u64; TYPE_COUNT],
    pub stats_received: [u64; TYPE_COUNT],
    pub links_buffer_limit_exceeded: u64,
    stats_pfail_nodes: usize,
    todo: Todo,
    blacklist: HashMap<NodeName, i64>,
    links: BTreeMap<LinkId, Link>,
    next_link: LinkId,
    /// Links to open (the loop connects to their node's address) and
    /// links dropped (the loop closes their sockets).
    pub to_connect: Vec<LinkId>,
    pub to_close: Vec<LinkId>,
    pub effects: Vec<Effect>,
    iteration: u64,
    pings_sent: u64,
    first_state_update: i64,
    among_minority_time: i64,
    /// The ports this node listens on.
    listening: ListenPorts,
    /// `tls-cluster`: the bus speaks TLS, and the port nodes announce is
    /// their TLS port (their plain one, if any, beside it as `pport`).
    tls: bool,
    /// The replication offset the headers carry (the server keeps it
    /// current).
    pub repl_offset: u64,
    /// Where the configuration is saved (`cluster-config-file`).
    config_path: std::path::PathBuf,
    /// `cluster-announce-ip` (empty: peers see our address themselves).
    announced_ip: String,
    /// A replica's election and a manual failover.
    election: failover::Election,
    /// The replication around us (the server keeps it current).
    pub replica_view: ReplicaView,
}

/// The ports a node listens on: clients' in plain text and over TLS (0:
/// none), and the bus's.
#[derive(Debug, Clone, Copy, Default)]
pub struct ListenPorts {
    pub plain: u16,
    pub tls: u16,
    pub bus: u16,
}

/// A random node name: 40 hex digits.
fn random_name() -> NodeName {
    let mut rng = rand::thread_rng();
    let mut name = NO_NAME;
    for b in name.iter_mut() {
        *b = b"0123456789abcdef"[rng.gen_range(0..16)];
    }
    name
}

/// Whether `name` is a node name (Redis's `verifyClusterNodeId`: 40
/// characters; Redis checks only the length).
pub fn parse_name(name: &[u8]) -> Option<NodeName> {
    name.try_into().ok()
}

impl Cluster {
    /// The cluster as `nodes.conf` (in `dir`, named by the config) left
    /// it, or a new one of this node alone, saved at once as Redis does.
    pub fn start(
        cfg: &ClusterConfig,
        dir: &str,
        listening: ListenPorts,
        tls: bool,
        now: i64,
    ) -> Result<Cluster, String> {
        let mut cluster = Cluster {
            nodes: Slab::new(),
            by_name: HashMap::new(),
            myself: 0,
            slots: vec![None; SLOTS],
            migrating: BTreeMap::new(),
            importing: BTreeMap::new(),
            owner_not_claiming: Box::new([0; BITMAP_BYTES]),
            current_epoch: 0,
            last_vote_epoch: 0,
            state_ok: false,
            size: 1,
            stats_sent: [0; TYPE_COUNT],
            stats_received: [0; TYPE_COUNT],
            links_buffer_limit_exceeded: 0,
            stats_pfail_nodes: 0,
            todo: Todo::default(),
            blacklist: HashMap::new(),
            links: BTreeMap::new(),
            next_link: 1,
            to_connect: Vec::new(),
            to_close: Vec::new(),
            effects: Vec::new(),
            iteration: 0,
            pings_sent: 0,
            first_state_update: 0,
            among_minority_time: 0,
            listening,
            tls,
            repl_offset: 0,
            config_path: std::path::Path::new(dir).join(&cfg.config_file),
            announced_ip: String::new(),
            election: Default::default(),
            replica_view: ReplicaView::default(),
        };
        if !cluster.load_config(now)? {
            let myself = cluster.add_node(Node::new(random_name(), MYSELF | MASTER, now));
            cluster.myself = myself;
            info!(
                "No cluster configuration found, I'm {}",
                cluster.nodes[myself].name_str()
            );
            cluster
                .save_config(true)
                .map_err(|e| format!("Fatal: can't update cluster config file: {e}"))?;
        }
        cluster.refresh_myself(cfg, tls);
        Ok(cluster)
    }

    /// What this node announces of itself, from the settings (Redis's
    /// `clusterUpdateMyself*` and `deriveAnnouncedPorts`).
    pub fn refresh_myself(&mut self, cfg: &ClusterConfig, tls: bool) {
        self.tls = tls;
        let (port, pport, cport) = self.announced_ports(cfg);
        self.announced_ip = cfg.announce_ip.clone();
        let me = &mut self.nodes[self.myself];
        me.port = port;
        me.pport = pport;
        me.cport = cport;
        if !cfg.announce_ip.is_empty() {
            me.ip = cfg.announce_ip.clone();
        }
        me.hostname = cfg.announce_hostname.clone();
        let old = me.flags;
        if cfg.replica_no_failover {
            me.flags |= NOFAILOVER;
        } else {
            me.flags &= !NOFAILOVER;
        }
        if me.flags != old {
            self.todo.save = true;
            self.todo.update_state = true;
        }
    }

    /// The client port, the plain one beside it in a TLS cluster (else
    /// 0) and the bus port this node announces.
    fn announced_ports(&self, cfg: &ClusterConfig) -> (u16, u16, u16) {
        let l = &self.listening;
        let (mut port, mut pport) = match self.tls {
            true => (l.tls, l.plain),
            false => (l.plain, 0),
        };
        if self.tls && cfg.announce_tls_port != 0 {
            port = cfg.announce_tls_port;
            pport = cfg.announce_port;
        } else if cfg.announce_port != 0 {
            port = cfg.announce_port;
        }
        let cport = match cfg.announce_bus_port {
            0 => l.bus,
            announced => announced,
        };
        (port, pport, cport)
    }

    /// The port a client is sent to for `node`: in a TLS cluster a plain
    /// client gets the node's plain port where it has one (Redis's
    /// `use_pport`).
    pub fn client_port(&self, node: &Node, tls_client: bool) -> u16 {
        match self.tls && !tls_client && node.pport != 0 {
            true => node.pport,
            false => node.port,
        }
    }

    /// Whether the bus speaks TLS.
    pub fn tls(&self) -> bool {
        self.tls
    }

    // ---- the node table ----

    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id]
    }

    pub fn me(&self) -> &Node {
        &self.nodes[self.myself]
    }

    pub fn node_ids(&self) -> Vec<NodeId> {
        self.nodes.iter().map(|(id, _)| id).collect()
    }

    pub fn known_nodes(&self) -> usize {
        self.nodes.len()
    }

    pub fn lookup(&self, name: &[u8]) -> Option<NodeId> {
        self.by_name.get(&parse_name(name)?).copied()
    }

    fn add_node(&mut self, node: Node) -> NodeId {
        let name = node.name;
        let id = self.nodes.insert(node);
        self.by_name.insert(name, id);
        id
    }

    /// Forgets a node and every reference to it (Redis's `clusterDelNode`
    /// and `freeClusterNode`).
    fn del_node(&mut self, id: NodeId) {
        for slot in 0..SLOTS {
            if self.slots[slot] == Some(id) {
                self.slots[slot] = None;
            }
        }
        self.importing.retain(|_, n| *n != id);
        self.migrating.retain(|_, n| *n != id);
        let others: Vec<NodeId> = self.node_ids();
        for other in others {
            let node = &mut self.nodes[other];
            node.fail_reports.retain(|(by, _)| *by != id);
            node.replicas.retain(|r| *r != id);
            if node.slaveof == Some(id) {
                node.slaveof = None;
            }
        }
        let node = &self.nodes[id];
        let links: Vec<LinkId> = node.link.into_iter().chain(node.inbound_link).collect();
        for link in links {
            self.free_link(link);
        }
        let node = self.nodes.remove(id);
        if self.by_name.get(&node.name) == Some(&id) {
            self.by_name.remove(&node.name);
        }
    }

    fn rename_node(&mut self, id: NodeId, name: NodeName) {
        let old = self.nodes[id].name;
        self.by_name.remove(&old);
        self.nodes[id].name = name;
        self.by_name.insert(name, id);
    }

    fn add_replica(&mut self, master: NodeId, replica: NodeId) {
        if !self.nodes[master].replicas.contains(&replica) {
            self.nodes[master].replicas.push(replica);
            self.nodes[master].flags |= MIGRATE_TO;
        }
    }

    fn remove_replica(&mut self, master: NodeId, replica: NodeId) {
        let node = &mut self.nodes[master];
        node.replicas.retain(|r| *r != replica);
        if node.replicas.is_empty() {
            node.flags &= !MIGRATE_TO;
        }
    }

    /// A node we believed a replica acts as a master now.
    fn set_node_as_master(&mut self, id: NodeId) {
        if self.nodes[id].is_master() {
            return;
        }
        if let Some(master) = self.nodes[id].slaveof {
            self.remove_replica(master, id);
            if id != self.myself {
                self.nodes[id].flags |= MIGRATE_TO;
            }
        }
        let node = &mut self.nodes[id];
        node.flags = (node.flags & !SLAVE) | MASTER;
        node.slaveof = None;
        self.todo.save = true;
        self.todo.update_state = true;
    }

    // ---- slots ----

    pub fn slot_owner(&self, slot: usize) -> Option<NodeId> {
        self.slots[slot]
    }

    pub fn migrating_to(&self, slot: u16) -> Option<NodeId> {
        self.migrating.get(&slot).copied()
    }

    pub fn importing_from(&self, slot: u16) -> Option<NodeId> {
        self.importing.get(&slot).copied()
    }

    /// Binds a free slot to a node. False if it is taken.
    fn add_slot(&mut self, id: NodeId, slot: usize) -> bool {
        if self.slots[slot].is_some() {
            return false;
        }
        let node = &mut self.nodes[id];
        if !slot::bit(&node.slots, slot) {
            slot::set_bit(&mut node.slots, slot, true);
            node.numslots += 1;
        }
        self.slots[slot] = Some(id);
        true
    }

    /// Unbinds a slot. False if it was free.
    fn del_slot(&mut self, slot: usize) -> bool {
        let Some(id) = self.slots[slot].take() else {
            return false;
        };
        let node = &mut self.nodes[id];
        if slot::bit(&node.slots, slot) {
            slot::set_bit(&mut node.slots, slot, false);
            node.numslots -= 1;
        }
        slot::set_bit(&mut self.owner_not_claiming, slot, false);
        true
    }

    fn del_node_slots(&mut self, id: NodeId) -> usize {
        let mut deleted = 0;
        for slot in 0..SLOTS {
            if self.slots[slot] == Some(id) {
                self.del_slot(slot);
                deleted += 1;
            }
        }
        deleted
    }

    fn slot_unclaimed(&self, slot: usize) -> bool {
        self.slots[slot].is_none() || slot::bit(&self.owner_not_claiming, slot)
    }

    // ---- epochs ----

    fn max_epoch(&self) -> u64 {
        self.nodes
            .iter()
            .map(|(_, n)| n.config_epoch)
            .max()
            .unwrap_or(0)
            .max(self.current_epoch)
    }

    /// A new config epoch for this node without asking the others
    /// (Redis's `clusterBumpConfigEpochWithoutConsensus`); false if it
    /// already holds the greatest one.
    pub fn bump_epoch(&mut self) -> bool {
        let max = self.max_epoch();
        let me = self.myself;
        if self.nodes[me].config_epoch == 0 || self.nodes[me].config_epoch != max {
            self.current_epoch += 1;
            self.nodes[me].config_epoch = self.current_epoch;
            self.todo.save = true;
            self.todo.fsync = true;
            warn!("New configEpoch set to {}", self.current_epoch);
            true
        } else {
            false
        }
    }

    /// Two masters with one config epoch: the one with the smaller name
    /// takes a new epoch.
    fn handle_epoch_collision(&mut self, sender: NodeId) {
        let me = self.myself;
        let (s, m) = (&self.nodes[sender], &self.nodes[me]);
        if s.config_epoch != m.config_epoch || !s.is_master() || !m.is_master() {
            return;
        }
        if s.name <= m.name {
            return;
        }
        self.current_epoch += 1;
        self.nodes[me].config_epoch = self.current_epoch;
        self.todo.save = true;
        self.todo.fsync = true;
        debug!(
            "WARNING: configEpoch collision with node {}. configEpoch set to {}",
            self.nodes[sender].name_str(),
            self.current_epoch
        );
    }

    // ---- failure reports ----

    fn add_failure_report(&mut self, failing: NodeId, sender: NodeId, now: i64) -> bool {
        let reports = &mut self.nodes[failing].fail_reports;
        if let Some(r) = reports.iter_mut().find(|(by, _)| *by == sender) {
            r.1 = now;
            return false;
        }
        reports.push((sender, now));
        true
    }

    fn del_failure_report(&mut self, node: NodeId, sender: NodeId) -> bool {
        let reports = &mut self.nodes[node].fail_reports;
        let before = reports.len();
        reports.retain(|(by, _)| *by != sender);
        before != reports.len()
    }

    /// Reports still valid (younger than twice the node timeout).
    pub fn failure_reports(&mut self, node: NodeId, cfg: &ClusterConfig, now: i64) -> usize {
        let max_age = cfg.node_timeout * FAIL_REPORT_VALIDITY_MULT;
        let reports = &mut self.nodes[node].fail_reports;
        reports.retain(|(_, at)| now - at <= max_age);
        reports.len()
    }

    /// PFAIL becomes FAIL once a majority of masters agree, and every
    /// node hears of it.
    fn mark_failing_if_needed(&mut self, id: NodeId, cfg: &ClusterConfig, now: i64) {
        let quorum = self.size / 2 + 1;
        let node = &self.nodes[id];
        if !node.is(PFAIL) || node.is(FAIL) {
            return;
        }
        let mut failures = self.failure_reports(id, cfg, now);
        if self.me().is_master() {
            failures += 1;
        }
        if failures < quorum {
            return;
        }
        info!(
            "Marking node {} as failing (quorum reached).",
            self.nodes[id].name_str()
        );
        let node = &mut self.nodes[id];
        node.flags = (node.flags & !PFAIL) | FAIL;
        node.fail_time = now;
        let name = node.name;
        let msg = self.message(message::FAIL, Body::Fail(name));
        self.broadcast(&msg);
        self.todo.update_state = true;
        self.todo.save = true;
    }

    fn clear_failure_if_needed(&mut self, id: NodeId, cfg: &ClusterConfig, now: i64) {
        let node = &mut self.nodes[id];
        if node.is_replica() || node.numslots == 0 {
            info!(
                "Clear FAIL state for node {}: {} is reachable again.",
                node.name_str(),
                if node.is_replica() {
                    "replica"
                } else {
                    "master without slots"
                }
            );
            node.flags &= !FAIL;
            self.todo.update_state = true;
            self.todo.save = true;
            return;
        }
        if now - node.fail_time > cfg.node_timeout * FAIL_UNDO_TIME_MULT {
            info!(
                "Clear FAIL state for node {}: is reachable again and nobody is serving its slots after some time.",
                node.name_str()
            );
            node.flags &= !FAIL;
            self.todo.update_state = true;
            self.todo.save = true;
        }
    }

    // ---- the blacklist (CLUSTER FORGET) ----

    fn blacklisted(&mut self, name: &NodeName, now: i64) -> bool {
        self.blacklist.retain(|_, until| *until >= now);
        self.blacklist.contains_key(name)
    }

    // ---- links ----

    pub fn link(&self, id: LinkId) -> Option<&Link> {
        self.links.get(&id)
    }

    /// Bytes the links' buffers hold (INFO `mem_cluster_links`).
    pub fn links_memory(&self) -> usize {
        self.links
            .values()
            .map(|l| l.send.capacity() + l.recv.capacity() + std::mem::size_of::<Link>())
            .sum()
    }

    /// Takes what is queued for a link (the loop writes it and gives the
    /// rest back with `unsent`).
    pub fn take_output(&mut self, id: LinkId) -> Vec<u8> {
        self.links
            .get_mut(&id)
            .map(|l| std::mem::take(&mut l.send))
            .unwrap_or_default()
    }

    pub fn unsent(&mut self, id: LinkId, mut rest: Vec<u8>) {
        if let Some(link) = self.links.get_mut(&id) {
            rest.extend_from_slice(&link.send);
            link.send = rest;
        }
    }

    /// Where an outbound link connects: its node's address and bus port.
    pub fn connect_target(&self, id: LinkId) -> Option<(String, u16)> {
        let node = &self.nodes[self.links.get(&id)?.node?];
        Some((node.ip.clone(), node.cport))
    }

    fn new_link(&mut self, node: Option<NodeId>, now: i64) -> LinkId {
        let id = self.next_link;
        self.next_link += 1;
        self.links.insert(
            id,
            Link {
                node,
                inbound: node.is_none(),
                ctime: now,
                send: Vec::new(),
                recv: Vec::new(),
                peer_ip: String::new(),
                local_ip: String::new(),
            },
        );
        if let Some(node) = node {
            self.nodes[node].link = Some(id);
            self.to_connect.push(id);
        }
        id
    }

    /// A peer connected to our bus port.
    pub fn accepted(&mut self, now: i64) -> LinkId {
        self.new_link(None, now)
    }

    /// The addresses of a link's socket (its peer's, and ours).
    pub fn set_link_addresses(&mut self, id: LinkId, peer_ip: String, local_ip: String) {
        if let Some(link) = self.links.get_mut(&id) {
            link.peer_ip = peer_ip;
            link.local_ip = local_ip;
        }
    }

    /// Drops a link (Redis's `freeClusterLink`); the loop closes its socket.
    pub fn free_link(&mut self, id: LinkId) {
        let Some(link) = self.links.remove(&id) else {
            return;
        };
        if let Some(node) = link.node.and_then(|n| self.nodes.get_mut(n)) {
            if node.link == Some(id) {
                node.link = None;
            }
            if node.inbound_link == Some(id) {
                node.inbound_link = None;
            }
        }
        self.to_close.push(id);
    }

    /// An outbound link could not even start connecting: the node counts
    /// as pinged (so that failure detection runs), the cron tries again.
    pub fn connect_failed(&mut self, id: LinkId, now: i64) {
        if let Some(node) = self.links.get(&id).and_then(|l| l.node) {
            if self.nodes[node].ping_sent == 0 {
                self.nodes[node].ping_sent = now;
            }
        }
        self.free_link(id);
    }

    /// An outbound link is connected: the first PING (a MEET while we
    /// introduce ourselves) goes out at once.
    pub fn connected(&mut self, id: LinkId, now: i64) {
        let Some(node) = self.links.get(&id).and_then(|l| l.node) else {
            return;
        };
        let old_ping_sent = self.nodes[node].ping_sent;
        let kind = if self.nodes[node].is(MEET) {
            message::MEET
        } else {
            message::PING
        };
        self.send_ping(id, kind, now);
        if old_ping_sent != 0 {
            self.nodes[node].ping_sent = old_ping_sent;
        }
        self.nodes[node].flags &= !MEET;
    }

    fn set_inbound_link(&mut self, node: NodeId, link: LinkId) {
        if let Some(old) = self.nodes[node].inbound_link {
            if old != link {
                self.free_link(old);
            }
        }
        self.nodes[node].inbound_link = Some(link);
        if let Some(l) = self.links.get_mut(&link) {
            l.node = Some(node);
        }
    }

    // ---- sending ----

    fn header(&self, kind: u16) -> Header {
        let me = self.me();
        let master = match me.slaveof {
            Some(m) if me.is_replica() => &self.nodes[m],
            _ => me,
        };
        Header {
            kind,
            port: me.port,
            pport: me.pport,
            cport: me.cport,
            current_epoch: self.current_epoch,
            config_epoch: master.config_epoch,
            offset: self.repl_offset,
            sender: me.name,
            slots: master.slots.clone(),
            slaveof: me.slaveof.map_or(NO_NAME, |m| self.nodes[m].name),
            myip: self.announced_ip.clone(),
            flags: me.flags,
            state: u8::from(!self.state_ok),
            mflags0: if me.is_master() && self.election.mf_end != 0 {
                message::FLAG0_PAUSED
            } else {
                0
            },
        }
    }

    fn message(&self, kind: u16, body: Body) -> Vec<u8> {
        message::encode(&Message {
            header: self.header(kind),
            body,
        })
    }

    fn send(&mut self, link: LinkId, bytes: &[u8]) {
        let Some(l) = self.links.get_mut(&link) else {
            return;
        };
        l.send.extend_from_slice(bytes);
        let kind = usize::from(u16::from_be_bytes([bytes[12], bytes[13]]));
        if kind < TYPE_COUNT {
            self.stats_sent[kind] += 1;
        }
    }

    /// To every node past its handshake we have a link to.
    fn broadcast(&mut self, bytes: &[u8]) {
        let targets: Vec<LinkId> = self
            .nodes
            .iter()
            .filter(|(_, n)| !n.is(MYSELF | HANDSHAKE))
            .filter_map(|(_, n)| n.link)
            .collect();
        for link in targets {
            self.send(link, bytes);
        }
    }

    fn gossip_entry(node: &Node) -> Gossip {
        Gossip {
            name: node.name,
            ping_sent: (node.ping_sent / 1000) as u32,
            pong_received: (node.pong_received / 1000) as u32,
            ip: node.ip.clone(),
            port: node.port,
            cport: node.cport,
            flags: node.flags,
            pport: node.pport,
        }
    }

    /// A PING, PONG or MEET with gossip about a tenth of the nodes (at
    /// least 3) picked at random, and every node in PFAIL.
    fn send_ping(&mut self, link: LinkId, kind: u16, now: i64) {
        self.pings_sent += 1;
        let stamp = self.pings_sent;
        let Some(l) = self.links.get(&link) else {
            return;
        };
        let (inbound, target) = (l.inbound, l.node);
        let mut fresh = self.nodes.len().saturating_sub(2);
        let wanted = (self.nodes.len() / 10).max(3).min(fresh);
        if !inbound && kind == message::PING {
            if let Some(t) = target {
                self.nodes[t].ping_sent = now;
            }
        }
        let ids = self.node_ids();
        let mut gossip = Vec::new();
        let mut rng = rand::thread_rng();
        let mut tries = wanted * 3;
        while fresh > 0 && gossip.len() < wanted && tries > 0 {
            tries -= 1;
            let id = ids[rng.gen_range(0..ids.len())];
            let node = &self.nodes[id];
            if id == self.myself || node.is(PFAIL) {
                continue;
            }
            if node.is(HANDSHAKE | NOADDR) || (node.link.is_none() && node.numslots == 0) {
                fresh -= 1;
                continue;
            }
            if node.last_in_ping_gossip == stamp {
                continue;
            }
            gossip.push(Self::gossip_entry(node));
            self.nodes[id].last_in_ping_gossip = stamp;
            fresh -= 1;
        }
        gossip.extend(
            self.nodes
                .iter()
                .filter(|(_, n)| n.is(PFAIL) && !n.is(HANDSHAKE | NOADDR))
                .take(self.stats_pfail_nodes)
                .map(|(_, n)| Self::gossip_entry(n)),
        );
        let hostname = self.me().hostname.as_bytes().to_vec();
        let bytes = self.message(kind, Body::Ping { gossip, hostname });
        self.send(link, &bytes);
    }

    /// A PONG to every node we are linked to: news (new slots, a new
    /// epoch) travels at once.
    pub fn broadcast_pong(&mut self, now: i64) {
        let targets: Vec<LinkId> = self
            .nodes
            .iter()
            .filter(|(id, n)| *id != self.myself && !n.is(HANDSHAKE))
            .filter_map(|(_, n)| n.link)
            .collect();
        for link in targets {
            self.send_ping(link, message::PONG, now);
        }
    }

    /// Tells a node with a stale view who serves its slots now.
    fn send_update(&mut self, link: Option<LinkId>, about: NodeId) {
        let Some(link) = link else { return };
        let node = &self.nodes[about];
        let mut slots = node.slots.clone();
        for (b, not) in slots.iter_mut().zip(self.owner_not_claiming.iter()) {
            *b &= !not;
        }
        let body = Body::Update {
            config_epoch: node.config_epoch,
            name: node.name,
            slots,
        };
        let bytes = self.message(message::UPDATE, body);
        self.send(link, &bytes);
    }

    /// A PUBLISH for every other node, an SPUBLISH for the other nodes
    /// of this shard (Redis's `clusterPropagatePublish`).
    pub fn propagate_publish(&mut self, channel: &[u8], payload: &[u8], shard: bool) {
        let kind = if shard {
            message::PUBLISHSHARD
        } else {
            message::PUBLISH
        };
        let body = Body::Publish {
            channel: channel.to_vec(),
            message: payload.to_vec(),
        };
        let bytes = self.message(kind, body);
        if !shard {
            self.broadcast(&bytes);
            return;
        }
        let me = self.me();
        let master = match me.slaveof {
            Some(m) if me.is_replica() => m,
            _ => self.myself,
        };
        let shard_links: Vec<LinkId> = std::iter::once(master)
            .chain(self.nodes[master].replicas.iter().copied())
            .filter(|id| *id != self.myself && !self.nodes[*id].is(HANDSHAKE))
            .filter_map(|id| self.nodes[id].link)
            .collect();
        for link in shard_links {
            self.send(link, &bytes);
        }
    }
}

mod process;
