//! Who holds the connections: a count per source address and the
//! connections that have not yet shown a known credential, oldest first.
//!
//! - A source address holds at most `max_per_address` connections, and at
//!   most `max_anonymous_per_address` that have gone `anonymous_grace`
//!   without carrying a request with a known token. Trusted proxies are
//!   exempt (every client behind them shares their address). The grace
//!   is what lets a client open many connections at once: the table
//!   admits each as it is accepted, before any has sent its request, and
//!   refused on arrival, a burst of 50 from one address lost every one
//!   past the 32nd whenever the host accepted faster than it read.
//! - Connections without a credential hold at most half the cap; once at
//!   it, or once the cap itself is reached, a new connection closes one of
//!   them instead of being refused: the oldest of the address holding the
//!   most (max-min fair between addresses). A client that sends its
//!   request promptly is past that stage in milliseconds, and an address
//!   with one connection is the last to lose it, so idle sockets opened
//!   over and over, from one address or several, can no longer keep
//!   legitimate clients out (they did: 1,024 idle anonymous connections,
//!   reopened whenever the header timeout closed them, left 0 of 22
//!   legitimate requests served).

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use tokio::sync::Notify;

use super::ConnectionLimits;
use crate::domain::egress::Cidr;

/// Why a connection was closed on arrival.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Its address holds its share of the connections already.
    PerAddress,
    /// Its address holds its share of connections that went their grace
    /// without a credential.
    AnonymousPerAddress,
    /// Every connection carries a credential and the cap is reached.
    Full,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Anonymous,
    Authenticated,
    /// Closed to make room: no longer counted.
    Evicted,
}

#[derive(Debug)]
struct Slot {
    id: u64,
    address: IpAddr,
    /// When it was admitted.
    opened: Instant,
    /// Whether its address's per-address counts apply.
    counted: bool,
    /// Told when the connection is closed to make room.
    evicted: Notify,
    /// Set once it carried a known credential: its later requests need
    /// not take the table's lock to say so again.
    authenticated: std::sync::atomic::AtomicBool,
}

#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    open: usize,
}

#[derive(Debug, Default)]
struct State {
    next: u64,
    open: usize,
    stages: HashMap<u64, Stage>,
    by_address: HashMap<IpAddr, Counts>,
    /// Connections without a credential, oldest first, per address (a
    /// trusted proxy's each on its own: they are different clients).
    anonymous: HashMap<Holder, VecDeque<Arc<Slot>>>,
    anonymous_count: usize,
}

/// Whose share an anonymous connection is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Holder {
    Address(IpAddr),
    Proxied(u64),
}

impl Slot {
    fn holder(&self) -> Holder {
        if self.counted {
            Holder::Address(self.address)
        } else {
            Holder::Proxied(self.id)
        }
    }
}

impl State {
    fn add_anonymous(&mut self, slot: Arc<Slot>) {
        self.anonymous
            .entry(slot.holder())
            .or_default()
            .push_back(slot);
        self.anonymous_count += 1;
    }

    fn remove_anonymous(&mut self, slot: &Slot) {
        let holder = slot.holder();
        if let Some(held) = self.anonymous.get_mut(&holder) {
            if let Some(at) = held.iter().position(|other| other.id == slot.id) {
                held.remove(at);
                self.anonymous_count -= 1;
            }
            if held.is_empty() {
                self.anonymous.remove(&holder);
            }
        }
    }

    /// The connection to close to make room: the oldest of the holder
    /// with the most anonymous connections, the holder whose oldest is
    /// oldest on a tie.
    fn take_evictable(&mut self) -> Option<Arc<Slot>> {
        let holder = self
            .anonymous
            .iter()
            .filter_map(|(holder, held)| {
                held.front().map(|oldest| (*holder, held.len(), oldest.id))
            })
            .max_by(|(_, left_len, left_id), (_, right_len, right_id)| {
                left_len.cmp(right_len).then(right_id.cmp(left_id))
            })
            .map(|(holder, _, _)| holder)?;
        let held = self.anonymous.get_mut(&holder)?;
        let slot = held.pop_front()?;
        if held.is_empty() {
            self.anonymous.remove(&holder);
        }
        self.anonymous_count -= 1;
        Some(slot)
    }
}

/// The connections a server holds.
#[derive(Debug)]
pub struct Connections {
    state: Mutex<State>,
    limits: ConnectionLimits,
    proxies: Vec<Cidr>,
}

/// One admitted connection; dropping it frees its place.
#[derive(Debug)]
pub struct Ticket {
    mark: ConnectionMark,
}

/// What a request knows of its connection: enough to say it carried a
/// known credential.
#[derive(Debug, Clone)]
pub struct ConnectionMark {
    slot: Arc<Slot>,
    table: Arc<Connections>,
}

impl Connections {
    pub fn new(limits: ConnectionLimits, proxies: Vec<Cidr>) -> Arc<Connections> {
        Arc::new(Connections {
            state: Mutex::new(State::default()),
            limits,
            proxies,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.lock().open
    }

    /// Admits a connection from `address`, closing the oldest connection
    /// without a credential when that makes room.
    /// Admits a connection from `address` accepted at `now`, or says why
    /// it is closed.
    pub fn admit(self: &Arc<Self>, address: IpAddr, now: Instant) -> Result<Ticket, Refusal> {
        let counted = !self.proxies.iter().any(|proxy| proxy.contains(address));
        let mut state = self.lock();
        if counted {
            let counts = state.by_address.get(&address).copied().unwrap_or_default();
            if counts.open >= self.limits.max_per_address.max(1) {
                return Err(Refusal::PerAddress);
            }
            // Oldest first, so the ones past their grace lead.
            let grace = self.limits.anonymous_grace;
            let overdue = state
                .anonymous
                .get(&Holder::Address(address))
                .map_or(0, |held| {
                    held.partition_point(|slot| now.saturating_duration_since(slot.opened) >= grace)
                });
            if overdue >= self.limits.max_anonymous_per_address.max(1) {
                return Err(Refusal::AnonymousPerAddress);
            }
        }
        let max = self.limits.max_connections.max(1);
        let anonymous_share = (max / 2).max(1);
        while state.open >= max || state.anonymous_count >= anonymous_share {
            let Some(oldest) = state.take_evictable() else {
                break;
            };
            self.forget(&mut state, &oldest, Stage::Anonymous);
            state.stages.insert(oldest.id, Stage::Evicted);
            oldest.evicted.notify_one();
        }
        if state.open >= max {
            return Err(Refusal::Full);
        }
        state.next += 1;
        let slot = Arc::new(Slot {
            id: state.next,
            address,
            opened: now,
            counted,
            evicted: Notify::new(),
            authenticated: std::sync::atomic::AtomicBool::new(false),
        });
        state.open += 1;
        if counted {
            state.by_address.entry(address).or_default().open += 1;
        }
        state.stages.insert(slot.id, Stage::Anonymous);
        state.add_anonymous(Arc::clone(&slot));
        Ok(Ticket {
            mark: ConnectionMark {
                slot,
                table: Arc::clone(self),
            },
        })
    }

    /// Takes a connection out of the counts of its stage.
    fn forget(&self, state: &mut State, slot: &Slot, stage: Stage) {
        if stage == Stage::Evicted {
            return;
        }
        state.open = state.open.saturating_sub(1);
        if slot.counted {
            if let Some(counts) = state.by_address.get_mut(&slot.address) {
                counts.open = counts.open.saturating_sub(1);
                if counts.open == 0 {
                    state.by_address.remove(&slot.address);
                }
            }
        }
    }
}

impl ConnectionMark {
    /// The connection carried a request with a known credential: it no
    /// longer counts as anonymous and is never closed to make room.
    pub fn authenticated(&self) {
        use std::sync::atomic::Ordering;
        if self.slot.authenticated.swap(true, Ordering::Relaxed) {
            return;
        }
        let mut state = self.table.lock();
        if state.stages.get(&self.slot.id) != Some(&Stage::Anonymous) {
            return;
        }
        state.stages.insert(self.slot.id, Stage::Authenticated);
        state.remove_anonymous(&self.slot);
    }
}

impl Ticket {
    /// What the connection's requests carry.
    pub fn mark(&self) -> ConnectionMark {
        self.mark.clone()
    }

    /// [`ConnectionMark::authenticated`].
    pub fn authenticated(&self) {
        self.mark.authenticated();
    }

    /// Resolves once the connection was closed to make room.
    pub async fn evicted(&self) {
        self.mark.slot.evicted.notified().await;
    }
}

impl Drop for Ticket {
    /// Frees the connection's place.
    fn drop(&mut self) {
        let ConnectionMark { slot, table } = &self.mark;
        let mut state = table.lock();
        let Some(stage) = state.stages.remove(&slot.id) else {
            return;
        };
        if stage == Stage::Anonymous {
            state.remove_anonymous(slot);
        }
        table.forget(&mut state, slot, stage);
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn limits(max: usize, per_address: usize, anonymous: usize) -> ConnectionLimits {
        ConnectionLimits {
            max_connections: max,
            max_per_address: per_address,
            max_anonymous_per_address: anonymous,
            anonymous_grace: GRACE,
            ..ConnectionLimits::default()
        }
    }

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    const GRACE: Duration = Duration::from_secs(5);

    /// Instants a grace apart: each connection admitted at the next one
    /// finds every earlier one past its grace, the shares as they stand
    /// once a burst is over.
    struct Later(Instant, u32);

    impl Later {
        fn new() -> Later {
            Later(Instant::now(), 0)
        }

        fn next(&mut self) -> Instant {
            self.1 += 1;
            self.0 + GRACE * self.1
        }
    }

    #[test]
    fn an_address_holds_its_share_and_a_smaller_one_without_credentials() {
        let table = Connections::new(limits(100, 4, 2), Vec::new());
        let mut later = Later::new();
        let first = table.admit(ip(1), later.next()).expect("admitted");
        let second = table.admit(ip(1), later.next()).expect("admitted");
        assert_eq!(
            table.admit(ip(1), later.next()).err(),
            Some(Refusal::AnonymousPerAddress)
        );
        first.authenticated();
        second.authenticated();
        let third = table.admit(ip(1), later.next()).expect("admitted");
        let _fourth = table.admit(ip(1), later.next()).expect("admitted");
        third.authenticated();
        assert_eq!(
            table.admit(ip(1), later.next()).err(),
            Some(Refusal::PerAddress)
        );
        // Another address has its own share.
        let _other = table.admit(ip(2), later.next()).expect("admitted");
        drop(first);
        let _again = table.admit(ip(1), later.next()).expect("a place was freed");
        assert_eq!(table.open(), 5);
    }

    #[test]
    fn a_burst_within_the_grace_is_admitted_and_the_share_holds_after_it() {
        let table = Connections::new(limits(100, 10, 2), Vec::new());
        let start = Instant::now();
        // A client opening five connections at once: none has sent its
        // request yet, and each is admitted.
        let burst: Vec<Ticket> = (0..5)
            .map(|_| table.admit(ip(1), start).expect("admitted"))
            .collect();
        let young = table
            .admit(ip(1), start + GRACE - Duration::from_millis(1))
            .expect("admitted within the grace");
        // Past the grace, five of them still without a credential are over
        // the address's share of two.
        assert_eq!(
            table.admit(ip(1), start + GRACE).err(),
            Some(Refusal::AnonymousPerAddress)
        );
        // Once four of them showed one, the address is within it again.
        for ticket in &burst[1..] {
            ticket.authenticated();
        }
        let next = table.admit(ip(1), start + GRACE).expect("admitted");
        assert_eq!(table.open(), 7);
        drop((burst, young, next));
    }

    #[test]
    fn a_trusted_proxy_is_exempt_from_the_per_address_share() {
        let proxy = Cidr::parse("10.0.0.9").expect("cidr");
        let table = Connections::new(limits(100, 2, 1), vec![proxy]);
        let mut later = Later::new();
        let held: Vec<Ticket> = (0..10)
            .map(|_| table.admit(ip(9), later.next()).expect("admitted"))
            .collect();
        assert_eq!(table.open(), held.len());
    }

    #[test]
    fn a_new_connection_closes_the_oldest_without_a_credential() {
        let table = Connections::new(limits(8, 100, 100), Vec::new());
        let mut later = Later::new();
        let legit: Vec<Ticket> = (10..14)
            .map(|n| {
                let ticket = table.admit(ip(n), later.next()).expect("admitted");
                ticket.authenticated();
                ticket
            })
            .collect();
        let mut anonymous: Vec<Ticket> = (0..4)
            .map(|n| table.admit(ip(n), later.next()).expect("admitted"))
            .collect();
        assert_eq!(table.open(), 8);
        // Full: the newcomer takes the place of the oldest anonymous one,
        // which is told.
        let oldest = anonymous.remove(0);
        let newcomer = table.admit(ip(99), later.next()).expect("admitted");
        let told = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a runtime")
            .block_on(async {
                tokio::time::timeout(Duration::from_secs(1), oldest.evicted()).await
            });
        assert!(told.is_ok(), "the evicted connection was not told");
        drop(oldest);
        assert_eq!(table.open(), 8, "its place was counted once");
        // With only credentialed connections left, the next is refused.
        for ticket in anonymous.iter().chain([&newcomer]) {
            ticket.authenticated();
        }
        assert_eq!(
            table.admit(ip(100), later.next()).err(),
            Some(Refusal::Full)
        );
        drop((legit, anonymous, newcomer));
    }

    #[test]
    fn connections_without_a_credential_hold_at_most_half_the_cap() {
        let table = Connections::new(limits(8, 100, 100), Vec::new());
        let mut later = Later::new();
        let held: Vec<Ticket> = (0..6)
            .map(|n| table.admit(ip(n), later.next()).expect("admitted"))
            .collect();
        // Half of 8 is 4: the first two were closed for the later ones.
        assert_eq!(table.open(), 4);
        assert_eq!(table.lock().anonymous_count, 4);
        drop(held);
    }

    #[test]
    fn the_address_holding_the_most_loses_its_oldest_first() {
        let table = Connections::new(limits(8, 100, 100), Vec::new());
        let mut later = Later::new();
        // One client, then an attacker with three (half the cap is 4).
        let client = table.admit(ip(1), later.next()).expect("admitted");
        let attacker: Vec<Ticket> = (0..3)
            .map(|_| table.admit(ip(2), later.next()).expect("admitted"))
            .collect();
        assert_eq!(table.lock().anonymous_count, 4);
        // Each newcomer costs the attacker one, the client none, until the
        // attacker holds no more than anyone else.
        let other = table.admit(ip(3), later.next()).expect("admitted");
        let newcomers = table.admit(ip(10), later.next()).expect("admitted");
        let state = table.lock();
        assert_eq!(state.anonymous_count, 4);
        assert_eq!(
            state
                .anonymous
                .get(&Holder::Address(ip(2)))
                .map(VecDeque::len),
            Some(1)
        );
        assert!(state.anonymous.contains_key(&Holder::Address(ip(1))));
        assert!(state.anonymous.contains_key(&Holder::Address(ip(3))));
        drop(state);
        drop((client, attacker, other, newcomers));
    }
}
