//! What the cluster does with a message (Redis's `clusterProcessPacket`),
//! on its cron (`clusterCron`) and before the loop sleeps
//! (`clusterBeforeSleep`), and the changes CLUSTER's subcommands make.

use std::net::IpAddr;

use rand::Rng;
use tracing::{debug, info, warn};

use super::message::{self, Body, Header, Malformed, NodeName, NO_NAME};
use super::slot::{self, BITMAP_BYTES, SLOTS};
use super::*;

/// Why CLUSTER MEET refused an address.
pub struct BadAddress;

impl Cluster {
    /// Bytes read from a link: each whole message is processed. A frame
    /// that is not a bus message, or longer than `max_frame`, drops the
    /// link.
    pub fn receive(&mut self, link: LinkId, bytes: &[u8], cfg: &ClusterConfig, now: i64) {
        let Some(l) = self.links.get_mut(&link) else {
            return;
        };
        l.recv.extend_from_slice(bytes);
        loop {
            let Some(l) = self.links.get_mut(&link) else {
                return;
            };
            if l.recv.len() < 8 {
                return;
            }
            let len = match message::frame_len(&l.recv) {
                Some(len) if len <= cfg.max_bus_frame => len,
                _ => {
                    warn!("Bad message length or signature received from Cluster bus.");
                    self.free_link(link);
                    return;
                }
            };
            if l.recv.len() < len {
                return;
            }
            let rest = l.recv.split_off(len);
            let frame = std::mem::replace(&mut l.recv, rest);
            if !self.process(link, &frame, cfg, now) {
                return;
            }
        }
    }

    /// One message; false if it dropped the link.
    fn process(&mut self, link: LinkId, frame: &[u8], cfg: &ClusterConfig, now: i64) -> bool {
        let kind = u16::from_be_bytes([frame[12], frame[13]]);
        if usize::from(kind) < message::TYPE_COUNT {
            self.stats_received[usize::from(kind)] += 1;
        }
        let msg = match message::decode(frame) {
            Ok(msg) => msg,
            Err(Malformed::Version) => return true,
            Err(e) => {
                warn!(
                    "Received invalid {} packet: {e:?}",
                    message::type_name(kind)
                );
                return true;
            }
        };
        let h = &msg.header;
        let sender = self.sender_of(link, &h.sender);
        if let Some(s) = sender {
            self.nodes[s].data_received = now;
        }
        let mut sender_config_epoch = 0;
        let mut sender_current_epoch = 0;
        if let Some(s) = sender.filter(|s| !self.nodes[*s].is(HANDSHAKE)) {
            sender_current_epoch = h.current_epoch;
            sender_config_epoch = h.config_epoch;
            if sender_current_epoch > self.current_epoch {
                self.current_epoch = sender_current_epoch;
            }
            if sender_config_epoch > self.nodes[s].config_epoch {
                self.nodes[s].config_epoch = sender_config_epoch;
                self.todo.save = true;
                self.todo.fsync = true;
            }
            self.nodes[s].repl_offset = h.offset;
            self.master_offset_heard(s, h);
        }
        match (&msg.body, kind) {
            (Body::Ping { gossip, hostname }, message::PING | message::PONG | message::MEET) => {
                self.process_ping(
                    link,
                    h,
                    sender,
                    sender_config_epoch,
                    gossip,
                    hostname,
                    cfg,
                    now,
                )
            }
            (Body::Fail(about), _) => {
                let Some(_) = sender else {
                    info!(
                        "Ignoring FAIL message from unknown node {} about {}",
                        String::from_utf8_lossy(&h.sender),
                        String::from_utf8_lossy(about)
                    );
                    return true;
                };
                if let Some(failing) = self.by_name.get(about).copied() {
                    let node = &mut self.nodes[failing];
                    if !node.is(FAIL | MYSELF) {
                        info!(
                            "FAIL message received from {} about {}",
                            String::from_utf8_lossy(&h.sender),
                            node.name_str()
                        );
                        node.flags = (node.flags | FAIL) & !PFAIL;
                        node.fail_time = now;
                        self.todo.save = true;
                        self.todo.update_state = true;
                    }
                }
                true
            }
            (Body::Publish { channel, message }, _) => {
                if sender.is_some() {
                    self.effects.push(Effect::Publish {
                        channel: channel.clone(),
                        message: message.clone(),
                        shard: kind == message::PUBLISHSHARD,
                    });
                }
                true
            }
            (
                Body::Update {
                    config_epoch,
                    name,
                    slots,
                },
                _,
            ) => {
                if sender.is_none() {
                    return true;
                }
                let Some(n) = self.by_name.get(name).copied() else {
                    return true;
                };
                if self.nodes[n].config_epoch >= *config_epoch {
                    return true;
                }
                if self.nodes[n].is_replica() {
                    self.set_node_as_master(n);
                }
                self.nodes[n].config_epoch = *config_epoch;
                self.todo.save = true;
                self.todo.fsync = true;
                self.update_slots_config_with(n, *config_epoch, slots, cfg);
                true
            }
            (Body::Empty, message::FAILOVER_AUTH_REQUEST) => {
                if let Some(s) = sender {
                    self.vote_if_needed(s, h, cfg, now);
                }
                true
            }
            (Body::Empty, message::FAILOVER_AUTH_ACK) => {
                if let Some(s) = sender {
                    self.vote_received(s, sender_current_epoch);
                }
                true
            }
            (Body::Empty, message::MFSTART) => {
                if let Some(s) = sender {
                    self.manual_failover_requested(s, link, now);
                }
                true
            }
            _ => true,
        }
    }

    /// The node a message comes from: the link's, once known, else the
    /// one its header names (an inbound link learns its node here).
    fn sender_of(&mut self, link: LinkId, name: &NodeName) -> Option<NodeId> {
        let linked = self.links.get(&link).and_then(|l| l.node);
        if let Some(n) = linked.filter(|n| !self.nodes[*n].is(HANDSHAKE)) {
            return Some(n);
        }
        let sender = self.by_name.get(name).copied();
        if let Some(s) = sender {
            if linked.is_none() {
                self.set_inbound_link(s, link);
            }
        }
        sender
    }

    #[allow(clippy::too_many_arguments)]
    fn process_ping(
        &mut self,
        link: LinkId,
        h: &Header,
        sender: Option<NodeId>,
        sender_config_epoch: u64,
        gossip: &[message::Gossip],
        hostname: &[u8],
        cfg: &ClusterConfig,
        now: i64,
    ) -> bool {
        let kind = h.kind;
        let Some(l) = self.links.get(&link) else {
            return false;
        };
        let (inbound, link_node) = (l.inbound, l.node);
        if kind == message::PING || kind == message::MEET {
            // Our own address, as the peer reached it (unless announced).
            if (kind == message::MEET || self.me().ip.is_empty()) && cfg.announce_ip.is_empty() {
                if let Some(ip) = self
                    .links
                    .get(&link)
                    .map(|l| l.local_ip.clone())
                    .filter(|ip| !ip.is_empty())
                {
                    if ip != self.me().ip {
                        warn!("IP address for this node updated to {ip}");
                        let me = self.myself;
                        self.nodes[me].ip = ip;
                        self.todo.save = true;
                    }
                }
            }
            if sender.is_none() && kind == message::MEET {
                let mut node = Node::new(super::random_name(), HANDSHAKE, now);
                node.ip = self.peer_ip(link, &h.myip);
                node.port = h.port;
                node.pport = h.pport;
                node.cport = h.cport;
                self.add_node(node);
                self.todo.save = true;
                self.process_gossip(gossip, None, cfg, now);
            }
            self.send_ping(link, message::PONG, now);
        }
        if !inbound {
            let Some(node) = link_node else {
                return true;
            };
            if self.nodes[node].is(HANDSHAKE) {
                if let Some(s) = sender {
                    // We know it already: keep that one, drop the
                    // handshake (and its link).
                    if self.update_address(s, link, h) {
                        self.todo.save = true;
                        self.todo.update_state = true;
                    }
                    self.del_node(node);
                    return false;
                }
                self.rename_node(node, h.sender);
                debug!(
                    "Handshake with node {} completed.",
                    self.nodes[node].name_str()
                );
                let n = &mut self.nodes[node];
                n.flags &= !HANDSHAKE;
                n.flags |= h.flags & (MASTER | SLAVE);
                self.todo.save = true;
            } else if self.nodes[node].name != h.sender {
                debug!("PONG contains mismatching sender ID");
                let n = &mut self.nodes[node];
                n.flags |= NOADDR;
                n.ip.clear();
                n.port = 0;
                n.pport = 0;
                n.cport = 0;
                self.free_link(link);
                self.todo.save = true;
                return false;
            }
        }
        let sender = sender.or_else(|| {
            // A completed handshake: the link's node is the sender now.
            link_node.filter(|n| self.nodes.contains(*n) && self.nodes[*n].name == h.sender)
        });
        if let Some(s) = sender {
            let n = &mut self.nodes[s];
            n.flags = (n.flags & !NOFAILOVER) | (h.flags & NOFAILOVER);
            if kind == message::PING
                && !self.nodes[s].is(HANDSHAKE)
                && self.update_address(s, link, h)
            {
                self.todo.save = true;
                self.todo.update_state = true;
            }
        }
        if !inbound && kind == message::PONG {
            if let Some(node) = link_node.filter(|n| self.nodes.contains(*n)) {
                let n = &mut self.nodes[node];
                n.pong_received = now;
                n.ping_sent = 0;
                if n.is(PFAIL) {
                    n.flags &= !PFAIL;
                    self.todo.save = true;
                    self.todo.update_state = true;
                } else if n.is(FAIL) {
                    self.clear_failure_if_needed(node, cfg, now);
                }
            }
        }
        let Some(sender) = sender else {
            return true;
        };
        // Role changes.
        if h.slaveof == NO_NAME {
            self.set_node_as_master(sender);
        } else {
            let master = self.by_name.get(&h.slaveof).copied();
            if self.nodes[sender].is_master() {
                self.del_node_slots(sender);
                let n = &mut self.nodes[sender];
                n.flags = (n.flags & !(MASTER | MIGRATE_TO)) | SLAVE;
                self.todo.save = true;
                self.todo.update_state = true;
            }
            if let Some(m) = master.filter(|m| self.nodes[sender].slaveof != Some(*m)) {
                if let Some(old) = self.nodes[sender].slaveof {
                    self.remove_replica(old, sender);
                }
                self.add_replica(m, sender);
                self.nodes[sender].slaveof = Some(m);
                self.todo.save = true;
            }
        }
        // Slots.
        let sender_master = if self.nodes[sender].is_master() {
            Some(sender)
        } else {
            self.nodes[sender].slaveof
        };
        let dirty_slots = sender_master.is_some_and(|m| self.nodes[m].slots[..] != h.slots[..]);
        if dirty_slots && self.nodes[sender].is_master() {
            self.update_slots_config_with(sender, sender_config_epoch, &h.slots, cfg);
        }
        if dirty_slots {
            for j in 0..SLOTS {
                if !slot::bit(&h.slots, j) {
                    continue;
                }
                let Some(owner) = self.slots[j] else { continue };
                if owner == sender || self.slot_unclaimed(j) {
                    continue;
                }
                if self.nodes[owner].config_epoch > sender_config_epoch {
                    debug!(
                        "Node {} has old slots configuration, sending an UPDATE message about {}",
                        self.nodes[sender].name_str(),
                        self.nodes[owner].name_str()
                    );
                    let link = self.nodes[sender].link;
                    self.send_update(link, owner);
                    break;
                }
            }
        }
        if self.me().is_master()
            && self.nodes[sender].is_master()
            && sender_config_epoch == self.me().config_epoch
        {
            self.handle_epoch_collision(sender);
        }
        self.process_gossip(gossip, Some(sender), cfg, now);
        let hostname = String::from_utf8_lossy(hostname).into_owned();
        self.nodes[sender].hostname = hostname;
        true
    }

    /// The address a peer is at: the one it announces, else its socket's.
    fn peer_ip(&self, link: LinkId, announced: &str) -> String {
        if !announced.is_empty() {
            return announced.to_string();
        }
        self.links
            .get(&link)
            .map(|l| l.peer_ip.clone())
            .unwrap_or_default()
    }

    /// A node's address from a message on another link than our own to
    /// it: if it moved, its old link is dropped (the cron reconnects).
    fn update_address(&mut self, node: NodeId, link: LinkId, h: &Header) -> bool {
        if self.nodes[node].link == Some(link) {
            return false;
        }
        let ip = self.peer_ip(link, &h.myip);
        if ip.is_empty() {
            return false;
        }
        let n = &self.nodes[node];
        if n.port == h.port && n.cport == h.cport && n.pport == h.pport && n.ip == ip {
            return false;
        }
        let n = &mut self.nodes[node];
        n.ip = ip;
        n.port = h.port;
        n.pport = h.pport;
        n.cport = h.cport;
        n.flags &= !NOADDR;
        warn!(
            "Address updated for node {}, now {}:{}",
            n.name_str(),
            n.ip,
            n.port
        );
        if let Some(old) = n.link {
            self.free_link(old);
        }
        true
    }

    fn process_gossip(
        &mut self,
        gossip: &[message::Gossip],
        sender: Option<NodeId>,
        cfg: &ClusterConfig,
        now: i64,
    ) {
        for g in gossip {
            let flags = g.flags;
            if let Some(node) = self.by_name.get(&g.name).copied() {
                if let Some(s) =
                    sender.filter(|s| self.nodes[*s].is_master() && node != self.myself)
                {
                    if flags & (FAIL | PFAIL) != 0 {
                        if self.add_failure_report(node, s, now) {
                            debug!(
                                "Node {} reported node {} as not reachable.",
                                self.nodes[s].name_str(),
                                self.nodes[node].name_str()
                            );
                        }
                        self.mark_failing_if_needed(node, cfg, now);
                    } else if self.del_failure_report(node, s) {
                        debug!(
                            "Node {} reported node {} is back online.",
                            self.nodes[s].name_str(),
                            self.nodes[node].name_str()
                        );
                    }
                }
                if flags & (FAIL | PFAIL) == 0
                    && self.nodes[node].ping_sent == 0
                    && self.failure_reports(node, cfg, now) == 0
                {
                    let pong = i64::from(g.pong_received) * 1000;
                    let n = &mut self.nodes[node];
                    if pong <= now + 500 && pong > n.pong_received {
                        n.pong_received = pong;
                    }
                }
                let n = &self.nodes[node];
                if n.is(FAIL | PFAIL)
                    && flags & NOADDR == 0
                    && flags & (FAIL | PFAIL) == 0
                    && (!n.ip.eq_ignore_ascii_case(&g.ip) || n.port != g.port || n.cport != g.cport)
                {
                    if let Some(l) = n.link {
                        self.free_link(l);
                    }
                    let n = &mut self.nodes[node];
                    n.ip = g.ip.clone();
                    n.port = g.port;
                    n.pport = g.pport;
                    n.cport = g.cport;
                    n.flags &= !NOADDR;
                }
            } else if sender.is_some() && flags & NOADDR == 0 && !self.blacklisted(&g.name, now) {
                let mut node = Node::new(g.name, flags, now);
                node.ip = g.ip.clone();
                node.port = g.port;
                node.pport = g.pport;
                node.cport = g.cport;
                self.add_node(node);
            }
        }
    }

    /// A master's slots under its config epoch, from a PING or an
    /// UPDATE: slots it claims with a newer epoch move to it (Redis's
    /// `clusterUpdateSlotsConfigWith`).
    fn update_slots_config_with(
        &mut self,
        sender: NodeId,
        sender_epoch: u64,
        slots: &[u8; BITMAP_BYTES],
        cfg: &ClusterConfig,
    ) {
        if sender == self.myself {
            warn!("Discarding UPDATE message about myself.");
            return;
        }
        let me = self.myself;
        let cur_master = if self.nodes[me].is_master() {
            Some(me)
        } else {
            self.nodes[me].slaveof
        };
        let mut new_master = None;
        let mut dirty = Vec::new();
        let (mut sender_slots, mut migrated_our_slots) = (0, 0);
        for j in 0..SLOTS {
            if slot::bit(slots, j) {
                sender_slots += 1;
                if self.slots[j] == Some(sender) {
                    slot::set_bit(&mut self.owner_not_claiming, j, false);
                    continue;
                }
                if self.importing.contains_key(&(j as u16)) {
                    continue;
                }
                let newer =
                    self.slots[j].is_some_and(|o| self.nodes[o].config_epoch < sender_epoch);
                if self.slot_unclaimed(j) || newer {
                    if self.slots[j] == Some(me) {
                        dirty.push(j as u16);
                    }
                    if self.slots[j].is_some() && self.slots[j] == cur_master {
                        new_master = Some(sender);
                        migrated_our_slots += 1;
                    }
                    self.del_slot(j);
                    self.add_slot(sender, j);
                    slot::set_bit(&mut self.owner_not_claiming, j, false);
                    self.todo.save = true;
                    self.todo.update_state = true;
                    self.todo.fsync = true;
                }
            } else if self.slots[j] == Some(sender) {
                slot::set_bit(&mut self.owner_not_claiming, j, true);
            }
        }
        let cur_empty = cur_master.is_some_and(|m| self.nodes[m].numslots == 0);
        if new_master.is_some()
            && cur_empty
            && (cfg.allow_replica_migration || sender_slots == migrated_our_slots)
        {
            warn!(
                "Configuration change detected. Reconfiguring myself as a replica of {}",
                self.nodes[sender].name_str()
            );
            self.set_master(sender);
            return;
        }
        let grandmaster = self.nodes[me]
            .slaveof
            .and_then(|m| self.nodes[m].slaveof)
            .filter(|g| *g != me);
        if let Some(g) = grandmaster {
            warn!(
                "I'm a sub-replica! Reconfiguring myself as a replica of grandmaster {}",
                self.nodes[g].name_str()
            );
            self.set_master(g);
            return;
        }
        for slot in dirty {
            self.effects.push(Effect::DropSlotKeys(slot));
        }
    }

    // ---- the cron and before sleep ----

    /// Ten times a second (Redis's `clusterCron`): links to open, a PING
    /// to the node heard from least recently, timeouts turned to PFAIL.
    pub fn cron(&mut self, cfg: &ClusterConfig, now: i64) {
        self.iteration += 1;
        let handshake_timeout = cfg.node_timeout.max(1000);
        // A link whose peer does not read is cut (`cluster-link-sendbuf-limit`).
        if cfg.link_sendbuf_limit > 0 {
            let over: Vec<LinkId> = self
                .links
                .iter()
                .filter(|(_, l)| l.send.len() as u64 > cfg.link_sendbuf_limit)
                .map(|(id, _)| *id)
                .collect();
            for link in over {
                self.links_buffer_limit_exceeded += 1;
                warn!("Freeing cluster link: its send buffer passed cluster-link-sendbuf-limit");
                self.free_link(link);
            }
        }
        self.stats_pfail_nodes = 0;
        for id in self.node_ids() {
            let Some(node) = self.nodes.get(id) else {
                continue;
            };
            if node.is(MYSELF | NOADDR) {
                continue;
            }
            if node.is(PFAIL) {
                self.stats_pfail_nodes += 1;
            }
            if node.is(HANDSHAKE) && now - node.ctime > handshake_timeout {
                self.del_node(id);
                continue;
            }
            if node.link.is_none() {
                self.new_link(Some(id), now);
            }
        }
        if self.iteration.is_multiple_of(10) {
            let ids = self.node_ids();
            let mut rng = rand::thread_rng();
            let mut oldest: Option<(NodeId, i64)> = None;
            for _ in 0..5 {
                let id = ids[rng.gen_range(0..ids.len())];
                let n = &self.nodes[id];
                if n.link.is_none() || n.ping_sent != 0 || n.is(MYSELF | HANDSHAKE) {
                    continue;
                }
                if oldest.is_none_or(|(_, pong)| pong > n.pong_received) {
                    oldest = Some((id, n.pong_received));
                }
            }
            if let Some((id, _)) = oldest {
                if let Some(link) = self.nodes[id].link {
                    self.send_ping(link, message::PING, now);
                }
            }
        }
        let mut update_state = false;
        let half = cfg.node_timeout / 2;
        for id in self.node_ids() {
            let n = &self.nodes[id];
            if n.is(MYSELF | NOADDR | HANDSHAKE) {
                continue;
            }
            let ping_delay = now - n.ping_sent;
            let data_delay = now - n.data_received;
            if let Some(link) = n.link {
                let link_age = self.links.get(&link).map_or(0, |l| now - l.ctime);
                if link_age > cfg.node_timeout
                    && n.ping_sent != 0
                    && ping_delay > half
                    && data_delay > half
                {
                    self.free_link(link);
                }
            }
            let n = &self.nodes[id];
            if let Some(link) = n.link {
                if n.ping_sent == 0 && now - n.pong_received > half {
                    self.send_ping(link, message::PING, now);
                    continue;
                }
                if self.pinging_mf_replica(id) {
                    self.send_ping(link, message::PING, now);
                    continue;
                }
            }
            let n = &mut self.nodes[id];
            if n.ping_sent == 0 {
                continue;
            }
            if ping_delay.min(data_delay) > cfg.node_timeout && !n.is(PFAIL | FAIL) {
                debug!("*** NODE {} possibly failing", n.name_str());
                n.flags |= PFAIL;
                update_state = true;
            }
        }
        // A replica (from nodes.conf, say) not yet replicating its master.
        let me = self.me();
        if let Some(m) = me
            .slaveof
            .filter(|_| me.is_replica() && !self.replica_view.replicating)
        {
            let m = &self.nodes[m];
            if !m.is(NOADDR) && !m.ip.is_empty() {
                self.effects
                    .push(Effect::SetPrimary(Some((m.ip.clone(), m.port))));
                self.replica_view.replicating = true;
            }
        }
        self.manual_failover_timed_out(now);
        if self.me().is_replica() {
            let (orphaned, max_replicas, mine) = self.replica_census();
            self.handle_manual_failover();
            self.handle_replica_failover(cfg, now);
            if orphaned > 0
                && max_replicas >= 2
                && mine == max_replicas
                && cfg.allow_replica_migration
            {
                self.handle_replica_migration(max_replicas, cfg, now);
            }
        }
        if update_state || !self.state_ok {
            self.update_state(cfg, now);
        }
    }

    /// What messages and commands left to do: the state, the file.
    pub fn before_sleep(&mut self, cfg: &ClusterConfig, now: i64) -> Result<(), String> {
        if self.todo.handle_manual_failover {
            if self.me().is_replica() {
                self.handle_manual_failover();
                self.handle_replica_failover(cfg, now);
            }
        } else if self.todo.handle_failover {
            self.handle_replica_failover(cfg, now);
        }
        let todo = std::mem::take(&mut self.todo);
        if todo.update_state {
            self.update_state(cfg, now);
        }
        if todo.save {
            self.save_config(todo.fsync)
                .map_err(|e| format!("Fatal: can't update cluster config file: {e}"))?;
        }
        Ok(())
    }

    /// ok or fail (Redis's `clusterUpdateState`): every slot served (with
    /// `cluster-require-full-coverage`) and a majority of masters
    /// reachable.
    pub fn update_state(&mut self, cfg: &ClusterConfig, now: i64) {
        self.todo.update_state = false;
        if self.first_state_update == 0 {
            self.first_state_update = now;
        }
        if self.me().is_master()
            && !self.state_ok
            && now - self.first_state_update < WRITABLE_DELAY_MS
        {
            return;
        }
        let mut ok = true;
        if cfg.require_full_coverage {
            ok = self
                .slots
                .iter()
                .all(|s| s.is_some_and(|n| !self.nodes[n].is(FAIL)));
        }
        let mut size = 0;
        let mut reachable = 0;
        for (_, n) in self.nodes.iter() {
            if n.is_master() && n.numslots > 0 {
                size += 1;
                if !n.is(FAIL | PFAIL) {
                    reachable += 1;
                }
            }
        }
        self.size = size;
        if reachable < size / 2 + 1 {
            ok = false;
            self.among_minority_time = now;
        }
        if ok != self.state_ok {
            let rejoin_delay = cfg
                .node_timeout
                .clamp(MIN_REJOIN_DELAY_MS, MAX_REJOIN_DELAY_MS);
            if ok && self.me().is_master() && now - self.among_minority_time < rejoin_delay {
                return;
            }
            warn!("Cluster state changed: {}", if ok { "ok" } else { "fail" });
            self.state_ok = ok;
        }
    }

    // ---- what CLUSTER's subcommands change ----

    /// CLUSTER MEET: a node in handshake, introduced by a MEET once its
    /// link connects.
    pub fn start_handshake(
        &mut self,
        ip: &str,
        port: i64,
        cport: i64,
        now: i64,
    ) -> Result<(), BadAddress> {
        let ip: IpAddr = ip.parse().map_err(|_| BadAddress)?;
        if !(1..=65535).contains(&port) || !(1..=65535).contains(&cport) {
            return Err(BadAddress);
        }
        let ip = ip.to_string();
        let (port, cport) = (port as u16, cport as u16);
        let in_progress = self.nodes.iter().any(|(_, n)| {
            n.is(HANDSHAKE) && n.ip.eq_ignore_ascii_case(&ip) && n.port == port && n.cport == cport
        });
        if !in_progress {
            let mut node = Node::new(super::random_name(), HANDSHAKE | MEET, now);
            node.ip = ip;
            node.port = port;
            node.cport = cport;
            self.add_node(node);
        }
        Ok(())
    }

    /// ADDSLOTS / DELSLOTS (and their RANGE forms) once checked.
    pub fn assign_slots(&mut self, slots: &[usize], delete: bool) {
        for &slot in slots {
            self.importing.remove(&(slot as u16));
            if delete {
                self.del_slot(slot);
            } else {
                self.add_slot(self.myself, slot);
            }
        }
        self.todo.update_state = true;
        self.todo.save = true;
    }

    pub fn flush_slots(&mut self) {
        self.del_node_slots(self.myself);
        self.todo.update_state = true;
        self.todo.save = true;
    }

    /// CLUSTER SET-CONFIG-EPOCH on a fresh node.
    pub fn set_config_epoch(&mut self, epoch: u64) -> Result<(), &'static str> {
        if self.nodes.len() > 1 {
            return Err("ERR The user can assign a config epoch only when the node does not know any other node.");
        }
        if self.me().config_epoch != 0 {
            return Err("ERR Node config epoch is already non-zero");
        }
        let me = self.myself;
        self.nodes[me].config_epoch = epoch;
        warn!("configEpoch set to {epoch} via CLUSTER SET-CONFIG-EPOCH");
        self.current_epoch = self.current_epoch.max(epoch);
        self.todo.update_state = true;
        self.todo.save = true;
        Ok(())
    }

    /// CLUSTER FORGET: the node is dropped and not re-added from gossip
    /// for a minute.
    pub fn forget(&mut self, id: NodeId, now: i64) {
        let name = self.nodes[id].name;
        self.blacklist.retain(|_, until| *until >= now);
        self.blacklist.insert(name, now + BLACKLIST_TTL_MS);
        self.del_node(id);
        self.todo.update_state = true;
        self.todo.save = true;
    }

    /// CLUSTER RESET: every other node forgotten, no slots; HARD also
    /// takes a new name and zeroes the epochs.
    pub fn reset(&mut self, hard: bool) {
        let me = self.myself;
        if self.nodes[me].is_replica() {
            self.set_node_as_master(me);
            self.effects.push(Effect::SetPrimary(None));
            self.effects.push(Effect::FlushData);
        }
        self.reset_manual_failover();
        self.migrating.clear();
        self.importing.clear();
        for slot in 0..SLOTS {
            self.del_slot(slot);
        }
        for id in self.node_ids() {
            if id != self.myself {
                self.del_node(id);
            }
        }
        if hard {
            self.current_epoch = 0;
            self.last_vote_epoch = 0;
            let me = self.myself;
            self.nodes[me].config_epoch = 0;
            warn!("configEpoch set to 0 via CLUSTER RESET HARD");
            self.rename_node(me, super::random_name());
            info!("Node hard reset, now I'm {}", self.me().name_str());
        }
        self.todo.save = true;
        self.todo.update_state = true;
        self.todo.fsync = true;
    }

    /// CLUSTER SETSLOT once checked (Redis's `clusterCommand`).
    pub fn set_slot(
        &mut self,
        slot: usize,
        change: SlotChange,
        allow_replica_migration: bool,
        now: i64,
    ) {
        let key = slot as u16;
        // What changed is saved; a SETSLOT that changes nothing (a node
        // told again what gossip told it) writes no file.
        let changed = match change {
            SlotChange::Migrating(to) => self.migrating.insert(key, to) != Some(to),
            SlotChange::Importing(from) => self.importing.insert(key, from) != Some(from),
            SlotChange::Stable => {
                let importing = self.importing.remove(&key).is_some();
                let migrating = self.migrating.remove(&key).is_some();
                importing || migrating
            }
            SlotChange::Node(owner, keys) => {
                let me = self.myself;
                let mut changed = false;
                if keys == 0 {
                    changed |= self.migrating.remove(&key).is_some();
                }
                let was_mine = self.slots[slot] == Some(me);
                if self.slots[slot] != Some(owner) {
                    self.del_slot(slot);
                    self.add_slot(owner, slot);
                    changed = true;
                }
                if was_mine
                    && owner != me
                    && self.nodes[me].numslots == 0
                    && allow_replica_migration
                {
                    warn!(
                        "Configuration change detected. Reconfiguring myself as a replica of {}",
                        self.nodes[owner].name_str()
                    );
                    self.set_master(owner);
                }
                if owner == me && self.importing.remove(&key).is_some() {
                    changed = true;
                    if self.bump_epoch() {
                        warn!("configEpoch updated after importing slot {slot}");
                    }
                    self.broadcast_pong(now);
                }
                changed
            }
        };
        if changed {
            self.todo.save = true;
            self.todo.update_state = true;
        }
    }

    /// Slots CLUSTER SETSLOT put in migration or import.
    pub fn open_slots(&self) -> impl Iterator<Item = (u16, char, NodeId)> + '_ {
        self.migrating
            .iter()
            .map(|(s, n)| (*s, '>', *n))
            .chain(self.importing.iter().map(|(s, n)| (*s, '<', *n)))
    }
}
