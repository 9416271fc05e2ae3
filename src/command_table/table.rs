//! The command table's entries: every command and subcommand with its
//! name, arity, flags, key positions, group and summary, and its id, by
//! which `commands` finds the handler. Ids are dense, in table order
//! (a command, then its subcommands); a new entry takes the next one (a
//! test says which).

use super::{cmd, container, help, Command};

/// The families, in the order COMMAND lists them.
pub(super) static FAMILIES: &[&[Command]] = &[
    CONNECTION,
    ACL,
    STRINGS,
    BITS,
    HLL,
    KEYS,
    MIGRATE,
    SORT,
    EXPIRE,
    HASHES,
    LISTS,
    SETS,
    ZSETS,
    GEO,
    STREAMS,
    SERVER,
    TRANSACTIONS,
    PUBSUB,
    SCRIPTING,
    REPLICATION,
    CLUSTER,
    SET_MEMBER_TTLS,
    ZSET_MEMBER_TTLS,
    KEYDB_MEMBER_TTLS,
    STAMPEDE,
];

/// How many entries the table has (the next free id).
pub const COUNT: usize = 415;

#[rustfmt::skip]
static CONNECTION: &[Command] = &[
    cmd!(0, "ping", -1, ["fast"], (0, 0, 0), "connection", "Returns the server's liveliness response."),
    cmd!(1, "echo", 2, ["fast", "loading", "stale"], (0, 0, 0), "connection", "Returns the given string."),
    cmd!(2, "quit", -1, ["fast", "noauth", "allow_busy", "noscript", "loading", "stale"], (0, 0, 0), "connection", "Closes the connection."),
    cmd!(3, "select", 2, ["fast", "loading", "stale"], (0, 0, 0), "connection", "Changes the selected database."),
    cmd!(4, "hello", -1, ["fast", "noauth", "allow_busy", "noscript", "loading", "stale"], (0, 0, 0), "connection", "Handshakes with the server."),
    cmd!(5, "reset", 1, ["fast", "noauth", "allow_busy", "noscript", "loading", "stale"], (0, 0, 0), "connection", "Resets the connection."),
    cmd!(6, "auth", -2, ["fast", "noauth", "allow_busy", "noscript", "loading", "stale"], (0, 0, 0), "connection", "Authenticates the connection."),
    container!(7, "client", CLIENT_SUBCOMMANDS, "connection", "A container for client connection commands."),
];

#[rustfmt::skip]
static CLIENT_SUBCOMMANDS: &[Command] = &[
    cmd!(8, "id", 2, ["noscript", "loading", "stale"], (0, 0, 0), "connection", "Returns the unique client ID of the connection."),
    cmd!(9, "setname", 3, ["noscript", "loading", "stale"], (0, 0, 0), "connection", "Sets the connection name."),
    cmd!(10, "getname", 2, ["noscript", "loading", "stale"], (0, 0, 0), "connection", "Returns the name of the connection."),
    cmd!(11, "list", -2, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "connection", "Lists open connections."),
    cmd!(12, "info", 2, ["noscript", "loading", "stale"], (0, 0, 0), "connection", "Returns information about the connection."),
    cmd!(13, "kill", -3, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "connection", "Terminates open connections."),
    cmd!(14, "unblock", -3, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "connection", "Unblocks a client blocked by a blocking command from a different connection."),
    cmd!(15, "setinfo", 4, [], (0, 0, 0), "connection", "Sets information specific to the client."),
    cmd!(16, "no-evict", 3, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "connection", "Sets the client eviction mode of the connection."),
    cmd!(17, "reply", 3, ["noscript", "loading", "stale"], (0, 0, 0), "connection", "Instructs the server whether to reply to commands."),
    cmd!(18, "getredir", 2, ["noscript", "loading", "stale"], (0, 0, 0), "connection", "Returns the client ID to which the connection's tracking notifications are redirected."),
    cmd!(19, "tracking", -3, ["noscript", "loading", "stale"], (0, 0, 0), "connection", "Controls server-assisted client-side caching for the connection."),
    cmd!(20, "caching", 3, ["noscript", "loading", "stale"], (0, 0, 0), "connection", "Instructs the server whether to track the keys in the next request."),
    cmd!(21, "trackinginfo", 2, ["noscript", "loading", "stale"], (0, 0, 0), "connection", "Returns information about server-assisted client-side caching for the connection."),
    cmd!(22, "pause", -3, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "connection", "Suspends commands processing."),
    cmd!(23, "unpause", 2, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "connection", "Resumes processing commands from paused clients."),
    cmd!(24, "no-touch", 3, [], (0, 0, 0), "connection", "Controls whether commands sent by the client affect the LRU/LFU of accessed keys."),
    cmd!(25, "help", 2, ["loading", "stale"], (0, 0, 0), "connection", "Returns helpful text about the different subcommands."),
];

#[rustfmt::skip]
static ACL: &[Command] = &[
    container!(26, "acl", ACL_SUBCOMMANDS, "server", "A container for Access List Control commands."),
];

#[rustfmt::skip]
static ACL_SUBCOMMANDS: &[Command] = &[
    cmd!(27, "setuser", -3, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Creates and modifies an ACL user and its rules."),
    cmd!(28, "getuser", 3, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Lists the ACL rules of a user."),
    cmd!(29, "deluser", -3, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Deletes ACL users, and terminates their connections."),
    cmd!(30, "list", 2, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Dumps the effective rules in ACL file format."),
    cmd!(31, "users", 2, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Lists all ACL users."),
    cmd!(32, "whoami", 2, ["noscript", "loading", "stale"], (0, 0, 0), "server", "Returns the authenticated username of the current connection."),
    cmd!(33, "cat", -2, ["noscript", "loading", "stale"], (0, 0, 0), "server", "Lists the ACL categories, or the commands inside a category."),
    cmd!(34, "log", -2, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Lists recent security events generated due to ACL rules."),
    cmd!(35, "genpass", -2, ["noscript", "loading", "stale"], (0, 0, 0), "server", "Generates a pseudorandom, secure password that can be used to identify ACL users."),
    cmd!(36, "dryrun", -4, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Simulates the execution of a command by a user, without executing the command."),
    cmd!(37, "save", 2, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Saves the effective ACL rules in the configured ACL file."),
    cmd!(38, "load", 2, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Reloads the rules from the configured ACL file."),
    help!(39, "server"),
];

#[rustfmt::skip]
static STRINGS: &[Command] = &[
    cmd!(40, "get", 2, ["readonly", "fast"], (1, 1, 1), "string", "Returns the string value of a key."),
    cmd!(41, "set", -3, ["write", "denyoom"], (1, 1, 1), "string", "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist."),
    cmd!(42, "setnx", 3, ["write", "denyoom", "fast"], (1, 1, 1), "string", "Set the string value of a key only when the key doesn't exist."),
    cmd!(43, "setex", 4, ["write", "denyoom"], (1, 1, 1), "string", "Sets the string value and expiration time of a key. Creates the key if it doesn't exist."),
    cmd!(44, "psetex", 4, ["write", "denyoom"], (1, 1, 1), "string", "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist."),
    cmd!(45, "getex", -2, ["write", "fast"], (1, 1, 1), "string", "Returns the string value of a key after setting its expiration time."),
    cmd!(46, "getdel", 2, ["write", "fast"], (1, 1, 1), "string", "Returns the string value of a key after deleting the key."),
    cmd!(47, "getset", 3, ["write", "denyoom", "fast"], (1, 1, 1), "string", "Returns the previous string value of a key after setting it to a new value."),
    cmd!(48, "mget", -2, ["readonly", "fast"], (1, -1, 1), "string", "Atomically returns the string values of one or more keys."),
    cmd!(49, "mset", -3, ["write", "denyoom"], (1, -1, 2), "string", "Atomically creates or modifies the string values of one or more keys."),
    cmd!(50, "msetnx", -3, ["write", "denyoom"], (1, -1, 2), "string", "Atomically modifies the string values of one or more keys only when all keys don't exist."),
    cmd!(51, "append", 3, ["write", "denyoom", "fast"], (1, 1, 1), "string", "Appends a string to the value of a key. Creates the key if it doesn't exist."),
    cmd!(52, "strlen", 2, ["readonly", "fast"], (1, 1, 1), "string", "Returns the length of a string value."),
    cmd!(53, "getrange", 4, ["readonly"], (1, 1, 1), "string", "Returns a substring of the string stored at a key."),
    cmd!(54, "substr", 4, ["readonly"], (1, 1, 1), "string", "Returns a substring from a string value."),
    cmd!(55, "setrange", 4, ["write", "denyoom"], (1, 1, 1), "string", "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist."),
    cmd!(56, "lcs", -3, ["readonly"], (1, 2, 1), "string", "Finds the longest common substring."),
    cmd!(57, "incr", 2, ["write", "denyoom", "fast"], (1, 1, 1), "string", "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist."),
    cmd!(58, "decr", 2, ["write", "denyoom", "fast"], (1, 1, 1), "string", "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist."),
    cmd!(59, "incrby", 3, ["write", "denyoom", "fast"], (1, 1, 1), "string", "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist."),
    cmd!(60, "decrby", 3, ["write", "denyoom", "fast"], (1, 1, 1), "string", "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist."),
    cmd!(61, "incrbyfloat", 3, ["write", "denyoom", "fast"], (1, 1, 1), "string", "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist."),
];

#[rustfmt::skip]
static BITS: &[Command] = &[
    cmd!(62, "setbit", 4, ["write", "denyoom"], (1, 1, 1), "bitmap", "Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist."),
    cmd!(63, "getbit", 3, ["readonly", "fast"], (1, 1, 1), "bitmap", "Returns a bit value by offset."),
    cmd!(64, "bitcount", -2, ["readonly"], (1, 1, 1), "bitmap", "Counts the number of set bits (population counting) in a string."),
    cmd!(65, "bitpos", -3, ["readonly"], (1, 1, 1), "bitmap", "Finds the first set (1) or clear (0) bit in a string."),
    cmd!(66, "bitop", -4, ["write", "denyoom"], (2, -1, 1), "bitmap", "Performs bitwise operations on multiple strings, and stores the result."),
    cmd!(67, "bitfield", -2, ["write", "denyoom"], (1, 1, 1), "bitmap", "Performs arbitrary bitfield integer operations on strings."),
    cmd!(68, "bitfield_ro", -2, ["readonly", "fast"], (1, 1, 1), "bitmap", "Performs arbitrary read-only bitfield integer operations on strings."),
];

#[rustfmt::skip]
static HLL: &[Command] = &[
    cmd!(69, "pfadd", -2, ["write", "denyoom", "fast"], (1, 1, 1), "hyperloglog", "Adds elements to a HyperLogLog key. Creates the key if it doesn't exist."),
    cmd!(70, "pfcount", -2, ["readonly", "may_replicate"], (1, -1, 1), "hyperloglog", "Returns the approximated cardinality of the set(s) observed by the HyperLogLog key(s)."),
    cmd!(71, "pfmerge", -2, ["write", "denyoom"], (1, -1, 1), "hyperloglog", "Merges one or more HyperLogLog values into a single key."),
    cmd!(72, "pfdebug", 3, ["write", "denyoom", "admin"], (2, 2, 1), "hyperloglog", "Internal commands for debugging HyperLogLog values."),
    cmd!(73, "pfselftest", 1, ["admin"], (0, 0, 0), "hyperloglog", "An internal command for testing HyperLogLog values."),
];

#[rustfmt::skip]
static KEYS: &[Command] = &[
    cmd!(74, "del", -2, ["write"], (1, -1, 1), "generic", "Deletes one or more keys."),
    cmd!(75, "unlink", -2, ["write", "fast"], (1, -1, 1), "generic", "Asynchronously deletes one or more keys."),
    cmd!(76, "exists", -2, ["readonly", "fast"], (1, -1, 1), "generic", "Determines whether one or more keys exist."),
    cmd!(77, "touch", -2, ["readonly", "fast"], (1, -1, 1), "generic", "Returns the number of existing keys out of those specified after updating the time they were last accessed."),
    container!(78, "object", OBJECT_SUBCOMMANDS, "generic", "A container for object introspection commands."),
    cmd!(84, "type", 2, ["readonly", "fast"], (1, 1, 1), "generic", "Determines the type of value stored at a key."),
    cmd!(85, "rename", 3, ["write"], (1, 2, 1), "generic", "Renames a key and overwrites the destination."),
    cmd!(86, "renamenx", 3, ["write", "fast"], (1, 2, 1), "generic", "Renames a key only when the target key name doesn't exist."),
    cmd!(87, "copy", -3, ["write", "denyoom"], (1, 2, 1), "generic", "Copies the value of a key to a new key."),
    cmd!(88, "move", 3, ["write", "fast"], (1, 1, 1), "generic", "Moves a key to another database."),
    cmd!(89, "dump", 2, ["readonly"], (1, 1, 1), "generic", "Returns a serialized representation of the value stored at a key."),
    cmd!(90, "restore", -4, ["write", "denyoom"], (1, 1, 1), "generic", "Creates a key from the serialized representation of a value."),
    cmd!(91, "swapdb", 3, ["write", "fast"], (0, 0, 0), "server", "Swaps two Redis databases."),
    cmd!(92, "keys", 2, ["readonly"], (0, 0, 0), "generic", "Returns all key names that match a pattern."),
    cmd!(93, "scan", -2, ["readonly"], (0, 0, 0), "generic", "Iterates over the key names in the database."),
    cmd!(94, "randomkey", 1, ["readonly"], (0, 0, 0), "generic", "Returns a random key name from the database."),
    cmd!(95, "dbsize", 1, ["readonly", "fast"], (0, 0, 0), "server", "Returns the number of keys in the database."),
    cmd!(96, "flushdb", -1, ["write"], (0, 0, 0), "server", "Removes all keys from the current database."),
    cmd!(97, "flushall", -1, ["write"], (0, 0, 0), "server", "Removes all keys from all databases."),
];

#[rustfmt::skip]
static OBJECT_SUBCOMMANDS: &[Command] = &[
    cmd!(79, "encoding", 3, ["readonly"], (2, 2, 1), "generic", "Returns the internal encoding of a Redis object."),
    cmd!(80, "idletime", 3, ["readonly"], (2, 2, 1), "generic", "Returns the time since the last access to a Redis object."),
    cmd!(81, "freq", 3, ["readonly"], (2, 2, 1), "generic", "Returns the logarithmic access frequency counter of a Redis object."),
    cmd!(82, "refcount", 3, ["readonly"], (2, 2, 1), "generic", "Returns the reference count of a value of a key."),
    help!(83, "generic"),
];

#[rustfmt::skip]
static MIGRATE: &[Command] = &[
    cmd!(98, "migrate", -6, ["write"], (3, 3, 1), "generic", "Atomically transfers a key from one Redis instance to another."),
];

#[rustfmt::skip]
static SORT: &[Command] = &[
    cmd!(99, "sort", -2, ["write", "denyoom"], (1, 1, 1), "generic", "Sorts the elements in a list, a set, or a sorted set, optionally storing the result."),
    cmd!(100, "sort_ro", -2, ["readonly"], (1, 1, 1), "generic", "Returns the sorted elements of a list, a set, or a sorted set."),
];

#[rustfmt::skip]
static EXPIRE: &[Command] = &[
    cmd!(101, "expire", -3, ["write", "fast"], (1, 1, 1), "generic", "Sets the expiration time of a key in seconds."),
    cmd!(102, "pexpire", -3, ["write", "fast"], (1, 1, 1), "generic", "Sets the expiration time of a key in milliseconds."),
    cmd!(103, "expireat", -3, ["write", "fast"], (1, 1, 1), "generic", "Sets the expiration time of a key to a Unix timestamp."),
    cmd!(104, "pexpireat", -3, ["write", "fast"], (1, 1, 1), "generic", "Sets the expiration time of a key to a Unix milliseconds timestamp."),
    cmd!(105, "ttl", -2, ["readonly", "fast"], (1, 1, 1), "generic", "Returns the expiration time in seconds of a key."),
    cmd!(106, "pttl", -2, ["readonly", "fast"], (1, 1, 1), "generic", "Returns the expiration time in milliseconds of a key."),
    cmd!(107, "expiretime", 2, ["readonly", "fast"], (1, 1, 1), "generic", "Returns the expiration time of a key as a Unix timestamp."),
    cmd!(108, "pexpiretime", 2, ["readonly", "fast"], (1, 1, 1), "generic", "Returns the expiration time of a key as a Unix milliseconds timestamp."),
    cmd!(109, "persist", 2, ["write", "fast"], (1, 1, 1), "generic", "Removes the expiration time of a key."),
];

#[rustfmt::skip]
static HASHES: &[Command] = &[
    cmd!(110, "hset", -4, ["write", "denyoom", "fast"], (1, 1, 1), "hash", "Creates or modifies the value of a field in a hash."),
    cmd!(111, "hmset", -4, ["write", "denyoom", "fast"], (1, 1, 1), "hash", "Sets the values of multiple fields."),
    cmd!(112, "hsetnx", 4, ["write", "denyoom", "fast"], (1, 1, 1), "hash", "Sets the value of a field in a hash only when the field doesn't exist."),
    cmd!(113, "hget", 3, ["readonly", "fast"], (1, 1, 1), "hash", "Returns the value of a field in a hash."),
    cmd!(114, "hmget", -3, ["readonly", "fast"], (1, 1, 1), "hash", "Returns the values of all fields in a hash."),
    cmd!(115, "hdel", -3, ["write", "fast"], (1, 1, 1), "hash", "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain."),
    cmd!(116, "hlen", 2, ["readonly", "fast"], (1, 1, 1), "hash", "Returns the number of fields in a hash."),
    cmd!(117, "hexists", 3, ["readonly", "fast"], (1, 1, 1), "hash", "Determines whether a field exists in a hash."),
    cmd!(118, "hkeys", 2, ["readonly"], (1, 1, 1), "hash", "Returns all fields in a hash."),
    cmd!(119, "hvals", 2, ["readonly"], (1, 1, 1), "hash", "Returns all values in a hash."),
    cmd!(120, "hgetall", 2, ["readonly"], (1, 1, 1), "hash", "Returns all fields and values in a hash."),
    cmd!(121, "hincrby", 4, ["write", "denyoom", "fast"], (1, 1, 1), "hash", "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist."),
    cmd!(122, "hincrbyfloat", 4, ["write", "denyoom", "fast"], (1, 1, 1), "hash", "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist."),
    cmd!(123, "hstrlen", 3, ["readonly", "fast"], (1, 1, 1), "hash", "Returns the length of the value of a field."),
    cmd!(124, "hrandfield", -2, ["readonly"], (1, 1, 1), "hash", "Returns one or more random fields from a hash."),
    cmd!(125, "hscan", -3, ["readonly"], (1, 1, 1), "hash", "Iterates over fields and values of a hash."),
    cmd!(126, "hexpire", -6, ["write", "denyoom", "fast"], (1, 1, 1), "hash", "Set expiry for hash field using relative time to expire (seconds)"),
    cmd!(127, "hpexpire", -6, ["write", "denyoom", "fast"], (1, 1, 1), "hash", "Set expiry for hash field using relative time to expire (milliseconds)"),
    cmd!(128, "hexpireat", -6, ["write", "denyoom", "fast"], (1, 1, 1), "hash", "Set expiry for hash field using an absolute Unix timestamp (seconds)"),
    cmd!(129, "hpexpireat", -6, ["write", "denyoom", "fast"], (1, 1, 1), "hash", "Set expiry for hash field using an absolute Unix timestamp (milliseconds)"),
    cmd!(130, "httl", -5, ["readonly", "fast"], (1, 1, 1), "hash", "Returns the TTL in seconds of a hash field."),
    cmd!(131, "hpttl", -5, ["readonly", "fast"], (1, 1, 1), "hash", "Returns the TTL in milliseconds of a hash field."),
    cmd!(132, "hexpiretime", -5, ["readonly", "fast"], (1, 1, 1), "hash", "Returns the expiration time of a hash field as a Unix timestamp, in seconds."),
    cmd!(133, "hpexpiretime", -5, ["readonly", "fast"], (1, 1, 1), "hash", "Returns the expiration time of a hash field as a Unix timestamp, in msec."),
    cmd!(134, "hpersist", -5, ["write", "fast"], (1, 1, 1), "hash", "Removes the expiration time for each specified field"),
    cmd!(135, "hgetdel", -5, ["write", "fast"], (1, 1, 1), "hash", "Returns the value of a field and deletes it from the hash."),
    cmd!(136, "hgetex", -5, ["write", "fast"], (1, 1, 1), "hash", "Get the value of one or more fields of a given hash key, and optionally set their expiration."),
    cmd!(137, "hsetex", -6, ["write", "denyoom", "fast"], (1, 1, 1), "hash", "Set the value of one or more fields of a given hash key, and optionally set their expiration."),
];

#[rustfmt::skip]
static LISTS: &[Command] = &[
    cmd!(138, "lpush", -3, ["write", "denyoom", "fast"], (1, 1, 1), "list", "Prepends one or more elements to a list. Creates the key if it doesn't exist."),
    cmd!(139, "rpush", -3, ["write", "denyoom", "fast"], (1, 1, 1), "list", "Appends one or more elements to a list. Creates the key if it doesn't exist."),
    cmd!(140, "lpushx", -3, ["write", "denyoom", "fast"], (1, 1, 1), "list", "Prepends one or more elements to a list only when the list exists."),
    cmd!(141, "rpushx", -3, ["write", "denyoom", "fast"], (1, 1, 1), "list", "Appends an element to a list only when the list exists."),
    cmd!(142, "lpop", -2, ["write", "fast"], (1, 1, 1), "list", "Returns the first elements in a list after removing it. Deletes the list if the last element was popped."),
    cmd!(143, "rpop", -2, ["write", "fast"], (1, 1, 1), "list", "Returns and removes the last elements of a list. Deletes the list if the last element was popped."),
    cmd!(144, "llen", 2, ["readonly", "fast"], (1, 1, 1), "list", "Returns the length of a list."),
    cmd!(145, "lrange", 4, ["readonly"], (1, 1, 1), "list", "Returns a range of elements from a list."),
    cmd!(146, "lindex", 3, ["readonly"], (1, 1, 1), "list", "Returns an element from a list by its index."),
    cmd!(147, "lset", 4, ["write", "denyoom"], (1, 1, 1), "list", "Sets the value of an element in a list by its index."),
    cmd!(148, "linsert", 5, ["write", "denyoom"], (1, 1, 1), "list", "Inserts an element before or after another element in a list."),
    cmd!(149, "lrem", 4, ["write"], (1, 1, 1), "list", "Removes elements from a list. Deletes the list if the last element was removed."),
    cmd!(150, "ltrim", 4, ["write"], (1, 1, 1), "list", "Removes elements from both ends a list. Deletes the list if all elements were trimmed."),
    cmd!(151, "lpos", -3, ["readonly"], (1, 1, 1), "list", "Returns the index of matching elements in a list."),
    cmd!(152, "lmove", 5, ["write", "denyoom"], (1, 2, 1), "list", "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved."),
    cmd!(153, "rpoplpush", 3, ["write", "denyoom"], (1, 2, 1), "list", "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped."),
    cmd!(154, "lmpop", -4, ["write"], (0, 0, 0), "list", "Returns multiple elements from a list after removing them. Deletes the list if the last element was popped.").with_numkeys(1),
    cmd!(155, "blpop", -3, ["write", "noscript", "blocking"], (1, -2, 1), "list", "Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped."),
    cmd!(156, "brpop", -3, ["write", "noscript", "blocking"], (1, -2, 1), "list", "Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped."),
    cmd!(157, "brpoplpush", 4, ["write", "denyoom", "noscript", "blocking"], (1, 2, 1), "list", "Pops an element from a list, pushes it to another list and returns it. Block until an element is available otherwise. Deletes the list if the last element was popped."),
    cmd!(158, "blmove", 6, ["write", "denyoom", "noscript", "blocking"], (1, 2, 1), "list", "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise. Deletes the list if the last element was popped."),
    cmd!(159, "blmpop", -5, ["write", "blocking"], (0, 0, 0), "list", "Pops the first element from one of multiple lists. Blocks until an element is available otherwise. Deletes the list if the last element was popped.").with_numkeys(2),
];

#[rustfmt::skip]
static SETS: &[Command] = &[
    cmd!(160, "sadd", -3, ["write", "denyoom", "fast"], (1, 1, 1), "set", "Adds one or more members to a set. Creates the key if it doesn't exist."),
    cmd!(161, "srem", -3, ["write", "fast"], (1, 1, 1), "set", "Removes one or more members from a set. Deletes the set if the last member was removed."),
    cmd!(162, "smembers", 2, ["readonly"], (1, 1, 1), "set", "Returns all members of a set."),
    cmd!(163, "sismember", 3, ["readonly", "fast"], (1, 1, 1), "set", "Determines whether a member belongs to a set."),
    cmd!(164, "smismember", -3, ["readonly", "fast"], (1, 1, 1), "set", "Determines whether multiple members belong to a set."),
    cmd!(165, "scard", 2, ["readonly", "fast"], (1, 1, 1), "set", "Returns the number of members in a set."),
    cmd!(166, "spop", -2, ["write", "fast"], (1, 1, 1), "set", "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped."),
    cmd!(167, "srandmember", -2, ["readonly"], (1, 1, 1), "set", "Get one or multiple random members from a set"),
    cmd!(168, "smove", 4, ["write", "fast"], (1, 2, 1), "set", "Moves a member from one set to another."),
    cmd!(169, "sinter", -2, ["readonly"], (1, -1, 1), "set", "Returns the intersect of multiple sets."),
    cmd!(170, "sunion", -2, ["readonly"], (1, -1, 1), "set", "Returns the union of multiple sets."),
    cmd!(171, "sdiff", -2, ["readonly"], (1, -1, 1), "set", "Returns the difference of multiple sets."),
    cmd!(172, "sinterstore", -3, ["write", "denyoom"], (1, -1, 1), "set", "Stores the intersect of multiple sets in a key."),
    cmd!(173, "sunionstore", -3, ["write", "denyoom"], (1, -1, 1), "set", "Stores the union of multiple sets in a key."),
    cmd!(174, "sdiffstore", -3, ["write", "denyoom"], (1, -1, 1), "set", "Stores the difference of multiple sets in a key."),
    cmd!(175, "sintercard", -3, ["readonly"], (0, 0, 0), "set", "Returns the number of members of the intersect of multiple sets.").with_numkeys(1),
    cmd!(176, "sscan", -3, ["readonly"], (1, 1, 1), "set", "Iterates over members of a set."),
];

#[rustfmt::skip]
static ZSETS: &[Command] = &[
    cmd!(177, "zadd", -4, ["write", "denyoom", "fast"], (1, 1, 1), "sorted-set", "Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist."),
    cmd!(178, "zrangestore", -5, ["write", "denyoom"], (1, 2, 1), "sorted-set", "Stores a range of members from sorted set in a key."),
    cmd!(179, "zincrby", 4, ["write", "denyoom", "fast"], (1, 1, 1), "sorted-set", "Increments the score of a member in a sorted set."),
    cmd!(180, "zrem", -3, ["write", "fast"], (1, 1, 1), "sorted-set", "Removes one or more members from a sorted set. Deletes the sorted set if all members were removed."),
    cmd!(181, "zscore", 3, ["readonly", "fast"], (1, 1, 1), "sorted-set", "Returns the score of a member in a sorted set."),
    cmd!(182, "zmscore", -3, ["readonly", "fast"], (1, 1, 1), "sorted-set", "Returns the score of one or more members in a sorted set."),
    cmd!(183, "zcard", 2, ["readonly", "fast"], (1, 1, 1), "sorted-set", "Returns the number of members in a sorted set."),
    cmd!(184, "zcount", 4, ["readonly", "fast"], (1, 1, 1), "sorted-set", "Returns the count of members in a sorted set that have scores within a range."),
    cmd!(185, "zlexcount", 4, ["readonly", "fast"], (1, 1, 1), "sorted-set", "Returns the number of members in a sorted set within a lexicographical range."),
    cmd!(186, "zrank", -3, ["readonly", "fast"], (1, 1, 1), "sorted-set", "Returns the index of a member in a sorted set ordered by ascending scores."),
    cmd!(187, "zrevrank", -3, ["readonly", "fast"], (1, 1, 1), "sorted-set", "Returns the index of a member in a sorted set ordered by descending scores."),
    cmd!(188, "zrange", -4, ["readonly"], (1, 1, 1), "sorted-set", "Returns members in a sorted set within a range of indexes."),
    cmd!(189, "zrevrange", -4, ["readonly"], (1, 1, 1), "sorted-set", "Returns members in a sorted set within a range of indexes in reverse order."),
    cmd!(190, "zrangebyscore", -4, ["readonly"], (1, 1, 1), "sorted-set", "Returns members in a sorted set within a range of scores."),
    cmd!(191, "zrevrangebyscore", -4, ["readonly"], (1, 1, 1), "sorted-set", "Returns members in a sorted set within a range of scores in reverse order."),
    cmd!(192, "zrangebylex", -4, ["readonly"], (1, 1, 1), "sorted-set", "Returns members in a sorted set within a lexicographical range."),
    cmd!(193, "zrevrangebylex", -4, ["readonly"], (1, 1, 1), "sorted-set", "Returns members in a sorted set within a lexicographical range in reverse order."),
    cmd!(194, "zremrangebyrank", 4, ["write"], (1, 1, 1), "sorted-set", "Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members were removed."),
    cmd!(195, "zremrangebyscore", 4, ["write"], (1, 1, 1), "sorted-set", "Removes members in a sorted set within a range of scores. Deletes the sorted set if all members were removed."),
    cmd!(196, "zremrangebylex", 4, ["write"], (1, 1, 1), "sorted-set", "Removes members in a sorted set within a lexicographical range. Deletes the sorted set if all members were removed."),
    cmd!(197, "zpopmin", -2, ["write", "fast"], (1, 1, 1), "sorted-set", "Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped."),
    cmd!(198, "zpopmax", -2, ["write", "fast"], (1, 1, 1), "sorted-set", "Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped."),
    cmd!(199, "zmpop", -4, ["write"], (0, 0, 0), "sorted-set", "Returns the highest- or lowest-scoring members from one or more sorted sets after removing them. Deletes the sorted set if the last member was popped.").with_numkeys(1),
    cmd!(200, "bzpopmin", -3, ["write", "noscript", "blocking", "fast"], (1, -2, 1), "sorted-set", "Removes and returns the member with the lowest score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped."),
    cmd!(201, "bzpopmax", -3, ["write", "noscript", "blocking", "fast"], (1, -2, 1), "sorted-set", "Removes and returns the member with the highest score from one or more sorted sets. Blocks until a member available otherwise.  Deletes the sorted set if the last element was popped."),
    cmd!(202, "bzmpop", -5, ["write", "blocking"], (0, 0, 0), "sorted-set", "Removes and returns a member by score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped.").with_numkeys(2),
    cmd!(203, "zrandmember", -2, ["readonly"], (1, 1, 1), "sorted-set", "Returns one or more random members from a sorted set."),
    cmd!(204, "zscan", -3, ["readonly"], (1, 1, 1), "sorted-set", "Iterates over members and scores of a sorted set."),
    cmd!(205, "zunionstore", -4, ["write", "denyoom"], (1, 1, 1), "sorted-set", "Stores the union of multiple sorted sets in a key.").with_numkeys(2),
    cmd!(206, "zinterstore", -4, ["write", "denyoom"], (1, 1, 1), "sorted-set", "Stores the intersect of multiple sorted sets in a key.").with_numkeys(2),
    cmd!(207, "zdiffstore", -4, ["write", "denyoom"], (1, 1, 1), "sorted-set", "Stores the difference of multiple sorted sets in a key.").with_numkeys(2),
    cmd!(208, "zunion", -3, ["readonly"], (0, 0, 0), "sorted-set", "Returns the union of multiple sorted sets.").with_numkeys(1),
    cmd!(209, "zinter", -3, ["readonly"], (0, 0, 0), "sorted-set", "Returns the intersect of multiple sorted sets.").with_numkeys(1),
    cmd!(210, "zdiff", -3, ["readonly"], (0, 0, 0), "sorted-set", "Returns the difference between multiple sorted sets.").with_numkeys(1),
    cmd!(211, "zintercard", -3, ["readonly"], (0, 0, 0), "sorted-set", "Returns the number of members of the intersect of multiple sorted sets.").with_numkeys(1),
];

#[rustfmt::skip]
static GEO: &[Command] = &[
    cmd!(212, "geoadd", -5, ["write", "denyoom"], (1, 1, 1), "geo", "Adds one or more members to a geospatial index. The key is created if it doesn't exist."),
    cmd!(213, "geodist", -4, ["readonly"], (1, 1, 1), "geo", "Returns the distance between two members of a geospatial index."),
    cmd!(214, "geohash", -2, ["readonly"], (1, 1, 1), "geo", "Returns members from a geospatial index as geohash strings."),
    cmd!(215, "geopos", -2, ["readonly"], (1, 1, 1), "geo", "Returns the longitude and latitude of members from a geospatial index."),
    cmd!(216, "georadius", -6, ["write", "denyoom"], (1, 1, 1), "geo", "Queries a geospatial index for members within a distance from a coordinate, optionally stores the result."),
    cmd!(217, "georadius_ro", -6, ["readonly"], (1, 1, 1), "geo", "Returns members from a geospatial index that are within a distance from a coordinate."),
    cmd!(218, "georadiusbymember", -5, ["write", "denyoom"], (1, 1, 1), "geo", "Queries a geospatial index for members within a distance from a member, optionally stores the result."),
    cmd!(219, "georadiusbymember_ro", -5, ["readonly"], (1, 1, 1), "geo", "Returns members from a geospatial index that are within a distance from a member."),
    cmd!(220, "geosearch", -7, ["readonly"], (1, 1, 1), "geo", "Queries a geospatial index for members inside an area of a box or a circle."),
    cmd!(221, "geosearchstore", -8, ["write", "denyoom"], (1, 2, 1), "geo", "Queries a geospatial index for members inside an area of a box or a circle, optionally stores the result."),
];

#[rustfmt::skip]
static STREAMS: &[Command] = &[
    cmd!(222, "xadd", -5, ["write", "denyoom", "fast"], (1, 1, 1), "stream", "Appends a new message to a stream. Creates the key if it doesn't exist."),
    cmd!(223, "xlen", 2, ["readonly", "fast"], (1, 1, 1), "stream", "Return the number of messages in a stream."),
    cmd!(224, "xrange", -4, ["readonly"], (1, 1, 1), "stream", "Returns the messages from a stream within a range of IDs."),
    cmd!(225, "xrevrange", -4, ["readonly"], (1, 1, 1), "stream", "Returns the messages from a stream within a range of IDs in reverse order."),
    cmd!(226, "xdel", -3, ["write", "fast"], (1, 1, 1), "stream", "Returns the number of messages after removing them from a stream."),
    cmd!(227, "xtrim", -4, ["write"], (1, 1, 1), "stream", "Deletes messages from the beginning of a stream."),
    cmd!(228, "xsetid", -3, ["write", "denyoom", "fast"], (1, 1, 1), "stream", "An internal command for replicating stream values."),
    cmd!(229, "xread", -4, ["readonly", "blocking"], (0, 0, 0), "stream", "Returns messages from multiple streams with IDs greater than the ones requested. Blocks until a message is available otherwise."),
    cmd!(230, "xreadgroup", -7, ["write", "blocking"], (0, 0, 0), "stream", "Returns new or historical messages from a stream for a consumer in a group. Blocks until a message is available otherwise."),
    cmd!(231, "xack", -4, ["write", "fast"], (1, 1, 1), "stream", "Returns the number of messages that were successfully acknowledged by the consumer group member of a stream."),
    cmd!(232, "xpending", -3, ["readonly"], (1, 1, 1), "stream", "Returns the information and entries from a stream consumer group's pending entries list."),
    cmd!(233, "xclaim", -6, ["write", "fast"], (1, 1, 1), "stream", "Changes, or acquires, ownership of a message in a consumer group, as if the message was delivered a consumer group member."),
    cmd!(234, "xautoclaim", -6, ["write", "fast"], (1, 1, 1), "stream", "Changes, or acquires, ownership of messages in a consumer group, as if the messages were delivered to as consumer group member."),
    container!(235, "xgroup", XGROUP_SUBCOMMANDS, "stream", "A container for consumer groups commands."),
    container!(242, "xinfo", XINFO_SUBCOMMANDS, "stream", "A container for stream introspection commands."),
];

#[rustfmt::skip]
static XGROUP_SUBCOMMANDS: &[Command] = &[
    cmd!(236, "create", -5, ["write", "denyoom"], (2, 2, 1), "stream", "Creates a consumer group."),
    cmd!(237, "createconsumer", 5, ["write", "denyoom"], (2, 2, 1), "stream", "Creates a consumer in a consumer group."),
    cmd!(238, "delconsumer", 5, ["write"], (2, 2, 1), "stream", "Deletes a consumer from a consumer group."),
    cmd!(239, "destroy", 4, ["write"], (2, 2, 1), "stream", "Destroys a consumer group."),
    cmd!(240, "setid", -5, ["write"], (2, 2, 1), "stream", "Sets the last-delivered ID of a consumer group."),
    cmd!(241, "help", 2, ["loading", "stale"], (0, 0, 0), "stream", "Returns helpful text about the different subcommands."),
];

#[rustfmt::skip]
static XINFO_SUBCOMMANDS: &[Command] = &[
    cmd!(243, "consumers", 4, ["readonly"], (2, 2, 1), "stream", "Returns a list of the consumers in a consumer group."),
    cmd!(244, "groups", 3, ["readonly"], (2, 2, 1), "stream", "Returns a list of the consumer groups of a stream."),
    cmd!(245, "stream", -3, ["readonly"], (2, 2, 1), "stream", "Returns information about a stream."),
    cmd!(246, "help", 2, ["loading", "stale"], (0, 0, 0), "stream", "Returns helpful text about the different subcommands."),
];

#[rustfmt::skip]
static SERVER: &[Command] = &[
    Command { subcommands: COMMAND_SUBCOMMANDS, ..cmd!(247, "command", -1, ["loading", "stale"], (0, 0, 0), "server", "Returns detailed information about all commands.") },
    cmd!(255, "info", -1, ["loading", "stale"], (0, 0, 0), "server", "Returns information and statistics about the server."),
    cmd!(256, "monitor", 1, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Listens for all requests received by the server in real-time."),
    container!(257, "latency", LATENCY_SUBCOMMANDS, "server", "A container for latency diagnostics commands."),
    container!(265, "slowlog", SLOWLOG_SUBCOMMANDS, "server", "A container for slow log commands."),
    container!(270, "memory", MEMORY_SUBCOMMANDS, "server", "A container for memory diagnostics commands."),
    container!(277, "config", CONFIG_SUBCOMMANDS, "server", "A container for server configuration commands."),
    cmd!(283, "time", 1, ["loading", "stale", "fast"], (0, 0, 0), "server", "Returns the server time."),
    cmd!(284, "save", 1, ["admin", "noscript", "no_multi", "no_async_loading"], (0, 0, 0), "server", "Synchronously saves the database(s) to disk."),
    cmd!(285, "bgsave", -1, ["admin", "noscript", "no_async_loading"], (0, 0, 0), "server", "Asynchronously saves the database(s) to disk."),
    cmd!(286, "bgrewriteaof", 1, ["admin", "noscript", "no_async_loading"], (0, 0, 0), "server", "Asynchronously rewrites the append-only file to disk."),
    cmd!(287, "lastsave", 1, ["loading", "stale", "fast"], (0, 0, 0), "server", "Returns the Unix timestamp of the last successful save to disk."),
    Command { subcommands: DEBUG_SUBCOMMANDS, ..cmd!(288, "debug", -2, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "A container for debugging commands.") },
    cmd!(309, "shutdown", -1, ["admin", "noscript", "allow_busy", "loading", "no_multi", "stale"], (0, 0, 0), "server", "Synchronously saves the database(s) to disk and shuts down the Redis server."),
];

#[rustfmt::skip]
static COMMAND_SUBCOMMANDS: &[Command] = &[
    help!(248, "server"),
    cmd!(249, "getkeysandflags", -4, ["loading", "stale"], (0, 0, 0), "server", "Extracts the key names and access flags for an arbitrary command."),
    cmd!(250, "getkeys", -4, ["loading", "stale"], (0, 0, 0), "server", "Extracts the key names from an arbitrary command."),
    cmd!(251, "count", 2, ["loading", "stale"], (0, 0, 0), "server", "Returns a count of commands."),
    cmd!(252, "info", -2, ["loading", "stale"], (0, 0, 0), "server", "Returns information about one, multiple or all commands."),
    cmd!(253, "docs", -2, ["loading", "stale"], (0, 0, 0), "server", "Returns documentary information about one, multiple or all commands."),
    cmd!(254, "list", -2, ["loading", "stale"], (0, 0, 0), "server", "Returns a list of command names."),
];

#[rustfmt::skip]
static LATENCY_SUBCOMMANDS: &[Command] = &[
    cmd!(258, "latest", 2, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Returns the latest latency samples for all events."),
    cmd!(259, "history", 3, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Returns timestamp-latency samples for an event."),
    cmd!(260, "reset", -2, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Resets the latency data for one or more events."),
    cmd!(261, "histogram", -2, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Returns the cumulative distribution of latencies of a subset or all commands."),
    cmd!(262, "graph", 3, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Returns a latency graph for an event."),
    cmd!(263, "doctor", 2, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Returns a human-readable latency analysis report."),
    help!(264, "server"),
];

#[rustfmt::skip]
static SLOWLOG_SUBCOMMANDS: &[Command] = &[
    cmd!(266, "get", -2, ["admin", "loading", "stale"], (0, 0, 0), "server", "Returns the slow log's entries."),
    cmd!(267, "len", 2, ["admin", "loading", "stale"], (0, 0, 0), "server", "Returns the number of entries in the slow log."),
    cmd!(268, "reset", 2, ["admin", "loading", "stale"], (0, 0, 0), "server", "Clears all entries from the slow log."),
    cmd!(269, "help", 2, ["loading", "stale"], (0, 0, 0), "server", "Show helpful text about the different subcommands"),
];

#[rustfmt::skip]
static MEMORY_SUBCOMMANDS: &[Command] = &[
    cmd!(271, "usage", -3, ["readonly"], (2, 2, 1), "server", "Estimates the memory usage of a key."),
    cmd!(272, "stats", 2, [], (0, 0, 0), "server", "Returns details about memory usage."),
    cmd!(273, "doctor", 2, [], (0, 0, 0), "server", "Outputs a memory problems report."),
    cmd!(274, "purge", 2, [], (0, 0, 0), "server", "Asks the allocator to release memory."),
    cmd!(275, "malloc-stats", 2, [], (0, 0, 0), "server", "Returns the allocator statistics."),
    help!(276, "server"),
];

#[rustfmt::skip]
static CONFIG_SUBCOMMANDS: &[Command] = &[
    cmd!(278, "get", -3, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Returns the effective values of configuration parameters."),
    cmd!(279, "set", -4, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Sets configuration parameters in-flight."),
    cmd!(280, "rewrite", 2, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Persists the effective configuration to file."),
    cmd!(281, "resetstat", 2, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Resets the server's statistics."),
    help!(282, "server"),
];

#[rustfmt::skip]
static DEBUG_SUBCOMMANDS: &[Command] = &[
    help!(289, "server"),
    cmd!(290, "pause-cron", 3, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Stops (1) or resumes (0) the periodic cron."),
    cmd!(291, "log", 3, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Writes the message to the server log."),
    cmd!(292, "error", 3, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Replies with the string as an error."),
    cmd!(293, "sleep", 3, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Blocks the server for the given number of seconds."),
    cmd!(294, "set-active-expire", 3, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Switches the active expire cycle off (0) or on (1)."),
    cmd!(295, "reload", -2, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Saves the RDB file, empties the databases and loads the file back."),
    cmd!(296, "loadaof", 2, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Writes out the AOF buffer, empties the databases and loads the AOF back."),
    cmd!(297, "digest", 2, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Returns Redis's digest of the whole dataset."),
    cmd!(298, "digest-value", -2, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Returns Redis's digest of each named key's value."),
    cmd!(299, "protocol", 3, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Replies with a test value of the given RESP type."),
    cmd!(300, "set-disable-deny-scripts", 3, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Lets scripts call commands flagged noscript (1) or not (0)."),
    cmd!(301, "object", 3, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Shows low-level information about a key."),
    cmd!(302, "change-repl-id", 2, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Changes the replication ID."),
    cmd!(303, "stringmatch-test", 2, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Runs a fuzz test of the glob matcher."),
    cmd!(304, "populate", -3, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Creates string keys key:0 .. key:<count-1>."),
    cmd!(305, "listpack", 3, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Shows a listpack-encoded value's layout."),
    cmd!(306, "quicklist-packed-threshold", 3, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Sets the size above which list elements go in nodes of their own."),
    cmd!(307, "replybuffer", 4, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Tunes the reply buffer's resizing."),
    cmd!(308, "set-skip-checksum-validation", 3, ["admin", "noscript", "loading", "stale"], (0, 0, 0), "server", "Skips (1) or checks (0) the CRC-64 of RESTORE payloads."),
];

#[rustfmt::skip]
static TRANSACTIONS: &[Command] = &[
    cmd!(310, "multi", 1, ["noscript", "loading", "stale", "fast", "allow_busy"], (0, 0, 0), "transactions", "Starts a transaction."),
    cmd!(311, "exec", 1, ["noscript", "loading", "stale", "skip_slowlog"], (0, 0, 0), "transactions", "Executes all commands in a transaction."),
    cmd!(312, "discard", 1, ["noscript", "loading", "stale", "fast", "allow_busy"], (0, 0, 0), "transactions", "Discards a transaction."),
    cmd!(313, "watch", -2, ["noscript", "loading", "stale", "fast", "allow_busy"], (1, -1, 1), "transactions", "Monitors changes to keys to determine the execution of a transaction."),
    cmd!(314, "unwatch", 1, ["noscript", "loading", "stale", "fast", "allow_busy"], (0, 0, 0), "transactions", "Forgets about watched keys of a transaction."),
];

#[rustfmt::skip]
static PUBSUB: &[Command] = &[
    cmd!(315, "subscribe", -2, ["pubsub", "noscript", "loading", "stale"], (0, 0, 0), "pubsub", "Listens for messages published to channels."),
    cmd!(316, "unsubscribe", -1, ["pubsub", "noscript", "loading", "stale"], (0, 0, 0), "pubsub", "Stops listening to messages posted to channels."),
    cmd!(317, "psubscribe", -2, ["pubsub", "noscript", "loading", "stale"], (0, 0, 0), "pubsub", "Listens for messages published to channels that match one or more patterns."),
    cmd!(318, "punsubscribe", -1, ["pubsub", "noscript", "loading", "stale"], (0, 0, 0), "pubsub", "Stops listening to messages published to channels that match one or more patterns."),
    cmd!(319, "ssubscribe", -2, ["pubsub", "noscript", "loading", "stale"], (1, -1, 1), "pubsub", "Listens for messages published to shard channels."),
    cmd!(320, "sunsubscribe", -1, ["pubsub", "noscript", "loading", "stale"], (1, -1, 1), "pubsub", "Stops listening to messages posted to shard channels."),
    cmd!(321, "publish", 3, ["pubsub", "loading", "stale", "fast", "may_replicate"], (0, 0, 0), "pubsub", "Posts a message to a channel."),
    cmd!(322, "spublish", 3, ["pubsub", "loading", "stale", "fast", "may_replicate"], (1, 1, 1), "pubsub", "Post a message to a shard channel"),
    container!(323, "pubsub", PUBSUB_SUBCOMMANDS, "pubsub", "A container for Pub/Sub commands."),
];

#[rustfmt::skip]
static PUBSUB_SUBCOMMANDS: &[Command] = &[
    cmd!(324, "channels", -2, ["pubsub", "loading", "stale"], (0, 0, 0), "pubsub", "Returns the active channels."),
    cmd!(325, "numsub", -2, ["pubsub", "loading", "stale"], (0, 0, 0), "pubsub", "Returns a count of subscribers to channels."),
    cmd!(326, "numpat", 2, ["pubsub", "loading", "stale"], (0, 0, 0), "pubsub", "Returns a count of unique pattern subscriptions."),
    cmd!(327, "shardchannels", -2, ["pubsub", "loading", "stale"], (0, 0, 0), "pubsub", "Returns the active shard channels."),
    cmd!(328, "shardnumsub", -2, ["pubsub", "loading", "stale"], (0, 0, 0), "pubsub", "Returns the count of subscribers of shard channels."),
    help!(329, "pubsub"),
];

#[rustfmt::skip]
static SCRIPTING: &[Command] = &[
    cmd!(330, "eval", -3, ["noscript", "stale", "skip_monitor", "may_replicate", "no_mandatory_keys"], (0, 0, 0), "scripting", "Executes a server-side Lua script.").with_numkeys(2),
    cmd!(331, "evalsha", -3, ["noscript", "stale", "skip_monitor", "may_replicate", "no_mandatory_keys"], (0, 0, 0), "scripting", "Executes a server-side Lua script by SHA1 digest.").with_numkeys(2),
    cmd!(332, "eval_ro", -3, ["readonly", "noscript", "stale", "skip_monitor", "no_mandatory_keys"], (0, 0, 0), "scripting", "Executes a read-only server-side Lua script.").with_numkeys(2),
    cmd!(333, "evalsha_ro", -3, ["readonly", "noscript", "stale", "skip_monitor", "no_mandatory_keys"], (0, 0, 0), "scripting", "Executes a read-only server-side Lua script by SHA1 digest.").with_numkeys(2),
    cmd!(334, "fcall", -3, ["noscript", "stale", "skip_monitor", "may_replicate", "no_mandatory_keys"], (0, 0, 0), "scripting", "Invokes a function.").with_numkeys(2),
    cmd!(335, "fcall_ro", -3, ["readonly", "noscript", "stale", "skip_monitor", "no_mandatory_keys"], (0, 0, 0), "scripting", "Invokes a read-only function.").with_numkeys(2),
    container!(336, "function", FUNCTION_SUBCOMMANDS, "scripting", "A container for function commands."),
    container!(346, "script", SCRIPT_SUBCOMMANDS, "scripting", "A container for Lua scripts management commands."),
];

#[rustfmt::skip]
static FUNCTION_SUBCOMMANDS: &[Command] = &[
    cmd!(337, "load", -3, ["write", "denyoom", "noscript"], (0, 0, 0), "scripting", "Creates a library."),
    cmd!(338, "delete", 3, ["write", "noscript"], (0, 0, 0), "scripting", "Deletes a library and its functions."),
    cmd!(339, "flush", -2, ["write", "noscript"], (0, 0, 0), "scripting", "Deletes all libraries and functions."),
    cmd!(340, "list", -2, ["noscript"], (0, 0, 0), "scripting", "Returns information about all libraries."),
    cmd!(341, "dump", 2, ["noscript"], (0, 0, 0), "scripting", "Dumps all libraries into a serialized binary payload."),
    cmd!(342, "restore", -3, ["write", "denyoom", "noscript"], (0, 0, 0), "scripting", "Restores all libraries from a payload."),
    cmd!(343, "stats", 2, ["noscript", "allow_busy"], (0, 0, 0), "scripting", "Returns information about a function during execution."),
    cmd!(344, "kill", 2, ["noscript", "allow_busy"], (0, 0, 0), "scripting", "Terminates a function during execution."),
    help!(345, "scripting"),
];

#[rustfmt::skip]
static SCRIPT_SUBCOMMANDS: &[Command] = &[
    cmd!(347, "load", 3, ["noscript", "stale"], (0, 0, 0), "scripting", "Loads a server-side Lua script to the script cache."),
    cmd!(348, "exists", -3, ["noscript"], (0, 0, 0), "scripting", "Determines whether server-side Lua scripts exist in the script cache."),
    cmd!(349, "flush", -2, ["noscript"], (0, 0, 0), "scripting", "Removes all server-side Lua scripts from the script cache."),
    cmd!(350, "kill", 2, ["noscript", "allow_busy"], (0, 0, 0), "scripting", "Terminates a server-side Lua script during execution."),
    help!(351, "scripting"),
];

#[rustfmt::skip]
static REPLICATION: &[Command] = &[
    cmd!(352, "replicaof", 3, ["admin", "noscript", "stale", "no_async_loading"], (0, 0, 0), "server", "Configures a server as replica of another, or promotes it to a master."),
    cmd!(353, "slaveof", 3, ["admin", "noscript", "stale", "no_async_loading"], (0, 0, 0), "server", "Sets a Redis server as a replica of another, or promotes it to being a master."),
    cmd!(354, "role", 1, ["noscript", "loading", "stale", "fast"], (0, 0, 0), "server", "Returns the replication role."),
    cmd!(355, "psync", -3, ["admin", "noscript", "no_multi", "no_async_loading"], (0, 0, 0), "server", "An internal command used in replication."),
    cmd!(356, "sync", 1, ["admin", "noscript", "no_multi", "no_async_loading"], (0, 0, 0), "server", "An internal command used in replication."),
    cmd!(357, "wait", 3, ["noscript"], (0, 0, 0), "generic", "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed."),
    cmd!(358, "replconf", -1, ["admin", "noscript", "loading", "stale", "allow_busy"], (0, 0, 0), "server", "An internal command for configuring the replication stream."),
];

#[rustfmt::skip]
static CLUSTER: &[Command] = &[
    container!(359, "cluster", CLUSTER_SUBCOMMANDS, "cluster", "A container for cluster commands"),
    cmd!(387, "asking", 1, ["fast"], (0, 0, 0), "cluster", "Sent by cluster clients after an -ASK redirect"),
    cmd!(388, "readonly", 1, ["loading", "stale", "fast"], (0, 0, 0), "cluster", "Enables read queries for a connection to a cluster replica node"),
    cmd!(389, "readwrite", 1, ["loading", "stale", "fast"], (0, 0, 0), "cluster", "Disables read queries for a connection to a cluster replica node"),
    cmd!(390, "restore-asking", -4, ["write", "denyoom", "asking"], (1, 1, 1), "server", "An internal command for migrating keys in a cluster"),
];

#[rustfmt::skip]
static CLUSTER_SUBCOMMANDS: &[Command] = &[
    cmd!(360, "addslots", -3, ["admin", "stale", "no_async_loading"], (0, 0, 0), "cluster", "Assign new hash slots to receiving node"),
    cmd!(361, "addslotsrange", -4, ["admin", "stale", "no_async_loading"], (0, 0, 0), "cluster", "Assign new hash slots to receiving node"),
    cmd!(362, "bumpepoch", 2, ["admin", "stale", "no_async_loading"], (0, 0, 0), "cluster", "Advance the cluster config epoch"),
    cmd!(363, "count-failure-reports", 3, ["admin", "stale"], (0, 0, 0), "cluster", "Return the number of failure reports active for a given node"),
    cmd!(364, "countkeysinslot", 3, ["stale"], (0, 0, 0), "cluster", "Return the number of local keys in the specified hash slot"),
    cmd!(365, "delslots", -3, ["admin", "stale", "no_async_loading"], (0, 0, 0), "cluster", "Set hash slots as unbound in receiving node"),
    cmd!(366, "delslotsrange", -4, ["admin", "stale", "no_async_loading"], (0, 0, 0), "cluster", "Set hash slots as unbound in receiving node"),
    cmd!(367, "failover", -2, ["admin", "stale", "no_async_loading"], (0, 0, 0), "cluster", "Forces a replica to perform a manual failover of its master."),
    cmd!(368, "flushslots", 2, ["admin", "stale", "no_async_loading"], (0, 0, 0), "cluster", "Delete a node's own slots information"),
    cmd!(369, "forget", 3, ["admin", "stale", "no_async_loading"], (0, 0, 0), "cluster", "Remove a node from the nodes table"),
    cmd!(370, "getkeysinslot", 4, ["stale"], (0, 0, 0), "cluster", "Return local key names in the specified hash slot"),
    help!(371, "cluster"),
    cmd!(372, "info", 2, ["stale"], (0, 0, 0), "cluster", "Provides info about Redis Cluster node state"),
    cmd!(373, "keyslot", 3, ["stale"], (0, 0, 0), "cluster", "Returns the hash slot of the specified key"),
    cmd!(374, "links", 2, ["stale"], (0, 0, 0), "cluster", "Returns a list of all TCP links to and from peer nodes in cluster"),
    cmd!(375, "meet", -4, ["admin", "stale", "no_async_loading"], (0, 0, 0), "cluster", "Force a node cluster to handshake with another node"),
    cmd!(376, "myid", 2, ["stale"], (0, 0, 0), "cluster", "Return the node id"),
    cmd!(377, "nodes", 2, ["stale"], (0, 0, 0), "cluster", "Get Cluster config for the node"),
    cmd!(378, "replicas", 3, ["admin", "stale"], (0, 0, 0), "cluster", "List replica nodes of the specified master node"),
    cmd!(379, "replicate", 3, ["admin", "stale", "no_async_loading"], (0, 0, 0), "cluster", "Reconfigure a node as a replica of the specified master node"),
    cmd!(380, "reset", -2, ["admin", "noscript", "stale"], (0, 0, 0), "cluster", "Reset a Redis Cluster node"),
    cmd!(381, "saveconfig", 2, ["admin", "stale", "no_async_loading"], (0, 0, 0), "cluster", "Forces the node to save cluster state on disk"),
    cmd!(382, "set-config-epoch", 3, ["admin", "stale", "no_async_loading"], (0, 0, 0), "cluster", "Set the configuration epoch in a new node"),
    cmd!(383, "setslot", -4, ["admin", "stale", "no_async_loading"], (0, 0, 0), "cluster", "Bind a hash slot to a specific node"),
    cmd!(384, "shards", 2, ["stale"], (0, 0, 0), "cluster", "Get array of cluster slots to node mappings"),
    cmd!(385, "slaves", 3, ["admin", "stale"], (0, 0, 0), "cluster", "List replica nodes of the specified master node"),
    cmd!(386, "slots", 2, ["stale"], (0, 0, 0), "cluster", "Get array of Cluster slot to node mappings"),
];

/// Redis 8.12's set member expiry (listed last: the ids before stay).
static SET_MEMBER_TTLS: &[Command] = &[
    cmd!(
        391,
        "sexpire",
        -6,
        ["write", "denyoom", "fast"],
        (1, 1, 1),
        "set",
        "Set expiry for set member using relative time to expire (seconds)"
    ),
    cmd!(
        392,
        "spexpire",
        -6,
        ["write", "denyoom", "fast"],
        (1, 1, 1),
        "set",
        "Set expiry for set member using relative time to expire (milliseconds)"
    ),
    cmd!(
        393,
        "sexpireat",
        -6,
        ["write", "denyoom", "fast"],
        (1, 1, 1),
        "set",
        "Set expiry for set member using an absolute Unix timestamp (seconds)"
    ),
    cmd!(
        394,
        "spexpireat",
        -6,
        ["write", "denyoom", "fast"],
        (1, 1, 1),
        "set",
        "Set expiry for set member using an absolute Unix timestamp (milliseconds)"
    ),
    cmd!(
        395,
        "sttl",
        -5,
        ["readonly", "fast"],
        (1, 1, 1),
        "set",
        "Returns the TTL in seconds of a set member."
    ),
    cmd!(
        396,
        "spttl",
        -5,
        ["readonly", "fast"],
        (1, 1, 1),
        "set",
        "Returns the TTL in milliseconds of a set member."
    ),
    cmd!(
        397,
        "sexpiretime",
        -5,
        ["readonly", "fast"],
        (1, 1, 1),
        "set",
        "Returns the expiration time of a set member as a Unix timestamp, in seconds."
    ),
    cmd!(
        398,
        "spexpiretime",
        -5,
        ["readonly", "fast"],
        (1, 1, 1),
        "set",
        "Returns the expiration time of a set member as a Unix timestamp, in msec."
    ),
    cmd!(
        399,
        "spersist",
        -5,
        ["write", "fast"],
        (1, 1, 1),
        "set",
        "Removes the expiration time for each specified member"
    ),
];

/// lapse's sorted-set member expiry, built as the set family.
static ZSET_MEMBER_TTLS: &[Command] = &[
    cmd!(
        400,
        "zexpire",
        -6,
        ["write", "denyoom", "fast"],
        (1, 1, 1),
        "sorted-set",
        "Set expiry for sorted set member using relative time to expire (seconds)"
    ),
    cmd!(
        401,
        "zpexpire",
        -6,
        ["write", "denyoom", "fast"],
        (1, 1, 1),
        "sorted-set",
        "Set expiry for sorted set member using relative time to expire (milliseconds)"
    ),
    cmd!(
        402,
        "zexpireat",
        -6,
        ["write", "denyoom", "fast"],
        (1, 1, 1),
        "sorted-set",
        "Set expiry for sorted set member using an absolute Unix timestamp (seconds)"
    ),
    cmd!(
        403,
        "zpexpireat",
        -6,
        ["write", "denyoom", "fast"],
        (1, 1, 1),
        "sorted-set",
        "Set expiry for sorted set member using an absolute Unix timestamp (milliseconds)"
    ),
    cmd!(
        404,
        "zttl",
        -5,
        ["readonly", "fast"],
        (1, 1, 1),
        "sorted-set",
        "Returns the TTL in seconds of a sorted set member."
    ),
    cmd!(
        405,
        "zpttl",
        -5,
        ["readonly", "fast"],
        (1, 1, 1),
        "sorted-set",
        "Returns the TTL in milliseconds of a sorted set member."
    ),
    cmd!(
        406,
        "zexpiretime",
        -5,
        ["readonly", "fast"],
        (1, 1, 1),
        "sorted-set",
        "Returns the expiration time of a sorted set member as a Unix timestamp, in seconds."
    ),
    cmd!(
        407,
        "zpexpiretime",
        -5,
        ["readonly", "fast"],
        (1, 1, 1),
        "sorted-set",
        "Returns the expiration time of a sorted set member as a Unix timestamp, in msec."
    ),
    cmd!(
        408,
        "zpersist",
        -5,
        ["write", "fast"],
        (1, 1, 1),
        "sorted-set",
        "Removes the expiration time for each specified member"
    ),
];

/// KeyDB's member expiry commands, onto the same deadlines.
static KEYDB_MEMBER_TTLS: &[Command] = &[
    cmd!(
        409,
        "expiremember",
        -4,
        ["write", "fast"],
        (1, 1, 1),
        "generic",
        "Set a timeout on a member of a hash, set or sorted set (KeyDB)"
    ),
    cmd!(
        410,
        "expirememberat",
        4,
        ["write", "fast"],
        (1, 1, 1),
        "generic",
        "Set a member's expiry as a Unix timestamp in seconds (KeyDB)"
    ),
    cmd!(
        411,
        "pexpirememberat",
        4,
        ["write", "fast"],
        (1, 1, 1),
        "generic",
        "Set a member's expiry as a Unix timestamp in milliseconds (KeyDB)"
    ),
];

/// Stampede protection (issue 42): leases on missing or stale keys.
static STAMPEDE: &[Command] = &[
    cmd!(
        412,
        "getlease",
        -3,
        ["readonly", "fast", "blocking"],
        (1, 1, 1),
        "string",
        "Returns a key's value with its freshness, and a fill or refresh lease to one caller"
    ),
    container!(
        413,
        "lease",
        LEASE_SUBCOMMANDS,
        "generic",
        "A container for lease commands"
    ),
];

static LEASE_SUBCOMMANDS: &[Command] = &[cmd!(
    414,
    "release",
    4,
    ["fast"],
    (2, 2, 1),
    "generic",
    "Hands back a fill or refresh lease before it lapses"
)];
