//! A provided-buffer ring (io_uring_register_buf_ring(3), kernel 5.19): the
//! pool a worker's multishot receives draw from. The kernel takes a buffer
//! per arrival and names it in the completion; the worker hands it back
//! once the parser has read it. One allocation for the whole run.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::io;
use std::sync::atomic::{AtomicU16, Ordering};

use io_uring::types::BufRingEntry;
use io_uring::IoUring;

/// The buffer group the receives name.
pub(crate) const GROUP: u16 = 0;
const PAGE: usize = 4096;

pub(crate) struct BufRing {
    entries: *mut BufRingEntry,
    layout: Layout,
    count: u16,
    slab: Vec<u8>,
    size: usize,
    /// Our producer index, published to the kernel by `publish`.
    tail: u16,
}

impl BufRing {
    /// `count` buffers (a power of two, at most 32768) of `size` bytes.
    pub(crate) fn new(count: u16, size: usize) -> BufRing {
        assert!(count.is_power_of_two(), "a buffer ring's size is a power of two");
        let layout = Layout::from_size_align(usize::from(count) * size_of::<BufRingEntry>(), PAGE)
            .expect("a page-aligned layout");
        // SAFETY: a non-zero size; the kernel requires page alignment.
        let entries = unsafe { alloc_zeroed(layout) }.cast::<BufRingEntry>();
        if entries.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        let mut ring = BufRing { entries, layout, count, slab: vec![0; usize::from(count) * size], size, tail: 0 };
        for bid in 0..count {
            ring.recycle(bid);
        }
        ring.publish();
        ring
    }

    /// Registers the ring.
    pub(crate) fn register(&mut self, ring: &IoUring) -> io::Result<()> {
        // SAFETY: the entries live as long as this value, which the worker
        // drops after its ring.
        unsafe { ring.submitter().register_buf_ring_with_flags(self.entries as u64, self.count, GROUP, 0) }
    }

    /// The `len` bytes a completion put in buffer `bid`.
    pub(crate) fn get(&self, bid: u16, len: usize) -> &[u8] {
        let at = usize::from(bid) * self.size;
        &self.slab[at..at + len.min(self.size)]
    }

    /// The completion's bytes are read: the buffer goes back to the kernel.
    pub(crate) fn release(&mut self, bid: u16) {
        self.recycle(bid);
    }

    /// Hands buffer `bid` back to the kernel (seen at the next `publish`).
    fn recycle(&mut self, bid: u16) {
        let mask = usize::from(self.count - 1);
        // SAFETY: the index is masked into the ring's entries.
        let e = unsafe { &mut *self.entries.add(usize::from(self.tail) & mask) };
        e.set_addr(self.slab[usize::from(bid) * self.size..].as_ptr() as u64);
        e.set_len(self.size as u32);
        e.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
    }

    /// Makes the recycled buffers visible to the kernel.
    pub(crate) fn publish(&self) {
        // SAFETY: the tail field lies in the ring's first entry, which we
        // own; the kernel reads it as an atomic u16.
        let tail = unsafe { &*BufRingEntry::tail(self.entries).cast::<AtomicU16>() };
        tail.store(self.tail, Ordering::Release);
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.entries.cast(), self.layout) };
    }
}

// SAFETY: the ring is made on the thread that starts the load and then used
// by one worker thread alone.
unsafe impl Send for BufRing {}
