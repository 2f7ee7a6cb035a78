//! A connection's bounded outbound queue and the task that writes it to the socket. The
//! repository thread queues without blocking; a live reader whose queue is full is dropped
//! (`abort`: the queue is discarded, one `Error` is sent, the socket closed); catch-up is
//! queued only while there is room and resumes when the writer has drained half of it.

use bytes::Bytes;
use futures_util::{Sink, SinkExt};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;
use tokio::sync::Notify;
use tokio_tungstenite::tungstenite::{Error as WsError, Message as Ws};

enum Out {
    Msg(Bytes),
    Ping,
}

#[derive(Default)]
struct Queue {
    items: VecDeque<Out>,
    bytes: usize,
    closing: bool,
    abort: Option<Bytes>,
    want_drain: bool,
}

/// What the writer does next.
enum Step {
    Send(Ws),
    Last(Bytes),
    Close,
    Wait,
}

/// One connection's outbound queue, bounded in bytes and messages.
pub struct Outbox {
    queue: Mutex<Queue>,
    wake_writer: Notify,
    closed: AtomicBool,
    closed_notify: Notify,
    cap_bytes: usize,
    cap_messages: usize,
    drain_hook: OnceLock<Box<dyn Fn() + Send + Sync>>,
}

impl Outbox {
    pub fn new(cap_bytes: usize, cap_messages: usize) -> Outbox {
        Outbox {
            queue: Mutex::new(Queue::default()),
            wake_writer: Notify::new(),
            closed: AtomicBool::new(false),
            closed_notify: Notify::new(),
            cap_bytes,
            cap_messages,
            drain_hook: OnceLock::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queue a message if it fits the bounds; false when it does not (the caller drops the
    /// connection). A message larger than the whole bound goes alone into an empty queue.
    pub fn push(&self, b: Bytes) -> bool {
        let mut q = self.lock();
        if q.closing {
            return true;
        }
        let full = q.items.len() >= self.cap_messages
            || (!q.items.is_empty() && q.bytes + b.len() > self.cap_bytes);
        if full {
            return false;
        }
        q.bytes += b.len();
        q.items.push_back(Out::Msg(b));
        drop(q);
        self.wake_writer.notify_one();
        true
    }

    /// Queue a message that must reach the peer (a reply, an error). It counts against the
    /// bounds like any other: when it does not fit, the queue is discarded and this message
    /// is the last one sent before the close (`abort`). A peer that does not read cannot
    /// make refusals pile up.
    pub fn force(&self, b: Bytes) {
        let mut q = self.lock();
        if q.closing {
            return;
        }
        let full = q.items.len() >= self.cap_messages
            || (!q.items.is_empty() && q.bytes + b.len() > self.cap_bytes);
        if full {
            drop(q);
            self.abort(b);
            return;
        }
        q.bytes += b.len();
        q.items.push_back(Out::Msg(b));
        drop(q);
        self.wake_writer.notify_one();
    }

    /// Queue a ping, unless one is queued already (pings do not pile up either).
    pub fn ping(&self) {
        let mut q = self.lock();
        if q.closing || q.items.iter().any(|i| matches!(i, Out::Ping)) {
            return;
        }
        q.items.push_back(Out::Ping);
        drop(q);
        self.wake_writer.notify_one();
    }

    /// Bytes queued now (tests, metrics).
    #[cfg(test)]
    fn queued(&self) -> (usize, usize) {
        let q = self.lock();
        (q.bytes, q.items.len())
    }

    /// Room for more catch-up: under half of both bounds.
    pub fn has_room(&self) -> bool {
        let q = self.lock();
        q.bytes < self.cap_bytes / 2 && q.items.len() < self.cap_messages / 2
    }

    /// Ask for the drain hook to run once the queue is back under half its bounds.
    pub fn want_drain(&self) {
        self.lock().want_drain = true;
    }

    /// The hook the writer runs when a wanted drain happened (set once, after subscribing).
    pub fn set_drain_hook(&self, hook: Box<dyn Fn() + Send + Sync>) {
        let _ = self.drain_hook.set(hook);
    }

    /// Send what is queued, then close.
    pub fn close(&self) {
        self.lock().closing = true;
        self.wake_writer.notify_one();
        self.mark_closed();
    }

    /// Drop the connection: discard the queue, send only `last`, close. The first abort's
    /// message is the one sent.
    pub fn abort(&self, last: Bytes) {
        let mut q = self.lock();
        if q.abort.is_some() {
            return;
        }
        q.items.clear();
        q.bytes = 0;
        q.abort = Some(last);
        q.closing = true;
        drop(q);
        self.wake_writer.notify_one();
        self.mark_closed();
    }

    fn mark_closed(&self) {
        self.closed.store(true, SeqCst);
        self.closed_notify.notify_waiters();
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(SeqCst)
    }

    /// Resolves once the outbox is closed (by either side) or its socket failed.
    pub async fn closed(&self) {
        loop {
            let n = self.closed_notify.notified();
            tokio::pin!(n);
            n.as_mut().enable();
            if self.is_closed() {
                return;
            }
            n.await;
        }
    }

    /// The socket is done: nothing more is queued or kept.
    fn discard(&self) {
        let mut q = self.lock();
        (q.closing, q.bytes) = (true, 0);
        q.items.clear();
        drop(q);
        self.mark_closed();
    }

    fn next_step(&self) -> Step {
        let mut q = self.lock();
        if let Some(last) = q.abort.take() {
            return Step::Last(last);
        }
        let Some(item) = q.items.pop_front() else {
            return if q.closing { Step::Close } else { Step::Wait };
        };
        let ws = match item {
            Out::Msg(b) => {
                q.bytes -= b.len();
                Ws::Binary(b)
            }
            Out::Ping => Ws::Ping(Bytes::new()),
        };
        let drained = q.want_drain && q.bytes < self.cap_bytes / 2;
        if drained {
            q.want_drain = false;
            drop(q);
            if let Some(hook) = self.drain_hook.get() {
                hook();
            }
        }
        Step::Send(ws)
    }

    /// The writer task: sends queued messages in order; each write must finish within
    /// `timeout` (a peer that stopped reading is cut off). Hands the sink back (closed).
    pub async fn write<S>(&self, mut sink: S, timeout: Duration) -> S
    where
        S: Sink<Ws, Error = WsError> + Unpin,
    {
        loop {
            let ws = match self.next_step() {
                Step::Send(ws) => ws,
                Step::Last(b) => {
                    let _ = tokio::time::timeout(timeout, sink.send(Ws::Binary(b))).await;
                    break;
                }
                Step::Close => break,
                Step::Wait => {
                    self.wake_writer.notified().await;
                    continue;
                }
            };
            match tokio::time::timeout(timeout, sink.send(ws)).await {
                Ok(Ok(())) => {}
                _ => break,
            }
        }
        self.discard();
        let _ = tokio::time::timeout(Duration::from_secs(1), sink.close()).await;
        sink
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forced_messages_count_against_the_bounds() {
        let out = Outbox::new(1000, 10);
        for _ in 0..3 {
            out.force(Bytes::from(vec![0; 300]));
        }
        assert_eq!(out.queued(), (900, 3));
        // Past the bound: the queue is discarded, only this one is kept, and it is closed.
        out.force(Bytes::from(vec![1; 300]));
        assert_eq!(out.queued(), (0, 0));
        assert!(out.is_closed());
        for _ in 0..1000 {
            out.force(Bytes::from(vec![2; 300]));
            out.ping();
        }
        assert_eq!(out.queued(), (0, 0), "nothing queued after the close");
        let out = Outbox::new(1000, 10);
        for _ in 0..100 {
            out.ping();
        }
        assert_eq!(out.queued(), (0, 1), "one ping at a time");
    }
}
