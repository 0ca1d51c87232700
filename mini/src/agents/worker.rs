//! The background worker: one thread that runs the post-reply work of each turn in
//! order (so turn N's memories are saved before turn N+1's are), off the answer path.
//!
//! The queue is bounded ([`MAX_QUEUED`]): when turns end faster than their background
//! work runs (many clients at once, a slow cheap model), a turn that ends waits for room
//! before it returns. Nothing is dropped — every turn's memories are still saved — and
//! the server slows down instead of growing: each queued job holds its turn's question,
//! answer and record, so an unbounded queue grew by about 10 KB a turn under a soak's
//! load (RSS 5 → 30 MB in two minutes on the musl build).

use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

type Job = Box<dyn FnOnce() + Send + 'static>;

enum Msg {
    Run(Job),
    Flush(Sender<()>),
}

/// Jobs waiting at most; one more waits for room.
pub const MAX_QUEUED: usize = 32;

/// A queue of jobs run one at a time on a dedicated thread.
pub struct Worker {
    tx: Option<SyncSender<Msg>>,
    handle: Option<JoinHandle<()>>,
}

impl Worker {
    /// Starts the thread.
    pub fn start() -> Worker {
        let (tx, rx) = mpsc::sync_channel::<Msg>(MAX_QUEUED);
        let handle = std::thread::Builder::new()
            .name("evolve-worker".into())
            .spawn(move || run(rx))
            .ok();
        if handle.is_none() {
            log::warn!("cannot start the background worker: post-reply work runs inline");
        }
        Worker {
            tx: handle.as_ref().map(|_| tx),
            handle,
        }
    }

    /// Queues a job (run inline when the thread could not be started).
    pub fn submit(&self, job: impl FnOnce() + Send + 'static) {
        match &self.tx {
            Some(tx) => {
                let job = match tx.try_send(Msg::Run(Box::new(job))) {
                    Ok(()) => return,
                    Err(mpsc::TrySendError::Full(job)) => {
                        log::debug!(
                            "the background work is {MAX_QUEUED} turns behind: this turn waits for room"
                        );
                        match tx.send(job) {
                            Ok(()) => return,
                            Err(mpsc::SendError(job)) => job,
                        }
                    }
                    Err(mpsc::TrySendError::Disconnected(job)) => job,
                };
                if let Msg::Run(job) = job {
                    job();
                }
            }
            None => job(),
        }
    }

    /// Waits until every job queued so far has run, at most `timeout`. True when done.
    pub fn flush(&self, timeout: Duration) -> bool {
        let Some(tx) = &self.tx else {
            return true;
        };
        let (done_tx, done_rx) = mpsc::channel();
        if tx.send(Msg::Flush(done_tx)).is_err() {
            return true;
        }
        let deadline = Instant::now() + timeout;
        done_rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .is_ok()
    }
}

impl Drop for Worker {
    /// Stops taking jobs; does not wait (callers that must wait call [`flush`] first).
    ///
    /// [`flush`]: Worker::flush
    fn drop(&mut self) {
        self.tx.take();
        if let Some(h) = self.handle.take() {
            if h.is_finished() {
                let _ = h.join();
            }
        }
    }
}

fn run(rx: Receiver<Msg>) {
    super::yield_gate::mark_background();
    for msg in rx {
        match msg {
            Msg::Run(job) => job(),
            Msg::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn jobs_run_in_order_and_flush_waits_for_them() {
        let w = Worker::start();
        let seen = Arc::new(Mutex::new(Vec::new()));
        for i in 0..5 {
            let seen = Arc::clone(&seen);
            w.submit(move || {
                std::thread::sleep(Duration::from_millis(5));
                seen.lock().unwrap().push(i);
            });
        }
        assert!(w.flush(Duration::from_secs(10)));
        assert_eq!(*seen.lock().unwrap(), vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn a_full_queue_makes_the_next_turn_wait_and_loses_nothing() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let w = Arc::new(Worker::start());
        let (open, gate) = mpsc::channel::<()>();
        let gate = Arc::new(Mutex::new(gate));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let submitted = Arc::new(AtomicUsize::new(0));
        let total = MAX_QUEUED + 3;
        let submitter = {
            let (w, gate, seen, submitted) =
                (w.clone(), gate.clone(), seen.clone(), submitted.clone());
            std::thread::spawn(move || {
                for i in 0..total {
                    let (gate, seen) = (gate.clone(), seen.clone());
                    w.submit(move || {
                        if i == 0 {
                            // The first job holds the worker until the gate opens.
                            let _ = gate.lock().unwrap().recv();
                        }
                        seen.lock().unwrap().push(i);
                    });
                    submitted.fetch_add(1, Ordering::SeqCst);
                }
            })
        };
        // One job runs, MAX_QUEUED wait; the next submit waits for room.
        let deadline = Instant::now() + Duration::from_secs(10);
        while submitted.load(Ordering::SeqCst) < MAX_QUEUED + 1 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(
            submitted.load(Ordering::SeqCst),
            MAX_QUEUED + 1,
            "the queue is bounded"
        );
        open.send(()).unwrap();
        submitter.join().unwrap();
        assert!(w.flush(Duration::from_secs(10)));
        assert_eq!(
            *seen.lock().unwrap(),
            (0..total).collect::<Vec<_>>(),
            "all ran, in order"
        );
    }

    #[test]
    fn flush_gives_up_after_the_timeout() {
        let w = Worker::start();
        w.submit(|| std::thread::sleep(Duration::from_millis(500)));
        assert!(!w.flush(Duration::from_millis(10)));
        assert!(w.flush(Duration::from_secs(10)));
    }
}
