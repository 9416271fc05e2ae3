//! CLUSTER and its subcommands, ASKING, READONLY, READWRITE (Redis 7.0's
//! `clusterCommand` and friends): what the node knows of the cluster,
//! and the changes an operator or `redis-cli --cluster` makes.

use super::{int_arg, is, reply_help, CmdError, CmdResult, Ctx};
use crate::cluster::slot::{self, SLOTS};
use crate::cluster::{
    message, Cluster, FailoverRefused, Node, NodeId, FAIL, MYSELF, PFAIL, PORT_INCR,
};
use crate::config::Endpoint;
use crate::protocol::{Args, Reply};
use crate::state::ServerState;

pub(super) static HANDLERS: &[(&str, super::Handler)] = &[
    ("cluster|help", help),
    ("cluster|info", info),
    ("cluster|myid", myid),
    ("cluster|nodes", nodes),
    ("cluster|slots", slots),
    ("cluster|shards", shards),
    ("cluster|meet", meet),
    ("cluster|addslots", addslots),
    ("cluster|delslots", addslots),
    ("cluster|addslotsrange", addslotsrange),
    ("cluster|delslotsrange", addslotsrange),
    ("cluster|flushslots", flushslots),
    ("cluster|keyslot", keyslot),
    ("cluster|countkeysinslot", countkeysinslot),
    ("cluster|getkeysinslot", getkeysinslot),
    ("cluster|bumpepoch", bumpepoch),
    ("cluster|set-config-epoch", set_config_epoch),
    ("cluster|forget", forget),
    ("cluster|count-failure-reports", count_failure_reports),
    ("cluster|reset", reset),
    ("cluster|saveconfig", saveconfig),
    ("cluster|links", links),
    ("cluster|replicas", replicas),
    ("cluster|replicate", replicate),
    ("cluster|failover", failover),
    ("cluster|setslot", setslot),
    ("cluster|slaves", replicas),
    ("asking", asking),
    ("readonly", readonly),
    ("readwrite", readonly),
];

const DISABLED: &str = "ERR This instance has cluster support disabled";

/// The cluster, or Redis's error when cluster mode is off.
fn cluster<'a>(ctx: &'a mut Ctx) -> Result<&'a mut Cluster, CmdError> {
    ctx.server
        .cluster
        .as_mut()
        .ok_or(CmdError::Static(DISABLED))
}

fn help(ctx: &mut Ctx, _args: Args) -> CmdResult {
    cluster(ctx)?;
    reply_help(ctx, "CLUSTER", HELP);
    Ok(())
}

static HELP: &[&str] = &[
    "ADDSLOTS <slot> [<slot> ...]",
    "    Assign slots to current node.",
    "ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Assign slots which are between <start-slot> and <end-slot> to current node.",
    "BUMPEPOCH",
    "    Advance the cluster config epoch.",
    "COUNT-FAILURE-REPORTS <node-id>",
    "    Return number of failure reports for <node-id>.",
    "COUNTKEYSINSLOT <slot>",
    "    Return the number of keys in <slot>.",
    "DELSLOTS <slot> [<slot> ...]",
    "    Delete slots information from current node.",
    "DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Delete slots information which are between <start-slot> and <end-slot> from current node.",
    "FAILOVER [FORCE|TAKEOVER]",
    "    Promote current replica node to being a master.",
    "FORGET <node-id>",
    "    Remove a node from the cluster.",
    "GETKEYSINSLOT <slot> <count>",
    "    Return key names stored by current node in a slot.",
    "FLUSHSLOTS",
    "    Delete current node own slots information.",
    "INFO",
    "    Return information about the cluster.",
    "KEYSLOT <key>",
    "    Return the hash slot for <key>.",
    "MEET <ip> <port> [<bus-port>]",
    "    Connect nodes into a working cluster.",
    "MYID",
    "    Return the node id.",
    "NODES",
    "    Return cluster configuration seen by node. Output format:",
    "    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
    "REPLICATE <node-id>",
    "    Configure current node as replica to <node-id>.",
    "RESET [HARD|SOFT]",
    "    Reset current node (default: soft).",
    "SET-CONFIG-EPOCH <epoch>",
    "    Set config epoch of current node.",
    "SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
    "    Set slot state.",
    "REPLICAS <node-id>",
    "    Return <node-id> replicas.",
    "SAVECONFIG",
    "    Force saving cluster configuration on disk.",
    "SLOTS",
    "    Return information about slots range mappings. Each range is made of:",
    "    start, end, master and replicas IP addresses, ports and ids",
    "SHARDS",
    "    Return information about slot range mappings and the nodes associated with them.",
    "LINKS",
    "    Return information about all network links between this node and its peers.",
    "    Output format is an array where each array element is a map containing attributes of a link",
];

fn info(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let c = cluster(ctx)?;
    let (mut assigned, mut ok, mut pfail, mut fail) = (0, 0, 0, 0);
    for slot in 0..SLOTS {
        let Some(n) = c.slot_owner(slot) else {
            continue;
        };
        assigned += 1;
        let node = c.node(n);
        if node.is(FAIL) {
            fail += 1;
        } else if node.is(PFAIL) {
            pfail += 1;
        } else {
            ok += 1;
        }
    }
    let me = c.me();
    let my_epoch = match me.slaveof {
        Some(m) if me.is_replica() => c.node(m).config_epoch,
        _ => me.config_epoch,
    };
    let mut text = format!(
        "cluster_state:{}\r\ncluster_slots_assigned:{assigned}\r\ncluster_slots_ok:{ok}\r\n\
         cluster_slots_pfail:{pfail}\r\ncluster_slots_fail:{fail}\r\ncluster_known_nodes:{}\r\n\
         cluster_size:{}\r\ncluster_current_epoch:{}\r\ncluster_my_epoch:{my_epoch}\r\n",
        if c.state_ok { "ok" } else { "fail" },
        c.known_nodes(),
        c.size,
        c.current_epoch,
    );
    for (stats, dir) in [(&c.stats_sent, "sent"), (&c.stats_received, "received")] {
        let mut total = 0;
        for (kind, n) in stats.iter().enumerate() {
            if *n > 0 {
                total += n;
                text.push_str(&format!(
                    "cluster_stats_messages_{}_{dir}:{n}\r\n",
                    message::type_name(kind as u16)
                ));
            }
        }
        text.push_str(&format!("cluster_stats_messages_{dir}:{total}\r\n"));
    }
    text.push_str(&format!(
        "total_cluster_links_buffer_limit_exceeded:{}\r\n",
        c.links_buffer_limit_exceeded
    ));
    ctx.out().verbatim(text.as_bytes());
    Ok(())
}

fn myid(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let name = cluster(ctx)?.me().name;
    ctx.out().bulk(&name);
    Ok(())
}

fn nodes(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let tls = ctx.session.tls;
    let text = cluster(ctx)?.describe(0, tls);
    ctx.out().verbatim(text.as_bytes());
    Ok(())
}

/// `cluster-preferred-endpoint-type` and the cluster, to read.
fn endpoint_and_cluster(server: &ServerState) -> Result<(Endpoint, &Cluster), CmdError> {
    let endpoint = server.config.cluster.preferred_endpoint;
    let c = server.cluster.as_ref().ok_or(CmdError::Static(DISABLED))?;
    Ok((endpoint, c))
}

/// The address clients are pointed to (`cluster-preferred-endpoint-type`).
pub fn preferred_endpoint(endpoint: Endpoint, node: &Node) -> &str {
    match endpoint {
        Endpoint::Ip => &node.ip,
        Endpoint::Hostname if node.hostname.is_empty() => "?",
        Endpoint::Hostname => &node.hostname,
        Endpoint::Unknown => "",
    }
}

/// A node as CLUSTER SLOTS lists it: endpoint, port (the one `port`
/// gives the client), id, and the other endpoints it has.
fn slots_node(out: &mut Reply, endpoint: Endpoint, node: &Node, port: u16) {
    out.array(4);
    match endpoint {
        Endpoint::Unknown => out.null(),
        _ => out.bulk(preferred_endpoint(endpoint, node).as_bytes()),
    }
    out.int(i64::from(port));
    out.bulk(&node.name);
    let ip = endpoint != Endpoint::Ip;
    let hostname = endpoint != Endpoint::Hostname && !node.hostname.is_empty();
    out.map(usize::from(ip) + usize::from(hostname));
    if ip {
        out.bulk(b"ip");
        out.bulk(node.ip.as_bytes());
    }
    if hostname {
        out.bulk(b"hostname");
        out.bulk(node.hostname.as_bytes());
    }
}

/// Whether a replica is listed by CLUSTER SLOTS: not failed, and synced
/// at least once.
fn replica_available(c: &Cluster, id: NodeId) -> bool {
    let node = c.node(id);
    let offset = if node.is(MYSELF) {
        c.repl_offset
    } else {
        node.repl_offset
    };
    !node.is(FAIL) && offset != 0
}

fn slots(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let tls = ctx.session.tls;
    let (endpoint, c) = endpoint_and_cluster(ctx.server)?;
    let mut runs: Vec<(usize, usize, NodeId)> = Vec::new();
    for s in 0..SLOTS {
        let Some(owner) = c.slot_owner(s) else {
            continue;
        };
        match runs.last_mut() {
            Some((_, end, n)) if *n == owner && *end + 1 == s => *end = s,
            _ => runs.push((s, s, owner)),
        }
    }
    let out = &mut ctx.session.reply;
    out.array(runs.len());
    for (start, end, owner) in runs {
        let master = c.node(owner);
        let replicas: Vec<NodeId> = master
            .replicas
            .iter()
            .copied()
            .filter(|r| replica_available(c, *r))
            .collect();
        out.array(3 + replicas.len());
        out.int(start as i64);
        out.int(end as i64);
        slots_node(out, endpoint, master, c.client_port(master, tls));
        for r in replicas {
            let replica = c.node(r);
            slots_node(out, endpoint, replica, c.client_port(replica, tls));
        }
    }
    Ok(())
}

fn shards(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let (endpoint, c) = endpoint_and_cluster(ctx.server)?;
    let masters: Vec<NodeId> = c
        .node_ids()
        .into_iter()
        .filter(|id| c.node(*id).is_master())
        .collect();
    let out = &mut ctx.session.reply;
    out.array(masters.len());
    for m in masters {
        out.map(2);
        out.bulk(b"slots");
        let ranges = slot::ranges(|s| c.slot_owner(s) == Some(m));
        out.array(ranges.len() * 2);
        for (first, last) in ranges {
            out.int(first as i64);
            out.int(last as i64);
        }
        out.bulk(b"nodes");
        let members: Vec<NodeId> = std::iter::once(m)
            .chain(c.node(m).replicas.iter().copied())
            .collect();
        out.array(members.len());
        for id in members {
            shard_node(out, endpoint, c, id);
        }
    }
    Ok(())
}

fn shard_node(out: &mut Reply, endpoint: Endpoint, c: &Cluster, id: NodeId) {
    let node = c.node(id);
    let offset = if node.is(MYSELF) {
        c.repl_offset
    } else {
        node.repl_offset
    };
    let hostname = !node.hostname.is_empty();
    // In a TLS cluster `port` is the TLS one and `pport` the plain one.
    let (plain_port, tls_port) = match c.tls() {
        true => (node.pport, node.port),
        false => (node.port, 0),
    };
    out.map(6 + usize::from(plain_port != 0) + usize::from(tls_port != 0) + usize::from(hostname));
    out.bulk(b"id");
    out.bulk(&node.name);
    if plain_port != 0 {
        out.bulk(b"port");
        out.int(i64::from(plain_port));
    }
    if tls_port != 0 {
        out.bulk(b"tls-port");
        out.int(i64::from(tls_port));
    }
    out.bulk(b"ip");
    out.bulk(node.ip.as_bytes());
    out.bulk(b"endpoint");
    out.bulk(preferred_endpoint(endpoint, node).as_bytes());
    if hostname {
        out.bulk(b"hostname");
        out.bulk(node.hostname.as_bytes());
    }
    out.bulk(b"role");
    out.bulk(if node.is_replica() {
        b"replica" as &[u8]
    } else {
        b"master"
    });
    out.bulk(b"replication-offset");
    out.int(offset as i64);
    out.bulk(b"health");
    let health: &[u8] = if node.is(FAIL) {
        b"fail"
    } else if node.is_replica() && offset == 0 {
        b"loading"
    } else {
        b"online"
    };
    out.bulk(health);
}

fn meet(ctx: &mut Ctx, args: Args) -> CmdResult {
    let now = ctx.now_ms;
    let c = cluster(ctx)?;
    if args.len() > 5 {
        return Err(CmdError::subcommand_syntax(&args, "CLUSTER"));
    }
    let port = crate::protocol::request::parse_i64(&args[3])
        .ok_or_else(|| CmdError::with_arg("ERR Invalid TCP base port specified: ", &args[3], ""))?;
    let cport = match args.iter().nth(4) {
        Some(arg) => crate::protocol::request::parse_i64(arg)
            .ok_or_else(|| CmdError::with_arg("ERR Invalid TCP bus port specified: ", arg, ""))?,
        None => port.saturating_add(i64::from(PORT_INCR)),
    };
    let ip = String::from_utf8_lossy(&args[2]).into_owned();
    if c.start_handshake(&ip, port, cport, now).is_err() {
        let mut msg = b"ERR Invalid node address specified: ".to_vec();
        msg.extend_from_slice(&args[2]);
        msg.push(b':');
        msg.extend_from_slice(&args[3]);
        return Err(CmdError::Owned(msg));
    }
    ctx.out().ok();
    Ok(())
}

/// A slot argument (Redis's `getSlotOrReply`).
fn slot_arg(arg: &[u8]) -> Result<usize, CmdError> {
    crate::protocol::request::parse_i64(arg)
        .and_then(|n| usize::try_from(n).ok())
        .filter(|n| *n < SLOTS)
        .ok_or(CmdError::Static("ERR Invalid or out of range slot"))
}

/// Checks a slot range against the table and the slots already named
/// (Redis's `checkSlotAssignmentsOrReply`).
fn check_slots(
    c: &Cluster,
    seen: &mut [bool],
    delete: bool,
    range: std::ops::RangeInclusive<usize>,
) -> CmdResult {
    for slot in range {
        if delete && c.slot_owner(slot).is_none() {
            return Err(CmdError::owned(format!(
                "ERR Slot {slot} is already unassigned"
            )));
        }
        if !delete && c.slot_owner(slot).is_some() {
            return Err(CmdError::owned(format!("ERR Slot {slot} is already busy")));
        }
        if std::mem::replace(&mut seen[slot], true) {
            return Err(CmdError::owned(format!(
                "ERR Slot {slot} specified multiple times"
            )));
        }
    }
    Ok(())
}

fn addslots(ctx: &mut Ctx, args: Args) -> CmdResult {
    let delete = is(&args[1], "delslots");
    let c = cluster(ctx)?;
    let slots: Vec<usize> = args
        .iter()
        .skip(2)
        .map(slot_arg)
        .collect::<Result<_, _>>()?;
    let mut seen = vec![false; SLOTS];
    for &slot in &slots {
        check_slots(c, &mut seen, delete, slot..=slot)?;
    }
    c.assign_slots(&slots, delete);
    ctx.out().ok();
    Ok(())
}

fn addslotsrange(ctx: &mut Ctx, args: Args) -> CmdResult {
    let delete = is(&args[1], "delslotsrange");
    if args.len() % 2 == 1 {
        let name = if delete {
            "delslotsrange"
        } else {
            "addslotsrange"
        };
        return Err(CmdError::wrong_arity(&format!("cluster|{name}")));
    }
    let c = cluster(ctx)?;
    let mut seen = vec![false; SLOTS];
    let mut slots = Vec::new();
    let mut i = 2;
    while i + 1 < args.len() {
        let (start, end) = (slot_arg(&args[i])?, slot_arg(&args[i + 1])?);
        if start > end {
            return Err(CmdError::owned(format!(
                "ERR start slot number {start} is greater than end slot number {end}"
            )));
        }
        check_slots(c, &mut seen, delete, start..=end)?;
        slots.extend(start..=end);
        i += 2;
    }
    c.assign_slots(&slots, delete);
    ctx.out().ok();
    Ok(())
}

fn flushslots(ctx: &mut Ctx, _args: Args) -> CmdResult {
    cluster(ctx)?;
    if !ctx.server.dbs[0].is_empty() {
        return Err(CmdError::Static(
            "ERR DB must be empty to perform CLUSTER FLUSHSLOTS.",
        ));
    }
    cluster(ctx)?.flush_slots();
    ctx.out().ok();
    Ok(())
}

fn keyslot(ctx: &mut Ctx, args: Args) -> CmdResult {
    cluster(ctx)?;
    ctx.out().int(i64::from(slot::key_slot(&args[2])));
    Ok(())
}

fn countkeysinslot(ctx: &mut Ctx, args: Args) -> CmdResult {
    cluster(ctx)?;
    let slot = int_arg(&args[2])?;
    let slot = u16::try_from(slot)
        .ok()
        .filter(|s| usize::from(*s) < SLOTS)
        .ok_or(CmdError::Static("ERR Invalid slot"))?;
    let n = ctx.server.dbs[0].keys_in_slot(slot);
    ctx.out().int(n as i64);
    Ok(())
}

fn getkeysinslot(ctx: &mut Ctx, args: Args) -> CmdResult {
    cluster(ctx)?;
    let slot = int_arg(&args[2])?;
    let max = int_arg(&args[3])?;
    if !(0..SLOTS as i64).contains(&slot) || max < 0 {
        return Err(CmdError::Static("ERR Invalid slot or number of keys"));
    }
    let max = usize::try_from(max).unwrap_or(usize::MAX);
    let keys = ctx.server.dbs[0].slot_keys(slot as u16, max);
    let out = &mut ctx.session.reply;
    out.array(keys.len());
    for key in keys {
        out.bulk(key);
    }
    Ok(())
}

fn bumpepoch(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let c = cluster(ctx)?;
    let bumped = c.bump_epoch();
    let epoch = c.me().config_epoch;
    let word = if bumped { "BUMPED" } else { "STILL" };
    ctx.out().simple(&format!("{word} {epoch}"));
    Ok(())
}

fn set_config_epoch(ctx: &mut Ctx, args: Args) -> CmdResult {
    let epoch = int_arg(&args[2])?;
    let c = cluster(ctx)?;
    if epoch < 0 {
        return Err(CmdError::owned(format!(
            "ERR Invalid config epoch specified: {epoch}"
        )));
    }
    c.set_config_epoch(epoch as u64).map_err(CmdError::Static)?;
    ctx.out().ok();
    Ok(())
}

/// A node named by an argument, or Redis's `Unknown node`.
fn known_node(c: &Cluster, name: &[u8]) -> Result<NodeId, CmdError> {
    c.lookup(name)
        .ok_or_else(|| CmdError::with_arg("ERR Unknown node ", name, ""))
}

fn forget(ctx: &mut Ctx, args: Args) -> CmdResult {
    let now = ctx.now_ms;
    let c = cluster(ctx)?;
    let id = known_node(c, &args[2])?;
    if id == c.myself {
        return Err(CmdError::Static(
            "ERR I tried hard but I can't forget myself...",
        ));
    }
    if c.me().is_replica() && c.me().slaveof == Some(id) {
        return Err(CmdError::Static("ERR Can't forget my master!"));
    }
    c.forget(id, now);
    ctx.out().ok();
    Ok(())
}

fn count_failure_reports(ctx: &mut Ctx, args: Args) -> CmdResult {
    let now = ctx.now_ms;
    let cfg = ctx.server.config.cluster.clone();
    let c = cluster(ctx)?;
    let id = known_node(c, &args[2])?;
    let n = c.failure_reports(id, &cfg, now);
    ctx.out().int(n as i64);
    Ok(())
}

fn reset(ctx: &mut Ctx, args: Args) -> CmdResult {
    cluster(ctx)?;
    let hard = match args.iter().nth(2) {
        None => false,
        Some(a) if is(a, "hard") => true,
        Some(a) if is(a, "soft") => false,
        Some(_) => return Err(CmdError::Syntax),
    };
    if cluster(ctx)?.me().is_master() && !ctx.db().is_empty() {
        return Err(CmdError::Static(
            "ERR CLUSTER RESET can't be called with master nodes containing keys",
        ));
    }
    cluster(ctx)?.reset(hard);
    ctx.out().ok();
    Ok(())
}

fn saveconfig(ctx: &mut Ctx, _args: Args) -> CmdResult {
    cluster(ctx)?
        .save_config(true)
        .map_err(|e| CmdError::owned(format!("ERR error saving the cluster node config: {e}")))?;
    ctx.out().ok();
    Ok(())
}

fn links(ctx: &mut Ctx, _args: Args) -> CmdResult {
    let c = ctx
        .server
        .cluster
        .as_ref()
        .ok_or(CmdError::Static(DISABLED))?;
    let mut listed = Vec::new();
    for id in c.node_ids() {
        let node = c.node(id);
        listed.extend(
            node.link
                .into_iter()
                .chain(node.inbound_link)
                .map(|l| (l, id)),
        );
    }
    let out = &mut ctx.session.reply;
    out.array(listed.len());
    for (link_id, node) in listed {
        let Some(link) = c.link(link_id) else {
            out.null();
            continue;
        };
        out.map(6);
        out.bulk(b"direction");
        out.bulk(if link.inbound {
            b"from" as &[u8]
        } else {
            b"to"
        });
        out.bulk(b"node");
        out.bulk(&c.node(node).name);
        out.bulk(b"create-time");
        out.int(link.ctime);
        out.bulk(b"events");
        out.bulk(if link.send.is_empty() {
            b"r" as &[u8]
        } else {
            b"rw"
        });
        out.bulk(b"send-buffer-allocated");
        out.int(link.send.capacity() as i64);
        out.bulk(b"send-buffer-used");
        out.int(link.send.len() as i64);
    }
    Ok(())
}

fn replicas(ctx: &mut Ctx, args: Args) -> CmdResult {
    let tls = ctx.session.tls;
    let c = cluster(ctx)?;
    let id = known_node(c, &args[2])?;
    if c.node(id).is_replica() {
        return Err(CmdError::Static("ERR The specified node is not a master"));
    }
    let lines: Vec<String> = c
        .node(id)
        .replicas
        .iter()
        .map(|r| c.describe_node(*r, tls))
        .collect();
    let out = ctx.out();
    out.array(lines.len());
    for line in lines {
        out.bulk(line.as_bytes());
    }
    Ok(())
}

fn asking(ctx: &mut Ctx, _args: Args) -> CmdResult {
    cluster(ctx)?;
    ctx.session.asking = true;
    ctx.out().ok();
    Ok(())
}

/// READONLY / READWRITE: whether this client's reads may be served by a
/// replica.
fn readonly(ctx: &mut Ctx, args: Args) -> CmdResult {
    cluster(ctx)?;
    ctx.session.readonly = is(&args[0], "readonly");
    ctx.out().ok();
    Ok(())
}

fn replicate(ctx: &mut Ctx, args: Args) -> CmdResult {
    let has_keys = !ctx.server.dbs[0].is_empty();
    let c = cluster(ctx)?;
    let id = known_node(c, &args[2])?;
    if id == c.myself {
        return Err(CmdError::Static("ERR Can't replicate myself"));
    }
    if c.node(id).is_replica() {
        return Err(CmdError::Static(
            "ERR I can only replicate a master, not a replica.",
        ));
    }
    if c.me().is_master() && (c.me().numslots != 0 || has_keys) {
        return Err(CmdError::Static(
            "ERR To set a master the node must be empty and without assigned slots.",
        ));
    }
    c.set_master(id);
    ctx.out().ok();
    Ok(())
}

fn failover(ctx: &mut Ctx, args: Args) -> CmdResult {
    let now = ctx.now_ms;
    let c = cluster(ctx)?;
    let (force, takeover) = match args.iter().nth(2) {
        None => (false, false),
        Some(a) if is(a, "force") => (true, false),
        Some(a) if is(a, "takeover") => (true, true),
        Some(_) => return Err(CmdError::Syntax),
    };
    c.start_manual_failover(force, takeover, now)
        .map_err(|refused| {
            CmdError::Static(match refused {
                FailoverRefused::IsMaster => "ERR You should send CLUSTER FAILOVER to a replica",
                FailoverRefused::MasterUnknown => {
                    "ERR I'm a replica but my master is unknown to me"
                }
                FailoverRefused::MasterDown => {
                    "ERR Master is down or failed, please use CLUSTER FAILOVER FORCE"
                }
            })
        })?;
    ctx.out().ok();
    Ok(())
}

/// CLUSTER SETSLOT <slot> IMPORTING|MIGRATING <node> | STABLE | NODE <node>.
fn setslot(ctx: &mut Ctx, args: Args) -> CmdResult {
    let now = ctx.now_ms;
    if cluster(ctx)?.me().is_replica() {
        return Err(CmdError::Static(
            "ERR Please use SETSLOT only with masters.",
        ));
    }
    let slot = slot_arg(&args[2])?;
    let keys = ctx.server.dbs[0].keys_in_slot(slot as u16);
    let c = cluster(ctx)?;
    let action = &args[3];
    let target = |c: &Cluster, unknown: &str| -> Result<NodeId, CmdError> {
        let id = c
            .lookup(&args[4])
            .ok_or_else(|| CmdError::with_arg(unknown, &args[4], ""))?;
        if c.node(id).is_replica() {
            return Err(CmdError::Static("ERR Target node is not a master"));
        }
        Ok(id)
    };
    let change = if is(action, "migrating") && args.len() == 5 {
        if c.slot_owner(slot) != Some(c.myself) {
            return Err(CmdError::owned(format!(
                "ERR I'm not the owner of hash slot {slot}"
            )));
        }
        crate::cluster::SlotChange::Migrating(target(c, "ERR I don't know about node ")?)
    } else if is(action, "importing") && args.len() == 5 {
        if c.slot_owner(slot) == Some(c.myself) {
            return Err(CmdError::owned(format!(
                "ERR I'm already the owner of hash slot {slot}"
            )));
        }
        crate::cluster::SlotChange::Importing(target(c, "ERR I don't know about node ")?)
    } else if is(action, "stable") && args.len() == 4 {
        crate::cluster::SlotChange::Stable
    } else if is(action, "node") && args.len() == 5 {
        let id = target(c, "ERR Unknown node ")?;
        if c.slot_owner(slot) == Some(c.myself) && id != c.myself && keys != 0 {
            return Err(CmdError::owned(format!(
                "ERR Can't assign hashslot {slot} to a different node while I still hold keys for this hash slot."
            )));
        }
        crate::cluster::SlotChange::Node(id, keys)
    } else {
        return Err(CmdError::Static(
            "ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP",
        ));
    };
    let allow_migration = ctx.server.config.cluster.allow_replica_migration;
    cluster(ctx)?.set_slot(slot, change, allow_migration, now);
    ctx.out().ok();
    Ok(())
}
