//! The cluster bus's messages, byte for byte as Redis 7.0 writes them
//! (`clusterMsg` in Redis's `cluster.h`): a fixed 2256-byte header in
//! network byte order, then a body by type. Bytes only: what a message
//! means to the cluster is `cluster`'s.

use super::slot::BITMAP_BYTES;

/// A node's name: 40 hex digits.
pub type NodeName = [u8; NAME_LEN];
pub const NAME_LEN: usize = 40;
/// The all-zero name a master sends as its `slaveof`.
pub const NO_NAME: NodeName = [0; NAME_LEN];

/// `CLUSTER_PROTO_VER`.
pub const VERSION: u16 = 1;
/// The header's length (`sizeof(clusterMsg) - sizeof(union clusterMsgData)`),
/// the shortest message there is.
pub const HEADER_LEN: usize = 2256;
/// One gossip entry (`clusterMsgDataGossip`).
pub const GOSSIP_LEN: usize = 104;
/// `NET_IP_STR_LEN`: an address field, NUL-padded.
const IP_LEN: usize = 46;
/// The body of an UPDATE (`clusterMsgDataUpdate`).
const UPDATE_LEN: usize = 8 + NAME_LEN + BITMAP_BYTES;

/// Message types.
pub const PING: u16 = 0;
pub const PONG: u16 = 1;
pub const MEET: u16 = 2;
pub const FAIL: u16 = 3;
pub const PUBLISH: u16 = 4;
pub const FAILOVER_AUTH_REQUEST: u16 = 5;
pub const FAILOVER_AUTH_ACK: u16 = 6;
pub const UPDATE: u16 = 7;
pub const MFSTART: u16 = 8;
pub const MODULE: u16 = 9;
pub const PUBLISHSHARD: u16 = 10;
/// How many types there are (`CLUSTERMSG_TYPE_COUNT`).
pub const TYPE_COUNT: usize = 11;

/// `mflags[0]` bits: a master paused for a manual failover, a vote
/// asked for even though the master is up, extensions follow the gossip.
pub const FLAG0_PAUSED: u8 = 1;
pub const FLAG0_FORCEACK: u8 = 1 << 1;
pub const FLAG0_EXT_DATA: u8 = 1 << 2;

/// The one ping extension Redis 7.0 has.
const EXT_HOSTNAME: u16 = 0;

/// A type's name as CLUSTER INFO's counters and the log show it.
pub fn type_name(kind: u16) -> &'static str {
    match kind {
        PING => "ping",
        PONG => "pong",
        MEET => "meet",
        FAIL => "fail",
        PUBLISH => "publish",
        PUBLISHSHARD => "publishshard",
        FAILOVER_AUTH_REQUEST => "auth-req",
        FAILOVER_AUTH_ACK => "auth-ack",
        UPDATE => "update",
        MFSTART => "mfstart",
        MODULE => "module",
        _ => "unknown",
    }
}

/// The header every message starts with.
#[derive(Clone, Debug, PartialEq)]
pub struct Header {
    pub kind: u16,
    /// The client port (TLS or plain), the plain one when the first is
    /// TLS, the bus port.
    pub port: u16,
    pub pport: u16,
    pub cport: u16,
    pub current_epoch: u64,
    /// The sender's config epoch (its master's, for a replica).
    pub config_epoch: u64,
    /// Its replication offset.
    pub offset: u64,
    pub sender: NodeName,
    /// The slots it (or its master) serves.
    pub slots: Box<[u8; BITMAP_BYTES]>,
    /// Its master, `NO_NAME` for a master.
    pub slaveof: NodeName,
    /// The address it announces; empty: use the socket's.
    pub myip: String,
    pub flags: u16,
    /// Its view of the cluster: 0 ok, 1 fail.
    pub state: u8,
    pub mflags0: u8,
}

/// One node as a PING's gossip section describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct Gossip {
    pub name: NodeName,
    /// Seconds (Unix time) of the last PING sent to it and PONG from it.
    pub ping_sent: u32,
    pub pong_received: u32,
    pub ip: String,
    pub port: u16,
    pub cport: u16,
    pub flags: u16,
    pub pport: u16,
}

/// What follows the header.
#[derive(Clone, Debug, PartialEq)]
pub enum Body {
    /// PING, PONG, MEET: gossip about other nodes, and the sender's
    /// hostname (empty: none) from its extensions.
    Ping {
        gossip: Vec<Gossip>,
        hostname: Vec<u8>,
    },
    /// FAIL: the node the sender saw fail.
    Fail(NodeName),
    /// PUBLISH, PUBLISHSHARD.
    Publish { channel: Vec<u8>, message: Vec<u8> },
    /// UPDATE: a node's slots under its config epoch.
    Update {
        config_epoch: u64,
        name: NodeName,
        slots: Box<[u8; BITMAP_BYTES]>,
    },
    /// FAILOVER_AUTH_REQUEST/ACK, MFSTART: the header says it all; and a
    /// type lapse does not act on (MODULE, unknown).
    Empty,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    pub header: Header,
    pub body: Body,
}

/// Why a received message is dropped (Redis logs and ignores these).
#[derive(Debug, PartialEq, Eq)]
pub enum Malformed {
    Version,
    Length { got: usize, expected: usize },
    Padding,
}

/// The length a frame announces once its first 8 bytes are in, or None
/// when they are not a bus message (Redis then closes the link).
pub fn frame_len(first8: &[u8]) -> Option<usize> {
    if first8.len() < 8 || &first8[..4] != b"RCmb" {
        return None;
    }
    let len = be32(first8, 4) as usize;
    (len >= HEADER_LEN).then_some(len)
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn be64(b: &[u8], at: usize) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(bytes)
}

fn name_at(b: &[u8], at: usize) -> NodeName {
    let mut name = NO_NAME;
    name.copy_from_slice(&b[at..at + NAME_LEN]);
    name
}

/// A NUL-terminated string in a fixed field.
fn c_string(field: &[u8]) -> String {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    String::from_utf8_lossy(&field[..end]).into_owned()
}

fn bitmap_at(b: &[u8], at: usize) -> Box<[u8; BITMAP_BYTES]> {
    let mut slots = Box::new([0u8; BITMAP_BYTES]);
    slots.copy_from_slice(&b[at..at + BITMAP_BYTES]);
    slots
}

/// Decodes one whole frame (its length as `frame_len` announced), with
/// the length checks of Redis's `clusterProcessPacket`.
pub fn decode(frame: &[u8]) -> Result<Message, Malformed> {
    let totlen = frame.len();
    if be16(frame, 8) != VERSION {
        return Err(Malformed::Version);
    }
    let kind = be16(frame, 12);
    let count = usize::from(be16(frame, 14));
    let extensions = be16(frame, 2214);
    let mflags0 = frame[2253];
    let header = Header {
        kind,
        port: be16(frame, 10),
        pport: be16(frame, 2246),
        cport: be16(frame, 2248),
        current_epoch: be64(frame, 16),
        config_epoch: be64(frame, 24),
        offset: be64(frame, 32),
        sender: name_at(frame, 40),
        slots: bitmap_at(frame, 80),
        slaveof: name_at(frame, 2128),
        myip: c_string(&frame[2168..2168 + IP_LEN]),
        flags: be16(frame, 2250),
        state: frame[2252],
        mflags0,
    };
    let check = |expected: usize| {
        if expected == totlen {
            Ok(())
        } else {
            Err(Malformed::Length {
                got: totlen,
                expected,
            })
        }
    };
    let data = HEADER_LEN;
    let body = match kind {
        PING | PONG | MEET => {
            let gossip_end = data + count * GOSSIP_LEN;
            let mut at = gossip_end;
            let mut hostname = Vec::new();
            if mflags0 & FLAG0_EXT_DATA != 0 {
                for _ in 0..extensions {
                    if totlen < at + 8 {
                        return Err(Malformed::Length {
                            got: totlen,
                            expected: at + 8,
                        });
                    }
                    let len = be32(frame, at) as usize;
                    if !len.is_multiple_of(8) || len < 8 {
                        return Err(Malformed::Padding);
                    }
                    if totlen - at < len {
                        return Err(Malformed::Length {
                            got: totlen,
                            expected: at + len,
                        });
                    }
                    if be16(frame, at + 4) == EXT_HOSTNAME {
                        let field = &frame[at + 8..at + len];
                        let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
                        hostname = field[..end].to_vec();
                    }
                    at += len;
                }
            }
            check(at)?;
            let gossip = frame[data..gossip_end]
                .chunks_exact(GOSSIP_LEN)
                .map(|g| Gossip {
                    name: name_at(g, 0),
                    ping_sent: be32(g, 40),
                    pong_received: be32(g, 44),
                    ip: c_string(&g[48..48 + IP_LEN]),
                    port: be16(g, 94),
                    cport: be16(g, 96),
                    flags: be16(g, 98),
                    pport: be16(g, 100),
                })
                .collect();
            Body::Ping { gossip, hostname }
        }
        FAIL => {
            check(data + NAME_LEN)?;
            Body::Fail(name_at(frame, data))
        }
        PUBLISH | PUBLISHSHARD => {
            if totlen < data + 8 {
                check(data + 8)?;
            }
            let channel_len = be32(frame, data) as usize;
            let message_len = be32(frame, data + 4) as usize;
            check(data + 8 + channel_len + message_len)?;
            let channel = frame[data + 8..data + 8 + channel_len].to_vec();
            let message = frame[data + 8 + channel_len..].to_vec();
            Body::Publish { channel, message }
        }
        FAILOVER_AUTH_REQUEST | FAILOVER_AUTH_ACK | MFSTART => {
            check(data)?;
            Body::Empty
        }
        UPDATE => {
            check(data + UPDATE_LEN)?;
            Body::Update {
                config_epoch: be64(frame, data),
                name: name_at(frame, data + 8),
                slots: bitmap_at(frame, data + 8 + NAME_LEN),
            }
        }
        MODULE => {
            if totlen < data + 16 {
                check(data + 16)?;
            }
            check(data + 13 + be32(frame, data + 8) as usize)?;
            Body::Empty
        }
        _ => Body::Empty,
    };
    Ok(Message { header, body })
}

fn put_ip(out: &mut [u8], ip: &str) {
    let bytes = ip.as_bytes();
    let n = bytes.len().min(IP_LEN - 1);
    out[..n].copy_from_slice(&bytes[..n]);
}

/// Encodes a message as Redis would send it.
pub fn encode(msg: &Message) -> Vec<u8> {
    let h = &msg.header;
    let mut out = vec![0u8; HEADER_LEN];
    out[..4].copy_from_slice(b"RCmb");
    out[8..10].copy_from_slice(&VERSION.to_be_bytes());
    out[10..12].copy_from_slice(&h.port.to_be_bytes());
    out[12..14].copy_from_slice(&h.kind.to_be_bytes());
    out[16..24].copy_from_slice(&h.current_epoch.to_be_bytes());
    out[24..32].copy_from_slice(&h.config_epoch.to_be_bytes());
    out[32..40].copy_from_slice(&h.offset.to_be_bytes());
    out[40..80].copy_from_slice(&h.sender);
    out[80..80 + BITMAP_BYTES].copy_from_slice(&h.slots[..]);
    out[2128..2168].copy_from_slice(&h.slaveof);
    put_ip(&mut out[2168..2168 + IP_LEN], &h.myip);
    out[2246..2248].copy_from_slice(&h.pport.to_be_bytes());
    out[2248..2250].copy_from_slice(&h.cport.to_be_bytes());
    out[2250..2252].copy_from_slice(&h.flags.to_be_bytes());
    out[2252] = h.state;
    out[2253] = h.mflags0;
    match &msg.body {
        Body::Ping { gossip, hostname } => {
            out[14..16].copy_from_slice(&(gossip.len() as u16).to_be_bytes());
            for g in gossip {
                let mut entry = [0u8; GOSSIP_LEN];
                entry[..40].copy_from_slice(&g.name);
                entry[40..44].copy_from_slice(&g.ping_sent.to_be_bytes());
                entry[44..48].copy_from_slice(&g.pong_received.to_be_bytes());
                put_ip(&mut entry[48..48 + IP_LEN], &g.ip);
                entry[94..96].copy_from_slice(&g.port.to_be_bytes());
                entry[96..98].copy_from_slice(&g.cport.to_be_bytes());
                entry[98..100].copy_from_slice(&g.flags.to_be_bytes());
                entry[100..102].copy_from_slice(&g.pport.to_be_bytes());
                out.extend_from_slice(&entry);
            }
            if !hostname.is_empty() {
                out[2253] |= FLAG0_EXT_DATA;
                out[2214..2216].copy_from_slice(&1u16.to_be_bytes());
                let padded = (hostname.len() + 1).div_ceil(8) * 8;
                let len = (8 + padded) as u32;
                out.extend_from_slice(&len.to_be_bytes());
                out.extend_from_slice(&EXT_HOSTNAME.to_be_bytes());
                out.extend_from_slice(&[0, 0]);
                out.extend_from_slice(hostname);
                out.resize(out.len() + padded - hostname.len(), 0);
            }
        }
        Body::Fail(name) => out.extend_from_slice(name),
        Body::Publish { channel, message } => {
            out.extend_from_slice(&(channel.len() as u32).to_be_bytes());
            out.extend_from_slice(&(message.len() as u32).to_be_bytes());
            out.extend_from_slice(channel);
            out.extend_from_slice(message);
        }
        Body::Update {
            config_epoch,
            name,
            slots,
        } => {
            out.extend_from_slice(&config_epoch.to_be_bytes());
            out.extend_from_slice(name);
            out.extend_from_slice(&slots[..]);
        }
        Body::Empty => {}
    }
    let totlen = out.len() as u32;
    out[4..8].copy_from_slice(&totlen.to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(kind: u16) -> Header {
        let mut slots = Box::new([0u8; BITMAP_BYTES]);
        slots[0] = 0b101;
        Header {
            kind,
            port: 7000,
            pport: 0,
            cport: 17000,
            current_epoch: 5,
            config_epoch: 3,
            offset: 1234,
            sender: [b'a'; NAME_LEN],
            slots,
            slaveof: NO_NAME,
            myip: "127.0.0.1".into(),
            flags: 1,
            state: 0,
            mflags0: 0,
        }
    }

    #[test]
    fn every_body_round_trips_at_redis_offsets() {
        let bodies = [
            (
                PING,
                Body::Ping {
                    gossip: vec![Gossip {
                        name: [b'b'; NAME_LEN],
                        ping_sent: 1,
                        pong_received: 2,
                        ip: "10.0.0.2".into(),
                        port: 7001,
                        cport: 17001,
                        flags: 2,
                        pport: 0,
                    }],
                    hostname: b"node-1".to_vec(),
                },
            ),
            (FAIL, Body::Fail([b'c'; NAME_LEN])),
            (
                PUBLISHSHARD,
                Body::Publish {
                    channel: b"ch".to_vec(),
                    message: b"hello".to_vec(),
                },
            ),
            (
                UPDATE,
                Body::Update {
                    config_epoch: 9,
                    name: [b'd'; NAME_LEN],
                    slots: Box::new([0xff; BITMAP_BYTES]),
                },
            ),
            (MFSTART, Body::Empty),
        ];
        for (kind, body) in bodies {
            let mut msg = Message {
                header: header(kind),
                body,
            };
            let bytes = encode(&msg);
            assert_eq!(frame_len(&bytes), Some(bytes.len()));
            assert_eq!(&bytes[2168..2177], b"127.0.0.1");
            assert_eq!(u16::from_be_bytes([bytes[2248], bytes[2249]]), 17000);
            if kind == PING {
                // Header, one gossip entry, the hostname extension (8 + 8).
                assert_eq!(bytes.len(), HEADER_LEN + GOSSIP_LEN + 16);
                msg.header.mflags0 |= FLAG0_EXT_DATA;
            }
            assert_eq!(decode(&bytes), Ok(msg));
        }
    }

    #[test]
    fn bad_frames_are_refused() {
        assert_eq!(frame_len(b"RCmb\0\0\0\x10"), None);
        assert_eq!(frame_len(b"XXXX\0\0\x10\0"), None);
        let msg = Message {
            header: header(FAIL),
            body: Body::Fail([b'c'; NAME_LEN]),
        };
        let mut bytes = encode(&msg);
        bytes.push(0);
        assert!(matches!(decode(&bytes), Err(Malformed::Length { .. })));
        let mut bytes = encode(&msg);
        bytes[9] = 2;
        assert_eq!(decode(&bytes), Err(Malformed::Version));
        // A publish whose lengths point past the frame.
        let mut bytes = encode(&Message {
            header: header(PUBLISH),
            body: Body::Publish {
                channel: b"c".to_vec(),
                message: b"m".to_vec(),
            },
        });
        bytes[HEADER_LEN..HEADER_LEN + 4].copy_from_slice(&u32::MAX.to_be_bytes());
        assert!(matches!(decode(&bytes), Err(Malformed::Length { .. })));
    }
}
