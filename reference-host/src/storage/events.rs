//! The events aggregate: the [`Events`] trait, the sink told about commits,
//! and the watcher told about closes on other replicas.

use crate::domain::{Evaluation, Event, GoalId, Tenant};
use crate::storage::StoreError;

/// Told the id of a goal another replica closed (`Events::watch_closes`); it
/// must not block or do I/O.
pub type ClosedWatcher = std::sync::Arc<dyn Fn(&GoalId) + Send + Sync>;

/// Told about every write's events once it committed, in commit order
/// (so in cursor order for each tenant), on the thread that committed it,
/// before the writer is answered: it must not block or do I/O.
pub trait EventSink: Send + Sync {
    fn committed(&self, tenant: &Tenant, events: &[Event]);

    /// Whether anybody listens to the tenant's events here: a store that
    /// reads other replicas' events for the sink reads only those.
    fn listening(&self, _tenant: &Tenant) -> bool {
        true
    }

    /// Events may have committed that the sink will never be told about
    /// (a store lost its notices of other replicas' commits): whoever
    /// listens must catch up from storage.
    fn interrupted(&self) {}
}

/// A goal's history (events and evaluations), the tenant's event feed,
/// and who is told about commits and closes.
pub trait Events {
    /// A goal's events with a sequence greater than `after`, in order.
    fn events(&self, goal: &GoalId, after: u64) -> Result<Vec<Event>, StoreError>;

    /// At most `limit` of a goal's events with a sequence greater than
    /// `after`, in order: a page of [`Events::events`].
    fn events_page(
        &self,
        goal: &GoalId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError>;

    /// Whom to tell about committed events (the live stream); replaces any
    /// sink set before.
    fn set_event_sink(&self, sink: std::sync::Arc<dyn EventSink>);

    /// Whom to tell that a goal closed on another replica, so a run of it
    /// in flight here is cancelled as a local abandon cancels it. A store
    /// only one process uses has no other replica: the default ignores it.
    fn watch_closes(&self, _watcher: ClosedWatcher) {}

    /// At most `limit` of a tenant's events whose cursor
    /// ([`Event::cursor`]) is greater than `after`, in cursor order (the
    /// order they committed in); only `goal`'s when given (the caller
    /// checked it is the tenant's). What the live stream backfills from.
    fn tenant_events_after(
        &self,
        tenant: &Tenant,
        goal: Option<&GoalId>,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Event>, StoreError>;

    /// A goal's evaluations in iteration order.
    fn evaluations(&self, goal: &GoalId) -> Result<Vec<Evaluation>, StoreError>;

    /// At most `limit` of a goal's evaluations of an iteration greater
    /// than `after`, in iteration order: a page of [`Events::evaluations`].
    fn evaluations_page(
        &self,
        goal: &GoalId,
        after: u64,
        limit: usize,
    ) -> Result<Vec<Evaluation>, StoreError>;
}
