//! [`History`]: a conversation that many model requests share without copying it.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};

use super::Message;

/// The messages of a conversation: cheap to clone, cheap to append to.
///
/// A clone is a snapshot that shares the messages with the history it came from (one
/// reference count, no copy), so an agent hands its whole conversation to every model request
/// at the same cost at turn 100 as at turn 1, and a model that keeps its requests (such as
/// [`ScriptedModel`](super::ScriptedModel)) keeps every one of them for the price of a
/// pointer. [`push`](History::push) appends in place while this history is the longest one
/// sharing its messages (the usual case: the agent's own); a history whose end others have
/// already appended past (an older snapshot, or one [`truncate`](History::truncate)d) first
/// takes a copy of its own, so snapshots never change.
///
/// It reads like a slice of [`Message`]s (`len`, `iter`, `last`, `history[i]`, `for m in
/// &history`), compares equal to a `Vec<Message>` of the same messages, serialises as a JSON
/// array, and converts from and into a `Vec<Message>`.
///
/// ```
/// use tool_sdk::model::{History, Message};
///
/// let mut history = History::from(vec![Message::user("Hi")]);
/// let sent = history.clone(); // what one request saw
/// history.push(Message::assistant("Hello!"));
/// assert_eq!(sent.len(), 1);
/// assert_eq!(history.len(), 2);
/// assert_eq!(history[1].text(), "Hello!");
/// assert_eq!(history, vec![Message::user("Hi"), Message::assistant("Hello!")]);
/// ```
#[derive(Clone)]
pub struct History {
    log: Arc<Log>,
    len: usize,
}

/// Slots in the first bucket; each further bucket doubles.
const FIRST: usize = 16;
/// Enough buckets for 16 × (2^28 − 1) messages.
const BUCKETS: usize = 28;

/// Append-only storage shared by snapshots: buckets that never move once allocated, each slot
/// written once. A snapshot of length `len` reads only slots below `len`, all written before
/// it existed.
struct Log {
    /// Slots handed out: the length of the longest history that appended here.
    claimed: AtomicUsize,
    buckets: [OnceLock<Bucket>; BUCKETS],
}

/// One bucket's slots.
type Bucket = Box<[OnceLock<Arc<Message>>]>;

impl Log {
    fn new() -> Arc<Log> {
        Arc::new(Log {
            claimed: AtomicUsize::new(0),
            buckets: [const { OnceLock::new() }; BUCKETS],
        })
    }
}

/// The bucket and the offset in it of message `index`.
fn locate(index: usize) -> (usize, usize) {
    let group = index / FIRST + 1;
    let bucket = (usize::BITS - 1 - group.leading_zeros()) as usize;
    (bucket, index - FIRST * ((1 << bucket) - 1))
}

impl History {
    /// An empty conversation.
    pub fn new() -> Self {
        History {
            log: Log::new(),
            len: 0,
        }
    }

    /// How many messages.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The message at `index`.
    pub fn get(&self, index: usize) -> Option<&Message> {
        self.get_shared(index).map(|message| &**message)
    }

    fn get_shared(&self, index: usize) -> Option<&Arc<Message>> {
        if index >= self.len {
            return None;
        }
        let (bucket, offset) = locate(index);
        self.log.buckets[bucket].get()?[offset].get()
    }

    /// The first message.
    pub fn first(&self) -> Option<&Message> {
        self.get(0)
    }

    /// The last message.
    pub fn last(&self) -> Option<&Message> {
        self.len.checked_sub(1).and_then(|index| self.get(index))
    }

    /// The messages in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            history: self,
            next: 0,
            end: self.len,
        }
    }

    /// Appends a message. Clones taken before are not affected.
    #[inline]
    pub fn push(&mut self, message: Message) {
        self.push_shared(Arc::new(message));
    }

    /// Appends a message the caller keeps a handle on.
    #[doc(hidden)]
    pub fn push_shared(&mut self, message: Arc<Message>) {
        let claimed = self.log.claimed.compare_exchange(
            self.len,
            self.len + 1,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
        if claimed.is_err() {
            // Another history sharing the log appended past this one's end: continue in a
            // log of this one's own (its messages are shared, not copied).
            let mut own = History::new();
            for shared in (0..self.len).filter_map(|index| self.get_shared(index)) {
                own.push_shared(shared.clone());
            }
            *self = own;
            return self.push_shared(message);
        }
        let (bucket, offset) = locate(self.len);
        let slots = self.log.buckets[bucket]
            .get_or_init(|| (0..FIRST << bucket).map(|_| OnceLock::new()).collect());
        // The slot was claimed by this push alone, so it is empty.
        let _ = slots[offset].set(message);
        self.len += 1;
    }

    /// Keeps the first `len` messages (all of them when there are fewer).
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// The messages, copied into a `Vec`.
    pub fn to_vec(&self) -> Vec<Message> {
        self.iter().cloned().collect()
    }
}

impl Default for History {
    fn default() -> Self {
        History::new()
    }
}

impl fmt::Debug for History {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl std::ops::Index<usize> for History {
    type Output = Message;

    fn index(&self, index: usize) -> &Message {
        match self.get(index) {
            Some(message) => message,
            None => panic!(
                "message index {index} out of range for a history of {} messages",
                self.len
            ),
        }
    }
}

/// The messages of a [`History`], in order.
#[derive(Clone, Debug)]
pub struct Iter<'a> {
    history: &'a History,
    next: usize,
    end: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a Message;

    fn next(&mut self) -> Option<&'a Message> {
        if self.next == self.end {
            return None;
        }
        let message = self.history.get(self.next)?;
        self.next += 1;
        Some(message)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.end - self.next;
        (left, Some(left))
    }
}

impl<'a> DoubleEndedIterator for Iter<'a> {
    fn next_back(&mut self) -> Option<&'a Message> {
        if self.next == self.end {
            return None;
        }
        let message = self.history.get(self.end - 1)?;
        self.end -= 1;
        Some(message)
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl<'a> IntoIterator for &'a History {
    type Item = &'a Message;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl Extend<Message> for History {
    fn extend<I: IntoIterator<Item = Message>>(&mut self, messages: I) {
        for message in messages {
            self.push(message);
        }
    }
}

impl FromIterator<Message> for History {
    fn from_iter<I: IntoIterator<Item = Message>>(messages: I) -> Self {
        let mut history = History::new();
        history.extend(messages);
        history
    }
}

impl From<Vec<Message>> for History {
    fn from(messages: Vec<Message>) -> Self {
        messages.into_iter().collect()
    }
}

impl From<&[Message]> for History {
    fn from(messages: &[Message]) -> Self {
        messages.iter().cloned().collect()
    }
}

impl From<History> for Vec<Message> {
    fn from(history: History) -> Self {
        history.to_vec()
    }
}

impl PartialEq for History {
    fn eq(&self, other: &History) -> bool {
        self.len == other.len
            && (Arc::ptr_eq(&self.log, &other.log) || self.iter().eq(other.iter()))
    }
}

impl PartialEq<[Message]> for History {
    fn eq(&self, other: &[Message]) -> bool {
        self.len == other.len() && self.iter().eq(other.iter())
    }
}

impl PartialEq<Vec<Message>> for History {
    fn eq(&self, other: &Vec<Message>) -> bool {
        *self == **other
    }
}

impl PartialEq<History> for Vec<Message> {
    fn eq(&self, other: &History) -> bool {
        *other == **self
    }
}

impl Serialize for History {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for History {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<Message>::deserialize(deserializer).map(History::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(history: &History) -> Vec<String> {
        history.iter().map(Message::text).collect()
    }

    #[test]
    fn buckets_cover_every_index_once() {
        let mut seen = std::collections::HashSet::new();
        for index in 0..5_000 {
            let (bucket, offset) = locate(index);
            assert!(offset < FIRST << bucket, "{index}: {bucket} {offset}");
            assert!(seen.insert((bucket, offset)), "{index}");
        }
        assert_eq!(locate(FIRST - 1), (0, FIRST - 1));
        assert_eq!(locate(FIRST), (1, 0));
        assert_eq!(locate(3 * FIRST), (2, 0));
    }

    #[test]
    fn snapshots_do_not_change_when_the_history_grows() {
        let mut history = History::new();
        let mut snapshots = Vec::new();
        for index in 0..100 {
            snapshots.push(history.clone());
            history.push(Message::user(index.to_string()));
        }
        for (len, snapshot) in snapshots.iter().enumerate() {
            assert_eq!(snapshot.len(), len);
            let expected: Vec<String> = (0..len).map(|i| i.to_string()).collect();
            assert_eq!(texts(snapshot), expected);
        }
        assert_eq!(history[99].text(), "99");
        let backwards: Vec<String> = history.iter().rev().take(2).map(Message::text).collect();
        assert_eq!(backwards, ["99", "98"]);
        let mut both = history.iter();
        assert_eq!(both.next_back().map(Message::text).as_deref(), Some("99"));
        assert_eq!(both.next().map(Message::text).as_deref(), Some("0"));
        assert_eq!(both.len(), 98);
        assert!(history.get(100).is_none());
        // Grown in place: every snapshot shares the one log.
        assert!(snapshots.iter().all(|s| Arc::ptr_eq(&s.log, &history.log)));
    }

    #[test]
    fn a_history_appended_past_by_another_takes_its_own_copy() {
        let mut first = History::from(vec![Message::user("a")]);
        let mut second = first.clone();
        first.push(Message::assistant("from first"));
        second.push(Message::assistant("from second"));
        assert_eq!(texts(&first), ["a", "from first"]);
        assert_eq!(texts(&second), ["a", "from second"]);
        assert!(!Arc::ptr_eq(&first.log, &second.log));
        // Shared, not copied: the first message is the same allocation in both.
        assert!(Arc::ptr_eq(
            first.get_shared(0).unwrap(),
            second.get_shared(0).unwrap()
        ));

        let mut cut = first.clone();
        cut.truncate(1);
        cut.push(Message::user("b"));
        assert_eq!(texts(&cut), ["a", "b"]);
        assert_eq!(texts(&first), ["a", "from first"]);
    }

    #[test]
    fn appends_from_many_threads_keep_every_history_whole() {
        let base = History::from(vec![Message::user("base")]);
        let handles: Vec<_> = (0..8)
            .map(|thread| {
                let mut history = base.clone();
                std::thread::spawn(move || {
                    for step in 0..50 {
                        history.push(Message::user(format!("{thread}.{step}")));
                    }
                    history
                })
            })
            .collect();
        for (thread, handle) in handles.into_iter().enumerate() {
            let history = handle.join().unwrap();
            let mut expected = vec!["base".to_owned()];
            expected.extend((0..50).map(|step| format!("{thread}.{step}")));
            assert_eq!(texts(&history), expected);
        }
        assert_eq!(texts(&base), ["base"]);
    }

    #[test]
    fn compares_and_serialises_as_a_list() {
        let messages = vec![Message::user("a"), Message::assistant("b")];
        let history = History::from(messages.clone());
        assert_eq!(history, messages);
        assert_eq!(messages, history);
        assert_eq!(history, History::from(messages.clone()));
        assert_ne!(history, History::from(vec![Message::user("a")]));
        let json = serde_json::to_string(&history).unwrap();
        assert_eq!(json, serde_json::to_string(&messages).unwrap());
        assert_eq!(serde_json::from_str::<History>(&json).unwrap(), history);
        assert_eq!(history.to_vec(), messages);
        assert_eq!(format!("{history:?}"), format!("{messages:?}"));
    }
}
