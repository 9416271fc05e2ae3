//! Command line, as redis-server reads it: an optional config file, then
//! `--<setting> <value>...` for any setting (`--port 7380 --save ""`),
//! applied after the file as if appended to it. Builds the `Config` and
//! runs the server. Nothing else.

use std::path::Path;
use std::process::ExitCode;

use lapse::config::{Config, Directives};
use lapse::server::Server;

#[global_allocator]
static ALLOC: lapse::memory::CountingAlloc = lapse::memory::CountingAlloc;

const USAGE: &str = "Usage: lapse [/path/to/lapse.conf] [--<setting> <value>...]
       lapse --check-rdb <file.rdb>
       lapse --version
       lapse --help

Any setting of the config file (redis.conf syntax) can be given as a flag:
  lapse --port 7380 --save \"\" --appendonly no
  lapse /etc/lapse.conf --loglevel warning";

/// What the command line asks for.
enum Invocation {
    Run(Box<Config>),
    Print(String),
    /// `--check-rdb FILE` (as `redis-check-rdb FILE`).
    CheckRdb(std::path::PathBuf),
}

/// The config file (if the first argument is not a flag), then the flags:
/// each `--name` takes the arguments up to the next `--name`.
fn parse_args(args: &[String]) -> Result<Invocation, String> {
    match args {
        [one] if one == "--version" || one == "-v" => {
            return Ok(Invocation::Print(format!(
                "lapse {} (Redis {} compatible)",
                env!("CARGO_PKG_VERSION"),
                lapse::REDIS_COMPAT_VERSION
            )))
        }
        [one] if one == "--help" || one == "-h" => return Ok(Invocation::Print(USAGE.into())),
        [flag, file] if flag == "--check-rdb" => return Ok(Invocation::CheckRdb(file.into())),
        _ => {}
    }
    let mut config = Config::default();
    let mut directives = Directives::new(&mut config).check_users(lapse::acl::check_user_directive);
    let mut rest = args;
    let mut config_file = None;
    if let Some((first, after)) = args.split_first() {
        if !first.starts_with("--") {
            directives
                .load_file(Path::new(first))
                .map_err(|e| e.to_string())?;
            config_file = Some(first);
            rest = after;
        }
    }
    while let Some((flag, after)) = rest.split_first() {
        let Some(name) = flag.strip_prefix("--").filter(|n| !n.is_empty()) else {
            return Err(format!("unexpected argument '{flag}'\n\n{USAGE}"));
        };
        let values = after.iter().take_while(|a| !a.starts_with("--")).count();
        directives
            .apply(name, &after[..values])
            .map_err(|reason| format!("--{name}: {reason}"))?;
        rest = &after[values..];
    }
    // Absolute, as Redis keeps it: CONFIG REWRITE writes there whatever
    // the working directory is by then.
    if let Some(file) = config_file {
        config.config_file = Some(std::path::absolute(file).map_err(|e| e.to_string())?);
    }
    Ok(Invocation::Run(Box::new(config)))
}

/// The log's destination when `logfile` names one: opened for each line,
/// appending, as Redis does (so a rotated file is followed without a
/// signal); a line that cannot be written is dropped.
struct LogFile(std::path::PathBuf);

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogFile {
    type Writer = Box<dyn std::io::Write>;

    fn make_writer(&'a self) -> Self::Writer {
        match open_log(&self.0) {
            Ok(file) => Box::new(file),
            Err(_) => Box::new(std::io::sink()),
        }
    }
}

fn open_log(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
}

/// Redis's daemonize(): the parent exits at once; the child leads a new
/// session with its standard streams on /dev/null. Called before any
/// thread exists (fork copies only the calling thread).
fn daemonize() -> std::io::Result<()> {
    // SAFETY: no other thread runs yet, so the child's memory is whole.
    match unsafe { libc::fork() } {
        -1 => Err(std::io::Error::last_os_error()),
        0 => {
            // SAFETY: plain system calls on descriptors this process owns.
            unsafe { libc::setsid() };
            let null = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open("/dev/null")?;
            for fd in 0..3 {
                // SAFETY: as above.
                unsafe { libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&null), fd) };
            }
            Ok(())
        }
        _ => std::process::exit(0),
    }
}

fn init_logging(config: &Config) {
    let (loglevel, logfile) = (config.loglevel.as_str(), config.logfile.as_str());
    let format = lapse::log::RedisFormat {
        line: match config.log_format.as_str() {
            "logfmt" => lapse::log::LineFormat::Logfmt,
            _ => lapse::log::LineFormat::Legacy,
        },
        time: match config.log_timestamp_format.as_str() {
            "iso8601" => lapse::log::TimeFormat::Iso8601,
            "milliseconds" => lapse::log::TimeFormat::Milliseconds,
            _ => lapse::log::TimeFormat::Legacy,
        },
    };
    let level = lapse::log::filter_for(loglevel);
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .event_format(format);
    // CONFIG SET loglevel changes the filter of the running logger.
    macro_rules! reloadable {
        ($builder:expr) => {{
            let builder = $builder.with_filter_reloading();
            let handle = builder.reload_handle();
            lapse::log::on_level_change(Box::new(move |level| {
                let _ = handle.reload(tracing_subscriber::EnvFilter::new(level));
            }));
            builder.init();
        }};
    }
    if logfile.is_empty() {
        reloadable!(builder);
    } else {
        reloadable!(builder.with_writer(LogFile(logfile.into())));
    }
}

/// `lapse --check-rdb FILE`: the file's report; failure if it does not
/// read to its end.
fn check_rdb(file: &Path) -> ExitCode {
    use lapse::persistence::rdb_check;
    let data = match std::fs::read(file) {
        Ok(data) => data,
        Err(e) => {
            eprintln!("lapse: Cannot open {}: {e}", file.display());
            return ExitCode::FAILURE;
        }
    };
    let (report, error) = rdb_check::check(&data, Config::default().load_limits());
    print!(
        "{}",
        rdb_check::render(&file.display().to_string(), &report, error.as_deref())
    );
    match error {
        None => ExitCode::SUCCESS,
        Some(_) => ExitCode::FAILURE,
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let config = match parse_args(&args) {
        Ok(Invocation::Run(config)) => *config,
        Ok(Invocation::Print(text)) => {
            println!("{text}");
            return ExitCode::SUCCESS;
        }
        Ok(Invocation::CheckRdb(file)) => return check_rdb(&file),
        Err(e) => {
            eprintln!("lapse: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Refused before detaching, where the error can still be seen.
    if !config.logfile.is_empty() {
        if let Err(e) = open_log(Path::new(&config.logfile)) {
            eprintln!("lapse: Can't open the log file: {e}");
            return ExitCode::FAILURE;
        }
    }
    if config.daemonize {
        if let Err(e) = daemonize() {
            eprintln!("lapse: cannot daemonize: {e}");
            return ExitCode::FAILURE;
        }
    }
    init_logging(&config);
    // The lines Redis starts with (tools look for them).
    tracing::info!("oO0OoO0OoO0Oo Redis is starting oO0OoO0OoO0Oo");
    tracing::info!(
        "Redis version={}, bits=64, commit=00000000, modified=0, pid={}, just started (lapse {})",
        lapse::REDIS_COMPAT_VERSION,
        std::process::id(),
        env!("CARGO_PKG_VERSION")
    );
    match &config.config_file {
        Some(_) => tracing::info!("Configuration loaded"),
        None => tracing::warn!(
            "Warning: no config file specified, using the default config. In order to specify a config file use lapse /path/to/lapse.conf"
        ),
    }
    for ignored in config.ignored_settings() {
        tracing::warn!("setting {ignored} (lapse keeps the value, ignores it)");
    }
    let pidfile = match (config.pidfile.as_str(), config.daemonize) {
        ("", false) => None,
        ("", true) => Some(lapse::config::DEFAULT_PIDFILE.to_string()),
        (path, _) => Some(path.to_string()),
    };
    let server = match Server::bind(config) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!("cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    // As Redis: a pidfile that cannot be written is logged, not fatal.
    if let Some(path) = &pidfile {
        if let Err(e) = std::fs::write(path, format!("{}\n", std::process::id())) {
            tracing::warn!("Failed to write PID file {path}: {e}");
        }
    }
    let result = server.run();
    if let Some(path) = &pidfile {
        let _ = std::fs::remove_file(path);
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("event loop failed: {e}");
            ExitCode::FAILURE
        }
    }
}
