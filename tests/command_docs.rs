//! The generated command docs (`src/command_table/docs_data.rs`) are what
//! `tools/command_docs.py` makes from the Redis reference extract
//! committed beside it: a hand edit, or a generator change not run, fails
//! here.

mod common;

use std::path::Path;
use std::process::Command;

#[test]
fn generated_command_docs_are_current() {
    if !common::tool_present(
        "python3",
        "the check that the generated command docs are current",
    ) {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("python3")
        .arg(root.join("tools/command_docs.py"))
        .arg(root.join("tools/redis-commands.json"))
        .arg(root.join("tools/lapse-commands.json"))
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "tools/command_docs.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let committed = std::fs::read(root.join("src/command_table/docs_data.rs")).unwrap();
    assert!(
        out.stdout == committed,
        "src/command_table/docs_data.rs is not what tools/command_docs.py generates: run\n  \
         tools/command_docs.py tools/redis-commands.json tools/lapse-commands.json \
         > src/command_table/docs_data.rs"
    );
}
