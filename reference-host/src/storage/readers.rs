//! Read-only connections to a file database, so reads never queue behind
//! the write connection: in WAL mode a reader sees the last commit and
//! neither waits for a writer nor makes one wait.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::StoreError;

/// Idle connections kept for reuse; more readers than this at once open
/// extra connections that are closed after use.
const KEEP_IDLE: usize = 16;

/// More than the distinct read statements of the store.
const STATEMENT_CACHE: usize = 32;

pub(super) struct Readers {
    path: PathBuf,
    idle: Mutex<Vec<Connection>>,
}

impl Readers {
    pub(super) fn new(path: &Path) -> Readers {
        Readers {
            path: path.to_path_buf(),
            idle: Mutex::new(Vec::new()),
        }
    }

    fn open(&self) -> Result<Connection, StoreError> {
        let connection = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|source| StoreError::Open {
            location: self.path.display().to_string(),
            source: Box::new(source),
        })?;
        connection.busy_timeout(Duration::from_secs(5))?;
        connection.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
        // No memory map here, unlike the write connection. A read
        // connection that finds the database changed since its last read
        // (under steady writes: nearly always) unmaps the whole file
        // before it reads, and then faults every page in again: `munmap`
        // alone was 6% of the scheduler's time at 100k goals. A `pread` per
        // page costs less: the fail-closed read fell from 25% to 18% of
        // the samples.
        connection.pragma_update(None, "mmap_size", 0)?;
        Ok(connection)
    }

    /// Runs `read` on an idle connection (or a new one).
    pub(super) fn read<T>(
        &self,
        read: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let idle = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let connection = match idle {
            Some(connection) => connection,
            None => self.open()?,
        };
        let result = read(&connection);
        // A connection left inside a transaction (a failed read) is not
        // reused: it would pin an old snapshot.
        if connection.is_autocommit() {
            let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
            if idle.len() < KEEP_IDLE {
                idle.push(connection);
            }
        }
        result
    }
}
