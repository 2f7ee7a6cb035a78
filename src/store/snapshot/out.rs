//! Where a snapshot is written to: a buffer handed to the caller's sink a chunk at a time, so
//! the file is never in memory whole. The item blocks (`encode.rs`) and the index blocks
//! (`indexes.rs`) are both written through it.

use crate::codec::Writer;
use crate::error::Result;

/// Output is handed to the sink in chunks of about this size.
pub(super) const CHUNK_BYTES: usize = 1 << 20;

/// The output: a buffer handed to the sink when it grows past [`CHUNK_BYTES`].
pub(super) struct Out<'a> {
    pub(super) w: Writer,
    flushed: u64,
    out: &'a mut dyn FnMut(&[u8]) -> Result<()>,
}

impl<'a> Out<'a> {
    /// An output whose first byte goes at file offset `start`, with room for `capacity` bytes
    /// before it first grows.
    pub(super) fn new(
        start: u64,
        capacity: usize,
        out: &'a mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Out<'a> {
        Out {
            w: Writer::with_capacity(capacity),
            flushed: start,
            out,
        }
    }

    /// The file offset of the next byte written.
    pub(super) fn offset(&self) -> u64 {
        self.flushed + self.w.buf.len() as u64
    }

    /// Append an encoded block, handing the buffer to the sink once it holds a chunk.
    pub(super) fn block(&mut self, block: &[u8]) -> Result<()> {
        self.w.bytes(block);
        if self.w.buf.len() >= CHUNK_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    pub(super) fn flush(&mut self) -> Result<()> {
        (self.out)(&self.w.buf)?;
        self.flushed += self.w.buf.len() as u64;
        self.w.buf.clear();
        Ok(())
    }
}
