//! Keyspace notifications: the `notify-keyspace-events` flags, and the
//! messages published on `__keyspace@<db>__:<key>` (the event name) and
//! `__keyevent@<db>__:<event>` (the key) for each key-change event.
//!
//! Reads events handed over by the loop from `Db`'s key log and publishes
//! through the `pubsub` room; it never looks at commands. Because lapse
//! removes keys on time, its `expired` events are on time too.

use crate::db::EventClass;
use crate::pubsub::PubSub;

/// `A`: every class but key-space/key-event selection, `m` and `n`.
const ALL: u32 = EventClass::GENERIC.0
    | EventClass::STRING.0
    | EventClass::LIST.0
    | EventClass::SET.0
    | EventClass::HASH.0
    | EventClass::ZSET.0
    | EventClass::EXPIRED.0
    | EventClass::EVICTED.0
    | EventClass::STREAM.0
    | EventClass::MODULE.0;

/// Flag letters in Redis's order for printing.
const LETTERS: &[(char, EventClass)] = &[
    ('g', EventClass::GENERIC),
    ('$', EventClass::STRING),
    ('l', EventClass::LIST),
    ('s', EventClass::SET),
    ('h', EventClass::HASH),
    ('z', EventClass::ZSET),
    ('x', EventClass::EXPIRED),
    ('e', EventClass::EVICTED),
    ('t', EventClass::STREAM),
    ('d', EventClass::MODULE),
    ('n', EventClass::NEW),
];

/// Parses the setting (`keyspaceEventsStringToFlags`); `None` for an
/// unknown letter.
pub fn parse_flags(text: &str) -> Option<u32> {
    let mut flags = 0;
    for c in text.chars() {
        flags |= match c {
            'A' => ALL,
            'K' => EventClass::KEYSPACE.0,
            'E' => EventClass::KEYEVENT.0,
            'm' => EventClass::KEY_MISS.0,
            _ => LETTERS.iter().find(|(l, _)| *l == c)?.1 .0,
        };
    }
    Some(flags)
}

/// Prints the setting as CONFIG GET shows it (`keyspaceEventsFlagsToString`).
pub fn format_flags(flags: u32) -> String {
    let mut out = String::new();
    // As Redis 7.0 prints it: under `A` an `n` is kept but not shown.
    if flags & ALL == ALL {
        out.push('A');
    } else {
        for (letter, class) in LETTERS {
            if flags & class.0 != 0 {
                out.push(*letter);
            }
        }
    }
    for (letter, class) in [
        ('K', EventClass::KEYSPACE),
        ('E', EventClass::KEYEVENT),
        ('m', EventClass::KEY_MISS),
    ] {
        if flags & class.0 != 0 {
            out.push(letter);
        }
    }
    out
}

/// The classes `Db` must record although no write makes them (`new`,
/// `keymiss`), given the setting.
pub fn side_events(flags: u32) -> u32 {
    if flags & (EventClass::KEYSPACE.0 | EventClass::KEYEVENT.0) == 0 {
        return 0;
    }
    flags & (EventClass::NEW.0 | EventClass::KEY_MISS.0)
}

/// Publishes one event of `class` named `event` on `key` in `db`, if the
/// setting asks for it (`notifyKeyspaceEvent`).
pub fn notify(
    pubsub: &mut PubSub,
    flags: u32,
    class: EventClass,
    event: &str,
    key: &[u8],
    db: usize,
) {
    if !class.intersects(flags) || pubsub.is_idle() {
        return;
    }
    if EventClass::KEYSPACE.intersects(flags) {
        let mut channel = format!("__keyspace@{db}__:").into_bytes();
        channel.extend_from_slice(key);
        pubsub.publish(&channel, event.as_bytes(), false);
    }
    if EventClass::KEYEVENT.intersects(flags) {
        let channel = format!("__keyevent@{db}__:{event}");
        pubsub.publish(channel.as_bytes(), key, false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_round_trip_as_redis_prints_them() {
        for (given, shown) in [
            ("", ""),
            ("KEA", "AKE"),
            ("Ex", "xE"),
            ("g$lshzxetd", "AK"),
            ("KA", "AK"),
            ("Kn", "nK"),
            ("AnKEm", "AKEm"),
            ("Klm", "lKm"),
        ] {
            let mut flags = parse_flags(given).unwrap();
            if given == "g$lshzxetd" {
                flags |= EventClass::KEYSPACE.0;
            }
            assert_eq!(format_flags(flags), shown, "{given}");
        }
        assert_eq!(parse_flags("Kq"), None);
    }
}
