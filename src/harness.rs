//! lapse in process, for tests and tools: a `ServerState`, one client
//! session and a clock driven by hand. Commands run through the same
//! dispatcher and propagation point as over TCP; only sockets are missing.
//! Integration tests (`tests/`) use it where a real server's clock would
//! make a test slow or flaky (expiry, replay of the effect stream).

use std::cell::RefCell;
use std::rc::Rc;

use crate::clock::ManualClock;
use crate::config::Config;
use crate::connection::Session;
use crate::digest;
use crate::dispatch::execute;
use crate::expire::{CycleKind, CycleSettings};
use crate::propagate::Recorder;
use crate::protocol::{Args, Parsed, RequestParser};
use crate::state::ServerState;

pub struct Harness {
    pub server: ServerState,
    pub session: Session,
    /// The time every command and expire cycle sees, unix ms.
    pub now_ms: i64,
}

impl Default for Harness {
    fn default() -> Self {
        Self::new()
    }
}

impl Harness {
    /// A server whose files (SAVE) go to the system's temporary directory,
    /// never into the working directory.
    pub fn new() -> Self {
        Self::with_config(Config {
            dir: std::env::temp_dir().display().to_string(),
            ..Config::default()
        })
    }

    pub fn with_config(config: Config) -> Self {
        Self {
            server: ServerState::new(config),
            session: Session {
                authenticated: true,
                ..Session::default()
            },
            now_ms: 1_700_000_000_000,
        }
    }

    /// Runs one inline command (`SET k "a b"`) and returns the reply as text.
    pub fn run(&mut self, line: &str) -> String {
        let input = format!("{line}\r\n");
        let mut parser = RequestParser::default();
        let Ok(Parsed::Complete { .. }) = parser.parse(input.as_bytes()) else {
            panic!("bad test command {line:?}");
        };
        let reply = self.execute(parser.args(input.as_bytes()));
        String::from_utf8_lossy(&reply).into_owned()
    }

    /// Runs one command given as arguments; returns the raw reply bytes.
    pub fn exec(&mut self, args: &[&[u8]]) -> Vec<u8> {
        let mut wire = Vec::new();
        crate::protocol::encode_request(args, &mut wire);
        let mut parser = RequestParser::default();
        match parser.parse(&wire) {
            Ok(Parsed::Complete { .. }) => self.execute(parser.args(&wire)),
            other => panic!("could not parse {args:?}: {other:?}"),
        }
    }

    /// Runs every request in `stream` (RESP, as the effect stream carries
    /// it); returns the replies that were errors.
    pub fn replay(&mut self, stream: &[u8]) -> Vec<String> {
        let mut parser = RequestParser::default();
        let mut errors = Vec::new();
        let mut offset = 0;
        while offset < stream.len() {
            let rest = &stream[offset..];
            let Ok(Parsed::Complete { consumed }) = parser.parse(rest) else {
                panic!("incomplete stream at byte {offset}");
            };
            let reply = self.execute(parser.args(rest));
            if reply.first() == Some(&b'-') {
                errors.push(String::from_utf8_lossy(&reply).into_owned());
            }
            offset += consumed;
        }
        errors
    }

    fn execute(&mut self, args: Args<'_>) -> Vec<u8> {
        let mut ctx =
            crate::dispatch::context(self.now_ms, &mut self.session, &mut self.server, &());
        execute(&mut ctx, args);
        // Whatever a command logged or unpacked was processed after it:
        // nothing may slip past `Activity`'s pending flag.
        for db in &self.server.dbs {
            assert!(
                !db.has_events() && !db.has_changed(),
                "db {} kept events or changed values after a command",
                db.index
            );
        }
        std::mem::take(&mut self.session.reply.buf)
    }

    /// One slow active expire cycle at `now_ms`, with its events processed
    /// as the loop would.
    pub fn expire_cycle(&mut self) {
        let state = &mut self.server;
        let settings = CycleSettings {
            effort: state.config.active_expire_effort,
            hz: state.config.hz,
            strategy: state.config.expire_strategy,
        };
        let mut clock = ManualClock {
            unix_ms: self.now_ms,
            mono_us: 0,
            step_us: 1,
        };
        state.expire.run(
            CycleKind::Slow,
            &mut state.dbs,
            settings,
            &mut clock,
            &mut state.rng,
        );
        state.process_key_events();
    }

    /// Attaches a consumer to the effect stream; the returned buffer fills
    /// with the RESP commands that reproduce every change from now on.
    pub fn record_effects(&mut self) -> Rc<RefCell<Vec<u8>>> {
        let recorder = Recorder::default();
        let stream = recorder.stream.clone();
        self.server.propagate.attach(Box::new(recorder));
        self.server.refresh_event_recording();
        stream
    }

    /// DEBUG DIGEST of the whole dataset, hex.
    pub fn digest(&self) -> String {
        digest::hex(&digest::dataset_digest(&self.server.dbs))
    }
}
