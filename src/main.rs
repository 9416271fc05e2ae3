//! Command line: builds a `Config` (defaults, then the config file, then
//! flags) and runs the server. Nothing else.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use lapse::config::{find_setting, Config};
use lapse::server::Server;

#[global_allocator]
static ALLOC: lapse::info::CountingAlloc = lapse::info::CountingAlloc;

/// A Redis-compatible in-memory key-value server built around key expiry.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Cli {
    /// A config file in redis.conf syntax (`port 7379`, `hz 10`, ...).
    config_file: Option<PathBuf>,
    /// TCP port to listen on (0 picks a free port and logs it).
    #[arg(long)]
    port: Option<u16>,
    /// Addresses to listen on.
    #[arg(long, num_args = 1..)]
    bind: Option<Vec<String>>,
    /// Cron frequency per second (1..500).
    #[arg(long)]
    hz: Option<String>,
    /// Number of databases.
    #[arg(long)]
    databases: Option<String>,
    /// debug, verbose, notice, warning or nothing.
    #[arg(long)]
    loglevel: Option<String>,
    /// Active expire effort (1..10).
    #[arg(long)]
    active_expire_effort: Option<String>,
    /// How the active expire cycle picks candidates: deadline or uniform.
    #[arg(long)]
    expire_strategy: Option<String>,
    /// Password clients must AUTH with.
    #[arg(long)]
    requirepass: Option<String>,
    /// yes: refuse non-loopback clients while no password is set.
    #[arg(long)]
    protected_mode: Option<String>,
    /// Most clients connected at once.
    #[arg(long)]
    maxclients: Option<String>,
    /// Close clients idle this many seconds (0 = never).
    #[arg(long)]
    timeout: Option<String>,
    /// Largest query buffer per client (bytes; 1mb, 1gb ...).
    #[arg(long)]
    client_query_buffer_limit: Option<String>,
    /// Output limits, e.g. "normal 1gb 128mb 60".
    #[arg(long, allow_hyphen_values = true)]
    client_output_buffer_limit: Option<String>,
}

fn build_config(cli: &Cli) -> Result<Config, String> {
    let mut config = Config::default();
    if let Some(path) = &cli.config_file {
        config.load_file(path).map_err(|e| e.to_string())?;
    }
    let mut flags: Vec<(&str, Vec<String>)> = Vec::new();
    if let Some(port) = cli.port {
        flags.push(("port", vec![port.to_string()]));
    }
    if let Some(bind) = &cli.bind {
        flags.push(("bind", bind.clone()));
    }
    for (name, value) in [
        ("hz", &cli.hz),
        ("databases", &cli.databases),
        ("loglevel", &cli.loglevel),
        ("active-expire-effort", &cli.active_expire_effort),
        ("expire-strategy", &cli.expire_strategy),
        ("requirepass", &cli.requirepass),
        ("protected-mode", &cli.protected_mode),
        ("maxclients", &cli.maxclients),
        ("timeout", &cli.timeout),
        ("client-query-buffer-limit", &cli.client_query_buffer_limit),
    ] {
        if let Some(v) = value {
            flags.push((name, vec![v.clone()]));
        }
    }
    if let Some(v) = &cli.client_output_buffer_limit {
        flags.push(("client-output-buffer-limit", vec![v.clone()]));
    }
    for (name, value) in flags {
        let setting = find_setting(name).ok_or_else(|| format!("unknown setting {name}"))?;
        setting
            .set(&mut config, &value)
            .map_err(|e| format!("--{name}: {}", e.0))?;
    }
    Ok(config)
}

fn init_logging(loglevel: &str) {
    let level = match loglevel {
        "debug" => "trace",
        "verbose" => "debug",
        "warning" => "warn",
        "nothing" => "off",
        _ => "info",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stdout());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .init();
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let config = match build_config(&cli) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("lapse: {e}");
            return ExitCode::FAILURE;
        }
    };
    init_logging(&config.loglevel);
    let server = match Server::bind(config) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!("cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    match server.run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("event loop failed: {e}");
            ExitCode::FAILURE
        }
    }
}
