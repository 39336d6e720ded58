//! Messages kept for pgdog's own use (the rows of an `INSERT ... SELECT`'s SELECT) in bounded
//! memory: in memory up to `merge_work_mem`, then in a temporary file, read back in order.
use super::error::MergeError;
use super::memory::{Budget, MemoryLimits};
use super::spill::{SpillFile, SpillReader};
use crate::net::Message;

/// Messages in arrival order.
#[derive(Debug)]
pub struct Spool {
    memory: Vec<Message>,
    file: Option<SpillFile>,
    budget: Budget,
    /// The first write that failed (reported when the messages are read).
    error: Option<MergeError>,
}

impl Spool {
    pub fn new(limits: MemoryLimits) -> Spool {
        Spool {
            memory: Vec::new(),
            file: None,
            budget: Budget::new(limits),
            error: None,
        }
    }

    pub fn push(&mut self, m: &Message) {
        if self.error.is_some() {
            return;
        }
        if self.file.is_none() && !self.budget.full() {
            self.budget.charge(64 + m.len() as u64);
            // A copy: a clone would keep the server's whole read buffer alive.
            self.memory
                .push(Message::from_bytes(bytes::Bytes::copy_from_slice(
                    m.bytes(),
                )));
            return;
        }
        if self.file.is_none() {
            match SpillFile::create(&self.budget.limits.temp_dir) {
                Ok(f) => self.file = Some(f),
                Err(e) => {
                    self.error = Some(e);
                    return;
                }
            }
        }
        if let Some(f) = self.file.as_mut() {
            if let Err(e) = f.write(0, m) {
                self.error = Some(e);
                self.file = None;
            }
        }
    }

    /// Whether nothing went to disk (then [`Spool::into_memory`] holds every message).
    pub fn in_memory(&self) -> bool {
        self.file.is_none() && self.error.is_none()
    }

    /// Every message, in memory (for callers whose messages are few).
    pub fn into_memory(self) -> Result<Vec<Message>, MergeError> {
        let mut all = Vec::new();
        let mut r = self.reader()?;
        while let Some(m) = r.read()? {
            all.push(m);
        }
        Ok(all)
    }

    /// The messages from the first; a failed write is the first thing read.
    pub fn reader(self) -> Result<SpoolReader, MergeError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        Ok(SpoolReader {
            memory: self.memory.into_iter(),
            file: self.file.map(SpillFile::reader).transpose()?,
            _budget: self.budget,
        })
    }
}

/// Reads a [`Spool`] back.
#[derive(Debug)]
pub struct SpoolReader {
    memory: std::vec::IntoIter<Message>,
    file: Option<SpillReader>,
    _budget: Budget,
}

impl SpoolReader {
    pub fn read(&mut self) -> Result<Option<Message>, MergeError> {
        if let Some(m) = self.memory.next() {
            return Ok(Some(m));
        }
        match self.file.as_mut() {
            Some(f) => Ok(f.read()?.map(|(_, m)| m)),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::rows::data_row;

    #[test]
    fn spills_past_the_budget_and_reads_back_in_order() {
        let limits = MemoryLimits {
            work_mem: 8 << 10,
            ..MemoryLimits::default()
        };
        let mut spool = Spool::new(limits);
        let rows: Vec<Message> = (0..2000)
            .map(|i: i32| data_row(&[Some(i.to_string())]))
            .collect();
        rows.iter().for_each(|m| spool.push(m));
        assert!(!spool.in_memory());
        assert_eq!(spool.into_memory().unwrap(), rows);
    }
}
