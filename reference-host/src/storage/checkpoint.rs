//! WAL checkpoints on a thread of their own. SQLite's automatic checkpoint
//! runs inside the commit that crosses its threshold: that commit's group
//! leader copied a thousand pages into the database file and waited for
//! two `fsync`s while every writer queued behind it (a tenth of a
//! `continue`'s samples). Here the commit only
//! asks, and a passive checkpoint — which never blocks readers or writers
//! — runs beside the writes; only a WAL the thread cannot keep short is
//! checkpointed in the commit path ([`Thresholds::catch_up`]). Durability is
//! unchanged: a commit is durable
//! once it is in the WAL, checkpointed or not.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::wal::CheckpointMode;
use rusqlite::{Connection, OpenFlags};

use super::StoreError;

/// When a commit asks for a checkpoint, in pages left in the WAL.
#[derive(Debug, Clone, Copy)]
pub(super) struct Thresholds {
    /// From here the thread is asked to checkpoint. Four times SQLite's
    /// own default for its automatic checkpoint: a page rewritten often
    /// (an index's hot end, the newest events) is copied once per
    /// checkpoint, and the scheduler at 100k goals ran 8.4k fires/s with
    /// this against 6.7k with SQLite's 1,000 (8,000 gave 8.7k, within the
    /// noise; 16k/64k and 32k/128k pages changed nothing clear).
    pub(super) ask: i32,
    /// From here the committing connection checkpoints itself. The WAL
    /// starts over from its beginning only when a write begins with every
    /// frame copied; under writes without pause a checkpoint beside them
    /// never quite catches up, and the WAL would grow without end (each
    /// commit then extending the file rather than overwriting it; a test
    /// saw 95 MB for 40 MB written). Checkpointing between one commit and
    /// the next write does catch up, as SQLite's automatic checkpoint did.
    pub(super) catch_up: i32,
}

impl Default for Thresholds {
    fn default() -> Thresholds {
        Thresholds {
            ask: 4000,
            catch_up: 16_000,
        }
    }
}

/// What the write connection's WAL hook does after a commit that left
/// `pages` in the WAL.
pub(super) fn after_commit(
    wal: &mut rusqlite::hooks::Wal,
    pages: i32,
    ask: &Ask,
    thresholds: Thresholds,
) {
    if pages >= thresholds.catch_up {
        // Full: waits (the busy timeout) for a checkpoint the thread is
        // running, then copies every frame. The next write starts the WAL
        // over.
        if let Err(error) = wal.checkpoint_v2(CheckpointMode::FULL) {
            tracing::warn!(%error, pages, "a catch-up WAL checkpoint failed");
        }
    } else if pages >= thresholds.ask {
        ask.checkpoint();
    }
}

#[derive(Default)]
struct State {
    due: bool,
    stop: bool,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

impl Shared {
    fn set(&self, change: impl FnOnce(&mut State)) {
        change(&mut self.state.lock().unwrap_or_else(PoisonError::into_inner));
        self.wake.notify_one();
    }
}

/// Asks for a checkpoint; cheap, and many asks before it runs are one.
#[derive(Clone)]
pub(super) struct Ask(Arc<Shared>);

impl Ask {
    pub(super) fn checkpoint(&self) {
        self.0.set(|state| state.due = true);
    }
}

/// The checkpoint thread; stops (after any checkpoint under way) on drop.
pub(super) struct Checkpointer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Opens its own connection to the database at `path`.
    pub(super) fn start(path: &Path) -> Result<Checkpointer, StoreError> {
        let connection = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|source| StoreError::Open {
            location: path.display().to_string(),
            source: Box::new(source),
        })?;
        connection.busy_timeout(Duration::from_secs(5))?;
        // A connection knows the database is in WAL mode only once it has
        // read it; until then a checkpoint does nothing.
        let mode: String = connection.query_row("PRAGMA journal_mode", [], |row| row.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Checkpointer(format!(
                "its connection found journal mode {mode:?}, not WAL"
            )));
        }
        let shared = Arc::new(Shared::default());
        let thread = std::thread::Builder::new()
            .name("goalpost-checkpoint".into())
            .spawn({
                let shared = Arc::clone(&shared);
                move || run(&connection, &shared)
            })
            .map_err(|error| StoreError::Checkpointer(error.to_string()))?;
        Ok(Checkpointer {
            shared,
            thread: Some(thread),
        })
    }

    pub(super) fn ask(&self) -> Ask {
        Ask(Arc::clone(&self.shared))
    }
}

fn run(connection: &Connection, shared: &Shared) {
    loop {
        {
            let mut state = shared.state.lock().unwrap_or_else(PoisonError::into_inner);
            while !state.due && !state.stop {
                state = shared
                    .wake
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            if state.stop {
                return;
            }
            state.due = false;
        }
        // Passive: copies what no reader still needs, waits for nobody.
        // The next commit asks again if the WAL is still long.
        if let Err(error) = connection.wal_checkpoint_v2(None::<&str>, CheckpointMode::PASSIVE) {
            tracing::warn!(%error, "a WAL checkpoint failed; the next commit asks again");
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.shared.set(|state| state.stop = true);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
