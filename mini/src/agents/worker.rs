//! The background worker: one thread that runs the post-reply work of each turn in
//! order (so turn N's memories are saved before turn N+1's are), off the answer path.

use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

type Job = Box<dyn FnOnce() + Send + 'static>;

enum Msg {
    Run(Job),
    Flush(Sender<()>),
}

/// A queue of jobs run one at a time on a dedicated thread.
pub struct Worker {
    tx: Option<Sender<Msg>>,
    handle: Option<JoinHandle<()>>,
}

impl Worker {
    /// Starts the thread.
    pub fn start() -> Worker {
        let (tx, rx) = mpsc::channel::<Msg>();
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
                if let Err(mpsc::SendError(Msg::Run(job))) = tx.send(Msg::Run(Box::new(job))) {
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
    fn flush_gives_up_after_the_timeout() {
        let w = Worker::start();
        w.submit(|| std::thread::sleep(Duration::from_millis(500)));
        assert!(!w.flush(Duration::from_millis(10)));
        assert!(w.flush(Duration::from_secs(10)));
    }
}
