//! Replacing a small file whole so that a crash leaves the old content or
//! the new, never a mix: written beside the file, synced, renamed over it,
//! the directory synced. `nodes.conf` is rewritten on every CLUSTER
//! SETSLOT, so its replacement keeps the previous file under a second name
//! and swaps the two: no inode is made or freed per save (on ext4, a
//! rename that frees the file it replaces costs ~150 µs, a swap ~15 µs).

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Replaces `path` with `bytes` through `temp` (beside it), synced; `temp`
/// is removed on failure.
pub fn replace_file(path: &Path, temp: &Path, bytes: &[u8]) -> io::Result<()> {
    let written = (|| {
        let mut file = File::create(temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(temp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(temp);
    }
    written?;
    sync_dir_of(path);
    Ok(())
}

/// Replaces `path` with `bytes`, leaving the content it had in `previous`
/// (beside it), which the next replacement writes over. `sync` makes the
/// new content durable before it takes the name, and the name change
/// durable before this returns. Where the file system cannot swap two
/// names (or `path` does not exist yet), `previous` is renamed over
/// `path` instead.
pub fn replace_keeping_previous(
    path: &Path,
    previous: &Path,
    bytes: &[u8],
    sync: bool,
) -> io::Result<()> {
    // Written over in place: the spare's inode and blocks are reused.
    let mut spare = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(previous)?;
    spare.write_all(bytes)?;
    spare.set_len(bytes.len() as u64)?;
    if sync {
        spare.sync_all()?;
    }
    drop(spare);
    if !exchange(previous, path) {
        std::fs::rename(previous, path)?;
    }
    if sync {
        sync_dir_of(path);
    }
    Ok(())
}

/// Swaps the names `a` and `b` in one step (`renameat2` with
/// `RENAME_EXCHANGE`); false if it did not happen: `b` missing, or a file
/// system or kernel without the call.
fn exchange(a: &Path, b: &Path) -> bool {
    let (Ok(a), Ok(b)) = (
        CString::new(a.as_os_str().as_bytes()),
        CString::new(b.as_os_str().as_bytes()),
    ) else {
        return false;
    };
    // SAFETY: both paths are NUL-terminated strings that outlive the call.
    let done = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    done == 0
}

/// Syncs the directory holding `path`, so that a rename into it survives
/// a crash (best effort: some file systems refuse).
pub fn sync_dir_of(path: &Path) {
    if let Some(dir) = path.parent() {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replacing_keeps_the_previous_content_beside() {
        let dir = std::env::temp_dir().join(format!("lapse-files-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (path, previous) = (dir.join("nodes.conf"), dir.join("nodes.conf.previous"));
        replace_keeping_previous(&path, &previous, b"first, and longer\n", true).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"first, and longer\n");
        replace_keeping_previous(&path, &previous, b"second\n", false).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second\n");
        assert_eq!(std::fs::read(&previous).unwrap(), b"first, and longer\n");
        replace_keeping_previous(&path, &previous, b"third\n", true).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"third\n");
        assert_eq!(std::fs::read(&previous).unwrap(), b"second\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
