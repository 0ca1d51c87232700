//! Lending the file to another evolve process, and borrowing it from one.
//!
//! redb lets one process hold the file. A long-running `serve` lends it to a command run
//! beside it (`evolve memory add`) with [`Store::lend`]: the file is closed once the
//! transactions in flight are done, and every later use in this process waits until
//! the [`Lend`] ends — instead of racing the borrower for the lock — or gives up with
//! [`StoreError::Lent`] after [`LENT_WAIT`]. After the lend the next use opens the file
//! again and reloads the memory cache when the borrower changed the file.
//!
//! The borrowing side installs a [`Lender`] ([`Store::borrow_with`]): when it finds the
//! file held, it asks for a lend and keeps the [`Lease`] exactly as long as it holds
//! the file. Released ([`Store::release`]) or dropped, it closes the file first and
//! drops the lease after, so the lender never opens a file still in use.
//!
//! What it leaves to others: how a lend is asked for and how a lease is kept — a
//! connection to `serve` that the lend lasts as long as (`crate::cli::lend` asks,
//! `crate::web::lend` answers).

use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::{file_stamp, open, Store, StoreError};

/// How long a use of a lent store waits for it to come back before it fails with
/// [`StoreError::Lent`] (a command beside `serve` usually holds it for a few
/// milliseconds; `chat` gives it back while it waits for the model or a person).
pub const LENT_WAIT: Duration = Duration::from_secs(60);

/// What a borrowing store keeps while it holds a lent file: dropping it gives the file
/// back (for `serve`'s lend, it is the connection the lend lasts as long as).
pub type Lease = Box<dyn Send>;

/// Asks whoever holds the file to lend it; `None` when no one holds it that lends, or
/// the lend was refused (the caller then waits for the lock as for any process).
pub type Lender = Box<dyn Fn() -> Option<Lease> + Send + Sync>;

/// Who the file is lent to: every lend not yet ended, by id.
#[derive(Default)]
pub(super) struct Lends {
    holders: Mutex<Holders>,
    returned: Condvar,
}

#[derive(Default)]
struct Holders {
    next: u64,
    lent: Vec<(u64, String)>,
}

/// A lend still ran when the wait for it ended; `to` is who has the file.
#[derive(Debug)]
pub(super) struct StillLent {
    pub(super) to: String,
}

impl Lends {
    /// Whether a lend is running.
    pub(super) fn any(&self) -> bool {
        !self.lock().lent.is_empty()
    }

    /// Waits until no lend runs, up to `deadline`; else says who has the file.
    pub(super) fn wait_returned(&self, deadline: Instant) -> Result<(), StillLent> {
        let mut holders = self.lock();
        loop {
            let Some((_, to)) = holders.lent.first() else {
                return Ok(());
            };
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(StillLent { to: to.clone() });
            }
            holders = self
                .returned
                .wait_timeout(holders, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Holders> {
        self.holders.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A running lend: the file stays closed in this process while it lives.
pub struct Lend {
    store: Arc<Store>,
    id: u64,
    to: String,
}

impl Drop for Lend {
    fn drop(&mut self) {
        let lends = &self.store.lends;
        lends.lock().lent.retain(|(id, _)| *id != self.id);
        lends.returned.notify_all();
        log::info!("{} given back by {}", self.store.path.display(), self.to);
    }
}

impl Store {
    /// Lends the file to another process, `to` (for messages: "`evolve memory add` (pid
    /// 42)"): closes it once the transactions in flight are done — whether or not this
    /// store is shared — and makes every later use wait until the returned [`Lend`] is
    /// dropped. Several lends may run at once; the file comes back when all have ended.
    pub fn lend(self: &Arc<Self>, to: String) -> Lend {
        let id = {
            let mut holders = self.lends.lock();
            holders.next += 1;
            let id = holders.next;
            holders.lent.push((id, to.clone()));
            id
        };
        // Registered first: a reopen that gets the lock after this sees the lend.
        self.shut();
        log::info!("{} lent to {to}", self.path.display());
        Lend {
            store: Arc::clone(self),
            id,
            to,
        }
    }

    /// Lets this store borrow the file from whoever holds it: when a reopen finds it
    /// held, `lender` is asked once for a lease, kept while the file is open. `lease` is
    /// the one the file was first opened under, if any.
    pub fn borrow_with(&mut self, lender: Lender, lease: Option<Lease>) {
        self.lender = Some(lender);
        *self.lease.get_mut().unwrap_or_else(PoisonError::into_inner) = lease;
    }

    /// Asks the lender for the file, unless a lease is already held; `true` when one
    /// was given.
    pub(super) fn borrow(&self) -> bool {
        let Some(lender) = &self.lender else {
            return false;
        };
        let mut lease = self.lease.lock().unwrap_or_else(PoisonError::into_inner);
        if lease.is_some() {
            return false;
        }
        *lease = lender();
        lease.is_some()
    }

    /// Gives back a borrowed file (call after it is closed).
    pub(super) fn give_back(&self) {
        let lease = self
            .lease
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        drop(lease);
    }

    /// Closes the file until the next use, waiting for transactions in flight, and
    /// notes how it was left (to tell on reopen whether another process changed it).
    pub(super) fn shut(&self) {
        let mut slot = self.db.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(db) = slot.take() {
            drop(db); // redb writes its clean-shutdown header here
            open::seal(&self.path);
            *self
                .released_stamp
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = file_stamp(&self.path);
        }
    }

    /// The error of a use that waited [`LENT_WAIT`] for a lent file.
    pub(super) fn lent_error(&self, to: String, waited: Duration) -> StoreError {
        StoreError::Lent {
            path: self.path.clone(),
            to,
            waited,
        }
    }
}
