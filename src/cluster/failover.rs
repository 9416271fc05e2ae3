//! Replicas in the cluster (Redis 7.0's `cluster.c`): following a master
//! (`clusterSetMaster`), the election a replica of a failed master runs
//! (delays by rank, votes of the masters, the new config epoch), the
//! manual failover (CLUSTER FAILOVER [FORCE|TAKEOVER], MFSTART, the
//! master's pause), a master's vote, and replica migration to orphaned
//! masters.

use rand::Rng;
use tracing::warn;

use super::message::{self, Body, Header};
use super::slot::{self, SLOTS};
use super::*;

/// A manual failover gives up after this long (`CLUSTER_MF_TIMEOUT`).
const MF_TIMEOUT_MS: i64 = 5000;
/// The master pauses writes for this many manual-failover timeouts.
const MF_PAUSE_MULT: i64 = 2;
/// A master is orphaned this long before a replica migrates to it.
const REPLICA_MIGRATION_DELAY_MS: i64 = 5000;

/// A replica's election, and a manual failover, as they stand.
#[derive(Default)]
pub(super) struct Election {
    /// When the election may start (or started), in unix ms.
    auth_time: i64,
    auth_count: usize,
    auth_sent: bool,
    rank: usize,
    auth_epoch: u64,
    /// A manual failover: its deadline (0: none), the replica a master
    /// paused for, the master's offset to reach, whether it may start.
    pub(super) mf_end: i64,
    mf_replica: Option<NodeId>,
    mf_master_offset: Option<u64>,
    mf_can_start: bool,
}

/// Why CLUSTER FAILOVER was refused.
pub enum FailoverRefused {
    IsMaster,
    MasterUnknown,
    MasterDown,
}

/// What the replication around the cluster looks like to it (the server
/// keeps it current before each call).
#[derive(Default, Clone, Copy)]
pub struct ReplicaView {
    /// Whether this server replicates anyone now.
    pub replicating: bool,
    /// Milliseconds since the primary was last heard from (or since the
    /// link went down).
    pub data_age_ms: i64,
    pub ping_period_ms: i64,
}

impl Cluster {
    /// Follows `master` (CLUSTER REPLICATE, a master left without slots,
    /// replica migration): this node becomes its replica.
    pub fn set_master(&mut self, master: NodeId) {
        let me = self.myself;
        if self.nodes[me].is_master() {
            let n = &mut self.nodes[me];
            n.flags = (n.flags & !(MASTER | MIGRATE_TO)) | SLAVE;
            self.migrating.clear();
            self.importing.clear();
        } else if let Some(old) = self.nodes[me].slaveof {
            self.remove_replica(old, me);
        }
        self.nodes[me].slaveof = Some(master);
        self.add_replica(master, me);
        let n = &self.nodes[master];
        self.effects
            .push(Effect::SetPrimary(Some((n.ip.clone(), n.port))));
        self.reset_manual_failover();
        self.todo.save = true;
        self.todo.update_state = true;
        self.todo.fsync = true;
    }

    /// A master votes for a replica of a failed master (Redis's
    /// `clusterSendFailoverAuthIfNeeded`): once per epoch, once per
    /// master in two node timeouts, if no slot it claims is newer.
    pub(super) fn vote_if_needed(
        &mut self,
        node: NodeId,
        h: &Header,
        cfg: &ClusterConfig,
        now: i64,
    ) {
        let me = self.me();
        if me.is_replica() || me.numslots == 0 {
            return;
        }
        let name = self.nodes[node].name_str().to_string();
        if h.current_epoch < self.current_epoch {
            warn!(
                "Failover auth denied to {name}: reqEpoch ({}) < curEpoch({})",
                h.current_epoch, self.current_epoch
            );
            return;
        }
        if self.last_vote_epoch == self.current_epoch {
            warn!(
                "Failover auth denied to {name}: already voted for epoch {}",
                self.current_epoch
            );
            return;
        }
        let force_ack = h.mflags0 & message::FLAG0_FORCEACK != 0;
        let master = self.nodes[node].slaveof;
        let Some(master) = master.filter(|_| !self.nodes[node].is_master()) else {
            warn!("Failover auth denied to {name}: it is a master node or its master is unknown");
            return;
        };
        if !self.nodes[master].is(FAIL) && !force_ack {
            warn!("Failover auth denied to {name}: its master is up");
            return;
        }
        if now - self.nodes[master].voted_time < cfg.node_timeout * 2 {
            warn!("Failover auth denied to {name}: can't vote about this master yet");
            return;
        }
        for j in 0..SLOTS {
            if !slot::bit(&h.slots, j) || self.slot_unclaimed(j) {
                continue;
            }
            let owner = self.slots[j].map_or(0, |o| self.nodes[o].config_epoch);
            if owner > h.config_epoch {
                warn!(
                    "Failover auth denied to {name}: slot {j} epoch ({owner}) > reqEpoch ({})",
                    h.config_epoch
                );
                return;
            }
        }
        self.last_vote_epoch = self.current_epoch;
        self.nodes[master].voted_time = now;
        self.todo.save = true;
        self.todo.fsync = true;
        if let Some(link) = self.nodes[node].link {
            let ack = self.message(message::FAILOVER_AUTH_ACK, Body::Empty);
            self.send(link, &ack);
        }
        warn!(
            "Failover auth granted to {name} for epoch {}",
            self.current_epoch
        );
    }

    /// A vote came: counted if from a master with slots in this election.
    pub(super) fn vote_received(&mut self, sender: NodeId, sender_current_epoch: u64) {
        let s = &self.nodes[sender];
        if s.is_master() && s.numslots > 0 && sender_current_epoch >= self.election.auth_epoch {
            self.election.auth_count += 1;
            self.todo.handle_failover = true;
        }
    }

    /// MFSTART from one of our replicas: writes pause while it catches
    /// up, and it hears our offset at once.
    pub(super) fn manual_failover_requested(&mut self, sender: NodeId, link: LinkId, now: i64) {
        if self.nodes[sender].slaveof != Some(self.myself) {
            return;
        }
        self.reset_manual_failover();
        self.election.mf_end = now + MF_TIMEOUT_MS;
        self.election.mf_replica = Some(sender);
        self.effects
            .push(Effect::PauseWrites(now + MF_TIMEOUT_MS * MF_PAUSE_MULT));
        warn!(
            "Manual failover requested by replica {}.",
            self.nodes[sender].name_str()
        );
        self.send_ping(link, message::PING, now);
    }

    /// Our master, paused for our manual failover, told its offset.
    pub(super) fn master_offset_heard(&mut self, sender: NodeId, h: &Header) {
        let me = self.me();
        if self.election.mf_end != 0
            && me.is_replica()
            && me.slaveof == Some(sender)
            && h.mflags0 & message::FLAG0_PAUSED != 0
            && self.election.mf_master_offset.is_none()
        {
            self.election.mf_master_offset = Some(h.offset);
            self.todo.handle_manual_failover = true;
            warn!(
                "Received replication offset for paused master manual failover: {}",
                h.offset
            );
        }
    }

    pub(super) fn reset_manual_failover(&mut self) {
        if self.election.mf_replica.is_some() {
            self.effects.push(Effect::Unpause);
        }
        self.election.mf_end = 0;
        self.election.mf_can_start = false;
        self.election.mf_replica = None;
        self.election.mf_master_offset = None;
    }

    /// CLUSTER FAILOVER [FORCE|TAKEOVER] on a replica.
    pub fn start_manual_failover(
        &mut self,
        force: bool,
        takeover: bool,
        now: i64,
    ) -> Result<(), FailoverRefused> {
        let me = self.me();
        if me.is_master() {
            return Err(FailoverRefused::IsMaster);
        }
        let Some(master) = me.slaveof else {
            return Err(FailoverRefused::MasterUnknown);
        };
        if !force && (self.nodes[master].is(FAIL) || self.nodes[master].link.is_none()) {
            return Err(FailoverRefused::MasterDown);
        }
        self.reset_manual_failover();
        self.election.mf_end = now + MF_TIMEOUT_MS;
        if takeover {
            warn!("Taking over the master (user request).");
            self.bump_epoch();
            self.replace_master(now);
        } else if force {
            warn!("Forced failover user request accepted.");
            self.election.mf_can_start = true;
        } else {
            warn!("Manual failover user request accepted.");
            if let Some(link) = self.nodes[master].link {
                let msg = self.message(message::MFSTART, Body::Empty);
                self.send(link, &msg);
            }
        }
        Ok(())
    }

    /// This replica becomes the master of its master's slots (Redis's
    /// `clusterFailoverReplaceYourMaster`), and says so to everyone.
    fn replace_master(&mut self, now: i64) {
        let me = self.myself;
        let Some(old) = self.nodes[me]
            .slaveof
            .filter(|_| self.nodes[me].is_replica())
        else {
            return;
        };
        self.set_node_as_master(me);
        self.effects.push(Effect::SetPrimary(None));
        for j in 0..SLOTS {
            if slot::bit(&self.nodes[old].slots, j) {
                self.del_slot(j);
                self.add_slot(me, j);
            }
        }
        self.todo.update_state = true;
        self.todo.save = true;
        self.todo.fsync = true;
        self.broadcast_pong(now);
        self.reset_manual_failover();
    }

    /// How many replicas of our master have more of its data than us.
    fn replica_rank(&self) -> usize {
        let Some(master) = self.me().slaveof else {
            return 0;
        };
        self.nodes[master]
            .replicas
            .iter()
            .filter(|r| **r != self.myself)
            .map(|r| &self.nodes[*r])
            .filter(|r| !r.is(NOFAILOVER) && r.repl_offset > self.repl_offset)
            .count()
    }

    /// A replica whose master failed runs for its slots (Redis's
    /// `clusterHandleSlaveFailover`).
    pub(super) fn handle_replica_failover(&mut self, cfg: &ClusterConfig, now: i64) {
        self.todo.handle_failover = false;
        let e = &self.election;
        let auth_age = now - e.auth_time;
        let quorum = self.size / 2 + 1;
        let manual = e.mf_end != 0 && e.mf_can_start;
        let auth_timeout = (cfg.node_timeout * 2).max(2000);
        let auth_retry_time = auth_timeout * 2;
        let me = self.me();
        let Some(master) = me.slaveof.filter(|_| me.is_replica()) else {
            return;
        };
        let may_run = manual || (self.nodes[master].is(FAIL) && !cfg.replica_no_failover);
        if !may_run || self.nodes[master].numslots == 0 {
            return;
        }
        let view = self.replica_view;
        let mut data_age = view.data_age_ms;
        if data_age > cfg.node_timeout {
            data_age -= cfg.node_timeout;
        }
        if cfg.replica_validity_factor > 0
            && data_age > view.ping_period_ms + cfg.node_timeout * cfg.replica_validity_factor
            && !manual
        {
            return;
        }
        if auth_age > auth_retry_time {
            let rank = self.replica_rank();
            let e = &mut self.election;
            e.auth_time = now + 500 + rand::thread_rng().gen_range(0..500) + rank as i64 * 1000;
            e.auth_count = 0;
            e.auth_sent = false;
            e.rank = rank;
            if e.mf_end != 0 {
                e.auth_time = now;
                e.rank = 0;
                self.todo.handle_failover = true;
            }
            warn!(
                "Start of election delayed for {} milliseconds (rank #{}, offset {}).",
                self.election.auth_time - now,
                self.election.rank,
                self.repl_offset
            );
            self.broadcast_pong_to_my_shard(now);
            return;
        }
        if !self.election.auth_sent && self.election.mf_end == 0 {
            let rank = self.replica_rank();
            if rank > self.election.rank {
                let added = (rank - self.election.rank) as i64 * 1000;
                self.election.auth_time += added;
                self.election.rank = rank;
                warn!("Replica rank updated to #{rank}, added {added} milliseconds of delay.");
            }
        }
        if now < self.election.auth_time || auth_age > auth_timeout {
            return;
        }
        if !self.election.auth_sent {
            self.current_epoch += 1;
            self.election.auth_epoch = self.current_epoch;
            warn!(
                "Starting a failover election for epoch {}.",
                self.current_epoch
            );
            let mut request = self.header(message::FAILOVER_AUTH_REQUEST);
            if self.election.mf_end != 0 {
                request.mflags0 |= message::FLAG0_FORCEACK;
            }
            let bytes = message::encode(&Message {
                header: request,
                body: Body::Empty,
            });
            self.broadcast(&bytes);
            self.election.auth_sent = true;
            self.todo.save = true;
            self.todo.update_state = true;
            self.todo.fsync = true;
            return;
        }
        if self.election.auth_count >= quorum {
            warn!("Failover election won: I'm the new master.");
            let me = self.myself;
            if self.nodes[me].config_epoch < self.election.auth_epoch {
                self.nodes[me].config_epoch = self.election.auth_epoch;
                warn!(
                    "configEpoch set to {} after successful failover",
                    self.election.auth_epoch
                );
            }
            self.replace_master(now);
        }
    }

    /// A PONG to the other replicas of our master (the election's news).
    fn broadcast_pong_to_my_shard(&mut self, now: i64) {
        let my_master = self.me().slaveof;
        let targets: Vec<LinkId> = self
            .nodes
            .iter()
            .filter(|(id, n)| *id != self.myself && !n.is(HANDSHAKE))
            .filter(|(_, n)| {
                n.is_replica()
                    && n.slaveof.is_some()
                    && (n.slaveof == Some(self.myself) || n.slaveof == my_master)
            })
            .filter_map(|(_, n)| n.link)
            .collect();
        for link in targets {
            self.send_ping(link, message::PONG, now);
        }
    }

    /// A replica in a manual failover may start once it has its master's
    /// offset.
    pub(super) fn handle_manual_failover(&mut self) {
        self.todo.handle_manual_failover = false;
        let e = &mut self.election;
        if e.mf_end == 0 || e.mf_can_start {
            return;
        }
        let Some(offset) = e.mf_master_offset else {
            return;
        };
        if offset == self.repl_offset {
            e.mf_can_start = true;
            warn!("All master replication stream processed, manual failover can start.");
            self.todo.handle_failover = true;
            return;
        }
        self.todo.handle_manual_failover = true;
    }

    pub(super) fn manual_failover_timed_out(&mut self, now: i64) {
        if self.election.mf_end != 0 && self.election.mf_end < now {
            warn!("Manual failover timed out.");
            self.reset_manual_failover();
        }
    }

    /// Whether a master in a manual failover keeps pinging its replica.
    pub(super) fn pinging_mf_replica(&self, node: NodeId) -> bool {
        self.election.mf_end != 0 && self.me().is_master() && self.election.mf_replica == Some(node)
    }

    fn non_failing_replicas(&self, master: NodeId) -> usize {
        self.nodes[master]
            .replicas
            .iter()
            .filter(|r| !self.nodes[**r].is(FAIL))
            .count()
    }

    /// The cron's look at the masters from a replica: how many are
    /// orphaned, the most working replicas one has, and how many ours has.
    pub(super) fn replica_census(&self) -> (usize, usize, usize) {
        let (mut orphaned, mut max_replicas, mut mine) = (0, 0, 0);
        if !self.me().is_replica() {
            return (0, 0, 0);
        }
        for (id, n) in self.nodes.iter() {
            if n.is(MYSELF | NOADDR | HANDSHAKE) || !n.is_master() || n.is(FAIL) {
                continue;
            }
            let ok = self.non_failing_replicas(id);
            if ok == 0 && n.numslots > 0 && n.is(MIGRATE_TO) {
                orphaned += 1;
            }
            max_replicas = max_replicas.max(ok);
            if self.me().slaveof == Some(id) {
                mine = ok;
            }
        }
        (orphaned, max_replicas, mine)
    }

    /// Moves this replica to an orphaned master when its own master has
    /// more working replicas than `cluster-migration-barrier` and it is
    /// the one with the smallest name among the best-served masters'.
    pub(super) fn handle_replica_migration(
        &mut self,
        max_replicas: usize,
        cfg: &ClusterConfig,
        now: i64,
    ) {
        if !self.state_ok {
            return;
        }
        let Some(my_master) = self.me().slaveof else {
            return;
        };
        let ok_replicas = self.nodes[my_master]
            .replicas
            .iter()
            .filter(|r| !self.nodes[**r].is(FAIL | PFAIL))
            .count();
        if ok_replicas as i64 <= cfg.migration_barrier {
            return;
        }
        let mut candidate = self.myself;
        let mut target = None;
        for id in self.node_ids() {
            let n = &self.nodes[id];
            let ok = if n.is_master() {
                self.non_failing_replicas(id)
            } else {
                0
            };
            let orphaned = !n.is_replica() && !n.is(FAIL) && n.is(MIGRATE_TO) && ok == 0;
            if orphaned {
                if target.is_none() && n.numslots > 0 {
                    target = Some(id);
                }
                if self.nodes[id].orphaned_time == 0 {
                    self.nodes[id].orphaned_time = now;
                }
            } else {
                self.nodes[id].orphaned_time = 0;
            }
            if ok == max_replicas {
                for r in self.nodes[id].replicas.clone() {
                    if self.nodes[r].name < self.nodes[candidate].name {
                        candidate = r;
                    }
                }
            }
        }
        if let Some(t) = target {
            if candidate == self.myself
                && now - self.nodes[t].orphaned_time > REPLICA_MIGRATION_DELAY_MS
            {
                warn!("Migrating to orphaned master {}", self.nodes[t].name_str());
                self.set_master(t);
            }
        }
    }
}
